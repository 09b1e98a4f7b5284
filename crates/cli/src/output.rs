//! Terminal output helpers shared by the client commands.
//!
//! Everything the commands print to stdout goes through [`say!`]: a reader that stops early
//! (`souz approvals | head`) ends the program quietly with success, as with any Unix tool,
//! instead of a panic from `println!`. It also makes what it prints safe for a terminal:
//! control sequences and bidirectional or invisible characters in summaries, arguments and
//! names (which come from models, clients and files) are shown escaped
//! ([`souz_protocol::display`]); JSON keeps its value ([`print_json`]).

use std::io::Write;

use chrono::{DateTime, Utc};
use serde::Serialize;
use souz_protocol::display;

/// Prints a line to stdout (see the module header).
macro_rules! say {
    ($($argument:tt)*) => {
        $crate::output::line(format_args!($($argument)*))
    };
}
pub(crate) use say;

/// Writes one line to stdout, escaped for the terminal (newlines and tabs kept); a closed
/// pipe exits 0, another write error exits 1.
pub fn line(text: std::fmt::Arguments<'_>) {
    let text = text.to_string();
    let shown = display::display_text(&text);
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{shown}").and_then(|()| stdout.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("souz: cannot write the output: {error}");
        std::process::exit(1);
    }
}

/// Writes `text` to stdout as it is (no newline added: a streamed answer's pieces), escaped for
/// the terminal like [`line`], and flushes; a closed pipe exits 0.
pub fn part(text: &str) {
    let shown = display::display_text(text);
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = write!(stdout, "{shown}").and_then(|()| stdout.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("souz: cannot write the output: {error}");
        std::process::exit(1);
    }
}

/// Prints `value` as pretty JSON (hiding characters as JSON escapes: same value, visible).
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    say!("{}", display::display_json(&json));
    Ok(())
}

/// `text` cut to `max` characters (with `…`).
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// How long ago, briefly: `12s`, `5m`, `3h`, `2d`.
pub fn age(at: DateTime<Utc>) -> String {
    let seconds = (Utc::now() - at).num_seconds().max(0);
    match seconds {
        0..=59 => format!("{seconds}s"),
        60..=3599 => format!("{}m", seconds / 60),
        3600..=86_399 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}
