//! What a schedule fires on: a cron expression read in an IANA time zone, or one instant.
//!
//! Accepted text (see [`Spec::parse`]):
//! - a cron expression of 5 fields (`30 8 * * 1-5`) or 6 with seconds first
//!   (`0 */15 * * * *`), with croner's `L`, `W`, `#` and `@daily`-style nicknames; a year field
//!   is refused;
//! - `at 2026-12-24 09:00` (wall time in the zone), or `at <RFC 3339 time>`;
//! - `in 2 hours`, `in 30 minutes` (also seconds, days, weeks): resolved to an absolute instant
//!   when parsed, and stored as `at <RFC 3339 UTC>` ([`Spec::text`]) so a restart does not move it.
//!
//! Daylight saving time follows croner's (OCPS) rules, which this module adopts:
//! - a wall time that does not exist (02:30 on a spring-forward day) fires once, at the first
//!   instant after the gap (03:00 local); a one-shot `at` in a gap moves the same way;
//! - a wall time that occurs twice (01:30 on a fall-back day) fires once for a fixed-time job,
//!   at the earlier instant; an interval job (`*/15` minutes) fires at both instants, since
//!   both are real quarter hours that elapse;
//! - zones without DST (Europe/Moscow) are plain.
//!
//! Invariant: a [`Spec`] always holds a valid expression and a known zone; parsing failures are
//! [`SpecError`]s with a message for the person, and nothing is stored from them.

use std::str::FromStr;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// Why a spec or zone is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The zone is not an IANA time zone name.
    #[error("unknown time zone '{0}': use an IANA name such as Europe/Berlin or America/New_York")]
    UnknownZone(String),
    /// The cron expression does not parse.
    #[error("invalid cron expression '{expression}': {reason}")]
    InvalidCron {
        /// The expression as given.
        expression: String,
        /// What croner said.
        reason: String,
    },
    /// An `at` or `in` spec does not parse.
    #[error("invalid time '{text}': {reason}")]
    InvalidTime {
        /// The text as given.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The spec never fires after now (a one-shot in the past, an impossible date).
    #[error("'{0}' never fires after now")]
    NeverFires(String),
}

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq)]
enum Trigger {
    /// Every match of the expression, read in the zone.
    Cron(Box<Cron>),
    /// Once.
    At(DateTime<Utc>),
}

/// A parsed spec with its zone.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    text: String,
    zone: Tz,
    trigger: Trigger,
}

/// The zone named `name` (an IANA name, case as in the database).
pub(crate) fn parse_zone(name: &str) -> Result<Tz, SpecError> {
    Tz::from_str(name.trim()).map_err(|_| SpecError::UnknownZone(name.to_owned()))
}

impl Spec {
    /// Parses `text` in the zone named `zone`; `now` resolves relative times (`in 2 hours`).
    pub(crate) fn parse(text: &str, zone: &str, now: DateTime<Utc>) -> Result<Self, SpecError> {
        let zone = parse_zone(zone)?;
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        let trigger = if let Some(rest) = lower.strip_prefix("at ") {
            Trigger::At(parse_at(trimmed, rest.trim(), zone)?)
        } else if let Some(rest) = lower.strip_prefix("in ") {
            Trigger::At(now + parse_relative(trimmed, rest.trim())?)
        } else {
            Trigger::Cron(Box::new(parse_cron(trimmed)?))
        };
        let text = match &trigger {
            Trigger::At(instant) => format!("at {}", instant.to_rfc3339()),
            Trigger::Cron(_) => trimmed.to_owned(),
        };
        Ok(Self {
            text,
            zone,
            trigger,
        })
    }

    /// [`Spec::parse`], refusing a spec with no fire after `now` (what creating one needs).
    pub(crate) fn parse_new(text: &str, zone: &str, now: DateTime<Utc>) -> Result<Self, SpecError> {
        let spec = Self::parse(text, zone, now)?;
        if spec.next_fire(now).is_none() {
            return Err(SpecError::NeverFires(text.trim().to_owned()));
        }
        Ok(spec)
    }

    /// The text to store: cron as given, one-shots as `at <RFC 3339 UTC>`.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The zone's IANA name.
    pub(crate) fn zone_name(&self) -> &'static str {
        self.zone.name()
    }

    /// When it fires, in words for an approval: croner's English description of a cron
    /// expression ("at 09:00, on Monday"), or `None` for a one-shot (its fire time says it all).
    pub(crate) fn describe(&self) -> Option<String> {
        match &self.trigger {
            Trigger::At(_) => None,
            Trigger::Cron(cron) => {
                let text = cron.describe();
                let text = text.trim().trim_end_matches('.');
                let mut chars = text.chars();
                let first = chars.next()?;
                Some(first.to_lowercase().chain(chars).collect())
            }
        }
    }

    /// Whether it fires once only.
    #[cfg(test)]
    pub(crate) fn is_one_shot(&self) -> bool {
        matches!(self.trigger, Trigger::At(_))
    }

    /// The first fire strictly after `after`; `None` when there is none (a one-shot that
    /// passed, or no match before croner's search limit).
    pub(crate) fn next_fire(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match &self.trigger {
            Trigger::At(instant) => (*instant > after).then_some(*instant),
            Trigger::Cron(cron) => cron
                .find_next_occurrence(&after.with_timezone(&self.zone), false)
                .ok()
                .map(|fire| fire.with_timezone(&Utc)),
        }
    }

    /// The fires in `(after, until]`, newest first, at most `limit` of them.
    pub(crate) fn fires_back(
        &self,
        after: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: usize,
    ) -> Vec<DateTime<Utc>> {
        let mut fires = Vec::new();
        match &self.trigger {
            Trigger::At(instant) => {
                if *instant > after && *instant <= until && limit > 0 {
                    fires.push(*instant);
                }
            }
            Trigger::Cron(cron) => {
                let mut cursor = until.with_timezone(&self.zone);
                let mut inclusive = true;
                while fires.len() < limit {
                    let Ok(fire) = cron.find_previous_occurrence(&cursor, inclusive) else {
                        break;
                    };
                    let fire_utc = fire.with_timezone(&Utc);
                    if fire_utc <= after {
                        break;
                    }
                    fires.push(fire_utc);
                    cursor = fire;
                    inclusive = false;
                }
            }
        }
        fires
    }

    /// The next `count` fires after `after`, oldest first.
    pub(crate) fn preview(&self, after: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let mut fires = Vec::with_capacity(count);
        let mut cursor = after;
        while fires.len() < count {
            let Some(fire) = self.next_fire(cursor) else {
                break;
            };
            fires.push(fire);
            cursor = fire;
        }
        fires
    }
}

/// A cron expression of 5 or 6 fields (seconds optional), without a year.
fn parse_cron(text: &str) -> Result<Cron, SpecError> {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(text)
        .map_err(|error| SpecError::InvalidCron {
            expression: text.to_owned(),
            reason: error.to_string(),
        })
}

/// `rest` of `at <rest>`: RFC 3339, or a wall time in `zone` (`2026-12-24 09:00[:ss]`,
/// `2026-12-24T09:00`).
fn parse_at(text: &str, rest: &str, zone: Tz) -> Result<DateTime<Utc>, SpecError> {
    if let Ok(instant) = DateTime::parse_from_rfc3339(&rest.to_ascii_uppercase()) {
        return Ok(instant.with_timezone(&Utc));
    }
    let wall = [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ]
    .iter()
    .find_map(|format| NaiveDateTime::parse_from_str(rest, format).ok())
    .ok_or_else(|| SpecError::InvalidTime {
        text: text.to_owned(),
        reason: "expected a date and time such as 2026-12-24 09:00, or RFC 3339",
    })?;
    wall_to_instant(zone, wall).ok_or_else(|| SpecError::InvalidTime {
        text: text.to_owned(),
        reason: "the time cannot be placed in the zone",
    })
}

/// The instant of a wall time in `zone`: the earlier of two (fall back), the first instant
/// after the gap for one that does not exist (spring forward), as croner places cron fires.
fn wall_to_instant(zone: Tz, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
    match zone.from_local_datetime(&wall) {
        LocalResult::Single(instant) => Some(instant.with_timezone(&Utc)),
        LocalResult::Ambiguous(earlier, _) => Some(earlier.with_timezone(&Utc)),
        LocalResult::None => {
            // Gaps are whole minutes and at most a day: the first wall time after `wall` that
            // exists, walked a minute at a time, is where the clock jumped to.
            let mut probe = wall;
            for _ in 0..(24 * 60) {
                probe += Duration::minutes(1);
                if let Some(after) = zone.from_local_datetime(&probe).earliest() {
                    return Some(after.with_timezone(&Utc));
                }
            }
            None
        }
    }
}

/// `rest` of `in <rest>`: `<count> <unit>` with unit seconds, minutes, hours, days or weeks
/// (singular, plural or short: `s`, `m`, `min`, `h`, `d`, `w`).
fn parse_relative(text: &str, rest: &str) -> Result<Duration, SpecError> {
    let invalid = |reason| SpecError::InvalidTime {
        text: text.to_owned(),
        reason,
    };
    let (count, unit) = match rest.split_once(char::is_whitespace) {
        Some((count, unit)) => (count.trim(), unit.trim()),
        None => {
            let split = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            (&rest[..split], rest[split..].trim())
        }
    };
    let count: i64 = count
        .parse()
        .ok()
        .filter(|count| *count > 0 && *count <= 100_000)
        .ok_or_else(|| invalid("expected a positive number such as 'in 2 hours'"))?;
    let seconds = match unit {
        "s" | "sec" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        _ => return Err(invalid("expected seconds, minutes, hours, days or weeks")),
    };
    Ok(Duration::seconds(count * seconds))
}

#[cfg(test)]
mod tests;
