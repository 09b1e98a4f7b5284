//! Which occurrences of a schedule are due at a wake-up, after the missed policy: a pure
//! function of the spec, the policy, where deciding got to and now, tested as a table.
//!
//! An occurrence is on time when it is at most [`GRACE`] old when seen: the engine wakes at
//! the fire time, so only a gap (the machine slept, Souz was stopped, the process was starved)
//! makes one older. Older ones are missed and follow [`MissedPolicy`]; missed occurrences that
//! the policy drops are not recorded (a minutely job across a week away would be ten thousand
//! rows saying nothing).

use chrono::{DateTime, Duration, Utc};
use souz_protocol::schedules::MissedPolicy;

use super::spec::Spec;

/// How late an occurrence may be seen and still count as on time.
pub(crate) const GRACE: Duration = Duration::seconds(60);
/// The most on-time occurrences taken at one wake-up (a per-second job seen a grace late).
const ON_TIME_LIMIT: usize = 120;
/// The most missed occurrences a catch-up policy runs.
pub(crate) const CATCH_UP_LIMIT: u32 = 100;

/// The occurrences due now, each list oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Due {
    /// Missed occurrences the policy keeps; they run one after another.
    pub(crate) missed: Vec<DateTime<Utc>>,
    /// On-time occurrences; they follow the overlap policy.
    pub(crate) on_time: Vec<DateTime<Utc>>,
}

/// The occurrences in `(handled_until, now]`, sorted into missed (kept by `policy`) and on time.
pub(crate) fn due(
    spec: &Spec,
    policy: MissedPolicy,
    handled_until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Due {
    let late_edge = now - GRACE;
    let mut on_time = spec.fires_back(handled_until.max(late_edge), now, ON_TIME_LIMIT);
    on_time.reverse();
    let keep = match policy {
        MissedPolicy::Skip => 0,
        MissedPolicy::RunOnce => 1,
        MissedPolicy::CatchUp { limit } => limit.min(CATCH_UP_LIMIT) as usize,
    };
    let mut missed = if handled_until < late_edge {
        spec.fires_back(handled_until, late_edge, keep)
    } else {
        Vec::new()
    };
    missed.reverse();
    Due { missed, on_time }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, day, hour, minute, 0).unwrap()
    }

    /// A daily 09:00 UTC job, last handled on the 2nd at 09:00, seen again on the 5th at 10:00
    /// (three days asleep: the 3rd, 4th and 5th were missed).
    #[test]
    fn missed_policies_across_a_three_day_sleep() {
        let spec = Spec::parse("0 9 * * *", "UTC", at(1, 0, 0)).unwrap();
        let handled = at(2, 9, 0);
        let now = at(5, 10, 0);
        let cases = [
            (MissedPolicy::Skip, vec![]),
            (MissedPolicy::RunOnce, vec![at(5, 9, 0)]),
            (
                MissedPolicy::CatchUp { limit: 2 },
                vec![at(4, 9, 0), at(5, 9, 0)],
            ),
            (
                MissedPolicy::CatchUp { limit: 10 },
                vec![at(3, 9, 0), at(4, 9, 0), at(5, 9, 0)],
            ),
        ];
        for (policy, missed) in cases {
            let due = due(&spec, policy, handled, now);
            assert_eq!(due.missed, missed, "{policy:?}");
            assert!(due.on_time.is_empty(), "{policy:?}");
        }
    }

    #[test]
    fn an_occurrence_seen_within_the_grace_is_on_time_whatever_the_policy() {
        let spec = Spec::parse("*/15 * * * *", "UTC", at(1, 0, 0)).unwrap();
        for policy in [MissedPolicy::Skip, MissedPolicy::RunOnce] {
            let due = due(
                &spec,
                policy,
                at(2, 8, 45),
                at(2, 9, 0) + Duration::seconds(30),
            );
            assert_eq!(due.on_time, vec![at(2, 9, 0)], "{policy:?}");
            assert!(due.missed.is_empty(), "{policy:?}");
        }
        // Nothing new since the last decision: nothing due.
        assert_eq!(
            due(&spec, MissedPolicy::RunOnce, at(2, 9, 0), at(2, 9, 10)),
            Due::default()
        );
    }

    #[test]
    fn a_minutely_job_after_a_week_away_keeps_only_what_the_policy_says() {
        let spec = Spec::parse("* * * * *", "UTC", at(1, 0, 0)).unwrap();
        let due = due(
            &spec,
            MissedPolicy::CatchUp { limit: 1_000 },
            at(1, 0, 0),
            at(8, 0, 0),
        );
        assert_eq!(due.missed.len(), CATCH_UP_LIMIT as usize);
        assert_eq!(
            due.missed.last(),
            Some(&(at(8, 0, 0) - Duration::minutes(1)))
        );
        assert_eq!(due.on_time, vec![at(8, 0, 0)]);
    }
}
