//! Commented keys stay under their own table when an edit adds a table.
//!
//! toml_edit keeps the comments that follow a table's last key (in the template: every
//! commented-out key of a section with no key set) as the prefix of the *next* header, or as
//! the document's trailing text after the last table. A table an edit adds (no position yet)
//! prints right after its parent's existing tables, so without care it lands between the
//! parent's header and those comments: uncommenting one later puts the key into the new
//! table, and `config check` fails.
//!
//! [`keep_with_their_tables`] moves, for each added table, the comments that belong to the
//! table printed before it (everything in the next header's prefix up to its last blank line;
//! the paragraph touching a header is that header's own) into the added table's prefix, above
//! its header, where they keep belonging to the table before.

use toml_edit::{DocumentMut, Item, RawString, Table};

/// Where a table is in the document: its keys from the root, and its index when it is an
/// element of an array of tables.
#[derive(Debug, Clone)]
struct Place {
    keys: Vec<String>,
    element: Option<usize>,
}

/// A table that prints a header, in print order.
#[derive(Debug)]
struct Header {
    place: Place,
    /// Whether an edit added it (it has no position in the parsed text).
    added: bool,
}

/// Moves the comments that belong to the table printed before each added table above the
/// added table's header (see the module header). Call after the edit, before printing.
pub(crate) fn keep_with_their_tables(document: &mut DocumentMut) {
    let headers = headers_in_print_order(document);
    for (index, header) in headers.iter().enumerate() {
        if !header.added {
            continue;
        }
        let next = headers[index + 1..].iter().find(|later| !later.added);
        let moved = match next {
            Some(next) => table_mut(document, &next.place).and_then(|table| {
                let prefix = raw(table.decor().prefix())?;
                let (head, tail) = split_before_header(&prefix)?;
                table.decor_mut().set_prefix(tail);
                Some(head)
            }),
            None => {
                let Some(trailing) = raw(Some(document.trailing())) else {
                    continue;
                };
                let kept = trailing.trim_end();
                if kept.trim().is_empty() {
                    None
                } else {
                    let head = format!("{kept}\n");
                    document.set_trailing("");
                    Some(head)
                }
            }
        };
        let Some(head) = moved else {
            continue;
        };
        if let Some(added) = table_mut(document, &header.place) {
            let own = raw(added.decor().prefix()).unwrap_or_else(|| "\n".to_owned());
            let own = if own.starts_with('\n') {
                own
            } else {
                format!("\n{own}")
            };
            added.decor_mut().set_prefix(format!("{head}{own}"));
        }
    }
}

/// The text of a decor part, when it has one written.
fn raw(part: Option<&RawString>) -> Option<String> {
    part.and_then(RawString::as_str).map(str::to_owned)
}

/// `prefix` split at its last blank line that follows a comment: what belongs to the table
/// before (ending with a newline) and what stays with the header. `None` when nothing belongs
/// to the table before.
fn split_before_header(prefix: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = prefix.split_inclusive('\n').collect();
    let first_comment = lines
        .iter()
        .position(|line| line.trim_start().starts_with('#'))?;
    let blank = lines
        .iter()
        .enumerate()
        .skip(first_comment)
        .rev()
        .find(|(_, line)| line.trim().is_empty())
        .map(|(index, _)| index)?;
    let head = lines[..blank].concat();
    if !head.ends_with('\n') {
        return None;
    }
    Some((head, lines[blank..].concat()))
}

/// Every table that prints a header, in the order toml_edit prints them: by the position of
/// the last positioned table visited (an added table follows the table visited before it).
fn headers_in_print_order(document: &DocumentMut) -> Vec<Header> {
    let mut found = Vec::new();
    let mut last_position = 0;
    visit(document.as_table(), &mut Vec::new(), &mut |table, place| {
        if let Some(position) = table.position() {
            last_position = position;
        }
        let prints = !table.is_implicit() && !table.is_dotted();
        if prints {
            found.push((
                last_position,
                Header {
                    place,
                    added: table.position().is_none(),
                },
            ));
        }
    });
    found.sort_by_key(|(position, _)| *position);
    found.into_iter().map(|(_, header)| header).collect()
}

fn visit(table: &Table, keys: &mut Vec<String>, seen: &mut impl FnMut(&Table, Place)) {
    for (key, item) in table.iter() {
        keys.push(key.to_owned());
        match item {
            Item::Table(child) => {
                seen(
                    child,
                    Place {
                        keys: keys.clone(),
                        element: None,
                    },
                );
                visit(child, keys, seen);
            }
            Item::ArrayOfTables(array) => {
                for (index, child) in array.iter().enumerate() {
                    seen(
                        child,
                        Place {
                            keys: keys.clone(),
                            element: Some(index),
                        },
                    );
                    visit(child, keys, seen);
                }
            }
            Item::None | Item::Value(_) => {}
        }
        keys.pop();
    }
}

fn table_mut<'a>(document: &'a mut DocumentMut, place: &Place) -> Option<&'a mut Table> {
    let (last, parents) = place.keys.split_last()?;
    let mut table = document.as_table_mut();
    for key in parents {
        table = table.get_mut(key)?.as_table_mut()?;
    }
    match place.element {
        None => table.get_mut(last)?.as_table_mut(),
        Some(index) => table
            .get_mut(last)?
            .as_array_of_tables_mut()?
            .get_mut(index),
    }
}

/// For tests of edits: each commented-out key of `text` (`# key = value` at a line's start)
/// uncommented in turn, checked as a start would load the file; the lines (from 1) whose
/// uncommenting fails, with the first problem. `skip` names keys not to try.
#[cfg(test)]
pub(crate) fn keys_that_break_when_uncommented(text: &str, skip: &[&str]) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let dir = std::path::Path::new("/nonexistent-souz-home");
    let paths = crate::config::SouzPaths::new(dir);
    let mut broken = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(key_line) = line.strip_prefix("# ") else {
            continue;
        };
        let Some((key, _)) = key_line.split_once(" = ") else {
            continue;
        };
        let is_key = !key.is_empty()
            && key
                .chars()
                .all(|character| character.is_ascii_lowercase() || character == '_');
        if !is_key || skip.contains(&key) {
            continue;
        }
        let mut edited = lines.clone();
        edited[index] = key_line;
        let edited = edited.join("\n");
        if let Err(problems) =
            crate::config::Config::parse(paths.clone(), &paths.config_file(), &edited, &|_| None)
        {
            broken.push(format!("line {}: `{key_line}`: {}", index + 1, problems[0]));
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_the_template_can_be_uncommented() {
        let template = crate::config::Config::template();
        assert_eq!(
            keys_that_break_when_uncommented(&template, &[]),
            Vec::<String>::new()
        );
    }

    fn added_under(text: &str, parent: &str, name: &str) -> String {
        let mut document: DocumentMut = text.parse().unwrap();
        let parent = document[parent].as_table_mut().unwrap();
        let mut table = Table::new();
        table.insert("command", Item::Value("npx".into()));
        parent.insert(name, Item::Table(table));
        keep_with_their_tables(&mut document);
        document.to_string()
    }

    #[test]
    fn comments_after_a_section_stay_above_an_added_table() {
        let text = "[mcp]\n\n# wait\n# wait_seconds = 50\n\n# Next section.\n[next]\n";
        assert_eq!(
            added_under(text, "mcp", "web"),
            "[mcp]\n\n# wait\n# wait_seconds = 50\n\n[mcp.web]\ncommand = \"npx\"\n\n# Next section.\n[next]\n"
        );
        // The last section: its comments are the document's trailing text.
        let last = "[mcp]\n\n# wait\n# wait_seconds = 50\n";
        assert_eq!(
            added_under(last, "mcp", "web"),
            "[mcp]\n\n# wait\n# wait_seconds = 50\n\n[mcp.web]\ncommand = \"npx\"\n"
        );
        // A paragraph touching the next header is that header's own: nothing moves.
        let own = "[mcp]\nx = 1\n# Next section.\n[next]\n";
        assert_eq!(
            added_under(own, "mcp", "web"),
            "[mcp]\nx = 1\n\n[mcp.web]\ncommand = \"npx\"\n# Next section.\n[next]\n"
        );
    }

    #[test]
    fn splits_at_the_last_blank_line_after_a_comment() {
        assert_eq!(
            split_before_header("\n# a\n# b = 1\n\n# Next.\n"),
            Some(("\n# a\n# b = 1\n".to_owned(), "\n# Next.\n".to_owned()))
        );
        assert_eq!(split_before_header("\n# Next.\n"), None);
        assert_eq!(split_before_header("\n"), None);
    }
}
