use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{Days, NaiveDate};

use super::*;

/// A clock that starts at 2026-01-01 and moves when the test says.
fn clock() -> (Arc<AtomicI64>, Clock) {
    let offset = Arc::new(AtomicI64::new(0));
    let shared = Arc::clone(&offset);
    let start = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
    let today = move || start + Days::new(shared.load(Ordering::SeqCst) as u64);
    (offset, Box::new(today))
}

fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn one_file_a_day_owner_only_and_the_newest_kept() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let logs = home.path().join("logs");
    let (day, clock) = clock();
    let mut log = DailyLog::open(&logs, 3, clock).unwrap();
    std::fs::write(logs.join("notes.txt"), "not a log").unwrap();
    for step in 0..5 {
        day.store(step, Ordering::SeqCst);
        writeln!(log, "line {step}").unwrap();
        writeln!(log, "again {step}").unwrap();
    }
    log.flush().unwrap();
    assert_eq!(
        names(&logs),
        [
            "notes.txt",
            "souz.2026-01-03.jsonl",
            "souz.2026-01-04.jsonl",
            "souz.2026-01-05.jsonl"
        ]
    );
    let last = logs.join("souz.2026-01-05.jsonl");
    assert_eq!(std::fs::read_to_string(&last).unwrap(), "line 4\nagain 4\n");
    let mode = std::fs::metadata(&last).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_link_at_a_day_s_name_is_not_written_through_and_the_next_day_logs_again() {
    let base = tempfile::tempdir().unwrap();
    let bashrc = base.path().join("bashrc");
    std::fs::write(&bashrc, "alias ls=ls\n").unwrap();
    let logs = base.path().join("home/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::os::unix::fs::symlink(&bashrc, logs.join("souz.2026-01-02.jsonl")).unwrap();
    // An old day's name linked out: pruning removes only regular log files.
    std::os::unix::fs::symlink(&bashrc, logs.join("souz.2025-01-01.jsonl")).unwrap();
    let (day, clock) = clock();
    let mut log = DailyLog::open(&logs, 1, clock).unwrap();
    writeln!(log, "day one").unwrap();
    day.store(1, Ordering::SeqCst);
    writeln!(log, "day two").unwrap();
    day.store(2, Ordering::SeqCst);
    writeln!(log, "day three").unwrap();
    log.flush().unwrap();
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "alias ls=ls\n");
    assert_eq!(
        std::fs::read_to_string(logs.join("souz.2026-01-03.jsonl")).unwrap(),
        "day three\n"
    );
    assert!(logs.join("souz.2025-01-01.jsonl").is_symlink());
}

#[test]
fn names_are_recognised_exactly() {
    assert!(log_date("souz.2026-02-03.jsonl").is_some());
    assert!(log_date("souz.2026-2-3.jsonl").is_none());
    assert!(log_date("souz.2026-02-03.jsonl.bak").is_none());
    assert!(log_date("other.2026-02-03.jsonl").is_none());
    assert_eq!(
        DailyLog::file_name(NaiveDate::from_ymd_opt(2026, 2, 3).unwrap()),
        "souz.2026-02-03.jsonl"
    );
}
