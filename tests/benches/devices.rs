//! The public client protocol of the real `souz` daemon (issue 42, Performance), with a fake
//! model on loopback:
//!
//! - Submit to ack: a device's `message.submit` that starts a thread, from the frame sent to
//!   its `ack` read, on one socket ([`ROUNDS`] threads, each awaited to its end before the
//!   next). Aim: p99 < 5 ms. Median, p99 and max are printed.
//! - Idle devices: [`DEVICES`] sockets on as many chats, connected and replayed; over
//!   [`IDLE_SECONDS`] s the daemon's CPU ticks (`/proc/<pid>/stat` utime + stime; aim 0), and
//!   its resident memory per socket (RSS after minus before, divided; aim < 50 KB).
//!
//! Run: `scripts/bench.sh devices` (release binary), or with any build:
//! `SOUZ_BIN=target/debug/souz cargo bench -p souz-e2e --bench devices`.

#![allow(clippy::expect_used, clippy::panic, clippy::print_stdout)] // a benchmark may stop loudly

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use souz_e2e::{Daemon, status_kib};
use souz_testkit::{FakeServer, openai};
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// Threads submitted and timed.
const ROUNDS: usize = 200;
/// Idle sockets.
const DEVICES: usize = 100;
/// The idle window, in seconds.
const IDLE_SECONDS: u64 = 5;

type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/<pid>/stat");
    let rest = stat.rsplit_once(')').expect("a stat line").1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields[11].parse().expect("utime");
    let stime: u64 = fields[12].parse().expect("stime");
    utime + stime
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn new_chat(daemon: &Daemon) -> String {
    let response = daemon.post("/v1/chats", &json!({"title": "bench"}));
    assert_eq!(response.status, 201, "{}", response.body);
    response.json()["chat"]["id"]
        .as_str()
        .expect("an id")
        .to_owned()
}

fn device(daemon: &Daemon, chat: &str) -> Socket {
    let mut request = format!(
        "ws://{}/v1/chats/{chat}/ws?clientType=mobile_app",
        daemon.address
    )
    .into_client_request()
    .expect("a request");
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", daemon.token)
            .parse()
            .expect("a header"),
    );
    let (socket, _) = tungstenite::connect(request).expect("connected");
    socket
}

fn next(socket: &mut Socket) -> Value {
    loop {
        if let Message::Text(text) = socket.read().expect("a frame") {
            return serde_json::from_str(&text).expect("JSON");
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let model = runtime.block_on(FakeServer::start());
    for round in 0..ROUNDS {
        model.push(
            "/v1/chat/completions",
            openai::text(&[&format!("Answer {round}")]),
        );
    }
    let home = tempfile::tempdir().expect("a home");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nopenai_base_url = \"{}/v1\"\n\n[agent]\ndefault_agent = \"skills\"\n",
            model.url()
        ),
    )
    .expect("config");
    let daemon = Daemon::start_in(home, |command| {
        command.env("OPENAI_API_KEY", "sk-test-bench-key");
    });

    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat);
    let mut times = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let frame = json!({
            "kind": "message.submit", "chatId": chat, "requestId": format!("r-{round}"),
            "payload": {
                "device": {"userId": "u", "deviceId": "bench", "deviceType": "smartphone",
                           "capabilities": ["screen"]},
                "content": {"type": "text", "source": "text", "text": format!("Question {round}")}
            }
        });
        let started = Instant::now();
        socket
            .send(Message::Text(frame.to_string().into()))
            .expect("sent");
        let ack = loop {
            let answer = next(&mut socket);
            if answer["kind"] == "ack" {
                break answer;
            }
        };
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(ack["status"], "accepted", "{ack}");
        // The thread ends before the next one starts.
        while next(&mut socket)["kind"] != "event" {}
    }
    times.sort_by(f64::total_cmp);
    println!(
        "devices/submit_to_ack: {ROUNDS} threads, median {:.2} ms, p99 {:.2} ms, max {:.2} ms (aim p99 < 5 ms)",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.last().copied().unwrap_or_default(),
    );

    let pid = daemon.pid();
    let chats: Vec<String> = (0..DEVICES).map(|_| new_chat(&daemon)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let before = status_kib(pid, "VmRSS").expect("VmRSS");
    let sockets: Vec<Socket> = chats.iter().map(|chat| device(&daemon, chat)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let after = status_kib(pid, "VmRSS").expect("VmRSS");
    let ticks = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(IDLE_SECONDS));
    let idle_ticks = cpu_ticks(pid) - ticks;
    println!(
        "devices/idle: {DEVICES} sockets, {idle_ticks} CPU ticks in {IDLE_SECONDS} s (aim 0), \
         RSS +{} KiB = {:.1} KiB per socket (aim < 50 KB)",
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / DEVICES as f64,
    );
    drop(sockets);
}
