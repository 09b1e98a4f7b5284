//! The named secrets: sealed, bound to their names, listed and deleted.

use super::*;
use crate::testing::TestHome;

async fn keys(dir: &TestHome) -> KeyStore {
    KeyStore::new(dir.store().await, dir.path().join("provider-keys.key"))
}

#[tokio::test]
async fn a_secret_round_trips_sealed_and_is_deleted() {
    let dir = TestHome::new();
    let keys = keys(&dir).await;
    assert!(keys.get_secret("mcp:tracker").await.unwrap().is_none());
    keys.put_secret("mcp:tracker", &ApiKey::new("tok-12345678"))
        .await
        .unwrap();
    let got = keys.get_secret("mcp:tracker").await.unwrap().unwrap();
    assert_eq!(got.expose(), "tok-12345678");
    // Sealed at rest: the token is not in the row.
    let raw: Vec<u8> = keys
        .store
        .read(|c| {
            c.query_row("SELECT ciphertext FROM secrets", [], |row| row.get(0))
                .map_err(KeyStoreError::from)
        })
        .await
        .unwrap();
    assert!(!raw.windows(12).any(|w| w == b"tok-12345678"));
    assert!(keys.delete_secret("mcp:tracker").await.unwrap());
    assert!(!keys.delete_secret("mcp:tracker").await.unwrap());
    assert!(keys.get_secret("mcp:tracker").await.unwrap().is_none());
}

#[tokio::test]
async fn a_row_moved_under_another_name_does_not_decrypt() {
    let dir = TestHome::new();
    let keys = keys(&dir).await;
    keys.put_secret("a", &ApiKey::new("secret-a"))
        .await
        .unwrap();
    keys.store
        .write(|t| {
            t.execute("UPDATE secrets SET name = 'b'", [])?;
            Ok::<_, KeyStoreError>(())
        })
        .await
        .unwrap();
    assert!(matches!(
        keys.get_secret("b").await,
        Err(KeyStoreError::SecretDecrypt { .. })
    ));
}

#[tokio::test]
async fn a_secret_alone_keeps_the_data_key_from_being_remade() {
    let dir = TestHome::new();
    let keys = keys(&dir).await;
    keys.put_secret("a", &ApiKey::new("secret-a"))
        .await
        .unwrap();
    std::fs::remove_file(dir.path().join("provider-keys.key")).unwrap();
    // Rows exist: writing must not make a new data key that would orphan them.
    assert!(keys.put_secret("b", &ApiKey::new("x")).await.is_err());
    assert!(!dir.path().join("provider-keys.key").exists());
}
