//! The default protected paths as a table: every listed path is protected on this system,
//! reading one through a read-only tool asks even when a rule allows the tool, and commands
//! cannot write them (nor read the secrets), including files that do not exist yet.

use super::*;
use crate::approvals::{CallFacts, Decision, Policy};
use crate::config::{ApprovalsConfig, RuleConfig, protected};
use crate::tools::Target;
use souz_protocol::{Action, Requester, Risk};

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
    let targets = [Target::Path {
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

#[test]
fn commands_cannot_write_protected_paths_even_before_they_exist() {
    let (_dir, home, sandbox) = home_sandbox();
    for folder in [".config/app", ".config/systemd", ".local/bin", "projects"] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
    }
    std::fs::write(home.join(".gitconfig"), "[user]\n").unwrap();
    std::fs::write(home.join(".local/bin/tool"), "#!/bin/sh\n").unwrap();
    // The command's private temporary folder lies outside the home, as in real runs.
    let temporary = tempfile::tempdir().unwrap();
    let writable = confinement::writable_paths(&sandbox, temporary.path());
    let writable_through = |relative: &str| {
        let path = home.join(relative);
        writable
            .iter()
            .find(|granted| path.starts_with(granted))
            .cloned()
    };
    // Existing or not, nothing granted contains these.
    for relative in [
        ".gitconfig",
        ".git-credentials",
        ".config/git/config",
        ".config/autostart/x.desktop",
        ".config/systemd/user/x.service",
        ".local/bin/tool",
        ".local/bin/git",
        "bin/git",
        ".claude.json",
        ".npmrc",
    ] {
        assert_eq!(writable_through(relative), None, "{relative}");
    }
    for relative in ["projects/a.rs", ".config/app/x"] {
        assert!(
            writable_through(relative).is_some(),
            "{relative}: {writable:?}"
        );
    }
    // Commands read code configuration (git needs its config, programs in ~/.local/bin run),
    // not secrets.
    if let Some(readable) = confinement::readable_paths(&sandbox, temporary.path()) {
        let readable_through = |relative: &str| {
            readable
                .iter()
                .any(|granted| home.join(relative).starts_with(granted))
        };
        assert!(readable_through(".gitconfig"), "{readable:?}");
        assert!(readable_through(".local/bin/tool"), "{readable:?}");
        assert!(!readable_through(".git-credentials"));
        assert!(!readable_through(".npmrc"));
    }
}
