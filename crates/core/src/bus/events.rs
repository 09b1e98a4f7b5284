//! The runtime event bus: events are stored (with a global sequence number) before they are
//! announced, and followers replay from any number and then follow live with no gap and no
//! duplicate across the switch.
//!
//! Ordering: one async lock around "store, then announce" makes the live order equal the
//! sequence order. Followers subscribe to the live channel *before* replaying, so an event
//! committed during the replay is in both places and is de-duplicated by sequence number. A
//! follower that falls behind the live channel's capacity gets `Resync` and is dropped; it never
//! slows down publishers.

use std::sync::Arc;

use chrono::Utc;
use futures::Stream;
use rusqlite::{Connection, Transaction, params};
use souz_protocol::{EventEnvelope, RuntimeEvent};
use tokio::sync::{Mutex, broadcast};

use super::follow::{FollowItem, Replay, Sequenced, follow};
use crate::store::CachedStatements;
use crate::store::{Store, StoreError};

/// Durable, ordered runtime events.
#[derive(Clone)]
pub struct EventBus {
    store: Store,
    live: broadcast::Sender<Arc<EventEnvelope>>,
    order: Arc<Mutex<()>>,
}

impl EventBus {
    /// A bus over `store` whose live channel holds `capacity` events per follower.
    pub fn new(store: Store, capacity: usize) -> Self {
        let (live, _) = broadcast::channel(capacity.max(1));
        Self {
            store,
            live,
            order: Arc::new(Mutex::new(())),
        }
    }

    /// Stores `event` and announces it.
    pub async fn publish(&self, event: RuntimeEvent) -> Result<Arc<EventEnvelope>, StoreError> {
        let ((), mut stored) = self
            .publish_with(move |_| Ok::<_, StoreError>(((), vec![event])))
            .await?;
        stored
            .pop()
            .ok_or(StoreError::Corrupt("event was not stored".into()))
    }

    /// Runs `work` in a write transaction, stores the events it returns in the same
    /// transaction, and announces them after the commit. Use this when a domain change and its
    /// event must be durable together.
    pub async fn publish_with<T, E, F>(&self, work: F) -> Result<(T, Vec<Arc<EventEnvelope>>), E>
    where
        F: FnOnce(&Transaction<'_>) -> Result<(T, Vec<RuntimeEvent>), E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let _order = self.order.lock().await;
        let (value, stored) = self
            .store
            .write(move |transaction| {
                let (value, events) = work(transaction)?;
                let stored = events
                    .into_iter()
                    .map(|event| append(transaction, event).map(Arc::new))
                    .collect::<Result<Vec<_>, StoreError>>()
                    .map_err(E::from)?;
                Ok::<_, E>((value, stored))
            })
            .await?;
        for envelope in &stored {
            // No receivers is fine: nobody is following right now.
            let _ = self.live.send(Arc::clone(envelope));
        }
        Ok((value, stored))
    }

    /// Stored events with `seq > after_seq`, oldest first, at most `limit`.
    pub async fn replay(
        &self,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        self.store
            .read(move |connection| replay(connection, after_seq, limit))
            .await
    }

    /// The newest sequence number (0 when there are no events).
    pub async fn last_seq(&self) -> Result<i64, StoreError> {
        self.store
            .read(|connection| {
                connection
                    .query_row_cached("SELECT max(seq) FROM runtime_events", [], |row| {
                        row.get::<_, Option<i64>>(0)
                    })
                    .map(Option::unwrap_or_default)
                    .map_err(StoreError::from)
            })
            .await
    }

    /// Events after `after_seq`: first the stored ones, then `Live`, then live ones.
    pub fn follow(
        &self,
        after_seq: i64,
    ) -> impl Stream<Item = FollowItem<EventEnvelope>> + Send + 'static {
        let store = self.store.clone();
        let replay: Replay<EventEnvelope> = Arc::new(move |after, limit| {
            let store = store.clone();
            Box::pin(async move {
                store
                    .read(move |connection| {
                        replay(connection, after, limit)
                            .map(|page| page.into_iter().map(Arc::new).collect())
                    })
                    .await
            })
        });
        follow(self.live.subscribe(), replay, after_seq)
    }

    /// A live subscription without replay (for in-process consumers such as the tray).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<EventEnvelope>> {
        self.live.subscribe()
    }
}

fn append(transaction: &Transaction<'_>, event: RuntimeEvent) -> Result<EventEnvelope, StoreError> {
    let at = Utc::now();
    let payload =
        serde_json::to_string(&event).map_err(|error| StoreError::Corrupt(error.to_string()))?;
    transaction.execute_cached(
        "INSERT INTO runtime_events (kind, payload, created_at) VALUES (?1, ?2, ?3)",
        params![event.kind(), payload, at.to_rfc3339()],
    )?;
    Ok(EventEnvelope {
        seq: transaction.last_insert_rowid(),
        at,
        event,
    })
}

fn replay(
    connection: &Connection,
    after_seq: i64,
    limit: usize,
) -> Result<Vec<EventEnvelope>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT seq, payload, created_at FROM runtime_events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
    )?;
    let rows = statement.query_map(
        params![after_seq, i64::try_from(limit).unwrap_or(i64::MAX)],
        |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        },
    )?;
    let mut events = Vec::new();
    for row in rows {
        let (seq, payload, created_at) = row?;
        let event = serde_json::from_str(&payload)
            .map_err(|error| StoreError::Corrupt(format!("runtime event {seq}: {error}")))?;
        let at = chrono::DateTime::parse_from_rfc3339(&created_at)
            .map_err(|error| StoreError::Corrupt(format!("runtime event {seq}: {error}")))?
            .with_timezone(&Utc);
        events.push(EventEnvelope { seq, at, event });
    }
    Ok(events)
}

impl Sequenced for EventEnvelope {
    fn seq(&self) -> Option<i64> {
        Some(self.seq)
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn started(pid: u32) -> RuntimeEvent {
        RuntimeEvent::DaemonStarted {
            version: "test".into(),
            pid,
        }
    }

    async fn bus(capacity: usize) -> (tempfile::TempDir, EventBus) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("souz.db")).await.unwrap();
        (dir, EventBus::new(store, capacity))
    }

    fn pid_of(item: &FollowItem<EventEnvelope>) -> Option<u32> {
        match item {
            FollowItem::Event(envelope) => match &envelope.event {
                RuntimeEvent::DaemonStarted { pid, .. } => Some(*pid),
                _ => None,
            },
            _ => None,
        }
    }

    #[tokio::test]
    async fn sequence_numbers_increase_and_replay_is_ordered() {
        let (_dir, bus) = bus(16).await;
        for pid in 1..=5 {
            let stored = bus.publish(started(pid)).await.unwrap();
            assert_eq!(stored.seq, i64::from(pid));
        }
        let replayed = bus.replay(2, 10).await.unwrap();
        assert_eq!(
            replayed.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
        assert_eq!(bus.replay(0, 2).await.unwrap().len(), 2);
        assert_eq!(bus.last_seq().await.unwrap(), 5);
    }

    #[tokio::test]
    async fn follow_replays_then_goes_live_without_gap_or_duplicate() {
        let (_dir, bus) = bus(4096).await;
        for pid in 1..=3 {
            bus.publish(started(pid)).await.unwrap();
        }
        // Publish concurrently while the follower replays and switches to live.
        let publisher = {
            let bus = bus.clone();
            crate::tasks::spawn_in_test(async move {
                for pid in 4..=2000 {
                    bus.publish(started(pid)).await.unwrap();
                }
            })
        };
        let mut stream = Box::pin(bus.follow(1));
        let mut seen = Vec::new();
        let mut went_live = false;
        while seen.len() < 1999 {
            match stream.next().await.unwrap() {
                FollowItem::Live { .. } => went_live = true,
                item => seen.push(pid_of(&item).unwrap()),
            }
        }
        publisher.await.unwrap();
        assert!(went_live);
        assert_eq!(seen, (2..=2000).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn follow_from_the_end_only_sees_new_events() {
        let (_dir, bus) = bus(16).await;
        bus.publish(started(1)).await.unwrap();
        let mut stream = Box::pin(bus.follow(1));
        assert!(matches!(
            stream.next().await,
            Some(FollowItem::Live { last_seq: 1 })
        ));
        bus.publish(started(2)).await.unwrap();
        assert_eq!(pid_of(&stream.next().await.unwrap()), Some(2));
    }

    #[tokio::test]
    async fn slow_follower_is_told_to_resync() {
        let (_dir, bus) = bus(4).await;
        let mut stream = Box::pin(bus.follow(0));
        assert!(matches!(
            stream.next().await,
            Some(FollowItem::Live { last_seq: 0 })
        ));
        for pid in 1..=20 {
            bus.publish(started(pid)).await.unwrap();
        }
        assert!(matches!(
            stream.next().await,
            Some(FollowItem::Resync { last_seq: 0 })
        ));
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn publish_with_is_atomic_with_the_domain_write() {
        let (_dir, bus) = bus(16).await;
        let failed: Result<((), Vec<_>), StoreError> = bus
            .publish_with(|transaction| {
                append(transaction, started(99))?;
                Err(StoreError::Corrupt("domain write failed".into()))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(
            bus.last_seq().await.unwrap(),
            0,
            "nothing stored when the work fails"
        );
        let (value, stored) = bus
            .publish_with(|_| Ok::<_, StoreError>((7, vec![started(1), started(2)])))
            .await
            .unwrap();
        assert_eq!(value, 7);
        assert_eq!(stored.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2]);
    }
}
