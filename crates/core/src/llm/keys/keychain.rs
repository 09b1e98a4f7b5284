//! The OS keychain as the home of the data key that seals provider keys: the macOS Keychain,
//! or a Secret Service (GNOME Keyring, KWallet) on the session bus of a Linux desktop.
//!
//! Invariants:
//! - One item per Souz home (the account names the home), so two homes never share a key.
//! - Nothing here prompts: a locked keyring or a missing service is reported as unavailable
//!   (the caller decides what that means), and every call is bounded by [`TIMEOUT`], so a
//!   stuck service cannot hang a turn that needs a key.
//! - The key travels as its hexadecimal text, as in the key file; errors never include it.

use std::path::Path;
use std::time::Duration;

use zeroize::Zeroizing;

use super::DataKey;

/// How long a keychain call may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The service (macOS) or `application` attribute (Secret Service) of Souz's item.
const SERVICE: &str = "Souz";

/// Why the keychain could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{keychain} is not available: {reason}")]
pub struct KeychainError {
    /// Which keychain.
    pub keychain: &'static str,
    /// Why.
    pub reason: String,
}

/// The keychain item of one Souz home.
#[derive(Debug, Clone)]
pub struct Keychain {
    account: String,
}

impl Keychain {
    /// The item for the Souz home `souz_home`, on a system that has a keychain.
    pub fn for_home(souz_home: &Path) -> Option<Self> {
        if cfg!(any(target_os = "linux", target_os = "macos")) {
            Some(Self {
                account: format!("provider-keys data key ({})", souz_home.display()),
            })
        } else {
            None
        }
    }

    /// What it is, for messages.
    pub fn name(&self) -> &'static str {
        NAME
    }

    /// The data key, if one is stored.
    pub async fn load(&self) -> Result<Option<DataKey>, KeychainError> {
        let text = bounded(backend::load(&self.account)).await?;
        let Some(text) = text else {
            return Ok(None);
        };
        let mut key = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(text.trim(), key.as_mut_slice())
            .map_err(|_| unavailable("its Souz item does not hold a 256-bit key".to_owned()))?;
        Ok(Some(key))
    }

    /// Stores `key` (replacing what was there).
    pub async fn store(&self, key: &DataKey) -> Result<(), KeychainError> {
        let text = Zeroizing::new(hex::encode(key.as_slice()));
        bounded(backend::store(&self.account, text)).await
    }
}

async fn bounded<T>(
    call: impl Future<Output = Result<T, KeychainError>>,
) -> Result<T, KeychainError> {
    tokio::time::timeout(TIMEOUT, call)
        .await
        .unwrap_or_else(|_| Err(unavailable(format!("no answer within {TIMEOUT:?}"))))
}

fn unavailable(reason: String) -> KeychainError {
    KeychainError {
        keychain: NAME,
        reason,
    }
}

#[cfg(target_os = "macos")]
const NAME: &str = "the macOS Keychain";
#[cfg(target_os = "linux")]
const NAME: &str = "the Secret Service keyring";
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
const NAME: &str = "the OS keychain";

#[cfg(target_os = "linux")]
mod backend {
    //! The Secret Service API over the session bus (the `secret-service` crate, on zbus).

    use std::collections::HashMap;

    use secret_service::{EncryptionType, SecretService};
    use zeroize::Zeroizing;

    use super::{KeychainError, SERVICE, unavailable};

    fn attributes(account: &str) -> HashMap<&str, &str> {
        HashMap::from([("application", SERVICE), ("account", account)])
    }

    fn failed(error: secret_service::Error) -> KeychainError {
        unavailable(error.to_string())
    }

    pub(super) async fn load(account: &str) -> Result<Option<Zeroizing<String>>, KeychainError> {
        let service = SecretService::connect(EncryptionType::Dh)
            .await
            .map_err(failed)?;
        let found = service
            .search_items(attributes(account))
            .await
            .map_err(failed)?;
        if found.unlocked.is_empty() && !found.locked.is_empty() {
            return Err(unavailable(
                "the keyring holding Souz's item is locked".to_owned(),
            ));
        }
        let Some(item) = found.unlocked.first() else {
            return Ok(None);
        };
        let secret = Zeroizing::new(item.get_secret().await.map_err(failed)?);
        let text = std::str::from_utf8(&secret)
            .map_err(|_| unavailable("its Souz item is not text".to_owned()))?;
        Ok(Some(Zeroizing::new(text.to_owned())))
    }

    pub(super) async fn store(account: &str, text: Zeroizing<String>) -> Result<(), KeychainError> {
        let service = SecretService::connect(EncryptionType::Dh)
            .await
            .map_err(failed)?;
        let collection = service.get_default_collection().await.map_err(failed)?;
        // Unlocking could ask the person for a password; a daemon does not prompt.
        if collection.is_locked().await.map_err(failed)? {
            return Err(unavailable("the default keyring is locked".to_owned()));
        }
        collection
            .create_item(
                "Souz: key that encrypts stored provider API keys",
                attributes(account),
                text.as_bytes(),
                true,
                "text/plain",
            )
            .await
            .map_err(failed)?;
        Ok(())
    }
}

#[cfg(target_os = "macos")]
mod backend {
    //! The login keychain through Security.framework (generic passwords).

    use security_framework::passwords::{get_generic_password, set_generic_password};
    use zeroize::Zeroizing;

    use super::{KeychainError, SERVICE, unavailable};

    /// `errSecItemNotFound`.
    const ITEM_NOT_FOUND: i32 = -25300;

    pub async fn load(account: &str) -> Result<Option<Zeroizing<String>>, KeychainError> {
        let account = account.to_owned();
        blocking(move || match get_generic_password(SERVICE, &account) {
            Ok(bytes) => {
                let bytes = Zeroizing::new(bytes);
                std::str::from_utf8(&bytes)
                    .map(|text| Some(Zeroizing::new(text.to_owned())))
                    .map_err(|_| unavailable("its Souz item is not text".to_owned()))
            }
            Err(error) if error.code() == ITEM_NOT_FOUND => Ok(None),
            Err(error) => Err(unavailable(error.to_string())),
        })
        .await
    }

    pub async fn store(account: &str, text: Zeroizing<String>) -> Result<(), KeychainError> {
        let account = account.to_owned();
        blocking(move || {
            set_generic_password(SERVICE, &account, text.as_bytes())
                .map_err(|error| unavailable(error.to_string()))
        })
        .await
    }

    async fn blocking<T: Send + 'static>(
        call: impl FnOnce() -> Result<T, KeychainError> + Send + 'static,
    ) -> Result<T, KeychainError> {
        tokio::task::spawn_blocking(call)
            .await
            .unwrap_or_else(|error| Err(unavailable(error.to_string())))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod backend {
    use zeroize::Zeroizing;

    use super::{KeychainError, unavailable};

    pub async fn load(_account: &str) -> Result<Option<Zeroizing<String>>, KeychainError> {
        Err(unavailable("not supported on this system".to_owned()))
    }

    pub async fn store(_account: &str, _text: Zeroizing<String>) -> Result<(), KeychainError> {
        Err(unavailable("not supported on this system".to_owned()))
    }
}
