//! The daemon's own process, closed to the commands it runs and to other processes of the
//! same user.
//!
//! A process of the same user can read `/proc/<daemon>/environ` (provider keys and the proxy
//! token arrive in the environment), `/proc/<daemon>/mem` and attach a debugger. Removing
//! variables after start does not help: `environ` shows the block the process started with.
//! What this module does:
//! - [`protect`]: the daemon is not dumpable, so its `/proc/<pid>` files belong to root and
//!   other processes of an unprivileged user can neither read them nor ptrace it;
//! - [`scrub_environment`]: root (as in a container) reads a not-dumpable process's `environ`
//!   all the same, so after the daemon has taken what it needs from its environment (a
//!   snapshot, see [`environment_snapshot`]), the values of secret-looking variables are
//!   overwritten with NUL bytes in the initial environment block itself, through the
//!   process's own `/proc/self/mem` (no unsafe code). `/proc/<pid>/environ` then shows the
//!   names with empty values, and so does a later `getenv`: the daemon reads the snapshot.
//!
//! Confined commands also lose `CAP_SYS_PTRACE` (see `confinement`), so even as root they
//! cannot read the daemon's memory.
//!
//! Invariants: [`protect`] runs before the daemon reads any secret or starts any command;
//! [`scrub_environment`] runs after the configuration was loaded and before any thread that
//! reads the environment starts (it changes bytes the C library reads): `souz serve` scrubs
//! when its daemon host loads the configuration, before logging and the async runtime start
//! (`host::DaemonHostBuilder::scrub_environment`).

use std::collections::HashMap;
use std::sync::Arc;

use super::environment::looks_like_secret;

/// Makes this process not dumpable (Linux; elsewhere nothing to do).
pub(crate) fn protect() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    }
    Ok(())
}

/// Whether a variable of the daemon's environment carries a secret (provider keys, tokens).
/// Souz's own settings (`SOUZ_HOME`, `SOUZ_PORT`, ...) do not, unless their name says so.
pub(crate) fn is_secret_variable(name: &str) -> bool {
    looks_like_secret(name.strip_prefix("SOUZ_").unwrap_or(name))
}

/// Looks up a variable (the shape `RuntimeOptions::environment` takes).
pub(crate) type EnvironmentLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment as it is now, for the daemon to read after [`scrub_environment`]
/// (as [`crate::config::env::daemon_lookup`] reads the live one: registered names, and those
/// `config.toml` names for MCP servers).
pub(crate) fn environment_snapshot() -> EnvironmentLookup {
    let snapshot: HashMap<String, String> = crate::config::env::process_environment_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    Arc::new(move |name: &str| snapshot.get(name).cloned())
}

/// Overwrites the values of secret variables in this process's initial environment block
/// with NUL bytes. Returns the names scrubbed. Linux only (elsewhere: nothing, `Ok`).
pub(crate) fn scrub_environment() -> std::io::Result<Vec<String>> {
    #[cfg(target_os = "linux")]
    {
        use std::io::{Seek, SeekFrom, Write};
        let block = std::fs::read("/proc/self/environ")?;
        let start = environment_start()?;
        let mut memory = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/self/mem")?;
        let mut scrubbed = Vec::new();
        let mut offset = 0usize;
        for entry in block.split(|byte| *byte == 0) {
            let entry_offset = offset;
            offset += entry.len() + 1;
            let Some(equals) = entry.iter().position(|byte| *byte == b'=') else {
                continue;
            };
            let name = String::from_utf8_lossy(&entry[..equals]);
            let value_length = entry.len() - equals - 1;
            if value_length == 0 || !is_secret_variable(&name) {
                continue;
            }
            let address = start + (entry_offset + equals + 1) as u64;
            memory.seek(SeekFrom::Start(address))?;
            memory.write_all(&vec![0u8; value_length])?;
            scrubbed.push(name.into_owned());
        }
        Ok(scrubbed)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(Vec::new())
    }
}

/// Where the initial environment block starts (`env_start`, field 50 of `/proc/self/stat`).
#[cfg(target_os = "linux")]
fn environment_start() -> std::io::Result<u64> {
    const ENV_START_FIELD: usize = 50;
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (field 2, in parentheses) start at field 3.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(ENV_START_FIELD - 3))
        .and_then(|field| field.parse().ok())
        .ok_or_else(|| std::io::Error::other("unexpected /proc/self/stat"))
}

/// Whether this process is not dumpable (`None` where that does not apply).
pub(crate) fn is_protected() -> Option<bool> {
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn secret_variables_are_told_from_settings() {
        for secret in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "SOUZ_PROXY_TOKEN",
            "GITHUB_TOKEN",
        ] {
            assert!(is_secret_variable(secret), "{secret}");
        }
        for setting in ["SOUZ_HOME", "SOUZ_PORT", "PATH", "HOME", "LANG"] {
            assert!(!is_secret_variable(setting), "{setting}");
        }
    }

    #[test]
    fn the_environment_block_starts_where_proc_says() {
        // The first bytes at env_start are the first variable of /proc/self/environ.
        let start = environment_start().unwrap();
        let block = std::fs::read("/proc/self/environ").unwrap();
        let mut memory = std::fs::File::open("/proc/self/mem").unwrap();
        use std::io::{Read, Seek, SeekFrom};
        memory.seek(SeekFrom::Start(start)).unwrap();
        let mut first = vec![0u8; block.len().min(64)];
        memory.read_exact(&mut first).unwrap();
        assert_eq!(first, block[..first.len()]);
    }
}
