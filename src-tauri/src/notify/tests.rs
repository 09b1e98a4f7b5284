//! What a notification is about, and the actions that follows: Undo only on a turn's end that
//! left changes to undo; the subject survives the trip through the notification's `extra`
//! (Linux) and its request identifier (macOS).

use std::collections::HashMap;

use super::*;

fn round_trip(subject: &Subject) -> Option<Subject> {
    let extra: HashMap<&str, String> = subject
        .extras()
        .into_iter()
        .map(|(key, value)| (key, value.to_owned()))
        .collect();
    Subject::from_extras(|key| extra.get(key).cloned())
}

#[test]
fn a_turn_end_offers_undo_only_when_it_left_changes_to_undo() {
    let changed = TurnChanges {
        changes: 2,
        files: 1,
    };
    let with_changes = Subject::turn_end("chat-1", "exec-1", changed);
    assert_eq!(
        with_changes,
        Subject::Turn {
            execution_id: "exec-1".into(),
            chat_id: "chat-1".into()
        }
    );
    assert_eq!(with_changes.actions(), Some(TURN_ACTIONS));

    // Nothing to undo (no writes, or all undone already): a click opens the chat, no action.
    let without = Subject::turn_end("chat-1", "exec-1", TurnChanges::default());
    assert_eq!(without, Subject::Route("/chat/chat-1".into()));
    assert_eq!(without.actions(), None);

    assert_eq!(
        Subject::Approval("a1".into()).actions(),
        Some(APPROVAL_ACTIONS)
    );
    assert_eq!(Subject::Question("o1".into()).actions(), None);
}

#[test]
fn subjects_survive_the_notifications_extra_and_identifier() {
    let subjects = [
        Subject::Approval("a1".into()),
        Subject::Question("o1".into()),
        Subject::Route("/schedules/s1/runs".into()),
        Subject::Turn {
            execution_id: "0193a7c2-6f1e-7b1a-9a64-8f0f5b2b1c3d".into(),
            chat_id: "0193a7c2-0000-7000-8000-000000000001".into(),
        },
    ];
    for subject in &subjects {
        assert_eq!(round_trip(subject).as_ref(), Some(subject), "extra");
        assert_eq!(
            Subject::from_identifier(&subject.identifier()).as_ref(),
            Some(subject),
            "identifier {}",
            subject.identifier()
        );
    }
    // A turn needs both its execution and its chat.
    assert_eq!(
        Subject::from_extras(|key| (key == "executionId").then(|| "e1".to_owned())),
        None
    );
    assert_eq!(Subject::from_identifier("turn.e1"), None);
    assert_eq!(Subject::from_identifier("other.x"), None);
}

#[test]
fn query_values_are_escaped() {
    assert_eq!(query_value("0193a7c2-6f1e"), "0193a7c2-6f1e");
    assert_eq!(query_value("a&b=c d"), "a%26b%3Dc%20d");
}
