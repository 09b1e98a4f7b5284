use super::*;

#[test]
fn input_spellings_become_absolute_normalized_paths() {
    let home = Path::new("/home/person");
    let cases = [
        ("~", "/home/person"),
        ("~/", "/home/person"),
        ("~//a", "/home/person/a"),
        ("$HOME", "/home/person"),
        ("${HOME}/a/b", "/home/person/a/b"),
        ("a/./b/../c", "/home/person/a/c"),
        ("../../../..", "/"),
        ("/x/../../y", "/y"),
        ("'/tmp/q'", "/tmp/q"),
        ("file:///tmp/with%20space", "/tmp/with space"),
        ("FILE:///tmp/upper", "/tmp/upper"),
        ("file://localhost/tmp/local", "/tmp/local"),
        // Only a leading `$HOME` is special; other text is a (relative) name.
        ("$HOMEWORK", "/home/person/$HOMEWORK"),
        // Without `//` it is not a URL but a (strange) file name.
        ("file:relative", "/home/person/file:relative"),
        ("a~b", "/home/person/a~b"),
        // No-break spaces are legitimate (macOS puts U+202F into screenshot names).
        (
            "Shot 10.00.00\u{202F}AM.png",
            "/home/person/Shot 10.00.00\u{202F}AM.png",
        ),
    ];
    for (raw, expected) in cases {
        assert_eq!(
            absolute_input(raw, home),
            Ok(PathBuf::from(expected)),
            "{raw:?}"
        );
    }
    for bad in ["~other/x", "~other", "file://host/x"] {
        assert!(absolute_input(bad, home).is_err(), "{bad:?}");
    }
}

#[test]
fn every_disguising_character_is_refused_with_its_name() {
    for (character, name, _) in DISGUISING_CHARACTERS {
        let error = screen_characters(&format!("a{character}b")).unwrap_err();
        assert!(error.0.contains(name), "{error:?}");
        assert!(
            error
                .0
                .contains(&format!("U+{:04X}", u32::from(*character))),
            "{error:?}"
        );
    }
    assert!(screen_characters("ordinary/path with spaces/Ünïcödé/日本語.txt").is_ok());
}

#[test]
fn walking_follows_links_in_order_and_stops_loops() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("a/b")).unwrap();
    std::os::unix::fs::symlink("a/b", base.join("link")).unwrap();
    std::os::unix::fs::symlink("../../outside", base.join("a/b/up")).unwrap();
    std::os::unix::fs::symlink("self", base.join("self")).unwrap();
    // A relative target is read from the folder holding the link.
    assert_eq!(
        resolve_real(&base.join("link/up/new")).unwrap(),
        (base.join("outside/new"), false)
    );
    assert_eq!(
        resolve_real(&base.join("link")).unwrap(),
        (base.join("a/b"), true)
    );
    // `..` after a link applies to the link's target, as in the kernel.
    assert_eq!(
        resolve_real(&base.join("link/..")).unwrap(),
        (base.join("a"), true)
    );
    assert!(matches!(
        resolve_real(&base.join("self/x")),
        Err(WalkError::Loop)
    ));
}

#[test]
fn folding_compares_normalization_and_case() {
    let nfc = Path::new("/h/S\u{e9}par\u{e9}");
    let nfd = Path::new("/h/Se\u{301}pare\u{301}/x");
    assert!(FoldedPath::new(nfd, false).starts_with(&FoldedPath::new(nfc, false)));
    let upper = Path::new("/H/SÉPARÉ/x");
    assert!(!FoldedPath::new(upper, false).starts_with(&FoldedPath::new(nfc, false)));
    assert!(FoldedPath::new(upper, true).starts_with(&FoldedPath::new(nfc, true)));
    // Component-wise: `/h/ab` is not inside `/h/a`.
    assert!(
        !FoldedPath::new(Path::new("/h/ab"), false)
            .starts_with(&FoldedPath::new(Path::new("/h/a"), false))
    );
    assert!(
        FoldedPath::new(Path::new("/h/a/b"), false)
            .strictly_inside(&FoldedPath::new(Path::new("/h/a"), false))
    );
    assert!(
        !FoldedPath::new(Path::new("/h/a"), false)
            .strictly_inside(&FoldedPath::new(Path::new("/h/a"), false))
    );
}
