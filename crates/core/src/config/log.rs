//! `[log]`: how much the daemon logs and how long log files are kept.

use super::section::{Invalid, config_section};

config_section! {
    /// Logging: human-readable lines on stderr, JSON lines in `<SOUZ_HOME>/logs/`.
    #[section = "log"]
    pub struct LogConfig {
        /// Filter in `tracing` syntax: a level (error, warn, info, debug, trace) optionally
        /// followed by per-module levels, e.g. "info,souz_core::gateway=debug".
        pub level: String = "info".to_owned(),
        /// Write JSON log files to `<SOUZ_HOME>/logs/` (rotated daily).
        pub file: bool = true,
        /// Number of daily log files to keep; older ones are deleted.
        pub retention_days: u32 = 7,
    }
}

const LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

impl LogConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if let Err(message) = check_filter(&self.level) {
            problems.push(Invalid::new("level", message));
        }
        if self.retention_days == 0 || self.retention_days > 365 {
            problems.push(Invalid::new("retention_days", "must be between 1 and 365"));
        }
        problems
    }
}

/// Checks a `tracing` filter: comma-separated `level` or `target=level` directives.
pub(crate) fn check_filter(filter: &str) -> Result<(), String> {
    if filter.trim().is_empty() {
        return Err("must not be empty; use e.g. \"info\"".to_owned());
    }
    for directive in filter.split(',').map(str::trim) {
        let level = match directive.split_once('=') {
            Some((target, level)) => {
                let valid_target = !target.is_empty()
                    && target
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-'));
                if !valid_target {
                    return Err(format!("`{directive}` has an invalid target"));
                }
                level
            }
            None => directive,
        };
        if !LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "`{level}` is not a level; use one of {}",
                LEVELS.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        assert!(check_filter("info").is_ok());
        assert!(check_filter("warn,souz_core::gateway=debug").is_ok());
        assert!(check_filter("loud").unwrap_err().contains("not a level"));
        assert!(check_filter("").is_err());
        assert!(check_filter("=debug").is_err());
    }
}
