use std::path::PathBuf;

use souz_protocol::{
    ArgumentMatch, DecisionRequest, DecisionSource, Effect, ScopeKind, ToolGroup, Verdict,
};

use super::decisions::{MAX_SCOPE_MINUTES, clean_via};
use super::*;
use crate::approvals::CallTarget;
use crate::sandbox::Access;
use crate::testing::TestHome;

struct Fixture {
    dir: TestHome,
    store: Store,
    events: EventBus,
    approvals: Approvals,
}

async fn fixture() -> Fixture {
    fixture_with(|_| {}).await
}

async fn fixture_with(adjust: impl FnOnce(&mut Config)) -> Fixture {
    let dir = TestHome::new();
    let mut config = TestHome::template_config(dir.flat_paths());
    adjust(&mut config);
    let store = dir.store().await;
    let events = EventBus::new(store.clone(), 1024);
    let approvals = Approvals::open(store.clone(), events.clone(), config)
        .await
        .unwrap();
    Fixture {
        dir,
        store,
        events,
        approvals,
    }
}

fn claude() -> Requester {
    Requester::Mcp {
        client_name: "Claude Code".into(),
        client_version: "2.0".into(),
        session_id: "s1".into(),
        token_id: "c-claude".into(),
        token_name: "claude-code".into(),
    }
}

impl Fixture {
    async fn ask(&self, tool: &str) -> PendingApproval {
        self.ask_as(tool, claude()).await
    }

    async fn ask_as(&self, tool: &str, requester: Requester) -> PendingApproval {
        let call_id = uuid::Uuid::now_v7().to_string();
        let stored_id = call_id.clone();
        let tool_name = tool.to_owned();
        // Approvals reference a tool call row.
        self.store
            .write(move |tx| {
                tx.execute(
                    "INSERT INTO tool_calls (id, tool, requester, arguments, status, created_at) \
                     VALUES (?1, ?2, '{\"kind\":\"cli\"}', '{}', 'waiting_approval', 'now')",
                    rusqlite::params![stored_id, tool_name],
                )
                .map_err(StoreError::from)
            })
            .await
            .unwrap();
        self.approvals
            .request(NewApproval {
                call_id,
                requester,
                tool: tool.into(),
                server: None,
                risk: Risk::Write,
                arguments: serde_json::json!({"path": "~/p/a.rs"}),
                summary: format!("{tool} ~/p/a.rs"),
                diff: Some("--- a\n+++ b\n".into()),
                reason: "writing tools ask by default".into(),
                suggested: SuggestedScope {
                    scope: ScopeKind::Requester,
                    minutes: None,
                    argument_match: ArgumentMatch::default(),
                    tool_group: None,
                    label: "x".into(),
                },
                parked: None,
            })
            .await
            .unwrap()
    }

    fn facts_for<'a>(
        &self,
        tool: &'a str,
        requester: &'a Requester,
        targets: &'a [CallTarget],
    ) -> CallFacts<'a> {
        CallFacts {
            tool,
            known: true,
            risk: Risk::Write,
            requester,
            targets,
        }
    }

    async fn event_types(&self) -> Vec<String> {
        self.events
            .replay(0, 1000)
            .await
            .unwrap()
            .iter()
            .map(|envelope| envelope.event.kind().to_owned())
            .collect()
    }
}

fn approve(scope: ScopeKind) -> DecisionRequest {
    DecisionRequest {
        decision: Verdict::Approve,
        scope,
        minutes: None,
        argument_match: None,
        tool_group: None,
        via: Some("cli".into()),
    }
}

#[tokio::test]
async fn a_decision_reaches_the_waiter_and_the_first_one_wins() {
    let f = fixture().await;
    let mut pending = f.ask("EditFile").await;
    let listed = f
        .approvals
        .list(Some(ApprovalStatus::Pending), 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, pending.approval.id);
    assert_eq!(
        listed[0].requester_label,
        "claude-code (MCP client \"Claude Code 2.0\")"
    );
    assert_eq!(listed[0].diff.as_deref(), Some("--- a\n+++ b\n"));

    let response = f
        .approvals
        .decide(&pending.approval.id, approve(ScopeKind::Once))
        .await
        .unwrap();
    assert_eq!(response.approval.status, ApprovalStatus::Approved);
    assert!(response.grant.is_none());
    let Resolution::Approved(decision) = pending.resolved().await else {
        panic!("expected approval")
    };
    assert_eq!(decision.via, "cli");

    let second = f
        .approvals
        .decide(
            &pending.approval.id,
            DecisionRequest {
                decision: Verdict::Deny,
                ..approve(ScopeKind::Once)
            },
        )
        .await;
    assert!(matches!(
        second,
        Err(ApprovalError::AlreadyDecided {
            status: "approved",
            ..
        })
    ));
    assert_eq!(
        f.approvals.get(&pending.approval.id).await.unwrap().status,
        ApprovalStatus::Approved
    );
    assert_eq!(
        f.event_types().await,
        vec!["approval.requested", "approval.decided"]
    );
}

#[tokio::test]
async fn concurrent_decisions_exactly_one_wins() {
    let f = fixture().await;
    let mut pending = f.ask("EditFile").await;
    let id = pending.approval.id.clone();
    let mut tasks = Vec::new();
    for index in 0..16 {
        let approvals = f.approvals.clone();
        let id = id.clone();
        tasks.push(crate::tasks::spawn_in_test(async move {
            let verdict = if index % 2 == 0 {
                Verdict::Approve
            } else {
                Verdict::Deny
            };
            approvals
                .decide(
                    &id,
                    DecisionRequest {
                        decision: verdict,
                        ..approve(ScopeKind::Once)
                    },
                )
                .await
                .map(|response| response.approval.status)
        }));
    }
    let mut winners = Vec::new();
    let mut conflicts = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(status) => winners.push(status),
            Err(ApprovalError::AlreadyDecided { .. }) => conflicts += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(winners.len(), 1);
    assert_eq!(conflicts, 15);
    let stored = f.approvals.get(&id).await.unwrap().status;
    assert_eq!(stored, winners[0], "the stored decision is the winner's");
    let resolution = pending.resolved().await;
    let expected_approved = winners[0] == ApprovalStatus::Approved;
    assert_eq!(
        matches!(resolution, Resolution::Approved(_)),
        expected_approved
    );
    let decided = f
        .event_types()
        .await
        .iter()
        .filter(|t| *t == "approval.decided")
        .count();
    assert_eq!(decided, 1);
}

#[tokio::test]
async fn expiry_is_a_denial_and_blocks_later_decisions() {
    let f = fixture().await;
    let mut pending = f.ask("NewFile").await;
    let expired = f
        .approvals
        .expire(&pending.approval.id, ExpiryReason::Timeout)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(expired.status, ApprovalStatus::Expired);
    assert_eq!(expired.expiry_reason, Some(ExpiryReason::Timeout));
    assert_eq!(
        pending.resolved().await,
        Resolution::Expired(ExpiryReason::Timeout)
    );
    assert!(
        f.approvals
            .expire(&pending.approval.id, ExpiryReason::Timeout)
            .await
            .unwrap()
            .is_none()
    );
    let late = f
        .approvals
        .decide(&pending.approval.id, approve(ScopeKind::Once))
        .await;
    assert!(matches!(
        late,
        Err(ApprovalError::AlreadyDecided {
            status: "expired",
            ..
        })
    ));
    assert_eq!(
        f.event_types().await,
        vec!["approval.requested", "approval.expired"]
    );
}

#[tokio::test]
async fn a_restart_expires_what_was_pending() {
    let f = fixture().await;
    let pending = f.ask("DeleteFile").await;
    let config = TestHome::template_config(f.dir.flat_paths());
    let reopened = Approvals::open(f.store.clone(), f.events.clone(), config)
        .await
        .unwrap();
    let approval = reopened.get(&pending.approval.id).await.unwrap();
    assert_eq!(approval.status, ApprovalStatus::Expired);
    assert_eq!(approval.expiry_reason, Some(ExpiryReason::Restart));
    assert_eq!(approval.decision.unwrap().decision, Verdict::Deny);
    assert!(
        f.event_types()
            .await
            .contains(&"approval.expired".to_owned())
    );
}

#[tokio::test]
async fn scoped_approvals_create_grants_that_the_policy_uses_until_revoked() {
    let f = fixture().await;
    let requester = claude();
    let inside = [CallTarget::Path {
        path: f.dir.path().join("p/b.rs"),
        access: Access::Write,
        protected: false,
    }];
    let outside = [CallTarget::Path {
        path: f.dir.path().join("q/b.rs"),
        access: Access::Write,
        protected: false,
    }];
    assert!(matches!(
        f.approvals
            .decide_call(&f.facts_for("EditFile", &requester, &inside)),
        Decision::Ask { .. }
    ));

    let pending = f.ask("EditFile").await;
    let request = DecisionRequest {
        argument_match: Some(ArgumentMatch {
            path_prefix: Some("~/p".into()),
            ..Default::default()
        }),
        ..approve(ScopeKind::Requester)
    };
    let response = f
        .approvals
        .decide(&pending.approval.id, request)
        .await
        .unwrap();
    let grant = response.grant.unwrap();
    assert_eq!(grant.effect, Effect::Allow);
    assert_eq!(
        grant.label,
        "Allow claude-code (MCP client \"Claude Code 2.0\") to use EditFile in ~/p (until revoked)"
    );
    assert_eq!(
        response.approval.decision.unwrap().grant_id.as_deref(),
        Some(grant.id.as_str())
    );

    let decision = f
        .approvals
        .decide_call(&f.facts_for("EditFile", &requester, &inside));
    assert_eq!(
        decision,
        Decision::Allow(DecisionSource::Grant {
            grant_id: grant.id.clone()
        })
    );
    assert!(matches!(
        f.approvals
            .decide_call(&f.facts_for("EditFile", &requester, &outside)),
        Decision::Ask { .. }
    ));
    let other = Requester::Cli;
    assert!(matches!(
        f.approvals
            .decide_call(&f.facts_for("EditFile", &other, &inside)),
        Decision::Ask { .. }
    ));

    assert_eq!(f.approvals.grants().await.unwrap().len(), 1);
    f.approvals.revoke(&grant.id).await.unwrap();
    assert!(f.approvals.grants().await.unwrap().is_empty());
    assert!(matches!(
        f.approvals
            .decide_call(&f.facts_for("EditFile", &requester, &inside)),
        Decision::Ask { .. }
    ));
    assert!(matches!(
        f.approvals.revoke(&grant.id).await,
        Err(ApprovalError::GrantNotFound(_))
    ));
}

#[tokio::test]
async fn minute_grants_expire_and_deny_grants_deny() {
    let f = fixture().await;
    let pending = f.ask("RunCommand").await;
    let response = f
        .approvals
        .decide(
            &pending.approval.id,
            DecisionRequest {
                decision: Verdict::Deny,
                minutes: Some(30),
                ..approve(ScopeKind::Minutes)
            },
        )
        .await
        .unwrap();
    let grant = response.grant.unwrap();
    assert_eq!(grant.effect, Effect::Deny);
    let decided_at = response.approval.decision.unwrap().decided_at;
    assert_eq!(
        grant.expires_at,
        Some(decided_at + chrono::Duration::minutes(30))
    );
    let requester = claude();
    let decision = f
        .approvals
        .decide_call(&f.facts_for("RunCommand", &requester, &[]));
    assert!(matches!(decision, Decision::Deny { .. }), "{decision:?}");
}

#[tokio::test]
async fn malformed_decisions_decide_nothing() {
    let f = fixture().await;
    let pending = f.ask("EditFile").await;
    for request in [
        approve(ScopeKind::Minutes),
        DecisionRequest {
            minutes: Some(0),
            ..approve(ScopeKind::Minutes)
        },
        DecisionRequest {
            minutes: Some(MAX_SCOPE_MINUTES + 1),
            ..approve(ScopeKind::Minutes)
        },
        DecisionRequest {
            minutes: Some(5),
            ..approve(ScopeKind::Once)
        },
    ] {
        let result = f.approvals.decide(&pending.approval.id, request).await;
        assert!(
            matches!(result, Err(ApprovalError::Invalid(_))),
            "{result:?}"
        );
    }
    assert_eq!(
        f.approvals.get(&pending.approval.id).await.unwrap().status,
        ApprovalStatus::Pending
    );
    assert!(matches!(
        f.approvals.decide("nope", approve(ScopeKind::Once)).await,
        Err(ApprovalError::NotFound(_))
    ));
}

/// A folder for the file-writes group.
fn in_p() -> Option<ArgumentMatch> {
    Some(ArgumentMatch {
        path_prefix: Some("~/p".into()),
        ..Default::default()
    })
}

#[tokio::test]
async fn a_tool_group_widens_only_a_standing_approval_inside_a_folder_for_its_tools() {
    let f = fixture().await;
    let group = Some(ToolGroup::FileWrites);
    let pending = f.ask("EditFile").await;
    for request in [
        // A denial, a one-off, a rule for everyone: none of them takes a group.
        DecisionRequest {
            decision: Verdict::Deny,
            argument_match: in_p(),
            tool_group: group,
            ..approve(ScopeKind::Requester)
        },
        DecisionRequest {
            argument_match: in_p(),
            tool_group: group,
            ..approve(ScopeKind::Once)
        },
        DecisionRequest {
            argument_match: in_p(),
            tool_group: group,
            ..approve(ScopeKind::Always)
        },
        // Never without a folder.
        DecisionRequest {
            tool_group: group,
            ..approve(ScopeKind::Requester)
        },
        DecisionRequest {
            argument_match: Some(ArgumentMatch {
                domain: Some("example.com".into()),
                ..Default::default()
            }),
            tool_group: group,
            ..approve(ScopeKind::Requester)
        },
    ] {
        let result = f.approvals.decide(&pending.approval.id, request).await;
        assert!(
            matches!(result, Err(ApprovalError::Invalid(_))),
            "{result:?}"
        );
    }
    // The group must hold the asking tool.
    let delete = f.ask("DeleteFile").await;
    let result = f
        .approvals
        .decide(
            &delete.approval.id,
            DecisionRequest {
                argument_match: in_p(),
                tool_group: group,
                ..approve(ScopeKind::Requester)
            },
        )
        .await;
    assert!(
        matches!(&result, Err(ApprovalError::Invalid(message)) if message.contains("DeleteFile")),
        "{result:?}"
    );
    for id in [&pending.approval.id, &delete.approval.id] {
        assert_eq!(
            f.approvals.get(id).await.unwrap().status,
            ApprovalStatus::Pending
        );
    }
    assert!(f.approvals.grants().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_tool_group_grant_covers_its_tools_writes_in_the_folder() {
    let f = fixture().await;
    let group = Some(ToolGroup::FileWrites);
    let pending = f.ask("EditFile").await;
    // Accepted as offered: one grant for both tools, recorded with the decision.
    let response = f
        .approvals
        .decide(
            &pending.approval.id,
            DecisionRequest {
                argument_match: in_p(),
                tool_group: group,
                ..approve(ScopeKind::Requester)
            },
        )
        .await
        .unwrap();
    let grant = response.grant.unwrap();
    assert_eq!(grant.tool, "@file_writes");
    assert!(
        grant.label.starts_with(
            "Allow claude-code (MCP client \"Claude Code 2.0\") to create and edit files in ~/p \
             (NewFile and EditFile only"
        ),
        "{}",
        grant.label
    );
    assert_eq!(response.approval.decision.unwrap().tool_group, group);
    let requester = claude();
    let write = |name: &str| CallTarget::Path {
        path: f.dir.path().join("p").join(name),
        access: Access::Write,
        protected: false,
    };
    for tool in ["NewFile", "EditFile"] {
        assert_eq!(
            f.approvals
                .decide_call(&f.facts_for(tool, &requester, &[write("c.rs")])),
            Decision::Allow(DecisionSource::Grant {
                grant_id: grant.id.clone()
            }),
            "{tool}"
        );
    }
    let removal = [CallTarget::Path {
        path: f.dir.path().join("p/c.rs"),
        access: Access::Delete,
        protected: false,
    }];
    assert!(matches!(
        f.approvals
            .decide_call(&f.facts_for("DeleteFile", &requester, &removal)),
        Decision::Ask { .. }
    ));
    // Listed with the stored marker, and it survives a reload of the grants.
    let listed = f.approvals.grants().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].tool, "@file_writes");
    assert_eq!(listed[0].label, grant.label);
}

#[tokio::test]
async fn always_writes_a_visible_rule_and_applies_it() {
    let f = fixture().await;
    let pending = f.ask("RunCommand").await;
    let mut changes = f.approvals.changes();
    let response = f
        .approvals
        .decide(
            &pending.approval.id,
            DecisionRequest {
                argument_match: Some(ArgumentMatch {
                    command_prefix: Some("git status".into()),
                    ..Default::default()
                }),
                ..approve(ScopeKind::Always)
            },
        )
        .await
        .unwrap();
    assert!(response.warning.is_none(), "{:?}", response.warning);
    let rule = response.rule.unwrap();
    assert!(rule.contains("command = \"git status\""), "{rule}");
    let file = std::fs::read_to_string(f.dir.path().join("config.toml")).unwrap();
    assert!(file.contains("[[approvals.rules]]"), "{file}");
    assert!(
        file.contains("when you chose \"always\" for RunCommand"),
        "{file}"
    );
    assert!(changes.has_changed().unwrap());
    changes.mark_unchanged();

    let requester = Requester::Cli;
    let git = [CallTarget::Command {
        command: "git status".into(),
        cwd: PathBuf::from("/"),
    }];
    let rm = [CallTarget::Command {
        command: "rm x".into(),
        cwd: PathBuf::from("/"),
    }];
    let facts = |targets| CallFacts {
        tool: "RunCommand",
        known: true,
        risk: Risk::Exec,
        requester: &requester,
        targets,
    };
    assert!(matches!(
        f.approvals.decide_call(&facts(&git)),
        Decision::Allow(DecisionSource::Rule { index: 1, .. })
    ));
    assert!(matches!(
        f.approvals.decide_call(&facts(&rm)),
        Decision::Ask { .. }
    ));
}

#[tokio::test]
async fn a_rule_that_cannot_be_saved_still_decides_the_call() {
    let f = fixture().await;
    let pending = f.ask("RunCommand").await;
    // Make the config file unwritable by replacing it with a folder.
    let file = f.dir.path().join("config.toml");
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let response = f
        .approvals
        .decide(&pending.approval.id, approve(ScopeKind::Always))
        .await
        .unwrap();
    assert_eq!(response.approval.status, ApprovalStatus::Approved);
    assert!(response.rule.is_none());
    assert!(response.warning.unwrap().contains("could not be saved"));
}

#[test]
fn via_is_cleaned() {
    assert_eq!(clean_via("Tray"), "tray");
    assert_eq!(clean_via("<script>"), "script");
    assert_eq!(clean_via(""), "api");
    assert_eq!(clean_via(&"x".repeat(100)).len(), 32);
}

#[tokio::test]
async fn a_chat_that_asks_is_named_by_its_title_as_announced_listed_and_after_a_rename() {
    let f = fixture().await;
    f.store
        .write(|tx| {
            tx.execute_batch(
                "INSERT INTO users (id, created_at, last_seen_at) VALUES ('alice', 'now', 'now');
                 INSERT INTO chats (id, user_id, title, created_at, updated_at) VALUES
                     ('chat-trip', 'alice', 'Trip to Kazan', 'now', 'now'),
                     ('chat-untitled', 'alice', NULL, 'now', 'now');",
            )
            .map_err(StoreError::from)
        })
        .await
        .unwrap();
    let chat = |id: &str| Requester::Chat { chat_id: id.into() };
    let asked = f.ask_as("EditFile", chat("chat-trip")).await;
    assert_eq!(asked.approval.requester_label, "chat “Trip to Kazan”");
    let untitled = f.ask_as("EditFile", chat("chat-untitled")).await;
    assert_eq!(untitled.approval.requester_label, "Souz chat chat-unt");
    let events = f.events.replay(0, 100).await.unwrap();
    let announced: Vec<String> = events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            RuntimeEvent::ApprovalRequested { approval } => Some(approval.requester_label.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(announced, ["chat “Trip to Kazan”", "Souz chat chat-unt"]);

    f.store
        .write(|tx| {
            tx.execute(
                "UPDATE chats SET title = 'Kazan, May' WHERE id = 'chat-trip'",
                [],
            )
            .map_err(StoreError::from)
        })
        .await
        .unwrap();
    let listed = f
        .approvals
        .list_for(&Audience::Everyone, None, 10)
        .await
        .unwrap();
    let labels: Vec<&str> = listed
        .iter()
        .map(|approval| approval.requester_label.as_str())
        .collect();
    assert!(labels.contains(&"chat “Kazan, May”"), "{labels:?}");
    assert!(labels.contains(&"Souz chat chat-unt"), "{labels:?}");
}

#[tokio::test]
async fn every_approval_has_one_owner_a_chats_user_or_else_the_operator() {
    // Users decide their own chats' approvals here (see the next test for the default).
    let f = fixture_with(|config| config.server.proxy_users_decide = true).await;
    f.store
        .write(|tx| {
            tx.execute_batch(
                "INSERT INTO users (id, created_at, last_seen_at) VALUES
                     ('alice', 'now', 'now'), ('bob', 'now', 'now');
                 INSERT INTO chats (id, user_id, created_at, updated_at) VALUES
                     ('chat-a', 'alice', 'now', 'now'), ('chat-b', 'bob', 'now', 'now');",
            )
            .map_err(StoreError::from)
        })
        .await
        .unwrap();
    let chat = |id: &str| Requester::Chat { chat_id: id.into() };
    let alices = f.ask_as("EditFile", chat("chat-a")).await.approval.id;
    let bobs = f.ask_as("EditFile", chat("chat-b")).await.approval.id;
    // A chat nobody stored (an agent turn outside the chat API) is the operator's, like MCP.
    let unowned = f.ask_as("EditFile", chat("chat-gone")).await.approval.id;
    let claudes = f.ask("EditFile").await.approval.id;

    let listed = |audience: Audience| {
        let approvals = f.approvals.clone();
        async move {
            let mut ids: Vec<String> = approvals
                .list_for(&audience, None, 10)
                .await
                .unwrap()
                .into_iter()
                .map(|approval| approval.id)
                .collect();
            ids.sort();
            ids
        }
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    assert_eq!(
        listed(Audience::Everyone).await,
        sorted(vec![
            alices.clone(),
            bobs.clone(),
            unowned.clone(),
            claudes.clone()
        ])
    );
    assert_eq!(
        listed(Audience::User("alice".into())).await,
        vec![alices.clone()]
    );
    assert_eq!(listed(Audience::User("bob".into())).await, vec![bobs]);
    assert_eq!(
        listed(Audience::Operator).await,
        sorted(vec![unowned.clone(), claudes.clone()])
    );

    // Foreign approvals are not found, to read or to decide.
    let bob = Audience::User("bob".into());
    assert!(matches!(
        f.approvals.get_for(&alices, &bob).await,
        Err(ApprovalError::NotFound(_))
    ));
    assert!(matches!(
        f.approvals.get_for(&alices, &Audience::Operator).await,
        Err(ApprovalError::NotFound(_))
    ));
    assert!(matches!(
        f.approvals
            .decide_for(&alices, approve(ScopeKind::Once), &bob)
            .await,
        Err(ApprovalError::NotFound(_))
    ));
    // A user cannot write an `always` rule, even for their own approval; the operator can.
    let alice = Audience::User("alice".into());
    assert!(matches!(
        f.approvals
            .decide_for(&alices, approve(ScopeKind::Always), &alice)
            .await,
        Err(ApprovalError::Forbidden(_))
    ));
    assert_eq!(
        f.approvals.get(&alices).await.unwrap().status,
        ApprovalStatus::Pending
    );
    let decided = f
        .approvals
        .decide_for(&alices, approve(ScopeKind::Once), &alice)
        .await
        .unwrap();
    assert_eq!(decided.approval.status, ApprovalStatus::Approved);
    let decided = f
        .approvals
        .decide_for(&claudes, approve(ScopeKind::Always), &Audience::Operator)
        .await
        .unwrap();
    assert!(decided.rule.is_some(), "{decided:?}");
}

#[tokio::test]
async fn by_default_the_operator_decides_users_approvals_and_users_cannot() {
    let f = fixture().await;
    f.store
        .write(|tx| {
            tx.execute_batch(
                "INSERT INTO users (id, created_at, last_seen_at) VALUES ('alice', 'now', 'now');
                 INSERT INTO chats (id, user_id, created_at, updated_at) VALUES
                     ('chat-a', 'alice', 'now', 'now');",
            )
            .map_err(StoreError::from)
        })
        .await
        .unwrap();
    let chat = Requester::Chat {
        chat_id: "chat-a".into(),
    };
    let alices = f.ask_as("EditFile", chat.clone()).await.approval.id;
    let other = f.ask_as("EditFile", chat).await.approval.id;
    let alice = Audience::User("alice".into());

    // Alice sees hers, but deciding (any way) is the operator's.
    assert_eq!(
        f.approvals.get_for(&alices, &alice).await.unwrap().id,
        alices
    );
    for scope in [ScopeKind::Once, ScopeKind::Requester] {
        assert!(matches!(
            f.approvals
                .decide_for(&alices, approve(scope), &alice)
                .await,
            Err(ApprovalError::Forbidden(_))
        ));
    }
    assert_eq!(
        f.approvals.get(&alices).await.unwrap().status,
        ApprovalStatus::Pending
    );
    // A foreign or missing id stays "not found", not "forbidden".
    let missing = uuid::Uuid::now_v7().to_string();
    assert!(matches!(
        f.approvals
            .decide_for(&missing, approve(ScopeKind::Once), &alice)
            .await,
        Err(ApprovalError::NotFound(_))
    ));
    // The operator lists and decides them.
    let mut listed: Vec<String> = f
        .approvals
        .list_for(&Audience::Operator, None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|approval| approval.id)
        .collect();
    listed.sort();
    let mut expected = vec![alices.clone(), other];
    expected.sort();
    assert_eq!(listed, expected);
    let decided = f
        .approvals
        .decide_for(&alices, approve(ScopeKind::Once), &Audience::Operator)
        .await
        .unwrap();
    assert_eq!(decided.approval.status, ApprovalStatus::Approved);
}

mod protected;
