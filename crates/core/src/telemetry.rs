//! Logging: human-readable lines on stderr and JSON lines in `<SOUZ_HOME>/logs/souz.YYYY-MM-DD.jsonl`,
//! rotated daily and bounded by `[log] retention_days`. The files are opened beneath the Souz
//! home without following links ([`daily_log`]): a refused file costs the file log, never the
//! daemon.
//!
//! Nothing secret is ever passed to a log macro: tokens and provider keys have redacting
//! `Debug` implementations and are never formatted with `Display`. As a second line, every
//! formatted line goes through [`redact_text`] before it reaches stderr or a file, so a secret
//! of a known format (or a registered one, such as the operator token) that slips into a
//! message or field is replaced. Secrets of no known format that were never registered (a
//! provider key read from an unusual variable, a password without a `password=` label) can
//! still reach a log line if code logs them.

use std::io::{IsTerminal, Write};
use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::redact::redact_text;

use crate::config::LogConfig;

mod daily_log;

use daily_log::DailyLog;

/// Lines the file writer queues before a logging call waits for the disk.
const LOG_QUEUE_LINES: usize = 4096;

/// Keeps the file writer flushing; drop it last, on exit.
#[must_use = "dropping the guard stops file logging"]
pub struct TelemetryGuard {
    _file: Option<WorkerGuard>,
}

/// Why logging could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter in `[log] level` is invalid.
    #[error("invalid log filter `{filter}`: {message}")]
    Filter {
        /// The filter.
        filter: String,
        /// Why it is invalid.
        message: String,
    },
    /// The log folder or file could not be created.
    #[error("cannot write logs to {path}: {message}")]
    File {
        /// The log folder.
        path: String,
        /// What failed.
        message: String,
    },
}

/// Installs the global subscriber. Call once, from a binary; a second call is a no-op.
pub fn init(config: &LogConfig, logs_dir: &Path) -> Result<TelemetryGuard, TelemetryError> {
    // rmcp logs every MCP session and session-less request at info; keep that out of the
    // daemon's log unless the filter names rmcp itself.
    let level = if config.level.contains("rmcp") {
        config.level.clone()
    } else {
        format!("{},rmcp=warn", config.level)
    };
    let filter = || {
        EnvFilter::try_new(&level).map_err(|error| TelemetryError::Filter {
            filter: config.level.clone(),
            message: error.to_string(),
        })
    };
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(Redacting(std::io::stderr))
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .with_filter(filter()?);

    let writer = if config.file {
        file_writer(logs_dir, config.retention_days as usize)?
    } else {
        None
    };
    let (file_layer, guard) = match writer {
        Some(appender) => {
            // The default queue holds 128,000 lines and is allocated up front (about 4 MB of a
            // daemon that should idle in tens of MB); a few thousand absorb the bursts we make.
            // Past that, lines are dropped rather than a logging call blocking the runtime.
            let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                .buffered_lines_limit(LOG_QUEUE_LINES)
                .finish(appender);
            let layer = tracing_subscriber::fmt::layer()
                .json()
                .with_current_span(false)
                .with_writer(Redacting(writer))
                .with_filter(filter()?);
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };

    // `try_init` fails only when a subscriber is already installed (tests); that is fine.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file_layer)
        .try_init();
    Ok(TelemetryGuard { _file: guard })
}

/// The daily log files in `logs_dir`, keeping `retention` of them; `None` (said on stderr) when
/// the logs folder is refused (a link), so the daemon runs on with stderr alone.
pub(crate) fn file_writer(
    logs_dir: &Path,
    retention: usize,
) -> Result<Option<DailyLog>, TelemetryError> {
    let today = || chrono::Utc::now().date_naive();
    match DailyLog::open(logs_dir, retention, Box::new(today)) {
        Ok(log) => Ok(Some(log)),
        Err(error) if error.is_refusal() => {
            eprintln!("souz: not writing log files: {error}");
            Ok(None)
        }
        Err(error) => Err(TelemetryError::File {
            path: logs_dir.display().to_string(),
            message: error.to_string(),
        }),
    }
}

/// Makes writers that redact secrets from what they are given ([`redact_text`]). The `fmt`
/// layer writes each formatted event with one `write_all`, so a line is redacted whole.
#[derive(Debug, Clone)]
struct Redacting<M>(M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Redacting<M> {
    type Writer = RedactingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter(self.0.make_writer())
    }
}

/// One redacting writer (see [`Redacting`]).
#[derive(Debug)]
struct RedactingWriter<W>(W);

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buffer);
        self.0.write_all(redact_text(&text).as_bytes())?;
        Ok(buffer.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_redacted_before_they_are_written() {
        let mut sink = Vec::new();
        {
            let mut writer = RedactingWriter(&mut sink);
            let line = "{\"message\":\"calling https://bot:hunter22@api.example with sk_live_0123456789abcdef\"}\n";
            writer
                .write_all(line.as_bytes())
                .unwrap_or_else(|error| panic!("{error}"));
        }
        let written = String::from_utf8_lossy(&sink);
        assert!(!written.contains("hunter22"), "{written}");
        assert!(!written.contains("0123456789abcdef"), "{written}");
        assert!(written.ends_with("}\n"), "{written}");
    }
}
