//! `GET /v1/chats/{chatId}/tools`: what a chat's next turn really offers. Turning every catalog
//! tool off leaves the agent's core tools (memory, Knowledge) on, and the list says so; the
//! chat's agent decides which core tools those are, and the chat's `disabledCoreTools` turns
//! groups of them off: the model's request no longer lists them and a call to one anyway is
//! refused.

use std::time::Duration;

use serde_json::json;
use souz_testkit::{FakeServer, openai};

use super::*;

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_chat_lists_the_tools_its_agent_offers_and_core_tools_stay_on() {
    let f = Fixture::new().await;
    let chat = f.new_chat().await;
    let path = format!("/v1/chats/{chat}/tools");

    let (status, offered) = f.send(f.bare("GET", &path)).await;
    assert_eq!(status, StatusCode::OK, "{offered}");
    assert_eq!(offered["agent"], "graph");
    let catalog = names(&offered["catalog"]);
    assert!(catalog.len() > 1, "the user's enabled tools: {offered}");
    assert_eq!(
        names(&offered["core"]),
        [
            "AskUser",
            "GetKnowledge",
            "GetSkillByName",
            "RunSkillCommand",
            "SearchKnowledge",
            "SearchMemory"
        ]
    );

    // Every catalog tool off: the core tools are still offered, and the list says so.
    let settings = format!("/v1/chats/{chat}/settings");
    let (status, body) = f
        .send(f.json("PUT", &settings, &json!({"enabledTools": []})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, offered) = f.send(f.bare("GET", &path)).await;
    assert!(names(&offered["catalog"]).is_empty(), "{offered}");
    assert!(names(&offered["core"]).contains(&"SearchMemory".to_owned()));

    // The skills agent with one catalog tool: its seven core tools, and that one tool.
    let one = catalog[0].clone();
    let (status, body) = f
        .send(f.json(
            "PUT",
            &settings,
            &json!({"agent": "skills", "enabledTools": [one]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, offered) = f.send(f.bare("GET", &path)).await;
    assert_eq!(offered["agent"], "skills");
    assert_eq!(names(&offered["catalog"]), [one]);
    assert_eq!(names(&offered["core"]).len(), 8, "{offered}");

    let missing = format!("/v1/chats/{}/tools", uuid::Uuid::now_v7());
    let (status, body) = f.send(f.bare("GET", &missing)).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::NOT_FOUND, "chat_not_found")
    );
}

/// The names of the tools a captured chat completion request lists.
fn request_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn core_tools_a_chat_turns_off_leave_the_route_and_the_model_request() {
    let f = Fixture::new().await;
    let chat = f.new_chat().await;
    let (path, settings) = (
        format!("/v1/chats/{chat}/tools"),
        format!("/v1/chats/{chat}/settings"),
    );
    let (status, body) = f
        .send(f.json(
            "PUT",
            &settings,
            &json!({"disabledCoreTools": [" memory ", "askUser", "memory"]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["disabledCoreTools"], json!(["memory", "askUser"]));
    let (_, offered) = f.send(f.bare("GET", &path)).await;
    assert_eq!(
        names(&offered["core"]),
        [
            "GetKnowledge",
            "GetSkillByName",
            "RunSkillCommand",
            "SearchKnowledge"
        ]
    );
    let groups: Vec<(String, bool)> = offered["coreGroups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            (
                group["group"].as_str().unwrap().to_owned(),
                group["enabled"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("memory".to_owned(), false),
            ("knowledge".to_owned(), true),
            ("skills".to_owned(), true),
            ("askUser".to_owned(), false)
        ]
    );
    assert_eq!(offered["coreGroups"][0]["tools"], json!(["SearchMemory"]));

    // An unknown group is refused with the groups there are, and nothing changes.
    let (status, body) = f
        .send(f.json(
            "PUT",
            &settings,
            &json!({"disabledCoreTools": ["memory", "SearchMemory"]}),
        ))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown groups: SearchMemory")
            && message.contains("memory, knowledge, skills, askUser"),
        "{body}"
    );
    let (_, stored) = f.send(f.bare("GET", &settings)).await;
    assert_eq!(stored["disabledCoreTools"], json!(["memory", "askUser"]));
    let (status, body) = f
        .send(f.json("PUT", &settings, &json!({"disabledCoreTools": "memory"})))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // Back on: every core tool again.
    let (status, _) = f
        .send(f.json("PUT", &settings, &json!({"disabledCoreTools": []})))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, offered) = f.send(f.bare("GET", &path)).await;
    assert_eq!(names(&offered["core"]).len(), 6, "{offered}");
}

#[tokio::test]
async fn a_turn_does_not_offer_or_run_a_core_tool_its_chat_turned_off() {
    let provider = FakeServer::start().await;
    let runtime = TestRuntime::builder()
        .with_llm(&provider)
        .with_config(|config| {
            // The skills agent asks the model once per step (no classifier request).
            config.agent.default_agent = "skills".into();
            config.memory.capture = false;
        })
        .start()
        .await;
    let f = Fixture::on(runtime);
    // The model calls SearchMemory although it is not offered, then answers.
    let arguments = json!({"semanticQuery": "the user's dog", "lexicalHints": ["dog"]});
    provider.push(
        openai::CHAT_PATH,
        openai::tool_calls(
            &[("call_1", "SearchMemory", arguments.to_string().as_str())],
            2,
        ),
    );
    provider.push(openai::CHAT_PATH, openai::text(&["No memory here."]));
    let chat = f.new_chat().await;
    let (status, body) = f
        .send(f.json(
            "PUT",
            &format!("/v1/chats/{chat}/settings"),
            &json!({"disabledCoreTools": ["memory"]}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, posted) = f
        .send(f.json(
            "POST",
            &format!("/v1/chats/{chat}/messages"),
            &json!({"content": "What is my dog called?"}),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{posted}");
    wait_finished(&f, &chat).await;

    let requests = provider.requests_to(openai::CHAT_PATH);
    assert_eq!(requests.len(), 2);
    let listed = request_tools(&requests[0].json());
    assert!(!listed.contains(&"SearchMemory".to_owned()), "{listed:?}");
    for kept in ["SearchKnowledge", "RunSkillCommand", "AskUser"] {
        assert!(listed.contains(&kept.to_owned()), "{kept}: {listed:?}");
    }
    let (_, offered) = f
        .send(f.bare("GET", &format!("/v1/chats/{chat}/tools")))
        .await;
    let mut offered = names(&offered["core"]);
    offered.sort();
    let mut listed = listed;
    listed.sort();
    assert_eq!(listed, offered, "the route says what the request listed");
    // The call anyway was answered as a tool that is not there.
    let second = requests[1].json().to_string();
    assert!(
        second.contains("There is no tool named `SearchMemory`"),
        "{second}"
    );
}

/// Waits for the chat's `execution.finished` event.
async fn wait_finished(f: &Fixture, chat: &str) {
    for _ in 0..1500 {
        let path = format!("/v1/chats/{chat}/events?afterSeq=0&limit=1000");
        let (_, events) = f.send(f.bare("GET", &path)).await;
        let finished = events["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|event| event["type"] == "execution.finished");
        if finished {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("chat {chat} did not finish");
}
