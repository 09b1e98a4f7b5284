//! Provider API keys at rest: AES-256-GCM encrypted rows in SQLite, under a random 256-bit data
//! key kept in the OS keychain where one answers (`keychain`: the macOS Keychain, a Secret
//! Service on Linux desktops), else in an owner-only file in the Souz home.
//!
//! Invariants:
//! - A key is only ever held as [`ApiKey`], whose `Debug` and `Display` never show it; the
//!   wire and the logs only see its hint (`...` and the last four characters).
//! - Each row is sealed with a fresh 96-bit nonce, and the provider name is authenticated data:
//!   a row copied under another provider does not decrypt.
//! - The data key is made only when the first key is stored: in the keychain if it takes it,
//!   else in the key file (mode 0600, exclusive create). A key file, once there, is always
//!   used (so is a file left by an older Souz). A key file readable by others is made
//!   owner-only before use, with a warning.
//! - Once rows exist, a missing data key is an error that says so and what to do, never a
//!   reason to make a new one: nothing is overwritten or silently re-keyed, and a keychain
//!   that is locked or gone makes reads and writes fail rather than fork into a second key.
//! - Every key and secret stored, read or present at start is named to the redactor by its
//!   value (`redaction`), so one of no known shape never reaches a log or an audit row.
//! - Keys belong to a user (a row per user and provider, like the original's
//!   `user_provider_keys`): a [`KeyStore`] reads and writes one user's rows only
//!   ([`KeyStore::for_user`]; [`KeyStore::new`] is the local user's). One data key seals
//!   every user's rows.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::OptionalExtension;
use zeroize::Zeroizing;

pub use keychain::{Keychain, KeychainError};

use super::ProviderId;
use crate::sandbox::DaemonFile;
use crate::store::{Store, StoreError};

/// The largest data-key file read (the key is 64 hexadecimal characters).
const MAX_KEY_FILE_BYTES: u64 = 4096;

mod keychain;
mod redaction;
mod secrets;
mod sessions;

/// Format version written as the first byte of every sealed key.
const SEALED_VERSION: u8 = 1;
const NONCE_BYTES: usize = 12;
/// Longest key accepted (real keys are far shorter; GigaChat's are the longest, ~100 chars).
pub const MAX_KEY_CHARS: usize = 4096;

/// A provider API key. Cheap to clone; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<Zeroizing<String>>);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(Arc::new(Zeroizing::new(key.into())))
    }

    /// The key itself, for the request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What may be shown: `...` and the last four characters (only `...` for keys too short
    /// for that to be safe).
    pub fn hint(&self) -> String {
        let chars: Vec<char> = self.0.chars().collect();
        if chars.len() < 12 {
            return "...".to_owned();
        }
        let tail: String = chars[chars.len() - 4..].iter().collect();
        format!("...{tail}")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({})", self.hint())
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hint())
    }
}

/// Why a key could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum KeyStoreError {
    /// The data key file cannot be used.
    #[error(
        "provider keys cannot be read: the key file {path} {problem}. Store the provider keys \
         again (PUT /v1/me/provider-keys/<provider>) after deleting them, or restore the file"
    )]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A stored key does not decrypt with the current data key.
    #[error(
        "the stored {provider} key cannot be decrypted with the key file {path} (the file was \
         replaced, or the database comes from another machine); store the key again with \
         PUT /v1/me/provider-keys/{provider}"
    )]
    Decrypt {
        /// The provider.
        provider: ProviderId,
        /// The key file used.
        path: PathBuf,
    },
    /// The keychain that holds (or would hold) the data key cannot be used.
    #[error(
        "provider keys cannot be used: the key that encrypts them is kept in {}, which {}. \
         Unlock it (or run Souz in your desktop session), or delete the stored keys and store \
         them again",
        .0.keychain,
        .0.reason
    )]
    Keychain(KeychainError),
    /// The keychain answers, but holds no data key although keys are stored.
    #[error(
        "provider keys cannot be read: neither {keychain} nor the key file {path} holds the key \
         that encrypts them. Delete the stored keys and store them again"
    )]
    DataKeyMissing {
        /// The keychain asked.
        keychain: &'static str,
        /// The key file looked for.
        path: PathBuf,
    },
    /// A stored secret does not decrypt with the current data key.
    #[error(
        "the stored secret `{name}` cannot be decrypted with the key file {path} (the file was \
         replaced, or the database comes from another machine); store it again"
    )]
    SecretDecrypt {
        /// The secret's name.
        name: String,
        /// The key file used.
        path: PathBuf,
    },
    /// The system random source failed.
    #[error("cannot generate random bytes: {0}")]
    Random(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for KeyStoreError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Store(StoreError::from(error))
    }
}

/// A stored key's public facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// The provider.
    pub provider: ProviderId,
    /// `...` and the last four characters.
    pub key_hint: String,
    /// When it was stored.
    pub updated_at: DateTime<Utc>,
}

/// One user's encrypted provider keys in the database.
#[derive(Clone, Debug)]
pub struct KeyStore {
    store: Store,
    key_file: PathBuf,
    keychain: Option<Keychain>,
    user: Arc<str>,
}

impl KeyStore {
    /// The local user's keys in `store`, sealed with the data key in `key_file`.
    pub fn new(store: Store, key_file: impl Into<PathBuf>) -> Self {
        Self {
            store,
            key_file: key_file.into(),
            keychain: None,
            user: Arc::from(crate::LOCAL_USER),
        }
    }

    /// The same store, for the keys of `user`.
    pub fn for_user(&self, user: &str) -> Self {
        Self {
            user: Arc::from(user),
            ..self.clone()
        }
    }

    /// Whose keys these are.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Keeps a new data key in `keychain` when it takes it (the key file stays the fallback).
    pub fn with_keychain(mut self, keychain: Option<Keychain>) -> Self {
        self.keychain = keychain;
        self
    }

    /// The data key file.
    pub fn key_file(&self) -> &Path {
        &self.key_file
    }

    /// Every stored key's public facts, sorted by provider.
    pub async fn list(&self) -> Result<Vec<StoredKey>, KeyStoreError> {
        let user = Arc::clone(&self.user);
        self.store
            .read(move |connection| {
                let mut statement = connection.prepare(
                    "SELECT provider, key_hint, updated_at FROM provider_keys WHERE user_id = ?1 \
                     ORDER BY provider",
                )?;
                let rows = statement.query_map([&*user], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                    ))
                })?;
                let mut keys = Vec::new();
                for row in rows {
                    let (provider, key_hint, updated_at) = row?;
                    // Rows of providers this build does not know are skipped, not fatal.
                    let Some(provider) = ProviderId::parse(&provider) else {
                        continue;
                    };
                    keys.push(StoredKey {
                        provider,
                        key_hint,
                        updated_at: parse_time(&updated_at)?,
                    });
                }
                Ok(keys)
            })
            .await
    }

    /// Stores (or replaces) the key of `provider`; its value is redacted from then on.
    pub async fn put(&self, provider: ProviderId, key: ApiKey) -> Result<StoredKey, KeyStoreError> {
        crate::redact::register_secret(key.expose());
        self.write_key(provider, key).await
    }

    /// Stores the key of `provider` without naming it to the redactor: a key stored by an
    /// earlier process, for the tests of what a start registers.
    #[cfg(test)]
    pub(crate) async fn put_as_an_earlier_process(
        &self,
        provider: ProviderId,
        key: ApiKey,
    ) -> Result<StoredKey, KeyStoreError> {
        self.write_key(provider, key).await
    }

    async fn write_key(
        &self,
        provider: ProviderId,
        key: ApiKey,
    ) -> Result<StoredKey, KeyStoreError> {
        let data_key = self.data_key_for_writing().await?;
        let sealed = seal(&data_key, provider, key.expose())?;
        let stored = StoredKey {
            provider,
            key_hint: key.hint(),
            updated_at: now_millis(),
        };
        let row = stored.clone();
        let user = Arc::clone(&self.user);
        self.store
            .write(move |transaction| {
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
                Ok::<_, KeyStoreError>(())
            })
            .await?;
        Ok(stored)
    }

    /// Deletes the key of `provider`. Returns whether one was stored.
    pub async fn delete(&self, provider: ProviderId) -> Result<bool, KeyStoreError> {
        let user = Arc::clone(&self.user);
        self.store
            .write(move |transaction| {
                let deleted = transaction.execute(
                    "DELETE FROM provider_keys WHERE user_id = ?1 AND provider = ?2",
                    [&*user, provider.as_str()],
                )?;
                Ok::<_, KeyStoreError>(deleted > 0)
            })
            .await
    }

    /// The stored key of `provider`, decrypted.
    pub async fn get(&self, provider: ProviderId) -> Result<Option<ApiKey>, KeyStoreError> {
        let user = Arc::clone(&self.user);
        let sealed: Option<Vec<u8>> = self
            .store
            .read(move |connection| {
                connection
                    .query_row(
                        "SELECT ciphertext FROM provider_keys WHERE user_id = ?1 AND provider = ?2",
                        [&*user, provider.as_str()],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(KeyStoreError::from)
            })
            .await?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let data_key = self.data_key_for_reading().await?;
        open(&data_key, provider, &sealed)
            .map(|key| {
                crate::redact::register_secret(&key);
                Some(ApiKey::new(key))
            })
            .ok_or_else(|| KeyStoreError::Decrypt {
                provider,
                path: self.key_file.clone(),
            })
    }

    /// The data key of stored rows: the key file if there is one, else the keychain's.
    async fn data_key_for_reading(&self) -> Result<DataKey, KeyStoreError> {
        match load_data_key(&self.key_file) {
            Ok(key) => return Ok(key),
            Err(DataKeyError::Invalid(problem)) => return Err(self.key_file_error(problem)),
            Err(DataKeyError::Missing) => {}
        }
        let Some(keychain) = &self.keychain else {
            return Err(self.key_file_error("is missing although keys are stored".to_owned()));
        };
        match keychain.load().await {
            Ok(Some(key)) => Ok(key),
            Ok(None) => Err(KeyStoreError::DataKeyMissing {
                keychain: keychain.name(),
                path: self.key_file.clone(),
            }),
            Err(error) => Err(KeyStoreError::Keychain(error)),
        }
    }

    /// The data key to seal a new row with, made on the first write.
    async fn data_key_for_writing(&self) -> Result<DataKey, KeyStoreError> {
        match load_data_key(&self.key_file) {
            Ok(key) => return Ok(key),
            Err(DataKeyError::Invalid(problem)) => return Err(self.key_file_error(problem)),
            Err(DataKeyError::Missing) => {}
        }
        if self.has_rows().await? {
            // Rows are sealed with a key that must exist somewhere: never make another.
            return self.data_key_for_reading().await;
        }
        let Some(keychain) = &self.keychain else {
            return create_data_key(&self.key_file);
        };
        let outcome = match keychain.load().await {
            Ok(Some(key)) => return Ok(key),
            Ok(None) => {
                let key = new_data_key()?;
                keychain.store(&key).await.map(|()| key)
            }
            Err(error) => Err(error),
        };
        match outcome {
            Ok(key) => {
                tracing::info!(
                    keychain = keychain.name(),
                    "provider keys are sealed with a key kept in the keychain"
                );
                Ok(key)
            }
            Err(error) => {
                tracing::info!(%error, file = %self.key_file.display(), "no keychain for the provider-keys data key; using an owner-only file");
                create_data_key(&self.key_file)
            }
        }
    }

    /// Whether any key or secret is stored (all rows share the one data key).
    async fn has_rows(&self) -> Result<bool, KeyStoreError> {
        self.store
            .read(|connection| {
                connection
                    .query_row(
                        "SELECT EXISTS (SELECT 1 FROM provider_keys) \
                         OR EXISTS (SELECT 1 FROM secrets)",
                        [],
                        |row| row.get::<_, bool>(0),
                    )
                    .map_err(KeyStoreError::from)
            })
            .await
    }

    fn key_file_error(&self, problem: String) -> KeyStoreError {
        KeyStoreError::KeyFile {
            path: self.key_file.clone(),
            problem,
        }
    }
}

type DataKey = Zeroizing<[u8; 32]>;

enum DataKeyError {
    Missing,
    Invalid(String),
}

fn load_data_key(path: &Path) -> Result<DataKey, DataKeyError> {
    let unreadable = |error: String| DataKeyError::Invalid(format!("cannot be read ({error})"));
    // Opened in its trusted folder (the Souz home) without following a link at the file.
    let file = DaemonFile::in_trusted_folder(path)
        .and_then(|file| file.open())
        .map_err(|error| unreadable(error.to_string()))?
        .ok_or(DataKeyError::Missing)?;
    make_owner_only(&file, path)?;
    let mut text = Zeroizing::new(String::new());
    (&file)
        .take(MAX_KEY_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|error| unreadable(error.to_string()))?;
    let mut key = Zeroizing::new([0u8; 32]);
    hex::decode_to_slice(text.trim(), key.as_mut_slice()).map_err(|_| {
        DataKeyError::Invalid("does not hold a 256-bit key (64 hexadecimal characters)".to_owned())
    })?;
    Ok(key)
}

/// Takes group and other permissions off the opened key file, if it has any.
fn make_owner_only(file: &std::fs::File, path: &Path) -> Result<(), DataKeyError> {
    let stat = rustix::fs::fstat(file)
        .map_err(|error| DataKeyError::Invalid(format!("cannot be read ({error})")))?;
    let mode = stat.st_mode & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(file = %path.display(), mode = format!("{mode:o}"), "the provider-keys data key was readable by others; making it owner-only (consider storing your provider keys again)");
        rustix::fs::fchmod(file, rustix::fs::Mode::from_bits_truncate(0o600)).map_err(|error| {
            DataKeyError::Invalid(format!("cannot be made owner-only ({error})"))
        })?;
    }
    Ok(())
}

fn new_data_key() -> Result<DataKey, KeyStoreError> {
    let mut key = Zeroizing::new([0u8; 32]);
    getrandom::fill(key.as_mut_slice())
        .map_err(|error| KeyStoreError::Random(error.to_string()))?;
    Ok(key)
}

fn create_data_key(path: &Path) -> Result<DataKey, KeyStoreError> {
    let key = new_data_key()?;
    let text = Zeroizing::new(hex::encode(key.as_slice()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file_error = |error: std::io::Error| KeyStoreError::KeyFile {
        path: path.to_owned(),
        problem: format!("cannot be created ({error})"),
    };
    match options.open(path) {
        Ok(mut file) => {
            file.write_all(text.as_bytes())
                .and_then(|()| file.write_all(b"\n"))
                .and_then(|()| file.sync_all())
                .map_err(file_error)?;
            Ok(key)
        }
        // Another writer made it first: use theirs.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => load_data_key(path)
            .map_err(|_| KeyStoreError::KeyFile {
                path: path.to_owned(),
                problem: "appeared while it was being created and cannot be read".to_owned(),
            }),
        Err(error) => Err(file_error(error)),
    }
}

fn associated_data(provider: ProviderId) -> Vec<u8> {
    format!("souz provider key v1:{}", provider.as_str()).into_bytes()
}

fn seal(data_key: &DataKey, provider: ProviderId, key: &str) -> Result<Vec<u8>, KeyStoreError> {
    seal_with(data_key, &associated_data(provider), key)
}

/// Seals `plain` with a fresh nonce, `aad` authenticated with it.
fn seal_with(data_key: &DataKey, aad: &[u8], plain: &str) -> Result<Vec<u8>, KeyStoreError> {
    let cipher = Aes256Gcm::new_from_slice(data_key.as_slice())
        .map_err(|_| KeyStoreError::Random("invalid data key length".to_owned()))?;
    let mut nonce = [0u8; NONCE_BYTES];
    getrandom::fill(&mut nonce).map_err(|error| KeyStoreError::Random(error.to_string()))?;
    let ciphertext = cipher
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: plain.as_bytes(),
                aad,
            },
        )
        .map_err(|_| KeyStoreError::Random("encryption failed".to_owned()))?;
    let mut sealed = Vec::with_capacity(1 + NONCE_BYTES + ciphertext.len());
    sealed.push(SEALED_VERSION);
    sealed.extend_from_slice(&nonce);
    sealed.extend_from_slice(&ciphertext);
    Ok(sealed)
}

fn open(data_key: &DataKey, provider: ProviderId, sealed: &[u8]) -> Option<String> {
    open_with(data_key, &associated_data(provider), sealed)
}

/// Opens what [`seal_with`] sealed with the same `aad`; `None` if it does not authenticate.
fn open_with(data_key: &DataKey, aad: &[u8], sealed: &[u8]) -> Option<String> {
    let (&version, rest) = sealed.split_first()?;
    if version != SEALED_VERSION || rest.len() < NONCE_BYTES {
        return None;
    }
    let (nonce, ciphertext) = rest.split_at(NONCE_BYTES);
    let cipher = Aes256Gcm::new_from_slice(data_key.as_slice()).ok()?;
    let plain = cipher
        .decrypt(
            Nonce::from_slice(nonce),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .ok()?;
    String::from_utf8(plain).ok()
}

fn now_millis() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
}

fn format_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, KeyStoreError> {
    DateTime::parse_from_rfc3339(text)
        .map(|time| time.with_timezone(&Utc))
        .map_err(|error| {
            StoreError::Corrupt(format!("provider key timestamp `{text}`: {error}")).into()
        })
}

#[cfg(test)]
mod tests;
