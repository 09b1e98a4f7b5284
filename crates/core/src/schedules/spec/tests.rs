use chrono::{DateTime, Utc};

use super::*;

fn utc(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

/// The next `count` fires of `cron` in `zone` after `after`, as RFC 3339 UTC text.
fn fires(cron: &str, zone: &str, after: &str, count: usize) -> Vec<String> {
    let spec = Spec::parse(cron, zone, utc(after)).unwrap();
    spec.preview(utc(after), count)
        .into_iter()
        .map(|fire| fire.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .collect()
}

/// Daily jobs across the DST changes of 2026: a wall time that does not exist fires once, at
/// the first instant after the gap; one that occurs twice fires once, at the earlier instant.
#[test]
fn daily_jobs_fire_once_on_dst_days() {
    let table: &[(&str, &str, &str, [&str; 3])] = &[
        // New York springs forward on 8 March at 02:00 EST (07:00Z) to 03:00 EDT.
        (
            "30 2 * * *",
            "America/New_York",
            "2026-03-07T05:00:00Z",
            [
                "2026-03-07T07:30:00Z",
                "2026-03-08T07:00:00Z",
                "2026-03-09T06:30:00Z",
            ],
        ),
        (
            "30 1 * * *",
            "America/New_York",
            "2026-03-07T05:00:00Z",
            [
                "2026-03-07T06:30:00Z",
                "2026-03-08T06:30:00Z",
                "2026-03-09T05:30:00Z",
            ],
        ),
        // New York falls back on 1 November at 02:00 EDT to 01:00 EST: 01:30 happens twice.
        (
            "30 1 * * *",
            "America/New_York",
            "2026-10-31T04:00:00Z",
            [
                "2026-10-31T05:30:00Z",
                "2026-11-01T05:30:00Z",
                "2026-11-02T06:30:00Z",
            ],
        ),
        (
            "30 2 * * *",
            "America/New_York",
            "2026-10-31T04:00:00Z",
            [
                "2026-10-31T06:30:00Z",
                "2026-11-01T07:30:00Z",
                "2026-11-02T07:30:00Z",
            ],
        ),
    ];
    for (cron, zone, after, expected) in table {
        assert_eq!(
            fires(cron, zone, after, 3),
            expected,
            "{cron} in {zone} after {after}"
        );
    }
}

/// Berlin's DST days of 2026, and Moscow (no DST) on the same days as a control.
#[test]
fn daily_jobs_fire_once_on_berlin_dst_days_and_moscow_is_plain() {
    let table: &[(&str, &str, &str, [&str; 3])] = &[
        // Berlin springs forward on 29 March at 02:00 CET (01:00Z) to 03:00 CEST.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-03-27T23:00:00Z",
            [
                "2026-03-28T01:30:00Z",
                "2026-03-29T01:00:00Z",
                "2026-03-30T00:30:00Z",
            ],
        ),
        (
            "30 1 * * *",
            "Europe/Berlin",
            "2026-03-27T23:00:00Z",
            [
                "2026-03-28T00:30:00Z",
                "2026-03-29T00:30:00Z",
                "2026-03-29T23:30:00Z",
            ],
        ),
        // Berlin falls back on 25 October at 03:00 CEST to 02:00 CET: 02:30 happens twice.
        (
            "30 2 * * *",
            "Europe/Berlin",
            "2026-10-23T22:00:00Z",
            [
                "2026-10-24T00:30:00Z",
                "2026-10-25T00:30:00Z",
                "2026-10-26T01:30:00Z",
            ],
        ),
        (
            "30 1 * * *",
            "Europe/Berlin",
            "2026-10-23T22:00:00Z",
            [
                "2026-10-23T23:30:00Z",
                "2026-10-24T23:30:00Z",
                "2026-10-26T00:30:00Z",
            ],
        ),
        // Moscow has no DST: the same wall time is the same UTC time on Berlin's change days.
        (
            "30 2 * * *",
            "Europe/Moscow",
            "2026-03-27T20:00:00Z",
            [
                "2026-03-27T23:30:00Z",
                "2026-03-28T23:30:00Z",
                "2026-03-29T23:30:00Z",
            ],
        ),
        (
            "30 2 * * *",
            "Europe/Moscow",
            "2026-10-23T20:00:00Z",
            [
                "2026-10-23T23:30:00Z",
                "2026-10-24T23:30:00Z",
                "2026-10-25T23:30:00Z",
            ],
        ),
    ];
    for (cron, zone, after, expected) in table {
        assert_eq!(
            fires(cron, zone, after, 3),
            expected,
            "{cron} in {zone} after {after}"
        );
    }
}

/// An interval job fires on both passes of a repeated hour (both are real half hours).
#[test]
fn an_interval_job_fires_on_both_passes_of_a_repeated_hour() {
    assert_eq!(
        fires(
            "*/30 * * * *",
            "America/New_York",
            "2026-11-01T04:45:00Z",
            5
        ),
        [
            "2026-11-01T05:00:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-01T06:00:00Z",
            "2026-11-01T06:30:00Z",
            "2026-11-01T07:00:00Z",
        ]
    );
}

#[test]
fn one_shots_in_a_gap_move_past_it_and_in_a_repeat_take_the_earlier_instant() {
    let now = utc("2026-01-01T00:00:00Z");
    let gap = Spec::parse("at 2026-03-08 02:30", "America/New_York", now).unwrap();
    assert_eq!(gap.next_fire(now), Some(utc("2026-03-08T07:00:00Z")));
    let repeat = Spec::parse("at 2026-11-01 01:30", "America/New_York", now).unwrap();
    assert_eq!(repeat.next_fire(now), Some(utc("2026-11-01T05:30:00Z")));
    assert_eq!(repeat.text(), "at 2026-11-01T05:30:00+00:00");
    let rfc = Spec::parse("at 2026-12-24T09:00:00+01:00", "Europe/Berlin", now).unwrap();
    assert_eq!(rfc.next_fire(now), Some(utc("2026-12-24T08:00:00Z")));
    // One fire only, and none once it passed.
    assert_eq!(rfc.next_fire(utc("2026-12-24T08:00:00Z")), None);
    assert!(rfc.is_one_shot());
}

#[test]
fn relative_times_resolve_when_parsed_and_are_stored_absolute() {
    let now = utc("2026-05-01T10:00:00Z");
    let cases = [
        ("in 2 hours", "2026-05-01T12:00:00Z"),
        ("in 30 minutes", "2026-05-01T10:30:00Z"),
        ("In 1 day", "2026-05-02T10:00:00Z"),
        ("in 45s", "2026-05-01T10:00:45Z"),
    ];
    for (text, expected) in cases {
        let spec = Spec::parse_new(text, "Europe/Berlin", now).unwrap();
        assert_eq!(spec.next_fire(now), Some(utc(expected)), "{text}");
        // Read again later (a restart), it stays where it was resolved.
        let again = Spec::parse(spec.text(), "Europe/Berlin", now + Duration::hours(5)).unwrap();
        assert_eq!(again.next_fire(now), Some(utc(expected)), "{text}");
    }
    for bad in ["in 0 minutes", "in two hours", "in 2 fortnights", "in"] {
        assert!(
            matches!(
                Spec::parse(bad, "UTC", now),
                Err(SpecError::InvalidTime { .. }) | Err(SpecError::InvalidCron { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn leap_day_jobs_fire_on_leap_years_only() {
    assert_eq!(
        fires("0 9 29 2 *", "UTC", "2026-03-01T00:00:00Z", 2),
        ["2028-02-29T09:00:00Z", "2032-02-29T09:00:00Z"]
    );
}

#[test]
fn cron_edge_cases() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "*/15 * * * *",
            "2026-06-01T10:07:00Z",
            &[
                "2026-06-01T10:15:00Z",
                "2026-06-01T10:30:00Z",
                "2026-06-01T10:45:00Z",
            ],
        ),
        // Last day of the month, across February of a common and a leap year.
        (
            "0 0 L * *",
            "2026-02-10T00:00:00Z",
            &["2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"],
        ),
        (
            "0 0 L 2 *",
            "2027-03-01T00:00:00Z",
            &["2028-02-29T00:00:00Z"],
        ),
        // Last Friday of the month; the second Monday.
        (
            "0 9 * * 5#L",
            "2026-06-01T00:00:00Z",
            &["2026-06-26T09:00:00Z", "2026-07-31T09:00:00Z"],
        ),
        (
            "0 9 * * 1#2",
            "2026-06-01T00:00:00Z",
            &["2026-06-08T09:00:00Z"],
        ),
        // Six fields: seconds first.
        (
            "*/10 * * * * *",
            "2026-06-01T10:00:03Z",
            &["2026-06-01T10:00:10Z", "2026-06-01T10:00:20Z"],
        ),
        (
            "30 8 * * 1-5",
            "2026-06-05T09:00:00Z",
            &["2026-06-08T08:30:00Z"],
        ),
        ("@daily", "2026-06-01T10:00:00Z", &["2026-06-02T00:00:00Z"]),
    ];
    for (cron, after, expected) in table {
        assert_eq!(
            &fires(cron, "UTC", after, expected.len()),
            expected,
            "{cron}"
        );
    }
}

#[test]
fn invalid_specs_and_unknown_zones_are_clear_errors() {
    let now = utc("2026-06-01T00:00:00Z");
    for bad in [
        "61 * * * *",
        "* * *",
        "hello",
        "0 0 0 1 1 * 2030",
        "",
        "0 25 * * *",
    ] {
        let error = Spec::parse(bad, "UTC", now).unwrap_err();
        assert!(
            matches!(error, SpecError::InvalidCron { .. }),
            "{bad}: {error:?}"
        );
        assert!(
            error.to_string().starts_with("invalid cron expression"),
            "{error}"
        );
    }
    let error = Spec::parse("0 9 * * *", "Mars/Olympus", now).unwrap_err();
    assert_eq!(error, SpecError::UnknownZone("Mars/Olympus".to_owned()));
    assert!(error.to_string().contains("IANA"), "{error}");
    assert!(matches!(
        Spec::parse("at tomorrow", "UTC", now),
        Err(SpecError::InvalidTime { .. })
    ));
    // A one-shot in the past parses (a stored one that fired) but cannot be created.
    assert!(Spec::parse("at 2020-01-01 00:00", "UTC", now).is_ok());
    assert_eq!(
        Spec::parse_new("at 2020-01-01 00:00", "UTC", now),
        Err(SpecError::NeverFires("at 2020-01-01 00:00".to_owned()))
    );
}

#[test]
fn fires_back_lists_the_newest_first_within_bounds() {
    let spec = Spec::parse("0 * * * *", "UTC", utc("2026-06-01T00:00:00Z")).unwrap();
    assert_eq!(
        spec.fires_back(utc("2026-06-01T00:00:00Z"), utc("2026-06-01T03:00:00Z"), 10),
        [
            utc("2026-06-01T03:00:00Z"),
            utc("2026-06-01T02:00:00Z"),
            utc("2026-06-01T01:00:00Z")
        ]
    );
    assert_eq!(
        spec.fires_back(utc("2026-06-01T00:00:00Z"), utc("2026-06-01T03:30:00Z"), 1),
        [utc("2026-06-01T03:00:00Z")]
    );
}
