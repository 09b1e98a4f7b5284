//! A skill bundle's command as the gate sees it: a tool made for one installed bundle, named
//! `skill:<id>@<hash>` (the first 32 hex digits of its bundle hash), risk `exec`, so each
//! command is one gate call (plan → policy → ask → run → audit row and events; pause and deny
//! rules apply as to any tool; `tool = "skill:*"` rules name all skills).
//!
//! Consent is per (skill id, bundle hash), and the manifest is a bundle file, so a changed
//! manifest is a changed hash. Until a standing allow grant for the tool's name exists, the
//! plan carries [`CallTarget::Untrusted`] (the policy then always asks, whatever `exec` says)
//! and the approval's preview shows the manifest (folders, hosts, programs, environment, time
//! limit), the hash and the validation findings. Approving it writes that grant (for anyone,
//! until revoked, listed with the other grants) before the command runs, so the bundle's later
//! commands run without prompts, still confined to the manifest; a denial runs nothing.
//!
//! The consent covers what the person saw (`coverage`): the bundle's own files and the
//! programs its manifest lists, for every runtime. Any other command (an inline script of an
//! unlisted interpreter, an unlisted program, added environment variables) carries
//! [`CallTarget::Untrusted`] every time, with the exact command as the approval's preview;
//! approving it runs it once.
//!
//! Invariants: where commands would run unconfined (`[sandbox] allow_unconfined_commands`),
//! every command asks, consent or not; arguments are checked (paths inside the bundle) at plan
//! time, before anyone is asked, and what the consent does not cover asks each time
//! (`coverage`); the command runs in the sandbox of the call's context narrowed to the
//! manifest.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use souz_protocol::{Risk, ToolAnnotations, ToolCallStatus, ToolCategory};

use super::bundle::Bundle;
use super::coverage;
use super::manifest::{self, MANIFEST_PATH, Permissions};
use super::rules::Finding;
use super::run::{self, SkillCommandArgs, SkillFiles};
use crate::approvals::{Approvals, CallTarget, NewApproval, RequestError};
use crate::tools::calls;
use crate::tools::{
    DynTool, Plan, PlannedCall, ToolContext, ToolError, ToolOutput, ToolSpec, intern, localized,
};

/// Hex digits of the bundle hash in the tool's name (128 bits).
const HASH_DIGITS: usize = 32;

/// The gate's name for the commands of bundle `hash` of skill `id`.
pub(crate) fn tool_name(id: &str, hash: &str) -> String {
    let short: String = hash.chars().take(HASH_DIGITS).collect();
    format!("skill:{id}@{short}")
}

/// One installed, validated bundle whose commands go through the gate.
pub(crate) struct SkillCommandTool {
    spec: ToolSpec,
    id: String,
    hash: String,
    bundle: Arc<Bundle>,
    permissions: Permissions,
    findings: Vec<Finding>,
    approvals: Approvals,
}

/// What a skill bundle's command is made of.
pub(crate) struct SkillCommandParts {
    /// The skill's id.
    pub id: String,
    /// Its files (hashed here; its manifest is read from them).
    pub bundle: Bundle,
    /// What validation found (shown with the consent).
    pub findings: Vec<Finding>,
    /// Where consent is looked up and written.
    pub approvals: Approvals,
}

/// What a skill's command did (the original's `SandboxCommandResult`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SkillRunResult {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl SkillCommandTool {
    /// The tool of `parts.bundle`, confined by its manifest (none: nothing beyond its own
    /// folder); the manifest's problems if it does not parse.
    pub(crate) fn new(parts: SkillCommandParts) -> Result<Self, Vec<String>> {
        let permissions = match parts.bundle.files().get(MANIFEST_PATH) {
            Some(text) => manifest::parse(text)?,
            None => Permissions::default(),
        };
        let hash = parts.bundle.hash();
        let name = tool_name(&parts.id, &hash);
        let spec = ToolSpec {
            name: intern(&name),
            description: intern(&format!(
                "A command of the installed skill `{}`, confined to its manifest",
                parts.id
            )),
            category: ToolCategory::Commands,
            risk: Risk::Exec,
            annotations: ToolAnnotations::for_risk(Risk::Exec),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            always_asks: false,
        };
        Ok(Self {
            spec,
            id: parts.id,
            hash,
            bundle: Arc::new(parts.bundle),
            permissions,
            findings: parts.findings,
            approvals: parts.approvals,
        })
    }

    fn short_hash(&self) -> String {
        self.hash.chars().take(12).collect()
    }

    /// Why the first command of a bundle asks.
    fn consent_reason(&self) -> String {
        format!(
            "the skill `{}` has not been approved in this version (bundle {}); approving lets \
             its commands run inside the permissions shown, without asking again until the \
             skill changes",
            self.id,
            self.short_hash()
        )
    }

    /// Asks for consent to this bundle now (as when it is installed) without waiting for the
    /// answer: `None` if it was given before, else the pending approval's id (one per
    /// bundle: the open one if it is being asked already). Its first command waits for it.
    pub(crate) async fn ask_consent(&self) -> Result<Option<String>, RequestError> {
        if self.approvals.has_standing_allow(self.spec.name) {
            return Ok(None);
        }
        let call_id = uuid::Uuid::now_v7().to_string();
        let requester = souz_protocol::Requester::Skill {
            skill_id: self.id.clone(),
        };
        let arguments = serde_json::json!({"skillId": self.id, "hash": self.hash});
        let new = NewApproval {
            call_id: call_id.clone(),
            requester: requester.clone(),
            tool: self.spec.name.to_owned(),
            risk: Risk::Exec,
            arguments: arguments.clone(),
            summary: format!(
                "Let the skill `{}` (bundle {}) run its commands inside its permissions",
                self.id,
                self.short_hash()
            ),
            diff: Some(self.preview()),
            reason: self.consent_reason(),
            server: None,
            parked: None,
            suggested: souz_protocol::SuggestedScope {
                scope: souz_protocol::ScopeKind::Once,
                minutes: None,
                argument_match: souz_protocol::ArgumentMatch::default(),
                tool_group: None,
                label: "Approve this version of the skill".to_owned(),
            },
        };
        // The approval refers to a call row of its own: the consent, ended when decided.
        let (tool, settled_id) = (self.spec.name, call_id.clone());
        let record = move |transaction: &rusqlite::Transaction<'_>, approval_id: &str| {
            let call = calls::NewCall {
                id: &call_id,
                tool,
                requester: &requester,
                arguments: &arguments,
                created_at: chrono::Utc::now(),
            };
            calls::ensure(transaction, &call)?;
            let status = ToolCallStatus::WaitingApproval;
            calls::advance(transaction, &call_id, status, None, Some(approval_id))
        };
        let settle = move |transaction: &rusqlite::Transaction<'_>, approved: bool| {
            let (status, text) = if approved {
                (ToolCallStatus::Succeeded, "consent recorded")
            } else {
                (ToolCallStatus::Denied, "consent not given")
            };
            let result = souz_protocol::ToolResult {
                text: text.to_owned(),
                structured: None,
                is_error: !approved,
            };
            calls::finish(
                transaction,
                &settled_id,
                status,
                &result,
                chrono::Utc::now(),
            )
        };
        self.approvals
            .ask_standing(new, record, settle)
            .await
            .map(Some)
    }

    /// What the person consents to: the manifest, the hash and the findings.
    pub(crate) fn preview(&self) -> String {
        let permissions = &self.permissions;
        let list = |items: &[String]| {
            if items.is_empty() {
                "(none)".to_owned()
            } else {
                items.join(", ")
            }
        };
        let mut text = format!(
            "Skill `{}`\nBundle sha256: {}\n\nPermissions ({MANIFEST_PATH}{}):\n",
            self.id,
            self.hash,
            if self.bundle.files().contains_key(MANIFEST_PATH) {
                ""
            } else {
                ", absent: nothing beyond its own folder"
            }
        );
        let _ = writeln!(text, "  read folders:  {}", list(&permissions.read));
        let _ = writeln!(text, "  write folders: {}", list(&permissions.write));
        let _ = writeln!(text, "  hosts:         {}", list(&permissions.hosts));
        let _ = writeln!(text, "  programs:      {}", list(&permissions.programs));
        let _ = writeln!(text, "  environment:   {}", list(&permissions.env));
        let _ = writeln!(text, "  tools:         {}", list(&permissions.tools));
        let _ = writeln!(
            text,
            "  time limit:    {} s per command",
            permissions.time_limit_seconds
        );
        text.push_str("\nValidation findings:\n");
        if self.findings.is_empty() {
            text.push_str("  (none)\n");
        }
        for finding in &self.findings {
            let _ = writeln!(
                text,
                "  - {:?} {}: {}{}",
                finding.severity,
                finding.code,
                finding.message,
                finding
                    .file_path
                    .as_deref()
                    .map(|file| format!(" ({file})"))
                    .unwrap_or_default()
            );
        }
        text
    }
}

impl SkillCommandTool {
    /// Why a command asks whatever rules and grants say, and what its approval shows: the
    /// consent still to give (`consent`), a command the consent does not cover (asked every
    /// time: grants never lift `Untrusted`), or both in one ask; `None` when neither.
    fn untrusted(
        &self,
        consent: bool,
        command: &str,
        checked: &crate::sandbox::CommandRequest,
        args: &SkillCommandArgs,
    ) -> Option<(String, String)> {
        let mut reasons = Vec::new();
        let mut shown = String::new();
        if let Some(why) = coverage::uncovered(&self.bundle, &self.permissions, args) {
            reasons.push(format!(
                "the consent to the skill `{}` does not cover this command ({why}); approving \
                 runs it this once",
                self.id
            ));
            shown = uncovered_preview(command, checked, args, &why);
        }
        if consent {
            reasons.push(self.consent_reason());
            shown.push_str(&self.preview());
        }
        (!reasons.is_empty()).then(|| (reasons.join("; "), shown))
    }
}

/// What an approval of a command the consent does not cover shows: the exact command, its
/// working folder, the variables the caller adds, and why it asks.
fn uncovered_preview(
    command: &str,
    checked: &crate::sandbox::CommandRequest,
    args: &SkillCommandArgs,
    why: &str,
) -> String {
    let mut text = format!(
        "Not covered by the skill's consent ({why}); approving runs this once:\n  {command}\n"
    );
    if let Some(folder) = &args.working_directory {
        let _ = writeln!(text, "Working folder (in the skill's copy): {folder}");
    }
    for (name, value) in &args.environment {
        let _ = writeln!(text, "Environment: {name}={value}");
    }
    if let Some(stdin) = &checked.stdin {
        let _ = writeln!(text, "Input: {}", String::from_utf8_lossy(stdin));
    }
    text.push('\n');
    text
}

impl DynTool for SkillCommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn plan<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<PlannedCall, ToolError>> {
        Box::pin(async move {
            let args: SkillCommandArgs = serde_json::from_value(arguments)
                .map_err(|error| ToolError::InvalidArguments(error.to_string()))?;
            // The same checks the run makes, on a placeholder root: nothing is staged yet.
            let checked =
                run::request(&self.id, Path::new("."), &self.permissions, &args, |_| None)
                    .map_err(|error| ToolError::InvalidArguments(error.to_string()))?;
            let short = self.short_hash();
            // Consent asked at install and not yet decided: wait for that one approval
            // rather than asking a second time.
            let asked = tokio::select! {
                settled = self.approvals.standing_decision(self.spec.name) => settled,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            };
            if asked == Some(false) {
                return Err(ToolError::Failed(format!(
                    "the skill `{}` (bundle {short}) was not approved: its consent was denied \
                     or expired; its next command asks again",
                    self.id
                )));
            }
            let command = checked.program.display();
            let mut plan = Plan::new(localized!(
                ctx.language,
                "Run `{command}` of the skill `{}` (bundle {short})",
                "Выполнить `{command}` навыка `{}` (пакет {short})",
                self.id
            ))
            .target(CallTarget::Command {
                command: command.clone(),
                cwd: checked.cwd.clone().map(Into::into).unwrap_or_default(),
            });
            if let Ok(Some(reason)) = ctx.sandbox.unconfined_commands() {
                // As for `RunCommand`: consent never covers an unconfined command.
                plan = plan.target(CallTarget::Unconfined {
                    reason: reason.to_owned(),
                });
            }
            let consent = !self.approvals.has_standing_allow(self.spec.name);
            if let Some((reason, shown)) = self.untrusted(consent, &command, &checked, &args) {
                plan = plan.target(CallTarget::Untrusted { reason }).diff(shown);
            }
            let tool = self.spec.name;
            let approvals = self.approvals.clone();
            let (id, bundle) = (self.id.clone(), Arc::clone(&self.bundle));
            let permissions = self.permissions.clone();
            Ok(PlannedCall::new(plan, move |ctx: ToolContext| {
                Box::pin(async move {
                    if consent {
                        approvals
                            .grant_standing(tool, None)
                            .await
                            .map_err(|error| ToolError::Internal(error.to_string()))?;
                    }
                    let files = SkillFiles {
                        id: &id,
                        bundle: &bundle,
                        permissions: &permissions,
                    };
                    let outcome = run::run(&ctx.sandbox, files, &args, &ctx.cancel)
                        .await
                        .map_err(|error| ToolError::Failed(error.to_string()))?;
                    let result = SkillRunResult {
                        exit_code: outcome.exit_code,
                        stdout: outcome.stdout.text,
                        stderr: outcome.stderr.text,
                        timed_out: outcome.timed_out,
                    };
                    let structured = serde_json::to_value(&result)
                        .map_err(|error| ToolError::Internal(error.to_string()))?;
                    Ok(ToolOutput {
                        text: structured.to_string(),
                        structured: Some(structured),
                    })
                })
            }))
        })
    }
}
