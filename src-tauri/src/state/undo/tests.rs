//! The words of turn-end and undo notifications, and what counts as undoable.

use souz_protocol::Requester;
use souz_protocol::history::{
    ChangeStatus, ChangedPath, HistoryChange, PathKind, PathSnapshot, UndoConflict, UndoReport,
    UndoneChange,
};
use souz_protocol::language::Language;

use super::*;
use crate::texts::set_language;

fn snapshot(kind: PathKind) -> PathSnapshot {
    PathSnapshot {
        kind,
        size: None,
        mode: None,
        sha256: None,
        kept: true,
    }
}

fn path(name: &str, created_parent: bool) -> ChangedPath {
    ChangedPath {
        path: name.into(),
        before: snapshot(PathKind::Absent),
        after: Some(snapshot(PathKind::File)),
        created_parent,
    }
}

fn change(id: i64, status: ChangeStatus, paths: Vec<ChangedPath>) -> HistoryChange {
    HistoryChange {
        id,
        call_id: format!("call-{id}"),
        tool: "NewFile".into(),
        requester: Requester::Chat {
            chat_id: "c1".into(),
        },
        client: "souz".into(),
        chat_id: Some("c1".into()),
        execution_id: Some("e1".into()),
        summary: "wrote a file".into(),
        status,
        undoes: None,
        undone_by: None,
        created_at: chrono::Utc::now(),
        paths,
    }
}

fn conflict(change_id: i64, name: &str) -> UndoConflict {
    UndoConflict {
        change_id,
        path: name.into(),
        before: snapshot(PathKind::Absent),
        wrote: snapshot(PathKind::File),
        now: snapshot(PathKind::File),
        souz_diff: None,
        since_diff: None,
    }
}

#[test]
fn only_done_changes_count_and_each_file_once() {
    let changes = [
        change(3, ChangeStatus::Done, vec![path("/h/a.txt", false)]),
        // The same file edited again, and a new one in a folder made on the way.
        change(
            2,
            ChangeStatus::Done,
            vec![
                path("/h/a.txt", false),
                path("/h/new", true),
                path("/h/new/b.txt", false),
            ],
        ),
        // Undone already: cannot be undone again.
        change(1, ChangeStatus::Undone, vec![path("/h/c.txt", false)]),
    ];
    let counted = TurnChanges::of(&changes);
    assert_eq!(
        counted,
        TurnChanges {
            changes: 2,
            files: 2
        }
    );
    assert!(counted.undoable());
    let nothing = TurnChanges::of(&[change(
        1,
        ChangeStatus::Undone,
        vec![path("/h/c.txt", false)],
    )]);
    assert!(!nothing.undoable(), "{nothing:?}");
    assert!(!TurnChanges::of(&[]).undoable());
}

#[test]
fn the_turn_end_says_how_many_files_changed_in_english_and_russian() {
    let three = TurnChanges {
        changes: 4,
        files: 3,
    };
    set_language(Language::En);
    assert_eq!(
        turn_ended_text("finished", Some("Trip to Kazan"), three),
        (
            "Agent turn finished".to_owned(),
            "Trip to Kazan — changed 3 files".to_owned()
        )
    );
    assert_eq!(
        turn_ended_text(
            "failed",
            None,
            TurnChanges {
                changes: 1,
                files: 1
            }
        ),
        (
            "Agent turn failed".to_owned(),
            "A chat — changed 1 file".to_owned()
        )
    );
    // Nothing to undo: the chat only, no count.
    assert_eq!(
        turn_ended_text("cancelled", Some("Trip"), TurnChanges::default()),
        ("Agent turn cancelled".to_owned(), "Trip".to_owned())
    );
    set_language(Language::Ru);
    assert_eq!(
        turn_ended_text("finished", Some("Поездка"), three),
        (
            "Ход агента завершён".to_owned(),
            "Поездка — агент изменил 3 файла".to_owned()
        )
    );
    assert_eq!(
        turn_ended_text(
            "finished",
            None,
            TurnChanges {
                changes: 5,
                files: 5
            }
        )
        .1,
        "Чат — агент изменил 5 файлов"
    );
    set_language(Language::En);
}

#[test]
fn an_undo_is_reported_as_undone_refused_for_conflicts_or_failed() {
    let undone = UndoOutcome::of(Ok(UndoReport {
        undone: (1..=3)
            .map(|id| UndoneChange {
                change_id: id,
                undo_id: id + 10,
            })
            .collect(),
        conflicts: Vec::new(),
        notes: vec!["kept the folder /h/new: it is not empty".into()],
    }));
    assert!(!undone.shows_conflicts());
    // The same path in two changes is one file.
    let refused = UndoOutcome::of(Ok(UndoReport {
        undone: Vec::new(),
        conflicts: vec![conflict(2, "/h/a.txt"), conflict(1, "/h/a.txt")],
        notes: Vec::new(),
    }));
    assert_eq!(refused, UndoOutcome::Conflicts { files: 1 });
    assert!(refused.shows_conflicts());
    let failed = UndoOutcome::of(Err("change 4 is undone already".into()));

    set_language(Language::En);
    assert_eq!(
        undo_text(&undone),
        (
            "Undid 3 changes".to_owned(),
            "The files are as they were before the turn.\nkept the folder /h/new: it is not empty"
                .to_owned()
        )
    );
    assert_eq!(
        undo_text(&refused),
        (
            "Could not undo".to_owned(),
            "1 file changed since — open History".to_owned()
        )
    );
    assert_eq!(
        undo_text(&failed),
        (
            "Could not undo".to_owned(),
            "change 4 is undone already".to_owned()
        )
    );
    let none = UndoOutcome::of(Ok(UndoReport::default()));
    assert_eq!(undo_text(&none).0, "Nothing was undone");

    set_language(Language::Ru);
    assert_eq!(undo_text(&undone).0, "Отменено: 3 изменения");
    let one = UndoOutcome::Undone {
        changes: 1,
        notes: Vec::new(),
    };
    assert_eq!(
        undo_text(&one),
        (
            "Отменено: 1 изменение".to_owned(),
            "Файлы снова такие, какими были до хода.".to_owned()
        )
    );
    assert_eq!(
        undo_text(&refused),
        (
            "Не удалось отменить".to_owned(),
            "После хода изменились файлы (1) — откройте Историю".to_owned()
        )
    );
    set_language(Language::En);
}

#[test]
fn routes_name_the_chat_and_the_turns_history() {
    assert_eq!(chat_route("c 1"), "/chat/c%201");
    assert_eq!(history_turn_route("e1/x"), "/history/turn/e1%2Fx");
}
