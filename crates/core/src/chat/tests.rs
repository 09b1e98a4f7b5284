//! The chat service with a scripted engine at the `TurnEngine` boundary: event order and
//! durability, one active turn, idempotency, cancellation, questions, recovery, scoping.

use std::collections::BTreeMap;
use std::sync::Mutex as StdMutex;

use futures::StreamExt;
use serde_json::json;
use souz_protocol::RuntimeEvent;
use souz_protocol::chat::{
    ChatEventBody, ChatInput, CreateChat, Execution, InputDelivery, OptionAnswer, OptionChoice,
    PostMessage, SettingsPatch, TurnOptions,
};
use tokio::sync::mpsc;

use super::preferences::check_model;
use super::turns::{NewQuestion, Turn, TurnEngine, TurnEvent, TurnInput};
use super::*;
use crate::bus::FollowItem;
use crate::config::Config;
use crate::llm::models::Resolution;
use crate::testing::{self, TestHome};

mod devices;
mod questions;

/// An engine whose behavior depends on the message text.
#[derive(Default)]
struct Script {
    turns: StdMutex<Vec<Turn>>,
}

impl TurnEngine for Script {
    fn run(
        &self,
        turn: Turn,
        events: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> futures::future::BoxFuture<'static, TurnOutcome> {
        self.turns.lock().unwrap().push(turn.clone());
        Box::pin(async move {
            let usage = script_usage();
            match &turn.input {
                TurnInput::Approved { approval_id, .. } => TurnOutcome::Completed {
                    text: format!("Went on after {approval_id}"),
                    usage,
                    end_reason: Default::default(),
                },
                TurnInput::OptionAnswer {
                    selected,
                    free_text,
                    ..
                } => {
                    let choice = selected
                        .first()
                        .map(|c| c.label.clone())
                        .or(free_text.clone())
                        .unwrap_or_default();
                    TurnOutcome::Completed {
                        text: format!("You chose {choice}"),
                        usage,
                        end_reason: Default::default(),
                    }
                }
                TurnInput::Message(text) => match text.as_str() {
                    "device" | "device twice" => {
                        call_device(&turn, text == "device twice", &cancel, usage).await
                    }
                    "slow" => {
                        let _ = events.send(TurnEvent::Delta {
                            attempt: 1,
                            text: "thinking".into(),
                        });
                        cancel.cancelled().await;
                        TurnOutcome::Cancelled { usage }
                    }
                    "ask" => TurnOutcome::Asked {
                        question: NewQuestion {
                            kind: "generic_selection".into(),
                            title: "Which one?".into(),
                            selection_mode: souz_protocol::chat::SelectionMode::Single,
                            choices: vec![
                                OptionChoice {
                                    id: "a".into(),
                                    label: "Apples".into(),
                                    content: None,
                                },
                                OptionChoice {
                                    id: "b".into(),
                                    label: "Bananas".into(),
                                    content: None,
                                },
                            ],
                            free_text: true,
                        },
                        usage,
                    },
                    "fail" => TurnOutcome::Failed {
                        code: "agent_execution_failed".into(),
                        message: "model exploded".into(),
                        usage,
                    },
                    "tool" => {
                        let _ = events.send(TurnEvent::ToolCallStarted {
                            call_id: "c1".into(),
                            tool: "Calculator".into(),
                            arguments: json!({"expression": "2+2", "token": "sk-zzzzzzzzzzzz"}),
                        });
                        let _ = events.send(TurnEvent::ToolCallFinished {
                            call_id: "c1".into(),
                            tool: "Calculator".into(),
                            duration_ms: 3,
                            result_preview: json!("4"),
                            gate_call_id: Some("gate-c1".into()),
                        });
                        TurnOutcome::Completed {
                            text: "It is 4.".into(),
                            usage,
                            end_reason: Default::default(),
                        }
                    }
                    other => {
                        for word in other.split_inclusive(' ') {
                            let _ = events.send(TurnEvent::Delta {
                                attempt: 1,
                                text: word.to_owned(),
                            });
                        }
                        TurnOutcome::Completed {
                            text: format!("echo: {other}"),
                            usage,
                            end_reason: Default::default(),
                        }
                    }
                },
            }
        })
    }
}

/// What every scripted turn uses.
fn script_usage() -> Usage {
    Usage {
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
        precached_tokens: 0,
    }
}

/// Calls the device's `user.ask` as a model would (twice at once when `twice`), and answers with
/// what the model would read.
async fn call_device(
    turn: &Turn,
    twice: bool,
    cancel: &CancellationToken,
    usage: Usage,
) -> TurnOutcome {
    let completed = |text: String| TurnOutcome::Completed {
        text,
        usage: usage.clone(),
        end_reason: Default::default(),
    };
    let Some(tools) = turn.client_tools.clone() else {
        return completed("no device".into());
    };
    let Some(tool) = tools
        .offered
        .iter()
        .find(|tool| tool.skill_id == "user.ask")
        .cloned()
    else {
        return completed("user.ask is not offered".into());
    };
    let call = |id: &str| crate::agent::client_tools::ClientCall {
        tool_call_id: id.to_owned(),
        tool: tool.clone(),
        arguments: json!({"question": "Which room?"}),
    };
    let first = tools.host.call(call("call-1"), cancel.clone());
    if twice {
        let second = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tools.host.call(call("call-2"), cancel.clone()).await
        };
        let (_, second) = tokio::join!(first, second);
        return completed(
            second
                .map(|outcome| outcome.for_model().to_string())
                .unwrap_or_default(),
        );
    }
    match first.await {
        Some(outcome) => completed(outcome.for_model().to_string()),
        None => TurnOutcome::Cancelled { usage },
    }
}

struct Fixture {
    _dir: TestHome,
    store: Store,
    bus: EventBus,
    chats: Chats,
    script: Arc<Script>,
    llm: Arc<LlmService>,
    tasks: TaskTracker,
}

async fn fixture() -> Fixture {
    let dir = TestHome::new();
    let paths = dir.paths();
    paths.ensure_home().unwrap();
    let config = Config::defaults(paths.clone());
    let store = Store::open(paths.database()).await.unwrap();
    let llm = Arc::new(
        LlmService::new(
            &config.llm,
            store.clone(),
            paths.provider_key_file(),
            testing::environment(&[("OPENAI_API_KEY", "sk-test-key-0000")]),
        )
        .unwrap(),
    );
    let tasks = TaskTracker::new();
    let bus = EventBus::new(store.clone(), 1024);
    let (chats, script) = chats_over(&store, &bus, &llm, &tasks);
    Fixture {
        _dir: dir,
        store,
        bus,
        chats,
        script,
        llm,
        tasks,
    }
}

/// Chat files in these tests: none (attachments are tested through the gateway).
struct NoFiles;

impl super::ChatFiles for NoFiles {
    fn sandbox<'a>(
        &'a self,
        _chat_id: &'a str,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Arc<crate::sandbox::Sandbox>, crate::tools::gate::WorkspaceError>,
    > {
        Box::pin(async {
            Err(crate::tools::gate::WorkspaceError::UserFolder(
                crate::sandbox::users::UserFolderError::Folder {
                    path: "/nonexistent".into(),
                    reason: "no files in these tests".to_owned(),
                },
            ))
        })
    }
}

fn chats_over(
    store: &Store,
    bus: &EventBus,
    llm: &Arc<LlmService>,
    tasks: &TaskTracker,
) -> (Chats, Arc<Script>) {
    let defaults = SettingsDefaults {
        default_model: String::new(),
        context_size: 16000,
        temperature: 0.7,
        request_timeout_millis: 400_000,
        tools: vec!["Calculator".into(), "ListFiles".into()],
        time_zone: "UTC".into(),
        interface_language: souz_protocol::language::Language::En,
    };
    let chats = Chats::new(ChatsParts {
        store: store.clone(),
        events: bus.clone(),
        llm: Arc::clone(llm),
        defaults,
        tasks: tasks.clone(),
        shutdown: CancellationToken::new(),
        pause: crate::bus::PauseSwitch::new(None),
        files: Arc::new(NoFiles),
    });
    let script = Arc::new(Script::default());
    chats.set_engine(script.clone());
    (chats, script)
}

fn me() -> ChatUser {
    ChatUser("local".into())
}

fn message(text: &str) -> PostMessage {
    PostMessage {
        content: text.into(),
        client_message_id: None,
        options: None,
        attachments: Vec::new(),
    }
}

impl Fixture {
    async fn chat(&self) -> String {
        self.chats
            .create_chat(&me(), CreateChat::default())
            .await
            .unwrap()
            .0
            .chat
            .id
    }

    async fn kinds(&self, chat_id: &str) -> Vec<String> {
        self.chats
            .replay(&me(), chat_id, 0, 1000)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|e| e.kind().to_owned())
            .collect()
    }

    async fn execution(&self, chat_id: &str, execution_id: &str) -> Execution {
        let (chat, id) = (chat_id.to_owned(), execution_id.to_owned());
        self.store
            .read(move |c| records::load_execution(c, &chat, &id))
            .await
            .unwrap()
            .unwrap()
            .execution
    }

    async fn until_status(
        &self,
        chat_id: &str,
        execution_id: &str,
        status: ExecutionStatus,
    ) -> Execution {
        for _ in 0..500 {
            let execution = self.execution(chat_id, execution_id).await;
            if execution.status == status {
                return execution;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!(
            "execution never became {status:?}: {:?}",
            self.execution(chat_id, execution_id).await
        );
    }
}

#[tokio::test]
async fn a_turn_stores_messages_and_events_in_order_and_streams_deltas_live() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let mut live = Box::pin(f.chats.events().follow(&chat_id, 0));
    assert!(matches!(
        live.next().await,
        Some(FollowItem::Live { last_seq: 0 })
    ));

    let response = f
        .chats
        .post_message(&me(), &chat_id, message("hi there"))
        .await
        .unwrap();
    assert_eq!(response.message.role, "user");
    assert_eq!(response.message.seq, 1);
    assert_eq!(response.execution.status, ExecutionStatus::Running);
    let finished = f
        .until_status(&chat_id, &response.execution.id, ExecutionStatus::Completed)
        .await;
    assert_eq!(finished.usage.unwrap().total_tokens, 15);

    let mut seen = Vec::new();
    let mut delta_ids = Vec::new();
    while seen.last().map(String::as_str) != Some("execution.finished") {
        let Some(FollowItem::Event(event)) = live.next().await else {
            panic!("stream ended")
        };
        if let ChatEventBody::MessageDelta(delta) = &event.body {
            assert_eq!(delta.execution_id, response.execution.id);
            assert_eq!(delta.attempt, 1);
            delta_ids.push(delta.message_id.clone());
        }
        seen.push(event.kind().to_owned());
    }
    assert_eq!(
        seen,
        [
            "message.created",
            "execution.started",
            "message.delta",
            "message.delta",
            "message.created",
            "message.completed",
            "execution.finished"
        ]
    );
    assert_eq!(
        f.kinds(&chat_id).await,
        [
            "message.created",
            "execution.started",
            "message.created",
            "message.completed",
            "execution.finished"
        ],
        "deltas are live-only"
    );
    let messages = f
        .chats
        .messages(
            &me(),
            &chat_id,
            MessagePage {
                before: None,
                after: None,
                limit: 100,
            },
        )
        .await
        .unwrap()
        .items;
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].content, "echo: hi there");
    assert_eq!(
        finished.assistant_message_id.as_deref(),
        Some(messages[1].id.as_str())
    );
    // Deltas name the answer before it exists: the id it is stored under (original §1.8).
    assert_eq!(delta_ids, [messages[1].id.clone(), messages[1].id.clone()]);
    let chat = f
        .chats
        .list_chats(&me(), 10, false, None)
        .await
        .unwrap()
        .items
        .remove(0);
    assert_eq!(chat.last_message_preview.as_deref(), Some("echo: hi there"));
}

#[tokio::test]
async fn one_active_turn_per_chat() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let first = f
        .chats
        .post_message(&me(), &chat_id, message("slow"))
        .await
        .unwrap();
    let second = f
        .chats
        .post_message(&me(), &chat_id, message("again"))
        .await;
    assert!(
        matches!(second, Err(ChatError::ActiveExecution)),
        "{second:?}"
    );
    assert_eq!(
        f.chats
            .messages(
                &me(),
                &chat_id,
                MessagePage {
                    before: None,
                    after: None,
                    limit: 100
                }
            )
            .await
            .unwrap()
            .items
            .len(),
        1,
        "the refused message is not stored"
    );
    f.chats.cancel_active(&me(), &chat_id).await.unwrap();
    f.until_status(&chat_id, &first.execution.id, ExecutionStatus::Cancelled)
        .await;
    let third = f
        .chats
        .post_message(&me(), &chat_id, message("again"))
        .await
        .unwrap();
    f.until_status(&chat_id, &third.execution.id, ExecutionStatus::Completed)
        .await;
}

#[tokio::test]
async fn retrying_with_the_same_client_message_id_returns_the_original() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let request = PostMessage {
        client_message_id: Some(" k1 ".into()),
        ..message("hello")
    };
    let first = f
        .chats
        .post_message(&me(), &chat_id, request.clone())
        .await
        .unwrap();
    f.until_status(&chat_id, &first.execution.id, ExecutionStatus::Completed)
        .await;
    let again = f
        .chats
        .post_message(&me(), &chat_id, request)
        .await
        .unwrap();
    assert_eq!(again.execution.id, first.execution.id);
    assert_eq!(again.message.id, first.message.id);
    assert_eq!(again.assistant_message.unwrap().content, "echo: hello");
    assert_eq!(again.execution.client_message_id.as_deref(), Some("k1"));
    assert_eq!(
        f.chats
            .messages(
                &me(),
                &chat_id,
                MessagePage {
                    before: None,
                    after: None,
                    limit: 100
                }
            )
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    assert_eq!(f.script.turns.lock().unwrap().len(), 1, "no second turn");
}

#[tokio::test]
async fn cancelling_mid_stream_keeps_no_partial_answer() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let response = f
        .chats
        .post_message(&me(), &chat_id, message("slow"))
        .await
        .unwrap();
    let cancelling = f
        .chats
        .cancel_execution(&me(), &chat_id, &response.execution.id)
        .await
        .unwrap();
    assert!(cancelling.cancel_requested);
    let cancelled = f
        .until_status(&chat_id, &response.execution.id, ExecutionStatus::Cancelled)
        .await;
    assert_eq!(
        cancelled.error_code.as_deref(),
        Some("agent_execution_cancelled")
    );
    assert_eq!(
        f.chats
            .messages(
                &me(),
                &chat_id,
                MessagePage {
                    before: None,
                    after: None,
                    limit: 100
                }
            )
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let kinds = f.kinds(&chat_id).await;
    assert_eq!(kinds.last().unwrap(), "execution.cancelled");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.starts_with("execution.c")
                || k.ends_with("finished")
                || k.ends_with("failed"))
            .count(),
        1
    );
    assert!(
        matches!(f.chats.cancel_active(&me(), &chat_id).await, Err(ChatError::Invalid(m)) if m == "Chat has no active execution.")
    );
    assert!(
        matches!(f.chats.cancel_execution(&me(), &chat_id, &response.execution.id).await, Err(ChatError::Invalid(m)) if m == "Execution is not active.")
    );
    assert!(matches!(
        f.chats.cancel_execution(&me(), &chat_id, "nope").await,
        Err(ChatError::ExecutionNotFound)
    ));
}

#[tokio::test]
#[allow(clippy::too_many_lines, reason = "one scenario, step by step")]
async fn a_question_waits_and_the_answer_resumes_with_the_snapshot() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let request = PostMessage {
        options: Some(TurnOptions {
            temperature: Some(0.2),
            ..TurnOptions::default()
        }),
        ..message("ask")
    };
    let response = f
        .chats
        .post_message(&me(), &chat_id, request)
        .await
        .unwrap();
    f.until_status(
        &chat_id,
        &response.execution.id,
        ExecutionStatus::WaitingOption,
    )
    .await;
    let events = f.chats.replay(&me(), &chat_id, 0, 100).await.unwrap().items;
    let asked = events
        .iter()
        .find_map(|e| match &e.body {
            ChatEventBody::OptionRequested(asked) => Some(asked),
            _ => None,
        })
        .unwrap();
    assert_eq!(asked.title, "Which one?");
    let option_id = asked.option_id.clone();

    // Settings change meanwhile; the resumed turn must use the execution's snapshot.
    f.chats
        .patch_settings(
            &me(),
            SettingsPatch {
                temperature: Some(1.5),
                ..SettingsPatch::default()
            },
        )
        .await
        .unwrap();

    let answer = |ids: &[&str], text: Option<&str>| OptionAnswer {
        selected_option_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
        free_text: text.map(str::to_owned),
        metadata: BTreeMap::new(),
    };
    for (bad, message) in [
        (answer(&[], None), "selectedOptionIds must not be empty."),
        (
            answer(&["a", "b"], None),
            "Exactly one option must be selected.",
        ),
        (answer(&["zz"], None), "Unknown option id: zz."),
        (
            answer(&[" "], None),
            "selectedOptionIds must not contain blank ids.",
        ),
    ] {
        let error = f
            .chats
            .answer_option(&me(), &option_id, bad)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, ChatError::Invalid(m) if m == message),
            "{error:?}"
        );
    }
    let answered = f
        .chats
        .answer_option(&me(), &option_id, answer(&["b"], None))
        .await
        .unwrap();
    assert_eq!(answered.option.status, "answered");
    assert_eq!(answered.execution.status, ExecutionStatus::Running);
    let done = f
        .until_status(&chat_id, &response.execution.id, ExecutionStatus::Completed)
        .await;
    assert_eq!(
        done.usage.unwrap().total_tokens,
        30,
        "usage adds up across the question"
    );
    let messages = f
        .chats
        .messages(
            &me(),
            &chat_id,
            MessagePage {
                before: None,
                after: None,
                limit: 100,
            },
        )
        .await
        .unwrap()
        .items;
    assert_eq!(messages.last().unwrap().content, "You chose Bananas");
    let turns = f.script.turns.lock().unwrap().clone();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].execution_id, response.execution.id);
    assert_eq!(
        (&turns[0].message_id, &turns[1].message_id),
        (&messages.last().unwrap().id, &messages.last().unwrap().id),
        "one answer id for the whole execution, across the question"
    );
    assert_eq!(
        turns[1].settings.temperature, 0.2,
        "the snapshot, not the new settings"
    );
    let again = f
        .chats
        .answer_option(&me(), &option_id, answer(&["a"], None))
        .await;
    assert!(matches!(again, Err(ChatError::Invalid(m)) if m == "Option is not pending."));
    assert!(matches!(
        f.chats
            .answer_option(
                &ChatUser("someone".into()),
                &option_id,
                answer(&["a"], None)
            )
            .await,
        Err(ChatError::OptionNotFound)
    ));
    let kinds = f.kinds(&chat_id).await;
    assert!(kinds.contains(&"option.answered".to_owned()));
    assert_eq!(kinds.last().unwrap(), "execution.finished");
}

#[tokio::test]
async fn tool_events_are_redacted_and_follow_the_setting() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let response = f
        .chats
        .post_message(&me(), &chat_id, message("tool"))
        .await
        .unwrap();
    f.until_status(&chat_id, &response.execution.id, ExecutionStatus::Completed)
        .await;
    let events = f.chats.replay(&me(), &chat_id, 0, 100).await.unwrap().items;
    let started = events
        .iter()
        .find_map(|e| match &e.body {
            ChatEventBody::ToolCallStarted(started) => Some(started),
            _ => None,
        })
        .unwrap();
    assert_eq!(started.argument_keys, ["expression", "token"]);
    assert_eq!(started.arguments_preview["token"], "[REDACTED]");
    let finished = events
        .iter()
        .find_map(|e| match &e.body {
            ChatEventBody::ToolCallFinished(finished) => Some(finished),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (finished.tool_call_id.as_str(), finished.call_id.as_deref()),
        ("c1", Some("gate-c1")),
        "the model's id and the gate's, which undo names"
    );

    f.chats
        .patch_settings(
            &me(),
            SettingsPatch {
                show_tool_events: Some(false),
                ..SettingsPatch::default()
            },
        )
        .await
        .unwrap();
    let chat_id = f.chat().await;
    let response = f
        .chats
        .post_message(&me(), &chat_id, message("tool"))
        .await
        .unwrap();
    f.until_status(&chat_id, &response.execution.id, ExecutionStatus::Completed)
        .await;
    assert!(
        !f.kinds(&chat_id)
            .await
            .iter()
            .any(|k| k.starts_with("tool.call"))
    );
}

#[tokio::test]
async fn failures_are_terminal_once() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let response = f
        .chats
        .post_message(&me(), &chat_id, message("fail"))
        .await
        .unwrap();
    let failed = f
        .until_status(&chat_id, &response.execution.id, ExecutionStatus::Failed)
        .await;
    assert_eq!(failed.error_message.as_deref(), Some("model exploded"));
    // A late second end (e.g. a racing cancel) changes nothing.
    let ended = f
        .chats
        .end_execution(
            &chat_id,
            &response.execution.id,
            &[ExecutionStatus::Running, ExecutionStatus::Cancelling],
            TurnOutcome::Cancelled {
                usage: Usage::default(),
            },
        )
        .await
        .unwrap();
    assert!(ended.is_none());
    let kinds = f.kinds(&chat_id).await;
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.starts_with("execution.") && *k != "execution.started")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_restart_fails_what_a_dead_process_left_running() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let running = f
        .chats
        .post_message(&me(), &chat_id, message("slow"))
        .await
        .unwrap();
    let other_chat = f.chat().await;
    let asked = f
        .chats
        .post_message(&me(), &other_chat, message("ask"))
        .await
        .unwrap();
    f.until_status(
        &other_chat,
        &asked.execution.id,
        ExecutionStatus::WaitingOption,
    )
    .await;

    // A new process (another owner) starts over the same database.
    let (restarted, _) = chats_over(&f.store, &f.bus, &f.llm, &f.tasks);
    let recovered = restarted.recover().await.unwrap();
    assert_eq!(recovered, 1);
    let failed = f.execution(&chat_id, &running.execution.id).await;
    assert_eq!(failed.status, ExecutionStatus::Failed);
    assert_eq!(failed.error_code.as_deref(), Some("process_restarted"));
    let kinds = f.kinds(&chat_id).await;
    assert_eq!(kinds.last().unwrap(), "execution.failed");
    assert_eq!(
        f.execution(&other_chat, &asked.execution.id).await.status,
        ExecutionStatus::WaitingOption,
        "a pending question is not a crash"
    );
    // The chat is usable again.
    let next = restarted
        .post_message(&me(), &chat_id, message("again"))
        .await
        .unwrap();
    assert_eq!(next.execution.status, ExecutionStatus::Running);
}

/// A process that runs turns also ends, at each lease renewal, what another process sharing
/// the database left with an expired lease; a live lease is left alone.
#[tokio::test]
async fn a_running_process_ends_what_another_left_with_an_expired_lease() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let held = f
        .chats
        .post_message(&me(), &chat_id, message("slow"))
        .await
        .unwrap();
    let other_chat = f.chat().await;
    let stale = f
        .chats
        .post_message(&me(), &other_chat, message("slow"))
        .await
        .unwrap();
    // The process holding `stale` stopped renewing: its lease ran out a second ago.
    let id = stale.execution.id.clone();
    let past = crate::store::codec::to_time(now() - chrono::Duration::seconds(1));
    f.store
        .write(move |tx| {
            tx.execute(
                "UPDATE executions SET lease_until = ?2 WHERE id = ?1",
                rusqlite::params![id, past],
            )
            .map_err(StoreError::from)
        })
        .await
        .unwrap();

    let (watcher, _) = chats_over(&f.store, &f.bus, &f.llm, &f.tasks);
    assert_eq!(watcher.sweep_expired_leases().await.unwrap(), 1);
    let failed = f.execution(&other_chat, &stale.execution.id).await;
    assert_eq!(failed.status, ExecutionStatus::Failed);
    assert_eq!(failed.error_code.as_deref(), Some("process_restarted"));
    assert_eq!(
        f.execution(&chat_id, &held.execution.id).await.status,
        ExecutionStatus::Running,
        "a live lease is left alone"
    );
    assert_eq!(watcher.sweep_expired_leases().await.unwrap(), 0);
    // The turn still running in the first process ends without a second terminal event.
    f.chats
        .cancel_execution(&me(), &other_chat, &stale.execution.id)
        .await
        .ok();
    let kinds = f.kinds(&other_chat).await;
    let terminals = kinds
        .iter()
        .filter(|kind| kind.starts_with("execution.") && kind.as_str() != "execution.started")
        .count();
    assert_eq!(terminals, 1, "{kinds:?}");
}

/// A turn whose execution this process lost (recovery elsewhere failed it after its lease ran
/// out) is cancelled at the next renewal: it stops here, and the execution keeps the one
/// terminal event recovery gave it.
#[tokio::test]
async fn a_turn_that_lost_its_lease_is_cancelled_at_the_next_renewal() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let lost = f
        .chats
        .post_message(&me(), &chat_id, message("slow"))
        .await
        .unwrap();
    let other_chat = f.chat().await;
    let kept = f
        .chats
        .post_message(&me(), &other_chat, message("slow"))
        .await
        .unwrap();
    assert_eq!(f.chats.running_count(), 2);
    // This process stopped renewing `lost` (a stalled disk, a suspended machine): its lease
    // ran out, and another process sharing the database ended it.
    let id = lost.execution.id.clone();
    let past = crate::store::codec::to_time(now() - chrono::Duration::seconds(1));
    f.store
        .write(move |tx| {
            tx.execute(
                "UPDATE executions SET lease_until = ?2 WHERE id = ?1",
                rusqlite::params![id, past],
            )
            .map_err(StoreError::from)
        })
        .await
        .unwrap();
    let (other, _) = chats_over(&f.store, &f.bus, &f.llm, &f.tasks);
    assert_eq!(other.sweep_expired_leases().await.unwrap(), 1);
    assert_eq!(f.chats.running_count(), 2, "the turn still runs here");

    f.chats
        .renew_once(now() + chrono::Duration::seconds(60))
        .await;
    for _ in 0..500 {
        if f.chats.running_count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(f.chats.running_count(), 1, "the lost turn was cancelled");
    let failed = f.execution(&chat_id, &lost.execution.id).await;
    assert_eq!(failed.status, ExecutionStatus::Failed);
    assert_eq!(failed.error_code.as_deref(), Some("process_restarted"));
    let kinds = f.kinds(&chat_id).await;
    let terminals: Vec<&String> = kinds
        .iter()
        .filter(|kind| kind.starts_with("execution.") && kind.as_str() != "execution.started")
        .collect();
    assert_eq!(terminals, ["execution.failed"], "{kinds:?}");
    assert_eq!(
        f.execution(&other_chat, &kept.execution.id).await.status,
        ExecutionStatus::Running,
        "a turn whose lease holds runs on"
    );
}

/// A renewal that cannot be written (a full disk, a broken database) leaves the turns running
/// while their lease still holds, and cancels them once it has run out: past it, another
/// process may have taken their executions over.
#[tokio::test]
async fn a_failed_renewal_cancels_the_turns_only_once_their_lease_ran_out() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    f.chats
        .post_message(&me(), &chat_id, message("slow"))
        .await
        .unwrap();
    assert_eq!(f.chats.running_count(), 1);
    // From now on every write fails (the database refuses it), reads still work.
    f.store
        .write(|tx| {
            tx.execute_batch("PRAGMA query_only = 1")
                .map_err(StoreError::from)
        })
        .await
        .unwrap();

    let held = now() + chrono::Duration::seconds(60);
    assert_eq!(f.chats.renew_once(held).await, held, "not renewed");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        f.chats.running_count(),
        1,
        "within its lease the turn runs on"
    );

    let ran_out = now() - chrono::Duration::seconds(1);
    assert_eq!(f.chats.renew_once(ran_out).await, ran_out);
    for _ in 0..500 {
        if f.chats.running_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        f.chats.running_count(),
        0,
        "past its lease the turn was cancelled"
    );
}

#[tokio::test]
async fn chats_are_scoped_to_their_user() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let stranger = ChatUser("stranger".into());
    assert!(matches!(
        f.chats
            .messages(
                &stranger,
                &chat_id,
                MessagePage {
                    before: None,
                    after: None,
                    limit: 10
                }
            )
            .await,
        Err(ChatError::ChatNotFound)
    ));
    assert!(matches!(
        f.chats
            .post_message(&stranger, &chat_id, message("hi"))
            .await,
        Err(ChatError::ChatNotFound)
    ));
    assert!(matches!(
        f.chats.rename(&stranger, &chat_id, "x").await,
        Err(ChatError::ChatNotFound)
    ));
    assert!(matches!(
        f.chats.replay(&stranger, &chat_id, 0, 10).await,
        Err(ChatError::ChatNotFound)
    ));
    assert!(
        f.chats
            .list_chats(&stranger, 10, true, None)
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn chat_creation_is_idempotent_by_request_id() {
    let f = fixture().await;
    let request = CreateChat {
        request_id: Some("r1".into()),
        title: Some("Plans".into()),
        ..CreateChat::default()
    };
    let (first, created) = f.chats.create_chat(&me(), request.clone()).await.unwrap();
    assert!(created && !first.duplicate);
    let (again, created) = f.chats.create_chat(&me(), request).await.unwrap();
    assert!(!created && again.duplicate);
    assert_eq!(again.chat.id, first.chat.id);
    let other = CreateChat {
        request_id: Some("r1".into()),
        title: Some("Other".into()),
        ..CreateChat::default()
    };
    assert!(matches!(
        f.chats.create_chat(&me(), other).await,
        Err(ChatError::IdempotencyConflict)
    ));
    assert!(matches!(
        f.chats
            .create_chat(
                &me(),
                CreateChat {
                    request_id: Some(" ".into()),
                    ..CreateChat::default()
                }
            )
            .await,
        Err(ChatError::Invalid(_))
    ));
    let archived = f
        .chats
        .set_archived(&me(), &first.chat.id, true)
        .await
        .unwrap();
    assert!(archived.archived);
    assert!(
        f.chats
            .list_chats(&me(), 10, false, None)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        f.chats
            .list_chats(&me(), 10, true, None)
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let renamed = f
        .chats
        .rename(&me(), &first.chat.id, "  New  ")
        .await
        .unwrap();
    assert_eq!(renamed.title.as_deref(), Some("New"));
    assert!(renamed.updated_at >= first.chat.updated_at);
}

#[tokio::test]
async fn replay_and_live_stay_consistent_while_events_are_written() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    for round in 0..5 {
        let response = f
            .chats
            .post_message(&me(), &chat_id, message(&format!("warm {round}")))
            .await
            .unwrap();
        f.until_status(&chat_id, &response.execution.id, ExecutionStatus::Completed)
            .await;
    }
    let writer = {
        let chats = f.chats.clone();
        let chat_id = chat_id.clone();
        crate::tasks::spawn_in_test(async move {
            for round in 0..20 {
                let response = chats
                    .post_message(
                        &me(),
                        &chat_id,
                        message(&format!("round {round} with words")),
                    )
                    .await
                    .unwrap();
                loop {
                    let (chat, id) = (chat_id.clone(), response.execution.id.clone());
                    let status = chats
                        .inner
                        .store
                        .read(move |c| records::load_execution(c, &chat, &id))
                        .await
                        .unwrap()
                        .unwrap()
                        .execution
                        .status;
                    if !status.is_active() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        })
    };
    let mut stream = Box::pin(f.chats.events().follow(&chat_id, 3));
    let mut seqs = Vec::new();
    let expected_total = (5 + 20) * 5;
    while seqs.len() < expected_total - 3 {
        match tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
        {
            Some(FollowItem::Event(event)) => {
                if let Some(seq) = event.seq {
                    seqs.push(seq);
                }
            }
            Some(FollowItem::Live { .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    writer.await.unwrap();
    let expected: Vec<i64> = (4..=i64::try_from(expected_total).unwrap()).collect();
    assert_eq!(
        seqs, expected,
        "every stored event once, in order, across the switch to live"
    );
}

#[test]
fn model_names_are_checked_like_the_original() {
    let message = |result: Result<_, ChatError>| match result {
        Err(ChatError::Invalid(message)) => format!("400 {message}"),
        Err(ChatError::UnsupportedModel(message)) => format!("409 {message}"),
        other => format!("{other:?}"),
    };
    assert_eq!(
        message(check_model(
            "model",
            Resolution::Unknown {
                name: "gpt-nope".into(),
                suggestions: vec![],
            }
        )),
        "400 model must be a known model alias."
    );
    assert_eq!(
        message(check_model(
            "defaultModel",
            Resolution::Unknown {
                name: "gpt-5-min".into(),
                suggestions: vec!["openai/gpt-5-mini".into()],
            }
        )),
        "400 defaultModel must be a known model alias. Did you mean openai/gpt-5-mini?"
    );
    assert_eq!(
        message(check_model(
            "model",
            Resolution::Ambiguous {
                name: "mini".into(),
                candidates: vec!["openai/mini".into(), "ai_tunnel/mini".into()],
            }
        )),
        "400 model is ambiguous; use a model enum name (openai/mini, ai_tunnel/mini)."
    );
    assert!(
        message(check_model(
            "model",
            Resolution::Unsupported {
                name: "text-embedding-v3".into(),
                reason: "it is an embedding model, not a chat model".into(),
            }
        ))
        .starts_with("409 `text-embedding-v3` cannot be used")
    );
}

/// Input queued while a turn ran survives a restart: the next start runs its turn (the inputs
/// together, in the order sent, on the latest stored message), exactly once.
#[tokio::test]
async fn input_queued_before_a_restart_starts_its_turn_after_it() {
    let f = fixture().await;
    let chat_id = f.chat().await;
    let running = f
        .chats
        .post_message(&me(), &chat_id, message("slow"))
        .await
        .unwrap();
    let mut last = None;
    for content in ["first one", "second one"] {
        let queued = f
            .chats
            .send_input(
                &me(),
                &chat_id,
                ChatInput {
                    content: content.into(),
                    client_message_id: None,
                    attachments: Vec::new(),
                },
            )
            .await
            .unwrap();
        assert_eq!(queued.delivery, InputDelivery::Queued);
        last = Some(queued.message.id);
    }

    // A new process over the same database: the cut turn fails, the queued input's turn runs.
    let (restarted, _) = chats_over(&f.store, &f.bus, &f.llm, &f.tasks);
    assert_eq!(restarted.recover().await.unwrap(), 1);
    assert_eq!(restarted.resume_queued().await.unwrap(), 1);
    assert_eq!(
        f.execution(&chat_id, &running.execution.id).await.status,
        ExecutionStatus::Failed
    );
    let reply = "echo: first one\n\nsecond one";
    let mut messages = Vec::new();
    for _ in 0..500 {
        messages = restarted
            .messages(
                &me(),
                &chat_id,
                MessagePage {
                    before: None,
                    after: None,
                    limit: 50,
                },
            )
            .await
            .unwrap()
            .items;
        if messages.iter().any(|message| message.content == reply) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        messages.iter().any(|message| message.content == reply),
        "{messages:?}"
    );
    let chat = chat_id.clone();
    let newest: String = f
        .store
        .read(move |c| {
            c.query_row(
                "SELECT id FROM executions WHERE chat_id = ?1 ORDER BY rowid DESC LIMIT 1",
                [&chat],
                |row| row.get(0),
            )
            .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    let turn = f.execution(&chat_id, &newest).await;
    assert_eq!(
        turn.user_message_id, last,
        "the turn's message is the latest input"
    );
    // Taken once: a second start has nothing to run.
    assert_eq!(restarted.resume_queued().await.unwrap(), 0);
}

/// A turn's start finds its chat's previous execution through `executions_by_chat`, not by
/// reading every execution of every chat.
#[tokio::test]
async fn the_delivered_messages_query_reads_executions_by_chat() {
    let home = TestHome::new();
    let store = home.store().await;
    let plan = store
        .read(|c| {
            let mut statement = c.prepare(&format!(
                "EXPLAIN QUERY PLAN {}",
                super::delivered::DELIVERED_SINCE_PREVIOUS
            ))?;
            let details = statement
                .query_map(rusqlite::params!["c", "e", 20], |r| r.get::<_, String>(3))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, crate::store::StoreError>(details.join("\n"))
        })
        .await
        .unwrap();
    assert!(plan.contains("executions_by_chat"), "{plan}");
    assert!(
        !plan.contains("SCAN previous"),
        "no scan of every execution: {plan}"
    );
}

/// The SQL set of active statuses is exactly the one `ExecutionStatus::is_active` names.
#[test]
fn the_sql_active_statuses_are_the_active_ones() {
    use souz_protocol::chat::ExecutionStatus as S;
    for status in [
        S::Queued,
        S::Running,
        S::WaitingOption,
        S::WaitingApproval,
        S::Cancelling,
        S::Cancelled,
        S::Completed,
        S::Failed,
    ] {
        let listed = super::records::ACTIVE_STATUSES.contains(&format!("'{}'", status.as_str()));
        assert_eq!(listed, status.is_active(), "{status:?}");
    }
}
