//! The processes below one process, found through `/proc`, and how to end them all.
//!
//! A command's descendants can leave its process group (`setsid`) and lose their parent (a
//! double fork); only the parent links in `/proc` still lead to them, and only as long as
//! their adopter is inside the tree. The sandbox helper therefore makes itself a child
//! subreaper, so every orphan below it is re-parented to it, and this module ends whatever
//! hangs below it.
//!
//! Invariants:
//! - [`kill_all_below`] returns only when a fresh walk found no live process below the root
//!   (or after [`MAX_KILL_ROUNDS`] walks, for a tree that forks faster than it can be ended).
//!   A process can only be created by a live one, and every live one found is sent SIGKILL,
//!   so a walk that finds none means none is left.
//! - Zombies count as gone: they run nothing and their adopter reaps them.
//! - Only a root that has not been reaped may be walked: a reaped pid can be reused by an
//!   unrelated process. Callers keep the root unreaped (alive or a zombie) while they walk.
//! - Without `/proc` (macOS) the walk finds nothing: callers fall back to process groups.

use std::collections::HashMap;
use std::time::Duration;

use rustix::process::{Pid, Signal};

/// Walks before [`kill_all_below`] gives up on a tree that keeps forking.
pub(crate) const MAX_KILL_ROUNDS: usize = 200;

/// Pause between two kill rounds (lets the kernel deliver the signals).
const KILL_ROUND_PAUSE: Duration = Duration::from_millis(2);

/// The live (not zombie) processes below `root`, parents before their children.
pub(crate) fn live_descendants(root: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<i32, Vec<(i32, bool)>> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        // Gone since the listing: skip it.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((parent, zombie)) = parent_and_state(&stat) {
            children.entry(parent).or_default().push((pid, zombie));
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root.as_raw_nonzero().get()];
    while let Some(parent) = queue.pop() {
        for (pid, zombie) in children.remove(&parent).unwrap_or_default() {
            // A zombie's own children were re-parented already; keep walking anyway.
            queue.push(pid);
            if !zombie && let Some(pid) = Pid::from_raw(pid) {
                found.push(pid);
            }
        }
    }
    found
}

/// The parent pid and whether the process is a zombie (or dead), from `/proc/<pid>/stat`.
/// The command name may hold spaces and parentheses, so fields are read after the last `)`.
fn parent_and_state(stat: &str) -> Option<(i32, bool)> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((parent, state == "Z" || state == "X"))
}

/// Sends `signal` to every live process below `root` (one walk).
pub(crate) fn signal_all_below(root: Pid, signal: Signal) -> usize {
    let found = live_descendants(root);
    for pid in &found {
        // ESRCH: it ended in between.
        let _ = rustix::process::kill_process(*pid, signal);
    }
    found.len()
}

/// Sends SIGKILL below `root` until a walk finds nothing alive; `between` runs after each
/// round (the helper reaps its adopted children there). Returns whether the tree is empty.
pub(crate) fn kill_all_below(root: Pid, mut between: impl FnMut()) -> bool {
    for _ in 0..MAX_KILL_ROUNDS {
        if signal_all_below(root, Signal::KILL) == 0 {
            between();
            return true;
        }
        between();
        std::thread::sleep(KILL_ROUND_PAUSE);
    }
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(
            parent_and_state("42 (a) b (c)) S 7 42 42 0 -1"),
            Some((7, false))
        );
        assert_eq!(parent_and_state("9 (sleep) Z 1 9 9"), Some((1, true)));
        assert_eq!(parent_and_state("garbage"), None);
    }

    #[test]
    fn the_walk_finds_grandchildren_and_kill_ends_them() {
        // sh starts a background sleep (a grandchild of this test) and waits for it.
        let mut child = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 300 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let root = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        let found = live_descendants(root);
        assert!(
            found
                .iter()
                .any(|pid| pid.as_raw_nonzero().get() == grandchild),
            "{found:?}"
        );
        assert!(kill_all_below(root, || {}));
        assert!(live_descendants(root).is_empty());
        // sh sees its child die and exits.
        child.wait().unwrap();
    }
}
