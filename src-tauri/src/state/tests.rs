//! The shell's state as events move it: icon, tooltip, notifications to post and withdraw.

use serde_json::json;
use souz_protocol::{
    ApprovalStatus, ExpiryReason, RecordedDecision, Requester, Risk, ScopeKind, SuggestedScope,
    Verdict,
};

use super::*;

fn approval(id: &str, arguments: serde_json::Value) -> Approval {
    let now = chrono::Utc::now();
    Approval {
        id: id.into(),
        call_id: format!("call-{id}"),
        status: ApprovalStatus::Pending,
        requester: Requester::Cli,
        requester_label: "Claude Code 1.2".into(),
        tool: "RunCommand".into(),
        risk: Risk::Exec,
        arguments,
        summary: "Run a command".into(),
        diff: None,
        reason: "commands ask".into(),
        suggested: SuggestedScope {
            scope: ScopeKind::Once,
            minutes: None,
            argument_match: Default::default(),
            label: "once".into(),
        },
        created_at: now,
        expires_at: now,
        decision: None,
        expiry_reason: None,
    }
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
    state.apply_chat("execution.started", "c1", Some("e1"));
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
    let notices = state.reset(vec![approval("new", json!({}))], Vec::new(), true);
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
            .reset(vec![approval("new", json!({}))], Vec::new(), true)
            .is_empty()
    );
}

#[test]
fn turns_end_with_a_notice_and_pause_events_flip_the_switch() {
    let mut state = ShellState::default();
    state.apply_chat("execution.started", "c1", Some("e1"));
    assert!(
        state
            .apply_chat("message.delta", "c1", Some("e1"))
            .is_empty()
    );
    let ended = state.apply_chat("execution.failed", "c1", Some("e1"));
    assert!(matches!(&ended[..], [Notice::TurnEnded { how, .. }] if how == "failed"));
    assert!(state.turns.is_empty());
    state.apply_runtime(&RuntimeEvent::DaemonPaused { via: "ui".into() });
    assert!(state.paused && state.tooltip().contains("paused"));
    state.apply_runtime(&RuntimeEvent::DaemonResumed { via: "ui".into() });
    assert!(!state.paused);
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
