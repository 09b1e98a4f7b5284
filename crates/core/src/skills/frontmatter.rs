//! `SKILL.md`: YAML frontmatter between `---` lines, then a Markdown body, checked against the
//! Agent Skills specification (the rules `skills-ref`, its reference validator, applies).
//!
//! Invariants:
//! - [`parse`] never panics on any text; every problem is a [`SpecProblem`] with a message a
//!   person can act on, and all of them are reported together (not only the first).
//! - `name`: 1–64 characters after NFKC, lowercase letters, digits and single hyphens inside;
//!   equal to the folder name. `description`: 1–1024 characters. `compatibility`: at most 500.
//!   `metadata`: string keys to string values. Other top-level fields are errors, except the
//!   original's `author`, `version`, `oauthProvider` and `oauthScopes`, which an import moves into
//!   `metadata` ([`Frontmatter::legacy_fields`] lists them; the strict check reports them).

use std::collections::BTreeMap;

use unicode_normalization::UnicodeNormalization;
use yaml_serde::Value;

/// Longest skill name, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest compatibility note, in characters.
pub(crate) const MAX_COMPATIBILITY_CHARS: usize = 500;

/// The top-level fields of the specification.
const SPEC_FIELDS: &[&str] = &[
    "name",
    "description",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
];

/// The original's extra fields, moved into `metadata` on import.
const LEGACY_FIELDS: &[&str] = &["author", "version", "oauthProvider", "oauthScopes"];

/// A parsed, spec-valid frontmatter (legacy fields already moved into `metadata`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Frontmatter {
    /// The skill's name (NFKC, trimmed).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Its license, if stated.
    pub license: Option<String>,
    /// Environment requirements, if stated.
    pub compatibility: Option<String>,
    /// Tools it expects to be allowed (space-separated in the file).
    pub allowed_tools: Vec<String>,
    /// Free-form string pairs, including the original's imported fields.
    pub metadata: BTreeMap<String, String>,
    /// The original's fields found at the top level (moved into `metadata`).
    pub legacy_fields: Vec<String>,
}

/// A `SKILL.md` split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkillMarkdown {
    /// The frontmatter.
    pub frontmatter: Frontmatter,
    /// The body after the closing `---`, trimmed.
    pub body: String,
}

/// One way a `SKILL.md` breaks the specification.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpecProblem {
    /// Stable code (`spec.*`).
    pub code: &'static str,
    /// For people.
    pub message: String,
}

fn problem(code: &'static str, message: impl Into<String>) -> SpecProblem {
    SpecProblem {
        code,
        message: message.into(),
    }
}

/// Splits `text` into frontmatter YAML and body (CRLF normalized).
fn split(text: &str) -> Result<(String, String), SpecProblem> {
    let text = text.replace("\r\n", "\n");
    let Some(rest) = text.strip_prefix("---\n") else {
        return Err(problem(
            "spec.no_frontmatter",
            "SKILL.md must start with YAML frontmatter (a `---` line)",
        ));
    };
    let (yaml, body) = if let Some(body) = rest.strip_prefix("---\n") {
        ("", body)
    } else if let Some(end) = rest.find("\n---\n") {
        (&rest[..end], &rest[end + 5..])
    } else if let Some(yaml) = rest.strip_suffix("\n---") {
        (yaml, "")
    } else {
        return Err(problem(
            "spec.unclosed_frontmatter",
            "SKILL.md frontmatter is not closed with a `---` line",
        ));
    };
    Ok((yaml.to_owned(), body.trim().to_owned()))
}

/// A scalar as text (`strictyaml` reads every scalar as a string); `None` for maps and lists.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Null => Some(String::new()),
        Value::Tagged(tagged) => scalar(&tagged.value),
        Value::Sequence(_) | Value::Mapping(_) => None,
    }
}

fn key_text(key: &Value) -> String {
    scalar(key).unwrap_or_else(|| format!("{key:?}"))
}

/// Checks `name` (already trimmed and NFKC-normalized) and its folder.
fn check_name(name: &str, folder: Option<&str>, problems: &mut Vec<SpecProblem>) {
    if name.is_empty() {
        problems.push(problem(
            "spec.name",
            "field `name` must be a non-empty string",
        ));
        return;
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        problems.push(problem(
            "spec.name",
            format!("skill name `{name}` is {chars} characters; at most {MAX_NAME_CHARS}"),
        ));
    }
    if name != name.to_lowercase() {
        problems.push(problem(
            "spec.name",
            format!("skill name `{name}` must be lowercase"),
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push(problem(
            "spec.name",
            "skill name cannot start or end with a hyphen",
        ));
    }
    if name.contains("--") {
        problems.push(problem(
            "spec.name",
            "skill name cannot contain consecutive hyphens",
        ));
    }
    if !name.chars().all(|c| c.is_alphanumeric() || c == '-') {
        problems.push(problem(
            "spec.name",
            format!("skill name `{name}` may contain only letters, digits and hyphens"),
        ));
    }
    if let Some(folder) = folder {
        let folder: String = folder.nfkc().collect();
        if folder != name {
            problems.push(problem(
                "spec.name_folder",
                format!("folder name `{folder}` must match skill name `{name}`"),
            ));
        }
    }
}

fn text_field(
    map: &yaml_serde::Mapping,
    key: &str,
    problems: &mut Vec<SpecProblem>,
) -> Option<String> {
    let value = map.get(key)?;
    let text = scalar(value);
    if text.is_none() {
        problems.push(problem(
            "spec.field_type",
            format!("field `{key}` must be a string"),
        ));
    }
    text
}

fn check_length(text: &str, key: &str, max: usize, problems: &mut Vec<SpecProblem>) {
    let chars = text.chars().count();
    if chars > max {
        problems.push(problem(
            "spec.field_length",
            format!("field `{key}` is {chars} characters; at most {max}"),
        ));
    }
}

/// `metadata` as string pairs.
fn metadata_of(value: &Value, problems: &mut Vec<SpecProblem>) -> BTreeMap<String, String> {
    let mut metadata = BTreeMap::new();
    let Value::Mapping(map) = value else {
        problems.push(problem(
            "spec.metadata",
            "field `metadata` must map strings to strings",
        ));
        return metadata;
    };
    for (key, value) in map {
        match (scalar(key), scalar(value)) {
            (Some(key), Some(value)) => {
                metadata.insert(key, value);
            }
            _ => problems.push(problem(
                "spec.metadata",
                format!("metadata `{}` must be a string", key_text(key)),
            )),
        }
    }
    metadata
}

/// A legacy field's value as one string (`oauthScopes` lists are space-joined).
fn legacy_value(value: &Value) -> Option<String> {
    match value {
        Value::Sequence(items) => {
            let items: Option<Vec<String>> = items.iter().map(scalar).collect();
            items.map(|items| items.join(" "))
        }
        other => scalar(other),
    }
}

/// Checks the top-level keys: legacy fields go into the returned metadata (and are named),
/// unknown ones are problems.
fn top_level_fields(
    map: &yaml_serde::Mapping,
    problems: &mut Vec<SpecProblem>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut legacy_fields = Vec::new();
    let mut metadata = BTreeMap::new();
    for (key, value) in map {
        let key = key_text(key);
        if LEGACY_FIELDS.contains(&key.as_str()) {
            match legacy_value(value) {
                Some(text) if !text.is_empty() => {
                    metadata.insert(key.clone(), text);
                }
                Some(_) => {}
                None => problems.push(problem(
                    "spec.field_type",
                    format!("field `{key}` must be a string or a list of strings"),
                )),
            }
            legacy_fields.push(key);
        } else if !SPEC_FIELDS.contains(&key.as_str()) {
            problems.push(problem(
                "spec.unknown_field",
                format!(
                    "unexpected field `{key}` in frontmatter; the specification allows only {}",
                    SPEC_FIELDS.join(", ")
                ),
            ));
        }
    }
    (metadata, legacy_fields)
}

/// Parses `text` (a whole `SKILL.md`), whose folder is named `folder` when known.
pub(crate) fn parse(text: &str, folder: Option<&str>) -> Result<SkillMarkdown, Vec<SpecProblem>> {
    let (yaml, body) = split(text).map_err(|problem| vec![problem])?;
    let value: Value = yaml_serde::from_str(&yaml).map_err(|error| {
        vec![problem(
            "spec.yaml",
            format!("invalid YAML in frontmatter: {error}"),
        )]
    })?;
    let Value::Mapping(map) = value else {
        return Err(vec![problem(
            "spec.yaml",
            "SKILL.md frontmatter must be a YAML mapping",
        )]);
    };
    let mut problems = Vec::new();
    let (mut metadata, legacy_fields) = top_level_fields(&map, &mut problems);
    let name = match text_field(&map, "name", &mut problems) {
        Some(name) => {
            let name: String = name.trim().nfkc().collect();
            check_name(&name, folder, &mut problems);
            name
        }
        None if map.contains_key("name") => String::new(),
        None => {
            problems.push(problem(
                "spec.name",
                "missing required field `name` in frontmatter",
            ));
            String::new()
        }
    };
    let description = match text_field(&map, "description", &mut problems) {
        Some(text) if text.trim().is_empty() => {
            problems.push(problem(
                "spec.description",
                "field `description` must be a non-empty string",
            ));
            text
        }
        Some(text) => {
            check_length(&text, "description", MAX_DESCRIPTION_CHARS, &mut problems);
            text
        }
        None if map.contains_key("description") => String::new(),
        None => {
            problems.push(problem(
                "spec.description",
                "missing required field `description` in frontmatter",
            ));
            String::new()
        }
    };
    let compatibility = text_field(&map, "compatibility", &mut problems);
    if let Some(text) = &compatibility {
        check_length(
            text,
            "compatibility",
            MAX_COMPATIBILITY_CHARS,
            &mut problems,
        );
    }
    let license = text_field(&map, "license", &mut problems);
    let allowed_tools = text_field(&map, "allowed-tools", &mut problems)
        .map(|text| text.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(value) = map.get("metadata") {
        // Spec metadata wins over an imported legacy field of the same name.
        metadata.extend(metadata_of(value, &mut problems));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(SkillMarkdown {
        frontmatter: Frontmatter {
            name,
            description,
            license,
            compatibility,
            allowed_tools,
            metadata,
            legacy_fields,
        },
        body,
    })
}

/// Every problem the strict specification finds: [`parse`]'s, plus each legacy field (which an
/// import accepts by moving it into `metadata`).
#[cfg(test)]
pub(crate) fn strict_problems(text: &str, folder: Option<&str>) -> Vec<SpecProblem> {
    match parse(text, folder) {
        Ok(parsed) => parsed
            .frontmatter
            .legacy_fields
            .iter()
            .map(|field| {
                problem(
                    "spec.legacy_field",
                    format!("field `{field}` is not in the specification (moved into metadata on import)"),
                )
            })
            .collect(),
        Err(problems) => problems,
    }
}

#[cfg(test)]
#[path = "frontmatter_tests.rs"]
mod tests;
