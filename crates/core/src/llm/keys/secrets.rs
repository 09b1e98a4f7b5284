//! Named secrets that are not provider keys (an MCP server's bearer token, its OAuth
//! credentials), kept in the `secrets` table under the same data key as provider keys.
//!
//! Invariants: a secret is the daemon's, not a user's (the servers it serves are configured
//! for the daemon); each row is sealed with a fresh nonce and its name as authenticated data,
//! so a row copied under another name does not decrypt; a secret is only ever held as
//! [`ApiKey`], which never prints it.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rusqlite::OptionalExtension;

use super::{
    ApiKey, KeyStore, KeyStoreError, format_time, now_millis, open_with, parse_time, seal_with,
};

pub(super) fn associated_data(name: &str) -> Vec<u8> {
    format!("souz secret v1:{name}").into_bytes()
}

impl KeyStore {
    /// Stores (or replaces) the secret `name`.
    pub async fn put_secret(&self, name: &str, secret: &ApiKey) -> Result<(), KeyStoreError> {
        crate::redact::register_secret(secret.expose());
        self.write_secret(name, secret).await
    }

    /// Stores the secret `name` without naming it to the redactor: a secret stored by an
    /// earlier process, for the tests of what a start registers.
    #[cfg(test)]
    pub(crate) async fn put_secret_as_an_earlier_process(
        &self,
        name: &str,
        secret: &ApiKey,
    ) -> Result<(), KeyStoreError> {
        self.write_secret(name, secret).await
    }

    async fn write_secret(&self, name: &str, secret: &ApiKey) -> Result<(), KeyStoreError> {
        let data_key = self.data_key_for_writing().await?;
        let sealed = seal_with(&data_key, &associated_data(name), secret.expose())?;
        let name: Arc<str> = Arc::from(name);
        let updated_at = format_time(now_millis());
        self.store
            .write(move |transaction| {
                transaction.execute(
                    "INSERT INTO secrets (name, ciphertext, updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (name) DO UPDATE SET
                         ciphertext = excluded.ciphertext,
                         updated_at = excluded.updated_at",
                    rusqlite::params![&*name, sealed, updated_at],
                )?;
                Ok::<_, KeyStoreError>(())
            })
            .await
    }

    /// The secret `name`, decrypted; `None` when none is stored.
    pub async fn get_secret(&self, name: &str) -> Result<Option<ApiKey>, KeyStoreError> {
        Ok(self.stored_secret(name).await?.map(|(secret, _)| secret))
    }

    /// The secret `name`, decrypted, and when it was stored; `None` when none is stored.
    pub async fn stored_secret(
        &self,
        name: &str,
    ) -> Result<Option<(ApiKey, DateTime<Utc>)>, KeyStoreError> {
        let key: Arc<str> = Arc::from(name);
        let sealed: Option<(Vec<u8>, String)> = self
            .store
            .read(move |connection| {
                connection
                    .query_row(
                        "SELECT ciphertext, updated_at FROM secrets WHERE name = ?1",
                        [&*key],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                    .map_err(KeyStoreError::from)
            })
            .await?;
        let Some((sealed, updated_at)) = sealed else {
            return Ok(None);
        };
        let data_key = self.data_key_for_reading().await?;
        let secret = open_with(&data_key, &associated_data(name), &sealed).ok_or_else(|| {
            KeyStoreError::SecretDecrypt {
                name: name.to_owned(),
                path: self.key_file.clone(),
            }
        })?;
        crate::redact::register_secret(&secret);
        Ok(Some((ApiKey::new(secret), parse_time(&updated_at)?)))
    }

    /// Deletes the secret `name`. Returns whether one was stored.
    pub async fn delete_secret(&self, name: &str) -> Result<bool, KeyStoreError> {
        let name: Arc<str> = Arc::from(name);
        self.store
            .write(move |transaction| {
                let deleted =
                    transaction.execute("DELETE FROM secrets WHERE name = ?1", [&*name])?;
                Ok::<_, KeyStoreError>(deleted > 0)
            })
            .await
    }
}

#[cfg(test)]
mod tests;
