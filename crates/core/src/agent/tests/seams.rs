//! The seams other parts plug into: memory recall (injected right before the person's message,
//! replaced every turn, nothing on failure) and the MCP node (external tools advertised and run
//! through the gate; a failing source adds nothing).

use std::sync::Mutex;

use futures::future::BoxFuture;
use serde_json::json;

use super::*;
use crate::agent::context::{is_injected_context, is_injected_memory};
use crate::agent::memory::{
    MemoryError, MemoryFact, MemoryRecall, MemoryScope, MemorySearch, RecalledMemory,
};
use crate::agent::nodes::mcp::McpTools;
use crate::llm::{Message, ToolDeclaration};

/// Recalls a scripted block per turn (`None`: nothing; `Err`: the recall fails).
#[derive(Default)]
struct ScriptedMemory {
    turns: Mutex<Vec<Result<Option<&'static str>, ()>>>,
    queries: Mutex<Vec<(MemoryScope, String)>>,
}

impl MemoryRecall for ScriptedMemory {
    fn recall<'a>(
        &'a self,
        scope: &'a MemoryScope,
        query: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecalledMemory>, MemoryError>> {
        self.queries
            .lock()
            .unwrap()
            .push((scope.clone(), query.to_owned()));
        let next = self.turns.lock().unwrap().remove(0);
        Box::pin(async move {
            match next {
                Ok(Some(block)) => Ok(Some(RecalledMemory {
                    block: block.to_owned(),
                    facts: vec![MemoryFact {
                        fact_id: "f1".into(),
                        scope: "global:global".into(),
                        kind: "PREFERENCE".into(),
                        title: "Drink".into(),
                        body: block.to_owned(),
                        score: 0.8,
                    }],
                })),
                Ok(None) => Ok(None),
                Err(()) => Err(MemoryError::Failed("the index is rebuilding".into())),
            }
        })
    }

    fn search<'a>(
        &'a self,
        _: &'a MemorySearch,
    ) -> BoxFuture<'a, Result<crate::agent::memory::FoundFacts, MemoryError>> {
        Box::pin(async {
            Ok(crate::agent::memory::FoundFacts {
                facts: Vec::new(),
                mode: souz_protocol::memory::RecallMode::Lexical,
            })
        })
    }
}

fn memory_blocks(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|message| is_injected_memory(message))
        .map(|message| match message {
            Message::User { content, .. } => content.clone(),
            _ => unreachable!(),
        })
        .collect()
}

/// Index of the person's message `text` in `messages`.
fn position_of(messages: &[Message], text: &str) -> usize {
    messages
        .iter()
        .position(|message| matches!(message, Message::User { content, .. } if content == text))
        .unwrap()
}

#[tokio::test]
async fn recalled_memory_sits_right_before_the_message_and_is_replaced_each_turn() {
    let memory = Arc::new(ScriptedMemory::default());
    *memory.turns.lock().unwrap() = vec![Ok(Some("Prefers green tea")), Ok(None), Err(())];
    let shared: Arc<dyn MemoryRecall> = memory.clone();
    let f = fixture_with(move |parts| parts.memory = shared).await;

    f.llm.push_text("Green tea, then.");
    let (first, sink) = f.run(skills("chat-m", "What should I drink?")).await;
    assert_eq!(first.status, TurnStatus::Completed);
    let sent = &f.llm.requests()[0].messages;
    assert_eq!(
        memory_blocks(sent),
        ["<souz_memory_context>\nPrefers green tea\n</souz_memory_context>"]
    );
    // The original's layout (§2.4): memory, then the background context, then the message.
    let question = position_of(sent, "What should I drink?");
    assert!(
        is_injected_memory(&sent[question - 2]) && is_injected_context(&sent[question - 1]),
        "memory and context come right before the person's message: {sent:?}"
    );
    assert!(
        sink.events()
            .iter()
            .any(|event| matches!(event, AgentEvent::MemoryRecalled { facts: 1 }))
    );
    let (scope, query) = memory.queries.lock().unwrap()[0].clone();
    assert_eq!(scope.chat_id, "chat-m");
    assert_eq!(query, "What should I drink?");

    // Next turn, same conversation: nothing recalled, and last turn's memory is gone.
    f.llm.push_text("Water is fine.");
    let (second, _) = f
        .run(TurnRequest {
            history: Some(first.history.clone()),
            ..skills("chat-m", "And later?")
        })
        .await;
    assert_eq!(second.status, TurnStatus::Completed);
    assert!(memory_blocks(&f.llm.requests()[1].messages).is_empty());

    // A recall that fails adds nothing and the turn goes on.
    f.llm.push_text("Still here.");
    let (third, _) = f
        .run(TurnRequest {
            history: Some(second.history.clone()),
            ..skills("chat-m", "Anything else?")
        })
        .await;
    assert_eq!(third.status, TurnStatus::Completed);
    assert_eq!(third.reply.unwrap().text, "Still here.");
    assert!(memory_blocks(&f.llm.requests()[2].messages).is_empty());
    // Every turn asked, so the empty and the failing recall were really met.
    let queries: Vec<String> = memory
        .queries
        .lock()
        .unwrap()
        .iter()
        .map(|(_, query)| query.clone())
        .collect();
    assert_eq!(
        queries,
        ["What should I drink?", "And later?", "Anything else?"]
    );
}

/// Offers `FetchPage` (a gate tool the classification would not show for a FILES request) as an
/// external tool, or fails.
struct ScriptedMcp {
    fail: bool,
}

impl McpTools for ScriptedMcp {
    fn tools<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<ToolDeclaration>, String>> {
        let fail = self.fail;
        Box::pin(async move {
            if fail {
                return Err("the server did not answer".to_owned());
            }
            Ok(vec![ToolDeclaration {
                name: "FetchPage".into(),
                description: "Fetches a page (an external tool)".into(),
                parameters: json!({"type": "object"}),
            }])
        })
    }
}

#[tokio::test]
async fn mcp_tools_are_advertised_and_run_through_the_gate_and_a_failing_source_adds_nothing() {
    let f = fixture_with(|parts| parts.mcp = Arc::new(ScriptedMcp { fail: false })).await;
    f.llm.push_text("FILES 90");
    f.llm
        .push_tool_calls(vec![call("c1", "FetchPage", json!({}))]);
    f.llm.push_text("waited");
    let (outcome, _) = f.run(graph("chat-x", "read my notes")).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    let shown = advertised(&f.llm.requests()[1]);
    assert!(shown.contains(&"FetchPage".to_owned()), "{shown:?}");
    assert!(shown.contains(&"ReadNote".to_owned()), "{shown:?}");
    assert_eq!(f.probes.runs(), ["FetchPage"], "it ran, through the gate");

    let f = fixture_with(|parts| parts.mcp = Arc::new(ScriptedMcp { fail: true })).await;
    f.llm.push_text("FILES 90");
    f.llm.push_text("no external tools today");
    let (outcome, _) = f.run(graph("chat-y", "read my notes")).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    let shown = advertised(&f.llm.requests()[1]);
    assert!(!shown.contains(&"FetchPage".to_owned()), "{shown:?}");
    assert!(shown.contains(&"ReadNote".to_owned()), "{shown:?}");
}
