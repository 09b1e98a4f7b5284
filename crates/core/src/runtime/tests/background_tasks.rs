//! Background tasks of the services run on the runtime's tracker: `shutdown` stops and awaits
//! them before it closes the database, so work a task owes is done by then.

use crate::memory::{Context, Kind, NewFact, Scope};
use crate::store::{Store, StoreError};
use crate::testing::TestRuntime;

#[tokio::test]
async fn shutdown_writes_the_retrieval_counts_noted_just_before_it() {
    let runtime = TestRuntime::builder().start().await;
    let memory = runtime.handle().memory().clone();
    let tea = memory
        .create_fact(NewFact {
            owner: "local".into(),
            scope: Scope::global(),
            kind: Kind::Preference,
            title: "Drinks".into(),
            body: "green tea every morning".into(),
            canonical_key: None,
            confidence: 1.0,
            importance: None,
            pinned: false,
        })
        .await
        .unwrap();
    let context = Context {
        owner: "local".into(),
        session: Some("c1".into()),
        project: None,
    };
    let (_, selected) = memory.recall(&context, "tea", 8).await.unwrap();
    assert_eq!(selected.len(), 1);
    // The count waits a second to be written with others; the stop comes first.
    drop(memory);
    let home = runtime.shutdown_keeping_home("test").await.unwrap();
    let store = Store::open(home.paths().database()).await.unwrap();
    let counted = store
        .read(move |connection| {
            connection
                .query_row(
                    "SELECT retrieval_count FROM memory_fact_stats WHERE fact_id = ?1",
                    [&tea.id],
                    |row| row.get::<_, i64>(0),
                )
                .map_err(StoreError::from)
        })
        .await;
    assert_eq!(
        counted.ok(),
        Some(1),
        "the retrieval noted before the stop was not counted"
    );
    store.close().await.unwrap();
}
