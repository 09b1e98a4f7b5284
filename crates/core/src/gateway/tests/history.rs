//! `/v1/history/undo/check` over a real write: it names the change an undo would take back and,
//! once the file changed outside Souz, the conflict with its three versions; it touches nothing,
//! and an undo without `force` then refuses too.

use serde_json::json;

use super::*;

fn post(f: &Fixture, path: &str, body: Value) -> Request<Body> {
    f.authed(path)
        .method("POST")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn an_undo_check_names_the_conflicts_and_touches_nothing() {
    let f = Fixture::new().await;
    let file = f
        .runtime
        .handle()
        .config()
        .paths
        .user_home()
        .join("checked.txt");
    let (status, call) = f
        .send(post(
            &f,
            "/v1/tool-calls",
            json!({"tool": "NewFile", "arguments": {"path": file, "text": "souz\n"}, "wait_ms": 0}),
        ))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{call}");
    let approval = call["approval_id"].as_str().unwrap();
    let (status, decided) = f
        .send(post(
            &f,
            &format!("/v1/approvals/{approval}/decision"),
            json!({"decision": "approve"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    let path = format!("/v1/tool-calls/{}", call["id"].as_str().unwrap());
    for _ in 0..500 {
        let (_, state) = f.send(f.authed(&path).body(Body::empty()).unwrap()).await;
        if state["status"] == "succeeded" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "souz\n");
    let selection = json!({"type": "call", "call_id": call["id"]});

    let (status, clean) = f
        .send(post(
            &f,
            "/v1/history/undo/check",
            json!({ "selection": selection }),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{clean}");
    assert_eq!(clean["changes"].as_array().unwrap().len(), 1, "{clean}");
    assert_eq!(clean["conflicts"], json!([]), "{clean}");
    assert!(file.exists(), "a check undid the write");

    std::fs::write(&file, "mine\n").unwrap();
    let (status, changed) = f
        .send(post(
            &f,
            "/v1/history/undo/check",
            json!({ "selection": selection }),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    let conflicts = changed["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{changed}");
    assert_eq!(conflicts[0]["path"], json!(file), "{changed}");
    assert_eq!(conflicts[0]["now"]["kind"], "file", "{changed}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");

    let (status, refused) = f
        .send(post(
            &f,
            "/v1/history/undo",
            json!({ "selection": selection }),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{refused}");
    assert_eq!(refused["undone"], json!([]), "{refused}");
    assert_eq!(refused["conflicts"].as_array().unwrap().len(), 1);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");

    let (status, unknown) = f
        .send(post(
            &f,
            "/v1/history/undo/check",
            json!({"selection": {"type": "turn", "execution_id": "no-such-turn"}}),
        ))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{unknown}");
}
