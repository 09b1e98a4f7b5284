//! Edits re-embed what changed, forgetting by id leaves a tombstone capture respects, a fact
//! of another owner is never touched, evidence names its source.

use std::sync::Arc;

use super::*;
use crate::memory::{
    CapturedTurn, HashEmbedder, Memory, MemoryParts, NewFact, NoWriter, Scope, Writer,
};
use crate::store::{Store, StoreError};
use crate::testing::TestHome;

async fn memory(embedder: bool) -> (TestHome, Store, Memory) {
    let home = TestHome::new();
    let store = home.store().await;
    let memory = Memory::new(MemoryParts {
        store: store.clone(),
        embedder: embedder
            .then(|| Arc::new(HashEmbedder::new(32)) as Arc<dyn crate::memory::Embedder>),
        writer: Arc::new(NoWriter) as Arc<dyn Writer>,
    });
    (home, store, memory)
}

fn new_fact(owner: &str, title: &str, body: &str) -> NewFact {
    NewFact {
        owner: owner.into(),
        scope: Scope::global(),
        kind: Kind::Preference,
        title: title.into(),
        body: body.into(),
        canonical_key: None,
        confidence: 1.0,
        importance: None,
        pinned: false,
    }
}

async fn jobs(store: &Store, fact_id: &str) -> Vec<(String, String)> {
    let id = fact_id.to_owned();
    store
        .read(move |connection| {
            let mut statement = connection.prepare(
                "SELECT content_hash, status FROM memory_index_jobs WHERE fact_id = ?1 \
                 ORDER BY created_at, content_hash",
            )?;
            let rows = statement
                .query_map([id], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok::<_, StoreError>(rows)
        })
        .await
        .unwrap()
}

async fn embedded_hash(store: &Store, fact_id: &str) -> Option<String> {
    let id = fact_id.to_owned();
    store
        .read(move |connection| {
            Ok::<_, StoreError>(
                connection
                    .query_row(
                        "SELECT content_hash FROM memory_fact_embeddings WHERE fact_id = ?1",
                        [id],
                        |row| row.get(0),
                    )
                    .ok(),
            )
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn an_edit_of_the_text_re_embeds_a_pin_does_not() {
    let (_home, store, memory) = memory(true).await;
    let fact = memory
        .create_fact(new_fact("local", "Editor", "Uses vim"))
        .await
        .unwrap();
    assert_eq!(jobs(&store, &fact.id).await.len(), 1);
    assert_eq!(
        embedded_hash(&store, &fact.id).await,
        Some(fact.content_hash.clone())
    );

    let pinned = memory
        .update_fact(
            "local",
            &fact.id,
            FactEdit {
                pinned: Some(true),
                ..FactEdit::default()
            },
        )
        .await
        .unwrap();
    assert!(pinned.pinned);
    assert_eq!(pinned.content_hash, fact.content_hash);
    assert_eq!(
        jobs(&store, &fact.id).await.len(),
        1,
        "a pin queues nothing"
    );

    let edited = memory
        .update_fact(
            "local",
            &fact.id,
            FactEdit {
                body: Some("Uses helix, token sk-abcdefghijklmnopqrstuvwx".into()),
                ..FactEdit::default()
            },
        )
        .await
        .unwrap();
    assert_ne!(edited.content_hash, fact.content_hash);
    assert!(
        !edited.body.contains("sk-abcdefghijklmnopqrstuvwx"),
        "{}",
        edited.body
    );
    assert!(edited.pinned, "the pin stays");
    let queued = jobs(&store, &fact.id).await;
    assert_eq!(queued.len(), 2, "{queued:?}");
    assert!(queued.iter().any(|(hash, _)| *hash == edited.content_hash));
    assert_eq!(
        embedded_hash(&store, &fact.id).await,
        Some(edited.content_hash)
    );
}

#[tokio::test]
async fn bad_edits_are_refused_and_change_nothing() {
    let (_home, _store, memory) = memory(false).await;
    let fact = memory
        .create_fact(new_fact("local", "Editor", "Uses vim"))
        .await
        .unwrap();
    for edit in [
        FactEdit {
            body: Some("   ".into()),
            ..FactEdit::default()
        },
        FactEdit {
            canonical_key: Some(Some("not.a.controlled.key".into())),
            ..FactEdit::default()
        },
        FactEdit {
            importance: Some(1.5),
            ..FactEdit::default()
        },
    ] {
        let error = memory
            .update_fact("local", &fact.id, edit)
            .await
            .unwrap_err();
        assert!(matches!(error, MemoryError::Invalid(_)), "{error}");
    }
    assert_eq!(memory.get(&fact.id).await.unwrap(), Some(fact.clone()));

    let retired = memory.retire_fact("local", &fact.id).await.unwrap();
    assert_eq!(retired.status, Status::Retired);
    let error = memory
        .update_fact(
            "local",
            &fact.id,
            FactEdit {
                title: Some("New".into()),
                ..FactEdit::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(error, MemoryError::Invalid(_)), "{error}");
}

#[tokio::test]
async fn another_owners_fact_is_not_found() {
    let (_home, _store, memory) = memory(false).await;
    let fact = memory
        .create_fact(new_fact("alice", "Editor", "Uses vim"))
        .await
        .unwrap();
    let edit = FactEdit {
        pinned: Some(true),
        ..FactEdit::default()
    };
    assert!(matches!(
        memory.update_fact("local", &fact.id, edit).await,
        Err(MemoryError::NotFound(_))
    ));
    assert!(matches!(
        memory.retire_fact("local", &fact.id).await,
        Err(MemoryError::NotFound(_))
    ));
    assert!(matches!(
        memory.forget_fact("local", &fact.id).await,
        Err(MemoryError::NotFound(_))
    ));
    assert!(matches!(
        memory.evidence("local", &fact.id).await,
        Err(MemoryError::NotFound(_))
    ));
    assert_eq!(memory.get(&fact.id).await.unwrap(), Some(fact));
}

/// Proposes the same preference for every turn.
struct Proposes;

impl Writer for Proposes {
    fn candidates<'a>(
        &'a self,
        _: &'a CapturedTurn,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Vec<crate::memory::Candidate>, crate::memory::WriterError>,
    > {
        Box::pin(async {
            Ok(vec![crate::memory::Candidate {
                should_save: true,
                kind: Kind::Preference,
                title: "Favourite colour".into(),
                body: "The favourite colour is blue.".into(),
                requested_scope: Some(crate::memory::model::RequestedScope::Global),
                canonical_key: Some("user.preference.colour".into()),
                confidence: 0.9,
                importance: None,
                evidence_text: "my favourite colour is blue".into(),
            }])
        })
    }
}

#[tokio::test]
async fn a_fact_forgotten_by_id_is_not_captured_again() {
    let home = TestHome::new();
    let store = home.store().await;
    let memory = Memory::new(MemoryParts {
        store,
        embedder: None,
        writer: Arc::new(Proposes),
    });
    let turn = CapturedTurn {
        context: crate::memory::Context {
            owner: "local".into(),
            session: Some("chat".into()),
            project: None,
        },
        user_message: "By the way, my favourite colour is blue".into(),
        assistant_message: "Noted.".into(),
        evidence: Vec::new(),
        turn_id: Some("turn-1".into()),
    };
    let captured = memory.capture(turn.clone()).await.unwrap();
    assert_eq!(captured.len(), 1, "the writer's fact is stored at first");
    memory.forget_fact("local", &captured[0].id).await.unwrap();
    assert_eq!(memory.get(&captured[0].id).await.unwrap(), None);

    let again = memory.capture(turn).await.unwrap();
    assert!(again.is_empty(), "{again:?}");
}

#[tokio::test]
async fn evidence_names_the_origin_and_excerpt() {
    let (_home, _store, memory) = memory(false).await;
    let fact = memory
        .create_fact_from(
            new_fact("local", "Editor", "Uses vim"),
            Origin {
                source_type: "mcp",
                source_ref: Some("claude-code"),
                created_by: "mcp:claude-code",
            },
        )
        .await
        .unwrap()
        .fact;
    assert_eq!(fact.created_by, "mcp:claude-code");
    let (found, records) = memory.evidence("local", &fact.id).await.unwrap();
    assert_eq!(found.id, fact.id);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].source_type, "mcp");
    assert_eq!(records[0].source_ref.as_deref(), Some("claude-code"));
    assert_eq!(records[0].excerpt.as_deref(), Some("Uses vim"));
    assert_eq!(records[0].text, "Editor\nUses vim");
}
