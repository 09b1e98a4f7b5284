//! Replay-then-live following of a sequenced event stream, shared by the runtime event stream
//! and chat event streams.
//!
//! The follower subscribes to the live channel *before* it replays, so an event stored during
//! the replay is seen twice and de-duplicated by sequence number; a gap in the live channel is
//! filled from the store. Events without a sequence number (live-only, such as text deltas) are
//! passed through once the follower is live. A follower that falls behind the channel's capacity
//! gets `Resync` and the stream ends; publishers never wait for it.
//!
//! Replay reads pages of [`REPLAY_PAGE`] events; while one page is handed out, the next is
//! already being read (one page ahead, never more), so the store's thread and the follower's
//! consumer work side by side.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::broadcast;

use crate::store::StoreError;

/// Events fetched per replay query.
pub(crate) const REPLAY_PAGE: usize = 1000;

/// An event with a position in its stream (`None` for live-only events).
pub(crate) trait Sequenced: Send + Sync + 'static {
    /// Its sequence number, if stored.
    fn seq(&self) -> Option<i64>;
}

/// Reads stored events with `seq > after`, oldest first, at most `limit`.
pub(crate) type Replay<E> =
    Arc<dyn Fn(i64, usize) -> BoxFuture<'static, Result<Vec<E>, StoreError>> + Send + Sync>;

/// What a follower receives.
#[derive(Debug)]
pub enum FollowItem<E> {
    /// An event: stored ones in sequence order, live-only ones as they come.
    Event(Arc<E>),
    /// Replay is complete; what follows is live.
    Live {
        /// The last sequence number delivered so far.
        last_seq: i64,
    },
    /// The follower fell behind; it must reconnect from `last_seq`.
    Resync {
        /// The last sequence number delivered.
        last_seq: i64,
    },
    /// Reading stored events failed; the stream ends.
    Failed(Arc<StoreError>),
}

impl<E> Clone for FollowItem<E> {
    fn clone(&self) -> Self {
        match self {
            Self::Event(event) => Self::Event(Arc::clone(event)),
            Self::Live { last_seq } => Self::Live {
                last_seq: *last_seq,
            },
            Self::Resync { last_seq } => Self::Resync {
                last_seq: *last_seq,
            },
            Self::Failed(error) => Self::Failed(Arc::clone(error)),
        }
    }
}

/// Follows a stream: stored events after `after_seq`, then `Live`, then live events.
pub(crate) fn follow<E: Sequenced>(
    receiver: broadcast::Receiver<Arc<E>>,
    replay: Replay<E>,
    after_seq: i64,
) -> impl Stream<Item = FollowItem<E>> + Send + 'static {
    let follower = Follower {
        receiver,
        replay,
        last_seq: after_seq.max(0),
        buffer: VecDeque::new(),
        phase: Phase::Replay,
        ahead: None,
    };
    futures::stream::unfold(follower, |mut follower| async move {
        let item = follower.next().await?;
        Some((item, follower))
    })
}

enum Phase {
    Replay,
    Live,
    Done,
}

struct Follower<E> {
    receiver: broadcast::Receiver<Arc<E>>,
    replay: Replay<E>,
    last_seq: i64,
    buffer: VecDeque<Arc<E>>,
    phase: Phase,
    /// The next replay page, being read while the current one is handed out.
    ahead: Option<tokio::task::JoinHandle<Result<Vec<E>, StoreError>>>,
}

impl<E> Drop for Follower<E> {
    fn drop(&mut self) {
        if let Some(ahead) = self.ahead.take() {
            ahead.abort();
        }
    }
}

impl<E: Sequenced> Follower<E> {
    async fn next(&mut self) -> Option<FollowItem<E>> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                match event.seq() {
                    Some(seq) if seq <= self.last_seq => continue,
                    Some(seq) => self.last_seq = seq,
                    None => {}
                }
                return Some(FollowItem::Event(event));
            }
            match self.phase {
                Phase::Done => return None,
                Phase::Replay => match self.fetch_page().await {
                    Err(error) => return Some(self.fail(error)),
                    Ok(0) => {
                        self.phase = Phase::Live;
                        return Some(FollowItem::Live {
                            last_seq: self.last_seq,
                        });
                    }
                    Ok(_) => {}
                },
                Phase::Live => match self.receiver.recv().await {
                    Ok(event) => match event.seq() {
                        None => return Some(FollowItem::Event(event)),
                        Some(seq) if seq <= self.last_seq => {}
                        Some(seq) if seq == self.last_seq + 1 => {
                            self.last_seq = seq;
                            return Some(FollowItem::Event(event));
                        }
                        Some(seq) => {
                            // A gap: events stored but announced to an earlier receiver state.
                            // Fill it from the store (the event itself included).
                            let missing = usize::try_from(seq - self.last_seq).unwrap_or(1);
                            if let Err(error) = self.fetch(missing).await {
                                return Some(self.fail(error));
                            }
                        }
                    },
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.phase = Phase::Done;
                        return Some(FollowItem::Resync {
                            last_seq: self.last_seq,
                        });
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            }
        }
    }

    /// The next replay page into the buffer (the one read ahead, if any), and starts reading
    /// the page after it when this one was full.
    async fn fetch_page(&mut self) -> Result<usize, StoreError> {
        let page = match self.ahead.take() {
            Some(ahead) => ahead
                .await
                .map_err(|error| StoreError::Task(error.to_string()))??,
            None => (self.replay)(self.last_seq, REPLAY_PAGE).await?,
        };
        let count = page.len();
        if count == REPLAY_PAGE
            && let Some(after) = page.last().and_then(|event| event.seq())
        {
            self.ahead = Some(tokio::spawn((self.replay)(after, REPLAY_PAGE)));
        }
        self.buffer.extend(page.into_iter().map(Arc::new));
        Ok(count)
    }

    async fn fetch(&mut self, limit: usize) -> Result<usize, StoreError> {
        let page = (self.replay)(self.last_seq, limit).await?;
        let count = page.len();
        self.buffer.extend(page.into_iter().map(Arc::new));
        Ok(count)
    }

    fn fail(&mut self, error: StoreError) -> FollowItem<E> {
        self.phase = Phase::Done;
        FollowItem::Failed(Arc::new(error))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    struct Numbered(i64);

    impl Sequenced for Numbered {
        fn seq(&self) -> Option<i64> {
            Some(self.0)
        }
    }

    /// A store of events numbered 1..=`stored`.
    fn stored(stored: i64) -> Replay<Numbered> {
        Arc::new(move |after, limit| {
            Box::pin(async move {
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                Ok((after + 1..=stored.min(after + limit))
                    .map(Numbered)
                    .collect())
            })
        })
    }

    /// Replay across pages read ahead: every stored event once, in order, then `Live` — for a
    /// last page that is full (the page read ahead is empty), partial, and a start mid-page.
    #[tokio::test]
    async fn replay_over_pages_read_ahead_delivers_each_event_once_in_order() {
        let page = i64::try_from(REPLAY_PAGE).unwrap();
        for (count, after) in [
            (2 * page, 0),
            (2 * page + 500, 0),
            (2 * page + 500, 999),
            (3, 0),
        ] {
            let (_sender, receiver) = broadcast::channel(4);
            let mut stream = std::pin::pin!(follow(receiver, stored(count), after));
            let mut expected = after + 1;
            loop {
                match stream.next().await {
                    Some(FollowItem::Event(event)) => {
                        assert_eq!(event.0, expected, "{count} from {after}");
                        expected += 1;
                    }
                    Some(FollowItem::Live { last_seq }) => {
                        assert_eq!(last_seq, count, "{count} from {after}");
                        break;
                    }
                    other => panic!("{count} from {after}: {:?}", other.map(|_| ())),
                }
            }
            assert_eq!(expected, count + 1);
        }
    }
}
