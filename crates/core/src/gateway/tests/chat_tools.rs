//! `GET /v1/chats/{chatId}/tools`: what a chat's next turn really offers. Turning every catalog
//! tool off leaves the agent's core tools (memory, Knowledge) on, and the list says so; the
//! chat's agent decides which core tools those are.

use serde_json::json;

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
