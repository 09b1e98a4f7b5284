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
    let writable = writable_paths(&sandbox);
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
    // Temporary folders that do not hold the home, and the null device, are writable.
    let tmp = Path::new("/tmp").canonicalize().unwrap();
    let var_tmp = Path::new("/var/tmp").canonicalize().unwrap();
    assert!(writable.contains(&tmp), "{writable:?}");
    assert!(!writable.contains(&var_tmp), "{writable:?}");
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
    let readable = readable_paths(&sandbox).unwrap();
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
    for system in ["/usr", "/etc", "/proc", "/tmp"] {
        let real = Path::new(system).canonicalize().unwrap();
        assert!(
            readable.iter().any(|path| real.starts_with(path)),
            "{system}: {readable:?}"
        );
    }
    // Allowed by configuration: reading is not restricted at all.
    let config = SandboxConfig {
        commands_read_protected: true,
        ..sandbox.config().clone()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    assert_eq!(
        readable_paths(&Sandbox::new(&config, &paths).unwrap()),
        None
    );
}

#[test]
fn temporary_folders_never_open_up_the_home_or_protected_paths() {
    // A home under /tmp (as in tests, or a strange TMPDIR): /tmp would contain it, so /tmp is
    // not granted wholesale; the root is still split around its protected paths.
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let home = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("work")).unwrap();
    let sandbox = sandbox_with_home(&home);
    let writable = writable_paths(&sandbox);
    let tmp = Path::new("/tmp").canonicalize().unwrap();
    assert!(!writable.contains(&tmp), "{writable:?}");
    assert!(
        !writable
            .iter()
            .any(|path| home.join(".ssh").starts_with(path)),
        "{writable:?}"
    );
    assert!(writable.contains(&home.join("work")));
    assert!(!writable.contains(&PathBuf::from("/")));
}

#[test]
fn seatbelt_profile_denies_writes_outside_roots_and_into_protected_paths() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap().join("with \"quote\"");
    std::fs::create_dir_all(&home).unwrap();
    let sandbox = sandbox_with_home(&home);
    let profile = seatbelt_profile(&sandbox);
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
    let args = [OsString::from("-c"), OsString::from("echo hi")];
    let none = Confinement::None {
        reason: "test".into(),
    };
    assert_eq!(
        none.wrap(&sandbox, OsStr::new("/bin/sh"), &args),
        (OsString::from("/bin/sh"), args.to_vec())
    );
    let landlock = Confinement::Landlock {
        helper: PathBuf::from("/opt/souz"),
        complete: true,
    };
    let (program, wrapped) = landlock.wrap(&sandbox, OsStr::new("/bin/sh"), &args);
    assert_eq!(program, "/opt/souz");
    assert_eq!(wrapped[0], HELPER_SUBCOMMAND);
    let parsed = HelperArguments::parse(wrapped.into_iter().skip(1)).unwrap();
    assert_eq!(parsed.program, "/bin/sh");
    assert_eq!(parsed.args, args);
    assert_eq!(parsed.writable, writable_paths(&sandbox));
    assert_eq!(parsed.readable, readable_paths(&sandbox));
    assert!(
        parsed.readable.is_some(),
        "reading is restricted by default"
    );
    let seatbelt = Confinement::Seatbelt {
        launcher: PathBuf::from(SANDBOX_EXEC),
    };
    let (program, wrapped) = seatbelt.wrap(&sandbox, OsStr::new("/bin/sh"), &args);
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
            readable: None,
            program: OsString::from("ls"),
            args: ["-l", "--", "x"].map(OsString::from).to_vec(),
        }
    );
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
    ] {
        assert!(matches!(parse(bad), Err(HelperError::Usage)), "{bad:?}");
    }
}

#[test]
fn status_names_the_confinement_and_the_reason() {
    let none = Confinement::None {
        reason: "Landlock is not available on this kernel: ENOSYS".into(),
    };
    let status = none.status(false);
    assert_eq!(status.confinement, ConfinementKind::None);
    assert!(status.detail.contains("ENOSYS"), "{}", status.detail);
    let landlock = Confinement::Landlock {
        helper: PathBuf::from("/x"),
        complete: false,
    };
    assert_eq!(
        landlock.status(false).confinement,
        ConfinementKind::Landlock
    );
    assert!(landlock.status(false).detail.contains("partial"));
    assert!(
        landlock
            .status(false)
            .detail
            .contains("cannot read files inside protected paths")
    );
    assert!(!landlock.status(true).detail.contains("cannot read"));
    // Without a helper, Linux reports no confinement and says why.
    if cfg!(target_os = "linux") {
        let detected = Confinement::detect(None);
        assert_eq!(detected.kind(), ConfinementKind::None);
        assert!(
            detected.status(false).detail.contains("Landlock"),
            "{detected:?}"
        );
    }
}
