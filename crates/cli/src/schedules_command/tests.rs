//! The pieces of `souz schedules` that need no daemon: how flags become a spec, a missed
//! policy and an envelope, and what counts as a typed yes. The commands themselves are tested
//! end to end against a real daemon (`tests/e2e/schedules.rs`).

use super::*;

fn when(cron: Option<&str>, at: Option<&str>, after: Option<&str>) -> When {
    When {
        cron: cron.map(str::to_owned),
        at: at.map(str::to_owned),
        after: after.map(str::to_owned),
    }
}

#[test]
fn flags_become_the_spec_forms_the_daemon_documents() {
    assert_eq!(
        when(Some(" 30 8 * * 1-5 "), None, None).spec(),
        "30 8 * * 1-5"
    );
    assert_eq!(
        when(None, Some("2026-12-24 09:00"), None).spec(),
        "at 2026-12-24 09:00"
    );
    // Typing the keyword too does not double it; a word merely starting with it is kept.
    assert_eq!(
        when(None, Some("At 2026-12-24 09:00"), None).spec(),
        "at 2026-12-24 09:00"
    );
    assert_eq!(when(None, None, Some("2 hours")).spec(), "in 2 hours");
    assert_eq!(
        when(None, None, Some("in 30 minutes")).spec(),
        "in 30 minutes"
    );
    assert_eq!(when(None, None, Some("inf")).spec(), "in inf");
}

#[test]
fn missed_policies_parse_as_typed() {
    assert_eq!(parse_missed("skip"), Ok(MissedPolicy::Skip));
    assert_eq!(parse_missed("run-once"), Ok(MissedPolicy::RunOnce));
    assert_eq!(parse_missed("run_once"), Ok(MissedPolicy::RunOnce));
    assert_eq!(
        parse_missed("catch-up:3"),
        Ok(MissedPolicy::CatchUp { limit: 3 })
    );
    for wrong in [
        "catch-up",
        "catch-up:0",
        "catch-up:101",
        "catch-up:x",
        "always",
    ] {
        assert!(parse_missed(wrong).is_err(), "{wrong}");
    }
}

#[test]
fn relative_folders_are_made_absolute_and_others_kept() {
    assert_eq!(folder("/srv/notes").unwrap(), "/srv/notes");
    assert_eq!(folder("~/Downloads").unwrap(), "~/Downloads");
    let relative = folder("notes").unwrap();
    assert!(std::path::Path::new(&relative).is_absolute(), "{relative}");
    assert!(relative.ends_with("notes"), "{relative}");
}

#[test]
fn only_yes_in_either_language_confirms() {
    for yes in ["y", "Y", "yes\n", " Да ", "д"] {
        assert!(is_yes(yes), "{yes:?}");
    }
    for no in ["", "\n", "n", "no", "нет", "yess"] {
        assert!(!is_yes(no), "{no:?}");
    }
}

#[test]
fn an_empty_envelope_is_said_to_be_read_only() {
    let lines = view::envelope_lines(&ScheduleEnvelope::default(), "");
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("read-only tools only"), "{lines:?}");
    let lines = view::envelope_lines(
        &ScheduleEnvelope {
            tools: vec!["NewFile".to_owned()],
            folders: vec!["~/notes".to_owned()],
            hosts: Vec::new(),
        },
        "",
    );
    assert!(lines[0].contains("NewFile"), "{lines:?}");
    assert!(lines[1].contains("~/notes"), "{lines:?}");
    assert!(lines[2].ends_with("none"), "{lines:?}");
}

#[test]
fn short_ids_are_as_long_as_it_takes_to_be_unique() {
    // UUIDv7 made in the same millisecond share 13 characters.
    let ids = [
        "01a24b8d-52b5-75ec-8b79-eb598bdc7545",
        "01a24b8d-52b5-7a00-8b79-eb598bdc7545",
        "ffee0000-0000-7000-8000-000000000000",
    ];
    let short = view::short_ids(ids.iter().copied());
    assert_eq!(short[ids[0]], "01a24b8d-52b5-75");
    assert_eq!(short[ids[1]], "01a24b8d-52b5-7a");
    assert_eq!(short[ids[2]], "ffee0000", "never shorter than 8");
    for id in ids {
        let prefix = &short[id];
        let matching = ids
            .iter()
            .filter(|other| other.starts_with(prefix.as_str()));
        assert_eq!(matching.count(), 1, "{prefix}");
    }
}
