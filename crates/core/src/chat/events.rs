//! Chat events: a per-chat stream with chat-local sequence numbers, stored before they are
//! announced, replayable from any number, plus live-only events (`message.delta`) that are
//! never stored. One async lock orders "store, then announce" so the live order equals the
//! sequence order; followers use the shared replay-then-live follower. A chat change that other
//! surfaces follow too (a question asked, answered, withdrawn) stores its runtime events in the
//! same transaction (`publish_with_runtime`): the chat lock is taken before the runtime bus's,
//! never the other way round.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::Stream;
use rusqlite::{Connection, Transaction, params};
use souz_protocol::RuntimeEvent;
use souz_protocol::chat::events::TurnEndReason;
use souz_protocol::chat::{ChatEvent, ChatEventBody};
use tokio::sync::broadcast;

use crate::bus::EventBus;
use crate::bus::follow::{FollowItem, REPLAY_PAGE, Replay, Sequenced, follow};
use crate::store::CachedStatements;
use crate::store::codec::{from_time, now, to_json, to_time};
use crate::store::{Store, StoreError};

/// Live events buffered per follower before it is told to resync.
const LIVE_CAPACITY: usize = 1024;

impl Sequenced for ChatEvent {
    fn seq(&self) -> Option<i64> {
        self.seq
    }
}

/// An event to store.
#[derive(Debug, Clone)]
pub struct NewChatEvent {
    /// The chat.
    pub chat_id: String,
    /// The execution, if any.
    pub execution_id: Option<String>,
    /// Its type and payload.
    pub body: ChatEventBody,
}

/// Per-chat durable and live events.
#[derive(Clone)]
pub struct ChatEvents {
    store: Store,
    /// The daemon's runtime event bus.
    runtime: EventBus,
    channels: Arc<Mutex<HashMap<String, broadcast::Sender<Arc<ChatEvent>>>>>,
    /// Every announced event of every chat, for the live-turns view and the menu-bar app.
    all: broadcast::Sender<Arc<ChatEvent>>,
    order: Arc<tokio::sync::Mutex<()>>,
}

impl ChatEvents {
    /// Events over `store`; runtime events go to `runtime`.
    pub fn new(store: Store, runtime: EventBus) -> Self {
        Self {
            store,
            runtime,
            channels: Arc::new(Mutex::new(HashMap::new())),
            all: broadcast::channel(LIVE_CAPACITY).0,
            order: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The daemon's runtime event bus.
    pub(crate) fn runtime(&self) -> &EventBus {
        &self.runtime
    }

    /// Runs `work` in a write transaction, stores the events it returns in the same
    /// transaction (each with the next sequence number of its chat), and announces them after
    /// the commit.
    pub async fn publish_with<T, E, F>(&self, work: F) -> Result<(T, Vec<Arc<ChatEvent>>), E>
    where
        F: FnOnce(&Transaction<'_>) -> Result<(T, Vec<NewChatEvent>), E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let _order = self.order.lock().await;
        let (value, stored) = self
            .store
            .write(move |transaction| {
                let (value, events) = work(transaction)?;
                Ok::<_, E>((value, append_all(transaction, events)?))
            })
            .await?;
        for event in &stored {
            self.announce(Arc::clone(event));
        }
        Ok((value, stored))
    }

    /// [`Self::publish_with`], and the runtime events `work` returns are stored in the same
    /// transaction and announced on the runtime bus after the commit.
    pub async fn publish_with_runtime<T, E, F>(
        &self,
        work: F,
    ) -> Result<(T, Vec<Arc<ChatEvent>>), E>
    where
        F: FnOnce(&Transaction<'_>) -> Result<(T, Vec<NewChatEvent>, Vec<RuntimeEvent>), E>
            + Send
            + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let _order = self.order.lock().await;
        let ((value, stored), _) = self
            .runtime
            .publish_with(move |transaction| {
                let (value, events, runtime) = work(transaction)?;
                Ok::<_, E>(((value, append_all(transaction, events)?), runtime))
            })
            .await?;
        for event in &stored {
            self.announce(Arc::clone(event));
        }
        Ok((value, stored))
    }

    /// Announces a live-only event (never stored, `seq: null`).
    pub fn publish_live(&self, chat_id: &str, execution_id: Option<&str>, body: ChatEventBody) {
        let event = ChatEvent {
            seq: None,
            durable: false,
            chat_id: chat_id.to_owned(),
            execution_id: execution_id.map(str::to_owned),
            body,
            created_at: now(),
        };
        self.announce(Arc::new(event));
    }

    /// Stored events of `chat_id` with `seq > after_seq`, oldest first.
    pub async fn replay(
        &self,
        chat_id: &str,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<ChatEvent>, StoreError> {
        let chat_id = chat_id.to_owned();
        self.store
            .read(move |connection| replay(connection, &chat_id, after_seq, limit))
            .await
    }

    /// Stored events after `after_seq`, then `Live`, then live events (deltas included).
    pub fn follow(
        &self,
        chat_id: &str,
        after_seq: i64,
    ) -> impl Stream<Item = FollowItem<ChatEvent>> + Send + 'static {
        let receiver = self.subscribe(chat_id);
        let store = self.store.clone();
        let chat = chat_id.to_owned();
        let replay: Replay<ChatEvent> = Arc::new(move |after, limit| {
            let store = store.clone();
            let chat = chat.clone();
            Box::pin(async move {
                store
                    .read(move |connection| {
                        replay(connection, &chat, after, limit)
                            .map(|page| page.into_iter().map(Arc::new).collect())
                    })
                    .await
            })
        });
        follow(receiver, replay, after_seq)
    }

    /// Number of live followers of a chat (for tests and diagnostics).
    pub fn followers(&self, chat_id: &str) -> usize {
        self.channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(chat_id)
            .map_or(0, broadcast::Sender::receiver_count)
    }

    /// A receiver on the chat's channel, made while holding the map's lock: `announce` prunes a
    /// channel without receivers under the same lock, so a new receiver is never left on a
    /// pruned channel (whose stream would end with the next `announce`).
    fn subscribe(&self, chat_id: &str) -> broadcast::Receiver<Arc<ChatEvent>> {
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        channels
            .entry(chat_id.to_owned())
            .or_insert_with(|| broadcast::channel(LIVE_CAPACITY).0)
            .subscribe()
    }

    /// Every event of every chat announced from now on (durable and live-only), in announce
    /// order. The receiver lags (and is told so) if it falls more than the buffer behind.
    pub fn subscribe_all(&self) -> broadcast::Receiver<Arc<ChatEvent>> {
        self.all.subscribe()
    }

    fn announce(&self, event: Arc<ChatEvent>) {
        if self.all.receiver_count() > 0 {
            let _ = self.all.send(Arc::clone(&event));
        }
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = channels.get(&event.chat_id) {
            if sender.receiver_count() == 0 {
                channels.remove(&event.chat_id);
            } else {
                let _ = sender.send(event);
            }
        }
    }
}

/// Stores `events` in order, each with the next sequence number of its chat.
fn append_all(
    transaction: &Transaction<'_>,
    events: Vec<NewChatEvent>,
) -> Result<Vec<Arc<ChatEvent>>, StoreError> {
    events
        .into_iter()
        .map(|event| append(transaction, event).map(Arc::new))
        .collect()
}

fn append(transaction: &Transaction<'_>, event: NewChatEvent) -> Result<ChatEvent, StoreError> {
    let seq: i64 = transaction.query_row_cached(
        "SELECT coalesce(max(seq), 0) + 1 FROM chat_events WHERE chat_id = ?1",
        [&event.chat_id],
        |row| row.get(0),
    )?;
    let created_at = now();
    let payload = event
        .body
        .payload()
        .map_err(|error| StoreError::Corrupt(format!("chat_events.payload: {error}")))?;
    transaction.execute_cached(
        "INSERT INTO chat_events (chat_id, seq, execution_id, type, payload, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            event.chat_id,
            seq,
            event.execution_id,
            event.body.kind(),
            to_json(&payload)?,
            to_time(created_at),
        ],
    )?;
    Ok(ChatEvent {
        seq: Some(seq),
        durable: true,
        chat_id: event.chat_id,
        execution_id: event.execution_id,
        body: event.body,
        created_at,
    })
}

fn replay(
    connection: &Connection,
    chat_id: &str,
    after_seq: i64,
    limit: usize,
) -> Result<Vec<ChatEvent>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT seq, execution_id, type, payload, created_at FROM chat_events \
         WHERE chat_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    )?;
    let mut rows = statement.query(params![
        chat_id,
        after_seq,
        i64::try_from(limit).unwrap_or(i64::MAX)
    ])?;
    let mut events = Vec::with_capacity(limit.min(REPLAY_PAGE));
    // Columns are read in place (no owned copy of the payload text) and the payload goes
    // straight into its typed struct: no `Value` in between unless it does not fit its kind.
    while let Some(row) = rows.next()? {
        let kind = text(row, 2)?;
        let payload = text(row, 3)?;
        events.push(ChatEvent {
            seq: Some(row.get(0)?),
            durable: true,
            chat_id: chat_id.to_owned(),
            execution_id: row.get(1)?,
            // A kind or payload this version does not know is kept as it was stored.
            body: ChatEventBody::from_text(kind, payload)
                .map_err(|error| StoreError::Corrupt(format!("chat_events.payload: {error}")))?,
            created_at: from_time("chat_events.created_at", text(row, 4)?)?,
        });
    }
    Ok(events)
}

/// How a completed execution's turn ended, as its stored `execution.finished` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnEnd {
    /// Why it ended (`Answered` unless Souz ended it).
    pub reason: TurnEndReason,
    /// The answer it left: when Souz ended the turn, the explanation the person was given.
    pub answer: Option<String>,
}

/// The end of `execution_id`'s turn in `chat_id`, read from its stored `execution.finished`
/// (found by the index on the one terminal event of an execution) and its answer; `None`
/// when the execution did not finish (it failed, was cancelled, or goes on).
pub(crate) fn turn_end(
    connection: &Connection,
    chat_id: &str,
    execution_id: &str,
) -> Result<Option<TurnEnd>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT v.type, v.payload, m.content FROM chat_events v \
           LEFT JOIN messages m ON m.chat_id = v.chat_id \
                AND m.id = json_extract(v.payload, '$.assistantMessageId') \
          WHERE v.execution_id = ?2 AND v.chat_id = ?1 \
            AND v.type IN ('execution.finished', 'execution.failed', 'execution.cancelled')",
    )?;
    let mut rows = statement.query(params![chat_id, execution_id])?;
    let Some(row) = rows.next()? else {
        return Ok(None);
    };
    let body = ChatEventBody::from_text(text(row, 0)?, text(row, 1)?)
        .map_err(|error| StoreError::Corrupt(format!("chat_events.payload: {error}")))?;
    Ok(match body {
        ChatEventBody::ExecutionFinished(finished) => Some(TurnEnd {
            reason: finished.end_reason,
            answer: row.get(2)?,
        }),
        _ => None,
    })
}

/// Column `index` of `row` as text, borrowed from the row.
fn text<'row>(row: &'row rusqlite::Row<'_>, index: usize) -> rusqlite::Result<&'row str> {
    row.get_ref(index)?.as_str().map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            Box::new(error),
        )
    })
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use souz_protocol::chat::events::MessageDeltaPayload;

    use super::*;

    fn delta(attempt: u64) -> ChatEventBody {
        ChatEventBody::MessageDelta(MessageDeltaPayload {
            message_id: "message".into(),
            execution_id: "execution".into(),
            attempt,
            delta: String::new(),
        })
    }

    /// Typed events land in `chat_events` as the untyped producers wrote them: the dotted
    /// `type` and the payload text with sorted keys, absent optional fields absent, `null` ones
    /// `null`; and replay reads them back as the same typed values.
    #[tokio::test]
    async fn typed_events_are_stored_in_the_columns_as_before() {
        let stored = [
            (
                "message.created",
                r#"{"clientMessageId":"k-1","content":"hi","messageId":"m-1","role":"user","seq":1}"#,
            ),
            (
                "execution.started",
                r#"{"executionId":"e-1","model":null,"provider":"openai","streamingMessages":true,"userMessageId":"m-1"}"#,
            ),
            (
                "approval.expired",
                r#"{"approvalId":"a-1","callId":"g-1","name":"RunCommand","reason":"restart","status":"expired","toolCallId":"t-1"}"#,
            ),
            (
                "option.requested",
                r#"{"expiresAt":null,"freeText":false,"kind":"generic_selection","optionId":"o-1","options":[{"content":null,"id":"c-1","label":"Yes"}],"selectionMode":"single","title":"Go?"}"#,
            ),
            ("execution.cancelled", r#"{"executionId":"e-1"}"#),
            ("future.kind", r#"{"b":1,"a":[true]}"#),
        ];
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("souz.db")).await.unwrap();
        let events = ChatEvents::new(store.clone(), EventBus::new(store.clone(), 16));
        let bodies: Vec<ChatEventBody> = stored
            .iter()
            .map(|(kind, payload)| {
                ChatEventBody::from_parts(
                    (*kind).to_owned(),
                    serde_json::from_str(payload).unwrap(),
                )
            })
            .collect();
        assert!(
            bodies[..5]
                .iter()
                .all(|body| !matches!(body, ChatEventBody::Other { .. }))
        );
        let new = bodies
            .iter()
            .map(|body| NewChatEvent {
                chat_id: "chat".into(),
                execution_id: Some("e-1".into()),
                body: body.clone(),
            })
            .collect();
        events
            .publish_with(move |transaction| {
                transaction.execute_batch(
                    "INSERT INTO users VALUES ('me', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');
                     INSERT INTO chats (id, user_id, created_at, updated_at)
                     VALUES ('chat', 'me', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');",
                )?;
                Ok::<_, StoreError>(((), new))
            })
            .await
            .unwrap();
        let columns: Vec<(String, String)> = store
            .read(|connection| {
                let mut statement = connection.prepare(
                    "SELECT type, payload FROM chat_events WHERE chat_id = 'chat' ORDER BY seq",
                )?;
                let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
                Ok::<_, StoreError>(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .await
            .unwrap();
        // The known kinds' fixtures are already in stored form; an unknown kind's payload is
        // stored with sorted keys, as a `Value` always was.
        let mut expected: Vec<(String, String)> = stored
            .iter()
            .map(|(kind, payload)| ((*kind).to_owned(), (*payload).to_owned()))
            .collect();
        expected[5].1 = r#"{"a":[true],"b":1}"#.to_owned();
        assert_eq!(columns, expected);
        let replayed = events.replay("chat", 0, 100).await.unwrap();
        let replayed: Vec<ChatEventBody> = replayed.into_iter().map(|event| event.body).collect();
        assert_eq!(replayed, bodies);
    }

    /// A follower that subscribes while another task announces (and so prunes channels nobody
    /// listens to) must still be subscribed to the channel later events go to: it sees its own
    /// event rather than a closed stream.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_follower_joining_while_events_are_announced_keeps_its_channel() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("souz.db")).await.unwrap();
        let events = ChatEvents::new(store.clone(), EventBus::new(store, 16));
        let noise = {
            let events = events.clone();
            std::thread::spawn(move || {
                for n in 0..400_000 {
                    events.publish_live("chat", None, delta(n));
                }
            })
        };
        for round in 0..3000 {
            let mut follower = Box::pin(events.follow("chat", 0));
            assert!(matches!(
                follower.next().await,
                Some(FollowItem::Live { last_seq: 0 })
            ));
            let mine = delta(1_000_000 + round);
            events.publish_live("chat", None, mine.clone());
            loop {
                match follower.next().await {
                    Some(FollowItem::Event(event)) if event.body == mine => break,
                    Some(FollowItem::Event(_)) => {}
                    // Lagging behind the noise is fine; losing the channel is not.
                    Some(FollowItem::Resync { .. }) => break,
                    other => panic!("round {round}: the follower lost its channel: {other:?}"),
                }
            }
            if noise.is_finished() {
                break;
            }
        }
        noise.join().unwrap();
    }
}
