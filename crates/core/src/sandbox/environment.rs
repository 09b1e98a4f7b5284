//! The environment commands run with: built from an allowlist, never from the daemon's whole
//! environment.
//!
//! Invariants:
//! - A command sees only the variables named in [`INHERITED`] (plus `LC_*`) from the daemon,
//!   and only when their names do not look like secrets; then the variables its caller adds.
//! - Loader and shell injection variables (`DYLD_*`, `LD_*`, `BASH_ENV`, `ENV`, exported shell
//!   functions) never reach a command, neither inherited nor added by a caller.

use std::ffi::{OsStr, OsString};

/// Variables a command inherits from the daemon (when set), besides `LC_*`.
pub(crate) const INHERITED: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "SHELL", "TZ",
];

/// Variables that name the temporary folder: the runner sets each to the command's private
/// one (never inherited).
pub(crate) const TEMPORARY_FOLDER_VARIABLES: &[&str] = &["TMPDIR", "TMP", "TEMP"];

/// The `PATH` commands get when the daemon has none.
pub(crate) const FALLBACK_PATH: &str = if cfg!(target_os = "macos") {
    "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
} else {
    "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
};

/// The `PATH` a command gets when the daemon's environment is `environment`: the inherited
/// one, or [`FALLBACK_PATH`].
pub(crate) fn command_search_path(
    environment: impl IntoIterator<Item = (OsString, OsString)>,
) -> OsString {
    inheritable(environment)
        .into_iter()
        .find(|(name, _)| name == "PATH")
        .map_or_else(|| OsString::from(FALLBACK_PATH), |(_, value)| value)
}

/// Whether a variable name looks like it carries a secret (API keys, tokens, passwords, cloud
/// credentials, agent sockets that unlock keys).
pub(crate) fn looks_like_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const SUFFIXES: &[&str] = &["_KEY", "_TOKEN", "_SECRET", "_PAT", "_AUTH", "_SESSION"];
    const PARTS: &[&str] = &[
        "PASSWORD",
        "PASSWD",
        "SECRET",
        "TOKEN",
        "CREDENTIAL",
        "API_KEY",
        "APIKEY",
        "PRIVATE_KEY",
        "AUTH_SOCK",
    ];
    const PREFIXES: &[&str] = &["AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "SOUZ_"];
    SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
        || PARTS.iter().any(|part| upper.contains(part))
        || PREFIXES.iter().any(|prefix| upper.starts_with(prefix))
        || upper == "KEY"
}

/// Whether a variable can make a program load or run code it did not ask for.
pub(crate) fn is_injection_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("DYLD_")
        || upper.starts_with("LD_")
        || upper.starts_with("BASH_FUNC_")
        || upper == "BASH_ENV"
        || upper == "ENV"
        || upper == "PROMPT_COMMAND"
        || upper == "PERL5OPT"
        || upper == "PYTHONSTARTUP"
        || upper == "NODE_OPTIONS"
}

/// Whether a command may inherit the daemon's variable `name`.
pub(crate) fn may_inherit(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let allowed = INHERITED.contains(&name) || name.starts_with("LC_");
    allowed && !looks_like_secret(name) && !is_injection_variable(name)
}

/// Reduces an environment to what commands may inherit.
pub(crate) fn inheritable(
    environment: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut kept: Vec<(OsString, OsString)> = environment
        .into_iter()
        .filter(|(name, _)| may_inherit(name))
        .collect();
    kept.sort();
    kept.dedup_by(|later, earlier| later.0 == earlier.0);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowlisted_harmless_variables_are_inherited() {
        let daemon = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/p"),
            ("LANG", "en_US.UTF-8"),
            ("LC_ALL", "C"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("GITHUB_TOKEN", "ghp"),
            ("AWS_ACCESS_KEY_ID", "AKIA"),
            ("DB_PASSWORD", "hunter2"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("DYLD_INSERT_LIBRARIES", "/tmp/evil.dylib"),
            ("LC_SECRET_TOKEN", "sneaky"),
            ("EDITOR", "vim"),
            ("SOUZ_HOME", "/home/p/.souz"),
        ]
        .map(|(name, value)| (OsString::from(name), OsString::from(value)));
        let kept = inheritable(daemon);
        let names: Vec<_> = kept
            .iter()
            .map(|(name, _)| name.to_str().unwrap())
            .collect();
        assert_eq!(names, ["HOME", "LANG", "LC_ALL", "PATH"]);
    }

    #[test]
    fn secrets_and_injection_variables_are_recognized() {
        for secret in [
            "OPENAI_API_KEY",
            "github_token",
            "MY_SECRET",
            "PGPASSWORD",
            "AWS_SESSION_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "NPM_AUTH",
            "SSH_AUTH_SOCK",
        ] {
            assert!(looks_like_secret(secret), "{secret}");
        }
        for harmless in ["PATH", "LANG", "TERM", "TZ", "LC_CTYPE"] {
            assert!(!looks_like_secret(harmless), "{harmless}");
        }
        for injection in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "DYLD_INSERT_LIBRARIES",
            "BASH_ENV",
            "BASH_FUNC_ls%%",
        ] {
            assert!(is_injection_variable(injection), "{injection}");
        }
        assert!(!is_injection_variable("LANG"));
    }
}
