//! `souz keys`: a key set from standard input is stored (only its hint printed or listed),
//! bad input fails clearly without touching the stored key, `rm` deletes it, and `test` makes
//! a real request through the (fake) provider with the key; the Brave Search service key goes
//! through the same commands.

use std::io::Write;
use std::process::{Output, Stdio};

use souz_e2e::Daemon;
use souz_testkit::openai;

use crate::chats::{COMPLETIONS, daemon_configured, provider};

/// `souz keys ARGS` with `input` on standard input.
fn keys(daemon: &Daemon, args: &[&str], input: &str) -> Output {
    let mut child = daemon
        .cli()
        .arg("keys")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn keys_are_set_from_stdin_listed_by_hint_and_removed() {
    let daemon = Daemon::start();
    let key = "sk-e2e-cli-secret-0123456789wxyz";

    let listed = keys(&daemon, &["list"], "");
    assert!(listed.status.success(), "{listed:?}");
    assert!(!text(&listed.stdout).contains("openai"), "{listed:?}");

    let set = keys(&daemon, &["set", "openai"], &format!("{key}\n"));
    assert!(set.status.success(), "{set:?}");
    let said = text(&set.stdout) + &text(&set.stderr);
    assert!(said.contains("...wxyz"), "{said}");
    assert!(!said.contains(key), "the key is never echoed: {said}");

    let listed = keys(&daemon, &["list"], "");
    let shown = text(&listed.stdout);
    assert!(
        shown.contains("openai") && shown.contains("...wxyz"),
        "{shown}"
    );
    assert!(!shown.contains(key), "{shown}");
    let json = keys(&daemon, &["list", "--json"], "");
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["items"][0]["provider"], "openai");
    assert_eq!(json["items"][0]["source"], "stored");

    // No key on stdin: a clear error, and the stored key stays.
    let empty = keys(&daemon, &["set", "openai"], "  \n");
    assert!(!empty.status.success(), "{empty:?}");
    assert!(
        text(&empty.stderr).contains("no key on standard input"),
        "{empty:?}"
    );
    // An unknown provider: the daemon's error, nothing stored.
    let unknown = keys(&daemon, &["set", "nosuch"], "sk-other-key-1234\n");
    assert!(!unknown.status.success(), "{unknown:?}");
    assert!(text(&unknown.stderr).contains("nosuch"), "{unknown:?}");
    let listed = text(&keys(&daemon, &["list"], "").stdout);
    assert!(
        listed.contains("...wxyz") && !listed.contains("nosuch"),
        "{listed}"
    );

    let removed = keys(&daemon, &["rm", "openai"], "");
    assert!(removed.status.success(), "{removed:?}");
    let listed = text(&keys(&daemon, &["list"], "").stdout);
    assert!(!listed.contains("openai"), "{listed}");
    // Idempotent.
    assert!(keys(&daemon, &["rm", "openai"], "").status.success());

    // The Brave Search key is a service key of the daemon: same commands, its own routes.
    let brave = "brave-e2e-secret-0123456789qrst";
    let set = keys(&daemon, &["set", "Brave"], &format!("{brave}\n"));
    assert!(set.status.success(), "{set:?}");
    assert!(!text(&set.stdout).contains(brave), "{set:?}");
    let listed = text(&keys(&daemon, &["list"], "").stdout);
    assert!(
        listed.contains("brave") && listed.contains("...qrst") && !listed.contains(brave),
        "{listed}"
    );
    let json = keys(&daemon, &["list", "--json"], "");
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["services"][0]["name"], "brave", "{json}");
    assert!(keys(&daemon, &["rm", "brave"], "").status.success());
    let listed = text(&keys(&daemon, &["list"], "").stdout);
    assert!(!listed.contains("brave"), "{listed}");
}

#[test]
fn a_key_is_tested_with_a_real_request_and_a_refusal_is_a_clear_failure() {
    let setup = provider();
    let daemon = daemon_configured(&setup, "", |_| {});
    let key = "sk-e2e-test-route-0123456789abcd";

    // No key at all: the daemon says so.
    let missing = keys(&daemon, &["test", "openai"], "");
    assert!(!missing.status.success(), "{missing:?}");
    assert!(
        text(&missing.stderr).to_lowercase().contains("key"),
        "{missing:?}"
    );

    assert!(keys(&daemon, &["set", "openai"], key).status.success());
    setup.provider.push(COMPLETIONS, openai::text(&["pong"]));
    let works = keys(&daemon, &["test", "openai"], "");
    assert!(works.status.success(), "{works:?}");
    assert!(text(&works.stdout).contains("works"), "{works:?}");
    let request = setup.provider.requests_to(COMPLETIONS).remove(0);
    assert_eq!(
        request.headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {key}").as_str())
    );

    setup.provider.push(
        COMPLETIONS,
        openai::error(401, "Incorrect API key provided"),
    );
    let refused = keys(&daemon, &["test", "openai"], "");
    assert!(!refused.status.success(), "{refused:?}");
    let said = text(&refused.stderr);
    assert!(said.contains("did not work"), "{said}");
    assert!(
        !said.contains(key) && !text(&refused.stdout).contains(key),
        "{said}"
    );
}
