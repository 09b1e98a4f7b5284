//! The daily JSON log files in `<SOUZ_HOME>/logs`: `souz.YYYY-MM-DD.jsonl` (the date in UTC,
//! the names `tracing-appender`'s daily appender used), one per day, the newest
//! `[log] retention_days` kept.
//!
//! Why our own writer: the appender opened each day's file by path with `O_APPEND | O_CREAT`,
//! following links, so a link planted at tomorrow's name made the daemon append log lines to
//! whatever it named (`~/.bashrc`).
//!
//! Invariants:
//! - The logs folder is opened once beneath the Souz home ([`DaemonFolder`]: a link there is
//!   refused); every file is opened by name inside that handle with `O_NOFOLLOW | O_APPEND |
//!   O_CREAT`, mode `0600`, and must be a regular file. A refused file (a link, a FIFO) is
//!   reported on stderr once and its lines are dropped until the next day's file; the daemon
//!   keeps running.
//! - Old files are removed by name inside the handle (`unlinkat`: a link is never followed),
//!   and only regular files named exactly like a log file; the newest by the date in the name
//!   are kept.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use chrono::NaiveDate;

use crate::sandbox::beneath::daemon_file::{DaemonFileError, DaemonFolder};

/// The first part of a log file's name.
const PREFIX: &str = "souz.";
/// The last part of a log file's name.
const SUFFIX: &str = ".jsonl";

/// Today's date (UTC); a parameter so tests can move the day.
pub(crate) type Clock = Box<dyn Fn() -> NaiveDate + Send>;

/// The writer behind the non-blocking file layer: appends to today's file, rolls over at
/// midnight UTC and prunes old files.
pub(crate) struct DailyLog {
    folder: DaemonFolder,
    retention: usize,
    clock: Clock,
    /// The day of `file`; `None` before the first line.
    day: Option<NaiveDate>,
    /// Today's file; `None` when it was refused or could not be opened (lines are dropped).
    file: Option<File>,
}

impl std::fmt::Debug for DailyLog {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DailyLog")
            .field("folder", &self.folder.path())
            .field("day", &self.day)
            .finish_non_exhaustive()
    }
}

impl DailyLog {
    /// The log folder `logs` (created owner-only where missing; its parent, the Souz home, is
    /// trusted), keeping `retention` files (at least one). Opens today's file at once, so a
    /// refusal is reported at start.
    pub(crate) fn open(
        logs: &Path,
        retention: usize,
        clock: Clock,
    ) -> Result<Self, DaemonFileError> {
        let (anchor, relative) = match (logs.parent(), logs.file_name()) {
            (Some(parent), Some(name)) => (parent, Path::new(name)),
            _ => (logs, Path::new("")),
        };
        crate::config::paths::create_private_dir(anchor).map_err(|source| DaemonFileError::Io {
            action: "create the folder",
            path: anchor.to_owned(),
            source,
        })?;
        let folder = DaemonFolder::create(anchor, relative, 0o700)?;
        let mut log = Self {
            folder,
            retention: retention.max(1),
            clock,
            day: None,
            file: None,
        };
        log.roll();
        Ok(log)
    }

    /// The file name of `day`'s log.
    pub(crate) fn file_name(day: NaiveDate) -> String {
        format!("{PREFIX}{}{SUFFIX}", day.format("%Y-%m-%d"))
    }

    /// Opens today's file when the day changed (and then prunes).
    fn roll(&mut self) {
        let today = (self.clock)();
        if self.day == Some(today) {
            return;
        }
        self.day = Some(today);
        if let Some(mut old) = self.file.take() {
            let _ = old.flush();
        }
        let name = Self::file_name(today);
        match self.folder.open_for_writing(&name, true, 0o600) {
            Ok(file) => {
                // Files the old appender made may be group- or world-readable.
                let _ = rustix::fs::fchmod(&file, rustix::fs::Mode::from_bits_truncate(0o600));
                self.file = Some(file);
            }
            Err(error) => eprintln!(
                "souz: not writing today's log file: {error}; log lines go to stderr only until \
                 the next day's file"
            ),
        }
        self.prune();
    }

    /// Removes the regular log files older than the newest `retention`.
    fn prune(&self) {
        let mut days = match self.log_files() {
            Ok(days) => days,
            Err(error) => {
                eprintln!(
                    "souz: cannot list the log folder {}: {error}",
                    self.folder.path().display()
                );
                return;
            }
        };
        days.sort_unstable_by(|left, right| right.cmp(left));
        for (_, name) in days.iter().skip(self.retention) {
            if let Err(error) = self.folder.remove_file(name) {
                eprintln!("souz: cannot remove an old log file: {error}");
            }
        }
    }

    /// The regular files named like a log file, with their dates.
    fn log_files(&self) -> io::Result<Vec<(NaiveDate, String)>> {
        let mut found = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.folder)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().ok().map(str::to_owned) else {
                continue;
            };
            let Some(day) = log_date(&name) else {
                continue;
            };
            if matches!(self.folder.existing(OsStr::new(&name)), Ok(Some(_))) {
                found.push((day, name));
            }
        }
        Ok(found)
    }
}

/// The date in a log file's name (`souz.YYYY-MM-DD.jsonl`), if it is one.
fn log_date(name: &str) -> Option<NaiveDate> {
    let date = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    (date.len() == 10)
        .then(|| NaiveDate::parse_from_str(date, "%Y-%m-%d").ok())
        .flatten()
}

impl Write for DailyLog {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        self.roll();
        if let Some(file) = &mut self.file {
            file.write_all(buffer)?;
        }
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
