//! `/v1/schedules` through the real router: an invalid cron or zone is a 400 with a clear
//! message and nothing stored; the preview lists the next fires; "run now" against the fake
//! OpenAI server runs the prompt as an execution in the schedule's own chat, and the run ends
//! `ok` linked to that execution; pause, resume and delete.

use std::time::Duration;

use serde_json::json;
use souz_testkit::{FakeServer, openai};

use super::*;

async fn daemon(provider: &FakeServer) -> Fixture {
    let runtime = TestRuntime::builder()
        .with_llm(provider)
        .with_config(|config| {
            config.agent.default_agent = "skills".into();
            config.memory.capture = false;
        })
        .start()
        .await;
    Fixture::on(runtime)
}

fn new_schedule(spec: &str, zone: &str) -> Value {
    json!({
        "name": "Inbox summary",
        "spec": spec,
        "zone": zone,
        "action": {"type": "prompt", "prompt": "Summarise my inbox folder."},
    })
}

#[tokio::test]
async fn an_invalid_cron_or_zone_is_a_400_and_nothing_is_stored() {
    let f = Fixture::new().await;
    let cases = [
        (
            new_schedule("61 * * * *", "UTC"),
            "invalid cron expression '61 * * * *'",
        ),
        (
            new_schedule("0 9 * * *", "Mars/Olympus"),
            "unknown time zone 'Mars/Olympus'",
        ),
        (new_schedule("at 2020-01-01 09:00", "UTC"), "never fires"),
    ];
    for (body, message) in cases {
        let (status, error) = f.send(f.json("POST", "/v1/schedules", &body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
        assert_eq!(code(&error), "invalid_request");
        let text = error["error"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{text}");
    }
    let (status, list) = f.send(f.bare("GET", "/v1/schedules")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn the_preview_lists_the_next_five_fires_in_the_zone() {
    let f = Fixture::new().await;
    let (status, preview) = f
        .send(f.bare(
            "GET",
            "/v1/schedules/preview?spec=30%208%20*%20*%201-5&zone=Europe/Berlin",
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["zone"], "Europe/Berlin");
    let fires = preview["fires"].as_array().unwrap();
    assert_eq!(fires.len(), 5);
    for fire in fires {
        let at = chrono::DateTime::parse_from_rfc3339(fire.as_str().unwrap()).unwrap();
        let local = at.with_timezone(&chrono_tz::Europe::Berlin);
        assert_eq!(local.format("%H:%M").to_string(), "08:30", "{fire}");
    }
    let (status, error) = f
        .send(f.bare("GET", "/v1/schedules/preview?spec=nope&zone=UTC"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_runs_the_prompt_in_the_schedules_chat_and_ends_ok() {
    let provider = FakeServer::start().await;
    let f = daemon(&provider).await;
    let (status, created) = f
        .send(f.json("POST", "/v1/schedules", &new_schedule("0 9 * * *", "UTC")))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["missed"], json!({"type": "run_once"}));
    assert_eq!(created["overlap"], "skip");
    assert_eq!(
        created["envelope"],
        json!({"tools": [], "folders": [], "hosts": []})
    );
    assert!(
        created["nextFire"]
            .as_str()
            .unwrap()
            .ends_with("T09:00:00Z")
    );

    provider.push(openai::CHAT_PATH, openai::text(&["Three new mails."]));
    let (status, run) = f
        .send(f.bare("POST", &format!("/v1/schedules/{id}/run")))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{run}");
    let runs_path = format!("/v1/schedules/{id}/runs");
    let mut last = Value::Null;
    for _ in 0..500 {
        let (_, runs) = f.send(f.bare("GET", &runs_path)).await;
        last = runs["items"][0].clone();
        if last["state"] == "ok" || last["state"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(last["state"], "ok", "{last}");
    assert_eq!(last["id"], run["id"]);
    let chat = last["chatId"].as_str().unwrap().to_owned();
    let execution = last["executionId"].as_str().unwrap().to_owned();
    let (status, events) = f
        .send(f.bare(
            "GET",
            &format!("/v1/chats/{chat}/events?afterSeq=0&limit=1000"),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{events}");
    let finished = events["items"].as_array().unwrap().iter().any(|event| {
        event["type"] == "execution.finished"
            && event["payload"]["executionId"] == execution.as_str()
    });
    assert!(finished, "{events}");
    let (_, schedule) = f.send(f.bare("GET", &format!("/v1/schedules/{id}"))).await;
    assert_eq!(schedule["chatId"], chat.as_str());
    let (_, chats) = f.send(f.bare("GET", "/v1/chats")).await;
    let titled = chats["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|item| item["id"] == chat.as_str() && item["title"] == "Inbox summary");
    assert!(titled, "{chats}");
    let request = &provider.requests_to(openai::CHAT_PATH)[0].json();
    assert!(request.to_string().contains("Summarise my inbox folder."));

    let (status, paused) = f
        .send(f.bare("POST", &format!("/v1/schedules/{id}/pause")))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(paused["enabled"], false);
    assert_eq!(paused["nextFire"], Value::Null);
    let (_, resumed) = f
        .send(f.bare("POST", &format!("/v1/schedules/{id}/resume")))
        .await;
    assert_eq!(resumed["enabled"], true);
    let (status, _) = f
        .send(f.bare("DELETE", &format!("/v1/schedules/{id}")))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, error) = f.send(f.bare("GET", &format!("/v1/schedules/{id}"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
}
