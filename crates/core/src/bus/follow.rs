//! Replay-then-live following of a sequenced event stream, shared by the runtime event stream
//! and chat event streams.
//!
//! The follower subscribes to the live channel *before* it replays, so an event stored during
//! the replay is seen twice and de-duplicated by sequence number; a gap in the live channel is
//! filled from the store. Events without a sequence number (live-only, such as text deltas) are
//! passed through once the follower is live. A follower that falls behind the channel's capacity
//! gets `Resync` and the stream ends; publishers never wait for it.
//!
//! Replay reads pages of [`REPLAY_PAGE`] events; while one page is handed out, the next
//! [`READ_AHEAD`] are already being read on the store's threads, so reading, decoding and the
//! follower's consumer work side by side. A page is read after the last sequence number of the
//! page before it; the pages past the next one are read speculatively, as if numbers had no
//! gaps (a full page of consecutive numbers), and a speculative page is used only when the page
//! before it ended exactly where it began — otherwise it is dropped and read again, so gaps
//! cost speed, never correctness.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::broadcast;

use crate::store::StoreError;

/// Events fetched per replay query.
pub(crate) const REPLAY_PAGE: usize = 1000;

/// Replay pages being read while the follower hands one out.
const READ_AHEAD: usize = 2;

/// An event with a position in its stream (`None` for live-only events).
pub(crate) trait Sequenced: Send + Sync + 'static {
    /// Its sequence number, if stored.
    fn seq(&self) -> Option<i64>;
}

/// Reads stored events with `seq > after`, oldest first, at most `limit`.
pub(crate) type Replay<E> =
    Arc<dyn Fn(i64, usize) -> BoxFuture<'static, Result<Vec<Arc<E>>, StoreError>> + Send + Sync>;

/// A page being read: the sequence number it is read after, and the read.
type Ahead<E> = (
    i64,
    tokio::task::JoinHandle<Result<Vec<Arc<E>>, StoreError>>,
);

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
        ahead: VecDeque::new(),
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
    /// The next replay pages, in order, being read while the current one is handed out.
    ahead: VecDeque<Ahead<E>>,
}

impl<E> Drop for Follower<E> {
    fn drop(&mut self) {
        for (_, read) in self.ahead.drain(..) {
            read.abort();
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

    /// The next replay page into the buffer (the one read ahead, when it was read after the
    /// right number), and keeps [`READ_AHEAD`] pages after it being read when this one was full.
    async fn fetch_page(&mut self) -> Result<usize, StoreError> {
        // Called with the buffer empty: the next page is read after what was handed out.
        let after = self.last_seq;
        let page = match self.ahead.pop_front() {
            Some((read_after, read)) if read_after == after => read
                .await
                .map_err(|error| StoreError::Task(error.to_string()))??,
            stale => {
                // Nothing read ahead, or read past a gap: start again from here.
                if let Some((_, read)) = stale {
                    read.abort();
                }
                for (_, read) in self.ahead.drain(..) {
                    read.abort();
                }
                (self.replay)(after, REPLAY_PAGE).await?
            }
        };
        let count = page.len();
        if count == REPLAY_PAGE
            && let Some(last) = page.last().and_then(|event| event.seq())
        {
            // The page after this one is read after its last number; those past it as if the
            // numbers had no gaps (checked when they are taken).
            let mut next = self.ahead.back().map_or(last, |(read_after, _)| {
                read_after + i64::try_from(REPLAY_PAGE).unwrap_or(i64::MAX)
            });
            if self
                .ahead
                .front()
                .is_some_and(|(read_after, _)| *read_after != last)
            {
                for (_, read) in self.ahead.drain(..) {
                    read.abort();
                }
                next = last;
            }
            while self.ahead.len() < READ_AHEAD {
                #[allow(
                    clippy::disallowed_methods,
                    reason = "a page read ahead, owned by the follower's queue: awaited in order, aborted when the follower drops or restarts"
                )]
                self.ahead
                    .push_back((next, tokio::spawn((self.replay)(next, REPLAY_PAGE))));
                next = next.saturating_add(i64::try_from(REPLAY_PAGE).unwrap_or(i64::MAX));
            }
        }
        self.buffer.extend(page);
        Ok(count)
    }

    async fn fetch(&mut self, limit: usize) -> Result<usize, StoreError> {
        let page = (self.replay)(self.last_seq, limit).await?;
        let count = page.len();
        self.buffer.extend(page);
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
        numbered((1..=stored).collect())
    }

    /// A store of events with the numbers `seqs` (ascending, gaps allowed).
    fn numbered(seqs: Vec<i64>) -> Replay<Numbered> {
        let seqs = Arc::new(seqs);
        Arc::new(move |after, limit| {
            let seqs = Arc::clone(&seqs);
            Box::pin(async move {
                Ok(seqs
                    .iter()
                    .filter(|seq| **seq > after)
                    .take(limit)
                    .map(|seq| Arc::new(Numbered(*seq)))
                    .collect())
            })
        })
    }

    /// Every event of `replay` after `after`, in the order the follower hands them out, up to
    /// `Live` (whose number it checks).
    async fn replayed(replay: Replay<Numbered>, after: i64) -> Vec<i64> {
        let (_sender, receiver) = broadcast::channel(4);
        let mut stream = std::pin::pin!(follow(receiver, replay, after));
        let mut seen = Vec::new();
        loop {
            match stream.next().await {
                Some(FollowItem::Event(event)) => seen.push(event.0),
                Some(FollowItem::Live { last_seq }) => {
                    assert_eq!(last_seq, seen.last().copied().unwrap_or(after));
                    return seen;
                }
                other => panic!("{:?}", other.map(|_| ())),
            }
        }
    }

    /// Numbers with gaps (where pages read ahead as if there were none start in the wrong
    /// place): every stored event once, in order, all the same.
    #[tokio::test]
    async fn replay_across_gaps_delivers_each_event_once_in_order() {
        let page = i64::try_from(REPLAY_PAGE).unwrap();
        let cases: Vec<Vec<i64>> = vec![
            // Every other number: every page after the first is read again.
            (1..=6 * page).filter(|seq| seq % 2 == 0).collect(),
            // One gap in the middle of the third page, the rest consecutive.
            (1..=5 * page + 17)
                .filter(|seq| !(2 * page + 100..2 * page + 400).contains(seq))
                .collect(),
            // A gap exactly at a page boundary.
            (1..=page).chain(3 * page + 1..=6 * page).collect(),
        ];
        for seqs in cases {
            for after in [0, 1, page + 3] {
                let expected: Vec<i64> = seqs.iter().copied().filter(|seq| *seq > after).collect();
                assert_eq!(replayed(numbered(seqs.clone()), after).await, expected);
            }
        }
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
