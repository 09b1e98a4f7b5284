//! Where an undecided staged change stands against the disk now: clear to apply, waiting for
//! an earlier staged change to the same file, or a conflict — and which kind.
//!
//! A change's base is what its paths hold once the earlier undecided changes of its review
//! that write them are applied in order (see [`super`]). So a path that does not hold its base
//! is not always a conflict from outside: the earlier changes to it ("siblings") may still be
//! undecided, or have been discarded. Told apart by what the path should hold given the
//! siblings' decisions: the base of the first sibling when none was applied, the state the
//! last applied one left (the next sibling's base) otherwise.
//!
//! Invariants:
//! - A path that holds its base is clear, whatever the siblings' decisions.
//! - A path unreadable now, or not holding what its siblings' decisions leave it, is an
//!   `external` conflict: the file changed outside since staging.
//! - A path a later staged change to it was applied to first (out of order) is an
//!   `earlier_change` conflict too: the review's own changes, not an outside one, moved it.
//! - Otherwise it holds what the siblings' decisions leave it, and its change waits for them
//!   when every sibling after the last applied one is still undecided (or being applied), and
//!   is an `earlier_change` conflict when one of them was discarded or failed.
//! - A change's standing is the worst of its paths' (external over earlier change over
//!   waiting over clear).

use souz_protocol::review::{ChangeDecision, ConflictReason};

use super::{Base, StoredStaged};
use crate::history::snapshot::capture;
use crate::sandbox::Sandbox;

/// Where a change (or one of its paths) stands, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Standing {
    /// Holds its base: applying finds what was staged.
    Clear,
    /// An earlier staged change to the file is still undecided: applied in order, after it,
    /// this one is clear.
    Waiting,
    /// An earlier staged change to the file was discarded or failed (or a later one applied
    /// first): this one was staged on top of a state the file will not reach.
    Earlier,
    /// The file changed outside since staging (or cannot be read).
    External,
}

impl Standing {
    /// The conflict the person is shown: none while clear or waiting.
    pub(crate) fn conflict(self) -> Option<ConflictReason> {
        match self {
            Self::Clear | Self::Waiting => None,
            Self::Earlier => Some(ConflictReason::EarlierChange),
            Self::External => Some(ConflictReason::External),
        }
    }
}

/// The standing of `changes[index]` (`changes`: its review's, in staging order), each of its
/// paths compared with the disk now.
pub(crate) fn of_change(
    sandbox: &Sandbox,
    changes: &[StoredStaged],
    index: usize,
    limit: u64,
) -> Standing {
    changes.get(index).map_or(Standing::Clear, |change| {
        change
            .base
            .iter()
            .map(|base| of_path(sandbox, changes, index, base, limit))
            .max()
            .unwrap_or(Standing::Clear)
    })
}

/// The standing of the path `base` of `changes[index]`, compared with the disk now.
pub(crate) fn of_path(
    sandbox: &Sandbox,
    changes: &[StoredStaged],
    index: usize,
    base: &Base,
    limit: u64,
) -> Standing {
    let now = capture(&sandbox.beneath(), &base.path, limit)
        .ok()
        .map(|captured| captured.snapshot);
    let Some(now) = now else {
        return Standing::External;
    };
    let siblings: Vec<(&Base, Option<ChangeDecision>)> = changes
        .get(..index)
        .unwrap_or_default()
        .iter()
        .filter_map(|change| {
            change
                .base
                .iter()
                .find(|earlier| earlier.path == base.path)
                .map(|earlier| (earlier, change.decision))
        })
        .collect();
    let later_applied = changes
        .get(index + 1..)
        .unwrap_or_default()
        .iter()
        .any(|change| {
            change.decision == Some(ChangeDecision::Applied)
                && change.base.iter().any(|later| later.path == base.path)
        });
    classify(base, (&siblings, later_applied), |expected| {
        expected.holds(&now)
    })
}

/// The standing of a path whose base is `base`, with its `siblings` (the earlier changes'
/// bases of the same path and their decisions, in staging order) and whether a later change
/// to it was applied; `holds` tells whether the path holds a given base now.
fn classify(
    base: &Base,
    (siblings, later_applied): (&[(&Base, Option<ChangeDecision>)], bool),
    holds: impl Fn(&Base) -> bool,
) -> Standing {
    if holds(base) {
        return Standing::Clear;
    }
    if later_applied {
        return Standing::Earlier;
    }
    let last_applied = siblings
        .iter()
        .rposition(|(_, decision)| *decision == Some(ChangeDecision::Applied));
    let after = last_applied.map_or(0, |last| last + 1);
    // What the path should hold: the first sibling's base when none was applied, the state
    // the last applied one left (the base of the one after it) otherwise.
    let expected = siblings.get(after).map_or(base, |(next, _)| *next);
    if !holds(expected) {
        return Standing::External;
    }
    let pending = siblings.get(after..).unwrap_or_default();
    if pending
        .iter()
        .all(|(_, decision)| matches!(decision, None | Some(ChangeDecision::Applying)))
    {
        Standing::Waiting
    } else {
        Standing::Earlier
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn file(content: &str) -> Base {
        Base::file(PathBuf::from("/w/a.txt"), content.as_bytes(), Some(0o644))
    }

    /// The standing of a path holding `disk`, whose change's base is `own`, after `siblings`.
    fn standing(disk: &str, own: &str, siblings: &[(&str, Option<ChangeDecision>)]) -> Standing {
        let disk = file(disk);
        let own = file(own);
        let bases: Vec<Base> = siblings.iter().map(|(content, _)| file(content)).collect();
        let siblings: Vec<(&Base, Option<ChangeDecision>)> = bases
            .iter()
            .zip(siblings)
            .map(|(base, (_, decision))| (base, *decision))
            .collect();
        classify(&own, (&siblings, false), |expected| {
            expected.hash == disk.hash
        })
    }

    #[test]
    fn a_path_is_told_clear_waiting_earlier_or_external() {
        use ChangeDecision::{Applied, Applying, Discarded, Failed};
        // Alone: it holds its base or changed outside.
        assert_eq!(standing("a", "a", &[]), Standing::Clear);
        assert_eq!(standing("x", "a", &[]), Standing::External);
        // After "a" → "b" (staged on "a"), this change's base is "b".
        assert_eq!(standing("b", "b", &[("a", Some(Applied))]), Standing::Clear);
        assert_eq!(standing("a", "b", &[("a", None)]), Standing::Waiting);
        assert_eq!(
            standing("a", "b", &[("a", Some(Applying))]),
            Standing::Waiting
        );
        assert_eq!(
            standing("a", "b", &[("a", Some(Discarded))]),
            Standing::Earlier
        );
        assert_eq!(
            standing("a", "b", &[("a", Some(Failed))]),
            Standing::Earlier
        );
        assert_eq!(standing("x", "b", &[("a", None)]), Standing::External);
        assert_eq!(
            standing("x", "b", &[("a", Some(Discarded))]),
            Standing::External
        );
        // Applied, yet the file is not what it left: changed outside.
        assert_eq!(
            standing("x", "b", &[("a", Some(Applied))]),
            Standing::External
        );
        // "a" → "b" applied, "b" → "c" discarded: the file holds "b", what the applied one
        // left; this change (base "c") followed the discarded one.
        assert_eq!(
            standing("b", "c", &[("a", Some(Applied)), ("b", Some(Discarded))]),
            Standing::Earlier
        );
        assert_eq!(
            standing("b", "c", &[("a", Some(Applied)), ("b", None)]),
            Standing::Waiting
        );
        assert_eq!(
            standing("x", "c", &[("a", Some(Applied)), ("b", Some(Discarded))]),
            Standing::External
        );
        // A discarded first change and an undecided second: the second's discard decides.
        assert_eq!(
            standing("a", "c", &[("a", Some(Discarded)), ("b", None)]),
            Standing::Earlier
        );
        // The first of two, after the second was applied first.
        let first = file("a");
        let second_applied = |disk: &str| {
            let disk = file(disk);
            classify(&first, (&[], true), |expected| expected.hash == disk.hash)
        };
        assert_eq!(second_applied("b"), Standing::Earlier);
        assert_eq!(second_applied("a"), Standing::Clear);
    }

    #[test]
    fn a_base_without_a_mode_holds_a_file_of_any_mode() {
        let created = Base::file(PathBuf::from("/w/a.txt"), b"new", None);
        let mut now = crate::history::snapshot::Snapshot::absent();
        now.kind = souz_protocol::history::PathKind::File;
        now.hash = created.hash.clone();
        now.mode = Some(0o640);
        assert!(created.holds(&now));
        let edited = Base::file(PathBuf::from("/w/a.txt"), b"new", Some(0o644));
        assert!(!edited.holds(&now), "a base with a mode wants that mode");
        now.hash = Some("other".into());
        assert!(!created.holds(&now));
    }
}
