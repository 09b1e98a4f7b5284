//! The Landlock ruleset of a confined command: writes handled, allowed beneath the given
//! paths; reading files handled when asked, allowed beneath the readable paths (listing
//! folders and executing are not handled); TCP connect and bind handled (nothing allowed but
//! connecting to an egress proxy's port) unless the call may use the network; connecting to path-named UNIX sockets handled where
//! the kernel can (ABI 9), allowed only to the allowlisted sockets; signals and abstract UNIX
//! sockets scoped, so the command cannot signal or reach processes outside its domain (the
//! daemon, the supervisor, a D-Bus or tmux server listening on an abstract address).

use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// The newest Landlock ABI whose rights Souz asks for everywhere (tested on this ABI and
/// older). `ResolveUnix` (ABI 9) is asked for separately where the kernel has it.
const REQUESTED_ABI: ABI = ABI::V6;

/// What one command may do.
#[derive(Debug, Clone, Copy)]
pub(super) struct Restrictions<'a> {
    /// Beneath these it may write.
    pub writable: &'a [PathBuf],
    /// Beneath these it may read files, when reading is restricted.
    pub readable: Option<&'a [PathBuf]>,
    /// The path-named UNIX sockets it may connect to (where the kernel can tell).
    pub unix_sockets: &'a [PathBuf],
    /// Whether it may use TCP.
    pub network: bool,
    /// Without `network`: TCP ports it may connect to (on any address: a port rule).
    pub connect_ports: &'a [u16],
}

/// `Ok(complete)` when Landlock works here, `complete` when every requested right is
/// supported (writes of ABI 6, TCP rules, signal and abstract-socket scoping). Creates (and
/// drops) rulesets; restricts nothing.
pub(super) fn probe() -> Result<bool, String> {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .map_err(|error| error.to_string())?;
    let complete = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(REQUESTED_ABI))
        .and_then(|ruleset| ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp))
        .and_then(|ruleset| ruleset.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(|ruleset| ruleset.create())
        .is_ok();
    Ok(complete)
}

/// Whether the kernel restricts connecting to path-named UNIX sockets (Landlock ABI 9).
/// The kernel is asked once per process (a ruleset is created to find out); `/health` and
/// every command ask again for free.
pub(super) fn resolves_unix_sockets() -> bool {
    static RESOLVES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RESOLVES.get_or_init(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::ResolveUnix)
            .and_then(|ruleset| ruleset.create())
            .is_ok()
    })
}

/// Restricts this thread (and what it executes) as `restrictions` say.
pub(super) fn restrict_self(restrictions: &Restrictions<'_>) -> Result<(), String> {
    let write = AccessFs::from_write(REQUESTED_ABI);
    let file_write = write & AccessFs::from_file(REQUESTED_ABI);
    let read = if restrictions.readable.is_some() {
        AccessFs::ReadFile.into()
    } else {
        BitFlags::empty()
    };
    let unix = if resolves_unix_sockets() {
        AccessFs::ResolveUnix.into()
    } else {
        BitFlags::empty()
    };
    let mut ruleset = Ruleset::default()
        .handle_access(write | read | unix)
        .and_then(|ruleset| ruleset.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .map_err(|error| error.to_string())?;
    if !restrictions.network {
        // Handled with no rule: no TCP connect or bind at all.
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|error| error.to_string())?;
    }
    let mut ruleset = ruleset.create().map_err(|error| error.to_string())?;
    if !restrictions.network {
        for port in restrictions.connect_ports {
            ruleset = ruleset
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(|error| error.to_string())?;
        }
    }
    let grants = [
        (restrictions.writable, write, file_write),
        (restrictions.readable.unwrap_or_default(), read, read),
        (restrictions.unix_sockets, unix, unix),
    ];
    for (paths, folder_access, file_access) in grants {
        if folder_access.is_empty() {
            continue;
        }
        for path in paths {
            if let Some(rule) = rule_beneath(path, folder_access, file_access)? {
                ruleset = ruleset.add_rule(rule).map_err(|error| error.to_string())?;
            }
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
    path: &Path,
    folder_access: BitFlags<AccessFs>,
    file_access: BitFlags<AccessFs>,
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
