//! OS confinement of commands: what a command may write, enforced by the kernel.
//!
//! - Linux: Landlock. The runner does not restrict itself; it starts the daemon's own binary
//!   with the hidden subcommand `__sandbox-exec`, which applies a Landlock ruleset to itself
//!   and then `exec`s the command, so the restriction is inherited by the command and all its
//!   children and nothing unsafe runs between `fork` and `exec`.
//! - macOS: a Seatbelt profile run through `/usr/bin/sandbox-exec`.
//! - Elsewhere, or when the kernel lacks support: none, with the reason (reported in `/health`).
//!
//! What may be written: inside the workspace roots except protected paths, the temporary
//! folders, and a few device files (`/dev/null`, ...). What may be read: everything but the
//! files inside protected paths other than `[sandbox] protected_readable` (unless
//! `[sandbox] commands_read_protected`); names stay listable. Network access is not restricted (the approval gate decides whether a command
//! runs at all).
//!
//! Invariants:
//! - When confinement is active and cannot be applied to a command, the command does not run
//!   (the helper exits with [`HELPER_FAILURE_EXIT_CODE`]); it is never run unconfined instead.
//! - Landlock rules are opened without following symbolic links (`openat2` with
//!   `RESOLVE_NO_SYMLINKS`), so a link swapped into a root cannot widen what is writable.
//! - Landlock can only allow, never deny below an allowed folder. A folder that holds a
//!   protected path therefore gets no rule of its own; its other entries get one each. The cost:
//!   a command cannot create or delete entries directly in such a folder (e.g. the home folder
//!   when it is a root), only inside its unprotected subfolders and files. Reading is split the
//!   same way from `/`: a file created in such a folder after the rules were made (by the
//!   command itself) cannot be read by it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use souz_protocol::{ConfinementKind, SandboxStatus};

use super::Sandbox;

/// The hidden subcommand of the `souz` binary that confines itself and runs a command.
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";

/// Exit code of the helper when it could not confine or start the command (as `env` and
/// `timeout` use 125 for their own failures).
pub const HELPER_FAILURE_EXIT_CODE: u8 = 125;

/// The Seatbelt launcher on macOS.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

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
        /// a subset: e.g. no truncate restriction before Linux 6.2).
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

    /// What `/health` reports, saying whether commands may read protected paths.
    pub fn status(&self, reads_protected: bool) -> SandboxStatus {
        let allowed = if reads_protected {
            "commands may write only inside the workspace roots (not protected paths) and the \
             temporary folders"
        } else {
            "commands may write only inside the workspace roots (not protected paths) and the \
             temporary folders, and cannot read files inside protected paths (except those \
             listed in protected_readable)"
        };
        let detail = match self {
            Self::Landlock { complete: true, .. } => format!("Landlock: {allowed}"),
            Self::Landlock {
                complete: false, ..
            } => format!(
                "Landlock (partial: this kernel supports only some of the restrictions): {allowed}"
            ),
            Self::Seatbelt { .. } => format!("Seatbelt (sandbox-exec): {allowed}"),
            Self::None { reason } => format!("commands are not confined: {reason}"),
        };
        SandboxStatus {
            confinement: self.kind(),
            detail,
        }
    }

    /// The program and arguments that run `program args` under this confinement.
    pub(crate) fn wrap(
        &self,
        sandbox: &Sandbox,
        program: &OsStr,
        args: &[OsString],
    ) -> (OsString, Vec<OsString>) {
        let mut wrapped = Vec::new();
        let launcher = match self {
            Self::Landlock { helper, .. } => {
                wrapped.push(OsString::from(HELPER_SUBCOMMAND));
                for path in writable_paths(sandbox) {
                    wrapped.push(OsString::from("--allow-write"));
                    wrapped.push(path.into_os_string());
                }
                if let Some(readable) = readable_paths(sandbox) {
                    // Also for an empty list: the helper then restricts reading to nothing.
                    wrapped.push(OsString::from("--restrict-read"));
                    for path in readable {
                        wrapped.push(OsString::from("--allow-read"));
                        wrapped.push(path.into_os_string());
                    }
                }
                helper.as_os_str().to_owned()
            }
            Self::Seatbelt { launcher } => {
                wrapped.push(OsString::from("-p"));
                wrapped.push(OsString::from(seatbelt_profile(sandbox)));
                launcher.as_os_str().to_owned()
            }
            Self::None { .. } => return (program.to_owned(), args.to_vec()),
        };
        wrapped.push(OsString::from("--"));
        wrapped.push(program.to_owned());
        wrapped.extend(args.iter().cloned());
        (launcher, wrapped)
    }
}

/// Temporary folders commands may write (real paths of those that exist). A folder that would
/// open up more than temporary files — `/`, an ancestor of the home folder, or one holding a
/// protected path (say `TMPDIR=/home/person`) — is left out.
fn temporary_folders(sandbox: &Sandbox) -> Vec<PathBuf> {
    let mut folders = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
        std::env::temp_dir(),
    ];
    if cfg!(target_os = "macos") {
        // `TMPDIR` lives under here; `/tmp` is a link to `/private/tmp`.
        folders.push(PathBuf::from("/private/var/folders"));
    }
    let mut real: Vec<PathBuf> = folders
        .into_iter()
        .filter_map(|folder| folder.canonicalize().ok())
        .filter(|folder| {
            folder.parent().is_some()
                && !sandbox.user_home().starts_with(folder)
                && !sandbox.is_protected(folder)
                && !sandbox.holds_protected(folder)
        })
        .collect();
    real.sort();
    real.dedup();
    real
}

/// Everything a confined command may write: each root, split around protected paths, plus the
/// temporary folders and device files. Symbolic links inside a root get no rule (their targets
/// are covered where they are, if that is inside a root).
pub fn writable_paths(sandbox: &Sandbox) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for root in sandbox.roots() {
        grant_around_protected(sandbox, root, Use::Write, &mut paths);
    }
    paths.extend(temporary_folders(sandbox));
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

/// What a confined command may read, when reading is restricted (`None` when it is not):
/// everything from `/` down, split around protected paths.
pub fn readable_paths(sandbox: &Sandbox) -> Option<Vec<PathBuf>> {
    if sandbox.config().commands_read_protected {
        return None;
    }
    let mut paths = Vec::new();
    grant_around_protected(sandbox, Path::new("/"), Use::Read, &mut paths);
    paths.sort();
    paths.dedup();
    Some(paths)
}

/// What a split around protected paths grants: writing avoids every protected path, reading
/// only those commands may not read (`[sandbox] protected_readable` stays readable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Read,
    Write,
}

fn grant_around_protected(sandbox: &Sandbox, folder: &Path, what: Use, paths: &mut Vec<PathBuf>) {
    let is_protected = |path: &Path| match what {
        Use::Read => sandbox.is_read_protected(path),
        Use::Write => sandbox.is_protected(path),
    };
    let holds_protected = |path: &Path| match what {
        Use::Read => sandbox.holds_read_protected(path),
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

/// A Seatbelt profile that allows everything except writing outside the roots, the temporary
/// folders and a few devices, writing protected paths and (unless allowed) reading them.
pub fn seatbelt_profile(sandbox: &Sandbox) -> String {
    let mut writable: Vec<String> = sandbox
        .roots()
        .iter()
        .chain(temporary_folders(sandbox).iter())
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
    profile
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

/// Why the helper could not run a command.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// The arguments are not of the helper's form.
    #[error(
        "usage: souz {HELPER_SUBCOMMAND} [--allow-write PATH]... [--restrict-read [--allow-read PATH]...] -- PROGRAM [ARGS]..."
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

/// The parsed arguments of the helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperArguments {
    /// Files and folders the command may write.
    pub writable: Vec<PathBuf>,
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
        let mut arguments = arguments.into_iter();
        let mut writable = Vec::new();
        let mut readable: Option<Vec<PathBuf>> = None;
        loop {
            let argument = arguments.next().ok_or(HelperError::Usage)?;
            if argument == "--" {
                break;
            }
            if argument == "--restrict-read" && readable.is_none() {
                readable = Some(Vec::new());
                continue;
            }
            let list = match (argument.to_str(), readable.as_mut()) {
                (Some("--allow-write"), None) => &mut writable,
                (Some("--allow-read"), Some(readable)) => readable,
                _ => return Err(HelperError::Usage),
            };
            list.push(PathBuf::from(arguments.next().ok_or(HelperError::Usage)?));
        }
        let program = arguments.next().ok_or(HelperError::Usage)?;
        Ok(Self {
            writable,
            readable,
            program,
            args: arguments.collect(),
        })
    }
}

/// The helper: confines this process, then replaces it with the command. Returns only on
/// failure (the command never runs unconfined). The process must still be single-threaded:
/// Landlock restricts the calling thread and what it starts afterwards.
pub fn run_helper(arguments: HelperArguments) -> HelperError {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        if let Err(reason) =
            landlock_rules::restrict_self(&arguments.writable, arguments.readable.as_deref())
        {
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
    #[cfg(not(target_os = "linux"))]
    {
        let _ = arguments;
        HelperError::Confine("Landlock exists only on Linux".to_owned())
    }
}

#[cfg(target_os = "linux")]
mod landlock_rules {
    //! The Landlock ruleset: writes handled, allowed beneath the given paths; reading files
    //! handled when asked, allowed beneath the readable paths (listing folders and executing
    //! are not handled); signals scoped so a command cannot signal processes outside its
    //! domain (such as the daemon).

    use std::path::PathBuf;

    use landlock::{
        ABI, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    /// The newest Landlock ABI whose rights Souz asks for (tested on this ABI and older).
    const REQUESTED_ABI: ABI = ABI::V6;

    /// `Ok(complete)` when Landlock works here, `complete` when every requested right is
    /// supported. Creates (and drops) rulesets; restricts nothing.
    pub fn probe() -> Result<bool, String> {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_write(ABI::V1))
            .and_then(|ruleset| ruleset.create())
            .map_err(|error| error.to_string())?;
        let complete = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_write(REQUESTED_ABI))
            .and_then(|ruleset| ruleset.scope(Scope::Signal))
            .and_then(|ruleset| ruleset.create())
            .is_ok();
        Ok(complete)
    }

    /// Restricts this thread (and what it executes) to writing beneath `writable` and, when
    /// given, to reading files beneath `readable`.
    pub fn restrict_self(writable: &[PathBuf], readable: Option<&[PathBuf]>) -> Result<(), String> {
        let write = AccessFs::from_write(REQUESTED_ABI);
        let file_write = write & AccessFs::from_file(REQUESTED_ABI);
        let read = if readable.is_some() {
            AccessFs::ReadFile.into()
        } else {
            landlock::BitFlags::empty()
        };
        let mut ruleset = Ruleset::default()
            .handle_access(write | read)
            .and_then(|ruleset| ruleset.scope(Scope::Signal))
            .and_then(|ruleset| ruleset.create())
            .map_err(|error| error.to_string())?;
        for path in writable {
            if let Some(rule) = rule_beneath(path, write, file_write)? {
                ruleset = ruleset.add_rule(rule).map_err(|error| error.to_string())?;
            }
        }
        for path in readable.unwrap_or_default() {
            if let Some(rule) = rule_beneath(path, read, read)? {
                ruleset = ruleset.add_rule(rule).map_err(|error| error.to_string())?;
            }
        }
        let status = ruleset.restrict_self().map_err(|error| error.to_string())?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("the kernel did not enforce the Landlock ruleset".to_owned());
        }
        Ok(())
    }

    /// A rule granting `folder_access` beneath a folder or `file_access` on a file; `None` for
    /// a path that is gone or is a symbolic link (grant nothing).
    fn rule_beneath(
        path: &std::path::Path,
        folder_access: landlock::BitFlags<AccessFs>,
        file_access: landlock::BitFlags<AccessFs>,
    ) -> Result<Option<PathBeneath<rustix::fd::OwnedFd>>, String> {
        let descriptor = match rustix::fs::openat2(
            CWD,
            path,
            OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS,
        ) {
            Ok(descriptor) => descriptor,
            // Gone or replaced by a link since the daemon listed it: grant nothing.
            Err(Errno::NOENT | Errno::LOOP | Errno::NOTDIR) => return Ok(None),
            Err(error) => return Err(format!("cannot open {}: {error}", path.display())),
        };
        let stat = rustix::fs::fstat(&descriptor)
            .map_err(|error| format!("cannot inspect {}: {error}", path.display()))?;
        let access = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => folder_access,
            FileType::Symlink => return Ok(None),
            _ => file_access,
        };
        Ok(Some(PathBeneath::new(descriptor, access)))
    }
}

#[cfg(test)]
mod tests;
