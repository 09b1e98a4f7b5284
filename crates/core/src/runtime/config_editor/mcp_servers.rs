//! `[mcp.servers.<name>]` tables edited through the settings editor: add or replace one
//! server's table, remove it, turn it on or off. Each edit is the editor's own save (lock,
//! validation with positions, atomic write with a backup), so a bad server is refused with
//! its line and column and nothing is written.
//!
//! Invariants: only the named server's table changes; its comments and every other line of
//! the file stay as written. A server's name is what its tools are named after, so it is kept
//! to letters, digits, `_` and `-`.

use serde_json::{Map, Value};
use souz_protocol::config::ConfigSaved;
use toml_edit::{DocumentMut, Item, Table};

use super::{ConfigEditError, ConfigEditor, toml_value};
use crate::config::Config;
use crate::config::mcp::servers::is_server_name;

impl ConfigEditor {
    /// The configuration as last saved through this editor (the running one before any
    /// save): what `config.toml` holds for the next start.
    pub async fn current_config(&self) -> Config {
        self.inner.saved.lock().await.clone()
    }

    /// Writes `settings` as the whole `[mcp.servers.<name>]` table (added or replaced).
    pub async fn put_mcp_server(
        &self,
        name: &str,
        settings: Map<String, Value>,
        base_revision: Option<String>,
    ) -> Result<ConfigSaved, ConfigEditError> {
        check_name(name)?;
        let name = name.to_owned();
        let mut table = Table::new();
        for (key, value) in &settings {
            if value.is_null() {
                continue;
            }
            let value = toml_value(value).ok_or_else(|| {
                ConfigEditError::BadChange(format!(
                    "[mcp.servers.{name}] {key}: this value cannot be written as TOML"
                ))
            })?;
            table.insert(key, Item::Value(value));
        }
        self.save(base_revision, move |text| {
            edit_servers(text, |servers| {
                put_server(servers, &name, table);
                Ok(())
            })
        })
        .await
    }

    /// Removes `[mcp.servers.<name>]`.
    pub async fn remove_mcp_server(&self, name: &str) -> Result<ConfigSaved, ConfigEditError> {
        let name = name.to_owned();
        self.save(None, move |text| {
            edit_servers(text, |servers| remove_server(servers, &name))
        })
        .await
    }

    /// Sets `enabled` of `[mcp.servers.<name>]`.
    pub async fn set_mcp_server_enabled(
        &self,
        name: &str,
        enabled: bool,
    ) -> Result<ConfigSaved, ConfigEditError> {
        let name = name.to_owned();
        self.save(None, move |text| {
            edit_servers(text, |servers| {
                let table = servers
                    .get_mut(&name)
                    .and_then(Item::as_table_like_mut)
                    .ok_or_else(|| missing(&name))?;
                match table.get_mut("enabled").and_then(Item::as_value_mut) {
                    Some(existing) => {
                        let decor = existing.decor().clone();
                        *existing = enabled.into();
                        *existing.decor_mut() = decor;
                    }
                    None => {
                        table.insert("enabled", Item::Value(enabled.into()));
                    }
                }
                Ok(())
            })
        })
        .await
    }
}

fn check_name(name: &str) -> Result<(), ConfigEditError> {
    if name.len() <= 40 && is_server_name(name) {
        Ok(())
    } else {
        Err(ConfigEditError::BadChange(format!(
            "`{name}` cannot name an MCP server: use 1 to 40 letters, digits, `_` or `-` \
             (no `__`)"
        )))
    }
}

/// Puts `table` as the server `name`: added, or replacing the old table under the comments
/// above it.
fn put_server(servers: &mut Table, name: &str, table: Table) {
    match servers.get_mut(name).and_then(Item::as_table_mut) {
        Some(existing) => {
            let decor = existing.decor().clone();
            *existing = table;
            *existing.decor_mut() = decor;
        }
        None => {
            servers.insert(name, Item::Table(table));
        }
    }
}

/// Removes the server `name`; `NotFound` when there is none.
fn remove_server(servers: &mut Table, name: &str) -> Result<(), ConfigEditError> {
    servers.remove(name).map(drop).ok_or_else(|| missing(name))
}

fn missing(name: &str) -> ConfigEditError {
    ConfigEditError::NotFound(format!("config.toml has no [mcp.servers.{name}]"))
}

/// Applies `change` to the `[mcp.servers]` table of `text` (made, implicitly, when missing).
fn edit_servers(
    text: &str,
    change: impl FnOnce(&mut Table) -> Result<(), ConfigEditError>,
) -> Result<String, ConfigEditError> {
    let mut document: DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
        ConfigEditError::BadChange(format!(
            "config.toml is not valid TOML, so a server cannot be changed; fix it in the raw \
             editor first: {}",
            error.message().trim()
        ))
    })?;
    let mcp = implicit_table(document.as_table_mut(), "mcp")?;
    let servers = implicit_table(mcp, "servers")?;
    change(servers)?;
    crate::config::edit::comments::keep_with_their_tables(&mut document);
    Ok(document.to_string())
}

fn implicit_table<'a>(parent: &'a mut Table, key: &str) -> Result<&'a mut Table, ConfigEditError> {
    let entry = parent.entry(key).or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    entry.as_table_mut().ok_or_else(|| {
        ConfigEditError::BadChange(format!(
            "`{key}` is not a table in config.toml; fix it in the raw editor first"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_table_is_added_replaced_and_removed_keeping_the_rest() {
        let text = "# mine\n[mcp]\napproval_wait_seconds = 40\n\n# the files\n[mcp.servers.files]\ncommand = \"old\"\n";
        let replaced = edit_servers(text, |servers| {
            let mut next = Table::new();
            next.insert("command", Item::Value("npx".into()));
            put_server(servers, "files", next);
            Ok(())
        })
        .unwrap();
        assert!(
            replaced.contains("# mine\n[mcp]\napproval_wait_seconds = 40"),
            "{replaced}"
        );
        assert!(
            replaced.contains("# the files\n[mcp.servers.files]\ncommand = \"npx\""),
            "{replaced}"
        );
        assert!(!replaced.contains("old"), "{replaced}");

        let added = edit_servers("", |servers| {
            put_server(servers, "web", Table::new());
            Ok(())
        })
        .unwrap();
        assert_eq!(added.trim(), "[mcp.servers.web]");

        let removed = edit_servers(&replaced, |servers| remove_server(servers, "files")).unwrap();
        assert!(!removed.contains("files"), "{removed}");
        assert!(removed.contains("approval_wait_seconds = 40"), "{removed}");
        assert!(matches!(
            edit_servers(&removed, |servers| remove_server(servers, "files")),
            Err(ConfigEditError::NotFound(_))
        ));
    }

    #[test]
    fn an_added_server_keeps_the_commented_keys_of_mcp_with_it() {
        let template = Config::template();
        let added = edit_servers(&template, |servers| {
            let mut table = Table::new();
            table.insert("command", Item::Value("npx".into()));
            put_server(servers, "files", table);
            Ok(())
        })
        .unwrap();
        assert!(added.contains("[mcp.servers.files]"), "{added}");
        // `servers = {}` is the very table just written: it cannot be set twice.
        assert_eq!(
            crate::config::edit::comments::keys_that_break_when_uncommented(&added, &["servers"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn names_are_kept_to_what_tool_names_can_hold() {
        assert!(check_name("files-2_x").is_ok());
        for bad in ["", "a b", "a.b", "a__b", "ф", &"x".repeat(41)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
