use souz_e2e::souz;

#[test]
fn first_start_writes_the_template_and_check_accepts_it() {
    let home = tempfile::tempdir().unwrap();
    let path = souz(home.path()).args(["config", "path"]).output().unwrap();
    assert!(path.status.success());
    let config_file = home.path().join("config.toml");
    assert_eq!(
        String::from_utf8_lossy(&path.stdout).trim(),
        config_file.display().to_string()
    );

    let daemon = souz_e2e::Daemon::start_in(home, |_| {});
    let written = std::fs::read_to_string(&config_file).unwrap();
    let template = souz(daemon.home.path())
        .args(["config", "template"])
        .output()
        .unwrap();
    assert_eq!(written, String::from_utf8_lossy(&template.stdout));
    assert!(written.contains("# port = 8383"));

    let check = souz(daemon.home.path())
        .args(["config", "check"])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains(": OK"));
}

#[test]
fn check_reports_every_problem_with_positions_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[server]\nport = \"x\"\nnope = 1\n\n[log]\nlevel = \"shout\"\n",
    )
    .unwrap();
    let output = souz(dir.path())
        .args(["config", "check", "--file"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let name = file.display().to_string();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(
        lines[0].starts_with(&format!("{name}:2:8: [server] port:")),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with(&format!("{name}:3:1: unknown key `nope`")),
        "{stderr}"
    );
    assert!(
        lines[2].starts_with(&format!("{name}:6:9: [log] level:")),
        "{stderr}"
    );
}

#[test]
fn serve_with_a_bad_config_starts_in_recovery_and_touches_nothing_until_fixed() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("config.toml");
    let bad = "[server]\nport = 99999\n";
    std::fs::write(&file, bad).unwrap();
    let daemon = souz_e2e::Daemon::start_in(home, |_| {});
    let file = daemon.home.path().join("config.toml");

    // Only health, the UI and the config routes answer; every problem has its position.
    let health = daemon.get("/health").json();
    assert_eq!(health["status"], "recovery", "{health}");
    assert_eq!(health["problems"][0]["line"], 2, "{health}");
    assert_eq!(health["problems"][0]["column"], 8, "{health}");
    assert_eq!(daemon.get("/v1/pause").status, 503);
    let document = daemon.get("/v1/config").json();
    assert_eq!(document["text"], bad);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);
    assert!(
        !daemon.home.path().join("souz.db").exists(),
        "no database is opened in recovery mode"
    );

    // A text that still has problems is refused and writes nothing.
    let refused = daemon.put(
        "/v1/config",
        &serde_json::json!({"text": "[server]\nport = -1\n", "revision": document["revision"]}),
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);

    // A valid one is saved and the daemon starts normally on the same address.
    let fixed = daemon.put(
        "/v1/config",
        &serde_json::json!({"text": "[approvals]\ntimeout_seconds = 90\n", "revision": document["revision"]}),
    );
    assert_eq!(fixed.status, 200, "{}", fixed.body);
    let paused = daemon.wait_until("/health", |health| health["status"] == "ok");
    assert_eq!(paused["status"], "ok");
    assert_eq!(daemon.get("/v1/pause").status, 200);
    assert!(daemon.home.path().join("souz.db").exists());
    let stopped = daemon.stop("TERM");
    assert!(stopped.status.success(), "{}", stopped.stderr);
    assert!(
        stopped.stderr.contains(":2:8:"),
        "the problems were printed: {}",
        stopped.stderr
    );
}

#[test]
fn the_cli_works_with_its_daemon_in_recovery() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "[server]\nport = 99999\n").unwrap();
    let daemon = souz_e2e::Daemon::start_in(home, |_| {});
    let run = |args: &[&str], language: &str| {
        let output = daemon
            .cli()
            .args(args)
            .env("LANG", language)
            .env_remove("LC_ALL")
            .env_remove("LC_MESSAGES")
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };

    // `status` says recovery, with each problem and the way out (exit 2, as `config check`).
    let (code, stdout, stderr) = run(&["status"], "C");
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("recovery mode"), "{stdout}");
    assert!(stdout.contains("config.toml:2:8:"), "{stdout}");
    assert!(stdout.contains("souz ui --open"), "{stdout}");
    assert!(!stderr.contains("not Souz"), "{stderr}");
    let (code, stdout, _) = run(&["status"], "ru_RU.UTF-8");
    assert_eq!(code, Some(2));
    assert!(stdout.contains("режиме восстановления"), "{stdout}");

    // `ui` prints the address (the token's check passed) and says why only settings work.
    let (code, stdout, stderr) = run(&["ui"], "C");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.starts_with(&format!("http://{}/app/", daemon.address)),
        "{stdout}"
    );
    assert!(stderr.contains("recovery mode"), "{stderr}");

    // Commands the recovery cannot serve say so, with the problems, not "a squatter".
    for command in [&["approvals"][..], &["pause"], &["memory", "list"]] {
        let (code, stdout, stderr) = run(command, "C");
        assert_eq!(code, Some(1), "{command:?}: {stdout}{stderr}");
        assert!(stderr.contains("recovery mode"), "{command:?}: {stderr}");
        assert!(stderr.contains("config.toml:2:8:"), "{command:?}: {stderr}");
    }
    let (_, _, stderr) = run(&["approvals"], "ru_RU.UTF-8");
    assert!(stderr.contains("режиме восстановления"), "{stderr}");

    // Once fixed, the same CLI sees a running daemon.
    let document = daemon.get("/v1/config").json();
    let fixed = daemon.put(
        "/v1/config",
        &serde_json::json!({"text": "", "revision": document["revision"]}),
    );
    assert_eq!(fixed.status, 200, "{}", fixed.body);
    daemon.wait_until("/health", |health| health["status"] == "ok");
    let (code, stdout, stderr) = run(&["status"], "C");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("is running at"), "{stdout}");
}

#[test]
fn the_cli_finds_the_daemon_by_souz_port_when_the_home_has_no_config_file() {
    let daemon = souz_e2e::Daemon::start();
    let port = daemon.address.rsplit(':').next().unwrap().to_owned();
    std::fs::remove_file(daemon.home.path().join("daemon.json")).unwrap();
    std::fs::remove_file(daemon.home.path().join("config.toml")).unwrap();
    let output = daemon
        .cli()
        .arg("status")
        .env("SOUZ_PORT", &port)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(&daemon.address), "{stdout}");
}

#[test]
fn check_of_a_missing_file_is_not_an_error() {
    let home = tempfile::tempdir().unwrap();
    let output = souz(home.path())
        .args(["config", "check"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("does not exist yet"));
    let explicit = souz(home.path())
        .args(["config", "check", "--file", "/nonexistent/souz.toml"])
        .output()
        .unwrap();
    assert!(explicit.status.success());
}
