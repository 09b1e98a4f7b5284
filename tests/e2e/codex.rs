//! `souz login codex` against fake sign-in and Responses servers (their real wire formats):
//! the CLI shows the page and the code, the daemon polls and exchanges, the command says when
//! it is signed in; then a chat turn is answered by the Responses API with the account's token
//! and account header; `souz logout codex` forgets the session.

use std::process::Output;
use std::time::Duration;

use serde_json::json;
use souz_e2e::Daemon;
use souz_testkit::codex::{self, DEVICE_TOKEN_PATH, RESPONSES_PATH, TOKEN_PATH, USER_CODE_PATH};

use crate::chats::{Setup, events, new_chat, post, provider, wait_event};

const ACCOUNT: &str = "acct-e2e";

/// A daemon whose Codex endpoints are the fake's, with Codex as the default model.
fn daemon(setup: &Setup) -> Daemon {
    let home = tempfile::tempdir().unwrap();
    let url = setup.provider.url();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\ncodex_base_url = \"{url}/backend-api/codex\"\ncodex_auth_url = \"{url}\"\n\
             default_model = \"codex/gpt-5.2-codex\"\n\n[agent]\ndefault_agent = \"skills\"\n"
        ),
    )
    .unwrap();
    Daemon::start_in(home, |_| {})
}

fn run(daemon: &Daemon, args: &[&str]) -> Output {
    daemon.cli().args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn souz_login_codex_signs_in_and_a_turn_is_answered_through_the_account() {
    let setup = provider();
    let fake = &setup.provider;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let exp = i64::try_from(now).unwrap() + 3600;
    let access = codex::access_token("e2e", ACCOUNT, exp);
    fake.push(USER_CODE_PATH, codex::user_code("dev-e2e", "WXYZ-5678", 0));
    fake.push(DEVICE_TOKEN_PATH, codex::pending());
    fake.push(DEVICE_TOKEN_PATH, codex::pending());
    fake.push(
        DEVICE_TOKEN_PATH,
        codex::authorized("code-e2e", "verifier-e2e"),
    );
    fake.push(
        TOKEN_PATH,
        codex::tokens(
            &codex::id_token("e2e@example.com", ACCOUNT),
            &access,
            "rt-e2e",
        ),
    );
    fake.set_fallback(RESPONSES_PATH, codex::text(&["Hello from ", "Codex"]));
    let daemon = daemon(&setup);

    // Not signed in: the state says so.
    let state = daemon.get("/v1/me/provider-logins/codex");
    assert_eq!(state.status, 200, "{}", state.body);
    assert_eq!(state.json()["state"], "signed_out");

    let login = run(&daemon, &["login", "codex"]);
    let said = text(&login.stdout);
    assert!(login.status.success(), "{login:?}");
    assert!(said.contains("WXYZ-5678"), "{said}");
    assert!(
        said.contains(&format!("{}/codex/device", fake.url())),
        "{said}"
    );
    assert!(said.contains("e2e@example.com"), "{said}");
    assert!(
        !said.contains("rt-e2e") && !said.contains(&access),
        "{said}"
    );
    let state = daemon.get("/v1/me/provider-logins/codex").json();
    assert_eq!(state["state"], "signed_in", "{state}");
    assert_eq!(state["account"], "e2e@example.com");
    // The session is not a key: the key list does not show it.
    let keys = daemon.get("/v1/me/provider-keys").json();
    assert_eq!(keys["items"], json!([]), "{keys}");
    // No other program's credential file was written.
    assert!(!daemon.user_home().join(".codex").exists());

    let chat = new_chat(&daemon);
    let posted = post(&daemon, &chat, json!({"content": "Say hello"}));
    assert_eq!(posted.status, 200, "{}", posted.body);
    wait_event(&daemon, &chat, "execution.finished");
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert_eq!(
        messages["items"][1]["content"], "Hello from Codex",
        "{messages}"
    );
    let sent = fake.requests_to(RESPONSES_PATH);
    let last = sent.last().expect("a Responses request");
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {access}").as_str())
    );
    assert_eq!(last.header("chatgpt-account-id"), Some(ACCOUNT));
    assert_eq!(last.json()["model"], "gpt-5.2-codex");

    let logout = run(&daemon, &["logout", "codex"]);
    assert!(logout.status.success(), "{logout:?}");
    let state = daemon.get("/v1/me/provider-logins/codex").json();
    assert_eq!(state["state"], "signed_out", "{state}");
    // Signed out, a turn says to sign in again instead of calling the API.
    let before = fake.requests_to(RESPONSES_PATH).len();
    let chat = new_chat(&daemon);
    let posted = post(&daemon, &chat, json!({"content": "Again"}));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let told = loop {
        let everything = format!(
            "{} {} {}",
            posted.body,
            serde_json::Value::Array(events(&daemon, &chat)),
            daemon.get(&format!("/v1/chats/{chat}/messages")).body
        );
        if everything.contains("souz login codex") {
            break everything;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never told to sign in: {everything}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!told.contains("rt-e2e"), "{told}");
    assert_eq!(fake.requests_to(RESPONSES_PATH).len(), before);
}
