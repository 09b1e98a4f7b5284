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
fn serve_with_a_bad_config_exits_2_and_leaves_everything_alone() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("config.toml");
    let bad = "[server]\nport = 99999\n";
    std::fs::write(&file, bad).unwrap();
    let output = souz(home.path()).arg("serve").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:2:8:", file.display())),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);
    assert!(!home.path().join("souz.db").exists());
    assert!(!home.path().join("token").exists());
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
