//! `/v1/models/local`: the profiles and their states, removing a model's file, and pulls that
//! are refused (no pinned checksum, no source, no such profile) without touching anything.

use super::*;

async fn call(f: &Fixture, method: &str, path: &str) -> (StatusCode, Value) {
    f.send(f.bare(method, path)).await
}

fn smollm2(list: &Value) -> Value {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["name"] == "smollm2-135m-instruct")
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn profiles_list_with_their_state_and_a_removed_file_is_missing() {
    let f = Fixture::new().await;
    let (status, list) = call(&f, "GET", "/v1/models/local").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    // The engine is there exactly when built with `local-llm` (the default).
    assert_eq!(
        list.get("engine").is_some(),
        cfg!(feature = "local-llm"),
        "{list}"
    );
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"qwen3-4b-instruct-2507"), "{names:?}");
    let model = smollm2(&list);
    assert_eq!(model["state"], "missing");
    assert_eq!(model["kind"], "chat");
    assert_eq!(model["pullable"], false, "no source configured");

    let dir = f
        .runtime
        .handle()
        .config()
        .paths
        .home()
        .join("models/smollm2-135m-instruct");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SmolLM2-135M-Instruct.Q4_1.gguf"), b"gguf").unwrap();
    std::fs::write(dir.join("SmolLM2-135M-Instruct.Q4_1.gguf.part"), b"gg").unwrap();
    let (_, list) = call(&f, "GET", "/v1/models/local").await;
    assert_eq!(smollm2(&list)["state"], "ready");

    let (status, removed) = call(&f, "DELETE", "/v1/models/local/smollm2-135m-instruct").await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(removed["state"], "missing");
    assert!(!dir.join("SmolLM2-135M-Instruct.Q4_1.gguf").exists());
    assert!(!dir.join("SmolLM2-135M-Instruct.Q4_1.gguf.part").exists());
}

#[tokio::test]
async fn pulls_without_a_checksum_or_a_source_are_refused_and_change_nothing() {
    let f = Fixture::new().await;
    let (status, body) = call(&f, "POST", "/v1/models/local/qwen3-4b-instruct-2507/pull").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("no pinned checksum"), "{message}");
    assert!(
        message.contains("Qwen3-4B-Instruct-2507-Q4_K_M.gguf"),
        "{message}"
    );

    let (status, body) = call(&f, "POST", "/v1/models/local/smollm2-135m-instruct/pull").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("local_model_mirror"),
        "{body}"
    );
    let (status, body) = call(&f, "POST", "/v1/models/local/gpt-5/pull").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        !f.runtime
            .handle()
            .config()
            .paths
            .home()
            .join("models/smollm2-135m-instruct")
            .exists()
    );
    let (status, _) = call(&f, "DELETE", "/v1/models/local/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
