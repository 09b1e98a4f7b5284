//! Trust on first use of external tools' definitions, keyed by what the gate matches: the
//! Souz name (`mcp__<server>__<tool>`) that rules and grants name. The first definition
//! (the server's name for the tool, its description, input and output schema) seen under a
//! Souz name is recorded as trusted; a later, different one — a changed text, or another
//! remote tool that maps to the same Souz name (`get_data` renamed `get.data`, a name cut at
//! 64 characters, a `_2` suffix that moved) — is not trusted until the person approves a call
//! that shows the change as a diff (then it is recorded in its place).
//!
//! Invariants: a definition is compared by the SHA-256 of its canonical JSON (keys sorted) and
//! by its remote name; the record changes only on first sight and on an approved call. Records
//! made before the Souz name was the key (`mcp_tool_definitions`, by remote name) are adopted
//! under the Souz name on first use, matched by the exact remote name or else by one that maps
//! to the same Souz name, so an upgrade is no first sight for a renamed tool.

use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::proxy;
use crate::store::codec::{now, to_time};
use crate::store::{Store, StoreError};

/// A tool's definition as it is compared and shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Definition {
    /// Pretty JSON, keys sorted (what the diff shows).
    pub text: String,
    /// SHA-256 of `text`, hex.
    pub sha256: String,
}

impl Definition {
    /// The definition of a tool a server lists.
    pub(crate) fn of(tool: &rmcp::model::Tool) -> Self {
        let value = json!({
            "description": tool.description.as_deref().unwrap_or_default(),
            "inputSchema": Value::Object((*tool.input_schema).clone()),
            "outputSchema": tool.output_schema.as_ref().map(|schema| Value::Object((**schema).clone())),
        });
        // serde_json's map keeps keys sorted, so this rendering is canonical.
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let sha256 = hex(&Sha256::digest(text.as_bytes()));
        Self { text, sha256 }
    }
}

/// One tool as a server lists it now, under the name the gate gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listed<'a> {
    /// The server (`[mcp.servers.<name>]`).
    pub server: &'a str,
    /// The Souz name (what rules and grants match).
    pub name: &'a str,
    /// The tool's name on its server.
    pub remote: &'a str,
    /// Its definition as listed.
    pub definition: &'a Definition,
}

/// The trusted record of a Souz name.
struct Record {
    remote: String,
    sha256: String,
    definition: String,
}

impl Record {
    /// What the diff shows of it: the remote name, then the definition.
    fn shown(&self) -> String {
        shown(&self.remote, &self.definition)
    }
}

fn shown(remote: &str, definition: &str) -> String {
    format!("tool: {remote}\n{definition}\n")
}

/// What the record says of a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trust {
    /// It is the trusted one (or was just seen for the first time and is now).
    Trusted,
    /// The trusted one differs (in text, or in the remote tool it names).
    Changed {
        /// Unified diff, trusted → listed.
        diff: String,
        /// The trusted definition's JSON: what models and listings are shown meanwhile.
        trusted: String,
    },
}

/// Compares `listed` with the trusted record of its Souz name, trusting it on first sight.
pub(crate) async fn check(store: &Store, listed: Listed<'_>) -> Result<Trust, StoreError> {
    let (server, name, remote) = (
        listed.server.to_owned(),
        listed.name.to_owned(),
        listed.remote.to_owned(),
    );
    let definition = listed.definition.clone();
    store
        .write(move |transaction| {
            let listed = Listed {
                server: &server,
                name: &name,
                remote: &remote,
                definition: &definition,
            };
            let Some(trusted) = trusted_record(transaction, listed)? else {
                record(transaction, listed)?;
                return Ok(Trust::Trusted);
            };
            if trusted.remote == remote && trusted.sha256 == definition.sha256 {
                return Ok(Trust::Trusted);
            }
            Ok(Trust::Changed {
                diff: diff(
                    &format!("{server}/{name}"),
                    &trusted.shown(),
                    &shown(&remote, &definition.text),
                ),
                trusted: trusted.definition,
            })
        })
        .await
}

/// The trusted record of `listed`'s Souz name; a record kept by remote name (before the Souz
/// name was the key) is adopted under it first.
fn trusted_record(
    transaction: &rusqlite::Transaction<'_>,
    listed: Listed<'_>,
) -> Result<Option<Record>, StoreError> {
    let found = transaction
        .query_row(
            "SELECT remote, sha256, definition FROM mcp_tool_trust WHERE server = ?1 AND name = ?2",
            params![listed.server, listed.name],
            |row| {
                Ok(Record {
                    remote: row.get(0)?,
                    sha256: row.get(1)?,
                    definition: row.get(2)?,
                })
            },
        )
        .optional()?;
    if found.is_some() {
        return Ok(found);
    }
    let mut statement = transaction.prepare(
        "SELECT tool, sha256, definition FROM mcp_tool_definitions WHERE server = ?1 ORDER BY tool",
    )?;
    let mut legacy: Vec<Record> = statement
        .query_map([listed.server], |row| {
            Ok(Record {
                remote: row.get(0)?,
                sha256: row.get(1)?,
                definition: row.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let base = proxy::base_name(listed.server, listed.remote);
    let adopted = legacy
        .iter()
        .position(|old| old.remote == listed.remote)
        .or_else(|| {
            legacy
                .iter()
                .position(|old| proxy::base_name(listed.server, &old.remote) == base)
        })
        .map(|index| legacy.swap_remove(index));
    let Some(adopted) = adopted else {
        return Ok(None);
    };
    let definition = Definition {
        text: adopted.definition.clone(),
        sha256: adopted.sha256.clone(),
    };
    record(
        transaction,
        Listed {
            remote: &adopted.remote,
            definition: &definition,
            ..listed
        },
    )?;
    Ok(Some(adopted))
}

/// Records `listed` as the trusted definition of its Souz name (the person approved a call
/// showing it).
pub(crate) async fn accept(store: &Store, listed: Listed<'_>) -> Result<(), StoreError> {
    let (server, name, remote) = (
        listed.server.to_owned(),
        listed.name.to_owned(),
        listed.remote.to_owned(),
    );
    let definition = listed.definition.clone();
    store
        .write(move |transaction| {
            record(
                transaction,
                Listed {
                    server: &server,
                    name: &name,
                    remote: &remote,
                    definition: &definition,
                },
            )
        })
        .await
}

fn record(transaction: &rusqlite::Transaction<'_>, listed: Listed<'_>) -> Result<(), StoreError> {
    transaction.execute(
        "INSERT INTO mcp_tool_trust (server, name, remote, sha256, definition, trusted_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (server, name) DO UPDATE
             SET remote = excluded.remote, sha256 = excluded.sha256,
                 definition = excluded.definition, trusted_at = excluded.trusted_at",
        params![
            listed.server,
            listed.name,
            listed.remote,
            listed.definition.sha256,
            listed.definition.text,
            to_time(now())
        ],
    )?;
    Ok(())
}

fn diff(label: &str, old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    format!(
        "{}",
        diff.unified_diff().header(
            &format!("a/{label} (trusted)"),
            &format!("b/{label} (listed now)")
        )
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
