//! The permissions manifest `agents/souz.toml`: a sidecar next to `SKILL.md` (so the skill
//! stays spec-valid) that says what the skill's commands may use.
//!
//! ```toml
//! [permissions]
//! read = ["~/Documents/invoices"]     # folders it may read
//! write = ["~/Documents/invoices/out"] # folders it may write
//! hosts = ["api.example.com"]         # hosts it may reach
//! programs = ["python3"]              # programs it runs
//! env = ["INVOICE_API_TOKEN"]         # environment variables it needs
//! tools = ["ReadFile"]                # Souz tools it may call
//! time_limit_seconds = 60             # per command, 1..=300
//! ```
//!
//! Invariants: unknown keys are errors (a typo must not silently grant nothing or everything);
//! a missing manifest means no folders, no hosts, no variables, no tools and the default time
//! limit. The manifest is a bundle file, so it is part of the bundle hash: changing it changes
//! the hash.

use serde::Deserialize;

/// Where the manifest lives in a bundle.
pub(crate) const MANIFEST_PATH: &str = "agents/souz.toml";
/// The default time limit of a skill command, in seconds (the original's 60 s).
pub(crate) const DEFAULT_TIME_LIMIT_SECONDS: u64 = 60;
/// The longest time limit a manifest may ask for (the original's clamp, 300 s).
pub(crate) const MAX_TIME_LIMIT_SECONDS: u64 = 300;

/// What a skill's commands may use.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Permissions {
    /// Folders it may read.
    #[serde(default)]
    pub read: Vec<String>,
    /// Folders it may write.
    #[serde(default)]
    pub write: Vec<String>,
    /// Hosts it may reach (names or `name:port`, no scheme or path).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Programs it runs.
    #[serde(default)]
    pub programs: Vec<String>,
    /// Environment variables passed through to it.
    #[serde(default)]
    pub env: Vec<String>,
    /// Souz tools it may call.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Per-command time limit.
    #[serde(default = "default_time_limit")]
    pub time_limit_seconds: u64,
}

impl Default for Permissions {
    fn default() -> Self {
        Self {
            read: Vec::new(),
            write: Vec::new(),
            hosts: Vec::new(),
            programs: Vec::new(),
            env: Vec::new(),
            tools: Vec::new(),
            time_limit_seconds: DEFAULT_TIME_LIMIT_SECONDS,
        }
    }
}

fn default_time_limit() -> u64 {
    DEFAULT_TIME_LIMIT_SECONDS
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    permissions: Permissions,
}

fn is_host(host: &str) -> bool {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.parse::<u16>().is_ok_and(|port| port > 0) => name,
        Some(_) => return false,
        None => host,
    };
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses and checks a manifest; every problem is listed.
pub(crate) fn parse(text: &str) -> Result<Permissions, Vec<String>> {
    let file: File = toml_edit::de::from_str(text)
        .map_err(|error| vec![format!("{MANIFEST_PATH}: {}", error.message())])?;
    let permissions = file.permissions;
    let mut problems = Vec::new();
    for folder in permissions.read.iter().chain(&permissions.write) {
        if folder.trim().is_empty() || folder.contains('\0') {
            problems.push(format!("`{folder}` is not a folder"));
        }
    }
    for host in &permissions.hosts {
        if !is_host(host) {
            problems.push(format!(
                "`{host}` is not a host name (write `api.example.com` or `api.example.com:8443`, without scheme or path)"
            ));
        }
    }
    for name in &permissions.env {
        if !is_env_name(name) {
            problems.push(format!("`{name}` is not an environment variable name"));
        }
    }
    for program in &permissions.programs {
        if program.trim().is_empty() {
            problems.push("a program name is empty".to_owned());
        }
    }
    if !(1..=MAX_TIME_LIMIT_SECONDS).contains(&permissions.time_limit_seconds) {
        problems.push(format!(
            "time_limit_seconds must be 1 to {MAX_TIME_LIMIT_SECONDS}"
        ));
    }
    if problems.is_empty() {
        Ok(permissions)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_manifest_parses() {
        let permissions = parse(
            "[permissions]\nread = [\"~/in\"]\nwrite = [\"~/out\"]\nhosts = [\"api.example.com\", \"h.example:8443\"]\n\
             programs = [\"python3\"]\nenv = [\"API_TOKEN\"]\ntools = [\"ReadFile\"]\ntime_limit_seconds = 30\n",
        )
        .unwrap();
        assert_eq!(permissions.write, ["~/out"]);
        assert_eq!(permissions.hosts.len(), 2);
        assert_eq!(permissions.time_limit_seconds, 30);
        assert_eq!(parse("").unwrap(), Permissions::default());
    }

    #[test]
    fn typos_and_bad_values_are_errors() {
        assert!(parse("[permissions]\nwrites = [\"~\"]\n").is_err());
        assert!(parse("[permission]\n").is_err());
        let problems = parse(
            "[permissions]\nhosts = [\"https://x.example/path\"]\nenv = [\"1BAD\"]\ntime_limit_seconds = 301\n",
        )
        .unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(parse("[permissions]\ntime_limit_seconds = 0\n").is_err());
    }
}
