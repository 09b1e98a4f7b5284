//! The hidden `__sandbox-exec` subcommand: two stages of the daemon's own binary between the
//! daemon and a confined command.
//!
//! 1. The supervisor (`souz __sandbox-exec OPTIONS -- PROGRAM ARGS`) makes itself a child
//!    subreaper, starts stage 2 with the same options, and waits. Every orphan below it is
//!    re-parented to it, so when the command exits it can end everything the command left
//!    behind (after [`LINGER`] for background work to finish by itself), even processes that
//!    left the process group (`setsid`) or lost their parent (a double fork). It then exits as
//!    the command did (same code, or the same signal). It is not confined itself, so the
//!    confined command cannot signal it (Landlock scopes signals to the command's domain).
//! 2. The confiner (`souz __sandbox-exec --confine OPTIONS -- PROGRAM ARGS`) drops every
//!    privilege (see `privileges`), applies Landlock and the system-call filter to itself and
//!    `exec`s the command, so the restrictions are
//!    inherited by the command and all its children and nothing unsafe runs between `fork`
//!    and `exec`.
//!
//! Invariants:
//! - The command never runs unconfined: a confiner that cannot apply every layer exits with
//!   [`HELPER_FAILURE_EXIT_CODE`] before starting it.
//! - The supervisor exits only after a walk of its descendants found none alive (see
//!   `process_tree`); the daemon, which ends the supervisor last, relies on this.
//! - Options and their serialization are one type ([`HelperArguments`]), so what the daemon
//!   writes is what the helper reads.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::{HELPER_FAILURE_EXIT_CODE, HELPER_SUBCOMMAND};

/// How long the supervisor lets processes the command left behind finish by themselves
/// after it exited, before it ends them (the daemon drains their output as long).
pub const LINGER: Duration = Duration::from_secs(1);

/// Why the helper could not run a command.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// The arguments are not of the helper's form.
    #[error(
        "usage: souz {HELPER_SUBCOMMAND} [--confine] [--allow-write PATH | --allow-unix PATH | --allow-network | --allow-connect PORT]... [--restrict-read [--allow-read PATH]...] -- PROGRAM [ARGS]..."
    )]
    Usage,
    /// Confinement could not be applied.
    #[error("cannot confine the command: {0}")]
    Confine(String),
    /// The command could not be started.
    #[error("cannot run `{program}`: {source}")]
    Exec {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Which stage of the helper runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HelperStage {
    /// Supervise: become the subreaper, run stage 2, end every descendant at the end.
    #[default]
    Supervise,
    /// Confine this process and `exec` the command.
    Confine,
}

/// The parsed arguments of the helper.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HelperArguments {
    /// Which stage this is.
    pub stage: HelperStage,
    /// Files and folders the command may write.
    pub writable: Vec<PathBuf>,
    /// Path-named UNIX sockets the command may connect to (`[sandbox] unix_socket_allow`).
    /// Empty: no UNIX-socket connection at all.
    pub unix_sockets: Vec<PathBuf>,
    /// Whether the command may use TCP (connect and bind).
    pub network: bool,
    /// Without `network`: the TCP ports it may still connect to (an egress proxy's).
    pub connect_ports: Vec<u16>,
    /// Files and folders the command may read, when reading is restricted.
    pub readable: Option<Vec<PathBuf>>,
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl HelperArguments {
    /// Parses what follows the subcommand name.
    pub fn parse(arguments: impl IntoIterator<Item = OsString>) -> Result<Self, HelperError> {
        let mut arguments = arguments.into_iter().peekable();
        let mut parsed = Self::default();
        if arguments.peek().is_some_and(|first| first == "--confine") {
            parsed.stage = HelperStage::Confine;
            arguments.next();
        }
        loop {
            let argument = arguments.next().ok_or(HelperError::Usage)?;
            if argument == "--" {
                break;
            }
            if argument == "--restrict-read" && parsed.readable.is_none() {
                parsed.readable = Some(Vec::new());
                continue;
            }
            if argument == "--allow-network" && parsed.readable.is_none() && !parsed.network {
                parsed.network = true;
                continue;
            }
            if argument == "--allow-connect" && parsed.readable.is_none() {
                let port = arguments.next().ok_or(HelperError::Usage)?;
                let port = port
                    .to_str()
                    .and_then(|port| port.parse::<u16>().ok())
                    .filter(|port| *port > 0)
                    .ok_or(HelperError::Usage)?;
                parsed.connect_ports.push(port);
                continue;
            }
            let list = match (argument.to_str(), parsed.readable.as_mut()) {
                (Some("--allow-write"), None) => &mut parsed.writable,
                (Some("--allow-unix"), None) => &mut parsed.unix_sockets,
                (Some("--allow-read"), Some(readable)) => readable,
                _ => return Err(HelperError::Usage),
            };
            list.push(PathBuf::from(arguments.next().ok_or(HelperError::Usage)?));
        }
        parsed.program = arguments.next().ok_or(HelperError::Usage)?;
        parsed.args = arguments.collect();
        Ok(parsed)
    }

    /// The arguments that [`HelperArguments::parse`] reads back as `self`.
    pub fn to_arguments(&self) -> Vec<OsString> {
        let mut arguments = Vec::new();
        if self.stage == HelperStage::Confine {
            arguments.push(OsString::from("--confine"));
        }
        for (flag, paths) in [
            ("--allow-write", &self.writable),
            ("--allow-unix", &self.unix_sockets),
        ] {
            for path in paths {
                arguments.push(OsString::from(flag));
                arguments.push(path.clone().into_os_string());
            }
        }
        if self.network {
            arguments.push(OsString::from("--allow-network"));
        }
        for port in &self.connect_ports {
            arguments.push(OsString::from("--allow-connect"));
            arguments.push(OsString::from(port.to_string()));
        }
        if let Some(readable) = &self.readable {
            // Also for an empty list: the helper then restricts reading to nothing.
            arguments.push(OsString::from("--restrict-read"));
            for path in readable {
                arguments.push(OsString::from("--allow-read"));
                arguments.push(path.clone().into_os_string());
            }
        }
        arguments.push(OsString::from("--"));
        arguments.push(self.program.clone());
        arguments.extend(self.args.iter().cloned());
        arguments
    }
}

/// The helper: runs the stage its arguments name. Returns only on failure (the command never
/// runs unconfined); on success the process exits as the command did. The process must still
/// be single-threaded: Landlock restricts the calling thread and what it starts afterwards.
pub fn run_helper(arguments: HelperArguments) -> HelperError {
    #[cfg(target_os = "linux")]
    {
        match arguments.stage {
            HelperStage::Supervise => supervisor::run(arguments),
            HelperStage::Confine => confine_and_exec(arguments),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = arguments;
        HelperError::Confine("Landlock exists only on Linux".to_owned())
    }
}

/// Stage 2: every layer, then the command.
#[cfg(target_os = "linux")]
fn confine_and_exec(arguments: HelperArguments) -> HelperError {
    use std::os::unix::process::CommandExt;
    let restrictions = super::landlock_rules::Restrictions {
        writable: &arguments.writable,
        readable: arguments.readable.as_deref(),
        unix_sockets: &arguments.unix_sockets,
        network: arguments.network,
        connect_ports: &arguments.connect_ports,
    };
    if let Err(reason) = super::privileges::drop_all() {
        return HelperError::Confine(reason);
    }
    if let Err(reason) = super::landlock_rules::restrict_self(&restrictions) {
        return HelperError::Confine(reason);
    }
    let filter = super::syscall_filter::SyscallFilter {
        unix_sockets: arguments.unix_sockets.is_empty(),
    };
    if let Err(reason) = filter.install() {
        return HelperError::Confine(reason);
    }
    let source = std::process::Command::new(&arguments.program)
        .args(&arguments.args)
        .exec();
    HelperError::Exec {
        program: arguments.program.to_string_lossy().into_owned(),
        source,
    }
}

#[cfg(target_os = "linux")]
mod supervisor {
    //! Stage 1: the subreaper that outlives the command and ends what it left behind.

    use std::time::Instant;

    use rustix::io::Errno;
    use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

    use super::{HelperArguments, HelperError, HelperStage, LINGER};
    use crate::sandbox::process_tree;

    /// How often the supervisor looks whether lingering processes are gone.
    const LINGER_POLL: std::time::Duration = std::time::Duration::from_millis(10);

    pub(super) fn run(arguments: HelperArguments) -> HelperError {
        let me = rustix::process::getpid();
        if let Err(error) = rustix::process::set_child_subreaper(Some(me)) {
            return HelperError::Confine(format!(
                "cannot adopt the command's orphaned processes: {error}"
            ));
        }
        let helper = match std::env::current_exe() {
            Ok(helper) => helper,
            Err(error) => {
                return HelperError::Confine(format!("cannot find the helper binary: {error}"));
            }
        };
        let confine = HelperArguments {
            stage: HelperStage::Confine,
            ..arguments
        };
        let child = match std::process::Command::new(&helper)
            .arg(super::HELPER_SUBCOMMAND)
            .args(confine.to_arguments())
            .spawn()
        {
            Ok(child) => child,
            Err(source) => {
                return HelperError::Exec {
                    program: helper.to_string_lossy().into_owned(),
                    source,
                };
            }
        };
        // Reaped below with `wait`, never through `child`.
        let direct = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
        drop(child);
        let status = wait_for(direct);
        // Background work gets a moment to finish; then everything below is ended.
        let deadline = Instant::now() + LINGER;
        while Instant::now() < deadline && !process_tree::live_descendants(me).is_empty() {
            reap_ready();
            std::thread::sleep(LINGER_POLL);
        }
        if process_tree::kill_all_below(me, reap_ready) {
            // Only dying processes and zombies are left: wait for every one of them.
            while rustix::process::wait(WaitOptions::empty()).is_ok_and(|reaped| reaped.is_some()) {
            }
        }
        exit_like(me, status)
    }

    /// Waits for `direct` (reaping adopted orphans on the way) and returns how it ended.
    fn wait_for(direct: Option<Pid>) -> Option<WaitStatus> {
        loop {
            match rustix::process::wait(WaitOptions::empty()) {
                Ok(Some((pid, status))) if Some(pid) == direct => return Some(status),
                Ok(Some(_)) | Err(Errno::INTR) => {}
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Reaps every child that has ended, without blocking.
    fn reap_ready() {
        while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
    }

    /// Ends this process the way the command ended: the same exit code, or the same signal.
    fn exit_like(me: Pid, status: Option<WaitStatus>) -> ! {
        let Some(status) = status else {
            std::process::exit(i32::from(super::HELPER_FAILURE_EXIT_CODE));
        };
        if let Some(code) = status.exit_status() {
            std::process::exit(code);
        }
        if let Some(signal) = status.terminating_signal() {
            if let Some(named) = Signal::from_named_raw(signal) {
                let _ = rustix::process::kill_process(me, named);
            }
            // A signal this process does not die of: report it as shells do.
            std::process::exit(128 + signal);
        }
        std::process::exit(i32::from(super::HELPER_FAILURE_EXIT_CODE))
    }
}
