//! Credentials end to end: clients never hand a token to a listener that is not Souz (a
//! squatter on the port), MCP client tokens made by `souz mcp-config` and `souz clients`, and
//! `souz ui --open` opening a one-time code instead of the token.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};
use souz_e2e::{Daemon, http, souz};

/// A plain TCP server on a loopback port that records every byte it receives and answers
/// each request with a 200 and a JSON body that looks like whatever a client might want.
struct Squatter {
    port: u16,
    received: Arc<Mutex<Vec<u8>>>,
}

impl Squatter {
    fn start() -> Self {
        Self::start_on("127.0.0.1:0")
    }

    fn start_on(address: &str) -> Self {
        let listener = TcpListener::bind(address).unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let sink = Arc::clone(&sink);
                std::thread::spawn(move || {
                    stream
                        .set_read_timeout(Some(Duration::from_millis(500)))
                        .unwrap();
                    let mut buffer = [0u8; 8192];
                    loop {
                        match stream.read(&mut buffer) {
                            Ok(0) | Err(_) => break,
                            Ok(read) => {
                                sink.lock().unwrap().extend_from_slice(&buffer[..read]);
                                let body = r#"{"proof":"00","items":[],"paused":false,"jsonrpc":"2.0","id":1,"result":{}}"#;
                                let answer = format!(
                                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                                    body.len()
                                );
                                if stream.write_all(answer.as_bytes()).is_err() {
                                    break;
                                }
                            }
                        }
                    }
                });
            }
        });
        Self { port, received }
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned()
    }
}

/// A Souz home whose config points at `port` and which holds an operator token and a bridge
/// token, with no daemon running.
fn home_pointing_at(port: u16) -> (tempfile::TempDir, String, String) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[server]\nport = {port}\n"),
    )
    .unwrap();
    let output = souz(home.path()).arg("token").output().unwrap();
    assert!(output.status.success());
    let operator = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let client = format!("souz_client_{}", "ab".repeat(32));
    std::fs::create_dir_all(home.path().join("clients")).unwrap();
    std::fs::write(home.path().join("clients/claude-desktop.token"), &client).unwrap();
    (home, operator, client)
}

#[test]
fn the_cli_and_the_bridge_never_send_a_token_to_a_squatter() {
    let squatter = Squatter::start();
    let (home, operator, client) = home_pointing_at(squatter.port);
    let expected = format!(
        "something else is listening on 127.0.0.1:{}; it is not Souz",
        squatter.port
    );

    for args in [
        &["approvals"][..],
        &["grants"],
        &["pause"],
        &["clients", "list"],
        &["mcp-config", "claude-code"],
        &["ui"],
    ] {
        let output = souz(home.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} trusted the squatter");
        assert!(stderr.contains(&expected), "{args:?}: {stderr}");
    }

    let mut bridge = souz(home.path())
        .arg("mcp-stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}});
    writeln!(stdin, "{initialize}").unwrap();
    let mut line = String::new();
    BufReader::new(bridge.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&expected), "{answer}");
    drop(stdin);
    let _ = bridge.kill();
    let _ = bridge.wait();

    let seen = squatter.received();
    assert!(seen.contains("GET /v1/identity?nonce="), "{seen}");
    assert!(
        !seen.contains(&operator),
        "the operator token reached the squatter"
    );
    assert!(
        !seen.contains(&client),
        "the client token reached the squatter"
    );
    assert!(
        !seen.to_ascii_lowercase().contains("authorization"),
        "{seen}"
    );
}

#[test]
fn mcp_config_gives_each_client_its_own_token() {
    let daemon = Daemon::start();
    let code = |daemon: &Daemon| {
        let output = daemon
            .cli()
            .args(["mcp-config", "claude-code"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let token = text
            .trim()
            .rsplit_once("Bearer ")
            .unwrap()
            .1
            .trim_end_matches('"')
            .to_owned();
        (text, token)
    };
    let (text, first) = code(&daemon);
    assert!(!text.contains(&daemon.token), "never the operator token");
    assert!(first.starts_with("souz_client_"), "{text}");

    let mcp = |token: &str, path: &str| {
        http(
            &daemon.address,
            "POST",
            path,
            &[
                ("Authorization", &format!("Bearer {token}")),
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
            ],
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        )
        .unwrap()
    };
    // The client token reaches /mcp (a ping outside a session is answered, not 401) and
    // nothing under /v1.
    assert_ne!(mcp(&first, "/mcp").status, 401);
    let decision = mcp(&first, "/v1/approvals/x/decision");
    assert_eq!(decision.status, 403, "{}", decision.body);
    assert_eq!(decision.json()["error"]["code"], "forbidden");

    // Configuring again rotates the token: the old one is refused.
    let (_, second) = code(&daemon);
    assert_ne!(first, second);
    assert_eq!(mcp(&first, "/mcp").status, 401);
    assert_ne!(mcp(&second, "/mcp").status, 401);

    // Claude Desktop: the bridge's token goes to an owner-only file, not into the config.
    let output = daemon
        .cli()
        .args(["mcp-config", "claude-desktop"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let file = daemon.home.path().join("clients/claude-desktop.token");
    let desktop = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert!(desktop.starts_with("souz_client_"));
    assert!(!String::from_utf8_lossy(&output.stdout).contains(&desktop));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // `souz clients` lists both and revokes by name.
    let listed = daemon.cli().args(["clients", "list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains("claude-code") && listed.contains("claude-desktop"),
        "{listed}"
    );
    assert!(!listed.contains(&second) && !listed.contains(&desktop));
    let revoked = daemon
        .cli()
        .args(["clients", "revoke", "claude-code"])
        .output()
        .unwrap();
    assert!(revoked.status.success(), "{revoked:?}");
    assert_eq!(mcp(&second, "/mcp").status, 401);
    let added = daemon
        .cli()
        .args(["clients", "add", "my-script"])
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let added = String::from_utf8_lossy(&added.stdout).into_owned();
    let token = added.lines().last().unwrap().trim();
    assert_ne!(mcp(token, "/mcp").status, 401);
}

#[test]
fn ui_open_opens_a_one_time_code_not_the_token() {
    let daemon = Daemon::start();
    // A fake browser opener that records its arguments.
    let bin = tempfile::tempdir().unwrap();
    let record = bin.path().join("opened");
    for opener in ["xdg-open", "open"] {
        let script = bin.path().join(opener);
        std::fs::write(
            &script,
            format!("#!/bin/sh\nprintf '%s' \"$*\" > '{}'\n", record.display()),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = daemon
        .cli()
        .args(["ui", "--open"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let opened = std::fs::read_to_string(&record).unwrap();
    assert!(
        !opened.contains(&daemon.token),
        "the token is in the browser's arguments"
    );
    let prefix = format!("http://{}/app/#code=", daemon.address);
    let code = opened
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{opened}"));

    let exchange = |code: &str| {
        http(
            &daemon.address,
            "POST",
            "/v1/ui-codes/exchange",
            &[("Content-Type", "application/json")],
            json!({"code": code}).to_string().as_bytes(),
        )
        .unwrap()
    };
    let signed_in = exchange(code);
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    assert_eq!(signed_in.json()["token"], daemon.token.as_str());
    assert_eq!(exchange(code).status, 401, "a code works once");
}

#[test]
fn the_bridge_proves_the_listener_again_when_the_daemon_dies() {
    let daemon = Daemon::start();
    let configured = daemon
        .cli()
        .args(["mcp-config", "claude-desktop"])
        .output()
        .unwrap();
    assert!(configured.status.success(), "{configured:?}");
    let home = daemon.home.path().to_path_buf();
    let token = std::fs::read_to_string(home.join("clients/claude-desktop.token"))
        .unwrap()
        .trim()
        .to_owned();
    let mut bridge = souz(&home)
        .arg("mcp-stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let stdout = bridge.stdout.take().unwrap();
    let (sender, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut ask = |message: Value| -> Value {
        writeln!(stdin, "{message}").unwrap();
        loop {
            let line = lines.recv_timeout(Duration::from_secs(20)).unwrap();
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == message["id"] {
                return answer;
            }
        }
    };
    let initialized = ask(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}),
    );
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "souz",
        "{initialized}"
    );
    let listed = ask(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    // Killed: daemon.json stays behind, naming the port a squatter now takes.
    let address = daemon.address.clone();
    let _stopped = daemon.stop("KILL");
    assert!(home.join("daemon.json").exists());
    let squatter = Squatter::start_on(&address);
    let answer = ask(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}));
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("it is not Souz"), "{answer}");
    drop(stdin);
    let _ = bridge.kill();
    let _ = bridge.wait();
    let seen = squatter.received();
    assert!(
        !seen.contains(&token),
        "the client token reached the squatter: {seen}"
    );
    assert!(
        !seen.to_ascii_lowercase().contains("authorization"),
        "{seen}"
    );
}
