//! Device-code sign-ins: waiting for the person to enter the code, and where each user's
//! sign-in stands.
//!
//! Invariants: at most one sign-in waits per user (starting another cancels the earlier one);
//! a waiting sign-in stops at the code's expiry, at its cancellation, or at the first answer
//! that is not "pending"; a finished sign-in leaves its outcome for the status to show until
//! the next start or a sign-out (success leaves nothing: the stored session is the state).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use super::auth::{DeviceCode, Poll};
use super::session::{Session, Sessions};
use crate::llm::LlmError;
use crate::llm::keys::KeyStore;

/// How polling paces itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacing {
    /// Added to the interval on each `slow_down` (RFC 8628: five seconds).
    pub slow_down_step: Duration,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            slow_down_step: Duration::from_secs(5),
        }
    }
}

/// How a sign-in ended, when it did not sign in.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoginError {
    /// The code expired before it was entered.
    #[error("the code expired before it was entered; start the sign-in again")]
    Expired,
    /// The sign-in was refused.
    #[error("the sign-in was refused: {0}")]
    Denied(String),
    /// Cancelled (a new sign-in started, a sign-out, or the daemon stopping).
    #[error("the sign-in was cancelled")]
    Cancelled,
    /// The sign-in service failed.
    #[error(transparent)]
    Service(#[from] LlmError),
}

/// Waits for `code` to be entered, exchanges it, and stores the session in `keys`.
pub(crate) async fn complete(
    sessions: &Sessions,
    keys: &KeyStore,
    code: &DeviceCode,
    pacing: Pacing,
    cancel: &CancellationToken,
) -> Result<Session, LoginError> {
    let mut interval = code.interval;
    let grant = loop {
        let remaining = (code.expires_at - Utc::now())
            .to_std()
            .map_err(|_| LoginError::Expired)?;
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LoginError::Cancelled),
            () = tokio::time::sleep(interval.min(remaining)) => {}
        }
        if Utc::now() >= code.expires_at {
            return Err(LoginError::Expired);
        }
        match sessions.auth().poll(code, cancel).await {
            Ok(Poll::Pending) => {}
            Ok(Poll::SlowDown) => interval += pacing.slow_down_step,
            Ok(Poll::Expired) => return Err(LoginError::Expired),
            Ok(Poll::Denied(why)) => return Err(LoginError::Denied(why)),
            Ok(Poll::Authorized(grant)) => break grant,
            Err(LlmError::Cancelled) => return Err(LoginError::Cancelled),
            Err(error) => return Err(LoginError::Service(error)),
        }
    };
    let answer = sessions
        .auth()
        .exchange(&grant, cancel)
        .await
        .map_err(|error| match error {
            LlmError::Cancelled => LoginError::Cancelled,
            other => LoginError::Service(other),
        })?;
    let session = Session::from_answer(answer, None).ok_or_else(|| {
        LoginError::Service(LlmError::Malformed {
            provider: super::PROVIDER,
            detail: "the token answer holds no tokens".to_owned(),
        })
    })?;
    sessions.store(keys, &session).await?;
    tracing::info!(provider = %super::PROVIDER, user = keys.user(), "signed in");
    Ok(session)
}

/// Where one user's sign-in stands, apart from a stored session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Waiting for the code to be entered.
    Pending {
        /// The page.
        verification_url: String,
        /// The code.
        user_code: String,
        /// When the code expires.
        expires_at: DateTime<Utc>,
    },
    /// The code expired.
    Expired,
    /// It failed, and why.
    Failed(String),
}

struct Entry {
    attempt: Attempt,
    /// Cancels the waiting task (pending only).
    cancel: CancellationToken,
    /// Tells this attempt apart from a later one of the same user.
    number: u64,
}

/// Every user's sign-in attempts (one set per runtime).
#[derive(Clone, Default)]
pub(crate) struct Logins {
    entries: Arc<Mutex<(u64, HashMap<String, Entry>)>>,
}

/// A registered attempt: what its task reports to.
pub(crate) struct Ticket {
    user: String,
    number: u64,
    /// Cancelled when the attempt is replaced or cancelled.
    pub cancel: CancellationToken,
}

impl Logins {
    fn entries(&self) -> MutexGuard<'_, (u64, HashMap<String, Entry>)> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a pending attempt of `user` for `code` (cancelling an earlier one); its task
    /// watches the ticket's token, a child of `stop`.
    pub(crate) fn begin(&self, user: &str, code: &DeviceCode, stop: &CancellationToken) -> Ticket {
        let cancel = stop.child_token();
        let mut entries = self.entries();
        entries.0 += 1;
        let number = entries.0;
        let previous = entries.1.insert(
            user.to_owned(),
            Entry {
                attempt: Attempt::Pending {
                    verification_url: code.verification_url.clone(),
                    user_code: code.user_code.clone(),
                    expires_at: code.expires_at,
                },
                cancel: cancel.clone(),
                number,
            },
        );
        if let Some(previous) = previous {
            previous.cancel.cancel();
        }
        Ticket {
            user: user.to_owned(),
            number,
            cancel,
        }
    }

    /// Records how `ticket`'s attempt ended (nothing when a later attempt replaced it).
    pub(crate) fn finish<T>(&self, ticket: &Ticket, outcome: &Result<T, LoginError>) {
        let mut entries = self.entries();
        let current = entries
            .1
            .get(&ticket.user)
            .is_some_and(|entry| entry.number == ticket.number);
        if !current {
            return;
        }
        let attempt = match outcome {
            Ok(_) => {
                entries.1.remove(&ticket.user);
                return;
            }
            // Cancelled by a sign-out (the entry is gone already), by the code lapsing (the
            // entry says expired) or by the daemon stopping: nothing to record.
            Err(LoginError::Cancelled) => return,
            Err(LoginError::Expired) => Attempt::Expired,
            Err(error) => Attempt::Failed(error.to_string()),
        };
        if let Some(entry) = entries.1.get_mut(&ticket.user) {
            entry.attempt = attempt;
        }
    }

    /// `user`'s attempt, if one waits or ended without signing in.
    pub(crate) fn attempt(&self, user: &str) -> Option<Attempt> {
        let mut entries = self.entries();
        let entry = entries.1.get_mut(user)?;
        // A pending code past its expiry is expired, whatever its task has seen yet.
        let lapsed = matches!(
            &entry.attempt,
            Attempt::Pending { expires_at, .. } if *expires_at <= Utc::now()
        );
        if lapsed {
            entry.attempt = Attempt::Expired;
            entry.cancel.cancel();
        }
        Some(entry.attempt.clone())
    }

    /// Cancels and forgets `user`'s attempt.
    pub(crate) fn cancel(&self, user: &str) {
        if let Some(entry) = self.entries().1.remove(user) {
            entry.cancel.cancel();
        }
    }
}
