//! The settings editor behind `GET/PUT/PATCH /v1/config`: reads `config.toml` with its schema,
//! validates a proposed text exactly as the daemon would load it, writes it atomically with a
//! backup, and applies live what can be applied without a restart.
//!
//! Invariants:
//! - Nothing is written unless the whole new text validates; problems come back with their
//!   line and column.
//! - Every edit is a compare-and-swap on the file's revision (a SHA-256 of its text) under the
//!   config edit lock, so a save never overwrites a change made meanwhile (another window, an
//!   `always` approval, a text editor).
//! - What a change did is reported per key: applied now, or waiting for a restart. The keys in
//!   [`LIVE_SECTIONS`] apply live, and so do the sections a service registered a reload hook
//!   for ([`ConfigEditor::on_save`]), except the keys in [`RESTART_KEYS`]; a hook that fails
//!   leaves its section's changes waiting for a restart. Every other change waits for the next
//!   start.

mod mcp_servers;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};
use souz_protocol::config::{
    ConfigDocument, ConfigKey, ConfigProblem, ConfigSaved, ConfigSection, ConfigValue,
};
use toml_edit::DocumentMut;

use crate::approvals::Approvals;
use crate::config::edit::{self, EditError};
use crate::config::{Config, ENV_OVERRIDES, Location, OverrideTarget, Problem};

/// Sections whose every key applies without a restart: `[approvals]` (rules, defaults per risk
/// class, timeout) is re-read by the policy on every call, `[notifications]` by the app before
/// each notice.
pub(crate) const LIVE_SECTIONS: &[&str] = &["approvals", "notifications"];

/// Keys of sections with a reload hook that still take effect only at the next start.
pub(crate) const RESTART_KEYS: &[&str] = &[
    "llm.key_storage",
    // The `/mcp` server's own settings; `[mcp.servers]` applies live.
    "mcp.approval_wait_seconds",
    "mcp.progress_interval_seconds",
    "mcp.session_idle_minutes",
];

/// Applies a saved configuration to one service; an error says why it could not.
pub(crate) type ReloadHook = Arc<dyn Fn(&Config) -> Result<(), String> + Send + Sync>;

/// Why a change was not saved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigEditError {
    /// The file changed since the edit started; nothing was written.
    #[error("config.toml changed since you opened it; reload and apply your change again")]
    Conflict {
        /// The file's revision now.
        current: String,
    },
    /// The new text has problems; nothing was written.
    #[error("the change was not saved: {} problem(s)", .problems.len())]
    Invalid {
        /// Every problem, with its position.
        problems: Vec<Problem>,
        /// The text that was validated.
        text: String,
    },
    /// The edit names something the file does not have.
    #[error("{0}")]
    NotFound(String),
    /// A `PATCH` names something that cannot be set this way.
    #[error("{0}")]
    BadChange(String),
    /// The file could not be read or written.
    #[error("{0}")]
    Io(String),
}

/// The editor. Cheap to clone.
#[derive(Clone)]
pub struct ConfigEditor {
    inner: Arc<Inner>,
}

struct Inner {
    /// The configuration the runtime started with: what restart-bound keys are compared to.
    running: Config,
    /// The last configuration saved through this editor (or the running one).
    saved: tokio::sync::Mutex<Config>,
    approvals: Approvals,
    /// Reload hooks by section.
    hooks: std::sync::RwLock<Vec<(&'static str, ReloadHook)>>,
}

impl ConfigEditor {
    /// An editor for the runtime that started with `running`.
    pub fn new(running: Config, approvals: Approvals) -> Self {
        Self {
            inner: Arc::new(Inner {
                saved: tokio::sync::Mutex::new(running.clone()),
                running,
                approvals,
                hooks: std::sync::RwLock::default(),
            }),
        }
    }

    /// Registers how a save applies `[section]` live: `hook` gets the whole new configuration
    /// after the file is written and returns an error when it could not apply it.
    pub(crate) fn on_save(
        &self,
        section: &'static str,
        hook: impl Fn(&Config) -> Result<(), String> + Send + Sync + 'static,
    ) {
        self.inner
            .hooks
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((section, Arc::new(hook)));
    }

    fn hooks(&self) -> Vec<(&'static str, ReloadHook)> {
        self.inner
            .hooks
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether a change of `section.key` applies without a restart in this runtime.
    fn live(&self, key: &str) -> bool {
        is_live(key)
            || (!RESTART_KEYS.contains(&key)
                && key.split_once('.').is_some_and(|(section, _)| {
                    self.hooks().iter().any(|(name, _)| *name == section)
                }))
    }

    /// Runs the hooks of the sections `changed` touches; the sections whose hook failed.
    fn reload(&self, changed: &[String], next: &Config) -> BTreeSet<&'static str> {
        let mut failed = BTreeSet::new();
        for (section, hook) in self.hooks() {
            let touched = changed
                .iter()
                .any(|key| key.split_once('.').is_some_and(|(name, _)| name == section));
            if !touched {
                continue;
            }
            if let Err(error) = hook(next) {
                tracing::warn!(section, %error, "a saved section could not be applied live");
                failed.insert(section);
            }
        }
        failed
    }

    /// The configuration as last saved through this editor (the running one before any save).
    pub(crate) async fn current(&self) -> Config {
        self.inner.saved.lock().await.clone()
    }

    /// The file, its schema with the values it sets, and what applies live.
    pub async fn document(&self) -> Result<ConfigDocument, ConfigEditError> {
        let saved = self.inner.saved.lock().await.clone();
        let paths = saved.paths.clone();
        let text = blocking(move || read_text(&paths)).await?;
        // Values as the file sets them now (it may have been edited by hand since).
        let current = saved.reparse(&text).unwrap_or_else(|_| saved.clone());
        Ok(self.describe(&current, text))
    }

    /// Replaces the whole file with `text`.
    pub async fn replace(
        &self,
        text: String,
        base_revision: Option<String>,
    ) -> Result<ConfigSaved, ConfigEditError> {
        self.save(base_revision, move |_| Ok(text)).await
    }

    /// Sets or resets single keys, keeping the rest of the file and its comments.
    pub async fn patch(
        &self,
        changes: Vec<ConfigValue>,
        base_revision: Option<String>,
    ) -> Result<ConfigSaved, ConfigEditError> {
        if changes.is_empty() {
            return Err(ConfigEditError::BadChange("no changes given".to_owned()));
        }
        for change in &changes {
            let known = Config::sections()
                .iter()
                .find(|section| section.name == change.section)
                .is_some_and(|section| section.keys.iter().any(|key| key.name == change.key));
            if !known {
                return Err(ConfigEditError::BadChange(format!(
                    "there is no key `{}` in [{}]",
                    change.key, change.section
                )));
            }
        }
        self.save(base_revision, move |current| {
            apply_changes(current, &changes)
        })
        .await
    }

    async fn save(
        &self,
        base_revision: Option<String>,
        change: impl FnOnce(&str) -> Result<String, ConfigEditError> + Send + 'static,
    ) -> Result<ConfigSaved, ConfigEditError> {
        let mut saved = self.inner.saved.lock().await;
        let previous = saved.clone();
        let file = previous.paths.config_file();
        let base = previous.clone();
        let next = blocking(move || {
            let _lock = edit::lock(&file).map_err(edit_error)?;
            let current_text = read_text(&base.paths)?;
            let current = revision(&current_text);
            if base_revision.is_some_and(|expected| expected != current) {
                return Err(ConfigEditError::Conflict { current });
            }
            let text = change(&current_text)?;
            // The old file as loaded, to tell which keys this save changes.
            let before = base.reparse(&current_text).unwrap_or(base.clone());
            let next = edit::write_validated(&base, &text).map_err(|error| match error {
                EditError::Invalid(problems) => ConfigEditError::Invalid {
                    problems,
                    text: text.clone(),
                },
                other => edit_error(other),
            })?;
            Ok((before, next, revision(&text)))
        })
        .await?;
        let (before, next, new_revision) = next;
        let changed = changed_keys(&before, &next);
        self.inner.approvals.apply_config(next.clone());
        let failed = self.reload(&changed, &next);
        let (applied, restart_required): (Vec<String>, Vec<String>) =
            changed.into_iter().partition(|key| {
                self.live(key)
                    && !key
                        .split_once('.')
                        .is_some_and(|(section, _)| failed.contains(section))
            });
        *saved = next;
        tracing::info!(
            applied = ?applied,
            restart_required = ?restart_required,
            "config.toml saved from the settings editor"
        );
        Ok(ConfigSaved {
            revision: new_revision,
            applied,
            restart_required,
            backup: saved
                .paths
                .config_file()
                .with_extension("toml.bak")
                .display()
                .to_string(),
        })
    }

    fn describe(&self, current: &Config, text: String) -> ConfigDocument {
        let document: Option<DocumentMut> = text.parse().ok();
        let overrides: Vec<(&str, &str, &str)> = ENV_OVERRIDES
            .iter()
            .filter(|variable| {
                current
                    .env_overrides
                    .iter()
                    .any(|(name, _)| name == variable.name)
            })
            .filter_map(|variable| match variable.target {
                OverrideTarget::Key { section, key } => Some((section, key, variable.name)),
                _ => None,
            })
            .collect();
        let sections = Config::sections()
            .into_iter()
            .map(|section| {
                let values = current.section_json(section.name).unwrap_or(Value::Null);
                let defaults = Config::defaults(current.paths.clone())
                    .section_json(section.name)
                    .unwrap_or(Value::Null);
                let keys = section
                    .keys
                    .iter()
                    .map(|key| ConfigKey {
                        name: key.name.to_owned(),
                        doc: clean_doc(key.doc),
                        default: (section.default_toml)(key.name).unwrap_or_default(),
                        value: values.get(key.name).cloned().unwrap_or(Value::Null),
                        set_in_file: document
                            .as_ref()
                            .and_then(|document| document.get(section.name))
                            .and_then(|table| table.get(key.name))
                            .is_some(),
                        kind: kind_of(defaults.get(key.name)).to_owned(),
                        live: self.live(&format!("{}.{}", section.name, key.name)),
                        overridden_by: overrides
                            .iter()
                            .find(|(s, k, _)| *s == section.name && *k == key.name)
                            .map(|(_, _, name)| (*name).to_owned()),
                    })
                    .collect();
                ConfigSection {
                    name: section.name.to_owned(),
                    doc: clean_doc(section.doc),
                    keys,
                }
            })
            .collect();
        let live_keys = Config::sections()
            .iter()
            .flat_map(|section| {
                section
                    .keys
                    .iter()
                    .map(move |key| format!("{}.{}", section.name, key.name))
            })
            .filter(|key| self.live(key))
            .collect();
        let pending_restart = changed_keys(&self.inner.running, current)
            .into_iter()
            .filter(|key| !self.live(key))
            .collect();
        ConfigDocument {
            path: current.paths.config_file().display().to_string(),
            revision: revision(&text),
            text,
            sections,
            live_keys,
            pending_restart,
        }
    }
}

/// `section.key` of every key whose value differs between `before` and `after`.
pub(crate) fn changed_keys(before: &Config, after: &Config) -> Vec<String> {
    let mut changed = BTreeSet::new();
    for section in Config::sections() {
        let old = before.section_json(section.name).unwrap_or(Value::Null);
        let new = after.section_json(section.name).unwrap_or(Value::Null);
        for key in section.keys {
            if old.get(key.name) != new.get(key.name) {
                changed.insert(format!("{}.{}", section.name, key.name));
            }
        }
    }
    changed.into_iter().collect()
}

/// Whether a change of `section.key` applies without a restart.
pub(crate) fn is_live(key: &str) -> bool {
    key.split_once('.')
        .is_some_and(|(section, _)| LIVE_SECTIONS.contains(&section))
}

/// A fingerprint of a file's text.
pub(crate) fn revision(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A problem as the API sends it.
pub(crate) fn problem_on_wire(problem: &Problem) -> ConfigProblem {
    let (line, column) = match &problem.location {
        Location::File { line, column, .. } => (Some(*line), Some(*column)),
        _ => (None, None),
    };
    ConfigProblem {
        line,
        column,
        message: problem.message.clone(),
        display: problem.to_string(),
    }
}

fn read_text(paths: &crate::config::SouzPaths) -> Result<String, ConfigEditError> {
    let text = edit::read_current(paths).map_err(|error| ConfigEditError::Io(error.to_string()))?;
    Ok(text.unwrap_or_else(Config::template))
}

fn edit_error(error: EditError) -> ConfigEditError {
    match error {
        EditError::Invalid(problems) => ConfigEditError::Invalid {
            problems,
            text: String::new(),
        },
        EditError::Io { .. } => ConfigEditError::Io(error.to_string()),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ConfigEditError> + Send + 'static,
) -> Result<T, ConfigEditError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ConfigEditError::Io(format!("the config task failed: {error}")))?
}

/// Applies `changes` to the TOML `text`, keeping everything else as written.
fn apply_changes(text: &str, changes: &[ConfigValue]) -> Result<String, ConfigEditError> {
    let mut document: DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
        ConfigEditError::BadChange(format!(
            "config.toml is not valid TOML, so single keys cannot be changed; fix it in the raw \
             editor first: {}",
            error.message().trim()
        ))
    })?;
    for change in changes {
        let section = document
            .entry(&change.section)
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
        let Some(table) = section.as_table_like_mut() else {
            return Err(ConfigEditError::BadChange(format!(
                "[{}] is not a table in config.toml",
                change.section
            )));
        };
        if change.value.is_null() {
            table.remove(&change.key);
            continue;
        }
        let value = toml_value(&change.value).ok_or_else(|| {
            ConfigEditError::BadChange(format!(
                "[{}] {}: this value cannot be written as TOML",
                change.section, change.key
            ))
        })?;
        match table
            .get_mut(&change.key)
            .and_then(toml_edit::Item::as_value_mut)
        {
            // Replace the value only: the key's comments and the inline comment stay.
            Some(existing) => {
                let decor = existing.decor().clone();
                *existing = value;
                *existing.decor_mut() = decor;
            }
            None => {
                table.insert(&change.key, toml_edit::Item::Value(value));
            }
        }
    }
    Ok(document.to_string())
}

fn toml_value(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(flag) => toml_edit::Value::from(*flag),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => toml_edit::Value::from(integer),
            None => toml_edit::Value::from(number.as_f64()?),
        },
        Value::String(text) => toml_edit::Value::from(text.as_str()),
        Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(toml_value(item)?);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(fields) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, item) in fields {
                if !item.is_null() {
                    table.insert(key, toml_value(item)?);
                }
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

fn kind_of(default: Option<&Value>) -> &'static str {
    match default {
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(number)) if number.is_i64() || number.is_u64() => "integer",
        Some(Value::Number(_)) => "float",
        Some(Value::Array(_)) => "list",
        Some(Value::Object(_)) => "table",
        _ => "string",
    }
}

fn clean_doc(doc: &str) -> String {
    doc.lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests;
