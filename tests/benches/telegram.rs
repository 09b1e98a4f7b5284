//! The Telegram channel of the real `souz` daemon (issue 41, Performance), against the fake Bot
//! API and a fake model on loopback:
//!
//! - Press to tool start: the agent of the linked account's chat calls `SendMessageToChannel`
//!   (which asks), the approval arrives with its buttons, and the bench presses Approve. The
//!   fake server measures, on its own clock, from the moment its `getUpdates` answer hands the
//!   press out to the moment the approved tool's message reaches its `sendMessage`: the
//!   daemon's whole path (the poll's answer read, the handle taken, the decision stored, the
//!   waiting call woken, the tool run and its request). Aim: < 50 ms. Median, p95 and max of
//!   [`ROUNDS`] presses are printed.
//! - Idle with Telegram enabled: with 30 s long polls, a window of [`IDLE_SECONDS`] s inside
//!   one poll; printed are the daemon's CPU ticks over it (`/proc/<pid>/stat` utime + stime;
//!   aim 0), the `getUpdates` calls made during it (aim 0), the long polls held (aim 1) and
//!   the daemon's TCP connections to the Bot API (the poll's, plus a pooled keep-alive one
//!   from the last send, if any).
//!
//! Run: `scripts/bench.sh telegram` (release binary), or with any build:
//! `SOUZ_BIN=target/debug/souz cargo bench -p souz-e2e --bench telegram`.

#![allow(clippy::expect_used, clippy::panic, clippy::print_stdout)] // a benchmark may stop loudly

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use souz_e2e::Daemon;
use souz_testkit::telegram::FakeTelegram;
use souz_testkit::{FakeServer, openai};

const TOKEN: &str = "4242:bench-bot-token-0123456789";
const ME: i64 = 7;
/// Approve presses measured.
const ROUNDS: usize = 20;
/// The idle window, in seconds.
const IDLE_SECONDS: u64 = 10;
/// One long poll's wait, in seconds.
const POLL_SECONDS: u64 = 30;

/// The daemon's CPU time in clock ticks (utime + stime of `/proc/<pid>/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/<pid>/stat");
    // Fields after the command's closing parenthesis, from field 3 (state) on.
    let rest = stat.rsplit_once(')').expect("a stat line").1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields[11].parse().expect("utime");
    let stime: u64 = fields[12].parse().expect("stime");
    utime + stime
}

/// The daemon's established TCP connections to `port` on loopback (its socket inodes matched
/// against `/proc/<pid>/net/tcp`).
fn connections_to(pid: u32, port: u16) -> usize {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/<pid>/fd")
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            target
                .strip_prefix("socket:[")
                .and_then(|rest| rest.strip_suffix(']'))
                .map(str::to_owned)
        })
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).expect("net/tcp");
    let remote = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 9
                && fields[2].ends_with(&remote)
                && fields[3] == "01"
                && inodes.contains(fields[9])
        })
        .count()
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index]
}

/// A daemon over the fakes, with the account linked.
fn linked_daemon(
    runtime: &tokio::runtime::Runtime,
    telegram: &FakeTelegram,
    model: &FakeServer,
) -> Daemon {
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nopenai_base_url = \"{}/v1\"\n\n[agent]\ndefault_agent = \"skills\"\n\n\
             [memory]\ncapture = false\n\n[channels.telegram]\nenabled = true\n\
             api_url = \"{}\"\npoll_seconds = {POLL_SECONDS}\n",
            model.url(),
            telegram.url()
        ),
    )
    .expect("config.toml");
    let daemon = Daemon::start_in(home, |command| {
        command
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("OPENAI_API_KEY", "sk-bench-key")
            .env("SOUZ_LOG", "warn");
    });
    let link = daemon
        .cli()
        .args(["telegram", "link"])
        .output()
        .expect("souz telegram link");
    let command = String::from_utf8_lossy(&link.stdout)
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("/start "))
        .expect("a /start command")
        .to_owned();
    telegram.push_text(ME, &command);
    let sent = runtime.block_on(telegram.wait_for_sent(1));
    assert!(sent[0].text.starts_with("Linked"), "{sent:?}");
    daemon
}

/// Presses Approve [`ROUNDS`] times; the press-to-tool latencies in milliseconds, sorted.
fn press_to_tool(
    runtime: &tokio::runtime::Runtime,
    telegram: &FakeTelegram,
    model: &FakeServer,
) -> Vec<f64> {
    let mut latencies = Vec::new();
    for round in 0..ROUNDS {
        let text = format!("ping {round}");
        let arguments = json!({
            "skillId": "SendMessageToChannel",
            "arguments": {"channelType": "telegram", "channelId": ME.to_string(), "text": text},
        });
        model.push(
            openai::CHAT_PATH,
            openai::tool_calls(&[("s1", "RunSkillCommand", &arguments.to_string())], 2),
        );
        model.push(openai::CHAT_PATH, openai::text(&["done"]));
        let before = telegram.sent().len();
        telegram.push_text(ME, &format!("send ping {round}"));
        let asked = runtime.block_on(telegram.wait_for_sent(before + 1));
        let approve = asked[before].buttons.first().expect("buttons").clone();
        let press = telegram.push_press(ME, &approve);
        let sent = runtime.block_on(telegram.wait_for_sent(before + 2));
        assert_eq!(sent[before + 1].text, text, "the tool's message");
        let handed = telegram.handed_at(press).expect("the press was handed out");
        let arrived = telegram.sent_times()[before + 1];
        latencies.push(arrived.duration_since(handed).as_secs_f64() * 1000.0);
        let done = runtime.block_on(telegram.wait_for_sent(before + 3));
        assert_eq!(done[before + 2].text, "done");
    }
    latencies.sort_by(f64::total_cmp);
    latencies
}

/// The idle window: CPU ticks, polls made, polls held, connections.
fn idle(daemon: &Daemon, telegram: &FakeTelegram) {
    // Start right after a poll began, so the window lies inside it.
    let began = telegram.calls("getUpdates");
    let deadline = Instant::now() + Duration::from_secs(POLL_SECONDS + 15);
    while telegram.calls("getUpdates") == began || telegram.polls_held() != 1 {
        assert!(Instant::now() < deadline, "no new long poll");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    let pid = daemon.pid();
    let port: u16 = telegram
        .url()
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .expect("the fake's port");
    let (ticks, polls) = (cpu_ticks(pid), telegram.calls("getUpdates"));
    std::thread::sleep(Duration::from_secs(IDLE_SECONDS));
    let ticks = cpu_ticks(pid) - ticks;
    let polls = telegram.calls("getUpdates") - polls;
    println!(
        "telegram idle: {ticks} CPU ticks of the daemon (utime+stime, 1 tick = 10 ms) over \
         {IDLE_SECONDS} s inside one {POLL_SECONDS} s long poll (aim 0); getUpdates calls \
         during it: {polls} (aim 0); long polls held: {} (aim 1); TCP connections to the Bot \
         API: {}",
        telegram.polls_held(),
        connections_to(pid, port)
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let telegram = runtime.block_on(FakeTelegram::start(TOKEN));
    let model = runtime.block_on(FakeServer::start());
    let daemon = linked_daemon(&runtime, &telegram, &model);
    let latencies = press_to_tool(&runtime, &telegram, &model);
    println!(
        "telegram press to tool: Approve handed out by getUpdates -> the approved \
         SendMessageToChannel's sendMessage arrives, measured by the fake Bot API: median \
         {:.2} ms, p95 {:.2} ms, max {:.2} ms of {ROUNDS} (aim < 50 ms)",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.95),
        percentile(&latencies, 1.0)
    );
    idle(&daemon, &telegram);
    let stopped = daemon.stop("TERM");
    assert!(
        !stopped.stderr.contains(TOKEN),
        "the token never reaches the log"
    );
}
