//! `UndoChanges`: undo as a catalog tool, so MCP clients (Claude Code, Claude Desktop) and
//! agents can take back recorded changes — one call's, one turn's, or those of the last
//! minutes — through the approval gate like any other call.
//!
//! Invariants:
//! - It always asks: its plan carries [`CallTarget::Untrusted`], whatever the rules say about
//!   its risk (`delete`). The approval says what will be restored, removed or moved back, and
//!   which files changed since Souz wrote them.
//! - It never restores over a file that changed since Souz wrote it unless the call says
//!   `force: true`, and such a call is asked again with its own approval, which says so. Without
//!   it, those files come back as text with the three versions and the diffs (nothing undone).
//! - It records nothing around itself in the gate (its plan names no path): the undo records
//!   itself, one change per change taken back, so the undo can be undone.
//! - The history is reached through a slot the runtime fills once it opened the history (the
//!   catalog is built before); until then, or with `[history] enabled = false`, a call fails
//!   saying so.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::history::{PathKind, UndoConflict, UndoReport, UndoSelection};
use souz_protocol::{Risk, ToolCategory};

use super::super::records::StoredChange;
use super::super::{History, HistoryError};
use super::UndoOrder;
use crate::approvals::CallTarget;
use crate::tools::{
    DynTool, Language, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, erase, localized,
};

/// The tool's name.
pub const NAME: &str = "UndoChanges";

/// Longest diff shown per conflict, in characters.
const SHOWN_DIFF: usize = 2_000;
/// Most paths named in an approval.
const SHOWN_PATHS: usize = 40;
/// Longest window `sinceMinutes` takes (a week).
const MAX_MINUTES: u64 = 7 * 24 * 60;

const ALWAYS_ASK: &str = "an undo rewrites files on the person's behalf, so it always asks";

/// The slot the tool reaches the history through. Cheap to clone.
#[derive(Clone, Default)]
pub struct UndoTool {
    history: Arc<OnceLock<History>>,
}

impl UndoTool {
    /// The tool over this slot, for the catalog.
    pub fn tool(&self) -> Arc<dyn DynTool> {
        erase(UndoChanges(self.clone()))
    }

    /// Fills the slot (once; a second history is ignored).
    pub fn bind(&self, history: History) {
        let _ = self.history.set(history);
    }

    fn history(&self) -> Result<&History, ToolError> {
        self.history.get().ok_or_else(|| {
            ToolError::Failed(
                "Souz keeps no history of file changes here ([history] enabled = false), so \
                 nothing can be undone."
                    .into(),
            )
        })
    }
}

/// Arguments of `UndoChanges`: exactly one of `callId`, `turnId`, `sinceMinutes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UndoArgs {
    /// Undo the change one Souz tool call made: that call's id.
    #[serde(default)]
    pub call_id: Option<String>,
    /// Undo every change one chat turn made: the turn's (execution's) id.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Undo every change made in the last this many minutes (at most a week).
    #[serde(default)]
    pub since_minutes: Option<u64>,
    /// With `sinceMinutes`: only this client's changes (`claude-code`, `souz`, `cli`).
    #[serde(default)]
    pub client: Option<String>,
    /// Restore anyway where a file changed since Souz wrote it, replacing what is there now
    /// (that content is kept in the history). Leave it unset first: such files then stop the
    /// undo and come back as conflicts. Setting it asks the person again, saying so.
    #[serde(default)]
    pub force: bool,
}

impl UndoArgs {
    fn selection(&self) -> Result<UndoSelection, ToolError> {
        let invalid = |message: &str| Err(ToolError::InvalidArguments(message.to_owned()));
        if self.client.is_some() && self.since_minutes.is_none() {
            return invalid("`client` goes with `sinceMinutes`");
        }
        match (&self.call_id, &self.turn_id, self.since_minutes) {
            (Some(call_id), None, None) if !call_id.trim().is_empty() => Ok(UndoSelection::Call {
                call_id: call_id.trim().to_owned(),
            }),
            (None, Some(turn), None) if !turn.trim().is_empty() => Ok(UndoSelection::Turn {
                execution_id: turn.trim().to_owned(),
            }),
            (None, None, Some(minutes)) if (1..=MAX_MINUTES).contains(&minutes) => {
                let minutes = i64::try_from(minutes).unwrap_or(1);
                Ok(UndoSelection::Since {
                    since: chrono::Utc::now() - chrono::Duration::minutes(minutes),
                    client: self
                        .client
                        .clone()
                        .filter(|client| !client.trim().is_empty()),
                })
            }
            (None, None, Some(_)) => invalid("`sinceMinutes` is from 1 to 10080 (a week)"),
            _ => invalid("name exactly one of `callId`, `turnId` or `sinceMinutes`"),
        }
    }
}

/// What the approval covered: the selection, and whether to restore anyway.
pub struct Approved {
    selection: UndoSelection,
    force: bool,
}

struct UndoChanges(UndoTool);

impl Tool for UndoChanges {
    type Args = UndoArgs;
    type Prepared = Approved;

    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Undoes changes Souz made to files (including those Claude or any other client made \
         through Souz): the change of one tool call (`callId`), every change of one chat turn \
         (`turnId`), or every change of the last minutes (`sinceMinutes`, optionally only one \
         `client`'s). Files are restored byte for byte with their permissions; moves are moved \
         back, deleted files come back from the Trash, created files are removed. The person \
         approves it first. If a file changed since Souz wrote it, nothing is undone and the \
         result shows what Souz wrote, what is there now and what was before; only then, and \
         only if the person wants, call again with `force: true`."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::Delete
    }

    fn always_asks(&self) -> bool {
        true
    }

    async fn plan(
        &self,
        args: &UndoArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<Approved>, ToolError> {
        let history = self.0.history()?;
        let selection = args.selection()?;
        let (changes, conflicts) = history
            .preview(Arc::clone(&ctx.sandbox), selection.clone())
            .await
            .map_err(failed)?;
        let plan = Plan {
            summary: summary(&changes, &conflicts, args.force, ctx),
            targets: vec![CallTarget::Untrusted {
                reason: ALWAYS_ASK.to_owned(),
            }],
            diff: Some(what_is_restored(&changes, &conflicts, args.force, ctx)),
        };
        Ok(plan.with(Approved {
            selection,
            force: args.force,
        }))
    }

    async fn run(
        &self,
        _: UndoArgs,
        approved: Approved,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let history = self.0.history()?;
        let report = history
            .undo(
                Arc::clone(&ctx.sandbox),
                UndoOrder {
                    selection: approved.selection,
                    force: approved.force,
                    requester: ctx.requester.clone(),
                },
            )
            .await
            .map_err(failed)?;
        if report.undone.is_empty() && !report.conflicts.is_empty() {
            return Err(ToolError::Failed(conflicts_text(&report.conflicts, ctx)));
        }
        Ok(ToolOutput {
            text: report_text(&report),
            structured: serde_json::to_value(&report).ok(),
        })
    }
}

fn failed(error: HistoryError) -> ToolError {
    match error {
        HistoryError::Store(_) | HistoryError::Task(_) => ToolError::Internal(error.to_string()),
        other => ToolError::Failed(other.to_string()),
    }
}

/// The approval's one line: how many changes, whose, and — with `force` — what it overwrites.
fn summary(
    changes: &[StoredChange],
    conflicts: &[UndoConflict],
    force: bool,
    ctx: &ToolContext,
) -> String {
    let count = changes.len();
    let mut clients: Vec<&str> = changes
        .iter()
        .map(|change| change.client.as_str())
        .collect();
    clients.sort_unstable();
    clients.dedup();
    let clients = clients.join(", ");
    let files = changes
        .iter()
        .flat_map(|change| &change.paths)
        .filter(|path| !path.created_parent)
        .map(|path| path.path.as_path())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut line = localized!(
        ctx.language,
        "Undo {count} change(s) by {clients}, restoring {files} path(s)",
        "Отменить изменения ({count}) от {clients}: вернуть пути ({files})"
    );
    if !conflicts.is_empty() {
        let changed = conflicts.len();
        line.push_str(&if force {
            localized!(
                ctx.language,
                "; RESTORE ANYWAY over {changed} file(s) changed since Souz wrote them (what is there now is kept in the history)",
                "; ВЕРНУТЬ ВСЁ РАВНО поверх файлов, изменённых после записи Souz ({changed}); то, что там сейчас, сохранится в истории"
            )
        } else {
            localized!(
                ctx.language,
                "; {changed} file(s) changed since Souz wrote them: the undo will stop and show them",
                "; файлы изменены после записи Souz ({changed}): отмена остановится и покажет их"
            )
        });
    }
    line
}

/// The approval's details: each path and what the undo does to it.
fn what_is_restored(
    changes: &[StoredChange],
    conflicts: &[UndoConflict],
    force: bool,
    ctx: &ToolContext,
) -> String {
    let language = ctx.language;
    let mut text = String::new();
    let mut shown = 0usize;
    for change in changes {
        let _ = writeln!(
            text,
            "#{} {} ({}): {}",
            change.id, change.tool, change.client, change.summary
        );
        for path in change.paths.iter().filter(|path| !path.created_parent) {
            shown += 1;
            if shown > SHOWN_PATHS {
                continue;
            }
            let display = ctx.sandbox.display(&path.path);
            let after_exists = path.after.as_ref().is_some_and(|after| after.exists());
            let line = match (path.before.kind, after_exists) {
                (PathKind::Absent, _) => {
                    localized!(language, "  remove {display}", "  удалить {display}")
                }
                (_, false) => localized!(language, "  bring back {display}", "  вернуть {display}"),
                (PathKind::File, true) if !path.before.kept => localized!(
                    language,
                    "  cannot restore {display}: its content was too large to keep",
                    "  не вернуть {display}: содержимое было слишком большим для истории"
                ),
                _ => localized!(
                    language,
                    "  restore {display} as it was",
                    "  вернуть {display} как было"
                ),
            };
            text.push_str(&line);
            text.push('\n');
        }
    }
    if shown > SHOWN_PATHS {
        let more = shown - SHOWN_PATHS;
        text.push_str(&localized!(
            language,
            "  … and {more} more\n",
            "  … и ещё {more}\n"
        ));
    }
    for conflict in conflicts {
        let display = ctx.sandbox.display(std::path::Path::new(&conflict.path));
        text.push_str(&if force {
            localized!(
                language,
                "changed since Souz wrote it, overwritten anyway: {display}\n",
                "изменён после записи Souz, будет перезаписан: {display}\n"
            )
        } else {
            localized!(
                language,
                "changed since Souz wrote it (the undo stops): {display}\n",
                "изменён после записи Souz (отмена остановится): {display}\n"
            )
        });
    }
    text
}

/// What the model reads when files changed since: each with its three versions and diffs.
fn conflicts_text(conflicts: &[UndoConflict], ctx: &ToolContext) -> String {
    let mut text = format!(
        "Nothing was undone: {} file(s) changed since Souz wrote them.\n",
        conflicts.len()
    );
    for conflict in conflicts {
        let display = ctx.sandbox.display(std::path::Path::new(&conflict.path));
        let _ = writeln!(
            text,
            "\n{display} (change {}):\n  before the change: {}\n  Souz wrote: {}\n  there now: {}",
            conflict.change_id,
            described(&conflict.before, ctx.language),
            described(&conflict.wrote, ctx.language),
            described(&conflict.now, ctx.language),
        );
        for (label, diff) in [
            ("what Souz changed", &conflict.souz_diff),
            ("what changed since", &conflict.since_diff),
        ] {
            if let Some(diff) = diff {
                let _ = writeln!(text, "  {label}:\n{}", truncated(diff));
            }
        }
    }
    text.push_str(
        "\nTo keep the files as they are now, do nothing. To restore anyway (what is there now \
         is kept in Souz's history, so that can be undone too), call UndoChanges again with the \
         same selection and `force: true`: the person is asked again.",
    );
    text
}

fn described(snapshot: &souz_protocol::history::PathSnapshot, language: Language) -> String {
    match snapshot.kind {
        PathKind::Absent => "nothing".into(),
        PathKind::File => format!(
            "a file of {}",
            crate::tools::words::size(snapshot.size.unwrap_or(0), language)
        ),
        PathKind::Folder => "a folder".into(),
        PathKind::Symlink => "a symbolic link".into(),
        PathKind::Other => "a special file".into(),
    }
}

fn truncated(diff: &str) -> String {
    if diff.chars().count() <= SHOWN_DIFF {
        return diff.to_owned();
    }
    let mut cut: String = diff.chars().take(SHOWN_DIFF).collect();
    cut.push_str("\n  … (diff truncated)");
    cut
}

fn report_text(report: &UndoReport) -> String {
    let mut text = format!(
        "Undid {} change(s): {}.",
        report.undone.len(),
        report
            .undone
            .iter()
            .map(|undone| format!("change {} (undo {})", undone.change_id, undone.undo_id))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !report.conflicts.is_empty() {
        let _ = write!(
            text,
            " Restored anyway over {} file(s) that had changed since.",
            report.conflicts.len()
        );
    }
    for note in &report.notes {
        let _ = write!(text, "\nNote: {note}");
    }
    text
}
