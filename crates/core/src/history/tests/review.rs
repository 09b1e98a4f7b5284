//! Review mode with several writes to one file in one review, through the real gate and the
//! real file tools: a write is planned on the staged state the earlier staged changes leave,
//! applying in order finds no conflict, and a change whose earlier sibling was discarded (or
//! not applied) is refused as such, apart from a file changed outside.

use serde_json::{Value, json};
use souz_protocol::review::{
    ChangeDecision, ConflictReason, Review, ReviewAction, ReviewDecision, ReviewDecisions,
    ReviewModeUpdate, ReviewOutcome,
};
use souz_protocol::{Requester, ToolCallStatus};

use super::{Fixture, limits};
use crate::history::review::apply;
use crate::tools::gate::CallRequest;

const CHAT: &str = "review-chat";

async fn fixture() -> Fixture {
    let f = Fixture::new(limits(), true).await;
    f.history
        .set_review_mode(ReviewModeUpdate {
            chat_id: Some(CHAT.into()),
            client: None,
            on: true,
        })
        .await
        .unwrap();
    f
}

impl Fixture {
    /// A call of the chat in review mode: its status and text.
    async fn stage(&self, tool: &str, arguments: Value) -> (ToolCallStatus, String) {
        let state = self
            .stack
            .gate
            .call(CallRequest {
                tool: tool.into(),
                arguments,
                requester: Requester::Chat {
                    chat_id: CHAT.into(),
                },
            })
            .await
            .unwrap();
        let text = state.result.map(|result| result.text).unwrap_or_default();
        (state.status, text)
    }

    /// Stages `tool` and insists it was staged.
    async fn staged(&self, tool: &str, arguments: Value) {
        let (status, text) = self.stage(tool, arguments).await;
        assert_eq!(status, ToolCallStatus::Succeeded, "{text}");
        assert!(text.starts_with("Staged for review"), "{text}");
    }

    /// The chat's one open review.
    async fn open_review(&self) -> Review {
        let reviews = self.history.reviews().await.unwrap();
        let [summary] = reviews.items.as_slice() else {
            panic!("one open review expected: {reviews:?}");
        };
        self.history
            .review(summary.id, self.sandbox.clone())
            .await
            .unwrap()
    }

    async fn decide(&self, review: &Review, request: ReviewDecisions) -> ReviewOutcome {
        apply::decide(&self.history, &self.stack.gate, review.summary.id, request)
            .await
            .unwrap()
    }

    fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"path": Fixture::arg(path), "oldString": old, "newString": new})
}

fn apply_all(force: bool) -> ReviewDecisions {
    ReviewDecisions {
        decisions: Vec::new(),
        all: Some(ReviewAction::Apply),
        force,
    }
}

fn decisions(decisions: &[(i64, ReviewAction)], force: bool) -> ReviewDecisions {
    ReviewDecisions {
        decisions: decisions
            .iter()
            .map(|(change_id, action)| ReviewDecision {
                change_id: *change_id,
                action: *action,
            })
            .collect(),
        all: None,
        force,
    }
}

fn decided(review: &Review) -> Vec<Option<ChangeDecision>> {
    review.items.iter().map(|change| change.decision).collect()
}

#[tokio::test]
async fn a_second_edit_of_text_the_first_introduced_stages_and_applies_in_order() {
    let f = fixture().await;
    std::fs::write(f.path("notes.txt"), "alpha\nbeta\n").unwrap();
    f.staged("EditFile", edit("notes.txt", "alpha", "ALPHA"))
        .await;
    // "ALPHA" exists only in the staged state: planned against the disk, this would fail.
    f.staged("EditFile", edit("notes.txt", "ALPHA\nbeta", "ALPHA\nBETA"))
        .await;
    assert_eq!(
        f.read("notes.txt"),
        "alpha\nbeta\n",
        "staging writes nothing"
    );

    let review = f.open_review().await;
    assert_eq!(review.items.len(), 2);
    let second = review.items[1].diff.as_deref().unwrap_or_default();
    assert!(
        second.contains(" ALPHA\n-beta\n+BETA\n"),
        "the second is shown against the state the first leaves: {second}"
    );
    // Waiting for the first is no conflict.
    assert!(
        review.items.iter().all(|change| !change.conflict),
        "{review:?}"
    );

    let outcome = f.decide(&review, apply_all(false)).await;
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert_eq!(
        decided(&outcome.review),
        [Some(ChangeDecision::Applied), Some(ChangeDecision::Applied)],
        "{outcome:?}"
    );
    assert_eq!(f.read("notes.txt"), "ALPHA\nBETA\n");
}

#[tokio::test]
async fn discarding_the_first_refuses_a_second_built_on_it_and_force_fails_clearly() {
    let f = fixture().await;
    std::fs::write(f.path("notes.txt"), "alpha\nbeta\n").unwrap();
    f.staged("EditFile", edit("notes.txt", "alpha", "ALPHA"))
        .await;
    f.staged("EditFile", edit("notes.txt", "ALPHA", "OMEGA"))
        .await;
    let review = f.open_review().await;
    let (first, second) = (review.items[0].id, review.items[1].id);

    let outcome = f
        .decide(
            &review,
            decisions(
                &[
                    (first, ReviewAction::Discard),
                    (second, ReviewAction::Apply),
                ],
                false,
            ),
        )
        .await;
    assert_eq!(outcome.conflicts, [second]);
    assert_eq!(outcome.conflict_reasons.len(), 1);
    assert_eq!(
        outcome.conflict_reasons[0].reason,
        ConflictReason::EarlierChange
    );
    assert_eq!(
        decided(&outcome.review),
        [Some(ChangeDecision::Discarded), None]
    );
    let shown = &outcome.review.items[1];
    assert_eq!(
        shown.conflict_reason,
        Some(ConflictReason::EarlierChange),
        "{shown:?}"
    );
    assert_eq!(shown.paths[0].conflict, Some(ConflictReason::EarlierChange));
    assert_eq!(f.read("notes.txt"), "alpha\nbeta\n");

    // Forced, it is planned against the disk, where its text is not: it fails, saying why.
    let outcome = f
        .decide(&review, decisions(&[(second, ReviewAction::Apply)], true))
        .await;
    assert!(outcome.conflicts.is_empty());
    let failed = &outcome.review.items[1];
    assert_eq!(failed.decision, Some(ChangeDecision::Failed));
    let result = failed.result.as_deref().unwrap_or_default();
    assert!(result.contains("oldString was not found"), "{result}");
    assert_eq!(f.read("notes.txt"), "alpha\nbeta\n");
}

#[tokio::test]
async fn a_second_edit_that_still_fits_without_the_discarded_first_is_applied() {
    let f = fixture().await;
    let lines: Vec<String> = (1..=12).map(|line| format!("line {line}")).collect();
    std::fs::write(f.path("list.txt"), lines.join("\n") + "\n").unwrap();
    f.staged("EditFile", edit("list.txt", "line 1\n", "LINE 1\n"))
        .await;
    f.staged("EditFile", edit("list.txt", "line 12", "LINE 12"))
        .await;
    let review = f.open_review().await;
    let (first, second) = (review.items[0].id, review.items[1].id);
    let outcome = f
        .decide(
            &review,
            decisions(
                &[
                    (first, ReviewAction::Discard),
                    (second, ReviewAction::Apply),
                ],
                false,
            ),
        )
        .await;
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert_eq!(
        decided(&outcome.review),
        [
            Some(ChangeDecision::Discarded),
            Some(ChangeDecision::Applied)
        ]
    );
    assert!(f.read("list.txt").ends_with("line 11\nLINE 12\n"));
    assert!(f.read("list.txt").starts_with("line 1\n"));
}

#[tokio::test]
async fn applying_the_second_before_the_first_is_refused_as_an_earlier_change() {
    let f = fixture().await;
    std::fs::write(f.path("notes.txt"), "alpha\nbeta\n").unwrap();
    f.staged("EditFile", edit("notes.txt", "alpha", "ALPHA"))
        .await;
    f.staged("EditFile", edit("notes.txt", "ALPHA", "OMEGA"))
        .await;
    let review = f.open_review().await;
    let second = review.items[1].id;
    let outcome = f
        .decide(&review, decisions(&[(second, ReviewAction::Apply)], false))
        .await;
    assert_eq!(outcome.conflicts, [second]);
    assert_eq!(
        outcome.conflict_reasons[0].reason,
        ConflictReason::EarlierChange
    );
    // Still waiting for the first, so not shown as a conflict; in order, both apply.
    assert!(!outcome.review.items[1].conflict);
    let outcome = f.decide(&review, apply_all(false)).await;
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert_eq!(f.read("notes.txt"), "OMEGA\nbeta\n");
}

#[tokio::test]
async fn a_file_changed_outside_after_staging_is_an_external_conflict() {
    let f = fixture().await;
    std::fs::write(f.path("notes.txt"), "alpha\nbeta\n").unwrap();
    f.staged("EditFile", edit("notes.txt", "alpha", "ALPHA"))
        .await;
    f.staged("EditFile", edit("notes.txt", "ALPHA", "OMEGA"))
        .await;
    std::fs::write(f.path("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();

    let review = f.open_review().await;
    for change in &review.items {
        assert_eq!(
            change.conflict_reason,
            Some(ConflictReason::External),
            "{change:?}"
        );
    }
    let outcome = f.decide(&review, apply_all(false)).await;
    let reasons: Vec<ConflictReason> = outcome
        .conflict_reasons
        .iter()
        .map(|conflict| conflict.reason)
        .collect();
    assert_eq!(
        reasons,
        [ConflictReason::External, ConflictReason::External]
    );
    assert_eq!(f.read("notes.txt"), "alpha\nbeta\ngamma\n");

    // A further write to the file is refused: its staged state no longer fits the disk.
    let (status, text) = f.stage("EditFile", edit("notes.txt", "beta", "BETA")).await;
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    assert!(text.contains("no longer fit"), "{text}");

    // Forced in order, each is planned against the file as it is.
    let outcome = f.decide(&review, apply_all(true)).await;
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert_eq!(f.read("notes.txt"), "OMEGA\nbeta\ngamma\n");
}

#[tokio::test]
async fn a_new_file_is_edited_in_the_same_review() {
    let f = fixture().await;
    f.staged(
        "NewFile",
        json!({"path": Fixture::arg("draft.md"), "text": "# Title\nbody\n"}),
    )
    .await;
    f.staged("EditFile", edit("draft.md", "body", "Body text"))
        .await;
    // It exists only in the staged state.
    let (status, text) = f
        .stage(
            "NewFile",
            json!({"path": Fixture::arg("draft.md"), "text": "again"}),
        )
        .await;
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    assert!(text.contains("already exists"), "{text}");
    let (status, text) = f
        .stage(
            "MoveFile",
            json!({"sourcePath": Fixture::arg("draft.md"), "destinationPath": Fixture::arg("final.md")}),
        )
        .await;
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    assert!(text.contains("exists only as a change staged"), "{text}");
    assert!(!f.path("draft.md").exists());

    let review = f.open_review().await;
    assert!(
        review.items.iter().all(|change| !change.conflict),
        "{review:?}"
    );
    let outcome = f.decide(&review, apply_all(false)).await;
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert_eq!(
        decided(&outcome.review),
        [Some(ChangeDecision::Applied), Some(ChangeDecision::Applied)],
        "{outcome:?}"
    );
    assert_eq!(f.read("draft.md"), "# Title\nBody text\n");
}

#[tokio::test]
async fn an_edited_file_is_moved_edited_again_and_replaced_and_another_deleted() {
    let f = fixture().await;
    std::fs::write(f.path("a.txt"), "one\ntwo\n").unwrap();
    f.staged("EditFile", edit("a.txt", "one", "ONE")).await;
    f.staged(
        "MoveFile",
        json!({"sourcePath": Fixture::arg("a.txt"), "destinationPath": Fixture::arg("b.txt")}),
    )
    .await;
    f.staged("EditFile", edit("b.txt", "ONE\ntwo", "ONE\nTWO"))
        .await;
    // Moved away in the staged state: its old place is free, its old content gone from it.
    let (status, text) = f.stage("EditFile", edit("a.txt", "two", "2")).await;
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    f.staged(
        "NewFile",
        json!({"path": Fixture::arg("a.txt"), "text": "fresh\n"}),
    )
    .await;
    // Only in the staged state: not deleted before the move is applied.
    let (status, text) = f
        .stage("DeleteFile", json!({"path": Fixture::arg("b.txt")}))
        .await;
    assert_eq!(status, ToolCallStatus::Failed, "{text}");
    // An edited file deleted: sized by its staged content.
    std::fs::write(f.path("c.txt"), "x\n").unwrap();
    f.staged("EditFile", edit("c.txt", "x", "xyz")).await;
    f.staged("DeleteFile", json!({"path": Fixture::arg("c.txt")}))
        .await;
    let review = f.open_review().await;
    assert_eq!(review.items.len(), 6);
    assert!(
        review.items[5].summary.contains("(4 B)"),
        "the delete is sized by the staged content: {}",
        review.items[5].summary
    );
    assert_eq!(f.read("a.txt"), "one\ntwo\n");

    let outcome = f.decide(&review, apply_all(false)).await;
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert!(
        decided(&outcome.review)
            .iter()
            .all(|decision| *decision == Some(ChangeDecision::Applied)),
        "{outcome:?}"
    );
    assert_eq!(f.read("a.txt"), "fresh\n");
    assert_eq!(f.read("b.txt"), "ONE\nTWO\n");
    assert!(!f.path("c.txt").exists());
}

#[tokio::test]
async fn edits_to_two_files_stay_independent() {
    let f = fixture().await;
    std::fs::write(f.path("a.txt"), "alpha\n").unwrap();
    std::fs::write(f.path("b.txt"), "beta\n").unwrap();
    f.staged("EditFile", edit("a.txt", "alpha", "ALPHA")).await;
    f.staged("EditFile", edit("b.txt", "beta", "BETA")).await;
    let review = f.open_review().await;
    // The second's base is the disk: nothing staged writes b.txt before it.
    assert_eq!(
        review.items[1].paths[0].base.sha256.as_deref(),
        Some(crate::history::blobs::hash_of(b"beta\n").as_str())
    );
    let (first, second) = (review.items[0].id, review.items[1].id);
    let outcome = f
        .decide(
            &review,
            decisions(
                &[
                    (first, ReviewAction::Discard),
                    (second, ReviewAction::Apply),
                ],
                false,
            ),
        )
        .await;
    assert!(outcome.conflicts.is_empty(), "{outcome:?}");
    assert_eq!(f.read("a.txt"), "alpha\n");
    assert_eq!(f.read("b.txt"), "BETA\n");
}
