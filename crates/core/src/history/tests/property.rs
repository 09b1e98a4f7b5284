//! Random sequences of up to 1,000 file-tool calls through the real gate over a small tree
//! (create, edit, move, delete, nested folders, a binary file, a symlink, permission bits),
//! then one undo of everything since the start: the tree is byte-identical to the start.

use proptest::prelude::*;
use serde_json::json;
use souz_protocol::history::UndoSelection;

use super::{Fixture, limits, tree};

#[derive(Debug, Clone)]
enum Op {
    Create {
        folder: usize,
        name: usize,
        text: String,
    },
    MakeFolder {
        folder: usize,
        name: usize,
    },
    Edit {
        file: usize,
        text: String,
    },
    Move {
        source: usize,
        folder: usize,
        name: usize,
    },
    Delete {
        target: usize,
    },
}

const NAMES: [&str; 6] = ["a.txt", "b.md", "c.txt", "d", "e", "f.md"];

fn op() -> impl Strategy<Value = Op> {
    let text = "[a-zа-я0-9 \n]{0,24}";
    prop_oneof![
        3 => (any::<usize>(), any::<usize>(), text).prop_map(|(folder, name, text)| Op::Create { folder, name, text }),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(folder, name)| Op::MakeFolder { folder, name }),
        3 => (any::<usize>(), text).prop_map(|(file, text)| Op::Edit { file, text }),
        2 => (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(source, folder, name)| Op::Move { source, folder, name }),
        1 => any::<usize>().prop_map(|target| Op::Delete { target }),
    ]
}

/// The tree the runs start from.
fn seed(fixture: &Fixture) {
    use std::os::unix::fs::PermissionsExt;
    let write = |relative: &str, content: &[u8], mode: u32| {
        let path = fixture.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    write("readme.md", b"# readme\nline two\n", 0o644);
    write("docs/guide.txt", "руководство\n".as_bytes(), 0o600);
    write("docs/deep/run.md", b"#!/bin/sh\necho hi\n", 0o755);
    write("bin/data.bin", &[0, 1, 2, 255, 254, 0, 10, 13], 0o640);
    std::fs::create_dir_all(fixture.path("empty")).unwrap();
    std::fs::set_permissions(
        fixture.path("empty"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::os::unix::fs::symlink("readme.md", fixture.path("link.md")).unwrap();
}

/// Runs `op` against the tree as it is now (indices pick among what exists).
async fn apply(fixture: &Fixture, op: &Op) {
    let now = tree(&fixture.root);
    let folders: Vec<String> = std::iter::once(String::new())
        .chain(
            now.iter()
                .filter(|(_, v)| v.0 == "folder")
                .map(|(k, _)| format!("{k}/")),
        )
        .collect();
    let files: Vec<&String> = now
        .iter()
        .filter(|(_, v)| v.0 == "file")
        .map(|(k, _)| k)
        .collect();
    let all: Vec<&String> = now.keys().collect();
    let pick = |list_len: usize, index: usize| index % list_len.max(1);
    let _ = match op {
        Op::Create { folder, name, text } => {
            let path = format!(
                "{}{}",
                folders[pick(folders.len(), *folder)],
                NAMES[name % NAMES.len()]
            );
            fixture
                .call(
                    "NewFile",
                    json!({"path": Fixture::arg(&path), "text": text}),
                )
                .await
        }
        Op::MakeFolder { folder, name } => {
            let path = format!(
                "{}{}/",
                folders[pick(folders.len(), *folder)],
                NAMES[name % NAMES.len()]
            );
            fixture
                .call("NewFile", json!({"path": Fixture::arg(&path)}))
                .await
        }
        Op::Edit { file, text } => {
            if files.is_empty() {
                return;
            }
            let path = files[pick(files.len(), *file)];
            let Ok(current) = String::from_utf8(now[path].2.clone()) else {
                return;
            };
            if current.is_empty() {
                return;
            }
            fixture
                .call(
                    "EditFile",
                    json!({"path": Fixture::arg(path), "oldString": current, "newString": text}),
                )
                .await
        }
        Op::Move {
            source,
            folder,
            name,
        } => {
            if all.is_empty() {
                return;
            }
            let from = all[pick(all.len(), *source)];
            let to = format!(
                "{}{}",
                folders[pick(folders.len(), *folder)],
                NAMES[name % NAMES.len()]
            );
            fixture
                .call(
                    "MoveFile",
                    json!({"sourcePath": Fixture::arg(from), "destinationPath": Fixture::arg(&to)}),
                )
                .await
        }
        Op::Delete { target } => {
            if all.is_empty() {
                return;
            }
            let path = all[pick(all.len(), *target)];
            fixture
                .call("DeleteFile", json!({"path": Fixture::arg(path)}))
                .await
        }
    };
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let fixture = Fixture::new(limits(), false).await;
        seed(&fixture);
        let start = tree(&fixture.root);
        let since = chrono::Utc::now() - chrono::Duration::seconds(1);
        for op in ops {
            apply(&fixture, op).await;
        }
        let changed = tree(&fixture.root) != start;
        let report = fixture
            .history
            .undo(
                std::sync::Arc::clone(&fixture.sandbox),
                super::UndoOrder {
                    selection: UndoSelection::Since {
                        since,
                        client: None,
                    },
                    force: false,
                    requester: souz_protocol::Requester::Cli,
                },
            )
            .await;
        match report {
            Ok(report) => prop_assert!(
                report.conflicts.is_empty(),
                "{:?}\nnotes: {:?}\nundone: {}",
                report.conflicts,
                report.notes,
                report.undone.len()
            ),
            // Nothing was recorded: then nothing may have changed either.
            Err(error) => prop_assert!(!changed, "{error}"),
        }
        let end = tree(&fixture.root);
        prop_assert!(end == start, "{:#?}\n!=\n{:#?}", end, start);
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 6,
        max_shrink_iters: 64,
        ..ProptestConfig::default()
    })]

    #[test]
    fn undoing_everything_in_reverse_gives_back_the_tree_byte_for_byte(
        ops in prop::collection::vec(op(), 1..=120)
    ) {
        run(&ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1,
        max_shrink_iters: 16,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_thousand_calls_undone_in_reverse_give_back_the_tree_byte_for_byte(
        ops in prop::collection::vec(op(), 1000..=1000)
    ) {
        run(&ops)?;
    }
}
