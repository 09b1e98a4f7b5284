//! Every operation of `Beneath`, on a real tree where a folder on the way is a symbolic link
//! (the state a swap leaves behind): each must refuse, and touch nothing outside the root.

use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use std::ffi::OsString;

use rustix::fs::FileType;

use super::walk::open_per_component;
use super::*;
use crate::config::{SandboxConfig, SouzPaths};

struct Fixture {
    _dir: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
    sandbox: Sandbox,
}

/// A root `~/work` with a real folder `real/` and a link `swapped -> ../../outside`, as a swap
/// would leave it; the outside folder holds `secret.txt` and a folder `inner/`.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let work = home.join("work");
    let outside = base.join("outside");
    std::fs::create_dir_all(work.join("real")).unwrap();
    std::fs::create_dir_all(outside.join("inner")).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::fs::write(work.join("real/a.txt"), "a").unwrap();
    symlink("../../outside", work.join("swapped")).unwrap();
    symlink("real", work.join("inside_link")).unwrap();
    let config = SandboxConfig {
        roots: vec!["~/work".to_owned()],
        ..SandboxConfig::default()
    };
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&config, &paths).unwrap();
    Fixture {
        _dir: dir,
        work,
        outside,
        sandbox,
    }
}

fn assert_swapped<T: std::fmt::Debug>(result: io::Result<T>, what: &str) {
    let error = result.expect_err(what);
    assert!(is_swapped(&error), "{what}: {error:?}");
    assert!(
        error
            .to_string()
            .contains("changed while Souz was using it"),
        "{what}: {error}"
    );
}

#[test]
fn resolved_paths_are_used_normally() {
    let fixture = fixture();
    let beneath = fixture.sandbox.beneath();
    let mut text = String::new();
    beneath
        .open_read(&fixture.work.join("real/a.txt"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "a");
    beneath
        .create_dir_all(&fixture.work.join("real/x/y"))
        .unwrap();
    let created = fixture.work.join("real/x/y/new.txt");
    beneath.create_new(&created, 0o644).unwrap();
    assert_eq!(
        beneath.create_new(&created, 0o644).unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );
    let moved = fixture.work.join("real/moved.txt");
    beneath.rename(&created, &moved, true).unwrap();
    assert_eq!(
        beneath
            .rename(&fixture.work.join("real/a.txt"), &moved, true)
            .unwrap_err()
            .kind(),
        io::ErrorKind::AlreadyExists
    );
    let names: Vec<_> = beneath
        .read_dir(&fixture.work)
        .unwrap()
        .into_iter()
        .map(|entry| (entry.name, entry.file_type))
        .collect();
    assert!(names.contains(&(OsString::from("swapped"), FileType::Symlink)));
    assert!(names.contains(&(OsString::from("real"), FileType::Directory)));
    beneath.remove_all(&fixture.work.join("real/x")).unwrap();
    assert!(!fixture.work.join("real/x").exists());
}

#[test]
fn a_symlinked_folder_on_the_way_is_refused_by_every_operation() {
    let fixture = fixture();
    let beneath = fixture.sandbox.beneath();
    let via = |relative: &str| fixture.work.join(relative);
    assert_swapped(beneath.open_read(&via("swapped/secret.txt")), "read");
    assert_swapped(beneath.read_dir(&via("swapped")), "list");
    assert_swapped(beneath.read_dir(&via("swapped/inner")), "list below");
    assert_swapped(beneath.stat(&via("swapped/secret.txt")), "stat");
    assert_swapped(beneath.create_new(&via("swapped/new.txt"), 0o644), "create");
    assert_swapped(beneath.create_dir(&via("swapped/new")), "mkdir");
    assert_swapped(beneath.create_dir_all(&via("swapped/a/b")), "mkdir -p");
    assert_swapped(
        beneath.rename(&via("real/a.txt"), &via("swapped/a.txt"), true),
        "move out",
    );
    assert_swapped(
        beneath.rename(&via("swapped/secret.txt"), &via("real/s.txt"), true),
        "move in",
    );
    assert_swapped(beneath.remove_file(&via("swapped/secret.txt")), "delete");
    assert_swapped(beneath.remove_all(&via("swapped/inner")), "delete tree");
    // Even a link that stays inside the root is refused: callers pass resolved paths.
    assert_swapped(beneath.open_read(&via("inside_link/a.txt")), "inner link");
    // A final symlink is not followed either.
    assert_swapped(beneath.open_read(&via("swapped")), "final link");
    // Nothing outside changed.
    let mut names: Vec<_> = std::fs::read_dir(&fixture.outside)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["inner", "secret.txt"]);
    assert!(
        std::fs::read_dir(fixture.outside.join("inner"))
            .unwrap()
            .next()
            .is_none()
    );
    assert_eq!(
        std::fs::read_to_string(fixture.work.join("real/a.txt")).unwrap(),
        "a"
    );
}

#[test]
fn removing_a_link_removes_the_link_only() {
    let fixture = fixture();
    let beneath = fixture.sandbox.beneath();
    beneath.remove_all(&fixture.work.join("swapped")).unwrap();
    assert!(fixture.outside.join("secret.txt").exists());
    assert!(!fixture.work.join("swapped").exists());
}

#[test]
fn paths_outside_the_roots_or_not_resolved_are_refused() {
    let fixture = fixture();
    let beneath = fixture.sandbox.beneath();
    let error = beneath
        .open_read(&fixture.outside.join("secret.txt"))
        .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
    let error = beneath
        .open_read(&fixture.work.join("real/../real/a.txt"))
        .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error:?}");
}

/// The walk macOS uses (and Linux without `openat2`), exercised here on Linux.
#[test]
fn the_per_component_walk_refuses_links_too() {
    let fixture = fixture();
    let root = open_root(&fixture.work).unwrap();
    let open = |relative: &str| {
        let path = fixture.work.join(relative);
        open_per_component(
            root.as_fd(),
            &path,
            Path::new(relative),
            OFlags::RDONLY | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map_err(|error| refine(error, &path))
    };
    let mut text = String::new();
    File::from(open("real/a.txt").unwrap())
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "a");
    assert_swapped(open("swapped/secret.txt"), "folder link");
    assert_swapped(open("swapped/inner"), "folder link, then a folder");
    assert_swapped(open("inside_link/a.txt"), "inner link");
    assert_swapped(open("swapped"), "final link");
    assert_eq!(
        open("real/../real/a.txt").unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
}

#[test]
fn staging_names_are_told_from_other_names() {
    use super::walk::{is_staging_name_of, staging_name};
    let name = std::ffi::OsStr::new("notes.txt");
    let staged = staging_name(name);
    assert!(is_staging_name_of(&staged, name));
    assert!(!is_staging_name_of(&staged, std::ffi::OsStr::new("notes")));
    assert!(!is_staging_name_of(
        &staging_name(std::ffi::OsStr::new("other.txt")),
        name
    ));
    for other in [
        ".notes.txt.souz-notours.tmp",
        ".notes.txt.souz-0123456789abcdef0123456789ABCDEF.tmp",
        ".notes.txt.souz-0123456789abcdef0123456789abcdef.tmp.bak",
        "notes.txt.souz-0123456789abcdef0123456789abcdef.tmp",
        ".notes.txt",
    ] {
        assert!(
            !is_staging_name_of(std::ffi::OsStr::new(other), name),
            "{other}"
        );
    }
}
