//! The seccomp filter of a confined command: the system calls that would let it reach an
//! unconfined helper through a UNIX socket, or sniff and forge network traffic, fail with
//! `EACCES`.
//!
//! Landlock governs `connect()` to path-named UNIX sockets only from ABI 9 (Linux 7.1), so on
//! older kernels this filter is the layer that keeps a command from asking a tmux or screen
//! server, the Docker daemon, the user's D-Bus or `systemd-run --user` to act for it:
//! - `socket(AF_UNIX, …)` is refused (unless `[sandbox] unix_socket_allow` names sockets: a
//!   filter cannot see paths, so then only Landlock, where the kernel has ABI 9, limits them);
//! - `socketpair(AF_UNIX, SOCK_DGRAM, …)` is refused: a datagram socket may `sendto` any
//!   path. Stream and sequenced-packet pairs stay allowed: they are connected to each other
//!   and cannot be connected anywhere else (`EISCONN`), and shells, `make -j` and language
//!   runtimes use them to talk to their own children;
//! - `io_uring_setup` is refused: its operations create and connect sockets without the
//!   system calls above;
//! - sockets that see or forge other programs' traffic are refused whatever the call's
//!   network: `AF_PACKET`, `SOCK_PACKET`, and `SOCK_RAW` of `AF_INET` and `AF_INET6` (a
//!   command has no `CAP_NET_RAW` either, see `privileges`: this is the second layer, e.g.
//!   for a user namespace that would give it one).
//!
//! Other system calls of other architectures or ABIs than this binary's kill the process
//! (seccompiler checks the architecture; x32 numbers are refused below).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// The bits of `socket()`'s type argument that name the type (`SOCK_TYPE_MASK`; the others
/// are flags such as `SOCK_CLOEXEC`).
const SOCKET_TYPE_MASK: u64 = 0xf;

/// The obsolete packet type (`SOCK_PACKET`), which reads every frame on a device like
/// `AF_PACKET`.
const SOCK_PACKET: i32 = 10;

/// The system-call number bit of the x32 ABI on x86-64.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// What the filter refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SyscallFilter {
    /// Refuse creating UNIX sockets (off when `[sandbox] unix_socket_allow` names sockets).
    pub unix_sockets: bool,
}

impl SyscallFilter {
    /// The compiled filter for this binary's architecture.
    pub(super) fn program(&self) -> Result<BpfProgram, String> {
        let failed = |error: seccompiler::BackendError| error.to_string();
        let family = |family: i32| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64)
                .map_err(failed)
        };
        // The type argument also carries SOCK_CLOEXEC and SOCK_NONBLOCK.
        let kind = |kind: i32| {
            SeccompCondition::new(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(SOCKET_TYPE_MASK),
                kind as u64,
            )
            .map_err(failed)
        };
        let unix = || family(libc::AF_UNIX);
        let rule = |conditions| SeccompRule::new(conditions).map_err(failed);
        // Sockets that see or forge other programs' traffic, whatever the call's network.
        let mut socket_rules = vec![
            rule(vec![family(libc::AF_PACKET)?])?,
            rule(vec![kind(SOCK_PACKET)?])?,
            rule(vec![family(libc::AF_INET)?, kind(libc::SOCK_RAW)?])?,
            rule(vec![family(libc::AF_INET6)?, kind(libc::SOCK_RAW)?])?,
        ];
        if self.unix_sockets {
            socket_rules.push(rule(vec![unix()?])?);
        }
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        rules.insert(libc::SYS_socket, socket_rules);
        rules.insert(
            libc::SYS_socketpair,
            vec![rule(vec![unix()?, kind(libc::SOCK_DGRAM)?])?],
        );
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            rules.insert(call, Vec::new());
        }
        let arch = std::env::consts::ARCH
            .try_into()
            .map_err(|error: seccompiler::BackendError| error.to_string())?;
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )
        .map_err(failed)?;
        let mut program: BpfProgram = filter.try_into().map_err(failed)?;
        refuse_x32(&mut program)?;
        Ok(program)
    }

    /// Installs the filter on this thread (inherited by everything it executes).
    pub(super) fn install(&self) -> Result<(), String> {
        let program = self.program()?;
        seccompiler::apply_filter(&program).map_err(|error| error.to_string())
    }
}

/// On x86-64 the x32 ABI reaches the same system calls under other numbers with the same
/// architecture tag; a prefix right after the architecture check refuses every x32 call
/// before the rules run.
#[cfg(target_arch = "x86_64")]
fn refuse_x32(program: &mut BpfProgram) -> Result<(), String> {
    use seccompiler::sock_filter;
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JEQ_K: u16 = 0x15;
    const BPF_JMP_JGE_K: u16 = 0x35;
    const BPF_RET_K: u16 = 0x06;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    // seccompiler starts with: load the architecture; if it matches skip one; kill.
    let arch_check = [BPF_LD_W_ABS, BPF_JMP_JEQ_K, BPF_RET_K];
    let starts_as_expected = program.len() > arch_check.len()
        && program
            .iter()
            .zip(arch_check)
            .all(|(instruction, code)| instruction.code == code)
        && program[1].jt == 1;
    if !starts_as_expected {
        return Err(
            "the seccomp filter does not start with the expected architecture check".into(),
        );
    }
    let prefix = [
        // Load the system-call number (offset 0 of `struct seccomp_data`).
        sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: BPF_JMP_JGE_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT as u32,
        },
        sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::EACCES as u32,
        },
    ];
    program.splice(arch_check.len()..arch_check.len(), prefix);
    Ok(())
}

#[cfg(not(target_arch = "x86_64"))]
fn refuse_x32(_program: &mut BpfProgram) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_with_and_without_the_unix_socket_rule() {
        let strict = SyscallFilter { unix_sockets: true }.program().unwrap();
        let relaxed = SyscallFilter {
            unix_sockets: false,
        }
        .program()
        .unwrap();
        assert!(strict.len() > relaxed.len(), "{strict:?} {relaxed:?}");
    }
}
