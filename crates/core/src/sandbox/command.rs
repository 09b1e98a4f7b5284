//! The command runner behind `RunCommand` (and skills): one program run with a working folder
//! inside a root, a time limit, capped output, a scrubbed environment and OS confinement.
//!
//! Invariants:
//! - The command runs in its own process group; the whole group and every process below it
//!   are ended (SIGTERM, then SIGKILL after [`TERMINATE_GRACE`]) on timeout, on cancellation,
//!   when the caller drops the call, and after the command exits. Under Landlock the helper's
//!   supervisor adopts every orphan, so also processes that left the group (`setsid`) or lost
//!   their parent (a double fork) are ended; elsewhere those are out of reach.
//! - Each command gets a private temporary folder (0700, `TMPDIR`/`TMP`/`TEMP`), removed when
//!   the call ends; the shared temporary folders are not writable for confined commands.
//! - Nothing runs unconfined unless `[sandbox] allow_unconfined_commands` (see
//!   [`Sandbox::unconfined_commands`]).
//! - Background children that keep stdout/stderr open cannot hang the call: after the command
//!   exits, output is drained for at most [`DRAIN_GRACE`], then the group is killed.
//! - Each stream keeps at most `command_output_limit` bytes; the rest is counted and replaced
//!   by `\n...[truncated N bytes]`. Output is returned as UTF-8 (invalid bytes replaced; a
//!   character cut by the limit is dropped whole).
//! - The environment starts empty: see `environment` for what is inherited and what is refused.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::environment;
use super::{Access, Sandbox, SandboxError};

/// How long output is still read after the command exited (background children may hold the
/// pipes open).
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// How long the group gets between SIGTERM and SIGKILL.
pub(crate) const TERMINATE_GRACE: Duration = Duration::from_millis(500);

/// The shell that runs command lines (`-c`): bash where present, else the POSIX shell.
fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandProgram {
    /// A command line for the shell (`bash -c`).
    Shell(String),
    /// A program and its arguments, run without a shell.
    Argv(Vec<String>),
}

impl CommandProgram {
    /// The command as a person would read it.
    pub fn display(&self) -> String {
        match self {
            Self::Shell(line) => line.clone(),
            Self::Argv(argv) => argv
                .iter()
                .map(|word| {
                    if !word.is_empty()
                        && word
                            .chars()
                            .all(|c| c.is_alphanumeric() || "-_./=:,+@%".contains(c))
                    {
                        word.clone()
                    } else {
                        format!("'{}'", word.replace('\'', "'\\''"))
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// One command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    /// What to run.
    pub program: CommandProgram,
    /// Working folder as written by the caller (`~`, relative to home, ...); it must resolve
    /// to a folder inside a root. `None`: the home folder if it is inside a root, else the
    /// first root.
    pub cwd: Option<String>,
    /// Time limit; `None` means `command_timeout_seconds`. Never more than
    /// `command_max_timeout_seconds`.
    pub timeout: Option<Duration>,
    /// Variables added to the scrubbed environment.
    pub env: Vec<(String, String)>,
    /// Bytes written to the command's standard input (then closed); `None`: empty input.
    pub stdin: Option<Vec<u8>>,
    /// Whether the command may use the network (TCP) where confinement can refuse it;
    /// `[sandbox] command_network` grants it to every command.
    pub network: bool,
}

impl CommandRequest {
    /// A shell command line with defaults for everything else.
    pub fn shell(line: impl Into<String>) -> Self {
        Self {
            program: CommandProgram::Shell(line.into()),
            cwd: None,
            timeout: None,
            env: Vec::new(),
            stdin: None,
            network: false,
        }
    }

    /// A program and arguments with defaults for everything else.
    pub fn argv(argv: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            program: CommandProgram::Argv(argv.into_iter().map(Into::into).collect()),
            ..Self::shell(String::new())
        }
    }
}

/// One captured stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CapturedOutput {
    /// The kept text, with the truncation marker when bytes were dropped.
    pub text: String,
    /// Bytes the command wrote to the stream.
    pub total_bytes: u64,
    /// Bytes dropped (not in `text`).
    pub truncated_bytes: u64,
}

/// What happened when a command ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The exit code, when the command exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Standard output.
    pub stdout: CapturedOutput,
    /// Standard error.
    pub stderr: CapturedOutput,
    /// Whether the time limit ended it.
    pub timed_out: bool,
    /// Whether the caller cancelled it.
    pub cancelled: bool,
    /// Whether output was cut short because background processes held the pipes open after
    /// the command exited.
    pub drain_interrupted: bool,
    /// Wall time.
    pub duration: Duration,
    /// The working folder it ran in.
    pub cwd: PathBuf,
    /// The time limit that applied.
    pub timeout: Duration,
}

/// Why a command could not be run (a command that ran and failed is an [`CommandOutcome`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The working folder is refused.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The request is malformed.
    #[error("{0}")]
    InvalidRequest(String),
    /// This machine cannot confine commands and `[sandbox] allow_unconfined_commands` is off.
    #[error(
        "commands are refused: Souz cannot confine them on this machine ({0}). Set `[sandbox] \
         allow_unconfined_commands = true` to run them unconfined, each one only after you approve it"
    )]
    Unconfined(String),
    /// The program could not be started.
    #[error("cannot start `{program}`: {reason}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        reason: String,
    },
}

impl Sandbox {
    /// The time limit a request gets: its own (at most the configured maximum) or the default.
    pub fn command_timeout(&self, requested: Option<Duration>) -> Duration {
        let maximum = Duration::from_secs(self.config.command_max_timeout_seconds);
        requested
            .unwrap_or(Duration::from_secs(self.config.command_timeout_seconds))
            .min(maximum)
    }

    /// Why commands would run unconfined here (`None` when the system confines them), or
    /// [`CommandError::Unconfined`] when they may not run at all.
    pub fn unconfined_commands(&self) -> Result<Option<&str>, CommandError> {
        match &self.confinement {
            super::Confinement::None { reason } if self.config.allow_unconfined_commands => {
                Ok(Some(reason.as_str()))
            }
            super::Confinement::None { reason } => Err(CommandError::Unconfined(reason.clone())),
            _ => Ok(None),
        }
    }

    /// Resolves a command's working folder (see [`CommandRequest::cwd`]).
    pub fn command_cwd(&self, raw: Option<&str>) -> Result<super::ResolvedPath, CommandError> {
        let raw = match raw {
            Some(raw) if !raw.trim().is_empty() => raw.to_owned(),
            _ if self.inside_roots(self.user_home()) => "~".to_owned(),
            _ => self
                .roots()
                .first()
                .map(|root| root.display().to_string())
                .ok_or_else(|| CommandError::InvalidRequest("no workspace root exists".into()))?,
        };
        let resolved = self.resolve(&raw, Access::Read)?;
        if !resolved.path.is_dir() {
            return Err(CommandError::InvalidRequest(format!(
                "the working folder `{}` is not a folder",
                self.display(&resolved.path)
            )));
        }
        Ok(resolved)
    }

    /// The command's time limit, which must not be zero.
    fn nonzero_timeout(&self, requested: Option<Duration>) -> Result<Duration, CommandError> {
        let timeout = self.command_timeout(requested);
        if timeout.is_zero() {
            return Err(CommandError::InvalidRequest(
                "the time limit must be at least one second".into(),
            ));
        }
        Ok(timeout)
    }

    /// The launcher and arguments that run `program args` confined. Wrapping walks the roots
    /// for repositories (bounded, but file system work), so it runs off the async threads.
    async fn wrapped(
        &self,
        program: &OsStr,
        args: &[OsString],
        scope: &super::confinement::CommandScope<'_>,
    ) -> Result<(OsString, Vec<OsString>), CommandError> {
        let sandbox = self.clone();
        let network = scope.network;
        let temporary = scope.temporary.to_path_buf();
        let cwd = scope.working_folder.map(Path::to_path_buf);
        let (program, args) = (program.to_owned(), args.to_vec());
        let name = program.to_string_lossy().into_owned();
        tokio::task::spawn_blocking(move || {
            let scope = super::confinement::CommandScope {
                temporary: &temporary,
                network,
                working_folder: cwd.as_deref(),
            };
            sandbox
                .confinement()
                .wrap(&sandbox, &scope, &program, &args)
        })
        .await
        .map_err(|error| CommandError::Spawn {
            program: name,
            reason: error.to_string(),
        })
    }

    /// Runs a command to completion, time limit or cancellation.
    pub async fn run_command(
        &self,
        request: CommandRequest,
        cancel: &CancellationToken,
    ) -> Result<CommandOutcome, CommandError> {
        self.run_captured(request, cancel, None)
            .await
            .map(|(outcome, _)| outcome)
    }

    /// [`Sandbox::run_command`] for a program whose standard output is binary (audio): also
    /// returns the output's bytes as written, at most `stdout_limit` of them (instead of
    /// `command_output_limit`); `stdout.truncated_bytes` says whether more were written.
    pub async fn run_command_bytes(
        &self,
        request: CommandRequest,
        cancel: &CancellationToken,
        stdout_limit: usize,
    ) -> Result<(CommandOutcome, Vec<u8>), CommandError> {
        self.run_captured(request, cancel, Some(stdout_limit)).await
    }

    async fn run_captured(
        &self,
        request: CommandRequest,
        cancel: &CancellationToken,
        stdout_bytes: Option<usize>,
    ) -> Result<(CommandOutcome, Vec<u8>), CommandError> {
        self.unconfined_commands()?;
        let (program, args) = program_and_args(&request.program)?;
        let cwd = self.command_cwd(request.cwd.as_deref())?.path;
        let timeout = self.nonzero_timeout(request.timeout)?;
        // Dropped last: removed once nothing the command started is left.
        let temporary = self.private_temporary_folder()?;
        let environment = self.command_environment(temporary.path(), &request.env)?;
        let scope = super::confinement::CommandScope {
            temporary: temporary.path(),
            network: request.network || self.config.command_network,
            working_folder: Some(&cwd),
        };
        let (launcher, launcher_args) = self.wrapped(&program, &args, &scope).await?;
        let supervised = matches!(self.confinement(), super::Confinement::Landlock { .. });

        let mut command = command(
            &launcher,
            &launcher_args,
            environment,
            &cwd,
            request.stdin.is_some(),
        );
        let started = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|error| spawn_error(&program, &launcher, &error))?;
        let mut group = ProcessGroup::of(&child, supervised);
        let limit = usize::try_from(self.config.command_output_limit.bytes()).unwrap_or(usize::MAX);
        let mut stdout = CappedBuffer::new(stdout_bytes.unwrap_or(limit));
        let mut stderr = CappedBuffer::new(limit);
        let stdout_pipe = child.stdout.take();
        let stderr_pipe = child.stderr.take();
        let stdin_pipe = child.stdin.take();
        let stdin_bytes = request.stdin.unwrap_or_default();

        let mut timed_out = false;
        let mut cancelled = false;
        let mut drain_interrupted = false;
        let status;
        {
            let capture = async {
                tokio::join!(
                    read_into(stdout_pipe, &mut stdout),
                    read_into(stderr_pipe, &mut stderr),
                    write_stdin(stdin_pipe, &stdin_bytes),
                );
            };
            tokio::pin!(capture);
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            let mut captured = false;
            let ended = loop {
                tokio::select! {
                    status = child.wait() => break status.ok(),
                    () = &mut deadline => {
                        timed_out = true;
                        break None;
                    }
                    () = cancel.cancelled() => {
                        cancelled = true;
                        break None;
                    }
                    () = &mut capture, if !captured => captured = true,
                }
            };
            status = match ended {
                Some(status) => {
                    group.reaped();
                    Some(status)
                }
                None => group.terminate(&mut child).await,
            };
            if !captured {
                // The command is gone; whoever still holds the pipes gets the grace period.
                if tokio::time::timeout(DRAIN_GRACE, &mut capture)
                    .await
                    .is_err()
                {
                    drain_interrupted = !timed_out && !cancelled;
                    group.kill();
                    // Killing closes their ends of the pipes; a process that left the group
                    // (`setsid`) may still hold them, so this wait is bounded too.
                    let _ = tokio::time::timeout(DRAIN_GRACE, &mut capture).await;
                }
            }
        }
        // Nothing the command started outlives the call.
        group.kill();
        let (exit_code, signal) = describe(status);
        let bytes = stdout_bytes
            .map(|_| stdout.kept.clone())
            .unwrap_or_default();
        let outcome = CommandOutcome {
            exit_code,
            signal,
            stdout: stdout.finish(),
            stderr: stderr.finish(),
            timed_out,
            cancelled,
            drain_interrupted,
            duration: started.elapsed(),
            cwd,
            timeout,
        };
        Ok((outcome, bytes))
    }

    /// A new private temporary folder for one command (0700, under the system's temporary
    /// folder), removed when the returned handle is dropped.
    fn private_temporary_folder(&self) -> Result<tempfile::TempDir, CommandError> {
        let system = std::env::temp_dir();
        let system = system.canonicalize().unwrap_or(system);
        // A temporary folder that is (or holds) a protected path would not be granted.
        let parent = if self.is_protected(&system) || self.holds_protected(&system) {
            PathBuf::from("/tmp")
        } else {
            system
        };
        let folder = tempfile::Builder::new()
            .prefix("souz-command-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&parent)
            .map_err(|error| CommandError::Spawn {
                program: "the command".to_owned(),
                reason: format!(
                    "cannot create its temporary folder in {}: {error}",
                    parent.display()
                ),
            })?;
        Ok(folder)
    }

    /// The environment of a command: the inherited allowlist, `HOME` set to the user's home,
    /// a fallback for `PATH`, `TMPDIR` (and `TMP`, `TEMP`) set to its private temporary folder,
    /// then the caller's additions (injection variables refused).
    fn command_environment(
        &self,
        temporary: &Path,
        additions: &[(String, String)],
    ) -> Result<Vec<(OsString, OsString)>, CommandError> {
        let mut environment: Vec<(OsString, OsString)> = self
            .inherited_environment
            .iter()
            .filter(|(name, _)| {
                name != "HOME"
                    && !environment::TEMPORARY_FOLDER_VARIABLES
                        .iter()
                        .any(|variable| name == variable)
            })
            .cloned()
            .collect();
        environment.push((
            OsString::from("HOME"),
            self.user_home().as_os_str().to_owned(),
        ));
        if !environment.iter().any(|(name, _)| name == "PATH") {
            environment.push((
                OsString::from("PATH"),
                OsString::from(environment::FALLBACK_PATH),
            ));
        }
        for name in environment::TEMPORARY_FOLDER_VARIABLES {
            // The only temporary folder confined commands may write: tell them where it is.
            environment.push((OsString::from(name), temporary.as_os_str().to_owned()));
        }
        for (name, value) in additions {
            if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains('\0')
            {
                return Err(CommandError::InvalidRequest(format!(
                    "invalid environment variable `{name}`"
                )));
            }
            if environment::is_injection_variable(name) {
                return Err(CommandError::InvalidRequest(format!(
                    "the environment variable `{name}` can inject code into programs and is not allowed"
                )));
            }
            environment.retain(|(existing, _)| existing != name.as_str());
            environment.push((OsString::from(name), OsString::from(value)));
        }
        Ok(environment)
    }
}

/// The command that starts `launcher` (the program, or the sandbox's launcher around it) in
/// `cwd` with only `environment`, in its own process group, its output piped.
fn command(
    launcher: &OsStr,
    launcher_args: &[OsString],
    environment: Vec<(OsString, OsString)>,
    cwd: &Path,
    piped_stdin: bool,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(launcher);
    command
        .args(launcher_args)
        .env_clear()
        .envs(environment)
        .current_dir(cwd)
        .process_group(0)
        .stdin(if piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Why a command could not start: its own error, or its sandbox launcher's.
fn spawn_error(program: &OsStr, launcher: &OsStr, error: &std::io::Error) -> CommandError {
    CommandError::Spawn {
        program: program.to_string_lossy().into_owned(),
        reason: if launcher == program {
            error.to_string()
        } else {
            format!(
                "the sandbox launcher {} failed: {error}",
                launcher.to_string_lossy()
            )
        },
    }
}

/// The program and arguments a request runs (before confinement wraps them).
fn program_and_args(program: &CommandProgram) -> Result<(OsString, Vec<OsString>), CommandError> {
    match program {
        CommandProgram::Shell(line) => {
            if line.trim().is_empty() {
                return Err(CommandError::InvalidRequest("the command is empty".into()));
            }
            if line.contains('\0') {
                return Err(CommandError::InvalidRequest(
                    "the command contains a NUL character".into(),
                ));
            }
            Ok((
                OsString::from(shell()),
                vec![OsString::from("-c"), OsString::from(line)],
            ))
        }
        CommandProgram::Argv(argv) => {
            let Some((program, args)) = argv.split_first() else {
                return Err(CommandError::InvalidRequest("the command is empty".into()));
            };
            if program.is_empty() {
                return Err(CommandError::InvalidRequest(
                    "the program name is empty".into(),
                ));
            }
            if argv.iter().any(|word| word.contains('\0')) {
                return Err(CommandError::InvalidRequest(
                    "the command contains a NUL character".into(),
                ));
            }
            Ok((
                OsString::from(program),
                args.iter().map(OsString::from).collect(),
            ))
        }
    }
}

fn describe(status: Option<ExitStatus>) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(status) => (status.code(), status.signal()),
        None => (None, None),
    }
}

/// The processes of a spawned command: its process group (its id is the launched process's
/// pid) and, on Linux, every process below it. Killed on drop, so a caller that abandons the
/// call does not leave the command running.
///
/// `supervised`: the launched process is the sandbox helper's supervisor, a subreaper that
/// adopts every orphan of the command and ends them all before it exits. It must outlive the
/// command's processes, so signals go to the processes below it, and it is killed last.
/// Otherwise (no confinement, Seatbelt) the group and the processes still linked below the
/// command are signalled; a process that left the group and lost its parent is out of reach.
struct ProcessGroup {
    id: Option<rustix::process::Pid>,
    supervised: bool,
    /// The launched process was reaped: its pid may belong to someone else now, so nothing is
    /// walked below it any more.
    reaped: bool,
}

impl ProcessGroup {
    fn of(child: &tokio::process::Child, supervised: bool) -> Self {
        let id = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw);
        Self {
            id,
            supervised,
            reaped: false,
        }
    }

    fn reaped(&mut self) {
        self.reaped = true;
    }

    fn signal(&self, signal: rustix::process::Signal) {
        let Some(id) = self.id else {
            return;
        };
        if !self.supervised || self.reaped {
            // The command and its group first, all at once, as a terminal would.
            // ESRCH (already gone) is the expected outcome more often than not.
            let _ = rustix::process::kill_process_group(id, signal);
        }
        if !self.reaped {
            super::process_tree::signal_all_below(id, signal);
        }
    }

    fn kill(&self) {
        let Some(id) = self.id else {
            return;
        };
        if !self.reaped {
            super::process_tree::kill_all_below(id, || {});
        }
        let _ = rustix::process::kill_process_group(id, rustix::process::Signal::KILL);
    }

    /// [`Self::kill`] off the async workers: the walk rescans `/proc` and pauses between
    /// rounds until nothing is left below the command.
    async fn kill_off_workers(&self) {
        let Some(id) = self.id else {
            return;
        };
        if !self.reaped {
            let _ =
                tokio::task::spawn_blocking(move || super::process_tree::kill_all_below(id, || {}))
                    .await;
        }
        let _ = rustix::process::kill_process_group(id, rustix::process::Signal::KILL);
    }

    /// SIGTERM to the command's processes, a short grace for the command to exit, then SIGKILL.
    async fn terminate(&mut self, child: &mut tokio::process::Child) -> Option<ExitStatus> {
        self.signal(rustix::process::Signal::TERM);
        let status = match tokio::time::timeout(TERMINATE_GRACE, child.wait()).await {
            Ok(status) => {
                self.reaped();
                self.kill_off_workers().await;
                status.ok()
            }
            Err(_) => {
                self.kill_off_workers().await;
                child.wait().await.ok()
            }
        };
        self.reaped();
        status
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Keeps the first `limit` bytes of a stream and counts the rest.
struct CappedBuffer {
    kept: Vec<u8>,
    total: u64,
    limit: usize,
}

impl CappedBuffer {
    fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            total: 0,
            limit,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.limit.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn finish(mut self) -> CapturedOutput {
        if self.total > self.kept.len() as u64 {
            // Drop a character the limit cut in half, rather than show a replacement sign.
            if let Err(error) = std::str::from_utf8(&self.kept)
                && error.error_len().is_none()
            {
                self.kept.truncate(error.valid_up_to());
            }
        }
        let truncated_bytes = self.total - self.kept.len() as u64;
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if truncated_bytes > 0 {
            text.push_str(&format!("\n...[truncated {truncated_bytes} bytes]"));
        }
        CapturedOutput {
            text,
            total_bytes: self.total,
            truncated_bytes,
        }
    }
}

async fn read_into(pipe: Option<impl AsyncRead + Unpin>, buffer: &mut CappedBuffer) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(read) => buffer.push(&chunk[..read]),
        }
    }
}

async fn write_stdin(pipe: Option<tokio::process::ChildStdin>, bytes: &[u8]) {
    if let Some(mut pipe) = pipe {
        // A command that exits without reading its input is not an error.
        let _ = pipe.write_all(bytes).await;
        let _ = pipe.shutdown().await;
    }
}

#[cfg(test)]
mod tests;
