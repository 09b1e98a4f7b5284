//! The privileges a confined command starts with: none, also when the daemon runs as root.
//!
//! The confiner calls [`drop_all`] before Landlock and the system-call filter. It empties the
//! capability bounding set (every capability up to the kernel's `cap_last_cap`), locks the
//! secure bits that would give capabilities back to a root `execve` or a set-user-ID-root
//! program, clears the ambient set, empties the effective, permitted and inheritable sets, and
//! sets `no_new_privs`. A command running as user 0 is then root by name only: it cannot open
//! raw or packet sockets, bypass file permissions, load modules, trace other processes or
//! change its user, and nothing it executes gets a capability back.
//!
//! Invariants:
//! - [`drop_all`] succeeds only when the capability sets read back empty and `no_new_privs` is
//!   set; anything else is an error and the command does not run.
//! - The bounding set is emptied and the secure bits set while `CAP_SETPCAP` is still held
//!   (both need it); a process without it has nothing to drop there (its bounding set cannot
//!   give it anything back: every later `execve` runs under `no_new_privs`).

use rustix::io::Errno;
use rustix::thread::{CapabilitiesSecureBits, CapabilitySet, CapabilitySets};

/// Where the kernel says which capability is its last.
const CAP_LAST_CAP: &str = "/proc/sys/kernel/cap_last_cap";

/// The highest capability number assumed when the kernel does not say (`CAP_CHECKPOINT_RESTORE`
/// is 40 on Linux 5.9 and later); numbers the kernel does not know are skipped.
const FALLBACK_LAST_CAP: u32 = 63;

/// Secure bits that keep a root `execve` (or a set-user-ID-root program) from regaining
/// capabilities and the ambient set from being raised again, each locked.
fn locked_secure_bits() -> CapabilitiesSecureBits {
    CapabilitiesSecureBits::NO_ROOT
        | CapabilitiesSecureBits::NO_ROOT_LOCKED
        | CapabilitiesSecureBits::NO_SETUID_FIXUP
        | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
        | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
        | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED
}

/// Drops every privilege of this thread and of everything it executes (see the module docs).
pub(super) fn drop_all() -> Result<(), String> {
    empty_bounding_set()?;
    lock_secure_bits()?;
    match rustix::thread::clear_ambient_capability_set() {
        // EINVAL: a kernel without ambient capabilities (before 4.3) has none to clear.
        Ok(()) | Err(Errno::INVAL) => {}
        Err(error) => return Err(format!("cannot clear the ambient capabilities: {error}")),
    }
    let empty = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, empty)
        .map_err(|error| format!("cannot drop the capabilities: {error}"))?;
    rustix::thread::set_no_new_privs(true)
        .map_err(|error| format!("cannot set no_new_privs: {error}"))?;
    let left = rustix::thread::capabilities(None)
        .map_err(|error| format!("cannot read the capabilities: {error}"))?;
    if !(left.effective | left.permitted | left.inheritable).is_empty() {
        return Err(format!(
            "capabilities are left after dropping them: {left:?}"
        ));
    }
    Ok(())
}

/// Removes every capability from the bounding set. Without `CAP_SETPCAP` (an unprivileged
/// daemon) nothing can be removed; nothing can come back from it either (see the module docs).
fn empty_bounding_set() -> Result<(), String> {
    let holds_setpcap = rustix::thread::capabilities(None)
        .map_err(|error| format!("cannot read the capabilities: {error}"))?
        .effective
        .contains(CapabilitySet::SETPCAP);
    if !holds_setpcap {
        return Ok(());
    }
    for capability in 0..=last_capability() {
        let Some(bit) = 1u64.checked_shl(capability) else {
            break;
        };
        match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(
            bit,
        )) {
            // EINVAL: a capability number this kernel does not have.
            Ok(()) | Err(Errno::INVAL) => {}
            Err(error) => {
                return Err(format!(
                    "cannot drop capability {capability} from the bounding set: {error}"
                ));
            }
        }
    }
    Ok(())
}

/// Sets [`locked_secure_bits`] (with `CAP_SETPCAP`; without it they cannot be set, and there
/// is no capability for them to protect).
fn lock_secure_bits() -> Result<(), String> {
    let current = rustix::thread::capabilities_secure_bits()
        .map_err(|error| format!("cannot read the secure bits: {error}"))?;
    let wanted = current | locked_secure_bits();
    if wanted == current {
        return Ok(());
    }
    match rustix::thread::set_capabilities_secure_bits(wanted) {
        Ok(()) | Err(Errno::PERM) => Ok(()),
        Err(error) => Err(format!("cannot set the secure bits: {error}")),
    }
}

/// The kernel's highest capability number.
fn last_capability() -> u32 {
    std::fs::read_to_string(CAP_LAST_CAP)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(FALLBACK_LAST_CAP)
}
