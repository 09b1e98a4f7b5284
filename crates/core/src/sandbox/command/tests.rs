//! The runner with real processes: exit codes, time limits, process-group kills, output caps,
//! the scrubbed environment, standard input and working folders.

use std::sync::Arc;

use super::*;
use crate::config::{ByteSize, SandboxConfig, SouzPaths};
use crate::sandbox::Confinement;

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    sandbox: Sandbox,
}

fn fixture_with(config: SandboxConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join("work")).unwrap();
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    // The runner's own mechanics, without OS confinement (the e2e tests run the real helper).
    let config = SandboxConfig {
        allow_unconfined_commands: true,
        ..config
    };
    let sandbox = Sandbox::new(&config, &paths)
        .unwrap()
        .with_confinement(Confinement::None {
            reason: "not confined in unit tests".into(),
        });
    Fixture {
        _dir: dir,
        home,
        sandbox,
    }
}

fn fixture() -> Fixture {
    fixture_with(SandboxConfig::default())
}

async fn run(sandbox: &Sandbox, request: CommandRequest) -> CommandOutcome {
    sandbox
        .run_command(request, &CancellationToken::new())
        .await
        .unwrap()
}

/// Whether a process is still running (a zombie waiting for its reaper counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => {
            // No procfs (macOS): ask the kernel whether the pid exists.
            cfg!(not(target_os = "linux"))
                && rustix::process::Pid::from_raw(pid)
                    .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
        }
    }
}

/// Polls until the pids are gone (reaping by init takes a moment), at most two seconds.
async fn assert_gone(pids: &[i32]) {
    for _ in 0..40 {
        if pids.iter().all(|pid| !alive(*pid)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let alive: Vec<_> = pids.iter().filter(|pid| alive(**pid)).collect();
    panic!("processes still running: {alive:?}");
}

fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_whitespace()
        .map(|pid| pid.parse().unwrap())
        .collect()
}

/// A command that starts two grandchildren that would run for five minutes, records their pids,
/// and waits.
fn spawn_grandchildren(pidfile: &Path) -> String {
    format!(
        "sleep 300 & echo $! > {file}; (sleep 300; echo never) & echo $! >> {file}; echo started; wait",
        file = pidfile.display()
    )
}

async fn wait_for_file(path: &Path) {
    for _ in 0..100 {
        if std::fs::read_to_string(path).is_ok_and(|text| text.lines().count() >= 2) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} was not written", path.display());
}

#[tokio::test]
async fn exit_codes_output_and_stdin() {
    let fixture = fixture();
    let outcome = run(
        &fixture.sandbox,
        CommandRequest::shell("echo out; echo err >&2; exit 3"),
    )
    .await;
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(outcome.signal, None);
    assert_eq!(outcome.stdout.text, "out\n");
    assert_eq!(outcome.stderr.text, "err\n");
    assert!(!outcome.timed_out && !outcome.cancelled && !outcome.drain_interrupted);
    assert_eq!(outcome.cwd, fixture.home);
    assert_eq!(outcome.timeout, Duration::from_secs(60));

    let mut request = CommandRequest::argv(["cat"]);
    request.stdin = Some(b"from stdin".to_vec());
    let outcome = run(&fixture.sandbox, request).await;
    assert_eq!(outcome.stdout.text, "from stdin");
    assert_eq!(outcome.exit_code, Some(0));

    // Without stdin the command reads end-of-file at once instead of waiting.
    let outcome = run(&fixture.sandbox, CommandRequest::argv(["cat"])).await;
    assert_eq!(outcome.stdout.text, "");
    assert_eq!(outcome.exit_code, Some(0));

    // Arguments are passed as they are, without a shell.
    let outcome = run(
        &fixture.sandbox,
        CommandRequest::argv(["printf", "%s|", "a b", "$HOME", "'q'"]),
    )
    .await;
    assert_eq!(outcome.stdout.text, "a b|$HOME|'q'|");
}

#[tokio::test]
async fn working_folder_must_be_a_folder_inside_a_root() {
    let fixture = fixture_with(SandboxConfig {
        roots: vec!["~/work".to_owned()],
        ..SandboxConfig::default()
    });
    std::fs::write(fixture.home.join("work/file.txt"), "x").unwrap();
    // Default: the home folder is not inside the root `~/work`, so the root is used.
    let outcome = run(&fixture.sandbox, CommandRequest::argv(["pwd"])).await;
    assert_eq!(
        outcome.stdout.text.trim(),
        fixture.home.join("work").display().to_string()
    );
    for (cwd, expected) in [
        ("~", "outside the folders"),
        ("/", "outside the folders"),
        ("~/work/../..", "outside the folders"),
        ("~/work/file.txt", "is not a folder"),
        ("~/work/missing", "does not exist"),
    ] {
        let mut request = CommandRequest::argv(["pwd"]);
        request.cwd = Some(cwd.to_owned());
        let error = fixture
            .sandbox
            .run_command(request, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{cwd}: {error}");
    }
}

#[tokio::test]
async fn malformed_requests_are_refused_before_anything_runs() {
    let fixture = fixture();
    let marker = fixture.home.join("ran");
    let cases = [
        CommandRequest::shell("   "),
        CommandRequest::argv(Vec::<String>::new()),
        CommandRequest::argv([""]),
        CommandRequest::shell("touch ran\0"),
        CommandRequest {
            env: vec![("LD_PRELOAD".into(), "/tmp/x.so".into())],
            ..CommandRequest::shell("touch ran")
        },
        CommandRequest {
            env: vec![("DYLD_INSERT_LIBRARIES".into(), "/tmp/x".into())],
            ..CommandRequest::shell("touch ran")
        },
        CommandRequest {
            env: vec![("A=B".into(), "c".into())],
            ..CommandRequest::shell("touch ran")
        },
    ];
    for request in cases {
        let error = fixture
            .sandbox
            .run_command(request.clone(), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(error, CommandError::InvalidRequest(_)),
            "{request:?}: {error}"
        );
    }
    assert!(!marker.exists());
    let error = fixture
        .sandbox
        .run_command(
            CommandRequest::argv(["/nonexistent/program"]),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, CommandError::Spawn { .. }), "{error}");
    assert!(error.to_string().contains("/nonexistent/program"));
}

#[tokio::test]
async fn secrets_in_the_daemon_environment_do_not_reach_the_command() {
    let fixture = fixture();
    let daemon_environment = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/somewhere/else"),
        ("LANG", "C.UTF-8"),
        ("OPENAI_API_KEY", "sk-live-secret"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
        ("LD_PRELOAD", "/tmp/evil.so"),
        ("LD_LIBRARY_PATH", "/tmp/evil"),
        ("DYLD_INSERT_LIBRARIES", "/tmp/evil.dylib"),
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("EDITOR", "vim"),
    ]
    .map(|(name, value)| (OsString::from(name), OsString::from(value)));
    let sandbox = fixture
        .sandbox
        .clone()
        .with_inherited_environment(daemon_environment);
    let mut request = CommandRequest::argv(["/usr/bin/env"]);
    request.env = vec![("SOUZ_SKILL_ID".into(), "demo".into())];
    let outcome = run(&sandbox, request).await;
    let mut names: Vec<&str> = outcome
        .stdout
        .text
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "HOME",
            "LANG",
            "PATH",
            "SOUZ_SKILL_ID",
            "TEMP",
            "TMP",
            "TMPDIR"
        ],
        "{}",
        outcome.stdout.text
    );
    assert!(!outcome.stdout.text.contains("secret"));
    // HOME is the sandbox's home, not whatever the daemon had.
    assert!(
        outcome
            .stdout
            .text
            .contains(&format!("HOME={}\n", fixture.home.display()))
    );
}

#[tokio::test]
async fn the_real_process_environment_is_scrubbed_too() {
    let fixture = fixture();
    let outcome = run(&fixture.sandbox, CommandRequest::argv(["/usr/bin/env"])).await;
    for line in outcome.stdout.text.lines() {
        let name = line.split_once('=').map_or(line, |(name, _)| name);
        assert!(
            environment::INHERITED.contains(&name)
                || name.starts_with("LC_")
                || environment::TEMPORARY_FOLDER_VARIABLES.contains(&name),
            "`{name}` leaked into the command's environment"
        );
    }
    assert!(outcome.stdout.text.contains("PATH="));
}

#[tokio::test]
async fn output_is_capped_per_stream_with_a_marker() {
    let fixture = fixture_with(SandboxConfig {
        command_output_limit: ByteSize(1024),
        ..SandboxConfig::default()
    });
    let outcome = run(
        &fixture.sandbox,
        CommandRequest::shell(
            "head -c 5000 /dev/zero | tr '\\0' a; head -c 100 /dev/zero | tr '\\0' b >&2",
        ),
    )
    .await;
    assert_eq!(
        outcome.stdout.text,
        format!("{}\n...[truncated 3976 bytes]", "a".repeat(1024))
    );
    assert_eq!(outcome.stdout.total_bytes, 5000);
    assert_eq!(outcome.stdout.truncated_bytes, 3976);
    assert_eq!(outcome.stderr.text, "b".repeat(100));
    assert_eq!(outcome.stderr.truncated_bytes, 0);
    assert_eq!(
        outcome.exit_code,
        Some(0),
        "the writer was not blocked by the cap"
    );
}

#[tokio::test]
async fn capped_output_stays_valid_utf8() {
    let fixture = fixture_with(SandboxConfig {
        command_output_limit: ByteSize(1025),
        ..SandboxConfig::default()
    });
    // 1000 two-byte characters: the limit falls in the middle of the 513th.
    let outcome = run(
        &fixture.sandbox,
        CommandRequest::argv(["printf", "%s", &"é".repeat(1000)]),
    )
    .await;
    assert_eq!(
        outcome.stdout.text,
        format!("{}\n...[truncated 976 bytes]", "é".repeat(512))
    );
    // Invalid bytes are replaced, not fatal.
    let outcome = run(
        &fixture.sandbox,
        CommandRequest::argv(["printf", "a\\377b"]),
    )
    .await;
    assert_eq!(outcome.stdout.text, "a\u{FFFD}b");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let fixture = fixture();
    let pidfile = fixture.home.join("pids");
    let mut request = CommandRequest::shell(spawn_grandchildren(&pidfile));
    request.timeout = Some(Duration::from_secs(1));
    let started = Instant::now();
    let outcome = run(&fixture.sandbox, request).await;
    assert!(outcome.timed_out);
    assert!(!outcome.cancelled);
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal, Some(15), "ended by SIGTERM");
    assert_eq!(outcome.stdout.text, "started\n");
    assert!(started.elapsed() < Duration::from_secs(30));
    let pids = read_pids(&pidfile);
    assert_eq!(pids.len(), 2);
    assert_gone(&pids).await;
}

#[tokio::test]
async fn a_command_that_ignores_sigterm_is_killed() {
    let fixture = fixture();
    let pidfile = fixture.home.join("pids");
    let mut request = CommandRequest::shell(format!(
        "trap '' TERM; sleep 300 & echo $! > {file}; echo $$ >> {file}; while true; do sleep 1; done",
        file = pidfile.display()
    ));
    request.timeout = Some(Duration::from_secs(1));
    let outcome = run(&fixture.sandbox, request).await;
    assert!(outcome.timed_out);
    assert_eq!(outcome.signal, Some(9), "ended by SIGKILL after the grace");
    assert_gone(&read_pids(&pidfile)).await;
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let fixture = fixture();
    let pidfile = fixture.home.join("pids");
    let cancel = CancellationToken::new();
    let sandbox = fixture.sandbox.clone();
    let request = CommandRequest::shell(spawn_grandchildren(&pidfile));
    let running = {
        let cancel = cancel.clone();
        crate::tasks::spawn_in_test(async move { sandbox.run_command(request, &cancel).await })
    };
    wait_for_file(&pidfile).await;
    cancel.cancel();
    let outcome = running.await.unwrap().unwrap();
    assert!(outcome.cancelled);
    assert!(!outcome.timed_out);
    assert_gone(&read_pids(&pidfile)).await;
}

#[tokio::test]
async fn abandoning_the_call_kills_the_whole_process_group() {
    let fixture = fixture();
    let pidfile = fixture.home.join("pids");
    let sandbox = Arc::new(fixture.sandbox.clone());
    let request = CommandRequest::shell(spawn_grandchildren(&pidfile));
    let running = crate::tasks::spawn_in_test(async move {
        sandbox
            .run_command(request, &CancellationToken::new())
            .await
    });
    wait_for_file(&pidfile).await;
    running.abort();
    let _ = running.await;
    assert_gone(&read_pids(&pidfile)).await;
}

#[tokio::test]
async fn background_children_holding_the_pipes_do_not_hang_the_call() {
    let fixture = fixture();
    let pidfile = fixture.home.join("pids");
    let request = CommandRequest::shell(format!(
        "sleep 300 & echo $! > {file}; echo done",
        file = pidfile.display()
    ));
    let started = Instant::now();
    let outcome = run(&fixture.sandbox, request).await;
    let elapsed = started.elapsed();
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.stdout.text, "done\n");
    assert!(outcome.drain_interrupted);
    assert!(elapsed >= DRAIN_GRACE, "the drain grace was given");
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    assert_gone(&read_pids(&pidfile)).await;
}

#[tokio::test]
async fn background_children_are_ended_when_the_command_returns() {
    let fixture = fixture();
    let pidfile = fixture.home.join("pids");
    // The child does not hold the pipes, so the call returns at once; it is still ended.
    let request = CommandRequest::shell(format!(
        "sleep 300 > /dev/null 2>&1 & echo $! > {file}",
        file = pidfile.display()
    ));
    let outcome = run(&fixture.sandbox, request).await;
    assert_eq!(outcome.exit_code, Some(0));
    assert!(!outcome.drain_interrupted);
    assert_gone(&read_pids(&pidfile)).await;
}

#[test]
fn timeouts_default_and_are_capped() {
    let fixture = fixture_with(SandboxConfig {
        command_timeout_seconds: 5,
        command_max_timeout_seconds: 20,
        ..SandboxConfig::default()
    });
    let sandbox = &fixture.sandbox;
    assert_eq!(sandbox.command_timeout(None), Duration::from_secs(5));
    assert_eq!(
        sandbox.command_timeout(Some(Duration::from_secs(9))),
        Duration::from_secs(9)
    );
    assert_eq!(
        sandbox.command_timeout(Some(Duration::from_secs(999))),
        Duration::from_secs(20)
    );
}

#[test]
fn commands_display_as_a_person_would_type_them() {
    assert_eq!(
        CommandProgram::Shell("ls -l | wc".into()).display(),
        "ls -l | wc"
    );
    assert_eq!(
        CommandProgram::Argv(vec![
            "git".into(),
            "commit".into(),
            "-m".into(),
            "it's done".into()
        ])
        .display(),
        "git commit -m 'it'\\''s done'"
    );
}

#[tokio::test]
async fn each_command_gets_its_own_private_temporary_folder_removed_afterwards() {
    let fixture = fixture();
    // The daemon's own TMPDIR is not handed down: it is shared with everything else.
    let sandbox = fixture
        .sandbox
        .clone()
        .with_inherited_environment([(OsString::from("TMPDIR"), OsString::from("/var/tmp"))]);
    let script = "echo \"$TMPDIR|$TMP|$TEMP\"; stat -c %a \"$TMPDIR\"; \
                  echo data > \"$TMPDIR/file\" && echo wrote";
    let first = run(&sandbox, CommandRequest::shell(script)).await;
    let second = run(&sandbox, CommandRequest::shell(script)).await;
    let folder = |outcome: &CommandOutcome| {
        let lines: Vec<&str> = outcome.stdout.text.lines().collect();
        assert_eq!(lines.len(), 3, "{outcome:?}");
        let (tmpdir, rest) = lines[0].split_once('|').unwrap();
        assert_eq!(rest, format!("{tmpdir}|{tmpdir}"), "{outcome:?}");
        assert_eq!(lines[1], "700", "{outcome:?}");
        assert_eq!(lines[2], "wrote", "{outcome:?}");
        PathBuf::from(tmpdir)
    };
    let (first, second) = (folder(&first), folder(&second));
    assert_ne!(first, second);
    for folder in [&first, &second] {
        assert!(
            folder
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("souz-command-"),
            "{folder:?}"
        );
        assert!(!folder.starts_with("/var/tmp"), "{folder:?}");
        assert!(!folder.exists(), "{folder:?} was not removed");
    }
}
