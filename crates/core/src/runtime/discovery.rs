//! `daemon.json`: how local clients find a running daemon (its pid and URL).
//!
//! Written atomically (temp file + rename, mode 0600) after the gateway is bound, removed on a
//! clean stop, and only by the process it names, so a second daemon that failed to start never
//! deletes the first one's file. It lives in the Souz home, whose folder is trusted; a link at
//! the file itself (or at its temporary sibling) is never followed ([`DaemonFile`]).

use std::path::Path;

use souz_protocol::DaemonInfo;

use crate::sandbox::{DaemonFile, WriteOptions};

/// The largest `daemon.json` read.
const MAX_BYTES: u64 = 64 << 10;

/// Writes `info` to `path` atomically.
pub fn write(path: &Path, info: &DaemonInfo) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(info).map_err(std::io::Error::other)?;
    DaemonFile::in_trusted_folder(path)?.write(&json, WriteOptions::private())?;
    Ok(())
}

/// Reads `path`; `None` when there is no (readable, valid) file.
pub fn read(path: &Path) -> Option<DaemonInfo> {
    let bytes = DaemonFile::in_trusted_folder(path)
        .ok()?
        .read(MAX_BYTES)
        .ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// Whether the process `info` names still exists (a daemon killed without cleaning up leaves
/// its file behind). A process of another user counts as existing.
pub fn process_exists(info: &DaemonInfo) -> bool {
    let Some(pid) = i32::try_from(info.pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(error) => error != rustix::io::Errno::SRCH,
    }
}

/// Removes `path` if it names this process.
pub fn remove_if_ours(path: &Path) {
    if read(path).is_some_and(|info| info.pid == std::process::id())
        && let Ok(file) = DaemonFile::in_trusted_folder(path)
    {
        let _ = file.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_exists_and_a_reaped_one_does_not() {
        let ours = DaemonInfo {
            pid: std::process::id(),
            url: "http://127.0.0.1:1".into(),
            version: "0".into(),
        };
        assert!(process_exists(&ours));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_exists(&DaemonInfo { pid, ..ours }));
    }

    #[test]
    fn round_trip_and_owner_only_removal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.json");
        assert_eq!(read(&path), None);
        let ours = DaemonInfo {
            pid: std::process::id(),
            url: "http://127.0.0.1:1".into(),
            version: "1".into(),
        };
        write(&path, &ours).unwrap();
        assert_eq!(read(&path), Some(ours.clone()));
        let theirs = DaemonInfo {
            pid: ours.pid.wrapping_add(1),
            ..ours
        };
        write(&path, &theirs).unwrap();
        remove_if_ours(&path);
        assert!(path.exists(), "another process's file is left alone");
        write(
            &path,
            &DaemonInfo {
                pid: std::process::id(),
                ..theirs
            },
        )
        .unwrap();
        remove_if_ours(&path);
        assert!(!path.exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            write(&path, &read_back_info()).unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_at_the_file_or_its_old_temporary_name_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let canary = dir.path().join("canary");
        std::fs::write(&canary, "keep").unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let path = home.join("daemon.json");
        let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&canary, &temporary).unwrap();
        write(&path, &read_back_info()).unwrap();
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "keep");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&canary, &path).unwrap();
        assert!(write(&path, &read_back_info()).is_err());
        assert_eq!(read(&path), None, "a link is not read");
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "keep");
    }

    fn read_back_info() -> DaemonInfo {
        DaemonInfo {
            pid: 1,
            url: "u".into(),
            version: "v".into(),
        }
    }
}
