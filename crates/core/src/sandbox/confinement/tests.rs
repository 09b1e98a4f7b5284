use std::os::unix::fs::symlink;

use super::*;
use crate::config::{SandboxConfig, SouzPaths};

fn sandbox_with_home(home: &Path) -> Sandbox {
    let config = SandboxConfig {
        roots: vec!["~".to_owned(), "~/extra".to_owned()],
        protected: vec![
            "~/.ssh".to_owned(),
            "~/.config/secret".to_owned(),
            "~/.zshrc".to_owned(),
        ],
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(home);
    Sandbox::new(&config, &paths).unwrap()
}

#[test]
fn writable_paths_split_roots_around_protected_paths() {
    // The home is under /var/tmp, so /tmp (which does not hold it) is granted.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let home = dir.path().canonicalize().unwrap();
    for folder in [
        ".ssh",
        ".config/secret",
        ".config/app",
        "projects/deep",
        ".souz",
        "extra",
    ] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
    }
    std::fs::write(home.join("notes.txt"), "n").unwrap();
    std::fs::write(home.join(".zshrc"), "z").unwrap();
    std::fs::write(home.join(".config/settings.toml"), "s").unwrap();
    symlink("/etc", home.join("etc_link")).unwrap();
    symlink(home.join("projects"), home.join("projects_link")).unwrap();

    let sandbox = sandbox_with_home(&home);
    let temporary = tempfile::tempdir().unwrap();
    let writable = writable_paths(&sandbox, temporary.path());
    let granted = |relative: &str| writable.contains(&home.join(relative));

    // Unprotected entries of folders holding protected paths get their own rules.
    for relative in [
        "projects",
        "notes.txt",
        ".config/app",
        ".config/settings.toml",
        "extra",
    ] {
        assert!(
            granted(relative),
            "{relative} should be writable: {writable:?}"
        );
    }
    // Folders holding protected paths, protected paths themselves, the Souz home, and links
    // get none.
    for relative in [
        "",
        ".config",
        ".ssh",
        ".config/secret",
        ".zshrc",
        ".souz",
        "etc_link",
        "projects_link",
    ] {
        assert!(
            !granted(relative),
            "{relative:?} must not be writable: {writable:?}"
        );
    }
    assert!(!writable.iter().any(|path| path.starts_with("/etc")));
    // The command's private temporary folder and the null device are writable; the shared
    // temporary folders are not (commands would tamper with each other's files there).
    assert!(
        writable.contains(&temporary.path().to_path_buf()),
        "{writable:?}"
    );
    for shared in ["/tmp", "/var/tmp", "/dev/shm"] {
        let shared = Path::new(shared);
        let real = shared.canonicalize().unwrap_or(shared.to_path_buf());
        assert!(
            !writable.iter().any(|path| real.starts_with(path)),
            "{shared:?}: {writable:?}"
        );
    }
    assert!(writable.contains(&PathBuf::from("/dev/null")));
}

#[test]
fn readable_paths_cover_everything_but_protected_paths() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let home = dir.path().canonicalize().unwrap();
    for folder in [".ssh", ".config/secret", ".config/app", "projects", ".souz"] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
    }
    std::fs::write(home.join("notes.txt"), "n").unwrap();
    std::fs::write(home.join(".zshrc"), "z").unwrap();
    let sandbox = sandbox_with_home(&home);
    let temporary = home.join("private-tmp");
    let readable = readable_paths(&sandbox, &temporary).unwrap();
    assert!(readable.contains(&temporary), "{readable:?}");
    // Nothing granted contains a protected path (or the Souz home).
    for protected in [".ssh", ".config/secret", ".zshrc", ".souz"] {
        assert!(
            !readable
                .iter()
                .any(|path| home.join(protected).starts_with(path)),
            "{protected} is readable through {readable:?}"
        );
    }
    // Everything else is: system folders, and the home's other entries.
    for relative in ["projects", "notes.txt", ".config/app"] {
        assert!(
            readable.contains(&home.join(relative)),
            "{relative}: {readable:?}"
        );
    }
    for system in ["/usr", "/etc", "/proc", "/dev/null"] {
        let real = Path::new(system).canonicalize().unwrap();
        assert!(
            readable.iter().any(|path| real.starts_with(path)),
            "{system}: {readable:?}"
        );
    }
    // Other programs' files in the shared temporary folders are not (the command's own
    // private temporary folder is granted by its own rule).
    let not_through_shared = |readable: &[PathBuf]| {
        for shared in ["/tmp", "/var/tmp", "/dev/shm"] {
            let real = Path::new(shared).join("other-program.txt");
            assert!(
                !readable.iter().any(|path| real.starts_with(path)),
                "{shared}: {readable:?}"
            );
        }
    };
    not_through_shared(&readable);
    // Allowed by configuration: protected paths become readable, the shared temporary
    // folders stay out.
    let config = SandboxConfig {
        commands_read_protected: true,
        ..sandbox.config().clone()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let readable = readable_paths(&Sandbox::new(&config, &paths).unwrap(), &temporary).unwrap();
    assert!(
        readable
            .iter()
            .any(|path| home.join(".ssh/id").starts_with(path)),
        "{readable:?}"
    );
    not_through_shared(&readable);
}

#[test]
fn a_home_under_tmp_keeps_its_protected_paths_and_a_writable_temporary_folder() {
    // A home under /tmp (as in tests, or a checkout there): /tmp is not granted wholesale; the
    // root is still split around its protected paths.
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let home = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("work")).unwrap();
    let sandbox = sandbox_with_home(&home);
    // The private temporary folder lies under /tmp too, and is granted by its own rule.
    let temporary = tempfile::tempdir_in("/tmp").unwrap();
    let temporary = temporary.path().canonicalize().unwrap();
    let writable = writable_paths(&sandbox, &temporary);
    let tmp = Path::new("/tmp").canonicalize().unwrap();
    assert!(!writable.contains(&tmp), "{writable:?}");
    assert!(writable.contains(&temporary), "{writable:?}");
    assert!(
        !writable
            .iter()
            .any(|path| home.join(".ssh").starts_with(path)),
        "{writable:?}"
    );
    assert!(writable.contains(&home.join("work")));
    assert!(!writable.contains(&PathBuf::from("/")));
    // The root and the private folder stay readable although /tmp is not.
    let readable = readable_paths(&sandbox, &temporary).unwrap();
    assert!(readable.contains(&home.join("work")), "{readable:?}");
    assert!(readable.contains(&temporary), "{readable:?}");
    assert!(
        !readable.iter().any(|path| tmp.starts_with(path)),
        "{readable:?}"
    );
}

#[test]
fn seatbelt_profile_denies_writes_outside_roots_and_into_protected_paths() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap().join("with \"quote\"");
    std::fs::create_dir_all(&home).unwrap();
    let config = SandboxConfig {
        roots: vec!["~".to_owned()],
        protected: vec!["~/.ssh".to_owned()],
        unix_socket_allow: vec!["~/agent.sock".to_owned()],
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&config, &paths).unwrap();
    let temporary = home.join("tmp-private");
    let scope = CommandScope {
        temporary: &temporary,
        network: false,
        working_folder: None,
    };
    let profile = seatbelt_profile(&sandbox, &scope);
    let quoted_home = home.display().to_string().replace('"', "\\\"");
    assert!(profile.starts_with("(version 1)\n(allow default)\n"));
    assert!(
        profile.contains(&format!("(require-not (subpath \"{quoted_home}\"))")),
        "{profile}"
    );
    assert!(profile.contains("(require-not (literal \"/dev/null\"))"));
    assert!(
        profile.contains(&format!("(subpath \"{quoted_home}/.ssh\")")),
        "{profile}"
    );
    assert!(
        profile.contains(&format!("(subpath \"{quoted_home}/.souz\")")),
        "{profile}"
    );
    assert!(
        profile.contains("(deny file-read-data\n"),
        "protected paths are unreadable by default: {profile}"
    );
    assert!(
        profile.contains(&format!(
            "(require-not (subpath \"{quoted_home}/tmp-private\"))"
        )),
        "{profile}"
    );
    // No UNIX socket but the listed one, which is allowed after the refusal (later rules win).
    let refuse = profile
        .find("(deny network-outbound (remote unix-socket))")
        .expect(&profile);
    let allow = profile
        .find(&format!(
            "(allow network-outbound (remote unix-socket (path-literal \"{quoted_home}/agent.sock\")))"
        ))
        .expect(&profile);
    assert!(refuse < allow, "{profile}");
    // Git metadata that runs code, in every repository, by pattern.
    assert!(
        profile.contains(
            "(regex #\"/\\.git/(hooks|config|config\\.worktree|commondir|modules|worktrees)(/|$)\")"
        ),
        "{profile}"
    );
    // Other programs' files in the shared temporary folders, except the roots and the
    // private temporary folder.
    let shared = profile
        .split("(deny file-read-data\n")
        .find(|rule| rule.contains("(require-any (subpath"))
        .expect(&profile);
    assert!(shared.contains("tmp\")"), "{profile}");
    assert!(
        shared.contains(&format!("(require-not (subpath \"{quoted_home}\"))")),
        "{profile}"
    );
    // No network unless the call may.
    assert!(
        profile.contains("(deny network-outbound (remote ip))"),
        "{profile}"
    );
    let with_network = seatbelt_profile(
        &sandbox,
        &CommandScope {
            network: true,
            ..scope
        },
    );
    assert!(!with_network.contains("(remote ip)"), "{with_network}");
    assert!(with_network.contains("(deny network-outbound (remote unix-socket))"));
    // Balanced parentheses outside string literals.
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    for character in profile.chars() {
        match (in_string, escaped, character) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_string = !in_string,
            (false, _, '(') => depth += 1,
            (false, _, ')') => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0, "{profile}");
    }
    assert_eq!(depth, 0, "{profile}");
}

#[test]
fn wrapping_puts_the_command_behind_the_launcher() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    let sandbox = sandbox_with_home(&home);
    let temporary = home.join("tmp-private");
    let scope = CommandScope {
        temporary: &temporary,
        network: false,
        working_folder: None,
    };
    let args = [OsString::from("-c"), OsString::from("echo hi")];
    let none = Confinement::None {
        reason: "test".into(),
    };
    assert_eq!(
        none.wrap(&sandbox, &scope, OsStr::new("/bin/sh"), &args),
        (OsString::from("/bin/sh"), args.to_vec())
    );
    let landlock = Confinement::Landlock {
        helper: PathBuf::from("/opt/souz"),
        complete: true,
    };
    let (program, wrapped) = landlock.wrap(&sandbox, &scope, OsStr::new("/bin/sh"), &args);
    assert_eq!(program, "/opt/souz");
    assert_eq!(wrapped[0], HELPER_SUBCOMMAND);
    let parsed = HelperArguments::parse(wrapped.into_iter().skip(1)).unwrap();
    assert_eq!(parsed.stage, HelperStage::Supervise);
    assert_eq!(parsed.program, "/bin/sh");
    assert_eq!(parsed.args, args);
    assert_eq!(parsed.writable, writable_paths(&sandbox, &temporary));
    assert_eq!(parsed.readable, readable_paths(&sandbox, &temporary));
    assert!(parsed.unix_sockets.is_empty(), "no UNIX socket by default");
    assert!(!parsed.network);
    assert!(
        parsed.readable.is_some(),
        "reading is restricted by default"
    );
    let with_network = CommandScope {
        network: true,
        ..scope
    };
    let (_, wrapped) = landlock.wrap(&sandbox, &with_network, OsStr::new("/bin/sh"), &args);
    assert!(
        HelperArguments::parse(wrapped.into_iter().skip(1))
            .unwrap()
            .network
    );
    let seatbelt = Confinement::Seatbelt {
        launcher: PathBuf::from(SANDBOX_EXEC),
    };
    let (program, wrapped) = seatbelt.wrap(&sandbox, &scope, OsStr::new("/bin/sh"), &args);
    assert_eq!(program, SANDBOX_EXEC);
    assert_eq!(wrapped[0], "-p");
    assert_eq!(
        wrapped[2..],
        ["--", "/bin/sh", "-c", "echo hi"].map(OsString::from)
    );
}

#[test]
fn helper_arguments_are_strict() {
    let parse = |words: &[&str]| HelperArguments::parse(words.iter().map(OsString::from));
    assert_eq!(
        parse(&[
            "--allow-write",
            "/a",
            "--allow-write",
            "/b",
            "--",
            "ls",
            "-l",
            "--",
            "x"
        ])
        .unwrap(),
        HelperArguments {
            writable: vec![PathBuf::from("/a"), PathBuf::from("/b")],
            program: OsString::from("ls"),
            args: ["-l", "--", "x"].map(OsString::from).to_vec(),
            ..HelperArguments::default()
        }
    );
    let full = parse(&[
        "--confine",
        "--allow-unix",
        "/run/a.sock",
        "--allow-network",
        "--allow-connect",
        "3128",
        "--allow-write",
        "/a",
        "--restrict-read",
        "--allow-read",
        "/",
        "--",
        "ls",
    ])
    .unwrap();
    assert_eq!(
        full,
        HelperArguments {
            stage: HelperStage::Confine,
            writable: vec![PathBuf::from("/a")],
            unix_sockets: vec![PathBuf::from("/run/a.sock")],
            network: true,
            connect_ports: vec![3128],
            readable: Some(vec![PathBuf::from("/")]),
            program: OsString::from("ls"),
            args: Vec::new(),
        }
    );
    // What the daemon writes is what the helper reads.
    assert_eq!(HelperArguments::parse(full.to_arguments()).unwrap(), full);
    assert_eq!(
        parse(&[
            "--allow-write",
            "/a",
            "--restrict-read",
            "--allow-read",
            "/usr",
            "--",
            "ls"
        ])
        .unwrap()
        .readable,
        Some(vec![PathBuf::from("/usr")])
    );
    assert_eq!(
        parse(&["--restrict-read", "--", "ls"]).unwrap().readable,
        Some(Vec::new()),
        "restricted with nothing readable"
    );
    for bad in [
        &[][..],
        &["ls"],
        &["--"],
        &["--allow-write"],
        &["--allow-write", "/a", "ls"],
        &["--other", "--", "ls"],
        // Readable paths only after --restrict-read, writable ones only before it, once.
        &["--allow-read", "/a", "--", "ls"],
        &["--restrict-read", "--allow-write", "/a", "--", "ls"],
        &["--restrict-read", "--restrict-read", "--", "ls"],
        // The stage comes first; each flag in its place, network once.
        &["--allow-write", "/a", "--confine", "--", "ls"],
        &["--allow-network", "--allow-network", "--", "ls"],
        &["--allow-connect", "0", "--", "ls"],
        &["--allow-connect", "http", "--", "ls"],
        &["--allow-connect", "--", "ls"],
        &["--restrict-read", "--allow-unix", "/s", "--", "ls"],
        &["--allow-unix", "--", "ls"],
    ] {
        assert!(matches!(parse(bad), Err(HelperError::Usage)), "{bad:?}");
    }
}

#[test]
fn status_names_the_confinement_and_the_reason() {
    let none = Confinement::None {
        reason: "Landlock is not available on this kernel: ENOSYS".into(),
    };
    let config = SandboxConfig::default();
    let status = none.status(&config);
    assert_eq!(status.confinement, ConfinementKind::None);
    assert!(status.detail.contains("ENOSYS"), "{}", status.detail);
    assert!(
        status.detail.contains("allow_unconfined_commands"),
        "{}",
        status.detail
    );
    let landlock = Confinement::Landlock {
        helper: PathBuf::from("/x"),
        complete: false,
    };
    assert_eq!(
        landlock.status(&config).confinement,
        ConfinementKind::Landlock
    );
    let detail = landlock.status(&config).detail;
    assert!(detail.contains("partial"), "{detail}");
    assert!(
        detail.contains("cannot connect to UNIX sockets"),
        "{detail}"
    );
    assert!(detail.contains("stopped when the call ends"), "{detail}");
    assert!(
        landlock
            .status(&config)
            .detail
            .contains("cannot read files inside protected paths")
    );
    let reads = SandboxConfig {
        commands_read_protected: true,
        unix_socket_allow: vec!["/run/user/1000/bus".into()],
        ..SandboxConfig::default()
    };
    let detail = landlock.status(&reads).detail;
    assert!(!detail.contains("cannot read"), "{detail}");
    // `/health` is public: the allowlisted sockets are counted, never named.
    assert!(detail.contains("the 1 UNIX socket"), "{detail}");
    assert!(!detail.contains("/run/user/1000/bus"), "{detail}");
    // Without a helper, Linux reports no confinement and says why.
    if cfg!(target_os = "linux") {
        let detected = Confinement::detect(None);
        assert_eq!(detected.kind(), ConfinementKind::None);
        assert!(
            detected.status(&config).detail.contains("Landlock"),
            "{detected:?}"
        );
    }
}
