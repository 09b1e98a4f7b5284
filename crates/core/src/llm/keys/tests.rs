//! Provider keys at rest: encryption round trip, hints, key file handling.

use super::*;
use crate::testing::TestHome;

/// Keys in `souz.db` of `dir`, under the data key in its `provider-keys.key`.
async fn key_store(dir: &TestHome) -> (Store, KeyStore) {
    let store = dir.store().await;
    let keys = KeyStore::new(store.clone(), dir.path().join("provider-keys.key"));
    (store, keys)
}

const SECRET: &str = "sk-proj-SECRETSECRETSECRET-7f3a";

/// The plaintext of the key `keys` holds for `provider` (there must be one).
async fn stored_secret(keys: &KeyStore, provider: ProviderId) -> String {
    keys.get(provider)
        .await
        .unwrap()
        .unwrap()
        .expose()
        .to_owned()
}

#[tokio::test]
async fn keys_round_trip_encrypted_with_hints_only_in_the_clear() {
    let dir = TestHome::new();
    let (store, keys) = key_store(&dir).await;
    assert!(keys.list().await.unwrap().is_empty());
    assert!(
        !keys.key_file().exists(),
        "no key file before the first key"
    );

    let stored = keys
        .put(ProviderId::OpenAi, ApiKey::new(SECRET))
        .await
        .unwrap();
    assert_eq!(stored.key_hint, "...7f3a");
    keys.put(
        ProviderId::Anthropic,
        ApiKey::new("sk-ant-another-key-9999"),
    )
    .await
    .unwrap();
    assert_eq!(stored_secret(&keys, ProviderId::OpenAi).await, SECRET);
    assert_eq!(keys.get(ProviderId::Qwen).await.unwrap(), None);
    let listed: Vec<_> = keys
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|key| key.provider)
        .collect();
    assert_eq!(listed, [ProviderId::Anthropic, ProviderId::OpenAi]);

    // The database holds no plaintext.
    let rows: Vec<Vec<u8>> = store
        .read(|connection| {
            let mut statement = connection.prepare("SELECT ciphertext FROM provider_keys")?;
            let rows = statement
                .query_map([], |row| row.get(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, StoreError>(rows)
        })
        .await
        .unwrap();
    for row in &rows {
        assert!(
            !row.windows(SECRET.len())
                .any(|window| window == SECRET.as_bytes())
        );
        assert_eq!(row[0], SEALED_VERSION);
    }
    store.close().await.unwrap();
    let database = std::fs::read(dir.path().join("souz.db")).unwrap();
    assert!(
        !database
            .windows(SECRET.len())
            .any(|window| window == SECRET.as_bytes())
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("provider-keys.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn replacing_and_deleting_keys() {
    let dir = TestHome::new();
    let (_, keys) = key_store(&dir).await;
    keys.put(ProviderId::Giga, ApiKey::new("first-giga-key-aaaa"))
        .await
        .unwrap();
    keys.put(ProviderId::Giga, ApiKey::new("second-giga-key-bbbb"))
        .await
        .unwrap();
    assert_eq!(
        stored_secret(&keys, ProviderId::Giga).await,
        "second-giga-key-bbbb"
    );
    assert_eq!(keys.list().await.unwrap().len(), 1);
    assert!(keys.delete(ProviderId::Giga).await.unwrap());
    assert!(!keys.delete(ProviderId::Giga).await.unwrap());
    assert_eq!(keys.get(ProviderId::Giga).await.unwrap(), None);
}

#[tokio::test]
async fn a_replaced_missing_or_malformed_key_file_is_a_clear_error() {
    let dir = TestHome::new();
    let (store, keys) = key_store(&dir).await;
    keys.put(ProviderId::OpenAi, ApiKey::new(SECRET))
        .await
        .unwrap();
    let key_file = dir.path().join("provider-keys.key");

    // Another valid key: the row no longer decrypts.
    std::fs::write(&key_file, hex::encode([7u8; 32])).unwrap();
    let error = keys.get(ProviderId::OpenAi).await.unwrap_err();
    assert!(matches!(
        error,
        KeyStoreError::Decrypt {
            provider: ProviderId::OpenAi,
            ..
        }
    ));
    let message = error.to_string();
    assert!(
        message.contains("PUT /v1/me/provider-keys/openai"),
        "{message}"
    );
    assert!(!message.contains(SECRET));

    // Malformed: reads and writes both refuse, and the file is left alone.
    std::fs::write(&key_file, "not a key").unwrap();
    assert!(matches!(
        keys.get(ProviderId::OpenAi).await.unwrap_err(),
        KeyStoreError::KeyFile { .. }
    ));
    let error = keys
        .put(ProviderId::Qwen, ApiKey::new("qwen-key-0000000"))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("64 hexadecimal characters"),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), "not a key");

    // Missing while rows exist: an error, not a silent new key.
    std::fs::remove_file(&key_file).unwrap();
    let error = keys.get(ProviderId::OpenAi).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("is missing although keys are stored"),
        "{error}"
    );
    assert!(!key_file.exists());

    // A row copied under another provider does not open (the provider is authenticated).
    std::fs::remove_file(dir.path().join("souz.db")).ok();
    drop(store);
}

#[tokio::test]
async fn a_row_moved_to_another_provider_does_not_decrypt() {
    let dir = TestHome::new();
    let (store, keys) = key_store(&dir).await;
    keys.put(ProviderId::OpenAi, ApiKey::new(SECRET))
        .await
        .unwrap();
    store
        .write(|transaction| {
            transaction.execute(
                "UPDATE provider_keys SET provider = 'qwen' WHERE provider = 'openai'",
                [],
            )?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    assert!(matches!(
        keys.get(ProviderId::Qwen).await.unwrap_err(),
        KeyStoreError::Decrypt { .. }
    ));
}

#[test]
fn keys_never_show_in_debug_or_display_and_short_keys_show_nothing() {
    let key = ApiKey::new(SECRET);
    assert_eq!(format!("{key:?}"), "ApiKey(...7f3a)");
    assert_eq!(key.to_string(), "...7f3a");
    assert_eq!(ApiKey::new("abcd").hint(), "...");
    assert_eq!(ApiKey::new("пароль-длинный-ключ").hint(), "...ключ");
}

#[cfg(unix)]
#[tokio::test]
async fn a_key_file_readable_by_others_is_made_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TestHome::new();
    let (_store, keys) = key_store(&dir).await;
    keys.put(ProviderId::OpenAi, ApiKey::new(SECRET))
        .await
        .unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(keys.key_file()), 0o600);
    // Someone (a backup restore, a careless copy) made it world-readable.
    std::fs::set_permissions(keys.key_file(), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(stored_secret(&keys, ProviderId::OpenAi).await, SECRET);
    assert_eq!(mode(keys.key_file()), 0o600);
}

#[tokio::test]
async fn keys_belong_to_their_user_and_older_keys_to_the_local_user() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("souz.db");
    let key_file = dir.path().join("provider-keys.key");
    {
        // A database as the Souz before per-user keys left it, with one key stored.
        let connection = rusqlite::Connection::open(&path).unwrap();
        // Every migration before per-user keys (later ones may follow it).
        let before = crate::store::MIGRATIONS
            .iter()
            .position(|migration| migration.name == "provider_keys_per_user")
            .expect("a provider_keys_per_user migration");
        for (version, migration) in (1_i64..).zip(&crate::store::MIGRATIONS[..before]) {
            connection.execute_batch(migration.sql).unwrap();
            connection
                .execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)",
                    rusqlite::params![version, migration.name],
                )
                .unwrap();
        }
        connection
            .pragma_update(None, "user_version", before as i64)
            .unwrap();
        let data_key = create_data_key(&key_file).unwrap();
        let sealed = seal(&data_key, ProviderId::OpenAi, SECRET).unwrap();
        connection
            .execute(
                "INSERT INTO provider_keys (provider, ciphertext, key_hint, updated_at) \
                 VALUES ('openai', ?1, '...7f3a', '2026-01-01T00:00:00.000Z')",
                [sealed],
            )
            .unwrap();
    }
    let store = Store::open(&path).await.unwrap();
    let local = KeyStore::new(store, &key_file);
    assert_eq!(local.user(), crate::LOCAL_USER);
    let alice = local.for_user("alice");
    assert_eq!(
        stored_secret(&local, ProviderId::OpenAi).await,
        SECRET,
        "the older key is the local user's"
    );
    assert_eq!(alice.get(ProviderId::OpenAi).await.unwrap(), None);
    assert!(alice.list().await.unwrap().is_empty());

    // Alice's own key, under the same data key, changes nobody else's.
    alice
        .put(ProviderId::OpenAi, ApiKey::new("sk-alice-0000-1111"))
        .await
        .unwrap();
    assert_eq!(
        stored_secret(&alice, ProviderId::OpenAi).await,
        "sk-alice-0000-1111"
    );
    assert_eq!(stored_secret(&local, ProviderId::OpenAi).await, SECRET);
    assert!(!alice.delete(ProviderId::Anthropic).await.unwrap());
    assert!(alice.delete(ProviderId::OpenAi).await.unwrap());
    assert_eq!(local.list().await.unwrap().len(), 1);
    assert!(alice.list().await.unwrap().is_empty());
}
