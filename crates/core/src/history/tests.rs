//! The history through the real gate and the real file tools: undo of a middle change,
//! conflicts and restore anyway, limits, the approval's warning, and the settling of what a
//! killed process left pending.

mod property;
mod review;
mod settling;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use souz_protocol::history::{PathKind, UndoReport, UndoSelection};
use souz_protocol::{Action, Requester, ToolCallStatus};

use super::undo::{HistoryQuery, UndoOrder};
use super::{Checkpoint, History, Limits};
use crate::sandbox::Sandbox;
use crate::testing::{TestGate, TestHome};
use crate::tools::gate::CallRequest;

/// A gate over the built-in tools that allows writes and deletes, its history, and a Trash
/// inside the test home.
pub(super) struct Fixture {
    pub stack: TestGate,
    pub history: History,
    pub sandbox: Arc<Sandbox>,
    pub root: PathBuf,
}

pub(super) fn limits() -> Limits {
    Limits {
        keep_days: 30,
        max_bytes: 1 << 30,
        max_file_bytes: 1 << 20,
    }
}

impl Fixture {
    pub(super) async fn new(limits: Limits, ask_writes: bool) -> Self {
        let home = TestHome::new();
        let mut config = TestHome::template_config(home.paths());
        config.approvals.write = if ask_writes {
            Action::Ask
        } else {
            Action::Allow
        };
        config.approvals.delete = Action::Allow;
        let catalog = crate::tools::builtin::catalog().unwrap();
        let stack = TestGate::start(home, config, catalog).await;
        let user_home = stack.config.paths.user_home().to_path_buf();
        let sandbox = Arc::new(
            (*stack.gate.sandbox())
                .clone()
                .with_trash_folder(user_home.join(".trash")),
        );
        stack.gate.replace_sandbox(Arc::clone(&sandbox));
        let history =
            History::open(stack.store.clone(), stack.config.paths.home(), limits).unwrap();
        history.reconcile(Arc::clone(&sandbox)).await.unwrap();
        stack.gate.set_history(history.clone());
        let root = user_home.join("w");
        std::fs::create_dir_all(&root).unwrap();
        Self {
            stack,
            history,
            sandbox,
            root,
        }
    }

    pub(super) async fn call(&self, tool: &str, arguments: Value) -> (ToolCallStatus, String) {
        let state = self
            .stack
            .gate
            .call(CallRequest {
                tool: tool.into(),
                arguments,
                requester: Requester::Cli,
            })
            .await
            .unwrap();
        let text = state.result.map(|result| result.text).unwrap_or_default();
        (state.status, text)
    }

    pub(super) async fn undo(&self, selection: UndoSelection, force: bool) -> UndoReport {
        self.history
            .undo(
                Arc::clone(&self.sandbox),
                UndoOrder {
                    selection,
                    force,
                    requester: Requester::Cli,
                },
            )
            .await
            .unwrap()
    }

    pub(super) fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// `~/w/<relative>` as the tools take it.
    pub(super) fn arg(relative: &str) -> String {
        format!("~/w/{relative}")
    }
}

/// Everything under `root`: relative path → (kind, permission bits, content or link target).
pub(super) fn tree(root: &Path) -> BTreeMap<String, (&'static str, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let value = if meta.file_type().is_symlink() {
                (
                    "link",
                    0,
                    std::fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                )
            } else if meta.is_dir() {
                stack.push(path.clone());
                ("folder", mode, Vec::new())
            } else {
                ("file", mode, std::fs::read(&path).unwrap())
            };
            found.insert(relative, value);
        }
    }
    found
}

#[tokio::test]
async fn undo_of_a_middle_change_leaves_later_changes_to_other_files_intact() {
    let f = Fixture::new(limits(), false).await;
    std::fs::write(f.path("b.txt"), "b one\n").unwrap();
    let create = f
        .call(
            "NewFile",
            json!({"path": Fixture::arg("a/a.txt"), "text": "a\n"}),
        )
        .await;
    assert_eq!(create.0, ToolCallStatus::Succeeded, "{create:?}");
    let edit = f
        .call(
            "EditFile",
            json!({"path": Fixture::arg("b.txt"), "oldString": "one", "newString": "two"}),
        )
        .await;
    assert_eq!(edit.0, ToolCallStatus::Succeeded, "{edit:?}");
    let late = f
        .call(
            "NewFile",
            json!({"path": Fixture::arg("c.txt"), "text": "c\n"}),
        )
        .await;
    assert_eq!(late.0, ToolCallStatus::Succeeded, "{late:?}");
    let listed = f
        .history
        .list(HistoryQuery {
            limit: 10,
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[1].tool, "EditFile");
    assert_eq!(listed[1].client, "cli");
    let report = f
        .undo(UndoSelection::Change { id: listed[1].id }, false)
        .await;
    assert!(report.conflicts.is_empty(), "{report:?}");
    assert_eq!(report.undone.len(), 1);
    assert_eq!(std::fs::read_to_string(f.path("b.txt")).unwrap(), "b one\n");
    assert_eq!(std::fs::read_to_string(f.path("a/a.txt")).unwrap(), "a\n");
    assert_eq!(std::fs::read_to_string(f.path("c.txt")).unwrap(), "c\n");
    // The undo is recorded and can itself be undone.
    let undo_id = report.undone[0].undo_id;
    let again = f.undo(UndoSelection::Change { id: undo_id }, false).await;
    assert!(again.conflicts.is_empty(), "{again:?}");
    assert_eq!(std::fs::read_to_string(f.path("b.txt")).unwrap(), "b two\n");
    // The creation with its new folder goes back whole: the folder too.
    let created = listed[2].id;
    f.undo(UndoSelection::Change { id: created }, false).await;
    assert!(!f.path("a").exists());
    // An undone change is not undone twice.
    let twice = f
        .history
        .undo(
            Arc::clone(&f.sandbox),
            UndoOrder {
                selection: UndoSelection::Change { id: created },
                force: false,
                requester: Requester::Cli,
            },
        )
        .await
        .unwrap_err();
    assert!(twice.to_string().contains("undone already"), "{twice}");
}

#[tokio::test]
async fn a_file_changed_since_is_refused_with_three_versions_and_restored_when_forced() {
    let f = Fixture::new(limits(), false).await;
    std::fs::write(f.path("notes.md"), "first\n").unwrap();
    let edit = f
        .call(
            "EditFile",
            json!({"path": Fixture::arg("notes.md"), "oldString": "first", "newString": "souz"}),
        )
        .await;
    assert_eq!(edit.0, ToolCallStatus::Succeeded, "{edit:?}");
    std::fs::write(f.path("notes.md"), "souz\nmine\n").unwrap();
    let call_id = f.history.list(HistoryQuery::default()).await.unwrap()[0]
        .call_id
        .clone();
    let refused = f
        .undo(
            UndoSelection::Call {
                call_id: call_id.clone(),
            },
            false,
        )
        .await;
    assert!(refused.undone.is_empty());
    let [conflict] = refused.conflicts.as_slice() else {
        panic!("{refused:?}");
    };
    assert_eq!(conflict.before.kind, PathKind::File);
    assert!(
        conflict
            .souz_diff
            .as_deref()
            .unwrap()
            .contains("-first\n+souz\n")
    );
    assert!(conflict.since_diff.as_deref().unwrap().contains("+mine\n"));
    assert_eq!(
        std::fs::read_to_string(f.path("notes.md")).unwrap(),
        "souz\nmine\n",
        "nothing changed"
    );
    let forced = f.undo(UndoSelection::Call { call_id }, true).await;
    assert_eq!(forced.undone.len(), 1, "{forced:?}");
    assert_eq!(
        std::fs::read_to_string(f.path("notes.md")).unwrap(),
        "first\n"
    );
    // What was overwritten is kept by the undo's own record.
    let back = f
        .undo(
            UndoSelection::Change {
                id: forced.undone[0].undo_id,
            },
            false,
        )
        .await;
    assert!(back.conflicts.is_empty(), "{back:?}");
    assert_eq!(
        std::fs::read_to_string(f.path("notes.md")).unwrap(),
        "souz\nmine\n"
    );
}

#[tokio::test]
async fn a_deleted_folder_comes_back_from_the_trash_and_a_move_is_moved_back() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new(limits(), false).await;
    std::fs::create_dir_all(f.path("project/src")).unwrap();
    std::fs::write(f.path("project/src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::set_permissions(
        f.path("project/src"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    std::fs::write(f.path("data.bin"), [0u8, 159, 146, 150, 255]).unwrap();
    std::fs::set_permissions(f.path("data.bin"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let start = tree(&f.root);
    let deleted = f
        .call("DeleteFile", json!({"path": Fixture::arg("project")}))
        .await;
    assert_eq!(deleted.0, ToolCallStatus::Succeeded, "{deleted:?}");
    let moved = f
        .call(
            "MoveFile",
            json!({"sourcePath": Fixture::arg("data.bin"), "destinationPath": Fixture::arg("deep/er/data.bin")}),
        )
        .await;
    assert_eq!(moved.0, ToolCallStatus::Succeeded, "{moved:?}");
    assert!(!f.path("project").exists());
    let since = chrono::Utc::now() - chrono::Duration::minutes(1);
    let report = f
        .undo(
            UndoSelection::Since {
                since,
                client: Some("cli".into()),
            },
            false,
        )
        .await;
    assert!(report.conflicts.is_empty(), "{report:?}");
    assert_eq!(report.undone.len(), 2, "{report:?}");
    assert_eq!(tree(&f.root), start);
    let trash = f.stack.config.paths.user_home().join(".trash");
    assert_eq!(
        std::fs::read_dir(trash.join("files")).unwrap().count(),
        0,
        "taken out of the Trash"
    );
    assert_eq!(std::fs::read_dir(trash.join("info")).unwrap().count(), 0);
}

#[tokio::test]
async fn over_max_bytes_the_oldest_changes_go_first() {
    let f = Fixture::new(
        Limits {
            keep_days: 30,
            max_bytes: 20_000,
            max_file_bytes: 20_000,
        },
        false,
    )
    .await;
    // Random letters: 10 kB that deflate to about 6 kB each.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for index in 0..6u32 {
        let text: String = (0..10_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect();
        let created = f
            .call(
                "NewFile",
                json!({"path": Fixture::arg(&format!("f{index}.txt")), "text": text}),
            )
            .await;
        assert_eq!(created.0, ToolCallStatus::Succeeded, "{created:?}");
    }
    f.history.prune().await.unwrap();
    let kept = f
        .history
        .list(HistoryQuery {
            limit: 100,
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    let names: Vec<String> = kept
        .iter()
        .map(|change| change.paths[0].path.clone())
        .collect();
    assert!(kept.len() < 6 && !kept.is_empty(), "{names:?}");
    assert!(names[0].ends_with("f5.txt"), "the newest stays: {names:?}");
    assert!(
        !names.iter().any(|name| name.ends_with("f0.txt")),
        "the oldest went: {names:?}"
    );
    let stored: i64 = f
        .stack
        .store
        .read(|connection| {
            connection
                .query_row("SELECT SUM(stored) FROM history_blobs", [], |row| {
                    row.get(0)
                })
                .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    assert!(stored <= 20_000, "{stored}");
    let blobs = f.history.blobs().all().unwrap();
    assert_eq!(
        blobs.len(),
        kept.len(),
        "the blobs of forgotten changes are removed: {blobs:?} {kept:#?}"
    );
}

/// Forgetting the oldest change keeps the contents a later change still names: two edits of
/// one file share the state between them (the first's after is the second's before), so with
/// the first forgotten, the second still undoes byte for byte.
#[tokio::test]
async fn a_forgotten_change_leaves_the_contents_a_later_change_names() {
    let f = Fixture::new(
        Limits {
            keep_days: 30,
            max_bytes: 25_000,
            max_file_bytes: 20_000,
        },
        false,
    )
    .await;
    // Random letters: each version of the file is kept in about 10 kB, so three versions are
    // over the limit and two are not.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut version = |tag: &str| -> String {
        let body: String = (0..10_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect();
        format!("{tag}\n{body}")
    };
    let (first, second, third) = (version("v1"), version("v2"), version("v3"));
    std::fs::write(f.path("f.txt"), &first).unwrap();
    for (old, new) in [(&first, &second), (&second, &third)] {
        let edited = f
            .call(
                "EditFile",
                json!({"path": Fixture::arg("f.txt"), "oldString": old, "newString": new}),
            )
            .await;
        assert_eq!(edited.0, ToolCallStatus::Succeeded, "{edited:?}");
    }
    f.history.prune().await.unwrap();
    let kept = f
        .history
        .list(HistoryQuery {
            limit: 10,
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "the older edit is forgotten: {kept:#?}");
    assert_eq!(
        f.history.blobs().all().unwrap().len(),
        2,
        "the first version's content goes, the shared one stays"
    );
    let report = f
        .undo(UndoSelection::Change { id: kept[0].id }, false)
        .await;
    assert!(report.conflicts.is_empty(), "{report:?}");
    assert_eq!(std::fs::read_to_string(f.path("f.txt")).unwrap(), second);
}

#[tokio::test]
async fn a_file_over_the_limit_is_called_unrestorable_before_the_write() {
    let f = Fixture::new(
        Limits {
            keep_days: 30,
            max_bytes: 1 << 20,
            max_file_bytes: 1_000,
        },
        true,
    )
    .await;
    std::fs::write(f.path("big.txt"), "x".repeat(5_000)).unwrap();
    let mut handle = f
        .stack
        .gate
        .start(CallRequest {
            tool: "EditFile".into(),
            arguments: json!({"path": Fixture::arg("big.txt"), "oldString": "xx", "newString": "y", "replaceAll": true}),
            requester: Requester::Cli,
        })
        .await
        .unwrap();
    let waiting = handle.settled().await;
    assert_eq!(waiting.status, ToolCallStatus::WaitingApproval);
    let summary = waiting.summary.unwrap();
    assert!(summary.contains("not restorable"), "{summary}");
    let approval = f
        .stack
        .gate
        .approvals()
        .get(&waiting.approval_id.unwrap())
        .await
        .unwrap();
    assert!(
        approval.summary.contains("not restorable"),
        "the person sees it"
    );
    assert_eq!(
        std::fs::read(f.path("big.txt")).unwrap().len(),
        5_000,
        "not written yet"
    );
    handle.cancel();
    handle.finished().await;
}

#[tokio::test]
async fn a_change_left_pending_by_a_killed_process_is_settled_against_the_disk() {
    let f = Fixture::new(limits(), false).await;
    std::fs::write(f.path("kept.txt"), "before\n").unwrap();
    std::fs::write(f.path("written.txt"), "before\n").unwrap();
    let begin = |name: &str| Checkpoint {
        call_id: format!("call-{name}"),
        tool: "EditFile".into(),
        requester: Requester::Cli,
        summary: format!("Edit {name}"),
        paths: vec![f.path(name)],
        undoes: None,
    };
    // Killed between the checkpoint and the write: the write never happened.
    f.history
        .begin(Arc::clone(&f.sandbox), begin("kept.txt"))
        .await
        .unwrap();
    // Killed between the write and its record.
    f.history
        .begin(Arc::clone(&f.sandbox), begin("written.txt"))
        .await
        .unwrap();
    std::fs::write(f.path("written.txt"), "after\n").unwrap();
    // Each write cut short in its temporary file (the file tools' atomic writes), beside
    // names that only look like one, which stay.
    let staged = |name: &str| {
        let staged = crate::sandbox::beneath::walk::staging_name(std::ffi::OsStr::new(name));
        f.path(staged.to_str().unwrap())
    };
    let (cut_kept, cut_written) = (staged("kept.txt"), staged("written.txt"));
    std::fs::write(&cut_kept, "half").unwrap();
    std::fs::write(&cut_written, "half").unwrap();
    let unrelated = [staged("other.txt"), f.path(".written.txt.souz-notours.tmp")];
    for path in &unrelated {
        std::fs::write(path, "not a leftover of these changes").unwrap();
    }
    // And a blob written without its row.
    let orphan = super::blobs::hash_of(b"orphan");
    f.history.blobs().put(&orphan, b"orphan").unwrap();
    // The next start.
    let reopened =
        History::open(f.stack.store.clone(), f.stack.config.paths.home(), limits()).unwrap();
    let settled = reopened.reconcile(Arc::clone(&f.sandbox)).await.unwrap();
    assert_eq!(
        (
            settled.completed,
            settled.dropped,
            settled.orphans,
            settled.leftovers
        ),
        (1, 1, 1, 2),
        "{settled:?}"
    );
    assert!(!reopened.blobs().has(&orphan).unwrap());
    assert!(!cut_kept.exists() && !cut_written.exists());
    assert!(unrelated.iter().all(|path| path.exists()));
    let listed = reopened.list(HistoryQuery::default()).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].call_id, "call-written.txt");
    let after = listed[0].paths[0].after.clone().unwrap();
    assert_eq!(after.sha256, Some(super::blobs::hash_of(b"after\n")));
    // History and disk agree: its undo restores the content from before the write.
    let report = reopened
        .undo(
            Arc::clone(&f.sandbox),
            UndoOrder {
                selection: UndoSelection::Change { id: listed[0].id },
                force: false,
                requester: Requester::Cli,
            },
        )
        .await
        .unwrap();
    assert!(report.conflicts.is_empty(), "{report:?}");
    assert_eq!(
        std::fs::read_to_string(f.path("written.txt")).unwrap(),
        "before\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.path("kept.txt")).unwrap(),
        "before\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_writes_into_one_new_folder_are_each_recorded() {
    // Each call's checkpoint names the missing folder, so each fingerprints it after its write
    // while the others' temporary files come and go in it (the race itself is forced in
    // `snapshot::tests`; here every change must end recorded and undoable).
    let f = Fixture::new(limits(), false).await;
    const ROUNDS: usize = 12;
    const FILES: usize = 8;
    for round in 0..ROUNDS {
        let calls = (0..FILES).map(|index| {
            f.call(
                "NewFile",
                json!({"path": Fixture::arg(&format!("new{round}/deep/f{index}.txt")), "text": "x\n"}),
            )
        });
        for (status, text) in futures::future::join_all(calls).await {
            assert_eq!(status, ToolCallStatus::Succeeded, "{text}");
        }
    }
    let pending = f
        .history
        .store()
        .read(|connection| super::records::select(connection, "status = 'pending'", &[], 100))
        .await
        .unwrap();
    assert!(pending.is_empty(), "{pending:?}");
    let listed = f
        .history
        .list(HistoryQuery {
            limit: 1_000,
            ..HistoryQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), ROUNDS * FILES);
    // And all of it goes back: every file and the folders the calls made.
    let report = f
        .history
        .undo(
            Arc::clone(&f.sandbox),
            UndoOrder {
                selection: UndoSelection::Since {
                    since: chrono::Utc::now() - chrono::Duration::hours(1),
                    client: None,
                },
                force: false,
                requester: Requester::Cli,
            },
        )
        .await
        .unwrap();
    assert!(report.conflicts.is_empty(), "{report:?}");
    for round in 0..ROUNDS {
        assert!(!f.path(&format!("new{round}")).exists(), "round {round}");
    }
}

#[tokio::test]
async fn changes_and_undos_are_announced_on_the_event_bus() {
    use souz_protocol::RuntimeEvent;
    let f = Fixture::new(limits(), false).await;
    f.history.announce_on(f.stack.events.clone());
    let start = f.stack.events.last_seq().await.unwrap();
    std::fs::write(f.path("b.txt"), "b one\n").unwrap();
    let edit = f
        .call(
            "EditFile",
            json!({"path": Fixture::arg("b.txt"), "oldString": "one", "newString": "two"}),
        )
        .await;
    assert_eq!(edit.0, ToolCallStatus::Succeeded, "{edit:?}");
    let listed = f.history.list(HistoryQuery::default()).await.unwrap();
    let report = f
        .undo(UndoSelection::Change { id: listed[0].id }, false)
        .await;
    assert_eq!(report.undone.len(), 1, "{report:?}");
    let history_events: Vec<RuntimeEvent> = f
        .stack
        .events
        .replay(start, 1_000)
        .await
        .unwrap()
        .into_iter()
        .map(|envelope| envelope.event)
        .filter(|event| event.kind().starts_with("history."))
        .collect();
    let path = f.path("b.txt").to_string_lossy().into_owned();
    match history_events.as_slice() {
        [
            RuntimeEvent::HistoryChangeRecorded {
                change_id,
                tool,
                client,
                paths,
                undoes: None,
                ..
            },
            RuntimeEvent::HistoryChangeRecorded {
                change_id: undo_id,
                tool: undo_tool,
                paths: undo_paths,
                undoes: Some(undoes),
                ..
            },
            RuntimeEvent::HistoryUndone {
                client: undo_client,
                undone,
                forced: false,
            },
        ] => {
            assert_eq!(
                (*change_id, tool.as_str(), client.as_str()),
                (listed[0].id, "EditFile", "cli")
            );
            assert_eq!(paths, &vec![path.clone()]);
            assert_eq!((undo_tool.as_str(), *undoes), ("Undo", listed[0].id));
            assert_eq!(undo_paths, &vec![path]);
            assert_eq!(undo_client, "cli");
            assert_eq!(undone, &report.undone);
            assert_eq!(undone[0].undo_id, *undo_id);
        }
        other => panic!("{other:#?}"),
    }
}
