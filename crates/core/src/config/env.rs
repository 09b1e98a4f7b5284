//! Environment overrides, declared in one place.
//!
//! Each variable either moves the Souz home or replaces one config key. The README lists this
//! table (a test keeps them in sync). Values are parsed as TOML first (`9000`, `true`) and fall
//! back to plain strings (`127.0.0.1`).

/// Looks up an environment variable; tests pass closures, the binary passes [`process_env`].
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Reads the real process environment.
#[allow(
    clippy::disallowed_methods,
    reason = "the one place that reads the process environment"
)]
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Reads one variable of the real process environment as it is (not necessarily UTF-8).
#[allow(
    clippy::disallowed_methods,
    reason = "the one place that reads the process environment"
)]
pub fn process_env_os(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name)
}

/// The whole process environment (for what commands inherit and what the daemon passes on).
#[allow(
    clippy::disallowed_methods,
    reason = "the one place that reads the process environment"
)]
pub fn process_environment_os() -> std::env::VarsOs {
    std::env::vars_os()
}

/// The system's interface language: the first set of `LC_ALL`, `LC_MESSAGES` and `LANG`
/// (English when it names neither Russian nor English).
pub fn system_language(env: EnvLookup<'_>) -> souz_protocol::language::Language {
    let values = ["LC_ALL", "LC_MESSAGES", "LANG"].map(env);
    souz_protocol::language::Language::from_locale_vars(values.iter().map(Option::as_deref))
}

/// What an environment variable overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideTarget {
    /// The Souz home folder itself.
    Home,
    /// One key of `config.toml`.
    Key {
        /// Section name.
        section: &'static str,
        /// Key inside the section.
        key: &'static str,
    },
}

/// One supported environment variable.
#[derive(Debug, Clone, Copy)]
pub struct EnvOverride {
    /// Variable name.
    pub name: &'static str,
    /// What it overrides.
    pub target: OverrideTarget,
    /// One line for the README and `--help`.
    pub doc: &'static str,
}

/// Every environment variable Souz reads.
pub const ENV_OVERRIDES: &[EnvOverride] = &[
    EnvOverride {
        name: "SOUZ_HOME",
        target: OverrideTarget::Home,
        doc: "Folder for config.toml, token, database and logs (default ~/.souz).",
    },
    EnvOverride {
        name: "SOUZ_HOST",
        target: OverrideTarget::Key {
            section: "server",
            key: "host",
        },
        doc: "Overrides [server] host.",
    },
    EnvOverride {
        name: "SOUZ_PORT",
        target: OverrideTarget::Key {
            section: "server",
            key: "port",
        },
        doc: "Overrides [server] port.",
    },
    EnvOverride {
        name: "SOUZ_PROXY_TOKEN",
        target: OverrideTarget::Key {
            section: "server",
            key: "trusted_proxy_token",
        },
        doc: "Overrides [server] trusted_proxy_token (trusted-proxy mode for server deployments).",
    },
    EnvOverride {
        name: "SOUZ_LOG",
        target: OverrideTarget::Key {
            section: "log",
            key: "level",
        },
        doc: "Overrides [log] level (e.g. debug, or info,souz_core=trace).",
    },
];

/// Turns an environment string into the TOML value it most likely means.
pub fn env_value(raw: &str) -> toml_edit::Value {
    raw.trim()
        .parse::<toml_edit::Value>()
        .unwrap_or_else(|_| toml_edit::Value::from(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_are_typed_when_possible() {
        assert_eq!(env_value("9000").as_integer(), Some(9000));
        assert_eq!(env_value("true").as_bool(), Some(true));
        assert_eq!(env_value("127.0.0.1").as_str(), Some("127.0.0.1"));
        assert_eq!(
            env_value("info,souz=debug").as_str(),
            Some("info,souz=debug")
        );
    }

    #[test]
    fn readme_lists_every_variable() {
        let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
        for variable in ENV_OVERRIDES {
            let row = format!("| `{}` | {} |", variable.name, variable.doc);
            assert!(readme.contains(&row), "README is missing the row: {row}");
        }
    }

    #[test]
    fn names_are_unique_and_prefixed() {
        let mut names: Vec<_> = ENV_OVERRIDES.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENV_OVERRIDES.len());
        assert!(names.iter().all(|name| name.starts_with("SOUZ_")));
    }
}
