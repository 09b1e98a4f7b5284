use super::*;

fn table_names(connection: &Connection) -> Vec<String> {
    let mut statement = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test]
async fn fresh_database_is_migrated_with_wal_and_foreign_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("souz.db")).await.unwrap();
    let (version, journal, foreign_keys, applied): (i64, String, i64, i64) = store
        .write(|tx| {
            Ok::<_, StoreError>((
                user_version(tx)?,
                tx.query_row("PRAGMA journal_mode", [], |r| r.get(0))?,
                tx.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?,
                tx.query_row("SELECT count(*) FROM schema_migrations", [], |r| r.get(0))?,
            ))
        })
        .await
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(journal, "wal");
    assert_eq!(foreign_keys, 1);
    assert_eq!(applied, SCHEMA_VERSION);
    let tables = store
        .read(|c| Ok::<_, StoreError>(table_names(c)))
        .await
        .unwrap();
    assert!(tables.contains(&"runtime_events".to_owned()), "{tables:?}");
    store.close().await.unwrap();
}

#[tokio::test]
async fn reopening_applies_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    let store = Store::open(&path).await.unwrap();
    store
        .write(|tx| {
            tx.execute(
                "INSERT INTO runtime_events (kind, payload, created_at) VALUES ('x', '{}', 'now')",
                [],
            )
            .map_err(StoreError::from)
        })
        .await
        .unwrap();
    store.close().await.unwrap();

    let store = Store::open(&path).await.unwrap();
    let (rows, applied): (i64, i64) = store
        .read(|c| {
            Ok::<_, StoreError>((
                c.query_row("SELECT count(*) FROM runtime_events", [], |r| r.get(0))?,
                c.query_row("SELECT count(*) FROM schema_migrations", [], |r| r.get(0))?,
            ))
        })
        .await
        .unwrap();
    assert_eq!(rows, 1, "data survives a reopen");
    assert_eq!(applied, SCHEMA_VERSION, "each migration recorded once");
}

#[tokio::test]
async fn partially_migrated_database_gets_only_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    {
        // A database as an older Souz (knowing only the first migration) left it.
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(MIGRATIONS[0].sql).unwrap();
        connection
            .execute(
                "INSERT INTO schema_migrations (version, name) VALUES (1, 'schema_migrations')",
                [],
            )
            .unwrap();
        connection.pragma_update(None, "user_version", 1).unwrap();
    }
    let store = Store::open(&path).await.unwrap();
    let versions: Vec<i64> = store
        .read(|c| {
            let mut statement =
                c.prepare("SELECT version FROM schema_migrations ORDER BY version")?;
            let rows = statement
                .query_map([], |r| r.get(0))?
                .collect::<Result<Vec<i64>, _>>()?;
            Ok::<_, StoreError>(rows)
        })
        .await
        .unwrap();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}

#[tokio::test]
async fn newer_schema_is_refused_and_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch("CREATE TABLE future (x INTEGER);")
            .unwrap();
        connection
            .pragma_update(None, "user_version", SCHEMA_VERSION + 5)
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = Store::open(&path).await.unwrap_err();
    match &error {
        StoreError::SchemaTooNew { found, known, .. } => {
            assert_eq!(*found, SCHEMA_VERSION + 5);
            assert_eq!(*known, SCHEMA_VERSION);
        }
        other => panic!("expected SchemaTooNew, got {other}"),
    }
    assert!(error.to_string().contains("newer Souz"), "{error}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "file must not change"
    );
    assert!(
        !dir.path().join("souz.db-wal").exists(),
        "no WAL file may be created"
    );
}

#[tokio::test]
async fn failed_write_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("souz.db")).await.unwrap();
    let result: Result<(), StoreError> = store
        .write(|tx| {
            tx.execute(
                "INSERT INTO runtime_events (kind, payload, created_at) VALUES ('x', '{}', 'now')",
                [],
            )?;
            Err(StoreError::Corrupt("boom".into()))
        })
        .await;
    assert!(result.is_err());
    let rows: i64 = store
        .read(|c| {
            c.query_row("SELECT count(*) FROM runtime_events", [], |r| r.get(0))
                .map_err(StoreError::from)
        })
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn closed_store_refuses_work() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("souz.db")).await.unwrap();
    store.ping().await.unwrap();
    store.close().await.unwrap();
    store.close().await.unwrap();
    assert!(matches!(store.ping().await, Err(StoreError::Closed)));
    let write: Result<(), StoreError> = store.write(|_| Ok(())).await;
    assert!(matches!(write, Err(StoreError::Closed)));
    // The WAL was checkpointed into the main file on close.
    let wal = dir.path().join("souz.db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
}

#[cfg(unix)]
#[tokio::test]
async fn new_database_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    let _store = Store::open(&path).await.unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn migration_names_are_unique() {
    let mut names: Vec<_> = MIGRATIONS.iter().map(|m| m.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), MIGRATIONS.len());
}

/// A database whose facts have vectors made from the earlier embedding text: after the
/// `memory_embeddings_again` migration each active fact's vector is a pending job due now, and
/// no vector of the earlier text is left for dense recall to use.
#[tokio::test]
async fn vectors_of_the_earlier_embedding_text_are_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    let last = MIGRATIONS
        .iter()
        .position(|migration| migration.name == "memory_embeddings_again")
        .unwrap();
    {
        let connection = Connection::open(&path).unwrap();
        for (migration, version) in MIGRATIONS[..last].iter().zip(1_i64..) {
            connection.execute_batch(migration.sql).unwrap();
            connection
                .execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)",
                    rusqlite::params![version, migration.name],
                )
                .unwrap();
        }
        connection
            .pragma_update(None, "user_version", last as i64)
            .unwrap();
        let at = "2026-01-01T00:00:00.000Z";
        for (id, status, hash) in [
            ("kept", "ACTIVE", "h1"),
            ("retired", "RETIRED", "h2"),
            ("changed", "ACTIVE", "h3-new"),
        ] {
            connection
                .execute(
                    "INSERT INTO memory_facts (id, owner_id, scope_type, scope_id, kind, title, \
                     body, status, retention, confidence, importance, created_by, \
                     content_hash, created_at, updated_at) VALUES (?1, 'local', 'GLOBAL', \
                     'global', 'SEMANTIC', 't', 'b', ?2, 'DURABLE', 1.0, 0.5, 'writer', ?3, \
                     ?4, ?4)",
                    rusqlite::params![id, status, hash, at],
                )
                .unwrap();
        }
        for (id, hash) in [("kept", "h1"), ("retired", "h2"), ("changed", "h3-old")] {
            connection
                .execute(
                    "INSERT INTO memory_fact_embeddings (fact_id, embedding_model, \
                     embedding_blob, dimension, content_hash, created_at) \
                     VALUES (?1, 'local/e5', x'0000803f', 1, ?2, ?3)",
                    rusqlite::params![id, hash, at],
                )
                .unwrap();
            connection
                .execute(
                    "INSERT INTO memory_index_jobs (fact_id, owner_id, embedding_model, \
                     content_hash, status, attempt_count, next_attempt_at, created_at, \
                     updated_at) VALUES (?1, 'local', 'local/e5', ?2, 'COMPLETED', 1, ?3, ?3, ?3)",
                    rusqlite::params![id, hash, at],
                )
                .unwrap();
        }
    }
    let store = Store::open(&path).await.unwrap();
    let (vectors, jobs) = store
        .read(|c| {
            let vectors: i64 =
                c.query_row("SELECT count(*) FROM memory_fact_embeddings", [], |r| {
                    r.get(0)
                })?;
            let mut statement = c.prepare(
                "SELECT fact_id, status, attempt_count, next_attempt_at > '2026-06-01' \
                 FROM memory_index_jobs ORDER BY fact_id",
            )?;
            let jobs = statement
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, bool>(3)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, StoreError>((vectors, jobs))
        })
        .await
        .unwrap();
    assert_eq!(vectors, 0, "no vector of the earlier text is left");
    assert_eq!(
        jobs,
        [
            ("changed".to_owned(), "COMPLETED".to_owned(), 1, false),
            ("kept".to_owned(), "PENDING".to_owned(), 0, true),
            ("retired".to_owned(), "COMPLETED".to_owned(), 1, false),
        ],
        "the active fact's vector is due again now; the others are left as they were"
    );
}
