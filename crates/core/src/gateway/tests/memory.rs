//! `/v1/memory`: create, list and filter, show, edit, pin, retire, delete with a tombstone,
//! evidence, search; bad input is a clear 400 that loses nothing; every change is an event.

use serde_json::json;

use super::*;

async fn call(f: &Fixture, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
    let request = match body {
        Some(body) => f.json(method, path, &body),
        None => f.bare(method, path),
    };
    f.send(request).await
}

async fn ok(f: &Fixture, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, body) = call(f, method, path, body).await;
    assert!(status.is_success(), "{method} {path}: {status} {body}");
    body
}

/// `POST /v1/memory` with `body`; the stored fact.
async fn remember(f: &Fixture, body: Value) -> Value {
    ok(f, "POST", "/v1/memory", Some(body)).await
}

async fn memory_events(f: &Fixture) -> Vec<Value> {
    f.runtime_events("memory.").await
}

fn ids(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fact| fact["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn create_list_filter_show_and_page() {
    let f = Fixture::new().await;
    let vim = remember(
        &f,
        json!({"body": "Uses vim for every project\nsecond line", "kind": "PREFERENCE"}),
    )
    .await;
    assert_eq!(vim["title"], "Uses vim for every project", "{vim}");
    assert_eq!(vim["scope"], "global");
    assert_eq!(vim["status"], "ACTIVE");
    assert_eq!(vim["created_by"], "user");
    let note = remember(
        &f,
        json!({"title": "Plan", "body": "Ship the memory page", "scope": "session:chat-1",
                    "kind": "EPISODE_NOTE", "pinned": true}),
    )
    .await;
    assert_eq!(note["scope"], "session:chat-1");
    assert_eq!(note["retention"], "SESSION_LIFETIME");
    let vim_id = vim["id"].as_str().unwrap();
    let note_id = note["id"].as_str().unwrap();

    let all = ok(&f, "GET", "/v1/memory", None).await;
    assert_eq!(ids(&all), [note_id, vim_id]);
    let page = ok(&f, "GET", "/v1/memory?limit=1", None).await;
    assert_eq!(ids(&page), [note_id]);
    assert_eq!(page["next_offset"], 1);
    let page = ok(&f, "GET", "/v1/memory?limit=1&offset=1", None).await;
    assert_eq!(ids(&page), [vim_id]);
    assert!(page.get("next_offset").is_none(), "{page}");
    for (query, expected) in [
        ("kind=PREFERENCE", vec![vim_id]),
        ("scope=session:chat-1", vec![note_id]),
        ("scope=global", vec![vim_id]),
        ("pinned=true", vec![note_id]),
        ("text=VIM", vec![vim_id]),
        ("status=RETIRED", vec![]),
    ] {
        let page = ok(&f, "GET", &format!("/v1/memory?{query}"), None).await;
        assert_eq!(ids(&page), expected, "{query}");
    }
    let shown = ok(&f, "GET", &format!("/v1/memory/{vim_id}"), None).await;
    assert_eq!(shown, vim);
}

#[tokio::test]
async fn bad_input_is_a_clear_400_and_nothing_is_stored() {
    let f = Fixture::new().await;
    let long = "x".repeat(4_001);
    for body in [
        json!({"body": "  "}),
        json!({"body": long}),
        json!({"body": "ok", "scope": "galaxy:far"}),
        json!({"body": "ok", "scope": "session:"}),
        json!({"body": "ok", "kind": "GOSSIP"}),
        json!({"body": "ok", "canonical_key": "my.key"}),
        json!({"body": "ok", "importance": 2}),
        json!({"body": "ok", "title": ""}),
        json!({"body": "ok", "surprise": true}),
        json!({"text": "no body"}),
    ] {
        let (status, reply) = call(&f, "POST", "/v1/memory", Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} {reply}");
        assert!(!reply["error"]["message"].as_str().unwrap().is_empty());
    }
    for query in [
        "limit=0",
        "limit=501",
        "scope=nowhere",
        "status=GONE",
        "kind=x",
        "zzz=1",
    ] {
        let (status, reply) = call(&f, "GET", &format!("/v1/memory?{query}"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query} {reply}");
    }
    let page = ok(&f, "GET", "/v1/memory?status=ALL", None).await;
    assert_eq!(page["items"], json!([]));
    assert!(memory_events(&f).await.is_empty());

    let fact = remember(&f, json!({"body": "Keeps this"})).await;
    let path = format!("/v1/memory/{}", fact["id"].as_str().unwrap());
    for patch in [
        json!({"body": ""}),
        json!({"scope": "planet:x"}),
        json!({"canonical_key": "nope"}),
        json!({"importance": -1}),
        json!({"extra": 1}),
    ] {
        let (status, reply) = call(&f, "PATCH", &path, Some(patch.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{patch} {reply}");
    }
    assert_eq!(ok(&f, "GET", &path, None).await, fact, "nothing changed");
    for (method, path, body) in [
        ("GET", "/v1/memory/missing", None),
        ("PATCH", "/v1/memory/missing", Some(json!({"pinned": true}))),
        ("DELETE", "/v1/memory/missing", None),
        ("POST", "/v1/memory/missing/pin", None),
        ("POST", "/v1/memory/missing/retire", None),
        ("GET", "/v1/memory/missing/evidence", None),
    ] {
        let (status, reply) = call(&f, method, path, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path} {reply}");
        assert_eq!(code(&reply), "not_found");
    }
    for body in [
        json!({"query": " "}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 21}),
    ] {
        let (status, reply) = call(&f, "POST", "/v1/memory/search", Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} {reply}");
    }
}

#[tokio::test]
async fn edit_pin_retire_and_delete_announce_events() {
    let f = Fixture::new().await;
    let fact = remember(
        &f,
        json!({"title": "Editor", "body": "Uses vim", "kind": "PREFERENCE",
                    "canonical_key": "user.preference.editor"}),
    )
    .await;
    let id = fact["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/memory/{id}");
    let edited = ok(
        &f,
        "PATCH",
        &path,
        Some(json!({"body": "Uses helix", "scope": "project:souz"})),
    )
    .await;
    assert_eq!(edited["body"], "Uses helix");
    assert_eq!(edited["scope"], "project:souz");
    assert_eq!(edited["title"], "Editor");
    assert_eq!(edited["canonical_key"], "user.preference.editor");
    assert_ne!(edited["updated_at"], fact["updated_at"]);
    let pinned = ok(&f, "POST", &format!("{path}/pin"), None).await;
    assert_eq!(pinned["pinned"], true);
    let unpinned = ok(&f, "POST", &format!("{path}/unpin"), None).await;
    assert_eq!(unpinned["pinned"], false);

    // A new fact with the same key in the same scope supersedes the old one.
    let newer = remember(
        &f,
        json!({"title": "Editor", "body": "Uses zed", "scope": "project:souz",
                    "canonical_key": "user.preference.editor"}),
    )
    .await;
    assert_eq!(newer["supersedes_fact_id"], id.as_str());
    assert_eq!(ok(&f, "GET", &path, None).await["status"], "RETIRED");
    let newer_id = newer["id"].as_str().unwrap().to_owned();
    let retired = ok(&f, "POST", &format!("/v1/memory/{newer_id}/retire"), None).await;
    assert_eq!(retired["status"], "RETIRED");
    let (status, reply) = call(&f, "PATCH", &path, Some(json!({"title": "x"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
    let deleted = ok(&f, "DELETE", &path, None).await;
    assert_eq!(deleted["id"], id.as_str());
    let (status, _) = call(&f, "GET", &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let events = memory_events(&f).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "memory.fact.created",
            "memory.fact.updated",
            "memory.fact.updated",
            "memory.fact.updated",
            "memory.fact.retired",
            "memory.fact.created",
            "memory.fact.retired",
            "memory.fact.deleted",
        ]
    );
    assert_eq!(events[0]["fact_id"], id.as_str());
    assert_eq!(events[0]["kind"], "PREFERENCE");
    assert_eq!(events[1]["scope"], "project:souz");
    assert_eq!(events[2]["pinned"], true);
    assert_eq!(events[4]["fact_id"], id.as_str(), "the superseded fact");
    for event in &events {
        let text = event.to_string();
        assert!(!text.contains("helix") && !text.contains("zed"), "{text}");
    }
}

#[tokio::test]
async fn the_same_fact_written_again_is_confirmed_with_200() {
    let f = Fixture::new().await;
    let tea = json!({"title": "Tea", "body": "Likes green tea"});
    let (status, first) = call(&f, "POST", "/v1/memory", Some(tea.clone())).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, again) = call(
        &f,
        "POST",
        "/v1/memory",
        Some(json!({"title": "Tea", "body": "  Likes green tea ", "pinned": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["pinned"], true, "{again}");
    let listed = ok(&f, "GET", "/v1/memory", None).await;
    assert_eq!(ids(&listed), [first["id"].as_str().unwrap()]);
    // Another body is another fact.
    let (status, other) = call(
        &f,
        "POST",
        "/v1/memory",
        Some(json!({"title": "Tea", "body": "Likes black tea"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{other}");
    assert_ne!(other["id"], first["id"]);
}

#[tokio::test]
async fn evidence_and_search_with_scores() {
    let f = Fixture::new().await;
    let fact = remember(
        &f,
        json!({"title": "Deploy", "body": "Deploys go through the staging cluster first",
                    "kind": "PROCEDURE"}),
    )
    .await;
    remember(&f, json!({"body": "Likes green tea"})).await;
    let id = fact["id"].as_str().unwrap();
    let evidence = ok(&f, "GET", &format!("/v1/memory/{id}/evidence"), None).await;
    assert_eq!(evidence["fact_id"], id);
    assert_eq!(evidence["items"][0]["source_type"], "manual");
    assert_eq!(
        evidence["items"][0]["excerpt"],
        "Deploys go through the staging cluster first"
    );

    let found = ok(
        &f,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "how do deploys work", "hints": ["staging"]})),
    )
    .await;
    let items = found["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{found}");
    assert_eq!(items[0]["fact"]["id"], id);
    assert!(items[0]["score"].as_f64().unwrap() > 0.0);
    assert!(!items[0]["sources"].as_array().unwrap().is_empty());
    let none = ok(
        &f,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "kubernetes operators"})),
    )
    .await;
    assert_eq!(none["items"], json!([]));
}

#[tokio::test]
async fn the_model_route_names_the_default_local_model_missing_when_downloads_are_off() {
    let f = Fixture::new().await;
    let info = ok(&f, "GET", "/v1/memory/model", None).await;
    // The default `[memory] embeddings_model`, which a test runtime never downloads.
    assert_eq!(
        info,
        json!({"model": "local/multilingual-e5-small", "local": {"state": "missing"}})
    );
    // Searching still works, by words, and says so.
    remember(&f, json!({"body": "Drinks black coffee"})).await;
    let found = ok(
        &f,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "coffee"})),
    )
    .await;
    assert_eq!(found["items"].as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(found["mode"], "lexical");
    let info = ok(&f, "GET", "/v1/memory/model", None).await;
    assert_eq!(
        info["local"]["state"], "missing",
        "a search starts no download"
    );
}

#[tokio::test]
async fn the_model_route_says_memory_searches_by_words_without_an_embedder() {
    let f = Fixture::with(|config| config.memory.embeddings_model = String::new()).await;
    let info = ok(&f, "GET", "/v1/memory/model", None).await;
    // An empty `[memory] embeddings_model`: no model and no local state.
    assert_eq!(info, json!({}));
}
