//! Client tokens: one per client, named, listed, revocable, each with a scope: `mcp` (valid on
//! `/mcp` only) or `chats` (the chats it made and their approvals: `souz acp`). What a scope
//! reaches is the gateway's business (`gateway::client_scope`); this module keeps the scope with
//! the token, fixed when it is made.
//!
//! Invariants:
//! - The plaintext token exists once, in the answer to [`ClientTokens::create`]; the database
//!   (`client_tokens`) keeps its SHA-256 only.
//! - Active tokens are also held in memory (id, name, digest) so a request is checked without
//!   a query; the memory copy changes only after the database change committed.
//! - A presented token is compared with every active digest in constant time, without an early
//!   exit, so timing does not tell which (or whether any) prefix matched.
//! - Names are unique among active tokens (ignoring case), so `mcp:<name>` rules name one
//!   client; `operator` is reserved for the operator token's identity.

use std::sync::{Arc, PoisonError, RwLock};

use rusqlite::{OptionalExtension, params};
use souz_protocol::{ClientScope, ClientToken, CreatedClient, OPERATOR_IDENTITY};
use subtle::ConstantTimeEq;

use super::proof;
use crate::store::codec::{from_time, now, to_time};
use crate::store::{Store, StoreError};

/// Prefix of every client token, so one found in a file or a log is recognisable.
pub(crate) const TOKEN_PREFIX: &str = "souz_client_";
/// Longest client name.
const MAX_NAME: usize = 64;

/// The identity a client token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// Client id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it reaches.
    pub scope: ClientScope,
}

/// Why a client token could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientTokenError {
    /// The name is empty, too long, has other characters, or is reserved.
    #[error(
        "client name `{0}` is not usable: 1 to {MAX_NAME} characters of letters, digits, `-`, \
         `_` and `.`, and not `operator`"
    )]
    InvalidName(String),
    /// An active token already has this name.
    #[error("a client named `{0}` already exists; revoke it first (`souz clients revoke`)")]
    NameTaken(String),
    /// The system random source failed.
    #[error("cannot generate a token: {0}")]
    Random(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Clone)]
struct Active {
    identity: ClientIdentity,
    digest: [u8; 32],
    key_id: String,
}

/// The client tokens of this daemon. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ClientTokens {
    store: Store,
    active: Arc<RwLock<Vec<Active>>>,
}

impl std::fmt::Debug for ClientTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientTokens([redacted])")
    }
}

impl ClientTokens {
    /// Loads the active tokens' digests.
    pub(crate) async fn open(store: Store) -> Result<Self, StoreError> {
        let rows = store
            .read(|connection| {
                let mut statement = connection.prepare(
                    "SELECT id, name, token_sha256, scope FROM client_tokens \
                     WHERE revoked_at IS NULL",
                )?;
                let rows = statement.query_map([], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, Vec<u8>>(2)?,
                        row.get::<_, String>(3)?,
                    ))
                })?;
                rows.collect::<Result<Vec<_>, _>>()
                    .map_err(StoreError::from)
            })
            .await?;
        let mut active = Vec::with_capacity(rows.len());
        for (id, name, digest, scope) in rows {
            let digest: [u8; 32] = digest
                .try_into()
                .map_err(|_| StoreError::Corrupt(format!("client_tokens.token_sha256 of {id}")))?;
            let scope = ClientScope::parse(&scope)
                .ok_or_else(|| StoreError::Corrupt(format!("client_tokens.scope of {id}")))?;
            active.push(Active {
                key_id: proof::key_id(&digest),
                identity: ClientIdentity { id, name, scope },
                digest,
            });
        }
        Ok(Self {
            store,
            active: Arc::new(RwLock::new(active)),
        })
    }

    /// Active tokens, oldest first.
    pub(crate) async fn list(&self) -> Result<Vec<ClientToken>, StoreError> {
        self.store
            .read(|connection| {
                let mut statement = connection.prepare(
                    "SELECT id, name, created_at, scope FROM client_tokens \
                     WHERE revoked_at IS NULL ORDER BY created_at, id",
                )?;
                let rows = statement.query_map([], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                    ))
                })?;
                rows.map(|row| {
                    let (id, name, created_at, scope) = row?;
                    Ok(ClientToken {
                        scope: ClientScope::parse(&scope).ok_or_else(|| {
                            StoreError::Corrupt(format!("client_tokens.scope of {id}"))
                        })?,
                        id,
                        name,
                        created_at: from_time("client_tokens.created_at", &created_at)?,
                    })
                })
                .collect()
            })
            .await
    }

    /// Makes a token for a client named `name` that reaches `scope`; the answer is the only
    /// place it is shown.
    pub(crate) async fn create(
        &self,
        name: &str,
        scope: ClientScope,
    ) -> Result<CreatedClient, ClientTokenError> {
        let name = name.trim().to_owned();
        if !valid_name(&name) {
            return Err(ClientTokenError::InvalidName(name));
        }
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|error| ClientTokenError::Random(error.to_string()))?;
        let token = format!("{TOKEN_PREFIX}{}", hex::encode(secret));
        let digest = proof::digest(&token);
        let created = CreatedClient {
            id: uuid::Uuid::now_v7().to_string(),
            name,
            scope,
            token,
            created_at: now(),
        };
        let row = (created.id.clone(), created.name.clone(), created.created_at);
        self.store
            .write(move |transaction| {
                let (id, name, created_at) = row;
                let taken = transaction
                    .query_row(
                        "SELECT 1 FROM client_tokens WHERE name = ?1 COLLATE NOCASE \
                         AND revoked_at IS NULL",
                        [&name],
                        |_| Ok(()),
                    )
                    .optional()
                    .map_err(StoreError::from)?;
                if taken.is_some() {
                    return Err(ClientTokenError::NameTaken(name));
                }
                transaction
                    .execute(
                        "INSERT INTO client_tokens (id, name, token_sha256, created_at, scope) \
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![
                            id,
                            name,
                            digest.to_vec(),
                            to_time(created_at),
                            scope.as_str()
                        ],
                    )
                    .map_err(StoreError::from)?;
                Ok(())
            })
            .await?;
        self.active
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Active {
                identity: ClientIdentity {
                    id: created.id.clone(),
                    name: created.name.clone(),
                    scope,
                },
                key_id: proof::key_id(&digest),
                digest,
            });
        Ok(created)
    }

    /// Revokes the active token `id`; from then on it gets 401. Returns whether there was one.
    pub(crate) async fn revoke(&self, id: &str) -> Result<bool, StoreError> {
        let owned = id.to_owned();
        let revoked = self
            .store
            .write(move |transaction| {
                let changed = transaction.execute(
                    "UPDATE client_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                    params![owned, to_time(now())],
                )?;
                Ok::<_, StoreError>(changed == 1)
            })
            .await?;
        self.active
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|active| active.identity.id != id);
        Ok(revoked)
    }

    /// The identity of `presented` if it is an active client token (constant time over every
    /// active token).
    pub(crate) fn verify(&self, presented: &str) -> Option<ClientIdentity> {
        let presented = proof::digest(presented);
        let active = self.active.read().unwrap_or_else(PoisonError::into_inner);
        let mut found = None;
        for candidate in active.iter() {
            if bool::from(candidate.digest.ct_eq(&presented)) {
                found = Some(candidate.identity.clone());
            }
        }
        found
    }

    /// The digest of the active token whose key id is `key_id` (for the identity proof).
    pub(crate) fn digest_for_key(&self, key_id: &str) -> Option<[u8; 32]> {
        let active = self.active.read().unwrap_or_else(PoisonError::into_inner);
        active
            .iter()
            .find(|candidate| candidate.key_id == key_id)
            .map(|candidate| candidate.digest)
    }
}

/// Whether `name` can name a client.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.eq_ignore_ascii_case(OPERATOR_IDENTITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn tokens() -> (tempfile::TempDir, ClientTokens) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("souz.db")).await.unwrap();
        (dir, ClientTokens::open(store).await.unwrap())
    }

    #[tokio::test]
    async fn tokens_verify_until_revoked_and_survive_a_restart() {
        let (dir, tokens) = tokens().await;
        let code = tokens
            .create("claude-code", ClientScope::Mcp)
            .await
            .unwrap();
        assert!(code.token.starts_with(TOKEN_PREFIX));
        let desktop = tokens.create("zed", ClientScope::Chats).await.unwrap();
        let identity = tokens.verify(&code.token).unwrap();
        assert_eq!(identity.name, "claude-code");
        assert_eq!(identity.id, code.id);
        assert_eq!(identity.scope, ClientScope::Mcp);
        let zed = tokens.verify(&desktop.token).unwrap();
        assert_eq!((zed.name.as_str(), zed.scope), ("zed", ClientScope::Chats));
        assert_eq!(tokens.verify(&format!("{}x", code.token)), None);
        assert_eq!(tokens.verify(""), None);

        let reopened = ClientTokens::open(Store::open(dir.path().join("souz.db")).await.unwrap())
            .await
            .unwrap();
        assert_eq!(reopened.verify(&code.token).unwrap().id, code.id);
        // The scope is kept with the token, across a restart.
        assert_eq!(
            reopened.verify(&desktop.token).unwrap().scope,
            ClientScope::Chats
        );
        assert!(
            tokens
                .digest_for_key(&proof::key_id(&proof::digest(&code.token)))
                .is_some()
        );

        assert!(tokens.revoke(&code.id).await.unwrap());
        assert!(!tokens.revoke(&code.id).await.unwrap(), "revoked once");
        assert_eq!(tokens.verify(&code.token), None);
        let names: Vec<String> = tokens
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["zed"]);
        assert_eq!(tokens.list().await.unwrap()[0].scope, ClientScope::Chats);
        // The name is free again once its token is revoked.
        tokens
            .create("claude-code", ClientScope::Mcp)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn names_are_checked_and_unique_among_active_tokens() {
        let (_dir, tokens) = tokens().await;
        for bad in ["", "operator", "OPERATOR", "a b", "x/y", &"n".repeat(65)] {
            assert!(
                matches!(
                    tokens.create(bad, ClientScope::Mcp).await,
                    Err(ClientTokenError::InvalidName(_))
                ),
                "{bad}"
            );
        }
        tokens
            .create("claude-code", ClientScope::Mcp)
            .await
            .unwrap();
        assert!(matches!(
            tokens.create("Claude-Code", ClientScope::Mcp).await,
            Err(ClientTokenError::NameTaken(_))
        ));
    }

    #[tokio::test]
    async fn the_database_holds_no_plaintext_token() {
        let (dir, tokens) = tokens().await;
        let created = tokens
            .create("claude-code", ClientScope::Mcp)
            .await
            .unwrap();
        let secret = created.token.trim_start_matches(TOKEN_PREFIX).to_owned();
        let stored: Vec<u8> = tokens
            .store
            .read(|connection| {
                connection
                    .query_row("SELECT token_sha256 FROM client_tokens", [], |row| {
                        row.get(0)
                    })
                    .map_err(StoreError::from)
            })
            .await
            .unwrap();
        assert_eq!(stored, proof::digest(&created.token).to_vec());
        tokens.store.close().await.unwrap();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains(&secret), "plaintext token on disk");
        }
    }
}
