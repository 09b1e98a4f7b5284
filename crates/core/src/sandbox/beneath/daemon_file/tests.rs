//! The daemon's own files against links planted at every place it reads or writes: the file,
//! its backup, a folder on the way, and special files. Each case checks that the canary outside
//! is unchanged (and was not copied anywhere) and that the refusal names the cause.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::*;

const CANARY: &str = "export SECRET=canary\n";

struct Fixture {
    _dir: tempfile::TempDir,
    /// The trusted folder (a person's home).
    home: PathBuf,
    /// Somewhere outside, with `canary` (a file) in it.
    outside: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        let outside = base.join("outside");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("canary"), CANARY).unwrap();
        Self {
            _dir: dir,
            home,
            outside,
        }
    }

    fn canary(&self) -> PathBuf {
        self.outside.join("canary")
    }

    /// The canary is as it was, and the outside folder holds nothing new.
    fn assert_outside_untouched(&self) {
        assert_eq!(std::fs::read_to_string(self.canary()).unwrap(), CANARY);
        assert_eq!(names(&self.outside), ["canary"]);
    }

    fn file(&self, relative: &str) -> DaemonFile {
        DaemonFile::new(&self.home, self.home.join(relative)).unwrap()
    }
}

fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_link<T: std::fmt::Debug>(result: Result<T, DaemonFileError>, what: &str) {
    match result {
        Err(error @ DaemonFileError::Link(_)) => {
            assert!(error.is_refusal());
            assert!(
                error.to_string().contains("symbolic link"),
                "{what}: {error}"
            );
        }
        other => panic!("{what}: expected a link refusal, got {other:?}"),
    }
}

#[test]
fn writes_create_folders_replace_atomically_and_keep_a_backup() {
    let fixture = Fixture::new();
    let file = fixture.file(".config/Claude/config.json");
    let options = WriteOptions::shared().with_backup(".bak");
    assert_eq!(file.write(b"one", options).unwrap(), None);
    std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o640)).unwrap();
    let backup = file.write(b"two", options).unwrap().unwrap();
    assert_eq!(backup, fixture.home.join(".config/Claude/config.json.bak"));
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), "one");
    assert_eq!(file.read_text(100).unwrap().as_deref(), Some("two"));
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&file.path()), 0o640, "a replaced file keeps its bits");
    assert_eq!(mode(&backup), 0o640, "the backup has the old file's bits");
    let folder = fixture.home.join(".config/Claude");
    assert_eq!(names(&folder), ["config.json", "config.json.bak"]);
    assert_eq!(fixture.file("missing/file").read(10).unwrap(), None);
}

#[test]
fn private_files_are_owner_only_also_when_replaced() {
    let fixture = Fixture::new();
    let file = fixture.file("clients/desktop.token");
    file.write(b"first", WriteOptions::private()).unwrap();
    std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    file.write(b"second", WriteOptions::private()).unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file.path()), 0o600);
    assert_eq!(mode(&fixture.home.join("clients")), 0o700);
    assert_eq!(std::fs::read_to_string(file.path()).unwrap(), "second");
}

#[test]
fn a_link_at_the_file_is_neither_read_nor_written_through() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.home.join(".config/Claude")).unwrap();
    let file = fixture.file(".config/Claude/config.json");
    symlink(fixture.canary(), file.path()).unwrap();
    assert_link(file.read(1 << 20), "read");
    assert_link(file.read_text(1 << 20), "read_text");
    for options in [
        WriteOptions::shared(),
        WriteOptions::shared().with_backup(".bak"),
    ] {
        assert_link(file.write(b"{\"attacker\": true}", options), "write");
    }
    assert!(
        !file.create_new(b"x", 0o600).unwrap(),
        "create_new keeps the link"
    );
    fixture.assert_outside_untouched();
    assert!(file.path().is_symlink(), "the link is left as it was");
    assert_eq!(names(&fixture.home.join(".config/Claude")), ["config.json"]);
    assert!(file.remove().unwrap(), "removing takes the link away");
    fixture.assert_outside_untouched();
}

#[test]
fn a_link_at_the_backup_is_refused_before_anything_is_written() {
    let fixture = Fixture::new();
    let file = fixture.file(".config/Claude/config.json");
    file.write(b"{}", WriteOptions::shared()).unwrap();
    symlink(
        fixture.canary(),
        fixture.home.join(".config/Claude/config.json.bak"),
    )
    .unwrap();
    assert_link(
        file.write(b"{\"new\": 1}", WriteOptions::shared().with_backup(".bak")),
        "write with a backup",
    );
    fixture.assert_outside_untouched();
    assert_eq!(file.read_text(10).unwrap().as_deref(), Some("{}"));
    assert_eq!(
        names(&fixture.home.join(".config/Claude")),
        ["config.json", "config.json.bak"]
    );
}

#[test]
fn a_link_at_a_folder_on_the_way_is_refused() {
    let fixture = Fixture::new();
    std::fs::create_dir_all(fixture.home.join(".config")).unwrap();
    symlink(&fixture.outside, fixture.home.join(".config/Claude")).unwrap();
    let file = fixture.file(".config/Claude/canary");
    assert_link(file.read(1 << 20), "read through a linked folder");
    assert_link(file.write(b"x", WriteOptions::shared()), "write");
    assert_link(file.create_new(b"x", 0o600), "create_new");
    assert_link(file.remove(), "remove");
    fixture.assert_outside_untouched();
    // The same with the link higher up, and the folders to create below it.
    std::fs::remove_file(fixture.home.join(".config/Claude")).unwrap();
    std::fs::remove_dir(fixture.home.join(".config")).unwrap();
    symlink(&fixture.outside, fixture.home.join(".config")).unwrap();
    let deeper = fixture.file(".config/Claude/config.json");
    assert_link(
        deeper.write(b"x", WriteOptions::private()),
        "create folders",
    );
    fixture.assert_outside_untouched();
}

#[test]
fn special_files_are_refused_without_waiting_on_them() {
    let fixture = Fixture::new();
    let fifo = fixture.home.join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        FileType::Fifo,
        Mode::from_bits_truncate(0o600),
        0,
    )
    .unwrap();
    std::fs::create_dir(fixture.home.join("folder")).unwrap();
    for name in ["pipe", "folder"] {
        let file = fixture.file(name);
        assert!(
            matches!(file.read(10), Err(DaemonFileError::NotRegular(_))),
            "{name}"
        );
        assert!(
            matches!(
                file.write(b"x", WriteOptions::shared()),
                Err(DaemonFileError::NotRegular(_))
            ),
            "{name}"
        );
    }
}

#[test]
fn reads_are_bounded_and_paths_stay_inside_the_anchor() {
    let fixture = Fixture::new();
    let file = fixture.file("big");
    file.write(&[b'x'; 100], WriteOptions::shared()).unwrap();
    assert_eq!(file.read(100).unwrap().unwrap().len(), 100);
    assert!(matches!(
        file.read(99),
        Err(DaemonFileError::TooLarge { limit: 99, .. })
    ));
    for outside in [
        "/etc/passwd",
        "../outside/canary",
        "a/../../outside/canary",
        "",
    ] {
        assert!(
            matches!(
                DaemonFile::new(&fixture.home, outside),
                Err(DaemonFileError::NotInside { .. })
            ),
            "{outside}"
        );
    }
    let folder = DaemonFolder::anchor(&fixture.home).unwrap();
    assert!(matches!(
        folder.write("../canary", b"x", WriteOptions::shared()),
        Err(DaemonFileError::NotInside { .. })
    ));
    fixture.assert_outside_untouched();
}

#[test]
fn a_staged_file_is_removed_unless_committed_and_never_replaces_a_link() {
    let fixture = Fixture::new();
    let folder = DaemonFolder::create(&fixture.home, Path::new("models"), 0o700).unwrap();
    let mut staged = folder.stage("model.gguf", 0o600).unwrap();
    staged.file().write_all(b"partial").unwrap();
    drop(staged);
    assert!(names(&fixture.home.join("models")).is_empty());
    symlink(fixture.canary(), fixture.home.join("models/model.gguf")).unwrap();
    let mut staged = folder.stage("model.gguf", 0o600).unwrap();
    staged.file().write_all(b"weights").unwrap();
    assert!(
        !staged.commit_new().unwrap(),
        "the link is there: not replaced"
    );
    fixture.assert_outside_untouched();
    assert_eq!(names(&fixture.home.join("models")), ["model.gguf"]);
}
