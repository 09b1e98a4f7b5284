//! Consent asked at install: installing a bundle opens one pending approval showing its
//! manifest, hash and findings without waiting for it; the first command waits on that
//! approval instead of asking again; approving writes the standing grant; a denial refuses the
//! waiting command and the next one asks anew; a changed bundle asks again.

use souz_protocol::{ApprovalStatus, DecisionRequest, Verdict};

use super::skill_gate_tests::{registry, run_notes, run_notes_waiting, write_notes};
use crate::agent::tests::{Fixture, fixture};
use crate::skills::command_tool::{SkillCommandParts, SkillCommandTool};
use crate::skills::registry::Registry;

/// Installs `folder` and asks for consent as the install route does: the pending approval's
/// id, if one was asked.
async fn install(f: &Fixture, registry: &Registry, folder: &std::path::Path) -> Option<String> {
    let installed = registry.install_folder(folder).await.unwrap();
    let loaded = registry.load(&installed.id).await.unwrap();
    let tool = SkillCommandTool::new(SkillCommandParts {
        id: installed.id,
        bundle: loaded.bundle,
        findings: installed.verdict.findings,
        approvals: f.gate.approvals().clone(),
    })
    .unwrap();
    tool.ask_consent().await.unwrap()
}

async fn pending(f: &Fixture) -> Vec<souz_protocol::Approval> {
    f.gate
        .approvals()
        .list(Some(ApprovalStatus::Pending), 10)
        .await
        .unwrap()
}

async fn decide(f: &Fixture, id: &str, decision: Verdict) {
    let request = DecisionRequest::once(decision, "test");
    f.gate.approvals().decide(id, request).await.unwrap();
}

#[tokio::test]
async fn install_asks_once_and_approving_lets_commands_run_without_asking() {
    let f = fixture().await;
    let temp = tempfile::tempdir().unwrap();
    let registry = registry(&f, temp.path());
    let source = temp.path().join("src");
    let folder = write_notes(&source, "[permissions]\ntime_limit_seconds = 20\n");
    let asked = install(&f, &registry, &folder).await.expect("install asks");

    // One pending approval, showing the manifest, the hash and the findings.
    let waiting = pending(&f).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let approval = f.gate.approvals().get(&asked).await.unwrap();
    let hash = registry.find("notes").await.unwrap().unwrap().hash;
    assert!(
        approval.tool.starts_with("skill:notes@"),
        "{}",
        approval.tool
    );
    let preview = approval.diff.clone().unwrap_or_default();
    assert!(preview.contains("time limit:    20 s"), "{preview}");
    assert!(
        preview.contains(&format!("Bundle sha256: {hash}")),
        "{preview}"
    );
    assert!(preview.contains("Validation findings:"), "{preview}");
    // Installing the same bundle again while asked does not ask twice.
    assert_eq!(install(&f, &registry, &folder).await, Some(asked.clone()));
    assert_eq!(pending(&f).await.len(), 1);

    decide(&f, &asked, Verdict::Approve).await;
    // The command runs without a prompt (the decider would deny one), reaching the runner
    // (this kit's sandbox cannot confine, so the runner refuses it).
    let (output, prompted) = run_notes(&f, &registry, Verdict::Deny).await;
    assert!(prompted.is_none(), "asked again: {prompted:?}");
    assert!(
        output.content.contains("commands are refused"),
        "{}",
        output.content
    );
    let grants = f.gate.approvals().grants().await.unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].tool, approval.tool);
    assert_eq!(grants[0].approval_id.as_deref(), Some(asked.as_str()));
    // Approved before: reinstalling the same bundle asks nothing.
    assert_eq!(install(&f, &registry, &folder).await, None);

    // An upgrade (a changed file) is another bundle: a new pending approval.
    std::fs::write(folder.join("scripts/run.sh"), "echo changed\n").unwrap();
    let again = install(&f, &registry, &folder).await.expect("asks again");
    assert_ne!(again, asked);
    let approval = f.gate.approvals().get(&again).await.unwrap();
    assert!(approval.tool.starts_with("skill:notes@"));
    assert_ne!(approval.tool, grants[0].tool);
    assert_eq!(pending(&f).await.len(), 1);
}

#[tokio::test]
async fn the_first_command_waits_on_the_install_consent_instead_of_asking_again() {
    let f = fixture().await;
    let temp = tempfile::tempdir().unwrap();
    let registry = registry(&f, temp.path());
    let folder = write_notes(temp.path(), "");
    let asked = install(&f, &registry, &folder).await.expect("install asks");

    // The command waits on the install's approval (decided once the command waits on it).
    let tool = f.gate.approvals().get(&asked).await.unwrap().tool;
    let (output, prompted) = run_notes_waiting(&f, &registry, Verdict::Approve, Some(tool)).await;
    assert_eq!(prompted.map(|approval| approval.id), Some(asked.clone()));
    assert!(
        output.content.contains("commands are refused"),
        "{}",
        output.content
    );
    let all = f.gate.approvals().list(None, 10).await.unwrap();
    assert_eq!(all.len(), 1, "no second approval: {all:?}");
    assert_eq!(f.gate.approvals().grants().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_denied_install_consent_refuses_the_waiting_command_and_the_next_asks_anew() {
    let f = fixture().await;
    let temp = tempfile::tempdir().unwrap();
    let registry = registry(&f, temp.path());
    let folder = write_notes(temp.path(), "");
    // Denied at install: the waiting command is refused, nothing is granted, and the next
    // command asks anew.
    let denied = install(&f, &registry, &folder).await.expect("asks");
    let tool = f.gate.approvals().get(&denied).await.unwrap().tool;
    let (output, prompted) = run_notes_waiting(&f, &registry, Verdict::Deny, Some(tool)).await;
    assert_eq!(prompted.map(|approval| approval.id), Some(denied.clone()));
    assert!(output.is_error);
    assert!(
        output.content.contains("was not approved"),
        "{}",
        output.content
    );
    assert!(f.gate.approvals().grants().await.unwrap().is_empty());
    let (output, prompted) = run_notes(&f, &registry, Verdict::Deny).await;
    let prompted = prompted.expect("the next command asks again");
    assert_ne!(prompted.id, denied);
    assert!(output.is_error);
}
