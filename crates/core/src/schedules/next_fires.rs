//! The cached next fire of every schedule (`schedules.next_fire`), and when it can be trusted.
//!
//! Computing a next fire parses a cron spec and walks a time zone's rules: about 15 µs a
//! schedule, 150 ms for 10,000. An engine starting (the daemon's start, and every restart in
//! place after a change of `config.toml`) reads the cached values instead, one row each.
//!
//! Invariants:
//! - Every write of a schedule keeps `next_fire = spec.next_fire(handled_until)` when it is
//!   enabled, `NULL` when it is not (or never fires again): the service when it creates or
//!   saves one, the engine when it decides occurrences ([`super::store::set_handled`]).
//! - The cache is trusted only when it was computed under the rules this build uses: this
//!   build of Souz (which pins the cron and time-zone crates) and its IANA time-zone
//!   database. The rules are recorded in `daemon_state`; when they differ (an upgrade, a
//!   database from another build), the engine recomputes every enabled schedule's next fire
//!   once, writes the cache and the rules back in one transaction, and then trusts it.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::spec::Spec;
use super::store::pending_fires;
use crate::store::codec::{from_time, to_time};
use crate::store::{CachedStatements, StoreError};

/// The `daemon_state` key naming the rules the cache was computed under.
const RULES_KEY: &str = "schedules.next_fire_rules";

/// The rules next fires are computed under by this build.
pub(crate) fn rules() -> String {
    format!(
        "souz {}; tzdb {}",
        env!("CARGO_PKG_VERSION"),
        chrono_tz::IANA_TZDB_VERSION
    )
}

/// The next fire after `handled_until` of `spec` read in `zone`, or `None` when it does not
/// parse (any more) or never fires again.
pub(crate) fn compute(
    spec: &str,
    zone: &str,
    handled_until: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    Spec::parse(spec, zone, handled_until)
        .ok()?
        .next_fire(handled_until)
}

/// Schedules' ids with their next fire.
pub(crate) type Fires = Vec<(String, DateTime<Utc>)>;

/// How the next fires were had, for diagnostics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Read from the cache.
    Cached,
    /// Recomputed (the rules changed, or were never recorded), and the cache rewritten.
    Recomputed,
}

/// Every enabled schedule's next fire, from the cache when it was computed under `rules`,
/// otherwise recomputed and written back with `rules` (inside `tx`).
pub(crate) fn load(
    tx: &rusqlite::Transaction<'_>,
    rules: &str,
) -> Result<(Fires, Source), StoreError> {
    if recorded_rules(tx)?.as_deref() == Some(rules) {
        return Ok((cached(tx)?, Source::Cached));
    }
    let fires = pending_fires(tx, compute)?;
    tx.execute_cached(
        "UPDATE schedules SET next_fire = NULL WHERE enabled = 1",
        [],
    )?;
    {
        let mut update = tx.prepare_cached("UPDATE schedules SET next_fire = ?2 WHERE id = ?1")?;
        for (id, at) in &fires {
            update.execute(params![id, to_time(*at)])?;
        }
    }
    tx.execute_cached(
        "INSERT INTO daemon_state (key, value) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![RULES_KEY, rules],
    )?;
    Ok((fires, Source::Recomputed))
}

/// Forgets the rules the cache was computed under: the next [`load`] computes every next fire
/// again (as after an upgrade). For benchmarks.
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn forget_rules(connection: &Connection) -> Result<(), StoreError> {
    connection.execute_cached("DELETE FROM daemon_state WHERE key = ?1", [RULES_KEY])?;
    Ok(())
}

fn recorded_rules(connection: &Connection) -> Result<Option<String>, StoreError> {
    Ok(connection
        .query_row(
            "SELECT value FROM daemon_state WHERE key = ?1",
            [RULES_KEY],
            |row| row.get(0),
        )
        .optional()?)
}

/// The cached next fire of every enabled schedule that has one.
fn cached(connection: &Connection) -> Result<Fires, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT id, next_fire FROM schedules WHERE enabled = 1 AND next_fire IS NOT NULL",
    )?;
    let mut rows = statement.query([])?;
    let mut fires = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let at: String = row.get(1)?;
        fires.push((id, from_time("schedules.next_fire", &at)?));
    }
    Ok(fires)
}

#[cfg(test)]
mod tests;
