//! The llama.cpp engine with a real model (SmolLM2-135M-Instruct, `testing::local_llm_model`):
//! load, a streamed reply, cancellation mid-stream, a grammar-constrained tool call through
//! the gate, embeddings, idle unload. Feature `local-llm` only (`scripts/test.sh` runs them in
//! their own step).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::engine::LocalEmbeddings;
use super::super::llama::LlamaCpp;
use super::super::parse::{Reply, parse_reply};
use super::super::{
    Generation, LocalClient, LocalModels, LocalModelsOptions, StopReason, contract, profiles,
};
use crate::config::Config;
use crate::llm::embeddings::EmbeddingClient;
use crate::llm::{
    ChatRequest, FinishReason, LlmClient, LlmError, Message, StreamEvent, ToolDeclaration,
};
use crate::testing::probes::{self, Probes};
use crate::testing::{TestGate, TestHome, local_llm_model};
use crate::tools::CatalogBuilder;
use crate::tools::gate::CallRequest;
use souz_protocol::{Requester, ToolCallStatus};

const PROFILE: &str = "smollm2-135m-instruct";

struct Models {
    _home: tempfile::TempDir,
    models: Arc<LocalModels>,
}

/// The test model linked into a models folder of its own.
fn models() -> Models {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = home.path().join("models");
    let profile = profiles::find(PROFILE).expect("profile");
    std::fs::create_dir_all(profile.dir(&dir)).expect("mkdir");
    std::os::unix::fs::symlink(local_llm_model(), profile.path(&dir)).expect("link");
    let models = Arc::new(LocalModels::new(
        Arc::new(LlamaCpp),
        LocalModelsOptions {
            dir,
            idle_unload: Duration::from_secs(60),
            threads: 2,
        },
    ));
    Models {
        _home: home,
        models,
    }
}

fn client(models: &Models, max_tokens: u32) -> LocalClient {
    LocalClient::new(Arc::clone(&models.models), PROFILE, max_tokens, 0.0).expect("client")
}

#[tokio::test]
async fn a_reply_streams_in_pieces_and_ends_with_usage_and_finish() {
    let models = models();
    let request = ChatRequest::new(
        PROFILE,
        vec![Message::user("Say hello to Anna in one short sentence.")],
    );
    let events: Vec<_> = client(&models, 48)
        .stream(request, CancellationToken::new())
        .collect()
        .await;
    let text: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            Ok(StreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.len() >= 2, "streamed in several pieces: {events:?}");
    assert!(!text.concat().trim().is_empty(), "{events:?}");
    assert!(
        !text.concat().contains("{\"type\""),
        "the JSON is not shown: {text:?}"
    );
    let usage = events.iter().find_map(|event| match event {
        Ok(StreamEvent::Usage(usage)) => Some(*usage),
        _ => None,
    });
    assert!(usage.is_some_and(|usage| usage.input_tokens > 20 && usage.output_tokens > 1));
    assert!(
        matches!(
            events.last(),
            Some(Ok(StreamEvent::Finish(
                FinishReason::Stop | FinishReason::Length
            )))
        ),
        "{events:?}"
    );
    assert_eq!(models.models.loaded_names(), [PROFILE]);
}

#[tokio::test]
async fn cancelling_mid_stream_stops_generation_and_frees_the_model() {
    let models = models();
    let request = ChatRequest::new(
        PROFILE,
        vec![Message::user(
            "Write a very long story about a dragon and a knight.",
        )],
    );
    let cancel = CancellationToken::new();
    let mut stream = client(&models, 2000).stream(request, cancel.clone());
    let first = stream.next().await;
    assert!(
        matches!(first, Some(Ok(StreamEvent::TextDelta(_)))),
        "{first:?}"
    );
    cancel.cancel();
    let rest: Vec<_> = stream.collect().await;
    assert!(
        matches!(rest.last(), Some(Err(LlmError::Cancelled))),
        "{rest:?}"
    );
    // The generation let go of the model: it can be unloaded as idle.
    let later = Instant::now() + Duration::from_secs(120);
    assert_eq!(models.models.unload_idle(later), [PROFILE]);
}

#[tokio::test]
async fn a_grammar_constrained_tool_call_parses_and_runs_through_the_gate() {
    let models = models();
    let tool = ToolDeclaration {
        name: "ReadProbe".into(),
        description: "Reads the file at a path.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The file to read."}},
            "required": ["path"],
        }),
    };
    let messages = vec![Message::user("Read the file notes.txt")];
    let turns = contract::render(&messages, std::slice::from_ref(&tool), 4096);
    let profile = profiles::find(PROFILE).expect("profile");
    let generation = Generation {
        prompt: profile.family.render(&turns),
        grammar: Some(contract::calls_grammar(std::slice::from_ref(&tool))),
        max_tokens: 96,
        temperature: 0.0,
        seed: 1,
    };
    let model = models.models.acquire(profile, false).await.expect("load");
    let stats_and_text = tokio::task::spawn_blocking(move || {
        let mut text = String::new();
        let stats = model.generate(
            &generation,
            &mut |piece| {
                text.push_str(piece);
                true
            },
            &CancellationToken::new(),
        );
        (stats, text)
    })
    .await
    .expect("join");
    let (stats, text) = stats_and_text;
    assert_eq!(stats.expect("generated").stop, StopReason::End, "{text}");
    let value: serde_json::Value = serde_json::from_str(&text).expect("strict JSON");
    assert_eq!(value["type"], "tool_calls", "{text}");
    let Ok(Reply::ToolCalls(calls)) = parse_reply(&text) else {
        panic!("not calls: {text}");
    };
    assert_eq!(calls[0].name, "ReadProbe");

    // The call goes through the same gate as everyone's.
    let home = TestHome::new();
    let config = Config::defaults(home.paths());
    let probes = Arc::new(Probes::default());
    let mut catalog = CatalogBuilder::default();
    probes::of_each_risk(&mut catalog, &probes);
    let stack = TestGate::start(home, config, catalog.build()).await;
    let arguments = calls[0].arguments_json().expect("arguments are JSON");
    let path = arguments["path"].as_str().unwrap_or_default().to_owned();
    let mut handle = stack
        .gate
        .start(CallRequest {
            tool: calls[0].name.clone(),
            arguments: json!({ "path": path }),
            requester: Requester::Chat {
                chat_id: "local".into(),
            },
        })
        .await
        .expect("started");
    let state = handle.settled().await;
    assert_eq!(state.status, ToolCallStatus::Succeeded, "{state:?}");
    assert_eq!(probes.runs(), ["ReadProbe"]);
}

#[tokio::test]
async fn embeddings_order_similar_sentences_first() {
    let models = models();
    let client = LocalEmbeddings::new(Arc::clone(&models.models));
    let vectors = client
        .embed(
            PROFILE.to_owned(),
            vec![
                "The cat sleeps on the warm sofa.".to_owned(),
                "A kitten is napping on the couch.".to_owned(),
                "Quarterly tax filings are due in April.".to_owned(),
            ],
            CancellationToken::new(),
        )
        .await
        .expect("embeddings");
    assert_eq!(vectors.len(), 3);
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    for vector in &vectors {
        assert!((dot(vector, vector) - 1.0).abs() < 1e-3, "normalised");
    }
    let close = dot(&vectors[0], &vectors[1]);
    let far = dot(&vectors[0], &vectors[2]);
    assert!(close > far, "cat~kitten {close} > cat~tax {far}");
}

#[tokio::test]
async fn an_idle_model_is_unloaded_and_loads_again_on_the_next_use() {
    let models = models();
    let profile = profiles::find(PROFILE).expect("profile");
    let loaded = models.models.acquire(profile, false).await.expect("load");
    let tokens = loaded
        .tokenize("<|im_start|>user\nhi<|im_end|>")
        .expect("tokens");
    assert!(
        tokens.len() <= 6,
        "control tokens are single tokens: {tokens:?}"
    );
    assert!(
        loaded
            .chat_template()
            .is_some_and(|t| t.contains("im_start"))
    );
    drop(loaded);
    assert!(
        models.models.unload_idle(Instant::now()).is_empty(),
        "used just now"
    );
    let later = Instant::now() + Duration::from_secs(61);
    assert_eq!(models.models.unload_idle(later), [PROFILE]);
    assert!(models.models.loaded_names().is_empty());
    let reply = crate::llm::complete(
        &client(&models, 16),
        ChatRequest::new(PROFILE, vec![Message::user("Hi")]),
        CancellationToken::new(),
    )
    .await
    .expect("answers after reloading");
    assert!(!reply.content.is_empty());
}
