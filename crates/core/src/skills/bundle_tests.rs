use std::path::Path;

use super::*;

const SKILL: &str = "---\nname: demo\ndescription: A demo.\n---\nBody\n";

fn write(root: &Path, path: &str, bytes: &[u8]) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, bytes).unwrap();
}

fn skill_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join("demo");
    write(&root, "SKILL.md", SKILL.as_bytes());
    (temp, root)
}

#[test]
fn reads_a_folder_with_nested_files() {
    let (_temp, root) = skill_dir();
    write(&root, "scripts/run.sh", b"echo hi\n");
    write(&root, "references/a/b.md", b"# b\n");
    let bundle = Bundle::read_folder(&root).unwrap();
    assert_eq!(
        bundle.files().keys().collect::<Vec<_>>(),
        ["SKILL.md", "references/a/b.md", "scripts/run.sh"]
    );
    assert_eq!(bundle.supporting_files().len(), 2);
}

#[test]
fn file_count_limit() {
    let (_temp, root) = skill_dir();
    for index in 0..MAX_FILES - 1 {
        write(&root, &format!("r/{index}.txt"), b"x");
    }
    assert!(Bundle::read_folder(&root).is_ok());
    write(&root, "r/one-more.txt", b"x");
    assert_eq!(Bundle::read_folder(&root), Err(LoadError::TooManyFiles));
}

#[test]
fn per_file_limit() {
    let (_temp, root) = skill_dir();
    write(&root, "big.txt", &vec![b'a'; MAX_FILE_BYTES as usize]);
    assert!(Bundle::read_folder(&root).is_ok());
    write(&root, "big.txt", &vec![b'a'; MAX_FILE_BYTES as usize + 1]);
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::FileTooLarge("big.txt".into()))
    );
}

#[test]
fn bundle_limit() {
    let (_temp, root) = skill_dir();
    for index in 0..4 {
        write(
            &root,
            &format!("{index}.txt"),
            &vec![b'a'; MAX_FILE_BYTES as usize],
        );
    }
    assert_eq!(Bundle::read_folder(&root), Err(LoadError::BundleTooLarge));
}

#[test]
fn extension_allowlist() {
    let (_temp, root) = skill_dir();
    write(&root, "tool.exe", b"MZ");
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::Extension("tool.exe".into()))
    );
    std::fs::remove_file(root.join("tool.exe")).unwrap();
    write(&root, "LICENSE", b"text");
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::Extension("LICENSE".into()))
    );
}

#[test]
fn binary_and_non_utf8_are_refused() {
    let (_temp, root) = skill_dir();
    write(&root, "data.txt", b"a\0b");
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::NotText("data.txt".into()))
    );
    write(&root, "data.txt", &[0xff, 0xfe, b'a']);
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::NotText("data.txt".into()))
    );
}

#[cfg(unix)]
#[test]
fn symlinks_are_refused_at_every_level() {
    let (temp, root) = skill_dir();
    let outside = temp.path().join("secret.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link.txt")).unwrap();
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::Symlink("link.txt".into()))
    );
    std::fs::remove_file(root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(temp.path(), root.join("dir")).unwrap();
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::Symlink("dir".into()))
    );
    std::fs::remove_file(root.join("dir")).unwrap();
    let linked_root = temp.path().join("linked");
    std::os::unix::fs::symlink(&root, &linked_root).unwrap();
    assert!(matches!(
        Bundle::read_folder(&linked_root),
        Err(LoadError::Symlink(_))
    ));
}

#[cfg(unix)]
#[test]
fn special_files_are_refused() {
    let (_temp, root) = skill_dir();
    let socket = root.join("s.txt");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert_eq!(
        Bundle::read_folder(&root),
        Err(LoadError::SpecialFile("s.txt".into()))
    );
}

#[test]
fn skill_md_is_required() {
    let temp = tempfile::tempdir().unwrap();
    write(temp.path(), "README.md", b"x");
    assert_eq!(
        Bundle::read_folder(temp.path()),
        Err(LoadError::MissingSkillMd)
    );
}

#[test]
fn paths_are_checked() {
    for bad in [
        "",
        "/abs.md",
        "a/../b.md",
        "./a.md",
        "a\\b.md",
        "C:x.md",
        "a//b.md",
        "a\0.md",
    ] {
        assert!(check_path(bad).is_err(), "{bad:?}");
    }
    assert!(check_path("scripts/run.sh").is_ok());
    let files = vec![
        ("SKILL.md".to_owned(), SKILL.as_bytes().to_vec()),
        ("a.md".to_owned(), b"1".to_vec()),
        ("a.md".to_owned(), b"2".to_vec()),
    ];
    assert_eq!(
        Bundle::from_files(files),
        Err(LoadError::DuplicatePath("a.md".into()))
    );
}

#[test]
fn the_hash_is_stable_across_file_order_and_follows_content_and_paths() {
    let a = vec![
        ("SKILL.md".to_owned(), SKILL.as_bytes().to_vec()),
        ("scripts/x.sh".to_owned(), b"echo 1".to_vec()),
        ("b.md".to_owned(), b"b".to_vec()),
    ];
    let mut b = a.clone();
    b.reverse();
    let hash_a = Bundle::from_files(a.clone()).unwrap().hash();
    assert_eq!(hash_a, Bundle::from_files(b).unwrap().hash());
    assert_eq!(hash_a.len(), 64);
    // The documented construction, computed independently.
    let mut manual = Sha256::new();
    for (path, content) in [
        ("SKILL.md", SKILL.as_bytes()),
        ("b.md", b"b".as_slice()),
        ("scripts/x.sh", b"echo 1".as_slice()),
    ] {
        manual.update(format!(
            "{path}\n{}\n",
            hex::encode(Sha256::digest(content))
        ));
    }
    assert_eq!(hash_a, hex::encode(manual.finalize()));
    let mut changed = a.clone();
    changed[1].1 = b"echo 2".to_vec();
    assert_ne!(hash_a, Bundle::from_files(changed).unwrap().hash());
    let mut renamed = a;
    renamed[2].0 = "c.md".to_owned();
    assert_ne!(hash_a, Bundle::from_files(renamed).unwrap().hash());
}

#[test]
fn a_folder_and_its_files_hash_the_same() {
    let (_temp, root) = skill_dir();
    write(&root, "scripts/x.sh", b"echo 1");
    let folder = Bundle::read_folder(&root).unwrap();
    let files = Bundle::from_files(vec![
        ("scripts/x.sh".to_owned(), b"echo 1".to_vec()),
        ("SKILL.md".to_owned(), SKILL.as_bytes().to_vec()),
    ])
    .unwrap();
    assert_eq!(folder.hash(), files.hash());
}
