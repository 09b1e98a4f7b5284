//! Account sessions kept like provider keys: the tokens of a provider one signs in to
//! ([`ProviderId::signs_in`], Codex through a ChatGPT account), sealed in the same
//! `provider_keys` row a key would use, under the same data key.
//!
//! Invariants: a session is written whole in one statement (never a half-rotated pair of
//! tokens); [`KeyStore::replace_session`] writes only when the row still holds the session the
//! caller read, checked and written inside one `IMMEDIATE` transaction, so a refresh that lost
//! a race never overwrites the newer refresh token another refresh stored; the hint shown for
//! a session is the caller's (an account name), never a piece of a token.

use std::sync::Arc;

use rusqlite::OptionalExtension;

use super::{ApiKey, KeyStore, KeyStoreError, StoredKey, format_time, now_millis, open, seal};
use crate::llm::ProviderId;

impl KeyStore {
    /// Stores (or replaces) the session of `provider`, listed with `hint`.
    pub(crate) async fn put_session(
        &self,
        provider: ProviderId,
        session: &ApiKey,
        hint: &str,
    ) -> Result<StoredKey, KeyStoreError> {
        self.write_session(provider, session, hint, None)
            .await
            .map(|(stored, _)| stored)
    }

    /// Replaces the session of `provider` with `next` only if the row still holds `current`
    /// (compared after decryption, inside the writing transaction). Returns whether it wrote;
    /// `false` means another writer changed or removed it first.
    pub(crate) async fn replace_session(
        &self,
        provider: ProviderId,
        current: &ApiKey,
        next: &ApiKey,
        hint: &str,
    ) -> Result<bool, KeyStoreError> {
        self.write_session(provider, next, hint, Some(current.clone()))
            .await
            .map(|(_, written)| written)
    }

    /// Removes the session of `provider` only if the row still holds `current`. Returns
    /// whether it removed it.
    pub(crate) async fn remove_session_if(
        &self,
        provider: ProviderId,
        current: &ApiKey,
    ) -> Result<bool, KeyStoreError> {
        let data_key = self.data_key_for_reading().await?;
        let user = Arc::clone(&self.user);
        let current = current.clone();
        self.store
            .write(move |transaction| {
                let present: Option<Vec<u8>> = transaction
                    .query_row(
                        "SELECT ciphertext FROM provider_keys \
                         WHERE user_id = ?1 AND provider = ?2",
                        [&*user, provider.as_str()],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(KeyStoreError::from)?;
                let unchanged = present
                    .and_then(|sealed| open(&data_key, provider, &sealed))
                    .is_some_and(|plain| plain == current.expose());
                if unchanged {
                    transaction.execute(
                        "DELETE FROM provider_keys WHERE user_id = ?1 AND provider = ?2",
                        [&*user, provider.as_str()],
                    )?;
                }
                Ok::<_, KeyStoreError>(unchanged)
            })
            .await
    }

    async fn write_session(
        &self,
        provider: ProviderId,
        session: &ApiKey,
        hint: &str,
        expected: Option<ApiKey>,
    ) -> Result<(StoredKey, bool), KeyStoreError> {
        let data_key = self.data_key_for_writing().await?;
        let sealed = seal(&data_key, provider, session.expose())?;
        let stored = StoredKey {
            provider,
            key_hint: hint.to_owned(),
            updated_at: now_millis(),
        };
        let row = stored.clone();
        let user = Arc::clone(&self.user);
        let written = self
            .store
            .write(move |transaction| {
                if let Some(expected) = expected {
                    let present: Option<Vec<u8>> = transaction
                        .query_row(
                            "SELECT ciphertext FROM provider_keys \
                             WHERE user_id = ?1 AND provider = ?2",
                            [&*user, provider.as_str()],
                            |row| row.get(0),
                        )
                        .optional()
                        .map_err(KeyStoreError::from)?;
                    let unchanged = present
                        .and_then(|sealed| open(&data_key, provider, &sealed))
                        .is_some_and(|plain| plain == expected.expose());
                    if !unchanged {
                        return Ok(false);
                    }
                }
                transaction.execute(
                    "INSERT INTO provider_keys (provider, ciphertext, key_hint, updated_at, user_id)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (user_id, provider) DO UPDATE SET
                         ciphertext = excluded.ciphertext,
                         key_hint = excluded.key_hint,
                         updated_at = excluded.updated_at",
                    rusqlite::params![
                        row.provider.as_str(),
                        sealed,
                        row.key_hint,
                        format_time(row.updated_at),
                        &*user
                    ],
                )?;
                Ok::<_, KeyStoreError>(true)
            })
            .await?;
        Ok((stored, written))
    }
}
