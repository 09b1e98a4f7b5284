//! A chat turn end to end on an in-process local model with no provider key: the daemon built
//! with `local-llm` (the default), the test model linked
//! into its home, `/v1/chats` and the stored events.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use souz_e2e::Daemon;

const PROFILE: &str = "smollm2-135m-instruct";

fn daemon() -> Daemon {
    let home = tempfile::tempdir().unwrap();
    let folder = home.path().join("models").join(PROFILE);
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(
        souz_core::testing::local_llm_model(),
        folder.join("SmolLM2-135M-Instruct.Q4_1.gguf"),
    )
    .unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\ndefault_model = \"local/{PROFILE}\"\nlocal_models = [\"local/{PROFILE}\"]\n\
             max_output_tokens = 64\nlocal_threads = 2\n\n[agent]\ndefault_agent = \"skills\"\n"
        ),
    )
    .unwrap();
    Daemon::start_in(home, |command| {
        for provider in souz_protocol::ProviderId::ALL {
            for variable in provider.key_variables() {
                command.env_remove(variable);
            }
        }
    })
}

fn events(daemon: &Daemon, chat: &str) -> Vec<Value> {
    daemon
        .get(&format!("/v1/chats/{chat}/events?limit=1000"))
        .json()["items"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_chat_turn_runs_on_a_local_model_without_any_key() {
    let daemon = daemon();
    let keys = daemon.get("/v1/me/provider-keys").json();
    assert_eq!(keys["items"], json!([]), "no provider key: {keys}");
    let created = daemon.post("/v1/chats", &json!({"title": "local"}));
    assert_eq!(created.status, 201, "{}", created.body);
    let chat = created.json()["chat"]["id"].as_str().unwrap().to_owned();
    let posted = daemon.post(
        &format!("/v1/chats/{chat}/messages"),
        &json!({"content": "Say hello in one short sentence."}),
    );
    assert_eq!(posted.status, 200, "{}", posted.body);
    // The model's first answer (on this 2-core machine under load, about a minute): a final
    // answer stored as the assistant's message, or a tool call the gate ran (the skills agent
    // always offers its core tools, and a 135M model often calls one; it may then keep
    // exploring for many calls, so the test does not wait for the turn's end). When the
    // 64-token limit cuts a tool call short, the turn ends with a plain explanation of the
    // limit: the assistant's message either way, and never the contract's JSON.
    let deadline = Instant::now() + Duration::from_secs(240);
    let answered = loop {
        let stored = events(&daemon, &chat);
        let started = stored
            .iter()
            .find(|event| event["type"] == "execution.started")
            .cloned();
        if let Some(answer) = stored.iter().find(|event| {
            event["type"] == "tool.call.finished"
                || event["type"] == "tool.call.failed"
                || event["type"] == "execution.finished"
                || event["type"] == "execution.failed"
        }) {
            break (started, answer.clone(), stored);
        }
        assert!(Instant::now() < deadline, "{stored:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let (started, answer, stored) = answered;
    let started = started.expect("the turn started");
    assert_eq!(started["payload"]["provider"], "LOCAL", "{started}");
    assert_eq!(started["payload"]["model"], format!("local/{PROFILE}"));
    assert_ne!(
        answer["type"], "execution.failed",
        "the turn on the local model failed: {stored:?}"
    );
    if answer["type"] == "execution.finished" {
        let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
        let last = messages["items"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["role"], "assistant", "{messages}");
        let text = last["content"].as_str().unwrap_or_default();
        assert!(!text.trim().is_empty(), "{messages}");
        assert!(
            !text.contains("\"type\""),
            "the contract's JSON is not shown: {text}"
        );
    } else {
        // The call went through the gate: started, then settled, under the chat's requester.
        let call = answer["payload"]["toolCallId"].clone();
        assert!(
            stored
                .iter()
                .any(|event| event["type"] == "tool.call.started"
                    && event["payload"]["toolCallId"] == call),
            "{stored:?}"
        );
    }
}

/// A mirror on loopback serving the real test model at `/<profile>/<file>`, 1 MiB every 20 ms
/// (about two seconds for the whole file), so a follower sees it arrive.
fn slow_mirror() -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Write};

    let model = std::sync::Arc::new(std::fs::read(souz_core::testing::local_llm_model()).unwrap());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let model = std::sync::Arc::clone(&model);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                let _ = reader.read_line(&mut first);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                if !first.starts_with(&format!("GET /{PROFILE}/SmolLM2-135M-Instruct.Q4_1.gguf ")) {
                    let _ =
                        stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
                    return;
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: application/octet-stream\r\n\r\n",
                    model.len()
                );
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for chunk in model.chunks(1 << 20) {
                    if stream.write_all(chunk).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }
    });
    address
}

/// `souz models pull` starts the download in the daemon and follows it to its end: progress
/// lines on stderr while it arrives, then the model's line, ready, with the pinned file in
/// place; `souz models rm` deletes it.
#[test]
fn souz_models_pull_follows_the_download_to_the_verified_file() {
    let address = slow_mirror();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nlocal_model_mirror = \"http://{address}\"\n\n\
             [sandbox]\nnetwork_allow_hosts = [\"127.0.0.1\"]\n"
        ),
    )
    .unwrap();
    let daemon = Daemon::start_in(home, |_| {});
    let output = daemon
        .cli()
        .args(["models", "pull", PROFILE])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(PROFILE) && stdout.contains("ready"),
        "{stdout}"
    );
    assert!(stderr.contains(&format!("fetching {PROFILE}")), "{stderr}");
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|line| line.trim_start().starts_with(char::is_numeric) && line.contains("% "))
        .collect();
    assert!(progress.len() >= 2, "progress while it arrives: {stderr}");
    let file = daemon
        .home
        .path()
        .join("models")
        .join(PROFILE)
        .join("SmolLM2-135M-Instruct.Q4_1.gguf");
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        std::fs::metadata(souz_core::testing::local_llm_model())
            .unwrap()
            .len()
    );

    let removed = daemon
        .cli()
        .args(["models", "rm", PROFILE])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{removed:?}");
    assert!(!file.exists());
}
