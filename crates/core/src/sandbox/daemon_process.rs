//! The daemon's own process, closed to the commands it runs and to other processes of the
//! same user.
//!
//! A process of the same user can read `/proc/<daemon>/environ` (provider keys and the proxy
//! token arrive in the environment), `/proc/<daemon>/mem` and attach a debugger. Removing
//! variables after start does not help: `environ` shows the block the process started with.
//! What helps:
//! - the daemon is not dumpable ([`protect`]): its `/proc/<pid>` files then belong to root and
//!   other processes of the user can neither read them nor ptrace it (root with
//!   `CAP_SYS_PTRACE`, as in a container, still can);
//! - confined commands run in a Landlock domain, which cannot ptrace (and so cannot read the
//!   `environ` or `mem` of) any process outside it, root or not (see `confinement`).
//!
//! Invariant: [`protect`] runs before the daemon reads any secret or starts any command.

/// Makes this process not dumpable (Linux; elsewhere nothing to do).
pub fn protect() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    }
    Ok(())
}

/// Whether [`protect`] is in force (`None` where it does not apply).
pub fn is_protected() -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::dumpable_behavior()
            .ok()
            .map(|behavior| behavior == rustix::process::DumpableBehavior::NotDumpable)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}
