//! A page's structure, checked before pdf-extract walks it.
//!
//! pdf-extract follows a page's `Parent` chain and draws form XObjects (`Do`) by recursion,
//! with no bound: a page that is its own ancestor, or a form that draws itself, recurses until
//! the stack overflows, which aborts the whole process (`catch_unwind` cannot catch it). So a
//! page is read only when its ancestors form a chain of at most [`MAX_ANCESTORS`] without a
//! cycle, and the forms it can reach nest at most [`MAX_FORM_DEPTH`] deep without a cycle.
//! The check itself does not recurse and looks at most [`MAX_FORM_STATES`] (form, resources)
//! pairs; a page past any bound is refused with a reason, and the other pages still read.

use std::collections::{HashMap, HashSet};

use pdf_extract::content::Content;
use pdf_extract::{Dictionary, Document, Object, ObjectId};

/// Ancestors a page may have (real page trees are a few levels deep).
pub const MAX_ANCESTORS: usize = 64;
/// Forms nested in forms (real files nest a handful).
pub const MAX_FORM_DEPTH: usize = 32;
/// (form, resources) pairs looked at, at most.
const MAX_FORM_STATES: usize = 10_000;

/// Whose resources a form's names are looked up in: the page's, or a form's own. A form
/// without resources of its own uses its caller's (as pdf-extract does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    Page,
    Form(ObjectId),
}

/// A form drawn with some resources.
type State = (ObjectId, Owner);

/// `Ok` when pdf-extract can walk page `page` within the bounds above; the reason otherwise.
pub fn check_page(document: &Document, page: ObjectId) -> Result<(), String> {
    let page_resources = inherited_resources(document, page)?;
    let resources_of = |owner: Owner| match owner {
        Owner::Page => page_resources,
        Owner::Form(form) => own_resources(document, form),
    };
    let children = |(form, owner): State| -> Vec<State> {
        let owner = match own_resources(document, form) {
            Some(_) => Owner::Form(form),
            None => owner,
        };
        let names = drawn_names(document, form);
        forms_in(document, resources_of(owner), Some(&names))
            .into_iter()
            .map(|child| (child, owner))
            .collect()
    };
    let roots = forms_in(document, page_resources, None);
    // Depth-first without recursion: `Some(true)` on the current path, `Some(false)` done.
    let mut marks: HashMap<State, bool> = HashMap::new();
    for root in roots {
        let root = (root, Owner::Page);
        if marks.contains_key(&root) {
            continue;
        }
        marks.insert(root, true);
        let mut path: Vec<(State, Vec<State>)> = vec![(root, children(root))];
        while let Some((state, pending)) = path.last_mut() {
            let Some(child) = pending.pop() else {
                marks.insert(*state, false);
                path.pop();
                continue;
            };
            match marks.get(&child) {
                Some(true) => return Err("a form on the page draws itself".into()),
                Some(false) => continue,
                None => {}
            }
            if path.len() >= MAX_FORM_DEPTH {
                return Err(format!(
                    "forms on the page nest more than {MAX_FORM_DEPTH} deep"
                ));
            }
            if marks.len() >= MAX_FORM_STATES {
                return Err("the page draws too many forms".into());
            }
            marks.insert(child, true);
            path.push((child, children(child)));
        }
    }
    Ok(())
}

/// The resources a page inherits (its own or its nearest ancestor's), after checking its
/// chain of ancestors.
fn inherited_resources(document: &Document, page: ObjectId) -> Result<Option<&Dictionary>, String> {
    let mut seen = HashSet::from([page]);
    let mut node = document.get_dictionary(page).ok();
    let mut resources = None;
    while let Some(dictionary) = node {
        if resources.is_none() {
            resources = dictionary
                .get(b"Resources")
                .ok()
                .and_then(|value| as_dictionary(document, value));
        }
        let Some(parent) = dictionary
            .get(b"Parent")
            .ok()
            .and_then(|value| value.as_reference().ok())
        else {
            break;
        };
        if !seen.insert(parent) {
            return Err("the page is its own ancestor".into());
        }
        if seen.len() > MAX_ANCESTORS {
            return Err(format!("the page has more than {MAX_ANCESTORS} ancestors"));
        }
        node = document.get_dictionary(parent).ok();
    }
    Ok(resources)
}

/// A form's own resources.
fn own_resources(document: &Document, form: ObjectId) -> Option<&Dictionary> {
    let stream = document.get_object(form).ok()?.as_stream().ok()?;
    as_dictionary(document, stream.dict.get(b"Resources").ok()?)
}

/// The names a form draws with `Do`.
fn drawn_names(document: &Document, form: ObjectId) -> Vec<Vec<u8>> {
    let Some(stream) = document
        .get_object(form)
        .ok()
        .and_then(|object| object.as_stream().ok())
    else {
        return Vec::new();
    };
    // As pdf-extract reads it.
    let bytes = match stream.filters() {
        Ok(_) => stream
            .decompressed_content()
            .unwrap_or_else(|_| stream.content.clone()),
        Err(_) => stream.content.clone(),
    };
    let Ok(content) = Content::decode(&bytes) else {
        return Vec::new();
    };
    content
        .operations
        .iter()
        .filter(|operation| operation.operator == "Do")
        .filter_map(|operation| operation.operands.first()?.as_name().ok())
        .map(<[u8]>::to_vec)
        .collect()
}

/// The XObjects named in `resources` (all of them, or those called `only`).
fn forms_in(
    document: &Document,
    resources: Option<&Dictionary>,
    only: Option<&[Vec<u8>]>,
) -> Vec<ObjectId> {
    let Some(names) = resources
        .and_then(|resources| resources.get(b"XObject").ok())
        .and_then(|value| as_dictionary(document, value))
    else {
        return Vec::new();
    };
    names
        .iter()
        .filter(|(name, _)| only.is_none_or(|only| only.contains(*name)))
        .filter_map(|(_, value)| document.dereference(value).ok())
        .filter_map(|(id, object)| Some(id?).filter(|_| object.as_stream().is_ok()))
        .collect()
}

fn as_dictionary<'a>(document: &'a Document, value: &'a Object) -> Option<&'a Dictionary> {
    document.dereference(value).ok()?.1.as_dict().ok()
}

#[cfg(test)]
mod tests;
