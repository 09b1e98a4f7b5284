//! Hostile page structures: each is refused with a reason (before this check, each overflowed
//! the stack and aborted the process); an ordinary form still reads.

use pdf_extract::content::Operation;
use pdf_extract::{Stream, dictionary};

use super::*;
use crate::documents::pdf::Pdf;
use crate::worker::Stop;

/// A content stream that shows `text` and then draws the forms `names`.
fn content(text: &str, names: &[&str]) -> Vec<u8> {
    let mut operations = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 12.into()]),
        Operation::new("Td", vec![72.into(), 700.into()]),
        Operation::new("Tj", vec![Object::string_literal(text)]),
        Operation::new("ET", vec![]),
    ];
    for name in names {
        operations.push(Operation::new(
            "Do",
            vec![Object::Name(name.as_bytes().to_vec())],
        ));
    }
    Content { operations }.encode().unwrap()
}

/// A one-page PDF; `forms` adds the forms and returns the page's `XObject` dictionary, and
/// `page_is_its_own_parent` makes the page its own ancestor.
fn one_page(
    forms: impl FnOnce(&mut Document, ObjectId) -> Dictionary,
    page_is_its_own_parent: bool,
) -> Vec<u8> {
    let mut document = Document::with_version("1.5");
    let pages_id = document.new_object_id();
    let font_id = document.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let xobjects = forms(&mut document, font_id);
    let content_id =
        document.add_object(Stream::new(dictionary! {}, content("page text", &["X0"])));
    let page_id = document.new_object_id();
    let parent = if page_is_its_own_parent {
        page_id
    } else {
        pages_id
    };
    let mut page = dictionary! {
        "Type" => "Page",
        "Parent" => parent,
        "Contents" => content_id,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    };
    if !page_is_its_own_parent {
        page.set(
            "Resources",
            dictionary! { "Font" => dictionary! { "F1" => font_id }, "XObject" => xobjects },
        );
    }
    document.objects.insert(page_id, Object::Dictionary(page));
    document.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => vec![Object::from(page_id)],
            "Count" => 1,
        }),
    );
    let catalog_id = document.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    document.trailer.set("Root", catalog_id);
    let mut bytes = Vec::new();
    document.save_to(&mut bytes).unwrap();
    bytes
}

/// A form drawing `draws` (by name X0) with resources naming `target`, or none of its own.
fn form(document: &mut Document, id: ObjectId, font: ObjectId, target: Option<ObjectId>) {
    let mut dict = dictionary! { "Type" => "XObject", "Subtype" => "Form",
    "BBox" => vec![0.into(), 0.into(), 595.into(), 842.into()] };
    let draws: &[&str] = if target.is_some() { &["X0"] } else { &[] };
    if let Some(target) = target {
        dict.set(
            "Resources",
            dictionary! { "Font" => dictionary! { "F1" => font }, "XObject" => dictionary! { "X0" => target } },
        );
    }
    let stream = Stream::new(dict, content("in form", draws));
    document.objects.insert(id, Object::Stream(stream));
}

fn first_page(bytes: &[u8]) -> Result<String, String> {
    let pdf = Pdf::load(bytes).unwrap();
    let mut pages = pdf.pages(1..=1, &Stop::default()).unwrap();
    pages.remove(0).text
}

fn refused(bytes: &[u8], reason: &str) {
    let text = first_page(bytes);
    assert!(
        text.as_ref().is_err_and(|error| error.contains(reason)),
        "{text:?}"
    );
}

#[test]
fn a_form_that_draws_itself_is_refused() {
    let bytes = one_page(
        |document, font| {
            let id = document.new_object_id();
            form(document, id, font, Some(id));
            dictionary! { "X0" => id }
        },
        false,
    );
    refused(&bytes, "draws itself");
}

#[test]
fn a_form_that_draws_itself_through_the_page_resources_is_refused() {
    // No resources of its own: pdf-extract looks `X0` up in the page's, which name the form.
    let bytes = one_page(
        |document, font| {
            let id = document.new_object_id();
            let mut dict = dictionary! { "Type" => "XObject", "Subtype" => "Form" };
            dict.set("BBox", vec![0.into(), 0.into(), 9.into(), 9.into()]);
            let _ = font;
            document.objects.insert(
                id,
                Object::Stream(Stream::new(dict, content("loop", &["X0"]))),
            );
            dictionary! { "X0" => id }
        },
        false,
    );
    refused(&bytes, "draws itself");
}

#[test]
fn a_long_chain_of_forms_is_refused() {
    let bytes = one_page(
        |document, font| {
            let ids: Vec<ObjectId> = (0..5_000).map(|_| document.new_object_id()).collect();
            for (index, id) in ids.iter().enumerate() {
                form(document, *id, font, ids.get(index + 1).copied());
            }
            dictionary! { "X0" => ids[0] }
        },
        false,
    );
    refused(&bytes, "nest more than");
}

#[test]
fn a_page_that_is_its_own_ancestor_is_refused() {
    refused(&one_page(|_, _| dictionary! {}, true), "its own ancestor");
}

#[test]
fn ordinary_forms_still_read() {
    let bytes = one_page(
        |document, font| {
            let leaf = document.new_object_id();
            form(document, leaf, font, None);
            let outer = document.new_object_id();
            form(document, outer, font, Some(leaf));
            dictionary! { "X0" => outer }
        },
        false,
    );
    let text = first_page(&bytes).unwrap();
    assert!(text.contains("page text"), "{text}");
    assert!(text.contains("in form"), "{text}");
}
