//! The shell's state as events move it: icon, tooltip, notifications to post and withdraw, and
//! the tray entries of the agents' questions.

use serde_json::json;
use souz_protocol::chat::events::{
    ExecutionCancelledPayload, ExecutionFailedPayload, ExecutionStartedPayload,
    MessageDeltaPayload, OptionRequestedPayload,
};
use souz_protocol::chat::{OptionChoice, OptionStatus};
use souz_protocol::{
    ApprovalStatus, ExpiryReason, RecordedDecision, Requester, Risk, ScopeKind, SuggestedScope,
    Verdict,
};

use souz_protocol::approvals::ParkedRun;
use souz_protocol::language::Language;
use souz_protocol::schedules::{RunState, Schedule, ScheduleAction};

use super::*;
use crate::texts::set_language;

fn approval(id: &str, arguments: serde_json::Value) -> Approval {
    let now = chrono::Utc::now();
    Approval {
        id: id.into(),
        call_id: format!("call-{id}"),
        status: ApprovalStatus::Pending,
        requester: Requester::Cli,
        requester_label: "Claude Code 1.2".into(),
        tool: "RunCommand".into(),
        server: None,
        risk: Risk::Exec,
        arguments,
        summary: "Run a command".into(),
        diff: None,
        reason: "commands ask".into(),
        suggested: SuggestedScope {
            scope: ScopeKind::Once,
            minutes: None,
            argument_match: Default::default(),
            tool_group: None,
            label: "once".into(),
        },
        created_at: now,
        expires_at: now,
        decision: None,
        expiry_reason: None,
        parked: None,
    }
}

/// An event of chat `c1`, execution `e1`.
fn chat_event(body: ChatEventBody) -> ChatEvent {
    ChatEvent {
        seq: Some(1),
        durable: true,
        chat_id: "c1".into(),
        execution_id: Some("e1".into()),
        body,
        created_at: chrono::Utc::now(),
    }
}

fn started() -> ChatEvent {
    chat_event(ChatEventBody::ExecutionStarted(ExecutionStartedPayload {
        execution_id: "e1".into(),
        user_message_id: "m1".into(),
        model: None,
        provider: None,
        streaming_messages: true,
    }))
}

fn requested(approval: Approval) -> RuntimeEvent {
    RuntimeEvent::ApprovalRequested {
        approval: Box::new(approval),
    }
}

#[test]
fn icon_follows_approvals_then_turns() {
    let mut state = ShellState::default();
    assert_eq!(state.icon(), TrayIcon::Idle);
    state.apply_chat(&started());
    assert_eq!(state.icon(), TrayIcon::Busy);
    let notices = state.apply_runtime(&requested(approval("a1", json!({"command": "git push"}))));
    assert!(matches!(&notices[..], [Notice::Approval(a)] if a.id == "a1"));
    state.apply_runtime(&requested(approval("a2", json!({}))));
    assert_eq!(state.icon(), TrayIcon::Attention(2));
    assert_eq!(
        state.tooltip(),
        "Souz — 2 approvals waiting — 1 agent turn running"
    );
    // The same request again (a replay) posts nothing new.
    assert!(
        state
            .apply_runtime(&requested(approval("a1", json!({}))))
            .is_empty()
    );
}

#[test]
fn decisions_and_expiry_withdraw_the_notification() {
    let mut state = ShellState::default();
    state.apply_runtime(&requested(approval("a1", json!({}))));
    state.apply_runtime(&requested(approval("a2", json!({}))));
    let decided = state.apply_runtime(&RuntimeEvent::ApprovalDecided {
        approval_id: "a1".into(),
        call_id: "c".into(),
        tool: "RunCommand".into(),
        decision: RecordedDecision {
            decision: Verdict::Approve,
            scope: ScopeKind::Once,
            minutes: None,
            argument_match: None,
            tool_group: None,
            via: "cli".into(),
            decided_at: chrono::Utc::now(),
            grant_id: None,
        },
    });
    assert_eq!(
        decided,
        [Notice::Withdraw {
            approval_id: "a1".into()
        }]
    );
    let expired = state.apply_runtime(&RuntimeEvent::ApprovalExpired {
        approval_id: "a2".into(),
        call_id: "c".into(),
        tool: "RunCommand".into(),
        reason: ExpiryReason::Timeout,
    });
    assert_eq!(expired.len(), 2);
    assert!(matches!(&expired[1], Notice::Expired { tool, .. } if tool == "RunCommand"));
    assert_eq!(state.icon(), TrayIcon::Idle);
}

#[test]
fn reset_posts_new_and_withdraws_vanished_approvals() {
    let mut state = ShellState::default();
    state.apply_runtime(&requested(approval("old", json!({}))));
    let notices = state.reset(
        vec![approval("new", json!({}))],
        Vec::new(),
        Vec::new(),
        true,
    );
    assert!(notices.contains(&Notice::Withdraw {
        approval_id: "old".into()
    }));
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::Approval(a) if a.id == "new"))
    );
    assert!(state.paused);
    // Reconnecting with the same state posts nothing twice.
    assert!(
        state
            .reset(
                vec![approval("new", json!({}))],
                Vec::new(),
                Vec::new(),
                true
            )
            .is_empty()
    );
}

#[test]
fn turns_end_with_a_notice_and_pause_events_flip_the_switch() {
    let mut state = ShellState::default();
    state.apply_chat(&started());
    assert!(
        state
            .apply_chat(&chat_event(ChatEventBody::MessageDelta(
                MessageDeltaPayload {
                    message_id: "m2".into(),
                    execution_id: "e1".into(),
                    attempt: 1,
                    delta: "hi".into(),
                }
            )))
            .is_empty()
    );
    let ended = state.apply_chat(&chat_event(ChatEventBody::ExecutionFailed(
        ExecutionFailedPayload {
            execution_id: "e1".into(),
            error_code: "agent_execution_failed".into(),
            error_message: "boom".into(),
        },
    )));
    assert!(matches!(
        &ended[..],
        [Notice::TurnEnded { how, chat_id, execution_id, .. }]
            if how == "failed" && chat_id == "c1" && execution_id == "e1"
    ));
    assert!(state.turns.is_empty());
    state.apply_runtime(&RuntimeEvent::DaemonPaused { via: "ui".into() });
    assert!(state.paused && state.tooltip().contains("paused"));
    state.apply_runtime(&RuntimeEvent::DaemonResumed { via: "ui".into() });
    assert!(!state.paused);
}

#[test]
fn a_question_stops_the_turn_without_a_notice_and_a_cancel_says_so() {
    let mut state = ShellState::default();
    state.apply_chat(&started());
    let asked = chat_event(ChatEventBody::OptionRequested(OptionRequestedPayload {
        option_id: "o1".into(),
        kind: "generic_selection".into(),
        title: "Which?".into(),
        selection_mode: SelectionMode::Single,
        options: Vec::new(),
        free_text: true,
        expires_at: None,
    }));
    assert!(ShellState::moves_turns(&asked));
    assert!(state.apply_chat(&asked).is_empty());
    assert!(state.turns.is_empty());
    state.apply_chat(&started());
    let cancelled = chat_event(ChatEventBody::ExecutionCancelled(
        ExecutionCancelledPayload {
            execution_id: "e1".into(),
        },
    ));
    let ended = state.apply_chat(&cancelled);
    assert!(matches!(&ended[..], [Notice::TurnEnded { how, .. }] if how == "cancelled"));
    // A kind this shell does not know moves nothing.
    let unknown = chat_event(ChatEventBody::Other {
        kind: "execution.paused".into(),
        payload: json!({}),
    });
    assert!(!ShellState::moves_turns(&unknown));
    state.apply_chat(&started());
    assert!(state.apply_chat(&unknown).is_empty());
    assert_eq!(state.turns.len(), 1);
}

#[test]
fn notification_text_names_who_what_and_the_key_argument() {
    let (title, body) = approval_text(&approval("a", json!({"command": "git push --force"})));
    assert_eq!(title, "Claude Code 1.2 wants to use RunCommand");
    assert_eq!(body, "Run a command\ngit push --force");
    let web = approval("w", json!({"url": "https://example.org/page?q=1"}));
    assert_eq!(key_argument(&web).as_deref(), Some("example.org"));
    let long = "x".repeat(300);
    assert_eq!(shorten(&long, 10).chars().count(), 11);
    assert_eq!(key_argument(&approval("n", json!({"other": 1}))), None);
}

#[test]
fn an_external_tool_is_named_with_its_mcp_server() {
    let mut external = approval("m", json!({"path": "/tmp/a"}));
    external.tool = "mcp__files__read_file".into();
    external.server = Some("files".into());
    let (title, _) = approval_text(&external);
    assert_eq!(
        title,
        "Claude Code 1.2 wants to use mcp__files__read_file from the MCP server files"
    );
    assert_eq!(
        tool_label(&external),
        "mcp__files__read_file from the MCP server files"
    );
}

fn question(id: &str, mode: SelectionMode, labels: &[&str], free_text: bool) -> Question {
    let now = chrono::Utc::now();
    Question {
        id: id.into(),
        chat_id: "0193f2ab-0000-7000-8000-000000000001".into(),
        chat_title: Some("Logo".into()),
        execution_id: format!("execution-{id}"),
        kind: "generic_selection".into(),
        title: "Which color should the logo be?".into(),
        selection_mode: mode,
        options: labels
            .iter()
            .enumerate()
            .map(|(index, label)| OptionChoice {
                id: format!("choice-{}", index + 1),
                label: (*label).into(),
                content: None,
            })
            .collect(),
        free_text,
        status: OptionStatus::Pending,
        created_at: now,
        expires_at: None,
        answered_at: None,
        answer: None,
    }
}

fn asked(question: Question) -> RuntimeEvent {
    RuntimeEvent::OptionRequested {
        option: Box::new(question),
    }
}

#[test]
fn a_question_is_notified_once_counted_and_withdrawn_when_answered_anywhere() {
    let mut state = ShellState::default();
    let q = question("q1", SelectionMode::Single, &["Red", "Blue"], false);
    let notices = state.apply_runtime(&asked(q.clone()));
    assert!(matches!(&notices[..], [Notice::Question(posted)] if posted.id == "q1"));
    assert!(
        state.apply_runtime(&asked(q)).is_empty(),
        "a replay posts nothing"
    );
    assert_eq!(state.icon(), TrayIcon::Attention(1));
    state.apply_runtime(&requested(approval("a1", json!({}))));
    assert_eq!(state.icon(), TrayIcon::Attention(2));
    assert_eq!(
        state.tooltip(),
        "Souz — 1 approval waiting — 1 question waiting"
    );
    let answered = state.apply_runtime(&RuntimeEvent::OptionAnswered {
        option_id: "q1".into(),
        chat_id: "c".into(),
        execution_id: "e".into(),
        selected_option_ids: vec!["choice-2".into()],
        free_text: None,
    });
    assert_eq!(
        answered,
        [Notice::WithdrawQuestion {
            option_id: "q1".into()
        }]
    );
    assert!(state.questions.is_empty());
    for ended in [
        RuntimeEvent::OptionCancelled {
            option_id: "q2".into(),
            chat_id: "c".into(),
            execution_id: "e".into(),
        },
        RuntimeEvent::OptionExpired {
            option_id: "q2".into(),
            chat_id: "c".into(),
            execution_id: "e".into(),
        },
    ] {
        state.apply_runtime(&asked(question(
            "q2",
            SelectionMode::Multiple,
            &["A"],
            true,
        )));
        assert_eq!(state.questions.len(), 1);
        assert_eq!(
            state.apply_runtime(&ended),
            [Notice::WithdrawQuestion {
                option_id: "q2".into()
            }]
        );
        assert!(state.questions.is_empty());
    }
}

#[test]
fn reset_posts_new_and_withdraws_vanished_questions() {
    let mut state = ShellState::default();
    state.apply_runtime(&asked(question(
        "old",
        SelectionMode::Single,
        &["A"],
        false,
    )));
    let fresh = question("new", SelectionMode::Single, &["A"], false);
    let notices = state.reset(Vec::new(), vec![fresh.clone()], Vec::new(), false);
    assert!(notices.contains(&Notice::WithdrawQuestion {
        option_id: "old".into()
    }));
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::Question(q) if q.id == "new"))
    );
    assert!(
        state
            .reset(Vec::new(), vec![fresh], Vec::new(), false)
            .is_empty()
    );
}

#[test]
fn question_notifications_say_souz_asks_with_the_question_and_choices() {
    let (title, body) = question_text(&question(
        "q",
        SelectionMode::Single,
        &["Red", "Blue"],
        false,
    ));
    assert_eq!(title, "Souz asks");
    assert_eq!(body, "Which color should the logo be?\nRed · Blue");
    let (_, free) = question_text(&question("q", SelectionMode::Single, &[], true));
    assert_eq!(free, "Which color should the logo be?");
}

#[test]
fn single_choice_questions_answer_from_the_tray_others_open_the_window() {
    let single = question_entries(&question(
        "q1",
        SelectionMode::Single,
        &["Red", "Blue"],
        false,
    ));
    let ids: Vec<&str> = single.iter().map(|entry| entry.id.as_str()).collect();
    assert_eq!(ids, ["show:q1", "answer:q1:choice-1", "answer:q1:choice-2"]);
    assert_eq!(
        single[0].label,
        "Logo asks: Which color should the logo be?"
    );
    assert_eq!(single[2].label, "    Blue");
    assert_eq!(answer_choice(&single[2].id), Some(("q1", "choice-2")));
    // The question itself opens the window at it, through the tray's `show:` as approvals do.
    assert_eq!(answer_choice(&single[0].id), None);

    let several = question_entries(&question("q2", SelectionMode::Multiple, &["A", "B"], false));
    assert_eq!(several.len(), 2, "{several:?}");
    assert_eq!(several[1].label, "    Answer in Souz…");
    assert_eq!(several[1].id, "show:q2");
    assert_eq!(answer_choice(&several[1].id), None);
    // Own words: the choices still answer in one click, and the window takes the words.
    let words = question_entries(&question("q3", SelectionMode::Single, &["A"], true));
    assert_eq!(words.len(), 3);
    assert!(words[1].id.starts_with("answer:"));
    assert_eq!(words[2].label, "    Answer in Souz…");
    assert_eq!(words[2].id, "show:q3");
    let mut untitled = question("q4", SelectionMode::Single, &[], true);
    untitled.chat_title = None;
    let entries = question_entries(&untitled);
    assert_eq!(
        entries[0].label,
        "Chat 0193f2ab asks: Which color should the logo be?"
    );
    assert_eq!(entries.len(), 2);

    for other in [
        "approve:a1",
        "open:/queue",
        "answer:q1",
        "answer::x",
        "answer:x:",
        "show:q1",
        "quit",
    ] {
        assert_eq!(answer_choice(other), None, "{other}");
    }
}

#[test]
fn a_model_download_shows_its_progress_until_it_completes_or_fails() {
    let mut state = ShellState::default();
    let model = "local/multilingual-e5-small";
    let progress = |received| RuntimeEvent::MemoryModelDownloadProgress {
        model: model.into(),
        received,
        total: 200 << 20,
    };
    let only = |state: &ShellState| {
        assert_eq!(state.downloads.len(), 1, "{:?}", state.downloads);
        state.downloads.values().next().unwrap().clone()
    };
    assert!(state.apply_runtime(&progress(84 << 20)).is_empty());
    let line = only(&state).describe();
    assert!(
        line.contains(model) && line.contains("42%") && line.contains("200"),
        "{line}"
    );
    assert!(state.tooltip().contains("42%"), "{}", state.tooltip());
    state.apply_runtime(&progress(200 << 20));
    assert!(only(&state).describe().contains("100%"));
    state.apply_runtime(&RuntimeEvent::MemoryModelDownloadCompleted {
        model: model.into(),
    });
    assert!(state.downloads.is_empty());
    assert!(!state.tooltip().contains(model));

    // A failure stays shown (memory searches by words) until a later attempt reports again.
    state.apply_runtime(&progress(1 << 20));
    state.apply_runtime(&RuntimeEvent::MemoryModelDownloadFailed {
        model: model.into(),
        error: "HTTP 500 from the mirror".into(),
    });
    let line = only(&state).describe();
    assert!(line.contains("HTTP 500") && !line.contains('%'), "{line}");
    state.apply_runtime(&progress(2 << 20));
    assert_eq!(only(&state).failed, None);
}

#[test]
fn a_local_model_download_shows_beside_memorys_until_it_completes_fails_or_is_cancelled() {
    let mut state = ShellState::default();
    state.apply_runtime(&RuntimeEvent::MemoryModelDownloadProgress {
        model: "local/multilingual-e5-small".into(),
        received: 1 << 20,
        total: 100 << 20,
    });
    let local = |received| RuntimeEvent::LocalModelDownloadProgress {
        model: "qwen3-4b".into(),
        received,
        total: 1000 << 20,
    };
    state.apply_runtime(&local(250 << 20));
    assert_eq!(state.downloads.len(), 2);
    let tooltip = state.tooltip();
    assert!(
        tooltip.contains("memory model local/multilingual-e5-small: 1%")
            && tooltip.contains("local model qwen3-4b: 25% of 1000 MB"),
        "{tooltip}"
    );
    state.apply_runtime(&RuntimeEvent::LocalModelDownloadCancelled {
        model: "qwen3-4b".into(),
    });
    assert!(!state.tooltip().contains("qwen3-4b"));
    state.apply_runtime(&local(1 << 20));
    state.apply_runtime(&RuntimeEvent::LocalModelDownloadFailed {
        model: "qwen3-4b".into(),
        error: "does not match its checksum".into(),
    });
    assert!(
        state
            .tooltip()
            .contains("Local model qwen3-4b could not be downloaded: does not match its checksum"),
        "{}",
        state.tooltip()
    );
    state.apply_runtime(&local(2 << 20));
    state.apply_runtime(&RuntimeEvent::LocalModelDownloadCompleted {
        model: "qwen3-4b".into(),
    });
    assert_eq!(state.downloads.len(), 1, "memory's is still going");
}

/// A schedule as `GET /v1/schedules` lists it; `next_fire` in RFC 3339.
fn schedule(id: &str, name: &str, next_fire: Option<&str>, enabled: bool) -> Schedule {
    let now = chrono::Utc::now();
    Schedule {
        id: id.into(),
        name: name.into(),
        spec: "30 8 * * 1".into(),
        zone: "UTC".into(),
        action: ScheduleAction::Prompt {
            prompt: "Summarise my inbox".into(),
            settings: Default::default(),
        },
        missed: Default::default(),
        overlap: Default::default(),
        envelope: Default::default(),
        enabled,
        chat_id: None,
        next_fire: next_fire.map(at),
        created_at: now,
        updated_at: now,
    }
}

fn at(rfc3339: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&chrono::Utc)
}

fn run_ended(schedule_id: &str, state: RunState, reason: Option<&str>) -> RuntimeEvent {
    RuntimeEvent::ScheduleRunEnded {
        schedule_id: schedule_id.into(),
        schedule_name: "Inbox summary".into(),
        run_id: 7,
        state,
        reason: reason.map(str::to_owned),
        chat_id: None,
    }
}

#[test]
fn the_next_line_names_the_earliest_enabled_schedule_and_follows_each_fetch() {
    set_language(Language::En);
    let mut state = ShellState::default();
    assert_eq!(
        state.next_run_line(&chrono::Utc),
        None,
        "no schedules: no line"
    );
    // 2026-12-07 is a Monday.
    state.set_schedules(vec![
        schedule("s1", "Weekly report", Some("2026-12-11T17:00:00Z"), true),
        schedule("s2", "Paused one", Some("2026-12-07T06:00:00Z"), false),
        schedule("s3", "Inbox summary", Some("2026-12-07T08:30:00Z"), true),
        schedule("s4", "Fired once", None, true),
    ]);
    assert_eq!(
        state.next_run_line(&chrono::Utc).as_deref(),
        Some("Next: Inbox summary at Mon 08:30"),
        "the paused schedule fires earlier but does not count"
    );
    let moscow = chrono::FixedOffset::east_opt(3 * 3600).unwrap();
    assert_eq!(
        state.next_run_line(&moscow).as_deref(),
        Some("Next: Inbox summary at Mon 11:30"),
        "shown in the zone given"
    );
    set_language(Language::Ru);
    assert_eq!(
        state.next_run_line(&chrono::Utc).as_deref(),
        Some("Далее: Inbox summary в Пн 08:30")
    );
    // `schedules.changed` asks for a fetch and posts nothing; the fetch replaces the list.
    let changed = RuntimeEvent::SchedulesChanged {};
    assert!(ShellState::refetches_schedules(&changed));
    assert!(!ShellState::refetches_schedules(
        &RuntimeEvent::SettingsChanged {}
    ));
    assert_eq!(state.apply_runtime(&changed), Vec::new());
    state.set_schedules(vec![schedule(
        "s2",
        "Paused one",
        Some("2026-12-07T06:00:00Z"),
        false,
    )]);
    assert_eq!(state.schedules.len(), 1);
    assert_eq!(
        state.next_run_line(&chrono::Utc),
        None,
        "only paused: no line"
    );
}

#[test]
fn a_run_that_ends_posts_one_notice_with_its_outcome_that_opens_its_chat() {
    set_language(Language::En);
    let mut state = ShellState::default();
    let mut known = schedule("s1", "Inbox summary", Some("2026-12-07T08:30:00Z"), true);
    known.chat_id = Some("chat-1".into());
    state.set_schedules(vec![known]);
    let notices = state.apply_runtime(&run_ended("s1", RunState::Ok, None));
    assert_eq!(
        notices,
        vec![Notice::RunEnded {
            schedule_id: "s1".into(),
            run_id: 7,
            text: ("Scheduled run".into(), "'Inbox summary' finished".into()),
            route: "/chat/chat-1".into(),
        }]
    );
    let text = |notices: Vec<Notice>| match notices.as_slice() {
        [Notice::RunEnded { text, route, .. }] => (text.1.clone(), route.clone()),
        other => panic!("expected one run notice, got {other:?}"),
    };
    assert_eq!(
        text(state.apply_runtime(&run_ended(
            "s1",
            RunState::Blocked,
            Some("RunCommand was denied")
        ))),
        (
            "'Inbox summary' was blocked: RunCommand was denied".into(),
            "/chat/chat-1".into()
        )
    );
    // A schedule the shell does not know (yet): its history.
    assert_eq!(
        text(state.apply_runtime(&run_ended("s9", RunState::Failed, Some("no model")))),
        (
            "'Inbox summary' failed: no model".into(),
            "/schedules/s9/runs".into()
        )
    );
    // The run names its own chat: that is where its notice leads.
    let mut named = run_ended("s9", RunState::Ok, None);
    if let RuntimeEvent::ScheduleRunEnded { chat_id, .. } = &mut named {
        *chat_id = Some("chat 9".into());
    }
    assert_eq!(text(state.apply_runtime(&named)).1, "/chat/chat%209");
    set_language(Language::Ru);
    assert_eq!(
        run_ended_text("Inbox summary", RunState::Failed, Some("нет модели")),
        (
            "Запуск по расписанию".into(),
            "«Inbox summary» не удался: нет модели".into()
        )
    );
    assert_eq!(state.waiting(), 0, "an ended run waits for nobody");
}

#[test]
fn a_parked_approval_shows_as_its_waiting_run_and_its_notification_names_the_run() {
    set_language(Language::En);
    let mut state = ShellState::default();
    let mut parked = approval("a1", json!({ "command": "rm -rf build" }));
    parked.created_at = at("2026-12-07T08:31:00Z");
    parked.requester_label = "scheduled run 'Inbox summary'".into();
    parked.parked = Some(ParkedRun {
        schedule_id: "s1".into(),
        schedule_name: "Inbox summary".into(),
        run_id: 7,
    });
    let plain = approval("a2", json!({ "command": "ls" }));
    let notices = state.apply_runtime(&requested(parked.clone()));
    assert_eq!(notices, vec![Notice::Approval(Box::new(parked.clone()))]);
    state.apply_runtime(&requested(plain.clone()));
    let runs = state.parked_runs();
    assert_eq!(runs.len(), 1, "only the parked approval is a parked run");
    assert_eq!(runs[0].0.id, "a1");
    assert_eq!(
        approval_line(&parked, &chrono::Utc),
        "Inbox summary waits for your approval since Mon 08:31"
    );
    assert_eq!(
        approval_line(&plain, &chrono::Utc),
        "Claude Code 1.2 · RunCommand · ls",
        "other approvals keep their line"
    );
    let (title, body) = notification_text(&parked);
    assert_eq!(
        title,
        "Scheduled run 'Inbox summary' wants to use RunCommand"
    );
    assert!(body.contains("rm -rf build"), "{body}");
    assert!(body.ends_with("The run waits for your approval."), "{body}");
    assert_eq!(notification_text(&plain), approval_text(&plain));
    set_language(Language::Ru);
    assert_eq!(
        approval_line(&parked, &chrono::Utc),
        "Inbox summary ждёт вашего одобрения с Пн 08:31"
    );
    assert_eq!(
        notification_text(&parked).0,
        "Запуск по расписанию «Inbox summary» хочет использовать RunCommand"
    );
    // Decided anywhere: no longer a parked run.
    state.apply_runtime(&RuntimeEvent::ApprovalDecided {
        approval_id: "a1".into(),
        call_id: "c".into(),
        tool: "RunCommand".into(),
        decision: RecordedDecision {
            decision: Verdict::Approve,
            scope: ScopeKind::Once,
            minutes: None,
            argument_match: None,
            tool_group: None,
            via: "ui".into(),
            decided_at: chrono::Utc::now(),
            grant_id: None,
        },
    });
    assert!(state.parked_runs().is_empty());
}
