//! OS confinement of commands: what a command may write, read and reach, enforced by the
//! kernel, and that nothing it starts outlives it.
//!
//! - Linux: Landlock plus a seccomp filter. The runner does not restrict itself; it starts the
//!   daemon's own binary with the hidden subcommand `__sandbox-exec` (see `helper`): a
//!   supervisor that adopts every orphan of the command and ends them all when it exits, and
//!   below it a confiner that applies Landlock and the filter to itself and then `exec`s the
//!   command, so the restrictions are inherited by the command and all its children.
//! - macOS: a Seatbelt profile run through `/usr/bin/sandbox-exec`.
//! - Elsewhere, or when the kernel lacks support: none, with the reason (reported in `/health`);
//!   commands are then refused unless `[sandbox] allow_unconfined_commands` (see `command`).
//!
//! What may be written: inside the workspace roots except protected paths (the configured ones,
//! and the git metadata that runs code in every repository found in the roots or around the
//! working folder, see `repositories`), the command's own private temporary folder (never the
//! shared ones: commands would read and tamper with each other's and other programs' files),
//! and a few device files (`/dev/null`, ...). What may be read: everything but the shared
//! temporary folders (roots inside them excepted) and the files inside protected paths other
//! than `[sandbox] protected_readable` (unless `[sandbox] commands_read_protected`); names stay
//! listable. What a command holds: no capability and `no_new_privs`, also under a root daemon
//! (see `privileges`). What may be reached: no UNIX socket (path-named: seccomp, and Landlock
//! where the kernel has ABI 9; abstract: Landlock scoping) except those in `[sandbox]
//! unix_socket_allow`; TCP only when the call may use the network; no raw or packet socket
//! ever; no signal or ptrace to processes outside the command's domain (the daemon).
//!
//! Invariants:
//! - When confinement is active and cannot be applied to a command, the command does not run
//!   (the helper exits with [`HELPER_FAILURE_EXIT_CODE`]); it is never run unconfined instead.
//! - Landlock rules are opened without following symbolic links (`openat2` with
//!   `RESOLVE_NO_SYMLINKS`), so a link swapped into a root cannot widen what is writable.
//! - Landlock can only allow, never deny below an allowed folder. A folder that holds a
//!   protected path therefore gets no rule of its own; its other entries get one each. The cost:
//!   a command cannot create or delete entries directly in such a folder (e.g. the home folder
//!   when it is a root, a repository's top folder and its `.git` folder, so `git add` or
//!   `git commit` cannot take the index lock), only inside its unprotected subfolders and
//!   files. Protected paths that do not exist yet are held the same way: their folder cannot
//!   gain the missing entry. Reading is split the
//!   same way from `/`: a file created in such a folder after the rules were made (by the
//!   command itself) cannot be read by it. The private temporary folder is granted by its own
//!   rule, so it works wherever it lies (also when a root or the home is under `/tmp`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use souz_protocol::{ConfinementKind, SandboxStatus};

use super::{Sandbox, expand_home};
use crate::config::SandboxConfig;

/// The hidden subcommand of the `souz` binary that confines itself and runs a command.
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";

/// Exit code of the helper when it could not confine or start the command (as `env` and
/// `timeout` use 125 for their own failures).
pub const HELPER_FAILURE_EXIT_CODE: u8 = 125;

/// The Seatbelt launcher on macOS.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Temporary folders every program shares: commands may neither write nor read them (each
/// command gets its own private temporary folder instead).
const SHARED_TEMPORARY_FOLDERS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Device files commands may write.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// How commands are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Landlock, applied by `helper __sandbox-exec`.
    Landlock {
        /// The binary that implements [`HELPER_SUBCOMMAND`].
        helper: PathBuf,
        /// Whether the kernel supports every restriction Souz asks for (older kernels enforce
        /// a subset: e.g. no truncate restriction before Linux 6.2, no TCP rules before 6.7,
        /// no signal or abstract-socket scoping before 6.12).
        complete: bool,
    },
    /// Seatbelt through `sandbox-exec`.
    Seatbelt {
        /// The launcher.
        launcher: PathBuf,
    },
    /// Nothing confines commands.
    None {
        /// Why.
        reason: String,
    },
}

/// What one command gets beyond the sandbox's fixed rules.
#[derive(Debug, Clone, Copy)]
pub struct CommandScope<'a> {
    /// Its private temporary folder (writable, readable).
    pub temporary: &'a Path,
    /// Whether it may use the network.
    pub network: bool,
    /// Its working folder: the git repository holding it is protected like those found in
    /// the roots (see `repositories`).
    pub working_folder: Option<&'a Path>,
}

impl Confinement {
    /// Finds out what this machine supports. On Linux Landlock needs `helper`, the binary that
    /// implements [`HELPER_SUBCOMMAND`] (the daemon's own executable).
    pub fn detect(helper: Option<PathBuf>) -> Self {
        #[cfg(target_os = "linux")]
        {
            match (landlock_rules::probe(), helper) {
                (Ok(complete), Some(helper)) => Self::Landlock { helper, complete },
                (Ok(_), None) => Self::None {
                    reason:
                        "Landlock is available, but no helper binary was configured to apply it"
                            .to_owned(),
                },
                (Err(reason), _) => Self::None {
                    reason: format!("Landlock is not available on this kernel: {reason}"),
                },
            }
        }
        #[cfg(target_os = "macos")]
        {
            let _ = helper;
            let launcher = PathBuf::from(SANDBOX_EXEC);
            if launcher.exists() {
                Self::Seatbelt { launcher }
            } else {
                Self::None {
                    reason: format!("{SANDBOX_EXEC} is missing"),
                }
            }
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        {
            let _ = helper;
            Self::None {
                reason: "no confinement is implemented for this operating system".to_owned(),
            }
        }
    }

    /// The kind, for `/health`.
    pub fn kind(&self) -> ConfinementKind {
        match self {
            Self::Landlock { .. } => ConfinementKind::Landlock,
            Self::Seatbelt { .. } => ConfinementKind::Seatbelt,
            Self::None { .. } => ConfinementKind::None,
        }
    }

    /// What `/health` reports: the kind and, in words, every layer that is active.
    pub fn status(&self, config: &SandboxConfig) -> SandboxStatus {
        let mut allowed = String::from(
            "commands may write only inside the workspace roots (not protected paths) and their \
             own private temporary folder",
        );
        if !config.commands_read_protected {
            allowed.push_str(
                ", and cannot read files inside protected paths (except those listed in \
                 protected_readable)",
            );
        }
        // `/health` is public: it counts the allowlisted sockets but never names them (their
        // paths tell user names and which helpers run).
        let listed = match config.unix_socket_allow.len() {
            1 => "the 1 UNIX socket".to_owned(),
            count => format!("the {count} UNIX sockets"),
        };
        let sockets = if config.unix_socket_allow.is_empty() {
            "; they cannot connect to UNIX sockets".to_owned()
        } else if self.filters_unix_socket_paths() {
            format!("; they can connect only to {listed} listed in [sandbox] unix_socket_allow")
        } else {
            format!(
                "; [sandbox] unix_socket_allow lists {listed}, and this kernel cannot tell \
                 socket paths apart, so commands can connect to every path-named UNIX socket \
                 (abstract ones stay refused)"
            )
        };
        let network = if config.command_network {
            "; they may use the network"
        } else {
            "; they may use the network only when a call asks for it"
        };
        let descendants = "; every process a command starts is stopped when the call ends";
        let detail = match self {
            Self::Landlock { complete: true, .. } => {
                format!("Landlock and seccomp: {allowed}{sockets}{network}{descendants}")
            }
            Self::Landlock {
                complete: false, ..
            } => format!(
                "Landlock and seccomp (partial: this kernel supports only some of the \
                 restrictions; a command may be able to reach the network or signal other \
                 processes): {allowed}{sockets}{network}{descendants}"
            ),
            Self::Seatbelt { .. } => format!(
                "Seatbelt (sandbox-exec): {allowed}{sockets}{network}; processes that leave the \
                 command's process group are not stopped"
            ),
            Self::None { reason } if config.allow_unconfined_commands => format!(
                "commands are not confined: {reason}; [sandbox] allow_unconfined_commands is on, \
                 so each command runs unconfined after you approve it"
            ),
            Self::None { reason } => format!(
                "commands are not confined: {reason}; RunCommand is refused (set [sandbox] \
                 allow_unconfined_commands = true to run commands unconfined, each one asking you)"
            ),
        };
        SandboxStatus {
            confinement: self.kind(),
            detail,
        }
    }

    /// Whether TCP connections can be limited to one port here (Landlock's network rules,
    /// ABI 4, are part of a complete ruleset; Seatbelt).
    pub(crate) fn limits_tcp_ports(&self) -> bool {
        matches!(
            self,
            Self::Landlock { complete: true, .. } | Self::Seatbelt { .. }
        )
    }

    /// Whether allowlisted UNIX sockets are told apart from others by path here (Landlock ABI
    /// 9, or Seatbelt).
    fn filters_unix_socket_paths(&self) -> bool {
        match self {
            #[cfg(target_os = "linux")]
            Self::Landlock { .. } => landlock_rules::resolves_unix_sockets(),
            Self::Seatbelt { .. } => true,
            _ => false,
        }
    }

    /// The program and arguments that run `program args` under this confinement.
    pub(crate) fn wrap(
        &self,
        sandbox: &Sandbox,
        scope: &CommandScope<'_>,
        program: &OsStr,
        args: &[OsString],
    ) -> (OsString, Vec<OsString>) {
        match self {
            Self::Landlock { helper, .. } => {
                let sandbox = &sandbox.protecting_also(super::repositories::protected_metadata(
                    sandbox.roots(),
                    scope.working_folder,
                ));
                let arguments = HelperArguments {
                    stage: HelperStage::Supervise,
                    writable: writable_paths(sandbox, scope.temporary),
                    unix_sockets: unix_sockets(sandbox),
                    network: scope.network,
                    connect_ports: sandbox.egress_port().into_iter().collect(),
                    readable: readable_paths(sandbox, scope.temporary),
                    program: program.to_owned(),
                    args: args.to_vec(),
                };
                let mut wrapped = vec![OsString::from(HELPER_SUBCOMMAND)];
                wrapped.extend(arguments.to_arguments());
                (helper.as_os_str().to_owned(), wrapped)
            }
            Self::Seatbelt { launcher } => {
                let mut wrapped = vec![
                    OsString::from("-p"),
                    OsString::from(seatbelt_profile(sandbox, scope)),
                    OsString::from("--"),
                    program.to_owned(),
                ];
                wrapped.extend(args.iter().cloned());
                (launcher.as_os_str().to_owned(), wrapped)
            }
            Self::None { .. } => (program.to_owned(), args.to_vec()),
        }
    }
}

/// The allowlisted UNIX sockets (`[sandbox] unix_socket_allow`, `~` expanded).
pub fn unix_sockets(sandbox: &Sandbox) -> Vec<PathBuf> {
    sandbox
        .config()
        .unix_socket_allow
        .iter()
        .map(|raw| expand_home(raw, sandbox.user_home()))
        .collect()
}

/// Everything a confined command may write: each root, split around protected paths, plus its
/// private temporary folder and the device files. Symbolic links inside a root get no rule
/// (their targets are covered where they are, if that is inside a root).
pub fn writable_paths(sandbox: &Sandbox, temporary: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for root in sandbox.roots() {
        grant_around_protected(sandbox, root, Use::Write, &mut paths);
    }
    paths.push(temporary.to_path_buf());
    paths.extend(
        WRITABLE_DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|device| device.exists()),
    );
    paths.sort();
    paths.dedup();
    paths
}

/// What a confined command may read: everything from `/` down but the shared temporary
/// folders ([`SHARED_TEMPORARY_FOLDERS`], where other programs keep their files) and, unless
/// `[sandbox] commands_read_protected`, the files inside protected paths; plus its private
/// temporary folder and the roots that lie inside a shared temporary folder. Always `Some`:
/// reading is always restricted (the type keeps the helper's "restrict or not" option).
pub fn readable_paths(sandbox: &Sandbox, temporary: &Path) -> Option<Vec<PathBuf>> {
    let mut paths = vec![temporary.to_path_buf()];
    grant_around_protected(sandbox, Path::new("/"), Use::Read, &mut paths);
    let shared = shared_temporary_folders();
    for root in sandbox.roots() {
        if shared.iter().any(|folder| root.starts_with(folder)) {
            grant_around_protected(sandbox, root, Use::Read, &mut paths);
        }
    }
    paths.sort();
    paths.dedup();
    Some(paths)
}

/// The shared temporary folders, as the kernel sees them (links resolved once: the split
/// around protected paths asks at every level of its walk).
fn shared_temporary_folders() -> &'static [PathBuf] {
    static RESOLVED: std::sync::LazyLock<Vec<PathBuf>> = std::sync::LazyLock::new(|| {
        SHARED_TEMPORARY_FOLDERS
            .iter()
            .map(|folder| {
                Path::new(folder)
                    .canonicalize()
                    .unwrap_or(PathBuf::from(folder))
            })
            .collect()
    });
    &RESOLVED
}

/// What a split around protected paths grants: writing avoids every protected path, reading
/// only those commands may not read (`[sandbox] protected_readable` stays readable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Read,
    Write,
}

fn grant_around_protected(sandbox: &Sandbox, folder: &Path, what: Use, paths: &mut Vec<PathBuf>) {
    let shared = match what {
        Use::Read => shared_temporary_folders(),
        Use::Write => &[],
    };
    let reads_protected = sandbox.config().commands_read_protected;
    let is_protected = |path: &Path| match what {
        Use::Read => {
            shared.iter().any(|folder| path == folder)
                || (!reads_protected && sandbox.is_read_protected(path))
        }
        Use::Write => sandbox.is_protected(path),
    };
    let holds_protected = |path: &Path| match what {
        Use::Read => {
            shared
                .iter()
                .any(|folder| folder.starts_with(path) && folder != path)
                || (!reads_protected && sandbox.holds_read_protected(path))
        }
        Use::Write => sandbox.holds_protected(path),
    };
    if is_protected(folder) {
        return;
    }
    if !holds_protected(folder) {
        paths.push(folder.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if file_type.is_symlink() || is_protected(&path) {
            continue;
        }
        if file_type.is_dir() {
            grant_around_protected(sandbox, &path, what, paths);
        } else {
            paths.push(path);
        }
    }
}

/// A Seatbelt profile that allows everything except writing outside the roots, the command's
/// private temporary folder and a few devices, writing protected paths and (unless allowed)
/// reading them, connecting to UNIX sockets other than the allowlisted ones, and (unless the
/// call may) using the network.
pub fn seatbelt_profile(sandbox: &Sandbox, scope: &CommandScope<'_>) -> String {
    let sandbox = &sandbox.protecting_also(super::repositories::protected_metadata(
        sandbox.roots(),
        scope.working_folder,
    ));
    let mut writable: Vec<String> = sandbox
        .roots()
        .iter()
        .map(PathBuf::as_path)
        .chain(std::iter::once(scope.temporary))
        .map(|path| format!("(require-not (subpath {}))", seatbelt_string(path)))
        .collect();
    writable.extend(WRITABLE_DEVICES.iter().map(|device| {
        format!(
            "(require-not (literal {}))",
            seatbelt_string(Path::new(device))
        )
    }));
    let protected: Vec<String> = sandbox
        .protected_paths()
        .map(|path| format!("(subpath {})", seatbelt_string(path)))
        .collect();
    let unreadable: Vec<String> = sandbox
        .read_protected_paths()
        .map(|path| format!("(subpath {})", seatbelt_string(path)))
        .collect();
    let mut profile = String::from("(version 1)\n(allow default)\n");
    profile.push_str(&format!(
        "(deny file-write*\n    (require-all\n        {}))\n",
        writable.join("\n        ")
    ));
    // Git metadata that runs code, in every repository (Seatbelt can deny by pattern).
    let entries: Vec<String> = super::repositories::CODE_RUNNING_ENTRIES
        .iter()
        .map(|entry| entry.replace('.', "\\."))
        .collect();
    profile.push_str(&format!(
        "(deny file-write*\n    (regex #\"/\\.git/({})(/|$)\"))\n",
        entries.join("|")
    ));
    profile.push_str(&shared_temporary_read_rule(sandbox, scope));
    if !protected.is_empty() {
        profile.push_str(&format!(
            "(deny file-write*\n    {})\n",
            protected.join("\n    ")
        ));
        if !sandbox.config().commands_read_protected && !unreadable.is_empty() {
            profile.push_str(&format!(
                "(deny file-read-data\n    {})\n",
                unreadable.join("\n    ")
            ));
        }
    }
    if !scope.network {
        profile.push_str("(deny network-outbound (remote ip))\n(deny network-bind (local ip))\n");
        if let Some(port) = sandbox.egress_port() {
            profile.push_str(&format!(
                "(allow network-outbound (remote tcp \"localhost:{port}\"))\n"
            ));
        }
    }
    // Later rules win: refuse every UNIX socket, then allow the listed ones.
    profile.push_str("(deny network-outbound (remote unix-socket))\n");
    for socket in unix_sockets(sandbox) {
        profile.push_str(&format!(
            "(allow network-outbound (remote unix-socket (path-literal {})))\n",
            seatbelt_string(&socket)
        ));
    }
    profile
}

/// The Seatbelt rule that keeps commands from reading other programs' files in the shared
/// temporary folders (roots and the private temporary folder inside them stay readable).
fn shared_temporary_read_rule(sandbox: &Sandbox, scope: &CommandScope<'_>) -> String {
    let shared: Vec<String> = shared_temporary_folders()
        .iter()
        .map(|real| format!("(subpath {})", seatbelt_string(real)))
        .collect();
    let kept: Vec<String> = sandbox
        .roots()
        .iter()
        .map(PathBuf::as_path)
        .chain(std::iter::once(scope.temporary))
        .map(|path| format!("(require-not (subpath {}))", seatbelt_string(path)))
        .collect();
    format!(
        "(deny file-read-data\n    (require-all\n        (require-any {})\n        {}))\n",
        shared.join(" "),
        kept.join("\n        ")
    )
}

/// A path as an SBPL string literal.
fn seatbelt_string(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        if matches!(character, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(character);
    }
    quoted.push('"');
    quoted
}

mod helper;
#[cfg(target_os = "linux")]
mod landlock_rules;
#[cfg(target_os = "linux")]
mod privileges;
#[cfg(target_os = "linux")]
mod syscall_filter;

pub use helper::{HelperArguments, HelperError, HelperStage, LINGER, run_helper};

#[cfg(test)]
mod tests;
