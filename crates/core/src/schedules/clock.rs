//! The scheduler's clock: what time it is, and a sleep until a wall-clock instant. The engine
//! takes it as a trait object, so tests drive it with a [`ManualClock`] they advance, and no
//! test waits for a real minute.
//!
//! The [`SystemClock`] sleeps on tokio's timer, which does not advance while the machine is
//! suspended: a sleep is therefore capped at [`SystemClock::RECHECK`] and the wall clock is read
//! again, so a fire due during a suspend is seen at most that long after the machine wakes
//! (one wake-up per recheck while idle, none per minute).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};
#[cfg(any(test, feature = "test-support"))]
use tokio::sync::watch;

/// A sleep handed out by a [`Clock`].
pub(crate) type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What the scheduler reads the time from and sleeps on.
pub(crate) trait Clock: Send + Sync + 'static {
    /// The current wall-clock time.
    fn now(&self) -> DateTime<Utc>;
    /// Completes at `at` or later (possibly earlier for the system clock, which caps sleeps;
    /// callers read [`Clock::now`] again when it completes).
    fn sleep_until(&self, at: DateTime<Utc>) -> Sleep;
}

/// A shared clock.
pub(crate) type SharedClock = Arc<dyn Clock>;

/// The machine's clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemClock;

impl SystemClock {
    /// The longest single sleep before the wall clock is read again.
    pub(crate) const RECHECK: std::time::Duration = std::time::Duration::from_secs(300);
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Sleep {
        let wait = (at - Utc::now())
            .to_std()
            .unwrap_or_default()
            .min(Self::RECHECK);
        Box::pin(tokio::time::sleep(wait))
    }
}

/// A clock that moves only when told: [`ManualClock::advance`] and [`ManualClock::set`] wake
/// every sleep whose instant has come.
#[cfg(any(test, feature = "test-support"))]
#[derive(Debug, Clone)]
pub(crate) struct ManualClock {
    now: Arc<watch::Sender<DateTime<Utc>>>,
}

#[cfg(any(test, feature = "test-support"))]
impl ManualClock {
    /// A clock reading `start`.
    pub(crate) fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Arc::new(watch::Sender::new(start)),
        }
    }

    /// Moves the clock forward by `by`.
    pub(crate) fn advance(&self, by: chrono::Duration) {
        self.now.send_modify(|now| *now += by);
    }

    /// Sets the clock (forward or back).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn set(&self, to: DateTime<Utc>) {
        self.now.send_replace(to);
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.borrow()
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Sleep {
        let mut receiver = self.now.subscribe();
        Box::pin(async move {
            // The sender lives as long as the clock; if it went, nothing will wake the sleep.
            if receiver.wait_for(|now| *now >= at).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[tokio::test]
    async fn a_manual_sleep_ends_when_the_clock_reaches_its_instant_and_not_before() {
        let start = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or_default();
        let clock = ManualClock::new(start);
        let mut sleep = clock.sleep_until(start + chrono::Duration::hours(1));
        assert!(futures::poll!(sleep.as_mut()).is_pending());
        clock.advance(chrono::Duration::minutes(59));
        assert!(futures::poll!(sleep.as_mut()).is_pending());
        clock.advance(chrono::Duration::minutes(1));
        tokio::time::timeout(std::time::Duration::from_secs(5), sleep)
            .await
            .unwrap_or_else(|_| panic!("the sleep did not end"));
        assert_eq!(clock.now(), start + chrono::Duration::hours(1));
    }
}
