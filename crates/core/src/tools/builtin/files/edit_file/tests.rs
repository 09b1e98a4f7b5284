use std::fs;

use serde_json::json;

use super::*;
use crate::approvals::CallTarget;
use crate::tools::builtin::files::testing::{TestHome, call, plan, run};

fn refusal(error: ToolError) -> String {
    match error {
        ToolError::InvalidArguments(message) => message,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

#[tokio::test]
async fn plan_shows_the_diff_and_changes_nothing_then_run_applies_it() {
    let home = TestHome::new();
    home.write("notes/todo.md", "# Todo\n- milk\n- bread\n- eggs\n");
    let arguments =
        json!({"path": "~/notes/todo.md", "oldString": "- bread", "newString": "- rye bread"});
    let planned = plan(&EditFile, &home, arguments.clone()).await.unwrap();
    assert_eq!(
        planned.plan.summary,
        "Edit ~/notes/todo.md (replace 1 occurrence)"
    );
    assert_eq!(
        planned.plan.diff.as_deref(),
        Some(
            "--- a/~/notes/todo.md\n+++ b/~/notes/todo.md\n@@ -1,4 +1,4 @@\n # Todo\n - milk\n\
             -- bread\n+- rye bread\n - eggs\n"
        )
    );
    assert_eq!(
        planned.plan.targets,
        [CallTarget::Path {
            path: home.path("notes/todo.md"),
            access: Access::Write,
            protected: false
        }]
    );
    assert_eq!(
        home.read("notes/todo.md"),
        "# Todo\n- milk\n- bread\n- eggs\n"
    );
    let output = run(&EditFile, &home, arguments, planned).await.unwrap();
    assert_eq!(output.text, "Edited ~/notes/todo.md: replaced 1 occurrence");
    assert_eq!(
        home.read("notes/todo.md"),
        "# Todo\n- milk\n- rye bread\n- eggs\n"
    );
}

#[tokio::test]
async fn a_file_changed_after_the_plan_is_not_touched() {
    let home = TestHome::new();
    home.write("config.toml", "port = 1\n");
    let arguments =
        json!({"path": "config.toml", "oldString": "port = 1", "newString": "port = 2"});
    let planned = plan(&EditFile, &home, arguments.clone()).await.unwrap();
    // Someone else edits the file while the person is deciding.
    home.write("config.toml", "port = 1\nhost = \"x\"\n");
    let error = run(&EditFile, &home, arguments, planned).await.unwrap_err();
    assert!(
        matches!(&error, ToolError::Conflict(message) if message.contains("changed after the edit was planned")),
        "{error:?}"
    );
    assert_eq!(home.read("config.toml"), "port = 1\nhost = \"x\"\n");
}

#[tokio::test]
async fn a_file_removed_after_the_plan_is_a_conflict() {
    let home = TestHome::new();
    let path = home.write("gone.txt", "a");
    let arguments = json!({"path": "gone.txt", "oldString": "a", "newString": "b"});
    let planned = plan(&EditFile, &home, arguments.clone()).await.unwrap();
    fs::remove_file(&path).unwrap();
    let error = run(&EditFile, &home, arguments, planned).await.unwrap_err();
    assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
    assert!(!home.exists("gone.txt"), "nothing is recreated");
}

#[tokio::test]
async fn crlf_files_match_lf_strings_and_keep_crlf() {
    let home = TestHome::new();
    home.write("my note.txt", "Hello\r\n");
    call(
        &EditFile,
        &home,
        json!({"path": "~/my note.txt", "oldString": "Hello\n", "newString": "Hello\nWorld\n"}),
    )
    .await
    .unwrap();
    assert_eq!(home.read("my note.txt"), "Hello\r\nWorld\r\n");

    home.write("mixed.txt", "first\r\nsecond\nthird\r\n");
    call(
        &EditFile,
        &home,
        json!({"path": "mixed.txt", "oldString": "second\n", "newString": "SECOND\n"}),
    )
    .await
    .unwrap();
    assert_eq!(home.read("mixed.txt"), "first\r\nSECOND\nthird\r\n");
}

#[tokio::test]
async fn replace_all_and_ambiguity() {
    let home = TestHome::new();
    home.write("replace-all.txt", "foo=1\nfoo=1\n");
    let arguments = json!({"path": "replace-all.txt", "oldString": "foo=1", "newString": "foo=2"});
    let message = refusal(plan(&EditFile, &home, arguments).await.unwrap_err());
    assert!(message.contains("occurs 2 times"), "{message}");
    assert_eq!(home.read("replace-all.txt"), "foo=1\nfoo=1\n");
    let output = call(
        &EditFile,
        &home,
        json!({"path": "replace-all.txt", "oldString": "foo=1", "newString": "foo=2", "replaceAll": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        output.text,
        "Edited ~/replace-all.txt: replaced 2 occurrences"
    );
    assert_eq!(home.read("replace-all.txt"), "foo=2\nfoo=2\n");
}

#[tokio::test]
async fn bad_edits_are_refused_in_plan_and_lose_nothing() {
    let home = TestHome::new();
    home.write("a.txt", "alpha beta\n");
    for (old, new, expected) in [
        ("", "x", "must not be empty"),
        ("alpha", "alpha", "are the same"),
        ("gamma", "x", "not found"),
    ] {
        let arguments = json!({"path": "a.txt", "oldString": old, "newString": new});
        let message = refusal(plan(&EditFile, &home, arguments).await.unwrap_err());
        assert!(message.contains(expected), "{message}");
    }
    assert_eq!(home.read("a.txt"), "alpha beta\n");
}

#[tokio::test]
async fn only_utf8_text_files_are_edited() {
    let home = TestHome::new();
    home.write("data.bin", b"abc\0def".as_slice());
    home.write("latin1.txt", b"caf\xe9".as_slice());
    home.write("photo.png", "not really a png");
    home.folder("folder");
    for (path, expected) in [
        ("data.bin", "looks binary"),
        ("latin1.txt", "not valid UTF-8"),
        ("photo.png", ".png is not one"),
        ("folder", "not a regular file"),
    ] {
        let arguments = json!({"path": path, "oldString": "a", "newString": "b"});
        let message = refusal(plan(&EditFile, &home, arguments).await.unwrap_err());
        assert!(message.contains(expected), "{path}: {message}");
    }
    let error = plan(
        &EditFile,
        &home,
        json!({"path": "missing.txt", "oldString": "a", "newString": "b"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(
        error,
        ToolError::Sandbox(SandboxError::NotFound(_))
    ));
    assert!(!home.exists("missing.txt"));
}

#[tokio::test]
async fn very_large_files_are_refused() {
    let home = TestHome::new();
    let path = home.write("huge.log", "x");
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(EDIT_FILE_LIMIT_BYTES + 1)
        .unwrap();
    let message = refusal(
        plan(
            &EditFile,
            &home,
            json!({"path": "huge.log", "oldString": "x", "newString": "y"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(message.contains("larger than"), "{message}");
}

#[cfg(unix)]
#[tokio::test]
async fn the_write_is_atomic_and_keeps_permissions() {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let home = TestHome::new();
    let path = home.write("bin/run.sh", "echo old\n");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o750)).unwrap();
    let before = fs::metadata(&path).unwrap().ino();
    // A reader that opened the file before the edit keeps reading the old content: the new
    // content arrives by renaming a complete file over the old one, never by rewriting it.
    let mut reader = fs::File::open(&path).unwrap();
    call(
        &EditFile,
        &home,
        json!({"path": "bin/run.sh", "oldString": "old", "newString": "new"}),
    )
    .await
    .unwrap();
    let mut seen = String::new();
    reader.read_to_string(&mut seen).unwrap();
    assert_eq!(seen, "echo old\n");
    assert_eq!(home.read("bin/run.sh"), "echo new\n");
    let metadata = fs::metadata(&path).unwrap();
    assert_ne!(metadata.ino(), before);
    assert_eq!(metadata.permissions().mode() & 0o777, 0o750);
    let names: Vec<_> = fs::read_dir(home.path("bin"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, ["run.sh"], "no temporary file is left behind");
}

#[tokio::test]
async fn editing_through_a_symlink_edits_the_target_and_keeps_the_link() {
    let home = TestHome::new();
    let real = home.write("real/settings.json", "{\"a\": 1}\n");
    let link = home.symlink(&real, "link.json");
    call(
        &EditFile,
        &home,
        json!({"path": "link.json", "oldString": "1", "newString": "2"}),
    )
    .await
    .unwrap();
    assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\": 2}\n");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn symlinks_out_of_the_roots_are_refused() {
    let home = TestHome::new();
    let outside = home.write_outside("victim.txt", "safe");
    home.symlink(&outside, "innocent.txt");
    home.symlink(&home.outside(""), "door");
    for path in ["innocent.txt", "door/victim.txt"] {
        let error = plan(
            &EditFile,
            &home,
            json!({"path": path, "oldString": "safe", "newString": "owned"}),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(error, ToolError::Sandbox(SandboxError::OutsideRoots { .. })),
            "{path}: {error:?}"
        );
    }
    assert_eq!(fs::read_to_string(&outside).unwrap(), "safe");
}

#[tokio::test]
async fn a_symlink_swapped_in_after_the_plan_is_a_conflict() {
    let home = TestHome::new();
    home.write("a/file.txt", "one");
    home.write("b/file.txt", "one");
    let arguments = json!({"path": "current/file.txt", "oldString": "one", "newString": "two"});
    let link = home.symlink(&home.path("a"), "current");
    let planned = plan(&EditFile, &home, arguments.clone()).await.unwrap();
    fs::remove_file(&link).unwrap();
    home.symlink(&home.path("b"), "current");
    let error = run(&EditFile, &home, arguments, planned).await.unwrap_err();
    assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
    assert_eq!(home.read("a/file.txt"), "one");
    assert_eq!(home.read("b/file.txt"), "one");
}

#[tokio::test]
async fn protected_files_are_marked_for_the_policy() {
    let home = TestHome::new();
    home.write(".bashrc", "export A=1\n");
    let planned = plan(
        &EditFile,
        &home,
        json!({"path": "~/.bashrc", "oldString": "A=1", "newString": "A=2"}),
    )
    .await
    .unwrap();
    assert!(matches!(
        planned.plan.targets[0],
        CallTarget::Path {
            protected: true,
            ..
        }
    ));
}
