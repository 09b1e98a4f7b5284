//! Messages Souz delivered to the person through another channel between this conversation's
//! turns (a Telegram message that `SendMessageToChannel` sent from another chat, original
//! §1.15), told to the agent on the conversation's next turn.
//!
//! Why: the conversation the agent continues (`agent_conversations`) is written only by a
//! turn's own steps, while such a message is recorded in the chat by
//! [`Chats::record_delivered`](crate::chat::Chats::record_delivered) outside any turn. Without
//! this, the agent would not know what it told the person there.
//!
//! Design (the smallest honest fix): the chat layer hands each turn the messages delivered
//! into its chat since the chat's previous execution was created
//! ([`TurnRequest::delivered`](super::TurnRequest::delivered), oldest first, at most
//! `chat::delivered::MAX_NOTES`); the turn adds each one the history does not hold yet as an
//! assistant message marked as delivered through that channel ([`Delivered::note`]), after the
//! history it continues and before the person's input. The notes enter the history through the
//! turn's `turn.start` step, so they are stored and replayed with the turn and every later
//! turn sees them.
//!
//! Invariants:
//! - A note is added once: the window overlaps the previous turn's (messages delivered between
//!   the previous execution's creation and its turn's start were told to that turn), and a note
//!   the history already holds, word for word, is skipped.
//! - A fresh conversation first gets its system prompt, as the input node would give it.
//!
//! Limits, on purpose: a turn that never finished (the process died in it) stores nothing, so
//! the messages delivered before it and told only to it are not told again; a note the history
//! lost to summarizing may be told again while it is inside the window.

use crate::llm::Message;

/// A message delivered to the person through another channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The channel's type (`telegram`).
    pub channel_type: String,
    /// What was sent.
    pub content: String,
}

impl Delivered {
    /// How the agent is told of it: an assistant message saying where it went.
    pub fn note(&self) -> String {
        format!(
            "[Delivered to the person through {} (SendMessageToChannel), outside this \
             conversation's turns:]\n{}",
            self.channel_type, self.content
        )
    }
}

/// Adds to `history` each of `delivered` (oldest first) it does not hold yet, as an assistant
/// message; a fresh history first gets `system_prompt`.
pub(crate) fn add_notes(
    history: &mut Vec<Message>,
    delivered: &[Delivered],
    system_prompt: impl FnOnce() -> String,
) {
    let notes: Vec<String> = delivered
        .iter()
        .map(Delivered::note)
        .filter(|note| {
            !history.iter().any(
                |message| matches!(message, Message::Assistant { content, .. } if content == note),
            )
        })
        .collect();
    if notes.is_empty() {
        return;
    }
    if history.is_empty() {
        history.push(Message::system(system_prompt()));
    }
    history.extend(notes.into_iter().map(Message::assistant));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivered(content: &str) -> Delivered {
        Delivered {
            channel_type: "telegram".into(),
            content: content.into(),
        }
    }

    #[test]
    fn notes_are_added_once_after_the_history_and_a_fresh_one_gets_its_system_prompt() {
        let mut history = Vec::new();
        add_notes(&mut history, &[delivered("The build is green.")], || {
            "system".into()
        });
        assert_eq!(history.len(), 2, "{history:?}");
        assert_eq!(history[0], Message::system("system"));
        let Message::Assistant { content, .. } = &history[1] else {
            panic!("{history:?}");
        };
        assert!(content.contains("through telegram"), "{content}");
        assert!(content.ends_with("\nThe build is green."), "{content}");

        // The next turn's window still holds it, and a new one came.
        add_notes(
            &mut history,
            &[delivered("The build is green."), delivered("Deployed.")],
            || unreachable!("not a fresh history"),
        );
        assert_eq!(history.len(), 3, "{history:?}");
        assert_eq!(
            history[2],
            Message::assistant(delivered("Deployed.").note())
        );

        let before = history.clone();
        add_notes(&mut history, &[], || unreachable!());
        assert_eq!(history, before, "nothing delivered: nothing added");
    }
}
