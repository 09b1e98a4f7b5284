//! Steerable input: what a person types while a skills-agent turn is running.
//!
//! A [`Mailbox`] belongs to one turn; a [`Steering`] is the handle callers hold to send it input
//! (none for an agent that cannot be steered). It is the single ordering point between people who
//! submit input and the chat node that consumes it, so every decision that must not race
//! ("is there input?", "may I accept this answer as final?") is one transition under one lock.
//! The lock is a `std::sync::Mutex` that is never held across an `.await`: provider requests and
//! tool calls always run outside it.
//!
//! States: `Open` (accepting) → `Sealed` (the final answer was accepted with an empty queue) or
//! `Closed` (the turn ended any other way). Invariants:
//! - Inputs are kept in FIFO order; a drain takes all of them at once, in order.
//! - Every accepted input bumps the revision; an input is either accepted (and will be drained
//!   by this turn or handed back as undelivered when it ends) or rejected with a reason. None is
//!   silently lost.
//! - [`Mailbox::drain_or_seal`] either drains or seals, atomically with respect to
//!   [`Mailbox::submit`]: an input accepted a moment before the seal is drained, one arriving a
//!   moment after is rejected with [`SteerError::Sealed`].
//! - A [`Reservation`] holds the mailbox open for an input being committed elsewhere (a message
//!   written to the database first): sealing and closing wait until it is published or released.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

/// Why input was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SteerError {
    /// The input is empty or only whitespace.
    #[error("the input is empty")]
    Empty,
    /// The turn accepted its final answer; new input belongs to a new turn.
    #[error("the turn has produced its final answer and takes no more input; start a new turn")]
    Sealed,
    /// The turn is over (finished, failed or cancelled).
    #[error("the turn is over")]
    Closed,
    /// No turn is running in this chat.
    #[error("no turn is running in this chat")]
    NoTurn,
    /// The running agent does not take input while it runs.
    #[error("this agent does not take input while it runs; wait for its answer")]
    Unsupported,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Sealed,
    Closed,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    queue: VecDeque<String>,
    revision: u64,
    reservations: usize,
}

/// What the chat node should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NextStep {
    /// Input is waiting: append it as a user message and ask again.
    Queued(String),
    /// Nothing is waiting: ask the model; `revision` is the input revision it sees.
    Request {
        /// The revision at the moment the queue was found empty.
        revision: u64,
    },
}

/// The input queue of one running turn. See the module documentation.
#[derive(Debug)]
pub(crate) struct Mailbox {
    state: Mutex<State>,
    // Bumped after every transition; waiters subscribe before they look at the state, so a
    // transition between their look and their wait is never missed.
    changed: watch::Sender<u64>,
}

impl Default for Mailbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Mailbox {
    /// An open, empty mailbox.
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                phase: Phase::Open,
                queue: VecDeque::new(),
                revision: 0,
                reservations: 0,
            }),
            changed: watch::channel(0).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn notify(&self) {
        self.changed
            .send_modify(|version| *version = version.wrapping_add(1));
    }

    fn rejection(phase: Phase) -> SteerError {
        match phase {
            Phase::Sealed => SteerError::Sealed,
            Phase::Open | Phase::Closed => SteerError::Closed,
        }
    }

    /// Accepts `input` while the turn is open; returns the new revision.
    pub(crate) fn submit(&self, input: impl Into<String>) -> Result<u64, SteerError> {
        let input = input.into();
        if input.trim().is_empty() {
            return Err(SteerError::Empty);
        }
        let revision = {
            let mut state = self.lock();
            if state.phase != Phase::Open {
                return Err(Self::rejection(state.phase));
            }
            state.queue.push_back(input);
            state.revision += 1;
            state.revision
        };
        self.notify();
        Ok(revision)
    }

    /// Holds the mailbox open for an input that is being committed elsewhere first. Publish it
    /// with [`Reservation::publish`]; dropping the reservation releases it without input.
    pub(crate) fn reserve(self: &Arc<Self>) -> Result<Reservation, SteerError> {
        let mut state = self.lock();
        if state.phase != Phase::Open {
            return Err(Self::rejection(state.phase));
        }
        state.reservations += 1;
        Ok(Reservation {
            mailbox: Some(Arc::clone(self)),
        })
    }

    /// Reserves, runs `commit` (for example: store the message durably), and publishes `input`
    /// only if it succeeded. The commit and the publication run on their own task, so a caller
    /// that gives up while the commit runs cannot lose an input that was committed: it is still
    /// published (or handed back as undelivered when the turn ends).
    pub(crate) async fn submit_after<F, E>(
        self: &Arc<Self>,
        input: String,
        commit: F,
    ) -> Result<u64, SubmitAfterError<E>>
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: Send + 'static,
    {
        if input.trim().is_empty() {
            return Err(SubmitAfterError::Rejected(SteerError::Empty));
        }
        let reservation = self.reserve().map_err(SubmitAfterError::Rejected)?;
        #[allow(
            clippy::disallowed_methods,
            reason = "awaited at once by submit_after: spawned only so that a caller giving up cannot drop a commit half-way"
        )]
        let task = tokio::spawn(async move {
            commit.await.map_err(SubmitAfterError::Commit)?;
            Ok(reservation.publish(input))
        });
        match task.await {
            Ok(result) => result,
            // The commit panicked; the reservation was released when the task unwound.
            Err(_) => Err(SubmitAfterError::Rejected(SteerError::Closed)),
        }
    }

    /// The number of inputs accepted so far.
    pub(crate) fn revision(&self) -> u64 {
        self.lock().revision
    }

    #[cfg(test)]
    /// Whether the mailbox still accepts input.
    pub(crate) fn is_open(&self) -> bool {
        self.lock().phase == Phase::Open
    }

    /// Drains waiting input, or says the model may be asked at the current revision.
    pub(crate) fn next_step(&self) -> Result<NextStep, SteerError> {
        let mut state = self.lock();
        if state.phase != Phase::Open {
            return Err(Self::rejection(state.phase));
        }
        Ok(match Self::drain_locked(&mut state) {
            Some(input) => NextStep::Queued(input),
            None => NextStep::Request {
                revision: state.revision,
            },
        })
    }

    /// Takes every waiting input (in order) as one text, or `None` when nothing waits. The
    /// mailbox stays open.
    pub(crate) fn drain(&self) -> Option<String> {
        Self::drain_locked(&mut self.lock())
    }

    /// Resolves once input waits or the mailbox stopped accepting (cancel-safe).
    pub(crate) async fn input_arrived(&self) {
        let mut changes = self.changed.subscribe();
        loop {
            {
                let state = self.lock();
                if !state.queue.is_empty() || state.phase != Phase::Open {
                    return;
                }
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Drains waiting input; with none waiting and no reservation pending, seals the mailbox
    /// and returns `None`. A pending reservation is waited for first.
    pub(crate) async fn drain_or_seal(&self) -> Option<String> {
        let mut changes = self.changed.subscribe();
        loop {
            {
                let mut state = self.lock();
                if let Some(input) = Self::drain_locked(&mut state) {
                    return Some(input);
                }
                if state.reservations == 0 {
                    if state.phase == Phase::Open {
                        state.phase = Phase::Sealed;
                        drop(state);
                        self.notify();
                    }
                    return None;
                }
            }
            if changes.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Stops accepting input once pending reservations are settled, and returns inputs that
    /// were accepted but never drained (the turn ended before it could read them).
    pub(crate) async fn close(&self) -> Vec<String> {
        let mut changes = self.changed.subscribe();
        loop {
            {
                let mut state = self.lock();
                if state.reservations == 0 {
                    state.phase = Phase::Closed;
                    let undelivered = state.queue.drain(..).collect();
                    drop(state);
                    self.notify();
                    return undelivered;
                }
            }
            if changes.changed().await.is_err() {
                return Vec::new();
            }
        }
    }

    fn drain_locked(state: &mut State) -> Option<String> {
        match state.queue.len() {
            0 => None,
            1 => state.queue.pop_front(),
            _ => {
                let mut text = String::from("<additional_user_messages>\n");
                for (index, message) in state.queue.drain(..).enumerate() {
                    text.push_str(&format!("<message index=\"{}\">\n", index + 1));
                    text.push_str(&message);
                    text.push_str("\n</message>\n");
                }
                text.push_str("</additional_user_messages>");
                Some(text)
            }
        }
    }
}

/// Why [`Mailbox::submit_after`] did not deliver an input.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitAfterError<E> {
    /// The mailbox refused the reservation (nothing was committed).
    #[error(transparent)]
    Rejected(SteerError),
    /// The commit failed; nothing was published.
    #[error("the input could not be committed")]
    Commit(E),
}

/// A pending input slot; see [`Mailbox::reserve`]. Publish or drop it promptly: sealing and
/// the end of the turn wait for it.
#[derive(Debug)]
pub(crate) struct Reservation {
    mailbox: Option<Arc<Mailbox>>,
}

impl Reservation {
    /// Publishes the input and returns the new revision. The reservation kept the mailbox from
    /// sealing and closing, so the input is always accepted: the turn drains it, or its close
    /// hands it back as undelivered.
    pub(crate) fn publish(mut self, input: String) -> u64 {
        let Some(mailbox) = self.mailbox.take() else {
            return 0;
        };
        let revision = {
            let mut state = mailbox.lock();
            state.reservations -= 1;
            state.queue.push_back(input);
            state.revision += 1;
            state.revision
        };
        mailbox.notify();
        revision
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(mailbox) = self.mailbox.take() {
            mailbox.lock().reservations -= 1;
            mailbox.notify();
        }
    }
}

/// Sends input to a running turn.
#[derive(Debug, Clone)]
pub struct Steering {
    pub(super) mailbox: Option<Arc<Mailbox>>,
}

impl Steering {
    /// Queues `input` for the running turn; returns its revision.
    pub fn submit(&self, input: impl Into<String>) -> Result<u64, SteerError> {
        match &self.mailbox {
            Some(mailbox) => mailbox.submit(input),
            None => Err(SteerError::Unsupported),
        }
    }

    /// Commits `input` elsewhere first (`commit`), then queues it; see
    /// [`Mailbox::submit_after`].
    pub async fn submit_after<F, E>(
        &self,
        input: String,
        commit: F,
    ) -> Result<u64, SubmitAfterError<E>>
    where
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: Send + 'static,
    {
        match &self.mailbox {
            Some(mailbox) => mailbox.submit_after(input, commit).await,
            None => Err(SubmitAfterError::Rejected(SteerError::Unsupported)),
        }
    }
}

#[cfg(test)]
mod tests;
