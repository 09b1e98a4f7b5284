//! An answer streamed into Telegram by editing its message at a throttled rate. The forwarder
//! keeps each turn's [`Draft`] (the text of every model request not thrown away, then how the
//! turn ended) and a task per answer ([`run`]) makes the chat's messages show it: the first
//! text is sent at once, then at most one round of edits per `edit_interval`; a text that
//! outgrows 4,096 UTF-16 units is split on paragraph boundaries ([`split_message`]), the full
//! message keeps its part and the rest goes on in a new one.
//!
//! Invariants:
//! - What the messages show is reconciled with the latest draft, never replayed delta by delta:
//!   edits skipped (throttled, or waited out after a 429's `retry_after`) lose nothing, and an
//!   edit or message is made only where what is shown differs from what should be.
//! - Once the turn ended, the messages of its last request show the final answer exactly (split
//!   as [`split_message`] splits it), unless Telegram refuses outright or stays unreachable for
//!   [`FINAL_ATTEMPTS`] tries in a row; then a note follows if the ending has one.
//! - A request's text thrown away (steering) has its messages deleted; a draft keeps at most
//!   [`MAX_ATTEMPTS`] requests of [`MAX_DRAFT_BYTES`] each, and an answer at most
//!   [`MAX_MESSAGES`] messages (the rest is cut with a note), so a runaway model costs bounded
//!   memory and requests.
//! - At most [`MAX_STREAMS`] answers stream at once (one per turn of the one linked chat);
//!   dropping a draft's sender stops its task without further requests.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::watch;

use super::Channel;
use super::api::TelegramError;
use super::outbound::{MAX_SEND_WAIT, send_text};
use super::poll::{Backoff, pause};
use super::text::{MAX_MESSAGE_UNITS, escape_markdown_v2, split_message};

/// Model requests (attempts) a draft keeps; a later one replaces the last.
const MAX_ATTEMPTS: usize = 32;
/// Bytes of text kept per attempt; more is not shown until the final answer.
const MAX_DRAFT_BYTES: usize = 256 * 1024;
/// Messages one answer may take; the rest of a longer one is cut with a note.
pub(crate) const MAX_MESSAGES: usize = 40;
/// Answers streaming at once.
const MAX_STREAMS: usize = 4;
/// Failed rounds in a row (network) before a stream gives up.
const FINAL_ATTEMPTS: usize = 6;
/// What ends an answer cut at [`MAX_MESSAGES`].
const CUT: &str = "[…]";

/// How a turn ended, for its stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending {
    /// The final answer, replacing the last request's streamed text (`None`: keep it).
    answer: Option<String>,
    /// Sent after the answer, once it is shown.
    note: Option<String>,
}

impl Ending {
    /// The turn answered `answer`; `done` is sent instead when nothing at all was said.
    pub(crate) fn answered(answer: String, done: &str) -> Self {
        let note = answer.trim().is_empty().then(|| done.to_owned());
        Self {
            answer: Some(answer),
            note,
        }
    }

    /// The turn ended without an answer (failed, cancelled): what was streamed stays, `note`
    /// follows.
    pub(crate) fn note(note: String) -> Self {
        Self {
            answer: None,
            note: Some(note),
        }
    }
}

/// What an answer's messages should show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Draft {
    /// `(attempt, text)` of each model request not thrown away, in order.
    attempts: Vec<(u64, String)>,
    /// The stored answer (`message.completed`), once seen.
    completed: Option<String>,
    /// How the turn ended, once it did.
    ending: Option<Ending>,
}

impl Draft {
    /// More text of `attempt`.
    pub(crate) fn push(&mut self, attempt: u64, delta: &str) {
        let index = match self.attempts.iter().position(|(seen, _)| *seen == attempt) {
            Some(index) => index,
            None if self.attempts.len() < MAX_ATTEMPTS => {
                self.attempts.push((attempt, String::new()));
                self.attempts.len() - 1
            }
            None => {
                let last = self.attempts.len() - 1;
                self.attempts[last] = (attempt, String::new());
                last
            }
        };
        let text = &mut self.attempts[index].1;
        let mut room = MAX_DRAFT_BYTES.saturating_sub(text.len()).min(delta.len());
        while !delta.is_char_boundary(room) {
            room -= 1;
        }
        text.push_str(&delta[..room]);
    }

    /// `attempt`'s text was thrown away.
    pub(crate) fn discard(&mut self, attempt: u64) {
        self.attempts.retain(|(seen, _)| *seen != attempt);
    }

    /// The stored answer.
    pub(crate) fn complete(&mut self, answer: String) {
        self.completed = Some(answer);
    }

    /// The turn ended.
    pub(crate) fn end(&mut self, ending: Ending) {
        self.ending = Some(ending);
    }

    /// `(attempt, text)` to show: the last attempt's text is the final answer once known.
    fn texts(&self) -> Vec<(u64, &str)> {
        let mut texts: Vec<(u64, &str)> = self
            .attempts
            .iter()
            .map(|(attempt, text)| (*attempt, text.as_str()))
            .collect();
        let answer = self
            .ending
            .as_ref()
            .and_then(|ending| ending.answer.as_deref());
        if let Some(answer) = answer {
            match texts.last_mut() {
                Some(last) => last.1 = answer,
                None => texts.push((0, answer)),
            }
        }
        texts
    }
}

/// The drafts of the answers streaming now, each with its task.
pub(crate) struct Answers {
    channel: Arc<Channel>,
    streams: VecDeque<(String, watch::Sender<Draft>)>,
}

impl Answers {
    pub(crate) fn new(channel: Arc<Channel>) -> Self {
        Self {
            channel,
            streams: VecDeque::new(),
        }
    }

    /// Changes the draft of `execution`'s answer (starting its stream to `telegram_chat`).
    pub(crate) fn draft(
        &mut self,
        execution: &str,
        telegram_chat: i64,
        change: impl FnOnce(&mut Draft),
    ) {
        let sender = self.sender(execution, telegram_chat);
        sender.send_modify(change);
    }

    /// The stored answer of `execution`, when it was seen.
    pub(crate) fn completed(&self, execution: &str) -> Option<String> {
        self.streams
            .iter()
            .find(|(id, _)| id == execution)
            .and_then(|(_, sender)| sender.borrow().completed.clone())
    }

    /// Ends `execution`'s answer: its stream shows the end, then stops.
    pub(crate) fn end(&mut self, execution: &str, telegram_chat: i64, ending: Ending) {
        self.draft(execution, telegram_chat, |draft| draft.end(ending));
        // The task holds the receiver until it has shown the end.
        self.forget(execution);
    }

    /// Forgets `execution`'s draft; a stream not yet ended stops.
    pub(crate) fn forget(&mut self, execution: &str) {
        self.streams.retain(|(id, _)| id != execution);
    }

    fn sender(&mut self, execution: &str, telegram_chat: i64) -> &watch::Sender<Draft> {
        let index = match self.streams.iter().position(|(id, _)| id == execution) {
            Some(index) => index,
            None => {
                if self.streams.len() >= MAX_STREAMS {
                    self.streams.pop_front();
                }
                let (sender, receiver) = watch::channel(Draft::default());
                let channel = Arc::clone(&self.channel);
                self.channel
                    .handle
                    .spawn(run(channel, telegram_chat, receiver));
                self.streams.push_back((execution.to_owned(), sender));
                self.streams.len() - 1
            }
        };
        &self.streams[index].1
    }
}

/// Keeps `chat`'s messages showing `draft` until its turn ended and the end is shown (or the
/// draft is dropped, or the runtime stops).
pub(crate) async fn run(channel: Arc<Channel>, chat: i64, mut draft: watch::Receiver<Draft>) {
    let mut shown = Shown::default();
    let mut backoff = Backoff::new();
    let mut failures = 0;
    loop {
        let current = draft.borrow_and_update().clone();
        if current.ending.is_none() && draft.has_changed().is_err() {
            // Dropped before its end (unlinked, or pushed out by newer answers): stop here.
            return;
        }
        let outcome = shown.reconcile(&channel, chat, &current).await;
        let settled = outcome.is_ok();
        let wait = match outcome {
            Ok(()) => {
                if let Some(ending) = &current.ending {
                    finish(&channel, chat, &shown, ending).await;
                    return;
                }
                backoff.reset();
                failures = 0;
                channel.edit_interval
            }
            Err(TelegramError::RateLimited(wait)) if wait <= MAX_SEND_WAIT => {
                tracing::info!(?wait, "telegram: streaming waits out a rate limit");
                wait
            }
            Err(TelegramError::Network(error)) if failures + 1 < FINAL_ATTEMPTS => {
                failures += 1;
                let wait = backoff.failed();
                tracing::info!(%error, ?wait, "telegram: streaming again after a wait");
                wait
            }
            Err(error) => {
                tracing::warn!(%error, "telegram: an answer stopped streaming");
                return;
            }
        };
        if !pause(wait, &channel.shutdown).await {
            return;
        }
        if settled && current.ending.is_none() {
            // Shown as drafted: wait for news (or for the forwarder to drop the draft).
            tokio::select! {
                () = channel.shutdown.cancelled() => return,
                changed = draft.changed() => if changed.is_err() { return },
            }
        }
    }
}

/// Sends the ending's note (and says when the answer was cut), after the answer.
async fn finish(channel: &Channel, chat: i64, shown: &Shown, ending: &Ending) {
    let note = match (&ending.note, shown.cut) {
        (Some(note), true) => Some(format!("{CUT}\n\n{note}")),
        (Some(note), false) => Some(note.clone()),
        (None, true) => Some(CUT.to_owned()),
        (None, false) => None,
    };
    if let Some(note) = note
        && let Err(error) = send_text(channel, chat, &note).await
    {
        tracing::warn!(%error, "telegram: the end of an answer was not delivered");
    }
}

/// The messages an answer has in Telegram: per attempt, `(message id, plain text shown)`.
#[derive(Debug, Default)]
struct Shown {
    attempts: Vec<(u64, Vec<(i32, String)>)>,
    /// Whether the answer had more than [`MAX_MESSAGES`] messages of text.
    cut: bool,
}

impl Shown {
    /// Makes the messages show `draft`: deletes those of attempts thrown away, edits those
    /// whose text differs, sends what is new, deletes what is left over. Stops at the first
    /// failure; what was done is kept, so the next round goes on from there.
    async fn reconcile(
        &mut self,
        channel: &Channel,
        chat: i64,
        draft: &Draft,
    ) -> Result<(), TelegramError> {
        let texts = draft.texts();
        while let Some(index) = self
            .attempts
            .iter()
            .position(|(attempt, _)| texts.iter().all(|(kept, _)| kept != attempt))
        {
            delete_from(channel, chat, &mut self.attempts[index].1, 0).await?;
            self.attempts.remove(index);
        }
        let mut budget = MAX_MESSAGES;
        for (attempt, text) in texts {
            let index = match self.attempts.iter().position(|(seen, _)| *seen == attempt) {
                Some(index) => index,
                None => {
                    self.attempts.push((attempt, Vec::new()));
                    self.attempts.len() - 1
                }
            };
            let mut chunks = split_message(text, MAX_MESSAGE_UNITS);
            if chunks.len() > budget {
                chunks.truncate(budget);
                self.cut = true;
            }
            budget -= chunks.len();
            let messages = &mut self.attempts[index].1;
            show(channel, chat, messages, &chunks).await?;
            delete_from(channel, chat, messages, chunks.len()).await?;
        }
        Ok(())
    }
}

/// Makes `messages` show `chunks` (editing, then sending what is new).
async fn show(
    channel: &Channel,
    chat: i64,
    messages: &mut Vec<(i32, String)>,
    chunks: &[String],
) -> Result<(), TelegramError> {
    for (index, chunk) in chunks.iter().enumerate() {
        match messages.get_mut(index) {
            Some((_, shown)) if shown == chunk => {}
            Some((id, shown)) => {
                match channel
                    .api
                    .edit(chat, *id, &escape_markdown_v2(chunk))
                    .await
                {
                    Ok(()) => {}
                    // The person deleted it: nothing to show there any more.
                    Err(TelegramError::Refused { description, .. })
                        if description.contains("message to edit not found") => {}
                    Err(error) => return Err(error),
                }
                chunk.clone_into(shown);
            }
            None => {
                let id = channel
                    .api
                    .send(chat, &escape_markdown_v2(chunk), true)
                    .await?;
                messages.push((id, chunk.clone()));
            }
        }
    }
    Ok(())
}

/// Deletes `messages` from index `keep` on, last first.
async fn delete_from(
    channel: &Channel,
    chat: i64,
    messages: &mut Vec<(i32, String)>,
    keep: usize,
) -> Result<(), TelegramError> {
    while messages.len() > keep {
        let Some((id, _)) = messages.last() else {
            break;
        };
        match channel.api.delete(chat, *id).await {
            Ok(()) | Err(TelegramError::Refused { .. }) => {}
            Err(error) => return Err(error),
        }
        messages.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_keeps_attempts_in_order_and_the_final_answer_replaces_the_last() {
        let mut draft = Draft::default();
        draft.push(1, "Let me ");
        draft.push(1, "look.");
        draft.push(2, "Thrown");
        draft.discard(2);
        draft.push(3, "The answer");
        assert_eq!(draft.texts(), [(1, "Let me look."), (3, "The answer")]);
        draft.ending = Some(Ending::answered("The answer, in full.".into(), "Done."));
        assert_eq!(
            draft.texts(),
            [(1, "Let me look."), (3, "The answer, in full.")]
        );
        let ending = Ending::answered(" ".into(), "Done.");
        assert_eq!(ending.note.as_deref(), Some("Done."));
    }

    #[test]
    fn a_draft_is_bounded() {
        let mut draft = Draft::default();
        for attempt in 0..100 {
            draft.push(attempt, "x");
        }
        assert_eq!(draft.attempts.len(), MAX_ATTEMPTS);
        assert_eq!(draft.attempts.last().map(|(attempt, _)| *attempt), Some(99));
        let big = "я".repeat(MAX_DRAFT_BYTES);
        draft.push(99, &big);
        let kept = &draft.attempts.last().unwrap().1;
        assert_eq!(kept.len(), MAX_DRAFT_BYTES - 1, "whole characters only");
        draft.push(99, "zz");
        draft.push(99, "more");
        let kept = &draft.attempts.last().unwrap().1;
        assert_eq!(kept.len(), MAX_DRAFT_BYTES);
        assert!(kept.starts_with("xя") && kept.ends_with("яz"));
    }
}
