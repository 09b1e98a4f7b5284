//! Core tool groups a chat turns off (`TurnRequest::core_off`): the model is not shown them,
//! a call to one anyway is refused, the skill inventory goes with the skill tools, and with the
//! Knowledge tools off a large result stays whole instead of becoming an unreadable reference.

use std::collections::BTreeSet;

use super::*;
use crate::llm::Message;

fn off(groups: &[CoreToolGroup]) -> CoreToolsOff {
    let names: Vec<String> = groups.iter().map(|group| group.name().to_owned()).collect();
    CoreToolsOff::from_names(&names)
}

#[tokio::test]
async fn the_graph_agent_leaves_out_the_groups_a_chat_turned_off() {
    let f = fixture().await;
    f.llm.push_text("FILES 90");
    f.llm.push_tool_calls(vec![
        call("c1", "ReadNote", json!({"path": "a.txt", "size": 20_000})),
        call("c2", "GetKnowledge", json!({"knowledgeId": "x"})),
    ]);
    f.llm.push_text("done");
    let request = TurnRequest {
        ask_user: true,
        core_off: off(&[
            CoreToolGroup::Knowledge,
            CoreToolGroup::Skills,
            CoreToolGroup::AskUser,
        ]),
        ..graph("chat-off", "read a.txt")
    };
    let (outcome, _) = f.run(request).await;
    assert_eq!(outcome.status, TurnStatus::Completed);

    let requests = f.llm.requests();
    assert_eq!(requests.len(), 3);
    let shown: BTreeSet<String> = advertised(&requests[1]).into_iter().collect();
    assert!(shown.contains("SearchMemory"), "{shown:?}");
    assert!(shown.contains("ReadNote"), "{shown:?}");
    for gone in [
        "GetKnowledge",
        "SearchKnowledge",
        "GetSkillByName",
        "RunSkillCommand",
        "AskUser",
    ] {
        assert!(!shown.contains(gone), "{gone} is off: {shown:?}");
    }
    let Message::System { content } = &requests[1].messages[0] else {
        panic!("the system message comes first");
    };
    assert!(
        !content.contains("<skill_inventory>"),
        "no inventory without the skill tools"
    );

    let results: Vec<(&str, &str)> = outcome
        .history
        .iter()
        .filter_map(|message| match message {
            Message::Tool { name, content, .. } => Some((name.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "ReadNote");
    assert_eq!(
        results[0].1,
        "n".repeat(20_000),
        "kept whole: no Knowledge tool could read a reference"
    );
    assert!(
        results[1]
            .1
            .starts_with("There is no tool named `GetKnowledge`"),
        "{}",
        results[1].1
    );
}

#[tokio::test]
async fn the_skills_agent_without_memory_keeps_its_other_core_tools() {
    let f = fixture().await;
    f.llm.push_text("ok");
    let request = TurnRequest {
        ask_user: true,
        core_off: off(&[CoreToolGroup::Memory]),
        ..skills("chat-off-skills", "hi")
    };
    f.run(request).await;
    let mut expected: Vec<String> = core_names()
        .into_iter()
        .filter(|name| name != "SearchMemory")
        .chain(["AskUser".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(advertised(&f.llm.requests()[0]), expected);
}
