//! Rows of the `grants` table: standing decisions made by scoped approvals. A grant matches
//! until it expires or is revoked; revoked and expired grants are kept for the record.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};
use souz_protocol::language::Language;
use souz_protocol::{ArgumentMatch, Effect, Grant, Requester, ToolGroup, localized};

use super::policy::GrantRule;
use crate::store::CachedStatements;
use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, from_time, from_time_opt, to_json, to_time};

const COLUMNS: &str = "id, effect, tool, requester, match, created_at, expires_at, approval_id";

/// Inserts a grant.
pub(crate) fn insert(connection: &Connection, grant: &Grant) -> Result<(), StoreError> {
    connection.execute(
        &format!("INSERT INTO grants ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            grant.id,
            effect_name(grant.effect),
            grant.tool,
            grant.requester.as_ref().map(to_json).transpose()?,
            to_json(&grant.argument_match)?,
            to_time(grant.created_at),
            grant.expires_at.map(to_time),
            grant.approval_id,
        ],
    )?;
    Ok(())
}

/// Grants that are neither revoked nor expired at `now`, newest first, labelled in `language`.
pub(crate) fn active(
    connection: &Connection,
    now: DateTime<Utc>,
    language: Language,
) -> Result<Vec<Grant>, StoreError> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM grants WHERE revoked_at IS NULL \
         AND (expires_at IS NULL OR expires_at > ?1) ORDER BY created_at DESC, id DESC"
    ))?;
    let rows = statement.query_map([to_time(now)], RawGrant::from_row)?;
    rows.map(|row| {
        row.map_err(StoreError::from)
            .and_then(|raw| raw.decode(language))
    })
    .collect()
}

/// Revokes an active grant. Returns whether there was one.
pub(crate) fn revoke(
    connection: &Connection,
    id: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let changed = connection.execute_cached(
        "UPDATE grants SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        params![id, to_time(now)],
    )?;
    Ok(changed == 1)
}

/// The policy's view of a grant.
pub(crate) fn as_rule(grant: &Grant) -> GrantRule {
    GrantRule {
        id: grant.id.clone(),
        effect: grant.effect,
        tool: grant.tool.clone(),
        requester: grant.requester.clone(),
        argument_match: grant.argument_match.clone(),
        expires_at: grant.expires_at,
    }
}

/// A grant in words: "Allow Claude Code to use EditFile in ~/p (until revoked)"; for a tool
/// group, what it covers and what not: "Allow Claude Code to create and edit files in ~/p
/// (NewFile and EditFile only: …) (until revoked)".
/// In `language`; `grant`'s own label is not read.
pub(crate) fn label(grant: &Grant, language: Language) -> String {
    let Grant {
        effect,
        tool,
        requester,
        argument_match,
        expires_at,
        ..
    } = grant;
    let verb = match effect {
        Effect::Allow => localized!(language, "Allow", "Разрешить"),
        Effect::Deny => localized!(language, "Deny", "Запретить"),
    };
    let who = requester
        .as_ref()
        .map_or_else(|| localized!(language, "anyone", "всем"), Requester::label);
    let mut detail = String::new();
    if let Some(path) = &argument_match.path_prefix {
        detail.push_str(&localized!(language, " in {path}", " в {path}"));
    }
    if let Some(command) = &argument_match.command_prefix {
        detail.push_str(&localized!(
            language,
            " for `{command} …`",
            " для команд `{command} …`"
        ));
    }
    if let Some(domain) = &argument_match.domain {
        detail.push_str(&localized!(language, " on {domain}", " на {domain}"));
    }
    let until = match expires_at {
        Some(at) => localized!(
            language,
            "until {}",
            "до {}",
            at.format("%Y-%m-%d %H:%M UTC")
        ),
        None => localized!(language, "until revoked", "пока не отозвано"),
    };
    match ToolGroup::from_marker(tool) {
        Some(group) => localized!(
            language,
            "{verb} {who} to {}{detail} ({}) ({until})",
            "{verb} {who} {}{detail} ({}) ({until})",
            group.action(language),
            group.covers(language)
        ),
        None => localized!(
            language,
            "{verb} {who} to use {tool}{detail} ({until})",
            "{verb} {who} использовать {tool}{detail} ({until})"
        ),
    }
}

fn effect_name(effect: Effect) -> &'static str {
    match effect {
        Effect::Allow => "allow",
        Effect::Deny => "deny",
    }
}

struct RawGrant {
    id: String,
    effect: String,
    tool: String,
    requester: Option<String>,
    argument_match: String,
    created_at: String,
    expires_at: Option<String>,
    approval_id: Option<String>,
}

impl RawGrant {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            effect: row.get(1)?,
            tool: row.get(2)?,
            requester: row.get(3)?,
            argument_match: row.get(4)?,
            created_at: row.get(5)?,
            expires_at: row.get(6)?,
            approval_id: row.get(7)?,
        })
    }

    fn decode(self, language: Language) -> Result<Grant, StoreError> {
        let effect: Effect = from_json("grants.effect", &format!("\"{}\"", self.effect))?;
        let requester: Option<Requester> = from_json_opt("grants.requester", self.requester)?;
        let argument_match: ArgumentMatch = from_json("grants.match", &self.argument_match)?;
        let expires_at = from_time_opt("grants.expires_at", self.expires_at)?;
        let mut grant = Grant {
            label: String::new(),
            id: self.id,
            effect,
            tool: self.tool,
            requester,
            argument_match,
            created_at: from_time("grants.created_at", &self.created_at)?,
            expires_at,
            approval_id: self.approval_id,
        };
        grant.label = label(&grant, language);
        Ok(grant)
    }
}
