//! `souz history` (the changes Souz's file tools made, newest first) and `souz undo` (take
//! back one call's change, a turn's, or a client's since a time), through the daemon. Labels
//! and messages are in the person's language ([`crate::texts`]); tool names, clients, ids,
//! paths, diffs and JSON stay as they are.

use anyhow::{Result, bail};
use clap::Args;
use souz_protocol::history::{HistoryChange, UndoReport, UndoRequest, UndoSelection};

use crate::output::{print_json, say};
use crate::texts::{fill, tr};

/// `souz history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only this client's changes (`souz`, `claude-code`, `cli`, ...).
    #[arg(long)]
    client: Option<String>,
    /// Only the changes of this chat execution (turn).
    #[arg(long)]
    turn: Option<String>,
    /// At most this many (default 20).
    #[arg(long, default_value_t = 20)]
    limit: u32,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `souz undo`.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The call whose change to undo (its id, as `souz history` and the audit show it).
    call_id: Option<String>,
    /// Undo every change of this chat execution (turn).
    #[arg(long, conflicts_with = "call_id")]
    turn: Option<String>,
    /// Undo every change made in this last while (`90s`, `10m`, `2h`, `1d`).
    #[arg(long, conflicts_with_all = ["call_id", "turn"])]
    since: Option<String>,
    /// With --since: only this client's changes (`claude-code`, `souz`, `cli`).
    #[arg(long, requires = "since")]
    client: Option<String>,
    /// Undo one change by its number in `souz history`.
    #[arg(long, conflicts_with_all = ["call_id", "turn", "since"])]
    change: Option<i64>,
    /// Restore anyway where a file changed since Souz wrote it (that content is kept, so this
    /// undo can be undone).
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn history(args: HistoryArgs) -> Result<()> {
    let client = crate::texts::connect().await?;
    let mut query = vec![format!("limit={}", args.limit)];
    if let Some(name) = &args.client {
        query.push(format!("client={}", encode(name)));
    }
    if let Some(turn) = &args.turn {
        query.push(format!("execution_id={}", encode(turn)));
    }
    let list = client.history(&format!("?{}", query.join("&"))).await?;
    if args.json {
        return print_json(&list);
    }
    if list.changes.is_empty() {
        say!(
            "{}",
            tr("No recorded changes.", "Записанных изменений нет.")
        );
    }
    for change in &list.changes {
        print_change(change);
    }
    Ok(())
}

fn print_change(change: &HistoryChange) {
    let status = match change.status {
        souz_protocol::history::ChangeStatus::Undone => tr(" [undone]", " [отменено]"),
        souz_protocol::history::ChangeStatus::Pending => tr(" [pending]", " [не подтверждено]"),
        souz_protocol::history::ChangeStatus::Done => "",
    };
    say!(
        "#{} {} {}{status}: {}",
        change.id,
        change.created_at.format("%Y-%m-%d %H:%M:%S"),
        fill(
            tr("{tool} by {client}", "{tool}, клиент {client}"),
            &[("tool", &change.tool), ("client", &change.client)]
        ),
        change.summary
    );
    let turn = change
        .execution_id
        .as_deref()
        .map(|turn| fill(tr(", turn {turn}", ", ход {turn}"), &[("turn", &turn)]))
        .unwrap_or_default();
    say!("    {} {}{turn}", tr("call", "вызов"), change.call_id);
    for path in &change.paths {
        let kept =
            if path.before.kind == souz_protocol::history::PathKind::File && !path.before.kept {
                tr(
                    " (not restorable: too large)",
                    " (не восстановить: слишком большой)",
                )
            } else {
                ""
            };
        say!("    {}{kept}", path.path);
    }
}

pub async fn undo(args: UndoArgs) -> Result<std::process::ExitCode> {
    // Connected first: a mistyped selection is said in the language chosen in Souz too.
    let client = crate::texts::connect().await?;
    let selection = match (&args.call_id, &args.turn, &args.since, args.change) {
        (Some(call_id), None, None, None) => UndoSelection::Call {
            call_id: call_id.clone(),
        },
        (None, Some(turn), None, None) => UndoSelection::Turn {
            execution_id: turn.clone(),
        },
        (None, None, Some(since), None) => UndoSelection::Since {
            since: chrono::Utc::now() - parse_age(since)?,
            client: args.client.clone(),
        },
        (None, None, None, Some(id)) => UndoSelection::Change { id },
        _ => bail!(
            "{}",
            tr(
                "say what to undo: a CALL_ID, --turn ID, --since AGE or --change N",
                "укажите, что отменить: CALL_ID, --turn ID, --since СРОК или --change N"
            )
        ),
    };
    let report = client
        .undo(&UndoRequest {
            selection,
            force: args.force,
        })
        .await?;
    if args.json {
        print_json(&report)?;
    } else {
        print_report(&report);
    }
    Ok(if report.conflicts.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(3)
    })
}

fn print_report(report: &UndoReport) {
    for undone in &report.undone {
        say!(
            "{}",
            fill(
                tr(
                    "Undid change #{change} (undo it with `souz undo --change {undo}`).",
                    "Изменение #{change} отменено (вернуть его: `souz undo --change {undo}`)."
                ),
                &[("change", &undone.change_id), ("undo", &undone.undo_id)]
            )
        );
    }
    for note in &report.notes {
        say!("{}: {note}", tr("Note", "Примечание"));
    }
    if !report.conflicts.is_empty() {
        say!(
            "{}",
            tr(
                "Nothing was undone: these files changed since Souz wrote them.",
                "Ничего не отменено: эти файлы изменились после того, как Souz их записал."
            )
        );
        for conflict in &report.conflicts {
            say!(
                "\n{} ({} #{})",
                conflict.path,
                tr("change", "изменение"),
                conflict.change_id
            );
            if let Some(diff) = &conflict.souz_diff {
                say!(
                    "  {}\n{diff}",
                    tr("What Souz changed:", "Что изменил Souz:")
                );
            }
            if let Some(diff) = &conflict.since_diff {
                say!(
                    "  {}\n{diff}",
                    tr("What changed since:", "Что изменилось с тех пор:")
                );
            }
        }
        say!(
            "\n{}",
            tr(
                "Run again with --force to restore anyway.",
                "Чтобы всё равно восстановить, запустите ещё раз с --force."
            )
        );
    }
}

/// `90s`, `10m`, `2h`, `1d` as a duration.
fn parse_age(text: &str) -> Result<chrono::Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let said = |en, ru| anyhow::anyhow!("{}", fill(tr(en, ru), &[("text", &text)]));
    let Ok(number) = number.parse::<i64>() else {
        return Err(said(
            "`{text}` is not an age; write e.g. 90s, 10m, 2h or 1d",
            "`{text}` — не срок; напишите, например, 90s, 10m, 2h или 1d",
        ));
    };
    let seconds = match unit {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(said(
                "unknown unit in `{text}`; use s, m, h or d",
                "неизвестная единица в `{text}`; используйте s, m, h или d",
            ));
        }
    };
    number
        .checked_mul(seconds)
        .and_then(chrono::Duration::try_seconds)
        .ok_or_else(|| said("`{text}` is too long ago", "`{text}` — слишком давно"))
}

/// Percent-encodes a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_age("10m").unwrap(), chrono::Duration::minutes(10));
        assert_eq!(parse_age("90s").unwrap(), chrono::Duration::seconds(90));
        assert_eq!(parse_age("2h").unwrap(), chrono::Duration::hours(2));
        assert_eq!(parse_age("1d").unwrap(), chrono::Duration::days(1));
        assert!(parse_age("ten").is_err());
        assert!(parse_age("5y").is_err());
        assert!(parse_age("99999999999999999d").is_err());
        assert_eq!(encode("claude code"), "claude%20code");
    }
}
