//! Built-in tools: `RunCommand`, a shell command run through the sandbox's command runner
//! (working folder inside a root, time limit, capped output, scrubbed environment, OS
//! confinement, the whole process group stopped at the end).
//!
//! A command that runs and exits non-zero, or hits its time limit, is a *result* (the model
//! needs its output); only a command that cannot start is an error.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use souz_protocol::{ConfinementKind, Risk, ToolCategory};

use crate::approvals::CallTarget;
use crate::sandbox::{Access, CommandError, CommandOutcome, CommandRequest};
use crate::tools::{
    CatalogBuilder, CatalogError, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput,
    localized,
};

/// Longest command shown in a plan's one-line summary (the target keeps all of it).
const SUMMARY_COMMAND_CHARS: usize = 160;

/// Registers this module's tools.
pub(crate) fn register(builder: &mut CatalogBuilder) -> Result<(), CatalogError> {
    builder.add(RunCommand)?;
    Ok(())
}

/// Arguments of `RunCommand`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RunCommandArgs {
    /// The command line, run with bash (`bash -c`), e.g. `ls -la` or `cargo test 2>&1 | tail -n 30`.
    pub command: String,
    /// Working folder (`~/project`, an absolute path, or relative to the home folder); it must be
    /// inside the workspace folders. Default: the home folder.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Time limit in seconds; the command and everything it started are stopped when it passes.
    /// Default 60; the configured maximum applies.
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
    /// Whether the command needs the network (downloads, package installs, git fetch/push,
    /// talking to a local server). Without it the command cannot open TCP connections or
    /// listen on a port. Asking for it makes the call a network call the person approves.
    #[serde(default)]
    pub network: bool,
}

/// What `RunCommand` returns.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunCommandOutput {
    /// The exit code; absent when the command was ended by a signal (time limit, crash).
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    /// Standard output (cut at the configured limit, with a `...[truncated N bytes]` marker).
    pub stdout: String,
    /// Standard error (cut like stdout).
    pub stderr: String,
    /// Whether the time limit stopped the command.
    pub timed_out: bool,
    /// Bytes of stdout left out.
    pub stdout_truncated_bytes: u64,
    /// Bytes of stderr left out.
    pub stderr_truncated_bytes: u64,
    /// Whether background processes still held the output open after the command exited (they
    /// were stopped and their later output is missing).
    pub output_interrupted: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// The working folder.
    pub cwd: String,
    /// How the operating system confined the command.
    pub confinement: ConfinementKind,
}

/// What `plan` hands to `run`.
#[derive(Debug)]
pub(crate) struct PreparedCommand {
    cwd: PathBuf,
    timeout: Duration,
}

/// `RunCommand`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunCommand;

impl Tool for RunCommand {
    type Args = RunCommandArgs;
    type Prepared = PreparedCommand;

    fn name(&self) -> &'static str {
        "RunCommand"
    }

    fn description(&self) -> &'static str {
        "Runs a shell command (bash -c) on this computer and returns its exit code, stdout and \
         stderr. The working folder must be inside the workspace folders; the environment holds \
         no secrets; each output stream is cut at a size limit; the command and every process \
         it started are stopped at the time limit (and when it exits). It has no network unless \
         you set `network: true` (downloads, installs, git fetch/push), which the person \
         approves. Use the file tools to read, search or edit files; use this for builds, \
         tests, git and other programs."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Commands
    }

    fn risk(&self) -> Risk {
        Risk::Exec
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(crate::tools::input_schema::<RunCommandOutput>())
    }

    async fn plan(
        &self,
        args: &RunCommandArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<PreparedCommand>, ToolError> {
        let command = args.command.trim();
        if command.is_empty() {
            return Err(ToolError::InvalidArguments("`command` is empty".into()));
        }
        if command.contains('\0') {
            return Err(ToolError::InvalidArguments(
                "`command` contains a NUL character".into(),
            ));
        }
        let sandbox = &ctx.sandbox;
        let maximum = sandbox.config().command_max_timeout_seconds;
        if let Some(seconds) = args.timeout_seconds
            && !(1..=maximum).contains(&seconds)
        {
            return Err(ToolError::InvalidArguments(format!(
                "`timeoutSeconds` must be between 1 and {maximum}"
            )));
        }
        let timeout = sandbox.command_timeout(args.timeout_seconds.map(Duration::from_secs));
        let cwd = sandbox
            .command_cwd(args.cwd.as_deref())
            .map_err(command_error)?;
        let unconfined = sandbox.unconfined_commands().map_err(command_error)?;
        let mut summary = localized!(
            ctx.language,
            "Run `{}` in {} (time limit {} s)",
            "Выполнить `{}` в {} (не дольше {} с)",
            summary_of(command),
            sandbox.display(&cwd.path),
            timeout.as_secs()
        );
        let network = args.network && !sandbox.config().command_network;
        if network {
            summary.push_str(&localized!(
                ctx.language,
                ", with network access",
                ", с доступом к сети"
            ));
        }
        if unconfined.is_some() {
            summary.push_str(&localized!(
                ctx.language,
                ", unconfined: nothing limits what it can touch",
                ", без ограничений: ему доступно всё"
            ));
        }
        let mut plan = Plan::new(summary).target(CallTarget::Command {
            command: command.to_owned(),
            cwd: cwd.path.clone(),
        });
        if network {
            plan = plan.target(CallTarget::Network);
        }
        if let Some(reason) = unconfined {
            // Rules and grants never allow an unconfined command: the policy asks.
            plan = plan.target(CallTarget::Unconfined {
                reason: reason.to_owned(),
            });
        }
        if cwd.protected {
            // A command working inside a protected folder can change it: the policy must ask.
            plan = plan.path(&cwd, Access::Write);
        }
        Ok(plan.with(PreparedCommand {
            cwd: cwd.path,
            timeout,
        }))
    }

    async fn run(
        &self,
        args: RunCommandArgs,
        prepared: PreparedCommand,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut request = CommandRequest::shell(args.command.trim());
        request.cwd = Some(prepared.cwd.display().to_string());
        request.timeout = Some(prepared.timeout);
        request.network = args.network;
        let outcome = ctx
            .sandbox
            .run_command(request, &ctx.cancel)
            .await
            .map_err(command_error)?;
        if outcome.cancelled {
            return Err(ToolError::Cancelled);
        }
        let output = RunCommandOutput {
            exit_code: outcome.exit_code,
            signal: outcome.signal,
            timed_out: outcome.timed_out,
            stdout_truncated_bytes: outcome.stdout.truncated_bytes,
            stderr_truncated_bytes: outcome.stderr.truncated_bytes,
            output_interrupted: outcome.drain_interrupted,
            duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
            cwd: ctx.sandbox.display(&outcome.cwd),
            confinement: ctx.sandbox.confinement().kind(),
            stdout: outcome.stdout.text.clone(),
            stderr: outcome.stderr.text.clone(),
        };
        let text = render(&output, &outcome);
        let structured = serde_json::to_value(&output)
            .map_err(|error| ToolError::Internal(error.to_string()))?;
        Ok(ToolOutput {
            text,
            structured: Some(structured),
        })
    }
}

fn command_error(error: CommandError) -> ToolError {
    match error {
        CommandError::Sandbox(error) => ToolError::Sandbox(error),
        CommandError::InvalidRequest(message) => ToolError::InvalidArguments(message),
        CommandError::Spawn { .. } | CommandError::Unconfined(_) => {
            ToolError::Failed(error.to_string())
        }
    }
}

/// The first line of a command, shortened for a one-line summary.
fn summary_of(command: &str) -> String {
    let first_line = command.lines().next().unwrap_or_default();
    let mut summary: String = first_line.chars().take(SUMMARY_COMMAND_CHARS).collect();
    if summary.len() < command.len() {
        summary.push('…');
    }
    summary
}

/// The result as text for the model: a status line, then each non-empty stream.
fn render(output: &RunCommandOutput, outcome: &CommandOutcome) -> String {
    let seconds = outcome.duration.as_secs_f64();
    let mut text = if output.timed_out {
        format!(
            "timed out after {} s; the command and the processes it started were stopped",
            outcome.timeout.as_secs()
        )
    } else {
        match (output.exit_code, output.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("ended by signal {signal}"),
            (None, None) => "ended".to_owned(),
        }
    };
    text.push_str(&format!(" ({seconds:.1} s, in {})", output.cwd));
    if output.output_interrupted {
        text.push_str(
            "\nbackground processes kept the output open after the command exited; they were stopped",
        );
    }
    text.push('\n');
    for (name, stream) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if !stream.is_empty() {
            text.push_str(&format!("--- {name} ---\n{stream}"));
            if !stream.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    if output.stdout.is_empty() && output.stderr.is_empty() {
        text.push_str("(no output)\n");
    }
    text
}

#[cfg(test)]
mod tests;
