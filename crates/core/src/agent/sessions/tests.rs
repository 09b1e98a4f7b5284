//! History splices: the smallest change between two histories, applied back exactly.

use super::*;

fn user(text: &str) -> Message {
    Message::user(text)
}

#[test]
fn equal_histories_need_no_change() {
    let history = vec![Message::system("s"), user("a")];
    assert_eq!(HistoryChange::between(&history, &history), None);
    assert_eq!(HistoryChange::between(&[], &[]), None);
}

/// Before, after, and the expected (at, removed, inserted count).
type Case = (Vec<Message>, Vec<Message>, (usize, usize, usize));

#[test]
fn changes_are_one_small_splice_that_applies_back() {
    let cases: Vec<Case> = vec![
        // Appending.
        (
            vec![user("a")],
            vec![user("a"), user("b"), user("c")],
            (1, 0, 2),
        ),
        // Rewriting the first (system) message only.
        (
            vec![Message::system("old"), user("a"), user("b")],
            vec![Message::system("new"), user("a"), user("b")],
            (0, 1, 1),
        ),
        // Inserting before the last message (injected context).
        (
            vec![user("a"), user("now")],
            vec![user("a"), user("ctx"), user("now")],
            (1, 0, 1),
        ),
        // Clearing.
        (vec![user("a"), user("b")], vec![], (0, 2, 0)),
        // Replacing all but the last (summary).
        (
            vec![user("a"), user("b"), user("c"), user("last")],
            vec![
                Message::system("s"),
                Message::assistant("dump"),
                user("last"),
            ],
            (0, 3, 2),
        ),
        // Repeated messages: the suffix never overlaps the prefix.
        (vec![user("x")], vec![user("x"), user("x")], (1, 0, 1)),
    ];
    for (before, after, (at, removed, inserted)) in cases {
        let change = HistoryChange::between(&before, &after).unwrap();
        assert_eq!(
            (change.at, change.removed, change.inserted.len()),
            (at, removed, inserted),
            "{before:?} -> {after:?}"
        );
        let mut replayed = before.clone();
        change.apply(&mut replayed).unwrap();
        assert_eq!(replayed, after);
    }
}

#[test]
fn a_change_that_does_not_fit_is_refused() {
    let change = HistoryChange {
        at: 2,
        removed: 1,
        inserted: vec![],
    };
    let mut history = vec![user("only one")];
    assert!(change.apply(&mut history).is_err());
    assert_eq!(history, vec![user("only one")], "nothing was changed");
}
