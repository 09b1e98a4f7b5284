//! `config.toml`: the schema, its defaults, validation with `FILE:LINE:COL` problems, the
//! commented template written at first start, the Souz home paths, and environment overrides.
//!
//! Invariants:
//! - One struct per section (`config_section!`), defaults next to the fields. Adding a section
//!   is one line in `config_sections!` below.
//! - Unknown sections and keys are errors. Every problem in a file is reported, not just the
//!   first, each with its position.
//! - The file is written once, at first start, with every key commented out at its default;
//!   Souz never overwrites it afterwards.
//! - No globals: the environment is passed in, tests build their own `Config`.
//! - A `config.toml` inside the Souz home is read and created beneath the home without
//!   following a link ([`DaemonFile`]); a file named elsewhere (`souz config check FILE`) is
//!   the person's choice and read as given.

pub(crate) mod agent;
pub(crate) mod approvals;
pub(crate) mod byte_size;
pub(crate) mod channels;
pub(crate) mod edit;
pub mod env;
pub(crate) mod history;
pub(crate) mod llm;
pub(crate) mod log;
pub(crate) mod mcp;
pub(crate) mod memory;
pub(crate) mod notifications;
pub mod paths;
pub(crate) mod protected;
pub(crate) mod sandbox;
pub(crate) mod section;
pub(crate) mod server;
pub(crate) mod skills;
pub(crate) mod speech;
pub(crate) mod voice;
pub(crate) mod web;

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

pub use agent::AgentConfig;
pub use approvals::{ApprovalsConfig, RuleConfig};
pub use byte_size::ByteSize;
pub use channels::{ChannelsConfig, TelegramConfig};
pub use env::{
    ENV_OVERRIDES, EnvLookup, EnvOverride, OverrideTarget, Setter, Var, process_lookup,
    system_language,
};
pub use history::HistoryConfig;
pub use llm::LlmConfig;
pub use log::LogConfig;
pub use mcp::{McpConfig, McpServerConfig, import_servers};
pub use memory::MemoryConfig;
pub use notifications::NotificationsConfig;
pub use paths::SouzPaths;
pub use sandbox::SandboxConfig;
pub use section::{Invalid, KeyDoc, Section};
pub use server::ServerConfig;
pub use skills::SkillsConfig;
pub use speech::SpeechConfig;
pub use voice::{VoiceConfig, check_hotkey};
pub use web::WebConfig;

use crate::sandbox::beneath::daemon_file::DaemonFile;

/// Declares the sections of `config.toml` and generates [`Config`] with per-section dispatch.
macro_rules! config_sections {
    ($($field:ident : $type:ty),* $(,)?) => {
        /// The validated configuration the runtime starts from.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            /// Where Souz keeps its files.
            pub paths: SouzPaths,
            /// Environment overrides that were applied (name, value), so an edited file can be
            /// re-validated exactly as the daemon would load it.
            pub env_overrides: Vec<(String, String)>,
            $(
                #[doc = concat!("`[", stringify!($field), "]`")]
                pub $field: $type,
            )*
        }

        impl Config {
            /// The default configuration for a Souz home.
            pub fn defaults(paths: SouzPaths) -> Self {
                Self { paths, env_overrides: Vec::new(), $( $field: <$type>::default(), )* }
            }

            /// Names and docs of every section, in file order.
            pub fn sections() -> Vec<SectionDoc> {
                vec![$(
                    SectionDoc {
                        name: <$type as Section>::NAME,
                        doc: <$type as Section>::DOC,
                        keys: <$type as Section>::KEYS,
                        default_toml: <$type as Section>::default_toml,
                    },
                )*]
            }

            /// The values of `section` as JSON (for the settings editor); `None` if unknown.
            pub fn section_json(&self, section: &str) -> Option<serde_json::Value> {
                match section {
                    $( <$type as Section>::NAME => serde_json::to_value(&self.$field).ok(), )*
                    _ => None,
                }
            }

            fn set(&mut self, section: &str, key: &str, value: toml_edit::Value) -> SetOutcome {
                match section {
                    $(
                        <$type as Section>::NAME => match self.$field.set(key, value) {
                            None => SetOutcome::UnknownKey(<$type as Section>::KEYS),
                            Some(Ok(())) => SetOutcome::Set,
                            Some(Err(error)) => SetOutcome::Invalid(error),
                        },
                    )*
                    _ => SetOutcome::UnknownSection,
                }
            }

            fn invalid(&self) -> Vec<(&'static str, Invalid)> {
                let mut problems = Vec::new();
                $(
                    problems.extend(
                        self.$field
                            .validate()
                            .into_iter()
                            .map(|invalid| (<$type as Section>::NAME, invalid)),
                    );
                )*
                problems
            }
        }
    };
}

config_sections! {
    server: ServerConfig,
    log: LogConfig,
    sandbox: SandboxConfig,
    approvals: ApprovalsConfig,
    llm: LlmConfig,
    mcp: McpConfig,
    notifications: NotificationsConfig,
    agent: AgentConfig,
    memory: MemoryConfig,
    skills: SkillsConfig,
    web: WebConfig,
    channels: ChannelsConfig,
    history: HistoryConfig,
    speech: SpeechConfig,
    voice: VoiceConfig,
}

/// Documentation of one section, for the template and the settings editor.
#[derive(Debug, Clone, Copy)]
pub struct SectionDoc {
    /// Section name.
    pub name: &'static str,
    /// Section documentation.
    pub doc: &'static str,
    /// Its keys.
    pub keys: &'static [KeyDoc],
    /// Renders the default of a key as TOML.
    pub default_toml: fn(&str) -> Option<String>,
}

enum SetOutcome {
    Set,
    UnknownSection,
    UnknownKey(&'static [KeyDoc]),
    Invalid(section::FieldError),
}

/// Where a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A position in a file (1-based line and column, columns counted in characters).
    File {
        /// The file.
        path: PathBuf,
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
    },
    /// A whole file (it could not be read).
    Path(PathBuf),
    /// An environment variable.
    Env(&'static str),
}

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where it is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Location::File { path, line, column } => {
                write!(f, "{}:{line}:{column}: {}", path.display(), self.message)
            }
            Location::Path(path) => write!(f, "{}: {}", path.display(), self.message),
            Location::Env(name) => write!(f, "environment variable {name}: {}", self.message),
        }
    }
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file has problems; each carries its position.
    #[error("{}", display_problems(.0))]
    Problems(Vec<Problem>),
    /// Neither `SOUZ_HOME` nor `HOME` says where Souz lives.
    #[error("{0}")]
    NoHome(String),
    /// The home folder or the file could not be created or read.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn display_problems(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl Config {
    /// Loads the configuration of the Souz home named by the environment: creates the home and
    /// a commented `config.toml` at first start, then reads the file and applies overrides.
    pub fn load(env: EnvLookup<'_>) -> Result<Self, ConfigError> {
        let paths = SouzPaths::resolve(env).map_err(ConfigError::NoHome)?;
        paths.ensure_home().map_err(|source| ConfigError::Io {
            path: paths.home().to_owned(),
            source,
        })?;
        let file = paths.config_file();
        write_template_if_missing(&file)?;
        Self::load_file(paths, &file, env)
    }

    /// Reads `file` (which must exist), applies environment overrides and validates.
    /// Never writes anything.
    pub fn load_file(
        paths: SouzPaths,
        file: &Path,
        env: EnvLookup<'_>,
    ) -> Result<Self, ConfigError> {
        let cannot_read = |message: String| {
            ConfigError::Problems(vec![Problem {
                location: Location::Path(file.to_owned()),
                message: format!("cannot read: {message}"),
            }])
        };
        let text = if file.starts_with(paths.home()) {
            DaemonFile::new(paths.home(), file)
                .and_then(|daemon_file| daemon_file.read_text(edit::MAX_CONFIG_BYTES))
                .map_err(|error| cannot_read(error.to_string()))?
                .ok_or_else(|| cannot_read("No such file or directory".to_owned()))?
        } else {
            std::fs::read_to_string(file).map_err(|source| cannot_read(source.to_string()))?
        };
        Self::parse(paths, file, &text, env).map_err(ConfigError::Problems)
    }

    /// Applies the environment's overrides, noting where each value came from and every
    /// override that does not fit.
    fn apply_env(
        &mut self,
        env: EnvLookup<'_>,
        origins: &mut HashMap<(&'static str, &'static str), Origin>,
        problems: &mut Vec<Problem>,
    ) {
        for variable in ENV_OVERRIDES {
            let OverrideTarget::Key { section, key } = variable.target else {
                continue;
            };
            let Some(raw) = env(variable.name) else {
                continue;
            };
            let outcome = match self.set(section, key, env::env_value(&raw)) {
                SetOutcome::Invalid(_) => {
                    self.set(section, key, toml_edit::Value::from(raw.as_str()))
                }
                other => other,
            };
            match outcome {
                SetOutcome::Set => {
                    origins.insert((section, key), Origin::Env(variable.name));
                    self.env_overrides
                        .push((variable.name.to_owned(), raw.clone()));
                }
                SetOutcome::Invalid(error) => problems.push(Problem {
                    location: Location::Env(variable.name),
                    message: format!("[{section}] {key}: {}", error.message.trim()),
                }),
                SetOutcome::UnknownKey(_) | SetOutcome::UnknownSection => problems.push(Problem {
                    location: Location::Env(variable.name),
                    message: format!("overrides unknown key [{section}] {key}"),
                }),
            }
        }
    }

    /// Parses `text` (the contents of `file`), applies environment overrides and validates,
    /// reporting every problem found.
    pub fn parse(
        paths: SouzPaths,
        file: &Path,
        text: &str,
        env: EnvLookup<'_>,
    ) -> Result<Self, Vec<Problem>> {
        let at = |offset: usize, message: String| Problem {
            location: file_position(file, text, offset),
            message,
        };
        let document = toml_edit::Document::parse(text).map_err(|error| {
            let offset = error.span().map_or(0, |span| span.start);
            vec![at(
                offset,
                format!("invalid TOML: {}", error.message().trim()),
            )]
        })?;

        let mut config = Self::defaults(paths);
        let mut problems = Vec::new();
        // Where each set key's value is, so semantic problems point at it.
        let mut origins: HashMap<(&'static str, &'static str), Origin> = HashMap::new();
        let root = document.as_table();
        for (section_name, section_item) in root.iter() {
            let key_offset = span_start(root.key(section_name).and_then(toml_edit::Key::span));
            let Some(table) = section_item.as_table_like() else {
                problems.push(at(
                    key_offset,
                    format!(
                        "`{section_name}` is not a section; settings belong in sections such as {}",
                        section_list()
                    ),
                ));
                continue;
            };
            if !Self::sections().iter().any(|doc| doc.name == section_name) {
                problems.push(at(
                    key_offset,
                    format!(
                        "unknown section [{section_name}]; known sections: {}",
                        section_list()
                    ),
                ));
                continue;
            }
            for (key, item) in table.iter() {
                let key_span = table.key(key).and_then(toml_edit::Key::span);
                let value_span = item.span();
                let Some(value) = item.clone().into_value().ok() else {
                    continue;
                };
                match config.set(section_name, key, value) {
                    SetOutcome::Set => {
                        if let Some(known) = static_key(section_name, key) {
                            origins.insert(known, Origin::File(value_span.or(key_span)));
                        }
                    }
                    SetOutcome::UnknownKey(keys) => problems.push(at(
                        span_start(key_span),
                        format!(
                            "unknown key `{key}` in [{section_name}]; known keys: {}",
                            keys.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
                        ),
                    )),
                    SetOutcome::Invalid(error) => problems.push(at(
                        span_start(error.span.or(value_span).or(key_span)),
                        format!("[{section_name}] {key}: {}", error.message.trim()),
                    )),
                    SetOutcome::UnknownSection => {}
                }
            }
        }

        config.apply_env(env, &mut origins, &mut problems);

        for (section_name, invalid) in config.invalid() {
            let location = match origins.get(&(section_name, invalid.key)) {
                Some(Origin::Env(name)) => Location::Env(name),
                Some(Origin::File(span)) => file_position(file, text, span_start(span.clone())),
                None => section_location(file, text, root, section_name),
            };
            problems.push(Problem {
                location,
                message: format!("[{section_name}] {}: {}", invalid.key, invalid.message),
            });
        }

        if problems.is_empty() {
            Ok(config)
        } else {
            problems.sort_by_key(|problem| match &problem.location {
                Location::File { line, column, .. } => (0, *line, *column),
                _ => (1, 0, 0),
            });
            Err(problems)
        }
    }

    /// Parses `text` as a new version of this configuration's file, with the same paths and
    /// environment overrides. Nothing is written.
    pub fn reparse(&self, text: &str) -> Result<Self, Vec<Problem>> {
        let overrides = self.env_overrides.clone();
        let lookup = move |name: &str| {
            overrides
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        };
        Self::parse(self.paths.clone(), &self.paths.config_file(), text, &lookup)
    }

    /// The text of a fresh `config.toml`: every key commented out at its default.
    pub fn template() -> String {
        let mut out = String::from(
            "# Souz configuration.\n\
             #\n\
             # Every setting is commented out and shows its default. Uncomment a line to change it,\n\
             # then run `souz config check` to validate the file. Environment variables\n\
             # (SOUZ_HOST, SOUZ_PORT, SOUZ_LOG, ...) override this file; see the README.\n",
        );
        for section in Self::sections() {
            out.push('\n');
            push_comment(&mut out, section.doc);
            out.push_str(&format!("[{}]\n", section.name));
            for key in section.keys {
                out.push('\n');
                push_comment(&mut out, key.doc);
                let default = (section.default_toml)(key.name).unwrap_or_default();
                out.push_str(&format!("# {} = {default}\n", key.name));
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
enum Origin {
    File(Option<Range<usize>>),
    Env(&'static str),
}

/// Maps a runtime key back to the `'static` names the sections declare.
fn static_key(section: &str, key: &str) -> Option<(&'static str, &'static str)> {
    Config::sections()
        .into_iter()
        .find(|doc| doc.name == section)
        .and_then(|doc| {
            doc.keys
                .iter()
                .find(|k| k.name == key)
                .map(|k| (doc.name, k.name))
        })
}

fn section_list() -> String {
    Config::sections()
        .iter()
        .map(|doc| format!("[{}]", doc.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn section_location(file: &Path, text: &str, root: &toml_edit::Table, section: &str) -> Location {
    let offset = span_start(root.key(section).and_then(toml_edit::Key::span));
    file_position(file, text, offset)
}

fn span_start(span: Option<Range<usize>>) -> usize {
    span.map_or(0, |span| span.start)
}

fn push_comment(out: &mut String, doc: &str) {
    for line in doc.lines() {
        let line = line.strip_prefix(' ').unwrap_or(line);
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str(&format!("# {line}\n"));
        }
    }
}

/// 1-based line and character column of a byte offset.
fn file_position(file: &Path, text: &str, offset: usize) -> Location {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    Location::File {
        path: file.to_owned(),
        line,
        column,
    }
}

/// Writes the commented template to `file` unless it exists. Returns whether it wrote.
/// Uses `create_new`, so two processes starting at once cannot clobber each other.
pub fn write_template_if_missing(file: &Path) -> Result<bool, ConfigError> {
    let io_error = |source| ConfigError::Io {
        path: file.to_owned(),
        source,
    };
    // Created as a new file in its trusted folder (the Souz home): never over anything there,
    // never through a link.
    DaemonFile::in_trusted_folder(file)
        .and_then(|daemon_file| daemon_file.create_new(Config::template().as_bytes(), 0o600))
        .map_err(|error| io_error(error.into_io()))
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
