//! `[approvals]`: defaults per risk class, the approval timeout, and ordered rules.

use serde::{Deserialize, Serialize};
use souz_protocol::{Action, Risk};

use super::section::{Invalid, config_section};

/// One rule of `[[approvals.rules]]`. Every matcher given must hold for the rule to match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// `allow`, `ask` or `deny`.
    pub action: Action,
    /// Tool name; `*` matches any run of characters (`*File`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A folder (the folder and everything inside it) or a glob (`~/projects/**/*.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A command prefix in words (`git status`), seen through `sudo`, `env`, `sh -c`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// A domain; subdomains match too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// A risk class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// Who asks: `chat`, `cli`, `api`, `skill`, `mcp`, or `mcp:<client name>` (the name of the
    /// client's token, `souz clients list`; never what the client calls itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    /// Why the rule exists; shown with decisions it makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl RuleConfig {
    /// The rule in words, for audits and prompts: `deny RunCommand command="rm -rf"`.
    pub fn describe(&self) -> String {
        let mut parts = vec![match self.action {
            Action::Allow => "allow".to_owned(),
            Action::Ask => "ask".to_owned(),
            Action::Deny => "deny".to_owned(),
        }];
        let mut push = |name: &str, value: &Option<String>| {
            if let Some(value) = value {
                parts.push(format!("{name}={value:?}"));
            }
        };
        push("tool", &self.tool);
        push("path", &self.path);
        push("command", &self.command);
        push("domain", &self.domain);
        push("requester", &self.requester);
        if let Some(risk) = self.risk {
            parts.push(format!("risk={}", risk.as_str()));
        }
        parts.join(" ")
    }

    fn check(&self) -> Result<(), String> {
        if self.tool.is_none()
            && self.path.is_none()
            && self.command.is_none()
            && self.domain.is_none()
            && self.risk.is_none()
            && self.requester.is_none()
        {
            return Err(
                "needs at least one of tool, path, command, domain, risk, requester".to_owned(),
            );
        }
        if let Some(tool) = &self.tool
            && (tool.is_empty()
                || !tool
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-*?".contains(c)))
        {
            return Err(format!(
                "tool `{tool}` may contain only letters, digits, _, -, * and ?"
            ));
        }
        if let Some(path) = &self.path {
            if path.trim().is_empty() {
                return Err("path is empty".to_owned());
            }
            if !(path.starts_with('/') || path.starts_with('~')) {
                return Err(format!("path `{path}` must be absolute or start with ~"));
            }
            globset::Glob::new(path).map_err(|error| format!("path `{path}`: {error}"))?;
        }
        if let Some(command) = &self.command
            && crate::shell::prefix_words(command).is_empty()
        {
            return Err("command is empty".to_owned());
        }
        if let Some(command) = &self.command
            && self.action == Action::Allow
            && crate::shell::plain_command(command).is_none()
        {
            return Err(format!(
                "command `{command}` of an allow rule must be one plain command: a program \
                 (a name, or a path without ~ or wildcards), its first arguments, and any \
                 NAME=value it may run with (not PATH, LD_*, ...); no ;, |, &&, $(...) or \
                 output to files"
            ));
        }
        if let Some(domain) = &self.domain {
            let valid = !domain.is_empty()
                && domain
                    .trim_start_matches("*.")
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-.:".contains(c));
            if !valid {
                return Err(format!("domain `{domain}` is not a host name"));
            }
        }
        if let Some(requester) = &self.requester {
            let kind = requester.split(':').next().unwrap_or_default();
            if !matches!(kind, "chat" | "cli" | "api" | "skill" | "mcp") {
                return Err(format!(
                    "requester `{requester}` must be chat, cli, api, skill, mcp or mcp:<client token name>"
                ));
            }
        }
        Ok(())
    }
}

config_section! {
    /// The approval gate: every tool call is allowed, asked about, or denied. Rules are checked
    /// for every call; deny beats ask beats allow; protected paths and unknown tools always ask
    /// unless a rule denies them. Example rules:
    ///
    ///   [[approvals.rules]]
    ///   action = "allow"
    ///   tool = "RunCommand"
    ///   command = "git status"
    ///
    ///   [[approvals.rules]]
    ///   action = "deny"
    ///   command = "rm -rf"
    ///
    ///   [[approvals.rules]]
    ///   action = "allow"
    ///   tool = "*File"
    ///   path = "~/projects/notes"
    #[section = "approvals"]
    pub struct ApprovalsConfig {
        /// Read-only tools when no rule or grant matches: "allow", "ask" or "deny".
        pub read_only: Action = Action::Allow,
        /// Tools that create or change files: "allow", "ask" or "deny".
        pub write: Action = Action::Ask,
        /// Tools that delete: "allow", "ask" or "deny".
        pub delete: Action = Action::Ask,
        /// Tools that reach the network: "allow", "ask" or "deny".
        pub network: Action = Action::Ask,
        /// Tools that run programs: "allow", "ask" or "deny".
        pub exec: Action = Action::Ask,
        /// Seconds a pending approval waits for an answer before it is denied.
        pub timeout_seconds: u64 = 300,
        /// Hours a scheduled run waits, parked, for an answer about a call outside what it may
        /// do unasked; then the call is denied and the run ends blocked. Survives restarts.
        pub parked_hours: u64 = 24,
        /// Most calls waiting for approval at once, from everyone together. A call over the cap
        /// is refused with a clear error (nothing runs; the waiting calls stay decidable).
        pub max_pending: usize = 200,
        /// Most calls waiting for approval at once from one requester (one chat, one MCP
        /// client, the CLI, scripts, one skill).
        pub max_pending_per_requester: usize = 50,
        /// Ordered rules (see the examples above); `always` decisions append here.
        pub rules: Vec<RuleConfig> = Vec::new(),
    }
}

impl ApprovalsConfig {
    /// The default action for a risk class.
    pub fn default_for(&self, risk: Risk) -> Action {
        match risk {
            Risk::ReadOnly => self.read_only,
            Risk::Write => self.write,
            Risk::Delete => self.delete,
            Risk::Network => self.network,
            Risk::Exec => self.exec,
        }
    }

    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if !(5..=86_400).contains(&self.timeout_seconds) {
            problems.push(Invalid::new(
                "timeout_seconds",
                "must be between 5 and 86400",
            ));
        }
        if !(1..=720).contains(&self.parked_hours) {
            problems.push(Invalid::new("parked_hours", "must be between 1 and 720"));
        }
        if !(1..=100_000).contains(&self.max_pending) {
            problems.push(Invalid::new("max_pending", "must be between 1 and 100000"));
        }
        if !(1..=self.max_pending.max(1)).contains(&self.max_pending_per_requester) {
            problems.push(Invalid::new(
                "max_pending_per_requester",
                "must be between 1 and max_pending",
            ));
        }
        for (index, rule) in self.rules.iter().enumerate() {
            if let Err(message) = rule.check() {
                problems.push(Invalid::new(
                    "rules",
                    format!("rule {}: {message}", index + 1),
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::section::Section;

    fn rule(action: Action) -> RuleConfig {
        RuleConfig {
            action,
            tool: None,
            path: None,
            command: None,
            domain: None,
            risk: None,
            requester: None,
            note: None,
        }
    }

    #[test]
    fn rules_are_validated() {
        let mut config = ApprovalsConfig::default();
        assert!(config.validate().is_empty());
        config.rules = vec![
            rule(Action::Allow),
            RuleConfig {
                tool: Some("Bad Name".into()),
                ..rule(Action::Deny)
            },
            RuleConfig {
                path: Some("relative/x".into()),
                ..rule(Action::Deny)
            },
            RuleConfig {
                path: Some("~/a/[".into()),
                ..rule(Action::Deny)
            },
            RuleConfig {
                requester: Some("robot".into()),
                ..rule(Action::Deny)
            },
            RuleConfig {
                command: Some("  ".into()),
                ..rule(Action::Deny)
            },
            RuleConfig {
                tool: Some("*File".into()),
                path: Some("~/notes".into()),
                ..rule(Action::Allow)
            },
        ];
        let problems: Vec<String> = config.validate().into_iter().map(|p| p.message).collect();
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(problems[0].starts_with("rule 1: needs at least one"));
        assert!(problems[1].starts_with("rule 2: tool"));
        assert!(problems[2].starts_with("rule 3: path"));
        assert!(problems[3].starts_with("rule 4: path"));
        assert!(problems[4].starts_with("rule 5: requester"));
        assert!(problems[5].starts_with("rule 6: command is empty"));
    }

    #[test]
    fn allow_rules_for_commands_name_one_plain_command() {
        let check = |action: Action, command: &str| {
            RuleConfig {
                command: Some(command.into()),
                ..rule(action)
            }
            .check()
        };
        for good in [
            "git status",
            "RUST_LOG=debug cargo test",
            "/usr/bin/make -j4",
            "echo",
        ] {
            assert_eq!(check(Action::Allow, good), Ok(()), "{good}");
        }
        for bad in [
            "git status; rm -rf ~",
            "git status && curl x",
            "$(which git) status",
            "~/bin/tool",
            "LD_PRELOAD=/tmp/x.so git status",
            "PATH=/tmp git status",
        ] {
            let problem = check(Action::Allow, bad).expect_err(bad);
            assert!(problem.contains("one plain command"), "{bad}: {problem}");
            // Deny and ask rules match through all of that, so they stay valid.
            assert_eq!(check(Action::Deny, bad), Ok(()), "{bad}");
        }
    }

    #[test]
    fn describe() {
        let rule = RuleConfig {
            tool: Some("RunCommand".into()),
            command: Some("rm -rf".into()),
            ..rule(Action::Deny)
        };
        assert_eq!(
            rule.describe(),
            "deny tool=\"RunCommand\" command=\"rm -rf\""
        );
    }
}
