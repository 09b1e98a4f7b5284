//! The default protected paths as a table: every listed path is protected on this system, and
//! reading one through a read-only tool asks even when a rule allows the tool.

use std::path::{Path, PathBuf};

use souz_protocol::{Action, Requester, Risk};

use crate::approvals::{CallFacts, CallTarget, Decision, Policy};
use crate::config::{ApprovalsConfig, RuleConfig, SandboxConfig, SouzPaths, protected};
use crate::sandbox::{Access, Sandbox};

fn home_sandbox() -> (tempfile::TempDir, PathBuf, Sandbox) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let home = dir.path().canonicalize().unwrap();
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&SandboxConfig::default(), &paths).unwrap();
    (dir, home, sandbox)
}

/// What the policy says about reading `raw` with a read-only tool a rule allows outright.
fn read_decision(sandbox: &Sandbox, home: &Path, raw: &str) -> Action {
    let resolved = sandbox.resolve(raw, Access::Read).unwrap();
    let config = ApprovalsConfig {
        rules: vec![RuleConfig {
            action: Action::Allow,
            tool: Some("ReadFile".into()),
            path: None,
            command: None,
            domain: None,
            risk: None,
            requester: None,
            note: None,
        }],
        ..ApprovalsConfig::default()
    };
    let policy = Policy::new(&config, home);
    let targets = [CallTarget::Path {
        path: resolved.path,
        access: Access::Read,
        protected: resolved.protected,
    }];
    let requester = Requester::Cli;
    let facts = CallFacts {
        tool: "ReadFile",
        known: true,
        risk: Risk::ReadOnly,
        requester: &requester,
        targets: &targets,
    };
    let decision = policy.decide(&facts, &[], chrono::Utc::now());
    if let Decision::Ask { reason } = &decision {
        assert!(reason.contains("protected path"), "{raw}: {reason}");
    }
    decision.action()
}

#[test]
fn every_default_protected_path_is_protected_and_reading_it_asks() {
    let (_dir, home, sandbox) = home_sandbox();
    let listed: Vec<String> = protected::secrets()
        .into_iter()
        .chain(protected::code_config())
        .collect();
    assert!(listed.len() >= 80, "{}", listed.len());
    // The paths the review read or wrote, and a file inside every listed entry.
    let mut cases: Vec<String> = [
        "~/.git-credentials",
        "~/.config/gh/hosts.yml",
        "~/.gitconfig",
        "~/.config/git/config",
        "~/.local/bin/git",
        "~/bin/git",
        "~/.claude.json",
        "~/.claude/settings.json",
        "~/.codex/auth.json",
        "~/.npmrc",
        "~/.cargo/credentials.toml",
        "~/.azure/accessTokens.json",
        "~/.password-store/bank.gpg",
        "~/.ssh/id_ed25519",
        "~/Library/LaunchAgents/x.plist",
    ]
    .iter()
    .map(|path| (*path).to_owned())
    .collect();
    if cfg!(not(target_os = "macos")) {
        cases.extend(
            [
                "~/.config/autostart/x.desktop",
                "~/.config/systemd/user/x.service",
                "~/.local/share/keyrings/login.keyring",
                "~/.mozilla/firefox/profiles.ini",
                "~/.config/google-chrome/Default/Cookies",
                "~/.pam_environment",
                "~/.config/environment.d/x.conf",
            ]
            .map(str::to_owned),
        );
    }
    // Reading needs the file: make the named ones, and a file inside every other entry.
    let real = |raw: &str| home.join(raw.trim_start_matches("~/"));
    for raw in &cases {
        std::fs::create_dir_all(real(raw).parent().unwrap()).unwrap();
        std::fs::write(real(raw), "x").unwrap();
    }
    for entry in &listed {
        if real(entry).is_file() {
            cases.push(entry.clone());
        } else {
            std::fs::create_dir_all(real(entry)).unwrap();
            std::fs::write(real(entry).join("inside"), "x").unwrap();
            cases.push(format!("{entry}/inside"));
        }
    }
    for ordinary in ["notes.txt", "projects/a.rs", ".config/app/settings.toml"] {
        std::fs::create_dir_all(home.join(ordinary).parent().unwrap()).unwrap();
        std::fs::write(home.join(ordinary), "x").unwrap();
    }
    for raw in &cases {
        let resolved = sandbox.resolve(raw, Access::Read).unwrap();
        assert!(resolved.protected, "{raw} is not protected");
        assert_eq!(read_decision(&sandbox, &home, raw), Action::Ask, "{raw}");
    }
    for ordinary in [
        "~/notes.txt",
        "~/projects/a.rs",
        "~/.config/app/settings.toml",
    ] {
        assert!(!sandbox.resolve(ordinary, Access::Read).unwrap().protected);
        assert_eq!(
            read_decision(&sandbox, &home, ordinary),
            Action::Allow,
            "{ordinary}"
        );
    }
}
