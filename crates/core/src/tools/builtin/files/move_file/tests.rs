use std::fs;

use serde_json::json;

use super::*;
use crate::sandbox::SandboxError;
use crate::tools::builtin::files::testing::{TestHome, call, plan, run};

/// The refusal message, whether the tool or (for roots) the sandbox refused.
fn refusal(error: ToolError) -> String {
    match error {
        ToolError::InvalidArguments(message) => message,
        ToolError::Sandbox(SandboxError::InvalidPath { reason, .. }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn moves_a_file_creating_parents() {
    let home = TestHome::new();
    let source = home.write("Desktop/report.txt", "numbers");
    let arguments = json!({"sourcePath": "~/Desktop/report.txt", "destinationPath": "~/archive/2024/report.txt"});
    let planned = plan(&MoveFile, &home, arguments.clone()).await.unwrap();
    assert_eq!(
        planned.plan.summary,
        "Move file ~/Desktop/report.txt to ~/archive/2024/report.txt (7 B)"
    );
    assert_eq!(
        planned.plan.targets,
        [
            CallTarget::Path {
                path: source.clone(),
                access: Access::Delete,
                protected: false
            },
            CallTarget::Path {
                path: home.path("archive/2024/report.txt"),
                access: Access::Write,
                protected: false
            }
        ]
    );
    assert!(
        source.exists() && !home.exists("archive"),
        "planning moves nothing"
    );
    let output = run(&MoveFile, &home, arguments, planned).await.unwrap();
    assert_eq!(
        output.text,
        "Moved ~/Desktop/report.txt to ~/archive/2024/report.txt"
    );
    assert!(!source.exists());
    assert_eq!(home.read("archive/2024/report.txt"), "numbers");
}

#[tokio::test]
async fn moves_a_folder_with_its_content() {
    let home = TestHome::new();
    home.write("old/a.txt", "a");
    home.write("old/sub/b.txt", "b");
    let planned = plan(
        &MoveFile,
        &home,
        json!({"sourcePath": "old", "destinationPath": "new/place"}),
    )
    .await
    .unwrap();
    assert_eq!(
        planned.plan.summary,
        "Move folder ~/old to ~/new/place (2 files, 1 folder, 2 B)"
    );
    call(
        &MoveFile,
        &home,
        json!({"sourcePath": "old", "destinationPath": "new/place"}),
    )
    .await
    .unwrap();
    assert!(!home.exists("old"));
    assert_eq!(home.read("new/place/a.txt"), "a");
    assert_eq!(home.read("new/place/sub/b.txt"), "b");
}

#[tokio::test]
async fn never_overwrites_a_destination() {
    let home = TestHome::new();
    home.write("a.txt", "a");
    home.write("b.txt", "b");
    home.folder("folder");
    let message = refusal(
        plan(
            &MoveFile,
            &home,
            json!({"sourcePath": "a.txt", "destinationPath": "b.txt"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(message.contains("already exists (a file)"), "{message}");
    let message = refusal(
        plan(
            &MoveFile,
            &home,
            json!({"sourcePath": "a.txt", "destinationPath": "folder"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(message.contains("including the name"), "{message}");
    assert_eq!(
        (home.read("a.txt"), home.read("b.txt")),
        ("a".into(), "b".into())
    );
}

#[tokio::test]
async fn a_destination_that_appears_after_the_plan_is_not_overwritten() {
    let home = TestHome::new();
    home.write("mine.txt", "mine");
    let arguments = json!({"sourcePath": "mine.txt", "destinationPath": "target.txt"});
    let planned = plan(&MoveFile, &home, arguments.clone()).await.unwrap();
    home.write("target.txt", "theirs");
    let error = run(&MoveFile, &home, arguments, planned).await.unwrap_err();
    assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
    assert_eq!(home.read("mine.txt"), "mine");
    assert_eq!(home.read("target.txt"), "theirs");
}

#[tokio::test]
async fn a_source_changed_after_the_plan_is_a_conflict() {
    let home = TestHome::new();
    let source = home.write("mine.txt", "mine");
    let arguments = json!({"sourcePath": "mine.txt", "destinationPath": "moved.txt"});
    let planned = plan(&MoveFile, &home, arguments.clone()).await.unwrap();
    fs::remove_file(&source).unwrap();
    let error = run(&MoveFile, &home, arguments, planned).await.unwrap_err();
    assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
    assert!(!home.exists("moved.txt"));
}

#[tokio::test]
async fn refuses_same_path_moves_into_itself_and_moving_roots() {
    let home = TestHome::new();
    home.write("dir/file.txt", "x");
    let message = refusal(
        plan(
            &MoveFile,
            &home,
            json!({"sourcePath": "dir/file.txt", "destinationPath": "~/dir/./file.txt"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(message.contains("must be different"), "{message}");
    let message = refusal(
        plan(
            &MoveFile,
            &home,
            json!({"sourcePath": "dir", "destinationPath": "dir/inner/dir"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(message.contains("into itself"), "{message}");
    let message = refusal(
        plan(
            &MoveFile,
            &home,
            json!({"sourcePath": "~", "destinationPath": "~/home-moved"}),
        )
        .await
        .unwrap_err(),
    );
    assert!(message.contains("cannot be deleted or moved"), "{message}");
    assert_eq!(home.read("dir/file.txt"), "x");
}

#[tokio::test]
async fn moving_a_symlink_moves_the_link_only() {
    let home = TestHome::new();
    let target = home.write("data/real.txt", "real");
    home.symlink(&target, "links/shortcut.txt");
    call(
        &MoveFile,
        &home,
        json!({"sourcePath": "links/shortcut.txt", "destinationPath": "links/renamed.txt"}),
    )
    .await
    .unwrap();
    assert!(!home.exists("links/shortcut.txt"));
    let moved = home.path("links/renamed.txt");
    assert!(
        fs::symlink_metadata(&moved)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_link(&moved).unwrap(), target);
    assert_eq!(fs::read_to_string(&target).unwrap(), "real");
}

#[tokio::test]
async fn nothing_moves_in_or_out_of_the_roots_through_symlinks() {
    let home = TestHome::new();
    let victim = home.write_outside("victim.txt", "safe");
    home.symlink(&home.outside(""), "door");
    home.write("inside.txt", "inside");
    let cases = [
        json!({"sourcePath": "door/victim.txt", "destinationPath": "stolen.txt"}),
        json!({"sourcePath": "inside.txt", "destinationPath": "door/planted.txt"}),
        json!({"sourcePath": "inside.txt", "destinationPath": "/tmp/planted-by-souz-test.txt"}),
    ];
    for arguments in cases {
        let error = plan(&MoveFile, &home, arguments.clone()).await.unwrap_err();
        assert!(
            matches!(error, ToolError::Sandbox(SandboxError::OutsideRoots { .. })),
            "{arguments}: {error:?}"
        );
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "safe");
    assert_eq!(home.read("inside.txt"), "inside");
    assert!(!home.outside("planted.txt").exists());
}

#[tokio::test]
async fn a_protected_source_is_marked_for_the_policy() {
    let home = TestHome::new();
    home.write(".ssh/id_rsa", "key");
    let planned = plan(
        &MoveFile,
        &home,
        json!({"sourcePath": "~/.ssh/id_rsa", "destinationPath": "~/Public/id_rsa"}),
    )
    .await
    .unwrap();
    assert!(matches!(
        planned.plan.targets[..],
        [
            CallTarget::Path {
                protected: true,
                access: Access::Delete,
                ..
            },
            CallTarget::Path {
                protected: false,
                access: Access::Write,
                ..
            }
        ]
    ));
}
