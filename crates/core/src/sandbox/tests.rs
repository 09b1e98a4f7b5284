//! Escape attempts against `Sandbox::resolve`, as a table, on a real folder tree with real
//! symbolic links.

use std::os::unix::fs::symlink;

use super::*;

/// A home folder with a root `~/work`, a protected `~/.ssh`, a folder outside the roots, and
/// symbolic links of every kind.
struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    outside: PathBuf,
    sandbox: Sandbox,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let work = home.join("work");
    let outside = base.join("outside");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "outside").unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
    std::fs::write(work.join("a.txt"), "a").unwrap();
    std::fs::write(work.join("sub/b.txt"), "b").unwrap();
    // Folder and file links that leave the root, relative and absolute.
    symlink("../../outside", work.join("out_dir")).unwrap();
    symlink(outside.join("secret.txt"), work.join("out_file")).unwrap();
    // A dangling link whose target (outside) does not exist yet: writing through it would
    // create the file outside.
    symlink(outside.join("created.txt"), work.join("dangling")).unwrap();
    // A chain: the first hop stays inside, the second leaves.
    symlink(outside.clone(), work.join("hop")).unwrap();
    symlink("hop", work.join("chain")).unwrap();
    // A link into a protected folder, and harmless links inside the root.
    symlink("../.ssh", work.join("to_ssh")).unwrap();
    symlink("sub", work.join("inner")).unwrap();
    symlink("a.txt", work.join("a_link")).unwrap();
    // A loop.
    symlink("loop_b", work.join("loop_a")).unwrap();
    symlink("loop_a", work.join("loop_b")).unwrap();
    // A link whose target climbs with `..` through another link.
    symlink("inner/../../../outside", work.join("climb")).unwrap();

    let config = SandboxConfig {
        roots: vec!["~/work".to_owned()],
        protected: vec![
            "~/.ssh".to_owned(),
            "~/work/.env".to_owned(),
            "~/work/Séparé".to_owned(),
        ],
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join("work/.souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&config, &paths)
        .unwrap()
        .with_case_insensitive_protection(false);
    Fixture {
        _dir: dir,
        home,
        outside,
        sandbox,
    }
}

#[derive(Debug)]
enum Expect {
    /// Accepted at this path (relative to home), with `protected`.
    Ok(&'static str, bool),
    OutsideRoots,
    NotFound,
    /// Refused as invalid, the message containing this text.
    Invalid(&'static str),
}

#[test]
#[allow(clippy::too_many_lines, reason = "a table of escape attempts")]
fn escape_attempts_are_refused_and_honest_paths_resolve() {
    let fixture = fixture();
    let home = fixture.home.display().to_string();
    let file_url = format!("file://{home}/work/sub/b.txt");
    let file_url_spaces = format!("file://{home}/work/new%20file.txt");
    let outside_absolute = format!("{}/secret.txt", fixture.outside.display());
    use Access::{Delete, Read, Write};
    use Expect::*;
    let cases: Vec<(&str, Access, Expect)> = vec![
        // Honest paths, in every spelling.
        ("~/work/a.txt", Read, Ok("work/a.txt", false)),
        ("work/a.txt", Read, Ok("work/a.txt", false)),
        ("$HOME/work/a.txt", Read, Ok("work/a.txt", false)),
        ("${HOME}/work/a.txt", Read, Ok("work/a.txt", false)),
        ("  \"~/work/a.txt\"  ", Read, Ok("work/a.txt", false)),
        ("'~/work/a.txt'", Read, Ok("work/a.txt", false)),
        ("`~/work/a.txt`", Read, Ok("work/a.txt", false)),
        (
            "\u{201C}~/work/a.txt\u{201D}",
            Read,
            Ok("work/a.txt", false),
        ),
        (&file_url, Read, Ok("work/sub/b.txt", false)),
        (&file_url_spaces, Write, Ok("work/new file.txt", false)),
        ("~/work//sub/./b.txt", Read, Ok("work/sub/b.txt", false)),
        ("~/work/sub/../a.txt", Read, Ok("work/a.txt", false)),
        ("~/work/inner/b.txt", Read, Ok("work/sub/b.txt", false)),
        ("~/work/a_link", Delete, Ok("work/a.txt", false)),
        (
            "~/work/new/deeper/file.txt",
            Write,
            Ok("work/new/deeper/file.txt", false),
        ),
        // `..` cannot climb out, however it is spelled.
        ("~/work/../outside", Write, OutsideRoots),
        ("~/work/../../outside/secret.txt", Read, OutsideRoots),
        ("work/../../outside/secret.txt", Read, OutsideRoots),
        (
            "~/work/sub/../../../../../../etc/passwd",
            Read,
            OutsideRoots,
        ),
        ("..", Read, OutsideRoots),
        ("~", Read, OutsideRoots),
        // Absolute paths outside the roots.
        ("/etc/passwd", Read, OutsideRoots),
        (&outside_absolute, Read, OutsideRoots),
        ("/", Read, OutsideRoots),
        // Symbolic links out of the root: folders, files, dangling, chains, `..` inside links.
        ("~/work/out_dir", Read, OutsideRoots),
        ("~/work/out_dir/secret.txt", Read, OutsideRoots),
        ("~/work/out_dir/new.txt", Write, OutsideRoots),
        ("~/work/out_file", Read, OutsideRoots),
        ("~/work/out_file", Write, OutsideRoots),
        ("~/work/dangling", Write, OutsideRoots),
        ("~/work/chain/secret.txt", Read, OutsideRoots),
        ("~/work/climb/secret.txt", Read, OutsideRoots),
        ("~/work/loop_a", Read, Invalid("symbolic links")),
        ("~/work/loop_a/x", Write, Invalid("loop")),
        // A link into `~/.ssh`, which is outside this root.
        ("~/work/to_ssh/id_rsa", Read, OutsideRoots),
        // Protected paths are accepted but flagged, also in another normalization form.
        ("~/work/.env", Write, Ok("work/.env", true)),
        ("~/work/.souz/token", Write, Ok("work/.souz/token", true)),
        (
            "~/work/Se\u{301}pare\u{301}/notes.txt",
            Write,
            Ok("work/Se\u{301}pare\u{301}/notes.txt", true),
        ),
        // Missing files and files used as folders.
        ("~/work/missing.txt", Read, NotFound),
        ("~/work/missing.txt", Delete, NotFound),
        (
            "~/work/a.txt/inside",
            Write,
            Invalid("is a file, not a folder"),
        ),
        // A root itself cannot be deleted or moved away (it can be read and written into).
        ("~/work", Delete, Invalid("is a workspace root")),
        ("~/work/sub/..", Delete, Invalid("is a workspace root")),
        ("~/work", Write, Ok("work", false)),
        // Other accounts' homes and malformed input.
        ("~root/.ssh", Read, Invalid("another account")),
        ("", Read, Invalid("empty")),
        ("   ", Read, Invalid("empty")),
        ("\"\"", Read, Invalid("empty")),
        ("file://otherhost/etc/passwd", Read, Invalid("file:// URL")),
        ("file:///tmp/a%00b", Read, Invalid("NUL")),
        (
            "~/work/a\u{7}.txt",
            Read,
            Invalid("control character U+0007"),
        ),
        ("~/work/a\n.txt", Read, Invalid("control character U+000A")),
        // Unicode that disguises a path.
        (
            "~/work\u{2215}..\u{2215}..\u{2215}outside",
            Read,
            Invalid("U+2215 DIVISION SLASH"),
        ),
        (
            "~/work/\u{2024}\u{2024}/outside",
            Read,
            Invalid("U+2024 ONE DOT LEADER"),
        ),
        ("~/work/\u{FF0E}\u{FF0E}/outside", Read, Invalid("U+FF0E")),
        ("~/work\u{FF0F}a.txt", Read, Invalid("look-alike of `/`")),
        (
            "~/work\u{2044}a.txt",
            Read,
            Invalid("U+2044 FRACTION SLASH"),
        ),
        ("~/work\u{29F8}a.txt", Read, Invalid("U+29F8 BIG SOLIDUS")),
        (
            "~/work/\u{FE52}\u{FE52}/x",
            Read,
            Invalid("U+FE52 SMALL FULL STOP"),
        ),
        ("\u{FF5E}/work/a.txt", Read, Invalid("look-alike of `~`")),
        (
            "~/work/\u{202E}txt.exe",
            Read,
            Invalid("bidirectional control"),
        ),
        ("~/work/a\u{2066}b", Read, Invalid("U+2066")),
        (
            "~/work/a\u{200B}.txt",
            Read,
            Invalid("U+200B ZERO WIDTH SPACE"),
        ),
        ("~/work/a\u{200D}.txt", Read, Invalid("invisible")),
        ("~/work/a\u{2060}.txt", Read, Invalid("U+2060 WORD JOINER")),
        ("\u{FEFF}~/work/a.txt", Read, Invalid("U+FEFF")),
    ];
    let mut failures = Vec::new();
    for (raw, access, expect) in &cases {
        let outcome = fixture.sandbox.resolve(raw, *access);
        let fine = match (expect, &outcome) {
            (Ok(relative, protected), Result::Ok(resolved)) => {
                resolved.path == fixture.home.join(relative) && resolved.protected == *protected
            }
            (OutsideRoots, Err(SandboxError::OutsideRoots { .. })) => true,
            (NotFound, Err(SandboxError::NotFound(_))) => true,
            (Invalid(text), Err(SandboxError::InvalidPath { reason, .. })) => reason.contains(text),
            _ => false,
        };
        if !fine {
            failures.push(format!(
                "{raw:?} ({access:?}): expected {expect:?}, got {outcome:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Nothing was created while resolving.
    assert!(!fixture.outside.join("created.txt").exists());
}

#[test]
fn protected_paths_ignore_case_where_the_filesystem_does() {
    let fixture = fixture();
    let insensitive = fixture
        .sandbox
        .clone()
        .with_case_insensitive_protection(true);
    for raw in ["~/work/.ENV", "~/work/.Env/deeper", "~/WORK/.env"] {
        let sensitive = fixture.sandbox.resolve(raw, Access::Write);
        if let Result::Ok(resolved) = sensitive {
            assert!(
                !resolved.protected,
                "{raw} is another file on a case-sensitive disk"
            );
        }
        let resolved = insensitive.resolve(raw, Access::Write);
        match resolved {
            Result::Ok(resolved) => assert!(resolved.protected, "{raw}"),
            // `~/WORK` is not the root `~/work` on this (case-sensitive) disk.
            Err(SandboxError::OutsideRoots { .. }) => assert!(raw.starts_with("~/WORK")),
            Err(other) => panic!("{raw}: {other}"),
        }
    }
    assert!(insensitive.is_protected(&fixture.home.join("work/.ENV/deeper")));
    assert!(!insensitive.is_visible(&fixture.home.join("work/.Env")));
    assert!(insensitive.is_visible(&fixture.home.join("work/a.txt")));
}

#[test]
fn protected_paths_ignore_unicode_normalization() {
    let fixture = fixture();
    // Configured in NFC (`Séparé`), written in NFD and in NFC.
    for raw in ["~/work/Se\u{301}pare\u{301}", "~/work/S\u{e9}par\u{e9}/x"] {
        assert!(
            fixture
                .sandbox
                .resolve(raw, Access::Write)
                .unwrap()
                .protected,
            "{raw}"
        );
    }
    assert!(
        !fixture
            .sandbox
            .resolve("~/work/Separe", Access::Write)
            .unwrap()
            .protected
    );
}

#[test]
fn a_protected_link_location_is_protected_even_when_its_target_is_not() {
    let fixture = fixture();
    // `~/work/.env` links to an ordinary file: writing it still changes `.env`.
    std::fs::write(fixture.home.join("work/plain.txt"), "x").unwrap();
    symlink("plain.txt", fixture.home.join("work/.env")).unwrap();
    let resolved = fixture
        .sandbox
        .resolve("~/work/.env", Access::Write)
        .unwrap();
    assert_eq!(resolved.path, fixture.home.join("work/plain.txt"));
    assert!(resolved.protected);
}

#[test]
fn git_code_in_every_repository_is_protected_for_file_tools() {
    let fixture = fixture();
    let repository = fixture.home.join("work/sub/repo");
    std::fs::create_dir_all(repository.join(".git/objects")).unwrap();
    std::fs::write(repository.join(".git/config"), "[core]\n").unwrap();
    for (raw, protected) in [
        ("~/work/sub/repo/.git/hooks/pre-commit", true),
        ("~/work/sub/repo/.git/config", true),
        ("~/work/sub/repo/.git/modules/x/config", true),
        ("~/work/sub/repo/.git/HEAD", false),
        ("~/work/sub/repo/src/main.rs", false),
    ] {
        let resolved = fixture.sandbox.resolve(raw, Access::Write).unwrap();
        assert_eq!(resolved.protected, protected, "{raw}");
    }
}

#[test]
fn listings_hide_protected_paths_and_links_that_leave_the_roots() {
    let fixture = fixture();
    let sandbox = &fixture.sandbox;
    let work = fixture.home.join("work");
    assert!(sandbox.is_visible(&work.join("a.txt")));
    assert!(
        sandbox.is_visible(&work.join("inner")),
        "a link inside the root"
    );
    assert!(!sandbox.is_visible(&work.join(".env")));
    assert!(!sandbox.is_visible(&work.join(".souz")));
    for link in [
        "out_dir", "out_file", "dangling", "chain", "to_ssh", "loop_a",
    ] {
        assert!(!sandbox.is_visible(&work.join(link)), "{link}");
    }
    assert!(!sandbox.is_visible(&fixture.outside));
}

#[test]
fn display_and_roots() {
    let fixture = fixture();
    let sandbox = &fixture.sandbox;
    assert_eq!(sandbox.roots(), [fixture.home.join("work")]);
    assert_eq!(
        sandbox.display(&fixture.home.join("work/a.txt")),
        "~/work/a.txt"
    );
    assert_eq!(sandbox.display(&fixture.home), "~");
    assert_eq!(sandbox.display(Path::new("/etc")), "/etc");
    let error = sandbox.resolve("/etc/passwd", Access::Read).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`/etc/passwd` is outside the folders Souz may use (~/work); it was refused"
    );
    assert!(sandbox.holds_protected(&fixture.home.join("work")));
    assert!(!sandbox.holds_protected(&fixture.home.join("work/sub")));
}

#[test]
fn default_configuration_protects_the_usual_secrets_and_the_souz_home() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&SandboxConfig::default(), &paths).unwrap();
    for protected in [
        "~/.ssh/id_ed25519",
        "~/.bash_history",
        "~/.zsh_history",
        "~/.zshrc",
        "~/.profile",
        "~/Library/Keychains/login.keychain-db",
        "~/.souz/config.toml",
        "~/.aws/credentials",
    ] {
        let resolved = sandbox.resolve(protected, Access::Write).unwrap();
        assert!(resolved.protected, "{protected}");
    }
    assert!(
        !sandbox
            .resolve("~/notes.txt", Access::Write)
            .unwrap()
            .protected
    );
    // Reached through a link, a protected folder is still protected.
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    symlink(".ssh", home.join("keys")).unwrap();
    let resolved = sandbox.resolve("~/keys/id_rsa", Access::Write).unwrap();
    assert_eq!(resolved.path, home.join(".ssh/id_rsa"));
    assert!(resolved.protected);
}

mod protected;
