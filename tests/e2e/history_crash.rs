//! The file history across crashes (issue 45): a real `souz serve` stopped dead on either side
//! of a file write, then started again in the same home.
//!
//! Two ways to stop it: the debug-only crash points (`SOUZ_TEST_CRASH_AT`, see
//! `crates/core/src/history/crash_point.rs`) abort the process exactly after the change is
//! committed `pending` with its before-states kept and before the file is written
//! (`history.after_checkpoint`), or after the write and before the change is recorded `done`
//! (`history.after_write`); and `kill -9` at random moments while clients keep editing files.
//! After every restart history and disk agree: no change is left pending, every blob file is
//! named by a row and every kept content has its blob file, each file holds what its last
//! recorded change left there (or what it held before, when no change was recorded), and undo
//! brings the files back byte for byte.
//!
//! The crash points exist only in debug builds; run as a release build, the first two tests
//! check instead that the binary holds none of the hook and an armed daemon writes as usual.
//!
//! `SOUZ_HISTORY_CRASH_ROUNDS` sets the number of random kills (5), `SOUZ_CRASH_SEED` replays
//! a run's kill moments and edits (the seed is printed).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use souz_e2e::{Daemon, Rng, Stopped, env_number, http};

/// Config: the file tools run without asking (the rules a person would write).
const CONFIG: &str = "\
[[approvals.rules]]\naction = \"allow\"\ntool = \"EditFile\"\n\n\
[[approvals.rules]]\naction = \"allow\"\ntool = \"NewFile\"\n\n\
[[approvals.rules]]\naction = \"allow\"\ntool = \"DeleteFile\"\n\n\
[[approvals.rules]]\naction = \"allow\"\ntool = \"MoveFile\"\n";

const AFTER_CHECKPOINT: &str = "history.after_checkpoint";
const AFTER_WRITE: &str = "history.after_write";

/// The folder of the user's home every call works in.
const WORK: &str = "work";

/// A tool call the crash tests make, and the files it starts from.
struct Scenario {
    tool: &'static str,
    arguments: Value,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            tool: "EditFile",
            arguments: json!({"path": "work/notes.txt", "oldString": "bread", "newString": "butter"}),
        },
        Scenario {
            tool: "NewFile",
            arguments: json!({"path": "work/fresh/deeper/new.txt", "text": "brand new\n"}),
        },
        Scenario {
            tool: "DeleteFile",
            arguments: json!({"path": "work/old.txt"}),
        },
        Scenario {
            tool: "MoveFile",
            arguments: json!({"sourcePath": "work/notes.txt", "destinationPath": "work/archive/notes.txt"}),
        },
    ]
}

/// Lays out the files the scenarios start from in `user` (the daemon's `~`).
fn seed_files(user: &Path) {
    let work = user.join(WORK);
    std::fs::create_dir_all(work.join("archive")).unwrap();
    std::fs::write(
        work.join("notes.txt"),
        format!("milk\nbread\n{}", "a line of notes\n".repeat(200)),
    )
    .unwrap();
    std::fs::write(work.join("old.txt"), b"keep me\n\x00\xff binary tail").unwrap();
}

/// A Souz home with [`CONFIG`].
fn souz_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), CONFIG).unwrap();
    home
}

/// The daemon's environment: the crash point `point` armed, or none; the Trash inside its `~`.
fn environment(point: Option<&'static str>) -> impl FnOnce(&mut Command) {
    move |command| {
        command.env_remove("XDG_DATA_HOME");
        match point {
            Some(point) => command.env("SOUZ_TEST_CRASH_AT", point),
            None => command.env_remove("SOUZ_TEST_CRASH_AT"),
        };
    }
}

/// `POST /v1/tool-calls`: the status and the call, or `None` when the connection was cut (the
/// daemon died under it).
fn call(address: &str, token: &str, tool: &str, arguments: &Value) -> Option<(u16, Value)> {
    let body = json!({"tool": tool, "arguments": arguments, "wait_ms": 20_000}).to_string();
    let auth = format!("Bearer {token}");
    let response = http(
        address,
        "POST",
        "/v1/tool-calls",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    )
    .ok()?;
    let parsed = serde_json::from_str(&response.body).ok()?;
    Some((response.status, parsed))
}

/// Makes `scenario`'s call on a daemon armed at a crash point and waits for the process to
/// die there; asserts it died of the abort, without answering.
fn crash_on(daemon: Daemon, scenario: &Scenario) -> Stopped {
    let answer = call(
        &daemon.address,
        &daemon.token,
        scenario.tool,
        &scenario.arguments,
    );
    assert!(
        answer.is_none(),
        "{}: the daemon answered instead of dying at its crash point: {answer:?}",
        scenario.tool
    );
    let stopped = daemon.exited();
    assert_eq!(
        stopped.status.signal(),
        Some(6),
        "{}: the daemon did not abort at its crash point ({:?}): {}",
        scenario.tool,
        stopped.status,
        stopped.stderr
    );
    stopped
}

/// What a folder holds: relative path → content (`None` for a folder).
type Tree = BTreeMap<PathBuf, Option<Vec<u8>>>;

fn tree(root: &Path) -> Tree {
    fn walk(root: &Path, folder: &Path, into: &mut Tree) {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                into.insert(relative, None);
                walk(root, &path, into);
            } else {
                into.insert(relative, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut tree = Tree::new();
    walk(root, root, &mut tree);
    tree
}

fn sha256(content: &[u8]) -> String {
    Sha256::digest(content)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn database(home: &Path) -> rusqlite::Connection {
    let database = rusqlite::Connection::open(home.join("souz.db")).unwrap();
    database.busy_timeout(Duration::from_secs(10)).unwrap();
    database
}

/// The pending changes in the database (read as the crash left it, or as a daemon runs).
fn pending(home: &Path) -> Vec<(i64, String)> {
    let database = database(home);
    let mut statement = database
        .prepare("SELECT id, tool FROM history_changes WHERE status = 'pending' ORDER BY id")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The names of the blob files in the blob store (`<home>/history/blobs/<xx>/<hash>`).
fn blob_files(home: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Ok(shards) = std::fs::read_dir(home.join("history/blobs")) else {
        return names;
    };
    for shard in shards {
        for blob in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            names.insert(blob.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    names
}

/// The hashes the blob rows name.
fn blob_rows(home: &Path) -> BTreeSet<String> {
    let database = database(home);
    let mut statement = database.prepare("SELECT hash FROM history_blobs").unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Every recorded change, newest first (`GET /v1/history`, page by page).
fn changes(daemon: &Daemon) -> Vec<Value> {
    let mut all = Vec::new();
    let mut before = String::new();
    loop {
        let page = daemon.get(&format!("/v1/history?limit=500{before}"));
        assert_eq!(page.status, 200, "{}", page.body);
        let items = page.json()["changes"].as_array().cloned().unwrap();
        let Some(last) = items.last() else {
            return all;
        };
        before = format!("&before={}", last["id"]);
        all.extend(items);
    }
}

/// The contents the listed changes say are kept (files' before- and after-states).
fn kept_hashes(changes: &[Value]) -> BTreeSet<String> {
    let mut hashes = BTreeSet::new();
    for path in changes
        .iter()
        .flat_map(|change| change["paths"].as_array().unwrap())
    {
        for state in [&path["before"], &path["after"]] {
            if state["kept"] == true
                && let Some(hash) = state["sha256"].as_str()
            {
                hashes.insert(hash.to_owned());
            }
        }
    }
    hashes
}

/// History and blob store agree: nothing pending, every blob file named by a row, every row's
/// blob on disk, and the rows exactly the contents the listed changes keep. Returns the
/// changes, newest first.
fn assert_history_agrees(daemon: &Daemon, context: &str) -> Vec<Value> {
    let home = daemon.home.path();
    let changes = changes(daemon);
    assert_eq!(pending(home), [], "{context}: a change was left pending");
    let files = blob_files(home);
    let rows = blob_rows(home);
    assert_eq!(
        files, rows,
        "{context}: blob files (left) and blob rows (right) differ"
    );
    assert_eq!(
        rows,
        kept_hashes(&changes),
        "{context}: blob rows (left) and the contents the changes keep (right) differ"
    );
    changes
}

/// The listed path of `change` whose path ends with `relative`.
fn path_of<'a>(change: &'a Value, relative: &str) -> Option<&'a Value> {
    change["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|path| Path::new(path["path"].as_str().unwrap()).ends_with(relative))
}

/// What `relative` (under `user`) holds, as the history's snapshots describe it.
fn assert_after_is_disk(user: &Path, change: &Value, relative: &str) {
    let path = path_of(change, relative)
        .unwrap_or_else(|| panic!("the change does not list {relative}: {change}"));
    let after = &path["after"];
    let on_disk = user.join(relative);
    match std::fs::symlink_metadata(&on_disk) {
        Err(_) => assert_eq!(after["kind"], "absent", "{relative}: {change}"),
        Ok(metadata) if metadata.is_dir() => {
            assert_eq!(after["kind"], "folder", "{relative}: {change}");
        }
        Ok(_) => {
            let content = std::fs::read(&on_disk).unwrap();
            assert_eq!(after["kind"], "file", "{relative}: {change}");
            assert_eq!(after["sha256"], sha256(&content), "{relative}: {change}");
            assert_eq!(after["size"], content.len(), "{relative}: {change}");
        }
    }
}

/// Starts a daemon with the crash point `point` armed in a fresh home with the scenarios'
/// files.
fn armed_daemon(point: &'static str) -> Daemon {
    let daemon = Daemon::start_in(souz_home(), environment(Some(point)));
    seed_files(&daemon.user_home());
    daemon
}

/// In a release build the crash points are not there at all: the binary does not even hold
/// the variable's name, and an armed daemon writes and records as usual.
fn assert_release_has_no_crash_points(point: &'static str) {
    let binary = std::fs::read(souz_e2e::souz_bin()).unwrap();
    assert!(
        !binary
            .windows(b"SOUZ_TEST_CRASH_AT".len())
            .any(|window| window == b"SOUZ_TEST_CRASH_AT"),
        "a release build holds the crash hook"
    );
    let daemon = armed_daemon(point);
    let scenario = &scenarios()[0];
    let (status, answer) = call(
        &daemon.address,
        &daemon.token,
        scenario.tool,
        &scenario.arguments,
    )
    .unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["is_error"], false, "{answer}");
    assert_eq!(assert_history_agrees(&daemon, point).len(), 1);
}

#[test]
fn a_daemon_killed_between_checkpoint_and_write_leaves_no_change_and_no_orphan_blob() {
    if !cfg!(debug_assertions) {
        assert_release_has_no_crash_points(AFTER_CHECKPOINT);
        return;
    }
    let mut daemon = armed_daemon(AFTER_CHECKPOINT);
    let work = daemon.user_home().join(WORK);
    let before = tree(&work);
    for scenario in scenarios() {
        let stopped = crash_on(daemon, &scenario);
        // Killed right after the checkpoint: the change is pending, its before-states kept,
        // and the file untouched.
        let home = stopped.home.path();
        let left = pending(home);
        assert_eq!(left.len(), 1, "{}: {left:?}", scenario.tool);
        assert_eq!(left[0].1, scenario.tool);
        assert!(
            !blob_files(home).is_empty() || scenario.tool == "NewFile",
            "{}: the before-state was not kept before the write",
            scenario.tool
        );
        assert_eq!(
            tree(&work),
            before,
            "{}: written before the crash",
            scenario.tool
        );

        // The next start, unarmed: the write never happened, so neither did the change.
        let restarted = Daemon::restart_with(stopped, environment(None));
        let changes = assert_history_agrees(&restarted, scenario.tool);
        assert_eq!(changes, [] as [Value; 0], "{}", scenario.tool);
        assert_eq!(blob_files(restarted.home.path()), BTreeSet::new());
        assert_eq!(tree(&work), before, "{}", scenario.tool);
        daemon = Daemon::restart_with(restarted.stop("TERM"), environment(Some(AFTER_CHECKPOINT)));
    }
    // The same calls on an unarmed daemon run and are recorded (so the crashes above were the
    // crash point's, not a call that could not run).
    let daemon = Daemon::restart_with(daemon.stop("TERM"), environment(None));
    for scenario in scenarios() {
        let (status, answer) = call(
            &daemon.address,
            &daemon.token,
            scenario.tool,
            &scenario.arguments,
        )
        .unwrap();
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["is_error"], false, "{answer}");
    }
    let changes = assert_history_agrees(&daemon, "unarmed");
    assert_eq!(changes.len(), scenarios().len());
}

#[test]
fn a_daemon_killed_between_write_and_record_keeps_the_change_and_undo_restores_it() {
    if !cfg!(debug_assertions) {
        assert_release_has_no_crash_points(AFTER_WRITE);
        return;
    }
    let mut daemon = armed_daemon(AFTER_WRITE);
    let user = daemon.user_home();
    let work = user.join(WORK);
    for scenario in scenarios() {
        let before = tree(&work);
        let stopped = crash_on(daemon, &scenario);
        // Killed right after the write: the file is written, the change still pending.
        let left = pending(stopped.home.path());
        assert_eq!(left.len(), 1, "{}: {left:?}", scenario.tool);
        assert_eq!(left[0].1, scenario.tool);
        assert_ne!(
            tree(&work),
            before,
            "{}: nothing was written",
            scenario.tool
        );
        let written = tree(&work);

        // The next start, unarmed: the change is recorded done with what the disk holds.
        let restarted = Daemon::restart_with(stopped, environment(None));
        let changes = assert_history_agrees(&restarted, scenario.tool);
        let change = &changes[0];
        assert_eq!(change["tool"], scenario.tool, "{change}");
        assert_eq!(change["status"], "done", "{change}");
        assert_eq!(tree(&work), written, "{}: the restart wrote", scenario.tool);
        let named: Vec<&str> = match scenario.tool {
            "NewFile" => vec![
                "work/fresh/deeper/new.txt",
                "work/fresh",
                "work/fresh/deeper",
            ],
            "MoveFile" => vec!["work/notes.txt", "work/archive/notes.txt"],
            _ => vec![scenario.arguments["path"].as_str().unwrap()],
        };
        for relative in named {
            assert_after_is_disk(&user, change, relative);
        }

        // Undo brings back what was there, byte for byte (a deleted file from the Trash).
        let undone = restarted.post(
            "/v1/history/undo",
            &json!({"selection": {"type": "change", "id": change["id"]}}),
        );
        assert_eq!(undone.status, 200, "{}", undone.body);
        let report = undone.json();
        assert_eq!(report["conflicts"], json!([]), "{report}");
        assert_eq!(report["undone"].as_array().unwrap().len(), 1, "{report}");
        assert_eq!(
            tree(&work),
            before,
            "{}: undo did not restore",
            scenario.tool
        );
        assert_history_agrees(&restarted, &format!("{} undone", scenario.tool));
        daemon = Daemon::restart_with(restarted.stop("TERM"), environment(Some(AFTER_WRITE)));
    }
    assert_eq!(tree(&work), {
        let fresh = tempfile::tempdir().unwrap();
        seed_files(fresh.path());
        tree(&fresh.path().join(WORK))
    });
}

/// The files the edit load works on (in `~/loop`).
const LOOP_FILES: [&str; 3] = ["a.txt", "b.txt", "c.txt"];

/// Most edits one client makes in a round (the final undo takes back at most 1,000 changes).
const EDITS_PER_ROUND: usize = 50;

/// The original content of a loop file: a body, and one line the edits rewrite.
fn loop_original(name: &str) -> Vec<u8> {
    let mut content = format!("{name}\nvalue 0;\n");
    for line in 0..300 {
        content.push_str(&format!("line {line} of {name}: some text to keep\n"));
    }
    content.into_bytes()
}

/// One client: edits `file` again and again (reading what the disk holds to pick the line),
/// until told to stop or the daemon is gone. Counts the edits answered.
fn edit_load(
    (address, token): (String, String),
    (user, name): (PathBuf, &'static str),
    seed: u64,
    (stop, answered, unexpected): (Arc<AtomicBool>, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>),
) {
    let mut rng = Rng::new(seed);
    let path = user.join("loop").join(name);
    for _ in 0..EDITS_PER_ROUND {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let content = std::fs::read_to_string(&path).unwrap();
        let line = content
            .lines()
            .find(|line| line.starts_with("value "))
            .unwrap()
            .to_owned();
        let number: u64 = line["value ".len()..line.find(';').unwrap()]
            .parse()
            .unwrap();
        let padding = "+".repeat(rng.below(40) as usize);
        let arguments = json!({
            "path": format!("loop/{name}"),
            "oldString": line,
            "newString": format!("value {};{padding}", number + 1),
        });
        let Some((status, answer)) = call(&address, &token, "EditFile", &arguments) else {
            return;
        };
        if status == 200 && answer["result"]["is_error"] == false {
            answered.fetch_add(1, Ordering::SeqCst);
        } else {
            unexpected
                .lock()
                .unwrap()
                .push(format!("{name}: {status} {answer}"));
        }
        std::thread::sleep(Duration::from_millis(rng.below(6)));
    }
}

/// Each loop file holds what the last recorded change of it left (or its original content).
fn assert_files_match_history(user: &Path, changes: &[Value], context: &str) {
    for name in LOOP_FILES {
        let relative = format!("loop/{name}");
        let content = std::fs::read(user.join(&relative)).unwrap();
        let expected = match changes.iter().find_map(|change| path_of(change, &relative)) {
            Some(path) => path["after"]["sha256"].as_str().unwrap().to_owned(),
            None => sha256(&loop_original(name)),
        };
        assert_eq!(
            sha256(&content),
            expected,
            "{context}: {relative} is not what its last recorded change left"
        );
    }
}

#[test]
fn kill_nine_at_random_moments_under_edits_leaves_history_and_disk_in_agreement() {
    let started = Instant::now();
    let rounds = env_number("SOUZ_HISTORY_CRASH_ROUNDS").unwrap_or(5);
    let seed = Rng::seed_from_env("SOUZ_CRASH_SEED");
    println!("history crash loop: {rounds} rounds, SOUZ_CRASH_SEED={seed}");
    let mut rng = Rng::new(seed);
    let mut daemon = Daemon::start_in(souz_home(), environment(None));
    let user = daemon.user_home();
    std::fs::create_dir(user.join("loop")).unwrap();
    for name in LOOP_FILES {
        std::fs::write(user.join("loop").join(name), loop_original(name)).unwrap();
    }
    let original = tree(&user.join("loop"));
    let (mut edits, mut caught_pending, mut caught_orphans, mut caught_temporary) = (0, 0, 0, 0);
    for round in 0..rounds {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let unexpected = Arc::new(Mutex::new(Vec::new()));
        let clients: Vec<_> = LOOP_FILES
            .iter()
            .map(|&name| {
                let target = (daemon.address.clone(), daemon.token.clone());
                let shared = (stop.clone(), answered.clone(), unexpected.clone());
                let (user, seed) = (user.clone(), rng.next_u64());
                std::thread::spawn(move || edit_load(target, (user, name), seed, shared))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20 + rng.below(400)));
        // A real SIGKILL, wherever the daemon is.
        let stopped = daemon.stop("KILL");
        stop.store(true, Ordering::SeqCst);
        for client in clients {
            client.join().unwrap();
        }
        let unexpected = std::mem::take(&mut *unexpected.lock().unwrap());
        assert!(unexpected.is_empty(), "round {round}: {unexpected:?}");
        edits += answered.load(Ordering::SeqCst);
        // How the kill found the history (for the summary): a write under way, blobs without
        // their row.
        let home = stopped.home.path();
        caught_pending += pending(home).len();
        caught_orphans += blob_files(home).difference(&blob_rows(home)).count();
        caught_temporary += tree(&user.join("loop")).len() - LOOP_FILES.len();

        daemon = Daemon::restart_with(stopped, environment(None));
        let context = format!("round {round} (SOUZ_CRASH_SEED={seed})");
        let changes = assert_history_agrees(&daemon, &context);
        assert_files_match_history(&user, &changes, &context);
        let names: Vec<PathBuf> = tree(&user.join("loop")).into_keys().collect();
        assert_eq!(
            names,
            LOOP_FILES.map(PathBuf::from),
            "{context}: something beside the files"
        );
    }
    assert!(
        edits > rounds as usize,
        "the load hardly ran: {edits} edits answered in {rounds} rounds"
    );

    // Undo everything, newest first: the files are back, byte for byte, and nothing else is
    // left in their folder.
    let changes = changes(&daemon);
    assert!(changes.len() <= 1_000, "{} changes", changes.len());
    let oldest = changes.last().expect("the load recorded changes");
    let undone = daemon.post(
        "/v1/history/undo",
        &json!({"selection": {"type": "since", "since": oldest["createdAt"]}}),
    );
    assert_eq!(undone.status, 200, "{}", undone.body);
    let report = undone.json();
    assert_eq!(report["conflicts"], json!([]), "{report}");
    assert_eq!(
        report["undone"].as_array().unwrap().len(),
        changes.len(),
        "{report}"
    );
    assert!(
        tree(&user.join("loop")) == original,
        "the undo did not bring back the original files (SOUZ_CRASH_SEED={seed}): {:?}",
        tree(&user.join("loop")).keys().collect::<Vec<_>>()
    );
    let after_undo = assert_history_agrees(&daemon, "after the undo");
    assert_files_match_history(&user, &after_undo, "after the undo");
    println!(
        "history crash loop: {rounds} kills in {:.1} s, {edits} edits answered, {} changes \
         recorded and undone; the kills caught {caught_pending} changes pending, \
         {caught_orphans} blobs without their row and {caught_temporary} temporary files cut \
         short: all settled",
        started.elapsed().as_secs_f64(),
        changes.len()
    );
}
