//! A confined command has no privileges, also when the daemon runs as root (as on the test
//! machines): every capability set is empty, `no_new_privs` is set, and no raw or packet
//! socket opens whatever the call's network, so a command cannot sniff the operator's token off
//! loopback. Where this kernel has no Landlock, each test checks that the command is refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use souz_core::sandbox::CommandRequest;
use souz_e2e::Daemon;

use crate::confinement::confined;
use crate::sandbox::landlock_works;

/// The interpreter the probes are written for (Debian's, outside every test home).
const PYTHON: &str = "/usr/bin/python3";

/// Tries every socket that sees or forges other programs' traffic; one line per socket.
const SOCKET_PROBE: &str = r#"
import errno, socket
ETH_P_ALL = 0x0300  # htons(3)
probes = [
    ("packet-raw", socket.AF_PACKET, socket.SOCK_RAW, ETH_P_ALL),
    ("packet-dgram", socket.AF_PACKET, socket.SOCK_DGRAM, ETH_P_ALL),
    ("inet-sock-packet", socket.AF_INET, 10, ETH_P_ALL),
    ("inet-raw-tcp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP),
    ("inet-raw-icmp", socket.AF_INET, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.IPPROTO_ICMP),
    ("inet6-raw-tcp", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_TCP),
]
for name, family, kind, protocol in probes:
    try:
        socket.socket(family, kind, protocol).close()
        print("opened", name)
    except OSError as error:
        print("refused", name, errno.errorcode.get(error.errno, error.errno))
"#;

/// The status lines of `/proc/self/status` that name privileges, as `name value`.
fn privilege_lines(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter(|line| line.starts_with("Cap") || line.starts_with("NoNewPrivs"))
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_owned(), value.trim().to_owned()))
        .collect()
}

fn python_available() -> bool {
    let available = std::path::Path::new(PYTHON).exists();
    if !available {
        eprintln!("{PYTHON} is missing: the socket probes cannot run here");
    }
    available
}

#[tokio::test]
async fn a_confined_command_has_no_capabilities_and_opens_no_raw_or_packet_socket() {
    if !python_available() {
        return;
    }
    let fixture = confined(|_| {});
    let probe = fixture.home.join("work/probe.py");
    std::fs::write(&probe, SOCKET_PROBE).unwrap();
    // The interpreter, then a program it executes (`grep`): an `execve` as user 0 gets no
    // capability back.
    let script = format!(
        "{PYTHON} {probe}; grep -E '^(Cap|NoNewPrivs)' /proc/self/status",
        probe = probe.display()
    );
    for network in [false, true] {
        let mut request = CommandRequest::shell(&script);
        request.network = network;
        let Some(outcome) = fixture.run(request).await else {
            return;
        };
        let stdout = &outcome.stdout.text;
        assert!(!stdout.contains("opened"), "network {network}: {outcome:?}");
        // EACCES is the system-call filter's answer (the missing capability would be EPERM):
        // the second layer holds by itself.
        assert_eq!(
            stdout
                .lines()
                .filter(|line| line.starts_with("refused ") && line.ends_with(" EACCES"))
                .count(),
            6,
            "network {network}: {outcome:?}"
        );
        let lines = privilege_lines(stdout);
        for name in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            assert!(
                lines
                    .iter()
                    .any(|(seen, value)| seen == name && value == "0000000000000000"),
                "{name} is not empty (network {network}): {stdout}"
            );
        }
        assert!(
            lines
                .iter()
                .any(|(seen, value)| seen == "NoNewPrivs" && value == "1"),
            "{stdout}"
        );
    }
}

/// Sniffs loopback for a few seconds; prints, in hex, every bearer token it saw (hex, so no
/// redaction of the tool's output can hide a capture).
const SNIFFER: &str = r#"
import socket, sys, time
try:
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    sniffer.bind(("lo", 0))
except OSError as error:
    print("sniffer refused", error.errno)
    sys.exit(0)
sniffer.settimeout(0.2)
print("sniffer opened")
seen = set()
deadline = time.time() + 4
while time.time() < deadline:
    try:
        frame = sniffer.recv(65535)
    except socket.timeout:
        continue
    start = frame.find(b"Bearer ")
    if start >= 0:
        seen.add(frame[start + 7:start + 7 + 256].split(b"\r")[0].hex())
for token in sorted(seen):
    print("captured", token)
"#;

#[test]
fn a_confined_command_cannot_sniff_the_operator_token_off_loopback() {
    if !python_available() {
        return;
    }
    let daemon = Daemon::start();
    let sniffer = daemon.user_home().join("sniffer.py");
    std::fs::write(&sniffer, SNIFFER).unwrap();
    let command = format!("{PYTHON} {}", sniffer.display());
    let response = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "RunCommand", "arguments": {"command": command}, "wait_ms": 300}),
    );
    if !landlock_works() {
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
    // The operator's requests cross loopback while the command runs.
    let running = Arc::new(AtomicBool::new(true));
    let talker = {
        let running = Arc::clone(&running);
        let address = daemon.address.clone();
        let auth = format!("Bearer {}", daemon.token);
        std::thread::spawn(move || {
            while running.load(Ordering::SeqCst) {
                let _ = souz_e2e::http(
                    &address,
                    "GET",
                    "/v1/approvals",
                    &[("Authorization", &auth)],
                    b"",
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve"}),
    );
    let ended = daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |call| {
        call["status"] == "succeeded" || call["status"] == "failed"
    });
    running.store(false, Ordering::SeqCst);
    talker.join().unwrap();
    let text = ended.to_string();
    let token_hex: String = daemon
        .token
        .bytes()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert!(!text.contains(&token_hex), "the token was sniffed: {text}");
    assert!(!text.contains("sniffer opened"), "{text}");
    assert!(text.contains("sniffer refused"), "{text}");
}
