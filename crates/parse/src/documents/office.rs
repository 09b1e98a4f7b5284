//! Text of Office Open XML documents (Word `.docx`, PowerPoint `.pptx`): a ZIP of XML parts,
//! read with `zip` and `quick-xml` (the same crates calamine uses for `.xlsx`).
//!
//! Word: the body's paragraphs in document order; table cells separated by tabs, rows by line
//! breaks; text-box fallbacks (`mc:Fallback`) skipped so text is not repeated; deleted
//! (tracked) text and field codes are not text and are left out. PowerPoint: slides in
//! presentation order (`ppt/presentation.xml` and its relationships), each slide's paragraphs.
//!
//! Bounds: a part is read only up to 64 MiB of its inflated bytes, whatever its header
//! declares, so a small ZIP cannot expand into gigabytes; quick-xml does not recurse and the
//! readers keep counters, not stacks; a presentation lists at most [`SLIDE_LIMIT`] slides and
//! declares at most 100,000 relationships, and slides are read only until the preview's
//! characters are gathered. Tests: `office::tests` (a hostile corpus within time and memory).

use std::collections::HashMap;
use std::io::{Read, Seek};

use quick_xml::Reader;
use quick_xml::events::{BytesRef, Event};
use zip::ZipArchive;

use super::DocumentError;
use super::text::tidy;
use crate::worker::Stop;

/// Largest uncompressed XML part read.
const PART_BYTE_LIMIT: u64 = 64 << 20;
/// Most slides a presentation may list (PowerPoint decks run to hundreds).
pub const SLIDE_LIMIT: usize = 10_000;
/// Most relationships a presentation's part may declare.
const RELATIONSHIP_LIMIT: usize = 100_000;

/// A presentation's slides: how many it lists, and the text of those read.
#[derive(Debug)]
pub struct Slides {
    /// Slides listed.
    pub count: usize,
    /// Text of the first slides, in order, until `char_budget` characters were gathered.
    pub texts: Vec<String>,
}

/// The text of a Word document's body.
pub fn word_text<R: Read + Seek>(archive: &mut ZipArchive<R>) -> Result<String, DocumentError> {
    let xml = read_part(archive, "word/document.xml")?;
    let mut reader = Reader::from_str(&xml);
    let mut out = String::new();
    // Depth inside `mc:Fallback` (skipped) and inside table cells (paragraph ends become
    // spaces there, so a row stays on one line).
    let mut fallback_depth = 0usize;
    let mut cell_depth = 0usize;
    // Inside `w:tabs` (paragraph tab stops), `w:tab` is a setting, not a tab character.
    let mut tab_stops_depth = 0usize;
    let mut in_text = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|error| malformed("Word", error))?;
        match event {
            Event::Start(element) => match element.local_name().as_ref() {
                "Fallback" => fallback_depth += 1,
                "tabs" => tab_stops_depth += 1,
                "tc" => cell_depth += 1,
                "t" => in_text = true,
                _ => {}
            },
            Event::Empty(element) if fallback_depth == 0 => match element.local_name().as_ref() {
                "tab" if tab_stops_depth == 0 => out.push('\t'),
                "br" | "cr" => out.push('\n'),
                "noBreakHyphen" => out.push('-'),
                "p" if cell_depth > 0 => out.push(' '),
                "p" => out.push('\n'),
                _ => {}
            },
            Event::End(element) => match element.local_name().as_ref() {
                "Fallback" => fallback_depth = fallback_depth.saturating_sub(1),
                "tabs" => tab_stops_depth = tab_stops_depth.saturating_sub(1),
                "t" => in_text = false,
                _ if fallback_depth > 0 => {}
                "p" if cell_depth > 0 => out.push(' '),
                "p" => out.push('\n'),
                "tc" => {
                    cell_depth = cell_depth.saturating_sub(1);
                    trim_trailing_spaces(&mut out);
                    out.push('\t');
                }
                "tr" => {
                    trim_trailing_spaces(&mut out);
                    if out.ends_with('\t') {
                        out.pop();
                    }
                    out.push('\n');
                }
                _ => {}
            },
            Event::Text(text) if in_text && fallback_depth == 0 => {
                out.push_str(&text.xml10_content())
            }
            Event::CData(text) if in_text && fallback_depth == 0 => {
                out.push_str(&text.xml10_content())
            }
            Event::GeneralRef(reference) if in_text && fallback_depth == 0 => {
                push_reference(&mut out, &reference);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(tidy(&out))
}

/// The text of a presentation's slides, in presentation order, read until `char_budget`
/// characters were gathered (so a deck listing one huge slide many times holds one copy).
pub fn slide_texts<R: Read + Seek>(
    archive: &mut ZipArchive<R>,
    stop: &Stop,
    char_budget: usize,
) -> Result<Slides, DocumentError> {
    let parts = slide_parts(archive)?;
    let mut texts = Vec::new();
    let mut gathered = 0usize;
    for part in &parts {
        if gathered >= char_budget {
            break;
        }
        stop.check()?;
        let xml = read_part(archive, part)?;
        let text = slide_text(&xml)?;
        gathered = gathered.saturating_add(text.chars().count().max(1));
        texts.push(text);
    }
    Ok(Slides {
        count: parts.len(),
        texts,
    })
}

fn slide_text(xml: &str) -> Result<String, DocumentError> {
    let mut reader = Reader::from_str(xml);
    let mut out = String::new();
    let mut in_text = false;
    loop {
        match reader
            .read_event()
            .map_err(|error| malformed("PowerPoint", error))?
        {
            Event::Start(element) if element.local_name().as_ref() == "t" => in_text = true,
            Event::End(element) => match element.local_name().as_ref() {
                "t" => in_text = false,
                "p" => out.push('\n'),
                _ => {}
            },
            Event::Empty(element) if element.local_name().as_ref() == "br" => out.push('\n'),
            Event::Text(text) if in_text => out.push_str(&text.xml10_content()),
            Event::GeneralRef(reference) if in_text => push_reference(&mut out, &reference),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(tidy(&out))
}

/// Slide part names in presentation order; falls back to the numeric order of
/// `ppt/slides/slideN.xml` when the presentation part does not say.
fn slide_parts<R: Read + Seek>(archive: &mut ZipArchive<R>) -> Result<Vec<String>, DocumentError> {
    let mut targets: HashMap<String, String> = HashMap::new();
    if archive
        .index_for_name("ppt/_rels/presentation.xml.rels")
        .is_some()
    {
        let rels = read_part(archive, "ppt/_rels/presentation.xml.rels")?;
        let mut reader = Reader::from_str(&rels);
        loop {
            match reader
                .read_event()
                .map_err(|error| malformed("PowerPoint", error))?
            {
                Event::Start(element) | Event::Empty(element)
                    if element.local_name().as_ref() == "Relationship" =>
                {
                    let id = attribute(&element, "Id");
                    let target = attribute(&element, "Target");
                    if let (Some(id), Some(target)) = (id, target) {
                        targets.insert(id, target);
                    }
                    if targets.len() > RELATIONSHIP_LIMIT {
                        return Err(DocumentError::TooLarge(format!(
                            "the presentation declares more than {RELATIONSHIP_LIMIT} relationships"
                        )));
                    }
                }
                Event::Eof => break,
                _ => {}
            }
        }
    }
    let presentation = read_part(archive, "ppt/presentation.xml")?;
    let mut reader = Reader::from_str(&presentation);
    let mut ordered = Vec::new();
    loop {
        match reader
            .read_event()
            .map_err(|error| malformed("PowerPoint", error))?
        {
            Event::Start(element) | Event::Empty(element)
                if element.local_name().as_ref() == "sldId" =>
            {
                let part = attribute(&element, "r:id")
                    .and_then(|id| targets.get(&id))
                    .map(|target| resolve_target(target));
                if let Some(part) = part.filter(|part| archive.index_for_name(part).is_some()) {
                    ordered.push(part);
                }
                if ordered.len() > SLIDE_LIMIT {
                    return Err(too_many_slides());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !ordered.is_empty() {
        return Ok(ordered);
    }
    let mut numbered: Vec<(u32, String)> = archive
        .file_names()
        .filter_map(|name| {
            let name = name.ok()?;
            let number = name
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?
                .parse()
                .ok()?;
            Some((number, name.into_owned()))
        })
        .collect();
    if numbered.len() > SLIDE_LIMIT {
        return Err(too_many_slides());
    }
    numbered.sort();
    Ok(numbered.into_iter().map(|(_, name)| name).collect())
}

fn too_many_slides() -> DocumentError {
    DocumentError::TooLarge(format!(
        "the presentation lists more than {SLIDE_LIMIT} slides"
    ))
}

/// A relationship target (relative to `ppt/`, or absolute from the package root) as a part name.
fn resolve_target(target: &str) -> String {
    match target.strip_prefix('/') {
        Some(absolute) => absolute.to_owned(),
        None => format!("ppt/{target}"),
    }
}

fn attribute(element: &quick_xml::events::BytesStart<'_>, name: &str) -> Option<String> {
    element
        .try_get_attribute(name)
        .ok()
        .flatten()
        .and_then(|attribute| {
            attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|value| value.into_owned())
        })
}

fn push_reference(out: &mut String, reference: &BytesRef<'_>) {
    if let Ok(Some(character)) = reference.resolve_char_ref() {
        out.push(character);
    } else if let Some(resolved) = quick_xml::escape::resolve_predefined_entity(reference) {
        out.push_str(resolved);
    }
}

fn trim_trailing_spaces(out: &mut String) {
    let kept = out.trim_end_matches(' ').len();
    out.truncate(kept);
}

/// Reads one part of the package as text, refusing oversized parts.
pub fn read_part<R: Read + Seek>(
    archive: &mut ZipArchive<R>,
    name: &str,
) -> Result<String, DocumentError> {
    let file = archive.by_name(name).map_err(|error| {
        DocumentError::Malformed("Office".into(), format!("part {name}: {error}"))
    })?;
    if file.size() > PART_BYTE_LIMIT {
        return Err(DocumentError::TooLarge(format!(
            "its part {name} expands to {} MiB",
            file.size() >> 20
        )));
    }
    let mut bytes = Vec::new();
    file.take(PART_BYTE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| {
            DocumentError::Malformed("Office".into(), format!("part {name}: {error}"))
        })?;
    if bytes.len() as u64 > PART_BYTE_LIMIT {
        return Err(DocumentError::TooLarge(format!(
            "its part {name} is too large"
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        DocumentError::Malformed("Office".into(), format!("part {name} is not UTF-8 XML"))
    })
}

fn malformed(format: &str, error: quick_xml::Error) -> DocumentError {
    DocumentError::Malformed(format.into(), error.to_string())
}

#[cfg(test)]
mod tests;
