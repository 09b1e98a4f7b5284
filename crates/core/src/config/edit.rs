//! Changing `config.toml` safely: the new text is validated exactly as the daemon would load
//! it before anything is written; the write is atomic (temp file, fsync, rename) and the
//! previous version is kept as `config.toml.bak`. Comments and layout are preserved (toml_edit).

use std::io::Write;
use std::path::Path;

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use super::{Config, Problem, RuleConfig};

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
        options.mode(0o600);
    }
    let file = options.open(&path).map_err(io_error)?;
    file.lock().map_err(io_error)?;
    Ok(EditLock { _file: file })
}

/// Validates `text` as the new `config.toml` of `current` and writes it. Returns the
/// configuration it describes. The caller holds the [`lock`] when it read the file first.
pub(crate) fn write_validated(current: &Config, text: &str) -> Result<Config, EditError> {
    let next = current.reparse(text).map_err(EditError::Invalid)?;
    let file = current.paths.config_file();
    write_atomically(&file, text).map_err(|error| EditError::Io {
        path: file.display().to_string(),
        message: error.to_string(),
    })?;
    Ok(next)
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
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Config::template(),
        Err(error) => return Err(io_error(error.to_string())),
    };
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
    let next = write_validated(current, &document.to_string())?;
    Ok((next, rendered))
}

fn rule_as_table(rule: &RuleConfig) -> Result<Table, String> {
    let document = toml_edit::ser::to_document(rule).map_err(|error| error.to_string())?;
    Ok(document.as_table().clone())
}

fn write_atomically(file: &Path, text: &str) -> std::io::Result<()> {
    let temporary = file.with_extension(format!("toml.{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut handle = options.open(&temporary)?;
        handle.write_all(text.as_bytes())?;
        handle.sync_all()?;
        if file.exists() {
            std::fs::copy(file, file.with_extension("toml.bak"))?;
        }
        std::fs::rename(&temporary, file)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
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
