//! Helpers for end-to-end tests: start the real `souz` binary with a temporary `SOUZ_HOME`,
//! find it through `daemon.json` (read by `souz-client`), talk to it, stop it with a signal.
//!
//! Two ways to talk: [`Daemon::client`] is the typed client every user of the daemon uses
//! (`souz-client`, identity proof included); [`http`] and [`Daemon::get`]/[`Daemon::post`]…
//! send raw HTTP/1.1 on purpose, so tests can check the exact status, headers and bytes on the
//! wire and send requests no well-behaved client would.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The folder of the test clients and servers `scripts/clients.sh` installs (`tests/clients`).
pub fn clients() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients")
}

/// `path` (under [`clients`]), asserting it was installed.
pub fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/test.sh, which installs the MCP test clients and servers",
        path.display()
    );
    path
}

/// The `souz` binary built next to this test (or `SOUZ_BIN`).
pub fn souz_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("SOUZ_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test-binary> -> target/<profile>/souz
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let bin = dir.join(format!("souz{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} does not exist: build the workspace first (cargo build) or set SOUZ_BIN",
        bin.display()
    );
    bin
}

/// A `souz` command with `SOUZ_HOME` set and the caller's overrides cleared.
pub fn souz(home: &Path) -> Command {
    program_in(&souz_bin(), home)
}

/// `program` (a build of `souz`) with `SOUZ_HOME` set and the caller's overrides cleared.
pub fn program_in(program: &Path, home: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env("SOUZ_HOME", home)
        .env_remove("SOUZ_PORT")
        .env_remove("SOUZ_HOST")
        .env_remove("SOUZ_LOG")
        // No session bus: a daemon under test must never reach the person's real keyring
        // (tests that want one start their own).
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        // Tests never reach the internet: the default local embedding model is not
        // downloaded (memory recalls by words); a test that wants a download serves it.
        .env("SOUZ_NO_MODEL_DOWNLOADS", "1")
        .stdin(Stdio::null());
    command
}

/// A response read off the wire.
#[derive(Debug)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Raw head (status line and headers).
    pub head: String,
    /// Body as text.
    pub body: String,
}

impl HttpResponse {
    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("body is not JSON ({error}): {}", self.body))
    }
}

/// Sends one HTTP/1.1 request over a fresh connection (`Connection: close`).
pub fn http(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {address}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method != "GET" {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(HttpResponse {
        status,
        head: head.to_owned(),
        body,
    })
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// A running `souz serve` with its own temporary Souz home and user home.
pub struct Daemon {
    /// The Souz home (`SOUZ_HOME`).
    pub home: tempfile::TempDir,
    /// The user's home (`HOME`, what `~` means to tools); separate from the Souz home so tools
    /// do not see it as protected.
    pub user: tempfile::TempDir,
    /// `host:port` the daemon listens on.
    pub address: String,
    /// The bearer token.
    pub token: String,
    child: Option<Child>,
}

impl Daemon {
    /// Starts `souz serve` on a free port and waits until it is healthy.
    pub fn start() -> Self {
        Self::start_with(|_| {})
    }

    /// Like [`Daemon::start`], letting the caller adjust the command first.
    pub fn start_with(prepare: impl FnOnce(&mut Command)) -> Self {
        let home = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
        Self::start_in(home, prepare)
    }

    /// Starts `souz serve` in an existing Souz home, with a fresh user home.
    pub fn start_in(home: tempfile::TempDir, prepare: impl FnOnce(&mut Command)) -> Self {
        let user = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
        Self::start_with_homes(home, user, prepare)
    }

    /// Starts a stopped daemon again, with the same homes.
    pub fn restart(stopped: Stopped) -> Self {
        Self::start_with_homes(stopped.home, stopped.user, |_| {})
    }

    /// Like [`Daemon::restart`], letting the caller adjust the command (environment) again.
    pub fn restart_with(stopped: Stopped, prepare: impl FnOnce(&mut Command)) -> Self {
        Self::start_with_homes(stopped.home, stopped.user, prepare)
    }

    /// Starts `program serve` (another build of `souz`, e.g. one with test-only features) with
    /// fresh homes.
    pub fn start_program(program: &Path) -> Self {
        let home = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
        let user = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
        Self::start_with_program(home, user, program, |_| {})
    }

    fn start_with_homes(
        home: tempfile::TempDir,
        user: tempfile::TempDir,
        prepare: impl FnOnce(&mut Command),
    ) -> Self {
        Self::start_with_program(home, user, &souz_bin(), prepare)
    }

    fn start_with_program(
        home: tempfile::TempDir,
        user: tempfile::TempDir,
        program: &Path,
        prepare: impl FnOnce(&mut Command),
    ) -> Self {
        let _ = std::fs::remove_file(home.path().join("daemon.json"));
        let user_home = user.path().to_path_buf();
        let mut command = program_in(program, home.path());
        command
            .arg("serve")
            .env("HOME", &user_home)
            .env("SOUZ_PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        prepare(&mut command);
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("spawn souz: {error}"));
        let info = wait_for_daemon_file(home.path(), Duration::from_secs(20));
        let address = info.trim_start_matches("http://").to_owned();
        let token = souz_client::Home::new(home.path())
            .operator_token()
            .unwrap_or_default();
        let daemon = Self {
            home,
            user,
            address,
            token,
            child: Some(child),
        };
        daemon.wait_healthy(Duration::from_secs(20));
        daemon
    }

    fn wait_healthy(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(response) = http(&self.address, "GET", "/health", &[], b"")
                && response.status == 200
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("daemon at {} did not become healthy", self.address);
    }

    /// The folder the daemon uses as the user's home (`~`).
    pub fn user_home(&self) -> PathBuf {
        self.user.path().to_path_buf()
    }

    /// A `souz` CLI command pointed at this daemon.
    pub fn cli(&self) -> Command {
        let mut command = souz(self.home.path());
        command.env("HOME", self.user_home());
        command
    }

    /// The typed client of this daemon, connected as every client connects: found through
    /// `daemon.json` and the token file, after the daemon proved its identity.
    pub async fn client(&self) -> souz_client::DaemonClient {
        let home = souz_client::Home::new(self.home.path());
        souz_client::DaemonClient::discover(&home, || format!("http://{}", self.address))
            .await
            .unwrap_or_else(|error| panic!("souz-client cannot connect: {error}"))
    }

    /// POST JSON with the bearer token.
    pub fn post(&self, path: &str, body: &serde_json::Value) -> HttpResponse {
        self.send_json("POST", path, body)
    }

    /// PATCH JSON with the bearer token.
    pub fn patch(&self, path: &str, body: &serde_json::Value) -> HttpResponse {
        self.send_json("PATCH", path, body)
    }

    /// PUT JSON with the bearer token.
    pub fn put(&self, path: &str, body: &serde_json::Value) -> HttpResponse {
        self.send_json("PUT", path, body)
    }

    fn send_json(&self, method: &str, path: &str, body: &serde_json::Value) -> HttpResponse {
        let auth = format!("Bearer {}", self.token);
        let body = body.to_string();
        http(
            &self.address,
            method,
            path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        )
        .unwrap_or_else(|error| panic!("{method} {path}: {error}"))
    }

    /// Polls `GET path` until `done` holds for its JSON body (30 s at most).
    pub fn wait_until(
        &self,
        path: &str,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let body = self.get(path).json();
            if done(&body) {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "{path} never reached the expected state: {body}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// GET with the bearer token.
    pub fn get(&self, path: &str) -> HttpResponse {
        let auth = format!("Bearer {}", self.token);
        http(&self.address, "GET", path, &[("Authorization", &auth)], b"")
            .unwrap_or_else(|error| panic!("GET {path}: {error}"))
    }

    /// The whole replay of `chat`, page by page: seq → event type.
    pub fn chat_events(&self, chat: &str) -> std::collections::BTreeMap<i64, String> {
        let mut events = std::collections::BTreeMap::new();
        let mut after = 0;
        loop {
            let page = self
                .get(&format!(
                    "/v1/chats/{chat}/events?afterSeq={after}&limit=500"
                ))
                .json();
            let items = page["items"].as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                return events;
            }
            for item in items {
                let seq = item["seq"]
                    .as_i64()
                    .unwrap_or_else(|| panic!("a replayed event without a seq: {item}"));
                events.insert(seq, item["type"].as_str().unwrap_or_default().to_owned());
                after = seq;
            }
        }
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends `signal` (e.g. "TERM", "INT", "KILL") and waits for the exit.
    pub fn stop(mut self, signal: &str) -> Stopped {
        let child = self
            .child
            .take()
            .unwrap_or_else(|| panic!("already stopped"));
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap_or_else(|error| panic!("kill: {error}"));
        assert!(sent.success());
        self.stopped(child, &format!("after SIG{signal}"))
    }

    /// Waits (30 s at most) for the daemon to exit by itself, e.g. at a crash point armed by
    /// its environment, without signalling it.
    pub fn exited(mut self) -> Stopped {
        let child = self
            .child
            .take()
            .unwrap_or_else(|| panic!("already stopped"));
        self.stopped(child, "by itself")
    }

    fn stopped(mut self, mut child: Child, how: &str) -> Stopped {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
                break status;
            }
            assert!(Instant::now() < deadline, "souz did not exit {how}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        let fresh = || tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
        let home = std::mem::replace(&mut self.home, fresh());
        let user = std::mem::replace(&mut self.user, fresh());
        Stopped {
            status,
            stderr,
            home,
            user,
        }
    }
}

/// A daemon after it exited.
pub struct Stopped {
    /// How it exited.
    pub status: ExitStatus,
    /// Everything it wrote to stderr.
    pub stderr: String,
    /// Its Souz home, kept alive for inspection or a restart.
    pub home: tempfile::TempDir,
    /// Its user home.
    pub user: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits until `daemon.json` appears in `home`; returns the URL in it.
pub fn wait_for_daemon_file(home: &Path, timeout: Duration) -> String {
    let home = souz_client::Home::new(home);
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(info) = home.daemon_info() {
            return info.url;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("{} did not appear", home.daemon_file().display());
}

/// A memory figure of process `pid` in KiB, from `/proc/PID/status` (Linux): `field` is a name
/// there such as `"VmRSS"` (all resident memory) or `"RssAnon"` (its anonymous part); `None`
/// when the process or the field is not there.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// A small deterministic generator for randomised tests (xorshift64*): the seed is printed by
/// the test, so a failing run can be replayed with it.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed` (an even seed is made odd: xorshift never leaves 0).
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// The seed in environment variable `name`, or one taken from the clock.
    pub fn seed_from_env(name: &str) -> u64 {
        env_number(name).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |elapsed| elapsed.as_nanos() as u64)
                | 1
        })
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

/// The number in environment variable `name`, if it holds one.
pub fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
}
