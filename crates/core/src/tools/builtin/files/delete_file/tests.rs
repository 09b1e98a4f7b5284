use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::config::SandboxConfig;
use crate::sandbox::SandboxError;
use crate::tools::builtin::files::testing::{TestHome, call, plan, run};

/// Empties from the real Trash whatever a test put there (everything that came from under its
/// temporary folder), even when the test fails.
struct TrashCleanup {
    under: PathBuf,
}

impl TrashCleanup {
    fn new(home: &TestHome) -> Self {
        Self {
            under: home.home.parent().unwrap().to_path_buf(),
        }
    }
}

#[cfg(all(
    unix,
    not(target_os = "macos"),
    not(target_os = "ios"),
    not(target_os = "android")
))]
impl Drop for TrashCleanup {
    fn drop(&mut self) {
        if let Ok(items) = trash::os_limited::list() {
            let ours: Vec<_> = items
                .into_iter()
                .filter(|item| item.original_path().starts_with(&self.under))
                .collect();
            let _ = trash::os_limited::purge_all(ours);
        }
    }
}

/// The Trash's items that came from `path`.
#[cfg(all(
    unix,
    not(target_os = "macos"),
    not(target_os = "ios"),
    not(target_os = "android")
))]
fn in_trash(path: &Path) -> Vec<trash::TrashItem> {
    trash::os_limited::list()
        .unwrap()
        .into_iter()
        .filter(|item| item.original_path() == path)
        .collect()
}

#[cfg(all(
    unix,
    not(target_os = "macos"),
    not(target_os = "ios"),
    not(target_os = "android")
))]
#[tokio::test]
async fn a_deleted_file_is_in_the_trash_and_can_be_restored() {
    let home = TestHome::new();
    let _cleanup = TrashCleanup::new(&home);
    let path = home.write("docs/report.txt", "quarterly numbers\n");
    let arguments = json!({"path": "~/docs/report.txt"});
    let planned = plan(&DeleteFile, &home, arguments.clone()).await.unwrap();
    assert_eq!(
        planned.plan.summary,
        "Move file ~/docs/report.txt to the Trash (18 B)"
    );
    assert_eq!(
        planned.plan.targets,
        [CallTarget::Path {
            path: path.clone(),
            access: Access::Delete,
            protected: false
        }]
    );
    assert!(path.exists(), "planning deletes nothing");
    let output = run(&DeleteFile, &home, arguments, planned).await.unwrap();
    assert_eq!(
        output.text,
        "Moved ~/docs/report.txt to the Trash (it can be restored from there)"
    );
    assert!(!home.exists("docs/report.txt"));

    let items = in_trash(&path);
    assert_eq!(
        items.len(),
        1,
        "exactly one trashed item came from {path:?}"
    );
    trash::os_limited::restore_all(items).unwrap();
    assert_eq!(home.read("docs/report.txt"), "quarterly numbers\n");
    assert!(in_trash(&path).is_empty());
}

#[cfg(all(
    unix,
    not(target_os = "macos"),
    not(target_os = "ios"),
    not(target_os = "android")
))]
#[tokio::test]
async fn a_deleted_folder_goes_to_the_trash_whole() {
    let home = TestHome::new();
    let _cleanup = TrashCleanup::new(&home);
    home.write("project/src/main.rs", "fn main() {}\n");
    home.write("project/README.md", "# Project\n");
    let folder = home.path("project");
    let planned = plan(&DeleteFile, &home, json!({"path": "project"}))
        .await
        .unwrap();
    assert_eq!(
        planned.plan.summary,
        "Move folder ~/project to the Trash (2 files, 1 folder, 23 B)"
    );
    call(&DeleteFile, &home, json!({"path": "project"}))
        .await
        .unwrap();
    assert!(!home.exists("project"));
    let items = in_trash(&folder);
    assert_eq!(items.len(), 1);
    trash::os_limited::restore_all(items).unwrap();
    assert_eq!(home.read("project/src/main.rs"), "fn main() {}\n");
    assert_eq!(home.read("project/README.md"), "# Project\n");
}

#[cfg(all(
    unix,
    not(target_os = "macos"),
    not(target_os = "ios"),
    not(target_os = "android")
))]
#[tokio::test]
async fn deleting_a_symlink_trashes_the_link_not_its_target() {
    let home = TestHome::new();
    let _cleanup = TrashCleanup::new(&home);
    let target = home.write("keep/data.txt", "precious");
    let link = home.symlink(&target, "shortcut.txt");
    let planned = plan(&DeleteFile, &home, json!({"path": "shortcut.txt"}))
        .await
        .unwrap();
    assert_eq!(
        planned.plan.summary,
        "Move symbolic link ~/shortcut.txt to the Trash (only the link; what it points to stays)"
    );
    call(&DeleteFile, &home, json!({"path": "shortcut.txt"}))
        .await
        .unwrap();
    assert!(!home.exists("shortcut.txt"));
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
    assert_eq!(in_trash(&link).len(), 1);
    assert!(in_trash(&target).is_empty());
}

#[tokio::test]
async fn roots_and_the_home_folder_are_never_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let extra = dir.path().canonicalize().unwrap().join("projects");
    fs::create_dir_all(&extra).unwrap();
    let mut config = SandboxConfig::default();
    config.roots.push(extra.display().to_string());
    config.roots.push("~/work/inner".to_owned());
    let home = TestHome::with_setup(config, |home| {
        fs::create_dir_all(home.join("work/inner")).unwrap();
    });
    for path in [
        "~".to_owned(),
        "~/".to_owned(),
        home.home.display().to_string(),
        extra.display().to_string(),
        "~/work/inner".to_owned(),
        "~/work".to_owned(),
    ] {
        let error = plan(&DeleteFile, &home, json!({ "path": path }))
            .await
            .unwrap_err();
        // The sandbox refuses roots itself; the tool also refuses folders holding a root.
        let refused = match &error {
            ToolError::InvalidArguments(message) => message.contains("cannot be deleted"),
            ToolError::Sandbox(SandboxError::InvalidPath { reason, .. }) => {
                reason.contains("cannot be deleted")
            }
            _ => false,
        };
        assert!(refused, "{path}: {error:?}");
    }
    assert!(home.path("work/inner").is_dir() && extra.is_dir());
}

#[tokio::test]
async fn nothing_outside_the_roots_can_be_deleted() {
    let home = TestHome::new();
    let victim = home.write_outside("victim.txt", "safe");
    home.symlink(&home.outside(""), "door");
    home.symlink(&victim, "victim-link.txt");
    for path in [
        "door/victim.txt".to_owned(),
        "door".to_owned(),
        "victim-link.txt".to_owned(),
        victim.display().to_string(),
        "~/../outside/victim.txt".to_owned(),
    ] {
        let error = plan(&DeleteFile, &home, json!({ "path": path }))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ToolError::Sandbox(SandboxError::OutsideRoots { .. })),
            "{path}: {error:?}"
        );
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "safe");
}

#[tokio::test]
async fn only_the_protected_path_itself_is_marked_protected() {
    let home = TestHome::new();
    home.write("dotfiles/.ssh/id_ed25519", "key");
    home.write(".ssh/id_rsa", "key");
    let planned = plan(&DeleteFile, &home, json!({"path": "~/.ssh"}))
        .await
        .unwrap();
    assert!(matches!(
        planned.plan.targets[0],
        CallTarget::Path {
            protected: true,
            ..
        }
    ));
    let planned = plan(&DeleteFile, &home, json!({"path": "~/dotfiles"}))
        .await
        .unwrap();
    assert!(
        matches!(
            planned.plan.targets[0],
            CallTarget::Path {
                protected: false,
                ..
            }
        ),
        "a folder named .ssh elsewhere is not the protected one"
    );
}

#[tokio::test]
async fn a_folder_containing_a_protected_path_asks() {
    let home = TestHome::with_protected(&["~/work/secrets"]);
    home.write("work/secrets/token", "t");
    home.write("work/readme.md", "r");
    let planned = plan(&DeleteFile, &home, json!({"path": "~/work"}))
        .await
        .unwrap();
    assert!(
        planned
            .plan
            .summary
            .ends_with("; it contains protected paths")
    );
    assert!(matches!(
        planned.plan.targets[0],
        CallTarget::Path {
            protected: true,
            ..
        }
    ));
}

#[tokio::test]
async fn a_path_gone_or_replaced_after_the_plan_is_a_conflict() {
    let home = TestHome::new();
    let path = home.write("temp.txt", "x");
    let arguments = json!({"path": "temp.txt"});
    let planned = plan(&DeleteFile, &home, arguments.clone()).await.unwrap();
    fs::remove_file(&path).unwrap();
    let error = run(&DeleteFile, &home, arguments.clone(), planned)
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");

    home.write("temp.txt", "x");
    let planned = plan(&DeleteFile, &home, arguments.clone()).await.unwrap();
    fs::remove_file(&path).unwrap();
    home.folder("temp.txt");
    let error = run(&DeleteFile, &home, arguments, planned)
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
    assert!(
        home.path("temp.txt").is_dir(),
        "the new folder is left alone"
    );
}

#[tokio::test]
async fn a_missing_path_is_a_clear_error() {
    let home = TestHome::new();
    assert!(matches!(
        plan(&DeleteFile, &home, json!({"path": "nothing-here.txt"})).await,
        Err(ToolError::Sandbox(SandboxError::NotFound(_)))
    ));
}
