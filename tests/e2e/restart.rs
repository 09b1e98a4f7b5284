//! "Restart Souz" in `souz serve`: `POST /v1/restart` stops the runtime and starts a new one in
//! the same process, on the same address, with `config.toml` read again.

use std::time::{Duration, Instant};

use serde_json::json;
use souz_e2e::Daemon;

#[test]
fn restart_applies_restart_bound_settings_in_place() {
    let daemon = Daemon::start();
    let pid = daemon.pid();
    let document = daemon.get("/v1/config").json();
    let saved = daemon.patch(
        "/v1/config",
        &json!({
            "set": [{"section": "server", "key": "max_connections", "value": 128}],
            "revision": document["revision"],
        }),
    );
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert_eq!(
        saved.json()["restartRequired"],
        json!(["server.max_connections"])
    );
    let pending = daemon.get("/v1/config").json();
    assert_eq!(pending["pendingRestart"], json!(["server.max_connections"]));

    let restarting = daemon.post("/v1/restart", &json!({}));
    assert_eq!(restarting.status, 200, "{}", restarting.body);
    assert_eq!(restarting.json()["restarting"], true);

    // The new runtime answers on the same address, in the same process, with the file's
    // configuration: nothing waits for a restart any more.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = souz_e2e::http(
            &daemon.address,
            "GET",
            "/v1/config",
            &[("Authorization", &format!("Bearer {}", daemon.token))],
            b"",
        );
        let body: Option<serde_json::Value> = answer
            .ok()
            .filter(|answer| answer.status == 200)
            .and_then(|answer| serde_json::from_str(&answer.body).ok());
        if body.is_some_and(|body| body["pendingRestart"] == json!([])) {
            break;
        }
        assert!(Instant::now() < deadline, "the daemon did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(daemon.pid(), pid);
    let health = daemon.get("/health").json();
    assert_eq!(health["status"], "ok", "{health}");

    // It still stops cleanly on a signal afterwards.
    let stopped = daemon.stop("TERM");
    assert!(stopped.status.success(), "{:?}", stopped.status);
}
