//! Skills over the MCP Skills extension (SEP-2640, `io.modelcontextprotocol/skills`), for
//! clients that negotiate it: `skills/list` and `skills/get` give each usable skill's manifest
//! (its `SKILL.md` URI `skill://<id>/SKILL.md`, its name and description, and every file with
//! its SHA-256 digest and size), and `resources/read` of a `skill://<id>/<path>` URI gives the
//! file's text. Clients that do not speak the extension get the same skills as prompts
//! (`prompts`).
//!
//! Invariants: only usable skills (enabled, loading, approved by validation: what the agents
//! see) are listed or served; a file is served from the bundle as loaded and validated, never
//! from a path the URI names on disk (the path only selects a key of the bundle's files); a
//! URI of anything else is "not found". Running a skill's commands stays with the agents and
//! the gate.

use std::collections::BTreeMap;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetSkillResult, ListSkillsResult, ReadResourceResult, ResourceContents, Skill,
    SkillFrontmatter, SkillResource, SkillResources,
};

use super::mcp_error;
use crate::runtime::RuntimeHandle;

/// The URI scheme of skill files.
pub(crate) const SCHEME: &str = "skill://";

/// A path of a bundle as one URI, each segment percent-encoded as a URL path segment.
fn uri(id: &str, path: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(&format!("{SCHEME}{id}/")) else {
        return format!("{SCHEME}{id}/{path}");
    };
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty().extend(path.split('/'));
    }
    url.to_string()
}

fn manifest(id: &str, description: &str, files: &BTreeMap<String, String>) -> Skill {
    let resources = files
        .iter()
        .map(|(path, text)| SkillResource::from_bytes(uri(id, path), text.as_bytes()))
        .collect();
    Skill::new(
        uri(id, "SKILL.md"),
        SkillFrontmatter::new(id, description),
        SkillResources::Files(resources),
    )
}

/// `skills/list`: every usable skill's manifest, sorted by id.
pub(crate) async fn list(handle: &RuntimeHandle) -> Result<ListSkillsResult, McpError> {
    let mut skills = Vec::new();
    for skill in handle.usable_skills().await.map_err(mcp_error)? {
        // A skill that stopped being usable since the list was read is left out.
        if let Some((description, files)) = handle
            .usable_skill_files(&skill.id)
            .await
            .map_err(mcp_error)?
        {
            skills.push(manifest(&skill.id, &description, &files));
        }
    }
    Ok(ListSkillsResult::with_all_items(skills))
}

/// The usable skill a `skill://<id>/…` URI names, and the rest of the URI (the file's path,
/// still encoded).
fn split(uri: &str) -> Option<(&str, &str)> {
    uri.strip_prefix(SCHEME)?.split_once('/')
}

fn not_found(uri: &str) -> McpError {
    McpError::invalid_params(format!("no usable skill has `{uri}`"), None)
}

/// `skills/get`: the manifest of the skill whose `SKILL.md` is `uri`.
pub(crate) async fn get(
    handle: &RuntimeHandle,
    uri_text: &str,
) -> Result<GetSkillResult, McpError> {
    let Some((id, "SKILL.md")) = split(uri_text) else {
        return Err(not_found(uri_text));
    };
    let (description, files) = handle
        .usable_skill_files(id)
        .await
        .map_err(mcp_error)?
        .ok_or_else(|| not_found(uri_text))?;
    Ok(GetSkillResult::new(manifest(id, &description, &files)))
}

/// `resources/read` of a skill file; `None` when `uri` is not a skill URI.
pub(crate) async fn read(
    handle: &RuntimeHandle,
    uri_text: &str,
) -> Result<Option<ReadResourceResult>, McpError> {
    if !uri_text.starts_with(SCHEME) {
        return Ok(None);
    }
    let (id, _) = split(uri_text).ok_or_else(|| not_found(uri_text))?;
    let (_, files) = handle
        .usable_skill_files(id)
        .await
        .map_err(mcp_error)?
        .ok_or_else(|| not_found(uri_text))?;
    // The URI selects one of the bundle's own files by its exact URI, nothing else.
    let (_, text) = files
        .iter()
        .find(|(path, _)| uri(id, path) == uri_text)
        .ok_or_else(|| not_found(uri_text))?;
    let mime = if uri_text.ends_with(".md") {
        "text/markdown"
    } else {
        "text/plain"
    };
    Ok(Some(ReadResourceResult::new(vec![
        ResourceContents::text(text.clone(), uri_text.to_owned()).with_mime_type(mime),
    ])))
}

#[cfg(test)]
mod tests;
