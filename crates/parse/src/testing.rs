//! What the bounded-parser tests measure, for the tests of this crate and of souz-core.

/// The peak resident memory of this (test) process so far, in KiB (`VmHWM`); `None` where
/// `/proc` does not say (not Linux). The bounded-parser tests compare it with their bound.
pub fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
