//! Property-based fuzzing of the path resolver (stable toolchain, `proptest`): any input is
//! turned into an absolute, normalized path or refused with a reason, and walking a tree of
//! random folders and symbolic links (loops included) ends where the kernel ends.
//!
//! The test command runs the default number of cases; `scripts/fuzz.sh` runs many more.

use std::path::{Component, Path, PathBuf};

use proptest::prelude::*;

use super::{WalkError, absolute_input, normalize_lexically, resolve_real};

/// Names the random trees are made of: folders, a file, links, and `..`. Not `.`: the walker
/// reads `Path::components`, which drops it, so for the walker `file/.` (also inside a link's
/// target) is the file where the kernel says "not a folder" — a difference this test found,
/// harmless since opening such a path then fails.
const NAMES: &[&str] = &["d0", "d1", "f", "l0", "l1", "l2", "l3", "..", "missing"];

fn is_normalized_absolute(path: &Path) -> bool {
    path.is_absolute()
        && path
            .components()
            .all(|component| matches!(component, Component::RootDir | Component::Normal(_)))
}

fn name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(NAMES)
}

/// A path through the tree's names, relative or absolute (under the tree).
fn tree_path() -> impl Strategy<Value = (bool, Vec<&'static str>)> {
    (any::<bool>(), prop::collection::vec(name(), 1..6))
}

/// One link: the folder it sits in (`None`: the tree's top), its name, its target.
type Link = (
    Option<&'static str>,
    &'static str,
    (bool, Vec<&'static str>),
);

fn link() -> impl Strategy<Value = Link> {
    (
        prop::option::of(prop::sample::select(&["d0", "d0/d1"][..])),
        prop::sample::select(&["l0", "l1", "l2", "l3"][..]),
        tree_path(),
    )
}

fn joined(base: &Path, (absolute, parts): &(bool, Vec<&str>)) -> PathBuf {
    let relative = parts.join("/");
    if *absolute {
        base.join(relative)
    } else {
        PathBuf::from(relative)
    }
}

proptest! {
    #[test]
    fn any_input_is_absolute_and_normalized_or_refused(raw in any::<String>()) {
        let home = Path::new("/home/person");
        if let Ok(path) = absolute_input(&raw, home) {
            prop_assert!(is_normalized_absolute(&path), "{raw:?} became {path:?}");
            let text = path.to_string_lossy();
            prop_assert!(!text.chars().any(char::is_control), "{raw:?} became {path:?}");
        }
    }

    #[test]
    fn path_like_input_is_absolute_and_normalized_or_refused(
        raw in r#"(~|\$HOME|\$\{HOME\}|file://|/|\.\.|\.|[a-z]|%2[eEfF]|%00|'|"|`| |\u{202E}|\u{2215}|\u{FF0E})*"#,
    ) {
        let home = Path::new("/home/person");
        if let Ok(path) = absolute_input(&raw, home) {
            prop_assert!(is_normalized_absolute(&path), "{raw:?} became {path:?}");
        }
    }

    #[test]
    fn plain_relative_names_land_in_the_home(
        parts in prop::collection::vec("[A-Za-z0-9_]([A-Za-z0-9_ .-]{0,5}[A-Za-z0-9_])?", 1..5),
    ) {
        let home = Path::new("/home/person");
        let raw = parts.join("/");
        let mut expected = home.to_path_buf();
        for part in &parts {
            expected.push(part);
        }
        prop_assert_eq!(absolute_input(&raw, home), Ok(normalize_lexically(&expected)));
    }

    #[test]
    fn lexical_normalization_is_idempotent_and_never_climbs_above_the_root(
        parts in prop::collection::vec(prop::sample::select(&["a", "b", ".", "..", "c d"][..]), 0..12),
    ) {
        let path = PathBuf::from(format!("/{}", parts.join("/")));
        let once = normalize_lexically(&path);
        prop_assert!(is_normalized_absolute(&once), "{path:?} became {once:?}");
        prop_assert_eq!(normalize_lexically(&once), once);
    }

    #[test]
    fn walking_random_links_ends_where_the_kernel_ends(
        links in prop::collection::vec(link(), 0..5),
        queries in prop::collection::vec(tree_path(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("d0/d1")).unwrap();
        std::fs::write(base.join("f"), "file").unwrap();
        for (folder, name, target) in &links {
            let at = folder.map_or_else(|| base.clone(), |folder| base.join(folder));
            // A name taken by an earlier link keeps the first one.
            let _ = std::os::unix::fs::symlink(joined(&base, target), at.join(name));
        }
        for (_, parts) in &queries {
            let query = base.join(parts.join("/"));
            let walked = resolve_real(&query);
            let kernel = std::fs::canonicalize(&query);
            match (&walked, &kernel) {
                (Ok((path, true)), Ok(real)) => prop_assert_eq!(path, real, "{:?}", query),
                (Ok((path, true)), Err(error)) => {
                    prop_assert!(false, "{query:?} walked to {path:?} but the kernel says {error}");
                }
                (Ok((path, false)), _) => {
                    prop_assert!(path.is_absolute(), "{query:?} walked to {path:?}");
                    prop_assert!(kernel.is_err(), "{query:?} exists for the kernel: {kernel:?}");
                }
                (Err(WalkError::Loop | WalkError::NotAFolder(_) | WalkError::Io(..)), _) => {}
            }
        }
    }
}
