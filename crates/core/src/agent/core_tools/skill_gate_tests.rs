//! A file-backed skill's commands go through the gate: the first command of a bundle asks one
//! approval showing its manifest, hash and findings; approving consents to that bundle (later
//! commands do not ask); a changed manifest asks again; a denial runs nothing; every command
//! leaves an audit row.

use std::time::Duration;

use serde_json::{Value, json};
use souz_protocol::{ApprovalStatus, DecisionRequest, Outcome, Verdict};

use super::tests::core_call;
use super::*;
use crate::agent::memory::NoMemory;
use crate::agent::tests::{Fixture, fixture};
use crate::approvals::audit::AuditQuery;
use crate::skills::registry::Registry;

/// A registry with its Souz home and home folder under `temp`.
pub(super) fn registry(f: &Fixture, temp: &std::path::Path) -> Registry {
    Registry::new(&temp.join("souz"), &temp.join("home"), &[], f.store.clone())
}

/// Writes the skill `notes` with `manifest` under `root`.
pub(super) fn write_notes(root: &std::path::Path, manifest: &str) -> std::path::PathBuf {
    let dir = root.join("notes");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes.\n---\nRun it.\n",
    )
    .unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "echo hi\n").unwrap();
    std::fs::write(dir.join("agents/souz.toml"), manifest).unwrap();
    dir
}

/// Runs `scripts/run.sh` of `notes` while `verdict` (if any) decides the one approval it
/// may ask; returns the output and the approval asked, if one was.
pub(super) async fn run_notes(
    f: &Fixture,
    registry: &Registry,
    verdict: Verdict,
) -> (CoreOutput, Option<souz_protocol::Approval>) {
    run_notes_waiting(f, registry, verdict, None).await
}

/// As [`run_notes`]; with `consent` (a skill tool whose consent is being asked), the decider
/// waits until the command waits on that consent before it decides.
pub(super) async fn run_notes_waiting(
    f: &Fixture,
    registry: &Registry,
    verdict: Verdict,
    consent: Option<String>,
) -> (CoreOutput, Option<souz_protocol::Approval>) {
    let knowledge = KnowledgeStore::new(f.store.clone());
    let call = core_call(f, &knowledge, &NoMemory, registry);
    let approvals = f.gate.approvals().clone();
    let decider = crate::tasks::spawn_in_test(async move {
        if let Some(tool) = consent {
            while approvals.standing_waiters(&tool) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        loop {
            let pending = approvals
                .list(Some(ApprovalStatus::Pending), 10)
                .await
                .unwrap();
            if let Some(approval) = pending.into_iter().next() {
                let request = DecisionRequest::once(verdict, "test");
                approvals.decide(&approval.id, request).await.unwrap();
                return approval;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let output = CoreTool::RunSkillCommand
        .run(
            &call,
            json!({"skillId": "notes", "arguments": {"scriptPath": "scripts/run.sh"}}),
        )
        .await;
    let asked = if decider.is_finished() {
        Some(decider.await.unwrap())
    } else {
        decider.abort();
        None
    };
    (output, asked)
}

async fn audit_rows(f: &Fixture) -> Vec<souz_protocol::AuditEntry> {
    // Calls that changed nothing are stored in batches, after their answer.
    f.gate.flushed().await;
    f.gate
        .approvals()
        .audit(AuditQuery {
            limit: 50,
            ..AuditQuery::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|row| row.tool.starts_with("skill:notes@"))
        .collect()
}

#[tokio::test]
async fn a_bundle_is_consented_once_and_asked_again_when_its_manifest_changes() {
    let f = fixture().await;
    let temp = tempfile::tempdir().unwrap();
    let registry = registry(&f, temp.path());
    let source = temp.path().join("src");
    let folder = write_notes(&source, "[permissions]\ntime_limit_seconds = 20\n");
    registry.install_folder(&folder).await.unwrap();

    // Denied: refused, no consent recorded, nothing reached the command runner.
    let (output, asked) = run_notes(&f, &registry, Verdict::Deny).await;
    let asked = asked.expect("the first command asks");
    assert!(asked.tool.starts_with("skill:notes@"), "{}", asked.tool);
    let preview = asked.diff.clone().unwrap_or_default();
    assert!(preview.contains("time limit:    20 s"), "{preview}");
    assert!(preview.contains("Bundle sha256: "), "{preview}");
    assert!(preview.contains("Validation findings:"), "{preview}");
    let content: Value = serde_json::from_str(&output.content).unwrap();
    assert!(output.is_error);
    assert!(
        content["error"]["message"]
            .as_str()
            .unwrap()
            .contains("denied"),
        "{content}"
    );
    assert!(f.gate.approvals().grants().await.unwrap().is_empty());

    // Approved once: the consent is a grant for this bundle; the command reached the runner
    // (this kit's sandbox cannot confine, so the runner refuses it, unconfined never).
    let (output, asked) = run_notes(&f, &registry, Verdict::Approve).await;
    assert!(asked.is_some(), "a denial does not consent");
    assert!(
        output.content.contains("commands are refused"),
        "{}",
        output.content
    );
    let grants = f.gate.approvals().grants().await.unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    let first_tool = grants[0].tool.clone();
    assert!(grants[0].requester.is_none());

    // Later commands of the same bundle do not ask.
    let (output, asked) = run_notes(&f, &registry, Verdict::Deny).await;
    assert!(asked.is_none(), "asked again: {asked:?}");
    assert!(
        output.content.contains("commands are refused"),
        "{}",
        output.content
    );

    // A changed manifest is another bundle: it asks again, showing the new manifest.
    let folder = write_notes(
        &source,
        "[permissions]\nwrite = [\"~\"]\ntime_limit_seconds = 20\n",
    );
    registry.install_folder(&folder).await.unwrap();
    let (output, asked) = run_notes(&f, &registry, Verdict::Deny).await;
    let asked = asked.expect("a changed manifest asks again");
    assert_ne!(asked.tool, first_tool);
    assert!(
        asked.diff.unwrap_or_default().contains("write folders: ~"),
        "the preview shows the new manifest"
    );
    assert!(output.is_error);

    // One audit row per command, with how it ended.
    let outcomes: Vec<Outcome> = audit_rows(&f)
        .await
        .into_iter()
        .rev()
        .map(|row| row.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Denied,
            Outcome::Failed,
            Outcome::Failed,
            Outcome::Denied
        ]
    );
}

#[tokio::test]
async fn invalid_arguments_fail_before_anyone_is_asked_and_pause_denies() {
    let f = fixture().await;
    let temp = tempfile::tempdir().unwrap();
    let registry = registry(&f, temp.path());
    let folder = write_notes(temp.path(), "");
    registry.install_folder(&folder).await.unwrap();
    let knowledge = KnowledgeStore::new(f.store.clone());
    let call = core_call(&f, &knowledge, &NoMemory, &registry);
    let output = CoreTool::RunSkillCommand
        .run(
            &call,
            json!({"skillId": "notes", "arguments": {"scriptPath": "../x.sh"}}),
        )
        .await;
    assert!(
        output.content.contains("inside the skill's folder"),
        "{}",
        output.content
    );
    assert!(f.gate.approvals().list(None, 10).await.unwrap().is_empty());
    // Paused: the consent cannot be asked, so the command is denied.
    f.gate.approvals().pause().set(Some(chrono::Utc::now()));
    let output = CoreTool::RunSkillCommand
        .run(
            &call,
            json!({"skillId": "notes", "arguments": {"scriptPath": "scripts/run.sh"}}),
        )
        .await;
    assert!(output.content.contains("paused"), "{}", output.content);
    // Calls that changed nothing are stored in the recorder's next batch.
    f.gate.flushed().await;
    let rows = audit_rows(&f).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
}
