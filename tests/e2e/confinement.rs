//! Confinement without holes, with the real `souz` binary as the sandbox helper: every
//! descendant of a command is stopped when the call ends, UNIX sockets are out of reach unless
//! allowlisted, exit codes pass through the supervisor, and the daemon's secrets stay unread.
//! Where this kernel has no Landlock, each test checks that the command is refused instead.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use souz_core::config::{SandboxConfig, SouzPaths};
use souz_core::sandbox::{CommandError, CommandOutcome, CommandRequest, Sandbox};
use souz_e2e::{Daemon, souz_bin};
use tokio_util::sync::CancellationToken;

use crate::sandbox::landlock_works;

/// A home with a workspace root and a sandbox confined by the real helper.
pub(crate) struct Confined {
    _dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
    pub(crate) sandbox: Sandbox,
}

pub(crate) fn confined(adjust: impl FnOnce(&mut SandboxConfig)) -> Confined {
    confined_in(Path::new(env!("CARGO_TARGET_TMPDIR")), adjust)
}

/// Like [`confined`], with the home in a fresh folder under `base`.
pub(crate) fn confined_in(base: &Path, adjust: impl FnOnce(&mut SandboxConfig)) -> Confined {
    let dir = tempfile::tempdir_in(base).unwrap();
    let home = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join("work")).unwrap();
    let mut config = SandboxConfig {
        roots: vec!["~".to_owned()],
        ..SandboxConfig::default()
    };
    adjust(&mut config);
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&config, &paths)
        .unwrap()
        .with_confinement_helper(souz_bin());
    Confined {
        _dir: dir,
        home,
        sandbox,
    }
}

impl Confined {
    /// Runs `script` in `~/work` (or the request's own folder); `None` when this machine
    /// cannot confine it (after checking that it was refused, not run unconfined).
    pub(crate) async fn run(&self, mut request: CommandRequest) -> Option<CommandOutcome> {
        if request.cwd.is_none() {
            request.cwd = Some(self.home.join("work").display().to_string());
        }
        let outcome = self
            .sandbox
            .run_command(request, &CancellationToken::new())
            .await;
        if landlock_works() {
            Some(outcome.unwrap())
        } else {
            assert!(
                matches!(outcome, Err(CommandError::Unconfined(_))),
                "{outcome:?}"
            );
            None
        }
    }
}

/// Runs a RunCommand call with `arguments` on `daemon`, approving it, and returns its
/// standard output; `None` when this machine cannot confine commands (after checking that the
/// call was refused).
pub(crate) fn approved_command(daemon: &Daemon, arguments: serde_json::Value) -> Option<String> {
    let response = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "RunCommand", "arguments": arguments, "wait_ms": 300}),
    );
    if !landlock_works() {
        assert!(
            response.body.contains("allow_unconfined_commands"),
            "{}",
            response.body
        );
        return None;
    }
    assert_eq!(response.status, 202, "{}", response.body);
    let call = response.json();
    let call_id = call["id"].as_str().unwrap().to_owned();
    let approval_id = call["approval_id"].as_str().unwrap().to_owned();
    daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve"}),
    );
    let ended = daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |call| {
        call["status"] == "succeeded" || call["status"] == "failed"
    });
    assert_eq!(ended["status"], "succeeded", "{ended}");
    Some(
        ended["result"]["structured"]["stdout"]
            .as_str()
            .unwrap_or_else(|| panic!("no stdout: {ended}"))
            .to_owned(),
    )
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(command_line) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let command_line = String::from_utf8_lossy(&command_line).replace('\0', " ");
        let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if command_line.contains(marker) && !zombie {
            found.push(format!(
                "{}: {command_line}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// A `sleep` duration no other process uses, so the test finds exactly its own sleepers.
fn unique_sleep() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("1000.{}{nanos:09}", std::process::id())
}

#[tokio::test]
async fn every_process_a_command_starts_is_stopped_when_the_call_ends() {
    let fixture = confined(|_| {});
    // `setsid -f` leaves the process group; the double fork loses its parent too.
    let escape = |marker: &str| {
        format!(
            "setsid -f sleep {marker} >/dev/null 2>&1 </dev/null; \
             (sleep {marker} >/dev/null 2>&1 </dev/null &) ; \
             setsid sh -c '(sleep {marker} >/dev/null 2>&1 </dev/null &)' ; \
             echo started"
        )
    };
    // The command returns at once.
    let marker = unique_sleep();
    let Some(outcome) = fixture.run(CommandRequest::shell(escape(&marker))).await else {
        return;
    };
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "started\n");
    assert_eq!(processes_with(&marker), Vec::<String>::new());

    // The command hits its time limit.
    let marker = unique_sleep();
    let mut request = CommandRequest::shell(format!("{}; sleep 30", escape(&marker)));
    request.timeout = Some(Duration::from_secs(1));
    let outcome = fixture.run(request).await.unwrap();
    assert!(outcome.timed_out, "{outcome:?}");
    assert_eq!(processes_with(&marker), Vec::<String>::new());

    // The caller cancels it.
    let marker = unique_sleep();
    let cancel = CancellationToken::new();
    let mut request = CommandRequest::shell(format!("{}; sleep 30", escape(&marker)));
    request.cwd = Some(fixture.home.join("work").display().to_string());
    let canceller = {
        let cancel = cancel.clone();
        let marker = marker.clone();
        tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            while processes_with(&marker).len() < 3 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cancel.cancel();
        })
    };
    let outcome = fixture.sandbox.run_command(request, &cancel).await.unwrap();
    canceller.await.unwrap();
    assert!(outcome.cancelled, "{outcome:?}");
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[tokio::test]
async fn the_supervisor_reports_the_command_exit_code_signal_and_output() {
    let fixture = confined(|_| {});
    let Some(outcome) = fixture
        .run(CommandRequest::shell("echo out; echo err >&2; exit 7"))
        .await
    else {
        return;
    };
    assert_eq!(outcome.exit_code, Some(7), "{outcome:?}");
    assert_eq!(outcome.stdout.text, "out\n");
    assert_eq!(outcome.stderr.text, "err\n");
    let outcome = fixture
        .run(CommandRequest::shell("kill -KILL $$"))
        .await
        .unwrap();
    assert_eq!(outcome.exit_code, None, "{outcome:?}");
    assert_eq!(outcome.signal, Some(9), "{outcome:?}");
    let mut request = CommandRequest::argv(["/bin/cat"]);
    request.stdin = Some(b"through stdin".to_vec());
    let outcome = fixture.run(request).await.unwrap();
    assert_eq!(outcome.stdout.text, "through stdin");
}

/// A UNIX-socket server answering one HTTP request per connection; counts connections.
struct SocketServer {
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl SocketServer {
    fn start(listener: UnixListener) -> Self {
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&accepted);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else {
                    return;
                };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached");
            }
        });
        Self { accepted }
    }

    fn connections(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn abstract_listener(name: &str) -> UnixListener {
    use std::os::linux::net::SocketAddrExt;
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    UnixListener::bind_addr(&address).unwrap()
}

fn curl_script(path: &Path, abstract_name: &str) -> String {
    format!(
        "curl -s -m 5 --unix-socket {path} http://souz.test/ && echo; \
         echo path-exit=$?; \
         curl -s -m 5 --abstract-unix-socket {abstract_name} http://souz.test/ && echo; \
         echo abstract-exit=$?",
        path = path.display()
    )
}

#[tokio::test]
async fn confined_commands_cannot_reach_unix_sockets_unless_allowed() {
    let sockets = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = sockets.path().canonicalize().unwrap().join("helper.sock");
    let path_server = SocketServer::start(UnixListener::bind(&path).unwrap());
    let abstract_name = format!("souz-e2e-{}", unique_sleep());
    let abstract_server = SocketServer::start(abstract_listener(&abstract_name));

    // The test itself reaches both (the servers work).
    let reached = std::process::Command::new("sh")
        .args(["-c", &curl_script(&path, &abstract_name)])
        .output()
        .unwrap();
    let reached = String::from_utf8_lossy(&reached.stdout);
    assert_eq!(reached.matches("reached").count(), 2, "{reached}");
    let (path_before, abstract_before) = (path_server.connections(), abstract_server.connections());

    // Confined: neither.
    let fixture = confined(|_| {});
    let Some(outcome) = fixture
        .run(CommandRequest::shell(curl_script(&path, &abstract_name)))
        .await
    else {
        return;
    };
    let stdout = &outcome.stdout.text;
    assert!(!stdout.contains("reached"), "{outcome:?}");
    assert!(!stdout.contains("path-exit=0"), "{outcome:?}");
    assert!(!stdout.contains("abstract-exit=0"), "{outcome:?}");
    assert_eq!(path_server.connections(), path_before);
    assert_eq!(abstract_server.connections(), abstract_before);

    // Allowlisted: the listed path-named socket is reachable; abstract ones never are.
    let fixture = confined(|config| {
        config.unix_socket_allow = vec![path.display().to_string()];
    });
    let outcome = fixture
        .run(CommandRequest::shell(curl_script(&path, &abstract_name)))
        .await
        .unwrap();
    let stdout = &outcome.stdout.text;
    assert!(stdout.contains("path-exit=0"), "{outcome:?}");
    assert_eq!(stdout.matches("reached").count(), 1, "{outcome:?}");
    assert!(!stdout.contains("abstract-exit=0"), "{outcome:?}");
    assert_eq!(path_server.connections(), path_before + 1);
    assert_eq!(abstract_server.connections(), abstract_before);
    // `/health` is public: it counts the allowed socket, and never names its path.
    let health = fixture.sandbox.confinement_status().detail;
    assert!(health.contains("the 1 UNIX socket"), "{health}");
    assert!(!health.contains(&path.display().to_string()), "{health}");
}

#[test]
fn commands_cannot_read_the_daemons_secrets() {
    let secret = "sk-ant-e2e-daemon-secret-0123456789";
    let daemon = Daemon::start_with(|command| {
        command.env("ANTHROPIC_API_KEY", secret);
    });
    let health = daemon.get("/health").json();
    let detail = health["sandbox"]["detail"].as_str().unwrap().to_owned();
    assert!(detail.contains("the daemon is not dumpable"), "{detail}");
    let pid = daemon.pid();
    let command = format!(
        "tr '\\0' '\\n' < /proc/{pid}/environ; grep -a -o 'sk-ant-[a-z0-9-]*' \
         /proc/{pid}/environ; head -c 4096 /proc/{pid}/mem | od -c | head -n 3; echo done"
    );
    let response = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "RunCommand", "arguments": {"command": command}, "wait_ms": 300}),
    );
    if !landlock_works() {
        // Refused before anything runs: nothing can confine it.
        assert!(!response.body.contains(secret), "{}", response.body);
        assert!(
            response.body.contains("allow_unconfined_commands"),
            "{}",
            response.body
        );
        return;
    }
    assert_eq!(response.status, 202, "{}", response.body);
    let call = response.json();
    let call_id = call["id"].as_str().unwrap().to_owned();
    let approval_id = call["approval_id"].as_str().unwrap().to_owned();
    daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve"}),
    );
    let ended = daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |call| {
        call["status"] == "succeeded" || call["status"] == "failed"
    });
    let text = ended.to_string();
    assert!(!text.contains(secret), "{text}");
    assert_eq!(ended["status"], "succeeded", "{ended}");
    assert!(text.contains("done"), "{ended}");
}

/// A loopback HTTP server answering `reached` to every request; its port.
fn reached_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else {
                return;
            };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached");
        }
    });
    port
}

#[tokio::test]
async fn confined_commands_use_the_network_only_when_the_call_asks_for_it() {
    let port = reached_server();
    let script = format!("curl -s -m 5 http://127.0.0.1:{port}/; echo \" exit=$?\"");
    let fixture = confined(|_| {});
    let Some(offline) = fixture.run(CommandRequest::shell(&script)).await else {
        return;
    };
    assert!(!offline.stdout.text.contains("reached"), "{offline:?}");
    assert!(!offline.stdout.text.contains("exit=0"), "{offline:?}");
    let mut request = CommandRequest::shell(&script);
    request.network = true;
    let online = fixture.run(request).await.unwrap();
    assert_eq!(online.stdout.text, "reached exit=0\n", "{online:?}");
    // `[sandbox] command_network` grants it to every command.
    let open = confined(|config| config.command_network = true);
    let outcome = open.run(CommandRequest::shell(&script)).await.unwrap();
    assert_eq!(outcome.stdout.text, "reached exit=0\n", "{outcome:?}");
}

/// A skill's sandbox (`Sandbox::for_skill`): writes only to its bundle and manifest folders;
/// no protected reads, no network and no UNIX sockets even where `RunCommand` has them.
#[tokio::test]
async fn a_skill_command_cannot_escape_its_manifest() {
    let port = reached_server();
    let sockets = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let socket = sockets.path().canonicalize().unwrap().join("skill.sock");
    let socket_server = SocketServer::start(UnixListener::bind(&socket).unwrap());
    let fixture = confined(|config| {
        config.command_network = true;
        config.unix_socket_allow = vec![socket.display().to_string()];
    });
    let home = &fixture.home;
    std::fs::create_dir_all(home.join("work/out")).unwrap();
    std::fs::create_dir_all(home.join(".souz")).unwrap();
    std::fs::write(home.join(".souz/secret"), "daemon-secret").unwrap();
    let bundle = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // A manifest may not widen the roots or write protected paths.
    assert!(
        fixture
            .sandbox
            .for_skill(bundle.path(), &["/etc".to_owned()])
            .is_err()
    );
    assert!(
        fixture
            .sandbox
            .for_skill(bundle.path(), &["~/.souz".to_owned()])
            .is_err()
    );
    let skill = fixture
        .sandbox
        .for_skill(bundle.path(), &["~/work/out".to_owned()])
        .unwrap();
    let script = format!(
        "echo ok > {home}/work/out/ok.txt && echo wrote-listed; \
         echo x > {home}/work/escape.txt && echo wrote-outside; \
         echo x > bundle.txt && echo wrote-bundle; \
         cat {home}/.souz/secret; \
         curl -s -m 5 http://127.0.0.1:{port}/; echo \" tcp-exit=$?\"; \
         curl -s -m 5 --unix-socket {socket} http://souz.test/; echo \" unix-exit=$?\"",
        home = home.display(),
        socket = socket.display(),
    );
    let mut request = CommandRequest::shell(script);
    request.cwd = Some(bundle.path().display().to_string());
    let outcome = skill.run_command(request, &CancellationToken::new()).await;
    if !landlock_works() {
        assert!(
            matches!(outcome, Err(CommandError::Unconfined(_))),
            "{outcome:?}"
        );
        return;
    }
    let outcome = outcome.unwrap();
    let stdout = &outcome.stdout.text;
    assert!(stdout.contains("wrote-listed"), "{outcome:?}");
    assert!(stdout.contains("wrote-bundle"), "{outcome:?}");
    assert!(!stdout.contains("wrote-outside"), "{outcome:?}");
    assert!(!home.join("work/escape.txt").exists());
    assert!(!stdout.contains("daemon-secret"), "{outcome:?}");
    assert!(!stdout.contains("reached"), "{outcome:?}");
    assert!(!stdout.contains("tcp-exit=0"), "{outcome:?}");
    assert!(!stdout.contains("unix-exit=0"), "{outcome:?}");
    assert_eq!(socket_server.connections(), 0);
}

/// A skill whose manifest lists hosts (`Sandbox::with_egress`): its command reaches a listed
/// host only through its own egress proxy; an unlisted host is refused by the proxy, a direct
/// connection past the proxy by the confinement, and UNIX sockets stay out of reach.
#[tokio::test]
async fn a_skill_reaches_only_its_listed_hosts_through_its_egress_proxy() {
    let port = reached_server();
    let sockets = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let socket = sockets.path().canonicalize().unwrap().join("egress.sock");
    let socket_server = SocketServer::start(UnixListener::bind(&socket).unwrap());
    // Loopback is private: the test allows it explicitly, as an operator would.
    let fixture = confined(|config| config.network_allow_hosts = vec!["127.0.0.1".to_owned()]);
    let bundle = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let skill = fixture.sandbox.for_skill(bundle.path(), &[]).unwrap();
    let hosts = [format!("127.0.0.1:{port}")];
    if !landlock_works() || !skill.limits_tcp_ports() {
        assert!(skill.with_egress(&hosts).await.is_err());
        return;
    }
    let (skill, proxy) = skill.with_egress(&hosts).await.unwrap();
    let script = format!(
        "curl -s -m 5 http://127.0.0.1:{port}/; echo \" listed-exit=$?\"; \
         curl -s -m 5 http://unlisted.invalid:{port}/; echo \" unlisted-exit=$?\"; \
         curl -s -m 5 --noproxy '*' http://127.0.0.1:{port}/; echo \" direct-exit=$?\"; \
         curl -s -m 5 --unix-socket {socket} http://souz.test/; echo \" unix-exit=$?\"",
        socket = socket.display(),
    );
    let mut request = CommandRequest::shell(script);
    request.cwd = Some(bundle.path().display().to_string());
    request.env = proxy.environment();
    let outcome = skill
        .run_command(request, &CancellationToken::new())
        .await
        .unwrap();
    let stdout = &outcome.stdout.text;
    assert!(stdout.contains("reached listed-exit=0"), "{outcome:?}");
    assert!(stdout.contains("is not among the hosts"), "{outcome:?}");
    assert!(!stdout.contains("reached unlisted"), "{outcome:?}");
    assert!(!stdout.contains("reached direct"), "{outcome:?}");
    assert!(!stdout.contains("direct-exit=0"), "{outcome:?}");
    assert!(!stdout.contains("unix-exit=0"), "{outcome:?}");
    assert_eq!(socket_server.connections(), 0);
}
