//! Trust on first use of external tools' definitions: the first definition (description,
//! input and output schema) Souz sees of a server's tool is recorded as trusted; a later,
//! different one is not trusted until the person approves a call that shows the change as a
//! diff (then it is recorded in its place).
//!
//! Invariants: a definition is compared by the SHA-256 of its canonical JSON (keys sorted);
//! the record changes only on first sight and on an approved call.

use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

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

/// What the record says of a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trust {
    /// It is the trusted one (or was just seen for the first time and is now).
    Trusted,
    /// The trusted one differs: the diff from it to this one.
    Changed {
        /// Unified diff, trusted → listed.
        diff: String,
    },
}

/// Compares `definition` with the trusted one of `server`'s `tool`, trusting it on first sight.
pub(crate) async fn check(
    store: &Store,
    server: &str,
    tool: &str,
    definition: &Definition,
) -> Result<Trust, StoreError> {
    let (server, tool, definition) = (server.to_owned(), tool.to_owned(), definition.clone());
    store
        .write(move |transaction| {
            let trusted: Option<(String, String)> = transaction
                .query_row(
                    "SELECT sha256, definition FROM mcp_tool_definitions
                     WHERE server = ?1 AND tool = ?2",
                    params![server, tool],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            match trusted {
                Some((sha256, _)) if sha256 == definition.sha256 => Ok(Trust::Trusted),
                Some((_, text)) => Ok(Trust::Changed {
                    diff: diff(&format!("{server}/{tool}"), &text, &definition.text),
                }),
                None => {
                    record(transaction, &server, &tool, &definition)?;
                    Ok(Trust::Trusted)
                }
            }
        })
        .await
}

/// Records `definition` as the trusted one (the person approved a call showing it).
pub(crate) async fn accept(
    store: &Store,
    server: &str,
    tool: &str,
    definition: &Definition,
) -> Result<(), StoreError> {
    let (server, tool, definition) = (server.to_owned(), tool.to_owned(), definition.clone());
    store
        .write(move |transaction| record(transaction, &server, &tool, &definition))
        .await
}

fn record(
    transaction: &rusqlite::Transaction<'_>,
    server: &str,
    tool: &str,
    definition: &Definition,
) -> Result<(), StoreError> {
    transaction.execute(
        "INSERT INTO mcp_tool_definitions (server, tool, sha256, definition, trusted_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (server, tool) DO UPDATE
             SET sha256 = excluded.sha256, definition = excluded.definition,
                 trusted_at = excluded.trusted_at",
        params![
            server,
            tool,
            definition.sha256,
            definition.text,
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
