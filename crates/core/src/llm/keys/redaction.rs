//! Stored keys named to the redactor by their value: a key of no known shape (a provider's
//! own format, a bearer token of an MCP server) is redacted only if the redactor knows it, so
//! at start every stored provider key (of every user) and every stored secret is named to it,
//! besides the registrations when one is stored or read.
//!
//! Invariants: only values are registered, never logged; a row that does not decrypt is
//! skipped (reading it elsewhere reports the error); values shorter than the redactor's minimum
//! are not registered (they would redact ordinary words).

use zeroize::Zeroizing;

use super::{KeyStore, KeyStoreError, ProviderId, open, open_with, secrets};

/// The sealed rows of every stored key and secret: `(provider, sealed)`, `(name, sealed)`.
type SealedRows = (Vec<(String, Vec<u8>)>, Vec<(String, Vec<u8>)>);

impl KeyStore {
    /// Names the value of every stored provider key (every user's) and every stored secret to
    /// the redactor; how many were named. Nothing is read when nothing is stored.
    pub async fn register_for_redaction(&self) -> Result<usize, KeyStoreError> {
        if !self.has_rows().await? {
            return Ok(0);
        }
        let (keys, named): SealedRows = self
            .store
            .read(|connection| {
                let rows = |sql: &str| -> Result<Vec<(String, Vec<u8>)>, rusqlite::Error> {
                    let mut statement = connection.prepare(sql)?;
                    statement
                        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                        .collect()
                };
                Ok::<_, KeyStoreError>((
                    rows("SELECT provider, ciphertext FROM provider_keys")?,
                    rows("SELECT name, ciphertext FROM secrets")?,
                ))
            })
            .await?;
        let data_key = self.data_key_for_reading().await?;
        let mut registered = 0;
        let opened = keys
            .iter()
            .filter_map(|(provider, sealed)| open(&data_key, ProviderId::parse(provider)?, sealed))
            .chain(named.iter().filter_map(|(name, sealed)| {
                open_with(&data_key, &secrets::associated_data(name), sealed)
            }));
        for value in opened {
            let value = Zeroizing::new(value);
            crate::redact::register_secret(&value);
            // An account session is a JSON object of tokens: each is named on its own.
            crate::llm::codex::register_session_tokens(&value);
            registered += 1;
        }
        Ok(registered)
    }
}
