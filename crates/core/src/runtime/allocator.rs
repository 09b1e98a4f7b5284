//! How the daemon's allocator gives memory back.
//!
//! glibc's malloc serves large blocks with `mmap` and unmaps them when freed, but after the
//! first such free it raises that threshold (up to 32 MiB) and serves later large blocks from
//! its heaps, which keep freed memory for reuse. For a daemon whose large allocations are
//! transient (a 9 MiB tool call parsed, planned, stored and dropped) that turns every burst
//! into resident memory that never comes back. Fixing the thresholds turns the adjustment off:
//! blocks of 1 MiB or more are always mapped and unmapped, and heaps are trimmed past 4 MiB
//! of free space at their top.
//!
//! Invariant: only `mallopt` on glibc, called once per process by the binaries (`souz serve`,
//! the app, through `host::prepare_process`) before their async runtime starts, never by the
//! library; elsewhere (musl, macOS) this is a no-op.

/// Blocks at least this large are always mapped (and unmapped when freed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 1 << 20;
/// Free space at the top of a heap beyond this is returned.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: i32 = 4 << 20;

/// Makes large freed blocks go back to the system at once (see the module docs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn return_large_blocks() {
    // SAFETY: `mallopt` only changes glibc allocator parameters; it takes plain integers,
    // touches no memory of ours and is safe to call at any time from any thread.
    let set = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    };
    if !set {
        tracing::debug!("could not fix the allocator's mmap and trim thresholds");
    }
}

/// Makes large freed blocks go back to the system at once (nothing to do here).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn return_large_blocks() {}
