use std::process::Stdio;

use souz_e2e::{Daemon, http, souz};

#[test]
fn serve_answers_with_auth_and_stops_cleanly_on_sigterm() {
    let daemon = Daemon::start();
    let home = daemon.home.path().to_owned();

    let health = http(&daemon.address, "GET", "/health", &[], b"").unwrap();
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["database"]["ok"], true);

    let anonymous = http(&daemon.address, "GET", "/v1/bootstrap", &[], b"").unwrap();
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.json()["error"]["code"], "unauthorized");
    let wrong = http(
        &daemon.address,
        "GET",
        "/v1/bootstrap",
        &[(
            "Authorization",
            "Bearer 0000000000000000000000000000000000000000",
        )],
        b"",
    )
    .unwrap();
    assert_eq!(wrong.status, 401);
    let bootstrap = daemon.get("/v1/bootstrap");
    assert_eq!(bootstrap.status, 200, "{}", bootstrap.body);
    assert_eq!(bootstrap.json()["user"]["id"], "local");

    // The token file is owner-only and `souz token` prints the same token.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.join("token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let printed = souz(&home).arg("token").output().unwrap();
    assert!(printed.status.success());
    assert_eq!(
        String::from_utf8_lossy(&printed.stdout).trim(),
        daemon.token
    );
    assert!(daemon.token.len() >= 32);

    // Foreign Host and Origin are refused on a real socket too.
    let foreign = http(
        &daemon.address,
        "GET",
        "/health",
        &[("Host", "evil.example")],
        b"",
    )
    .unwrap();
    assert_eq!(foreign.status, 403);
    let origin = http(
        &daemon.address,
        "GET",
        "/health",
        &[("Origin", "https://evil.example")],
        b"",
    )
    .unwrap();
    assert_eq!(origin.status, 403);

    assert!(home.join("daemon.json").exists());
    let stopped = daemon.stop("TERM");
    let (status, stderr) = (stopped.status, &stopped.stderr);
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    assert!(stderr.contains("Souz stopped"), "{stderr}");
    assert!(
        !home.join("daemon.json").exists(),
        "daemon.json is removed on a clean stop"
    );
    // The database was closed cleanly: the WAL was checkpointed away.
    assert!(!home.join("souz.db-wal").exists());
    // The stop was recorded as the last runtime event.
    let connection = rusqlite::Connection::open(home.join("souz.db")).unwrap();
    let last: String = connection
        .query_row(
            "SELECT kind FROM runtime_events ORDER BY seq DESC LIMIT 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(last, "daemon.stopping");
}

#[test]
fn sigint_is_graceful_too() {
    let daemon = Daemon::start();
    let stopped = daemon.stop("INT");
    assert!(
        stopped.status.success(),
        "exit {:?}; stderr:\n{}",
        stopped.status,
        stopped.stderr
    );
    assert!(stopped.stderr.contains("SIGINT"), "{}", stopped.stderr);
}

#[test]
fn oversized_body_gets_413_and_the_server_keeps_serving() {
    let daemon = Daemon::start();
    let big = vec![b'x'; 11 * 1024 * 1024];
    let auth = format!("Bearer {}", daemon.token);
    // The server may answer and close before reading everything we send.
    match http(
        &daemon.address,
        "POST",
        "/v1/bootstrap",
        &[("Authorization", &auth)],
        &big,
    ) {
        Ok(response) => {
            assert_eq!(response.status, 413, "{}", response.head);
            assert_eq!(response.json()["error"]["code"], "payload_too_large");
        }
        Err(error) => assert!(
            matches!(
                error.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            ),
            "{error}"
        ),
    }
    assert_eq!(daemon.get("/health").status, 200);
}

#[test]
fn oauth_discovery_is_a_json_404() {
    let daemon = Daemon::start();
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/mcp/.well-known/oauth-protected-resource",
    ] {
        let response = http(&daemon.address, "GET", path, &[], b"").unwrap();
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.json()["error"]["code"], "not_found", "{path}");
    }
    let mcp = http(&daemon.address, "POST", "/mcp", &[], b"{}").unwrap();
    assert_eq!(mcp.status, 401);
}

#[test]
fn port_in_use_is_one_clear_line_and_touches_nothing() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    let output = souz(home.path())
        .arg("serve")
        .env("SOUZ_PORT", port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .find(|line| line.contains("already in use"))
        .unwrap_or_else(|| panic!("no port message in:\n{stderr}"));
    assert!(line.contains(&format!("port {port}")), "{line}");
    assert!(
        line.contains("SOUZ_PORT") && line.contains("[server] port"),
        "{line}"
    );
    assert!(
        !home.path().join("souz.db").exists(),
        "no database is created"
    );
    assert!(!home.path().join("daemon.json").exists());
}

#[test]
fn non_loopback_host_is_refused_without_permission() {
    let home = tempfile::tempdir().unwrap();
    let output = souz(home.path())
        .arg("serve")
        .env("SOUZ_HOST", "0.0.0.0")
        .env("SOUZ_PORT", "0")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("environment variable SOUZ_HOST"),
        "{stderr}"
    );
    assert!(stderr.contains("allow_non_loopback"), "{stderr}");
}

#[test]
fn newer_database_is_refused_untouched() {
    let home = tempfile::tempdir().unwrap();
    let database = home.path().join("souz.db");
    {
        let connection = rusqlite::Connection::open(&database).unwrap();
        connection
            .pragma_update(None, "user_version", 9999)
            .unwrap();
    }
    let before = std::fs::read(&database).unwrap();
    let output = souz(home.path())
        .arg("serve")
        .env("SOUZ_PORT", "0")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("schema version 9999"), "{stderr}");
    assert!(stderr.contains("newer Souz"), "{stderr}");
    assert_eq!(std::fs::read(&database).unwrap(), before);
}

#[test]
fn restart_keeps_token_and_events() {
    let first = Daemon::start();
    let token = first.token.clone();
    let stopped = first.stop("TERM");
    assert!(stopped.status.success(), "{}", stopped.stderr);
    let second = Daemon::restart(stopped);
    assert_eq!(second.token, token);
    let connection = rusqlite::Connection::open(second.home.path().join("souz.db")).unwrap();
    let starts: i64 = connection
        .query_row(
            "SELECT count(*) FROM runtime_events WHERE kind = 'daemon.started'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(starts, 2);
}
