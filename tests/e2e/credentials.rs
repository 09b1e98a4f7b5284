//! Credentials end to end: clients never hand a token to a listener that is not Souz (a
//! squatter on the port), MCP client tokens made by `souz mcp-config` and `souz clients`, and
//! `souz ui --open` and Connect putting no token or code in any process argument (a poller
//! reads every `/proc/*/cmdline` meanwhile and tries all it saw).

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
        // The command holds no token: Claude Code's headersHelper prints it from the home.
        let helper = daemon.cli().arg("mcp-headers").output().unwrap();
        assert!(helper.status.success(), "{helper:?}");
        let headers: Value = serde_json::from_slice(&helper.stdout).unwrap();
        let token = headers["Authorization"].as_str().unwrap()["Bearer ".len()..].to_owned();
        (text, token)
    };
    let (text, first) = code(&daemon);
    assert!(
        text.starts_with("claude mcp add-json --scope user souz '"),
        "{text}"
    );
    assert!(text.contains("mcp-headers"), "{text}");
    assert!(!text.contains(&daemon.token), "never the operator token");
    assert!(!text.contains(&first), "no token in the command");
    assert!(first.starts_with("souz_client_"), "{first}");

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

/// Reads every process's arguments (`/proc/*/cmdline`, what any local user can read) over and
/// over until stopped, as a local attacker would, and keeps every argument it saw.
struct ArgumentPoller {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<std::collections::BTreeSet<String>>,
}

impl ArgumentPoller {
    fn start() -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok(entries) = std::fs::read_dir("/proc") else {
                    break;
                };
                for entry in entries.flatten() {
                    let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                        continue;
                    };
                    for argument in raw.split(|byte| *byte == 0).filter(|a| !a.is_empty()) {
                        seen.insert(String::from_utf8_lossy(argument).into_owned());
                    }
                }
            }
            seen
        });
        Self { stop, thread }
    }

    fn stop(self) -> std::collections::BTreeSet<String> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}

/// Every string in `seen` that could be a secret: each argument, and each run of at least 16
/// letters, digits, `_` or `-` inside one (a code after `#code=`, a token after `Bearer `).
fn secret_candidates(
    seen: &std::collections::BTreeSet<String>,
) -> std::collections::BTreeSet<String> {
    let mut candidates: std::collections::BTreeSet<String> = seen
        .iter()
        .filter(|argument| argument.len() <= 256)
        .cloned()
        .collect();
    for argument in seen {
        for run in argument.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
            if (16..=256).contains(&run.len()) {
                candidates.insert(run.to_owned());
            }
        }
    }
    candidates
}

/// A fake browser opener (`xdg-open`, `open`) in a folder of its own that records its
/// arguments in `opened` and stays alive for a second, long enough to be seen.
fn fake_opener() -> (tempfile::TempDir, std::path::PathBuf) {
    let bin = tempfile::tempdir().unwrap();
    let record = bin.path().join("opened");
    for opener in ["xdg-open", "open"] {
        let script = bin.path().join(opener);
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nprintf '%s' \"$*\" > '{}'\nsleep 1\n",
                record.display()
            ),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    (bin, record)
}

#[test]
fn ui_open_puts_nothing_usable_in_a_process_argument() {
    let daemon = Daemon::start();
    let (bin, record) = fake_opener();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let origin = format!("http://{}", daemon.address);
    let exchange = |code: &str, origin: Option<&str>| {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(origin) = origin {
            headers.push(("Origin", origin));
        }
        http(
            &daemon.address,
            "POST",
            "/v1/ui-codes/exchange",
            &headers,
            json!({"code": code}).to_string().as_bytes(),
        )
        .unwrap()
    };

    let poller = ArgumentPoller::start();
    let output = daemon
        .cli()
        .args(["ui", "--open"])
        .env("PATH", path)
        .output()
        .unwrap();
    let seen = poller.stop();
    assert!(output.status.success(), "{output:?}");
    let opened = std::fs::read_to_string(&record).unwrap();
    assert!(
        seen.contains(&opened),
        "the poller saw the browser's argument {opened}"
    );
    // Everything a local process could read from the process list: no token, and nothing
    // the sign-in trades for one, even sent as the page would send it.
    for candidate in secret_candidates(&seen) {
        assert!(
            !candidate.contains(&daemon.token),
            "the token is in an argument"
        );
        let answer = exchange(&candidate, Some(&origin));
        assert_eq!(answer.status, 401, "{candidate} signed in: {}", answer.body);
    }

    // The browser got an owner-only page in the Souz home that sends it on to the code.
    let page = opened
        .strip_prefix("file://")
        .unwrap_or_else(|| panic!("{opened}"));
    let page = std::path::Path::new(page);
    assert!(
        page.starts_with(daemon.home.path().join("ui-open")),
        "{opened}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode =
            |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(page), 0o600);
        assert_eq!(mode(page.parent().unwrap()), 0o700);
    }
    let html = std::fs::read_to_string(page).unwrap();
    assert!(!html.contains(&daemon.token));
    let prefix = format!("location.replace(\"{origin}/app/#code=");
    let code = html
        .split_once(&prefix)
        .and_then(|(_, rest)| rest.split_once('"'))
        .unwrap_or_else(|| panic!("{html}"))
        .0;
    // Only a page of the daemon's origin trades it (a script without one is refused and the
    // code stays usable), and only once.
    assert_eq!(exchange(code, None).status, 401, "not from a page");
    let signed_in = exchange(code, Some(&origin));
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    assert_eq!(signed_in.json()["token"], daemon.token.as_str());
    assert_eq!(
        exchange(code, Some(&origin)).status,
        401,
        "a code works once"
    );
}

#[test]
fn connecting_claude_code_puts_no_token_in_a_process_argument_or_its_file() {
    let daemon = Daemon::start();
    let claude_json = daemon.user_home().join(".claude.json");
    std::fs::write(&claude_json, r#"{"numStartups": 3, "mcpServers": {}}"#).unwrap();
    let mcp = |token: &str| {
        http(
            &daemon.address,
            "POST",
            "/mcp",
            &[
                ("Authorization", &format!("Bearer {token}")),
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
            ],
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        )
        .unwrap()
        .status
    };

    let poller = ArgumentPoller::start();
    // Connect: the change is shown, then written; the copy-paste command is made too.
    let change = daemon.get("/v1/connect/claude-code/config");
    assert_eq!(change.status, 200, "{}", change.body);
    let change = change.json();
    let applied = daemon.post(
        "/v1/connect/claude-code/config",
        &json!({"revision": change["revision"]}),
    );
    assert_eq!(applied.status, 200, "{}", applied.body);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&claude_json).unwrap()).unwrap();
    assert_eq!(
        written["numStartups"], 3,
        "Claude Code's own settings are kept"
    );
    let server = &written["mcpServers"]["souz"];
    assert_eq!(server["url"], format!("http://{}/mcp", daemon.address));
    // Claude Code runs the helper through a shell each time it connects.
    let helper = server["headersHelper"].as_str().unwrap().to_owned();
    let printed = std::process::Command::new("sh")
        .args(["-c", &helper])
        .env("HOME", daemon.user_home())
        .env_remove("SOUZ_HOME")
        .output()
        .unwrap();
    let seen = poller.stop();
    assert!(printed.status.success(), "{printed:?}");
    let headers: Value = serde_json::from_slice(&printed.stdout).unwrap();
    let token = headers["Authorization"]
        .as_str()
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap()
        .to_owned();
    assert!(token.starts_with("souz_client_"), "{token}");
    assert_ne!(mcp(&token), 401, "the helper's token reaches /mcp");
    let text = std::fs::read_to_string(&claude_json).unwrap();
    assert!(!text.contains(&token), "no token in Claude Code's file");
    assert!(
        seen.iter().any(|argument| argument.contains("mcp-headers")),
        "the poller saw the helper run"
    );
    for candidate in secret_candidates(&seen) {
        assert!(!candidate.contains(&token), "the token is in an argument");
        assert_eq!(mcp(&candidate), 401, "{candidate} reached /mcp");
    }

    // The copy-paste fallback holds no token either (it makes a new one, in the file).
    let made = daemon.post("/v1/connect/claude-code", &json!({}));
    assert_eq!(made.status, 200, "{}", made.body);
    let command = made.json()["command"].as_str().unwrap().to_owned();
    assert!(
        command.starts_with("claude mcp add-json --scope user souz '"),
        "{command}"
    );
    assert!(!command.contains("souz_client_"), "{command}");
    assert_eq!(mcp(&token), 401, "the previous token is revoked");
}

#[test]
fn connect_shows_and_changes_only_souz_entry_of_a_config_holding_secrets() {
    let daemon = Daemon::start();
    let claude_json = daemon.user_home().join(".claude.json");
    // As Claude Code writes it: its own order, history, an API key, another server's key.
    let history: String = (0..200)
        .map(|n| format!("      {{\"display\": \"private prompt {n}\"}},\n"))
        .collect();
    let original = format!(
        "{{\n  \"numStartups\": 3,\n  \"primaryApiKey\": \"plain-key-of-no-known-shape\",\n  \
         \"projects\": {{\n    \"/home/p/work\": {{\n      \"history\": [\n{history}      {{}}\n      ]\n    }}\n  }},\n  \
         \"mcpServers\": {{\n    \"search\": {{\n      \"command\": \"npx\",\n      \"env\": {{\n        \
         \"SEARCH_API_KEY\": \"another-plain-secret\"\n      }}\n    }}\n  }}\n}}\n"
    );
    serde_json::from_str::<Value>(&original).expect("the fixture is JSON");
    std::fs::write(&claude_json, &original).unwrap();

    let change = daemon.get("/v1/connect/claude-code/config");
    assert_eq!(change.status, 200, "{}", change.body);
    assert!(
        change.json().get("after").is_none(),
        "the file is not sent back"
    );
    for secret in [
        "plain-key-of-no-known-shape",
        "another-plain-secret",
        "private prompt",
    ] {
        assert!(!change.body.contains(secret), "{secret} in {}", change.body);
    }
    let diff = change.json()["diff"].as_str().unwrap().to_owned();
    assert!(diff.lines().count() < 30, "only the change: {diff}");
    assert!(diff.contains("+    \"souz\": {"), "{diff}");

    let applied = daemon.post(
        "/v1/connect/claude-code/config",
        &json!({"revision": change.json()["revision"]}),
    );
    assert_eq!(applied.status, 200, "{}", applied.body);
    let written = std::fs::read_to_string(&claude_json).unwrap();
    // Up to the end of the other server's entry, after which Souz's is added.
    let kept = &original[..original.rfind("    }\n  }\n}").unwrap() + 5];
    assert!(
        written.starts_with(kept),
        "everything before Souz's entry is byte for byte as it was:\n{written}"
    );
    let value: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        value["mcpServers"]["search"]["env"]["SEARCH_API_KEY"],
        "another-plain-secret"
    );
    assert!(value["mcpServers"]["souz"]["url"].is_string());
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
