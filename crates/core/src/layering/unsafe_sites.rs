//! The places allowed `unsafe`: the workspace denies `unsafe_code` (`Cargo.toml`'s lints), and
//! each file that lifts the lint for an item says why here. A new `allow(unsafe_code)` (or
//! `expect`) anywhere in the workspace fails this test until it is listed with its reason, so
//! `unsafe` grows only by a decision someone reviewed.

use std::path::{Path, PathBuf};

/// Each file (from the workspace root) that may lift `unsafe_code`, and why.
const ALLOWED: &[(&str, &str)] = &[
    (
        "crates/core/src/llm/local/llama.rs",
        "llama.cpp's C API through llama-cpp-sys-2: the binding owns the handles",
    ),
    (
        "crates/core/src/memory/kernels.rs",
        "sign distances and dot products compiled with x86-64 extensions (popcnt, AVX2), called only after runtime feature detection",
    ),
    (
        "crates/core/src/runtime/allocator.rs",
        "glibc mallopt thresholds, so large freed blocks go back to the system at once",
    ),
    (
        "src-tauri/src/notify/macos.rs",
        "Objective-C notification calls through objc2 (macOS only)",
    ),
];

/// The workspace's Rust files that lift `unsafe_code`, relative to `root`.
fn lifting_files(root: &Path) -> std::io::Result<Vec<String>> {
    let mut files = Vec::new();
    for folder in ["crates", "src-tauri/src", "tests"] {
        let folder = root.join(folder);
        if folder.is_dir() {
            super::rust_files(&folder, &mut files)?;
        }
    }
    let mut lifting: Vec<String> = Vec::new();
    for file in files {
        if file.components().any(|part| part.as_os_str() == "target") {
            continue;
        }
        let text = std::fs::read_to_string(&file)?;
        let lifts = text.lines().any(|line| {
            let line = line.trim_start();
            (line.starts_with("#[") || line.starts_with("#!["))
                && (line.contains("allow(unsafe_code") || line.contains("expect(unsafe_code"))
        });
        if lifts {
            let relative: PathBuf = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
            lifting.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    lifting.sort();
    Ok(lifting)
}

#[test]
fn only_the_listed_files_may_use_unsafe() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found = lifting_files(&root).unwrap();
    let mut allowed: Vec<String> = ALLOWED.iter().map(|(file, _)| (*file).to_owned()).collect();
    allowed.sort();
    let unlisted: Vec<&String> = found
        .iter()
        .filter(|file| !allowed.contains(file))
        .collect();
    assert!(
        unlisted.is_empty(),
        "these files lift `unsafe_code` but are not in layering::unsafe_sites::ALLOWED (add \
         each with its reason, or remove the unsafe): {unlisted:?}"
    );
    let stale: Vec<&String> = allowed
        .iter()
        .filter(|file| !found.contains(file))
        .collect();
    assert!(
        stale.is_empty(),
        "listed but no longer lifting the lint: {stale:?}"
    );
}

#[test]
fn a_file_lifting_the_lint_is_found() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("crates/x/src");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("a.rs"), "#[allow(unsafe_code)]\nfn f() {}\n").unwrap();
    std::fs::write(folder.join("b.rs"), "// allow(unsafe_code) in a comment\n").unwrap();
    std::fs::write(
        folder.join("c.rs"),
        "#![expect(unsafe_code, reason = \"x\")]\n",
    )
    .unwrap();
    assert_eq!(
        lifting_files(root.path()).unwrap(),
        ["crates/x/src/a.rs", "crates/x/src/c.rs"]
    );
}
