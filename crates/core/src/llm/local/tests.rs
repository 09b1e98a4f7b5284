//! The local client over a scripted engine: streaming, tool calls, cancellation, loading and
//! idle unload, in the default build (the real engine's tests are in `tests/local_llm.rs`).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::*;
use crate::llm::{
    ChatRequest, FinishReason, LlmClient, LlmError, Message, StreamEvent, ToolDeclaration,
};

/// An engine whose models write scripted outputs, three characters a piece (one token each, up
/// to the generation's limit).
#[derive(Default)]
struct Scripted {
    outputs: Mutex<VecDeque<Option<String>>>,
    loads: AtomicUsize,
    prompts: Mutex<Vec<Generation>>,
}

struct ScriptedModel(Arc<Scripted>);

struct Engine(Arc<Scripted>);

impl LocalBackend for Engine {
    fn name(&self) -> &'static str {
        "scripted"
    }
    fn load(&self, _: &LoadOptions) -> Result<Arc<dyn LoadedModel>, LocalError> {
        self.0.loads.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(ScriptedModel(Arc::clone(&self.0))))
    }
}

impl LoadedModel for ScriptedModel {
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, LocalError> {
        Ok(text.split_whitespace().map(|_| 1).collect())
    }
    fn chat_template(&self) -> Option<String> {
        None
    }
    fn generate(
        &self,
        generation: &Generation,
        on_piece: &mut dyn FnMut(&str) -> bool,
        cancel: &CancellationToken,
    ) -> Result<GenerationStats, LocalError> {
        self.0
            .prompts
            .lock()
            .expect("lock")
            .push(generation.clone());
        let script = self.0.outputs.lock().expect("lock").pop_front().flatten();
        let mut stats = GenerationStats {
            prompt_tokens: 7,
            reused_tokens: 0,
            output_tokens: 0,
            first_token: None,
            total: Duration::ZERO,
            stop: StopReason::End,
        };
        // `None`: write one piece, then wait to be cancelled.
        let Some(output) = script else {
            on_piece(contract::FINAL_PREFIX);
            on_piece("partial");
            while !cancel.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            stats.stop = StopReason::Cancelled;
            return Ok(stats);
        };
        let chars: Vec<char> = output.chars().collect();
        for piece in chars.chunks(3) {
            if stats.output_tokens >= u64::from(generation.max_tokens) {
                stats.stop = StopReason::Length;
                break;
            }
            let piece: String = piece.iter().collect();
            stats.output_tokens += 1;
            if cancel.is_cancelled() || !on_piece(&piece) {
                stats.stop = StopReason::Cancelled;
                break;
            }
        }
        Ok(stats)
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalError> {
        Ok(texts.iter().map(|text| vec![text.len() as f32]).collect())
    }
    fn size_bytes(&self) -> u64 {
        1
    }
}

struct Fixture {
    _home: tempfile::TempDir,
    scripted: Arc<Scripted>,
    models: Arc<LocalModels>,
}

fn fixture(place_file: bool) -> Fixture {
    let home = tempfile::tempdir().expect("tempdir");
    let dir = home.path().join("models");
    if place_file {
        let profile = profiles::find("smollm2-135m-instruct").expect("profile");
        std::fs::create_dir_all(profile.dir(&dir)).expect("mkdir");
        std::fs::write(profile.path(&dir), b"gguf").expect("write");
    }
    let scripted = Arc::new(Scripted::default());
    let models = Arc::new(LocalModels::new(
        Arc::new(Engine(Arc::clone(&scripted))),
        LocalModelsOptions {
            dir,
            idle_unload: Duration::from_secs(60),
            threads: 1,
        },
    ));
    Fixture {
        _home: home,
        scripted,
        models,
    }
}

impl Fixture {
    fn script(&self, output: Option<&str>) {
        self.scripted
            .outputs
            .lock()
            .expect("lock")
            .push_back(output.map(str::to_owned));
    }

    fn client(&self) -> LocalClient {
        LocalClient::new(
            Arc::clone(&self.models),
            "local-smollm2-135m-instruct",
            64,
            0.0,
        )
        .expect("client")
    }
}

/// The one tool these tests offer.
fn calculator() -> ToolDeclaration {
    ToolDeclaration {
        name: "Calculator".into(),
        description: "Calculates.".into(),
        parameters: serde_json::json!({"type":"object","properties":{"expression":{"type":"string"}}}),
    }
}

fn request(tools: Vec<ToolDeclaration>) -> ChatRequest {
    ChatRequest {
        tools,
        ..ChatRequest::new("smollm2-135m-instruct", vec![Message::user("Hi")])
    }
}

async fn events(client: &LocalClient, request: ChatRequest) -> Vec<Result<StreamEvent, LlmError>> {
    client
        .stream(request, CancellationToken::new())
        .collect()
        .await
}

#[tokio::test]
async fn a_final_answer_streams_its_decoded_text_then_usage_and_finish() {
    let fixture = fixture(true);
    fixture.script(Some(
        r#"{"type":"final","content":"Hello \"there\"\nfriend"}"#,
    ));
    let events = events(&fixture.client(), request(Vec::new())).await;
    let deltas: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            Ok(StreamEvent::TextDelta(text)) => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() > 3, "streamed in pieces: {deltas:?}");
    assert_eq!(deltas.concat(), "Hello \"there\"\nfriend");
    assert!(matches!(
        events.last(),
        Some(Ok(StreamEvent::Finish(FinishReason::Stop)))
    ));
    assert!(events.iter().any(|event| matches!(
        event,
        Ok(StreamEvent::Usage(usage)) if usage.input_tokens == 7
    )));
    let prompts = fixture.scripted.prompts.lock().expect("lock");
    assert!(
        prompts[0]
            .prompt
            .starts_with("<|im_start|>system\nReply with exactly one JSON")
    );
    assert!(
        prompts[0]
            .prompt
            .ends_with("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    );
    assert_eq!(
        prompts[0].grammar.as_deref(),
        Some(contract::grammar(&[]).as_str())
    );
    assert_eq!(prompts[0].max_tokens, 64);
}

#[tokio::test]
async fn tool_calls_come_out_as_calls_with_their_finish_reason() {
    let fixture = fixture(true);
    fixture.script(Some(
        r#"{"type":"tool_calls","calls":[{"id":"c1","name":"Calculator","arguments":{"expression":"2+2"}}]}"#,
    ));
    let tool = calculator();
    let response = crate::llm::collect(
        fixture
            .client()
            .stream(request(vec![tool]), CancellationToken::new()),
    )
    .await
    .expect("answer");
    assert_eq!(response.content, "");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].name, "Calculator");
    assert_eq!(response.tool_calls[0].arguments, r#"{"expression":"2+2"}"#);
    let prompts = fixture.scripted.prompts.lock().expect("lock");
    assert!(
        prompts[0]
            .grammar
            .as_deref()
            .is_some_and(|g| g.contains("\\\"name\\\":\\\"Calculator\\\""))
    );
}

#[tokio::test]
async fn a_tool_call_cut_at_the_token_limit_is_a_cut_off_and_a_cut_answer_is_kept() {
    let fixture = fixture(true);
    fixture.script(Some(
        r#"{"type":"tool_calls","calls":[{"id":"c1","name":"Calculator","arguments":{"expression":"2+2"}}]}"#,
    ));
    // Ten tokens of three characters: the tool call is cut inside its name; fifteen: the
    // answer is cut after its first words.
    let limited = |tools, limit| ChatRequest {
        max_tokens: Some(limit),
        ..request(tools)
    };
    let tool = calculator();
    let in_name = events(&fixture.client(), limited(vec![tool], 10)).await;
    assert!(
        matches!(
            in_name.as_slice(),
            [Err(LlmError::CutOff {
                provider: crate::llm::ProviderId::Local,
                limit: 10,
                used,
            })] if used.output_tokens == 10 && used.input_tokens > 0
        ),
        "the cut request's tokens are reported: {in_name:?}"
    );
    let error = in_name[0].as_ref().expect_err("cut off").to_string();
    assert!(!error.contains("tool_calls"), "no raw contract: {error}");
    // Thirty tokens end inside the argument's string, thirty-one right after the arguments'
    // closing brace: closing the text would give a call, but one whose end was never written
    // is not run (and its arguments are not an answer either).
    for limit in [30, 31] {
        fixture.script(Some(
            r#"{"type":"tool_calls","calls":[{"id":"c1","name":"Calculator","arguments":{"expression":"2+2"}}]}"#,
        ));
        let tool = calculator();
        let cut = events(&fixture.client(), limited(vec![tool], limit)).await;
        assert!(
            matches!(
                cut.as_slice(),
                [Err(LlmError::CutOff {
                    provider: crate::llm::ProviderId::Local,
                    ..
                })]
            ),
            "{limit}: {cut:?}"
        );
    }

    fixture.script(Some(
        r#"{"type":"final","content":"Hello there, this answer is long"}"#,
    ));
    let response = crate::llm::collect(
        fixture
            .client()
            .stream(limited(Vec::new(), 15), CancellationToken::new()),
    )
    .await
    .expect("a cut final answer is still an answer");
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert!(
        response.content.starts_with("Hello there") && !response.content.ends_with("long"),
        "{response:?}"
    );
}

#[tokio::test]
async fn cancelling_mid_stream_stops_the_generation() {
    let fixture = fixture(true);
    fixture.script(None);
    let cancel = CancellationToken::new();
    let mut stream = fixture.client().stream(request(Vec::new()), cancel.clone());
    let first = stream.next().await;
    assert!(
        matches!(first, Some(Ok(StreamEvent::TextDelta(ref text))) if text == "partial"),
        "{first:?}"
    );
    cancel.cancel();
    let rest: Vec<_> = stream.collect().await;
    assert!(
        matches!(rest.as_slice(), [Err(LlmError::Cancelled)]),
        "{rest:?}"
    );
}

#[tokio::test]
async fn an_unreadable_answer_is_an_error_and_a_missing_file_says_how_to_pull_it() {
    let broken = fixture(true);
    broken.script(Some("{{{ broken"));
    let answer = events(&broken.client(), request(Vec::new())).await;
    assert!(
        matches!(answer.last(), Some(Err(LlmError::Malformed { detail, .. })) if detail.contains("invalid JSON")),
        "{answer:?}"
    );

    let missing = fixture(false);
    let answer = events(&missing.client(), request(Vec::new())).await;
    let Some(Err(error)) = answer.last() else {
        panic!("{answer:?}");
    };
    assert!(
        error
            .to_string()
            .contains("souz models pull smollm2-135m-instruct"),
        "{error}"
    );
    assert_eq!(missing.scripted.loads.load(Ordering::SeqCst), 0);
    assert!(matches!(
        LocalClient::new(Arc::clone(&missing.models), "embeddinggemma-300m", 1, 0.0),
        Err(LocalError::WrongKind(..))
    ));
}

#[tokio::test]
async fn a_model_is_loaded_once_and_unloaded_when_idle_but_never_in_use() {
    let fixture = fixture(true);
    let profile = profiles::find("smollm2-135m-instruct").expect("profile");
    let held = fixture.models.acquire(profile, false).await.expect("load");
    let again = fixture
        .models
        .acquire(profile, false)
        .await
        .expect("cached");
    drop(again);
    assert_eq!(fixture.scripted.loads.load(Ordering::SeqCst), 1);
    assert_eq!(fixture.models.loaded_names(), ["smollm2-135m-instruct"]);
    let later = Instant::now() + Duration::from_secs(61);
    assert!(fixture.models.unload_idle(later).is_empty(), "in use");
    drop(held);
    assert!(
        fixture.models.unload_idle(Instant::now()).is_empty(),
        "not idle yet"
    );
    assert_eq!(fixture.models.unload_idle(later), ["smollm2-135m-instruct"]);
    assert!(fixture.models.loaded_names().is_empty());
    fixture
        .models
        .acquire(profile, false)
        .await
        .expect("reload");
    assert_eq!(fixture.scripted.loads.load(Ordering::SeqCst), 2);
}

#[cfg(feature = "local-llm")]
mod real;
