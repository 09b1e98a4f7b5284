//! Changing `config.toml` safely: the new text is validated exactly as the daemon would load
//! it before anything is written; the write is atomic (temp file, fsync, rename) and the
//! previous version is kept as `config.toml.bak`. Comments and layout are preserved (toml_edit).
//!
//! `config.toml`, its `.bak` and its `.lock` are reached beneath the Souz home without following
//! a symbolic link ([`DaemonFile`]): a link at any of them is refused, never written through.

use std::path::Path;

pub(crate) mod comments;

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use super::{Config, Problem, RuleConfig, SouzPaths};
use crate::sandbox::beneath::daemon_file::{DaemonFile, DaemonFileError, WriteOptions};

/// The largest `config.toml` read for an edit.
pub(super) const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// Why a change was not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditError {
    /// The new text has problems; nothing was written.
    #[error("the change was not saved: {}", display(.0))]
    Invalid(Vec<Problem>),
    /// The file could not be read or written.
    #[error("cannot write {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
}

fn display(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Holds the advisory lock on `<config>.lock` (released on drop). Every read-modify-write of
/// `config.toml` (the settings editor, `always` rules) takes it, so two edits cannot interleave,
/// in this process or another one.
#[derive(Debug)]
pub(crate) struct EditLock {
    _file: std::fs::File,
}

/// Takes the edit lock of `config_file`, waiting for another holder to finish.
pub(crate) fn lock(config_file: &Path) -> Result<EditLock, EditError> {
    let path = config_file.with_extension("toml.lock");
    let io_error = |error: std::io::Error| EditError::Io {
        path: path.display().to_string(),
        message: error.to_string(),
    };
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A link planted at the lock file is not followed (nor created through).
        options
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    let file = options.open(&path).map_err(io_error)?;
    file.lock().map_err(io_error)?;
    Ok(EditLock { _file: file })
}

/// Validates `text` as the new `config.toml` of `current` and writes it. Returns the
/// configuration it describes. The caller holds the [`lock`] when it read the file first.
pub(crate) fn write_validated(current: &Config, text: &str) -> Result<Config, EditError> {
    let next = current.reparse(text).map_err(EditError::Invalid)?;
    let file = config_file(&current.paths)?;
    file.write(text.as_bytes(), WriteOptions::private().with_backup(".bak"))
        .map_err(file_error)?;
    Ok(next)
}

/// `config.toml` beneath the Souz home.
fn config_file(paths: &SouzPaths) -> Result<DaemonFile, EditError> {
    DaemonFile::new(paths.home(), paths.config_file()).map_err(file_error)
}

fn file_error(error: DaemonFileError) -> EditError {
    EditError::Io {
        path: error.path().display().to_string(),
        message: error.to_string(),
    }
}

/// The text of `config.toml` now; `None` when there is no file. A link there is refused.
pub(crate) fn read_current(paths: &SouzPaths) -> Result<Option<String>, EditError> {
    config_file(paths)?
        .read_text(MAX_CONFIG_BYTES)
        .map_err(file_error)
}

/// Appends `rule` to `[[approvals.rules]]` with a comment saying where it came from.
pub(crate) fn append_rule(
    current: &Config,
    rule: &RuleConfig,
    comment: &str,
) -> Result<(Config, String), EditError> {
    let file = current.paths.config_file();
    let io_error = |message: String| EditError::Io {
        path: file.display().to_string(),
        message,
    };
    let _lock = lock(&file)?;
    let text = read_current(&current.paths)?.unwrap_or_else(Config::template);
    let mut document: DocumentMut = text.parse().map_err(|error: toml_edit::TomlError| {
        io_error(format!("cannot parse the current file: {error}"))
    })?;
    let rule_table = rule_as_table(rule).map_err(io_error)?;
    let rendered = {
        let mut single = DocumentMut::new();
        let mut array = ArrayOfTables::new();
        array.push(rule_table.clone());
        let mut approvals = Table::new();
        approvals.insert("rules", Item::ArrayOfTables(array));
        single.insert("approvals", Item::Table(approvals));
        single.to_string()
    };

    let approvals = document
        .entry("approvals")
        .or_insert_with(|| Item::Table(Table::new()));
    let Some(approvals) = approvals.as_table_like_mut() else {
        return Err(io_error("[approvals] is not a table".to_owned()));
    };
    let mut decorated = rule_table;
    decorated.decor_mut().set_prefix(format!("\n# {comment}\n"));
    match approvals.get_mut("rules") {
        None => {
            let mut array = ArrayOfTables::new();
            array.push(decorated);
            approvals.insert("rules", Item::ArrayOfTables(array));
        }
        Some(Item::ArrayOfTables(array)) => array.push(decorated),
        Some(Item::Value(toml_edit::Value::Array(array))) => {
            array.push(decorated.into_inline_table());
        }
        Some(_) => return Err(io_error("[approvals] rules is not a list".to_owned())),
    }
    comments::keep_with_their_tables(&mut document);
    let next = write_validated(current, &document.to_string())?;
    Ok((next, rendered))
}

fn rule_as_table(rule: &RuleConfig) -> Result<Table, String> {
    let document = toml_edit::ser::to_document(rule).map_err(|error| error.to_string())?;
    Ok(document.as_table().clone())
}

#[cfg(test)]
mod tests {
    use souz_protocol::Action;

    use super::*;
    use crate::config::SouzPaths;

    fn config_in(dir: &Path, text: &str) -> Config {
        let paths = SouzPaths::new(dir);
        std::fs::write(paths.config_file(), text).unwrap();
        Config::load_file(paths.clone(), &paths.config_file(), &|_| None).unwrap()
    }

    fn rule() -> RuleConfig {
        RuleConfig {
            action: Action::Allow,
            tool: Some("RunCommand".into()),
            path: None,
            command: Some("git status".into()),
            domain: None,
            risk: None,
            requester: None,
            note: None,
        }
    }

    #[test]
    fn an_appended_rule_keeps_the_commented_keys_of_approvals_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path(), &Config::template());
        append_rule(&config, &rule(), "added by Souz from approval a1").unwrap();
        let written = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
        assert!(written.contains("[[approvals.rules]]"), "{written}");
        // `rules = []` is the very list just written: it cannot be set twice.
        assert_eq!(
            comments::keys_that_break_when_uncommented(&written, &["rules"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn appends_rules_preserving_comments_and_keeps_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        let original = "# my settings\n[server]\nport = 9000 # mine\n";
        let config = config_in(dir.path(), original);
        let (next, rendered) =
            append_rule(&config, &rule(), "added by Souz from approval a1").unwrap();
        assert_eq!(next.approvals.rules, vec![rule()]);
        assert!(rendered.contains("[[approvals.rules]]"), "{rendered}");
        let written = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
        assert!(
            written.starts_with("# my settings\n[server]\nport = 9000 # mine\n"),
            "{written}"
        );
        assert!(
            written.contains("# added by Souz from approval a1"),
            "{written}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("config.toml.bak")).unwrap(),
            original
        );

        // A second rule goes after the first.
        let second = RuleConfig {
            command: Some("git diff".into()),
            ..rule()
        };
        let (next, _) = append_rule(&next, &second, "again").unwrap();
        assert_eq!(next.approvals.rules.len(), 2);
        assert_eq!(next.approvals.rules[1], second);
    }

    /// A link at `config.toml.bak` (or at `config.toml`, or at the lock) is not written through:
    /// the canary outside the Souz home keeps its content.
    #[cfg(unix)]
    #[test]
    fn links_at_the_backup_the_file_and_the_lock_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("souz");
        std::fs::create_dir(&home).unwrap();
        let canary = dir.path().join("bashrc");
        std::fs::write(&canary, "alias ls=ls\n").unwrap();
        let original = "[server]\nport = 9000\n";
        let config = config_in(&home, original);
        let bak = home.join("config.toml.bak");
        std::os::unix::fs::symlink(&canary, &bak).unwrap();
        let error = write_validated(&config, "[server]\nport = 9001\n").unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "alias ls=ls\n");
        assert_eq!(
            std::fs::read_to_string(home.join("config.toml")).unwrap(),
            original
        );
        // A link at config.toml itself: neither read for an edit nor replaced through.
        std::fs::remove_file(&bak).unwrap();
        std::fs::remove_file(home.join("config.toml")).unwrap();
        std::os::unix::fs::symlink(&canary, home.join("config.toml")).unwrap();
        assert!(read_current(&config.paths).is_err());
        assert!(append_rule(&config, &rule(), "x").is_err());
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "alias ls=ls\n");
        // A dangling link at the lock is not created through.
        std::fs::remove_file(home.join("config.toml")).unwrap();
        let planted = dir.path().join("planted");
        std::fs::remove_file(home.join("config.toml.lock")).unwrap();
        std::os::unix::fs::symlink(&planted, home.join("config.toml.lock")).unwrap();
        assert!(lock(&home.join("config.toml")).is_err());
        assert!(!planted.exists());
    }

    #[test]
    fn inline_rule_lists_and_the_template_work() {
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path(), "[approvals]\nrules = []\n");
        let (next, _) = append_rule(&config, &rule(), "x").unwrap();
        assert_eq!(next.approvals.rules, vec![rule()]);

        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path(), &Config::template());
        let (next, _) = append_rule(&config, &rule(), "x").unwrap();
        assert_eq!(next.approvals.rules, vec![rule()]);
    }

    #[test]
    fn invalid_changes_are_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let original = "[server]\nport = 9000\n";
        let config = config_in(dir.path(), original);
        let error = write_validated(&config, "[server]\nport = \"x\"\n").unwrap_err();
        let EditError::Invalid(problems) = error else {
            panic!("{error}")
        };
        assert!(problems[0].to_string().contains(":2:8:"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("config.toml")).unwrap(),
            original
        );
        let bad_rule = RuleConfig {
            tool: None,
            command: None,
            ..rule()
        };
        assert!(matches!(
            append_rule(&config, &bad_rule, "x"),
            Err(EditError::Invalid(_))
        ));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("config.toml")).unwrap(),
            original
        );
        assert!(!dir.path().join("config.toml.bak").exists());
    }
}
