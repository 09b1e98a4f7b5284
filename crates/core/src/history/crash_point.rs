//! Test-only crash points in the history's write path: compiled only into debug builds
//! (`debug_assertions`), so a release build contains none of it — not this module, not its
//! calls, not the variable's name.
//!
//! With `SOUZ_TEST_CRASH_AT` naming a point, the process aborts the first time it reaches it:
//! no destructor, no flush, no reply, as `kill -9` leaves it. The end-to-end crash test
//! (`tests/e2e/history_crash.rs`) stops a real daemon this way exactly between the history's
//! two commits and the file write, then checks what the next start makes of it.
//!
//! Invariants: the variable is read once, the first time any point is reached (a process-wide
//! value on purpose: the hook must cost nothing to thread through); an unknown name aborts
//! nothing (and is logged once).

use std::sync::OnceLock;

use crate::config::env::{Var, read};

/// A place in the write path where a test may stop the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CrashPoint {
    /// The change is committed `pending`, its before-states kept; the file is not written yet.
    AfterCheckpoint,
    /// The file is written; its change is not recorded `done` yet.
    AfterWrite,
}

impl CrashPoint {
    const ALL: [Self; 2] = [Self::AfterCheckpoint, Self::AfterWrite];

    /// The point's name in `SOUZ_TEST_CRASH_AT`.
    const fn name(self) -> &'static str {
        match self {
            Self::AfterCheckpoint => "history.after_checkpoint",
            Self::AfterWrite => "history.after_write",
        }
    }

    /// The point named `name`.
    fn named(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|point| point.name() == name.trim())
    }
}

/// The point `SOUZ_TEST_CRASH_AT` names, read once.
static CHOSEN: OnceLock<Option<CrashPoint>> = OnceLock::new();

/// Aborts the process when `point` is the one `SOUZ_TEST_CRASH_AT` names.
pub(crate) fn reached(point: CrashPoint) {
    let chosen = CHOSEN.get_or_init(|| {
        let name = read(Var::TestCrashAt)?;
        let chosen = CrashPoint::named(&name);
        if chosen.is_none() {
            tracing::warn!(%name, "SOUZ_TEST_CRASH_AT names no crash point; none is armed");
        }
        chosen
    });
    if *chosen == Some(point) {
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_found_by_their_names_only() {
        for point in CrashPoint::ALL {
            assert_eq!(CrashPoint::named(point.name()), Some(point));
        }
        assert_eq!(
            CrashPoint::named(" history.after_write\n"),
            Some(CrashPoint::AfterWrite)
        );
        assert_eq!(CrashPoint::named("history.after"), None);
        assert_eq!(CrashPoint::named(""), None);
    }
}
