//! Recovery mode on a real socket: only the UI, health and the config routes answer; nothing
//! is written until a valid text is saved, and then recovery ends with its configuration.

use serde_json::json;

use super::*;
use crate::gateway::recovery::RecoveryEnd;
use crate::testing::TestHome;

const BAD: &str = "[server]\nport = \"x\"\n\n[log]\nlevel = \"shout\"\n";

type Served = tokio::task::JoinHandle<std::io::Result<RecoveryEnd>>;

/// Recovery mode over `BAD` on a free loopback port: its URL, the config file, the server task
/// and what stops it.
async fn start_recovery(
    home: &TestHome,
) -> (
    String,
    std::path::PathBuf,
    Served,
    tokio::sync::oneshot::Sender<()>,
) {
    let paths = home.flat_paths();
    paths.ensure_home().unwrap();
    let file = paths.config_file();
    std::fs::write(&file, BAD).unwrap();
    let problems = Config::parse(paths.clone(), &file, BAD, &|_| None).unwrap_err();
    let mut base = Config::defaults(paths);
    base.server.port = 0;
    let gateway = Gateway::bind(&base.server).await.unwrap();
    let url = format!("http://{}", gateway.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = crate::tasks::spawn_in_test(async move {
        gateway
            .serve_recovery(base, problems, "operator-token".to_owned(), async move {
                let _ = stopped.await;
                "test".to_owned()
            })
            .await
    });
    (url, file, served, stop)
}

#[tokio::test]
async fn recovery_serves_config_only_and_ends_with_a_valid_save() {
    let home = TestHome::new();
    let (url, file, served, stop) = start_recovery(&home).await;
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: &str, token: Option<&str>| {
        let request = http.request(method, format!("{url}{path}"));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    };

    let health: Value = call(reqwest::Method::GET, "/health", None)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "recovery");
    let lines: Vec<_> = health["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|problem| (problem["line"].clone(), problem["column"].clone()))
        .collect();
    assert_eq!(
        lines,
        vec![(json!(2), json!(8)), (json!(5), json!(9))],
        "{health}"
    );
    let page = call(reqwest::Method::GET, "/app/", None)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);

    let anonymous = call(reqwest::Method::GET, "/v1/config", None)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let wrong = call(reqwest::Method::GET, "/v1/config", Some("nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let document: Value = call(reqwest::Method::GET, "/v1/config", Some("operator-token"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["text"], BAD);
    assert_eq!(document["recovery"], true);
    let other = call(reqwest::Method::GET, "/v1/chats", Some("operator-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 503);

    // Still invalid: every problem comes back and the file is untouched.
    let still_bad = call(reqwest::Method::PUT, "/v1/config", Some("operator-token"))
        .json(&json!({"text": "[log]\nlevel = \"shout\"\n", "revision": document["revision"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(still_bad.status(), 400);
    let rejected: Value = still_bad.json().await.unwrap();
    assert_eq!(rejected["problems"][0]["line"], 2, "{rejected}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), BAD);

    // A valid text is written (with a backup) and ends recovery with its configuration.
    let good = "[log]\nlevel = \"debug\"\n";
    let saved = call(reqwest::Method::PUT, "/v1/config", Some("operator-token"))
        .json(&json!({"text": good, "revision": document["revision"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 200, "{:?}", saved.text().await);
    let ended = served.await.unwrap().unwrap();
    let RecoveryEnd::Fixed(config) = ended else {
        panic!("recovery did not end with the configuration: {ended:?}");
    };
    assert_eq!(config.log.level, "debug");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), good);
    assert_eq!(
        std::fs::read_to_string(file.with_extension("toml.bak")).unwrap(),
        BAD
    );
    drop(stop);
}

#[tokio::test]
async fn recovery_proves_its_identity_and_signs_the_web_ui_in() {
    use souz_protocol::identity;
    let home = TestHome::new();
    let (url, _file, _served, stop) = start_recovery(&home).await;
    let http = reqwest::Client::new();
    let host = url.trim_start_matches("http://").to_owned();

    // The operator token's key gets a proof a client can check; another key gets 404.
    let digest = identity::digest("operator-token");
    let nonce = identity::new_nonce().unwrap();
    let answer = http
        .get(format!(
            "{url}/v1/identity?nonce={nonce}&key={}",
            identity::key_id(&digest)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    assert!(identity::verify(
        &digest,
        &nonce,
        &host,
        answer["proof"].as_str().unwrap()
    ));
    let stranger = identity::digest("another-token");
    let refused = http
        .get(format!(
            "{url}/v1/identity?nonce={nonce}&key={}",
            identity::key_id(&stranger)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 404);

    // A one-time code (operator token) is traded once, from the page, for the token.
    let anonymous = http
        .post(format!("{url}/v1/ui-codes"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let code: Value = http
        .post(format!("{url}/v1/ui-codes"))
        .bearer_auth("operator-token")
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let exchange = |origin: bool| {
        let request = http
            .post(format!("{url}/v1/ui-codes/exchange"))
            .json(&json!({"code": code["code"]}));
        if origin {
            request.header("origin", &url)
        } else {
            request
        }
    };
    assert_eq!(exchange(false).send().await.unwrap().status(), 401);
    let session: Value = exchange(true).send().await.unwrap().json().await.unwrap();
    assert_eq!(session["token"], "operator-token");
    assert_eq!(exchange(true).send().await.unwrap().status(), 401, "once");
    drop(stop);
}
