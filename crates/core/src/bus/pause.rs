//! The pause switch: while Souz is paused, a tool call that would ask the person is denied
//! without asking, pending approvals are denied, running agent turns are cancelled and new ones
//! are refused, until the person resumes.
//!
//! Invariants: the state is durable (a row in `daemon_state`, written in the same transaction
//! as its `daemon.paused`/`daemon.resumed` event), so a restart does not silently resume. The
//! switch flips before the sweep of pending work, and every producer (the gate, chats) checks it
//! again after storing new work, so nothing slips between the check and the sweep.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction};
use tokio::sync::watch;

use crate::store::StoreError;
use crate::store::codec::{from_time, to_time};

const KEY: &str = "paused_since";

/// Whether Souz is paused, shared by the parts that must honour it. Cheap to clone.
#[derive(Clone)]
pub struct PauseSwitch {
    state: Arc<watch::Sender<Option<DateTime<Utc>>>>,
}

impl PauseSwitch {
    /// A switch starting in `since` (`None`: running).
    pub fn new(since: Option<DateTime<Utc>>) -> Self {
        Self {
            state: Arc::new(watch::channel(since).0),
        }
    }

    /// Whether Souz is paused now.
    pub fn is_paused(&self) -> bool {
        self.state.borrow().is_some()
    }

    /// Since when it is paused.
    pub fn since(&self) -> Option<DateTime<Utc>> {
        *self.state.borrow()
    }

    /// Follows the state (the tray and the app watch it).
    pub fn subscribe(&self) -> watch::Receiver<Option<DateTime<Utc>>> {
        self.state.subscribe()
    }

    /// Sets the state; returns whether it changed.
    pub(crate) fn set(&self, since: Option<DateTime<Utc>>) -> bool {
        self.state.send_if_modified(|current| {
            if current.is_some() == since.is_some() {
                false
            } else {
                *current = since;
                true
            }
        })
    }
}

/// The stored pause state.
pub(crate) fn load(connection: &Connection) -> Result<Option<DateTime<Utc>>, StoreError> {
    let value: Option<String> = connection
        .query_row(
            "SELECT value FROM daemon_state WHERE key = ?1",
            [KEY],
            |row| row.get(0),
        )
        .optional()?;
    value
        .map(|text| from_time("daemon_state.paused_since", &text))
        .transpose()
}

/// Stores the pause state.
pub(crate) fn store(
    transaction: &Transaction<'_>,
    since: Option<DateTime<Utc>>,
) -> Result<(), StoreError> {
    match since {
        Some(at) => transaction.execute(
            "INSERT INTO daemon_state (key, value) VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [KEY, &to_time(at)],
        )?,
        None => transaction.execute("DELETE FROM daemon_state WHERE key = ?1", [KEY])?,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_reports_changes_only() {
        let switch = PauseSwitch::new(None);
        let mut watcher = switch.subscribe();
        assert!(!switch.is_paused());
        let at = Utc::now();
        assert!(switch.set(Some(at)));
        assert!(watcher.has_changed().unwrap());
        watcher.mark_unchanged();
        assert!(!switch.set(Some(at + chrono::Duration::seconds(5))));
        assert_eq!(
            switch.since(),
            Some(at),
            "a second pause keeps the first time"
        );
        assert!(!watcher.has_changed().unwrap());
        assert!(switch.set(None));
        assert!(!switch.is_paused());
    }
}
