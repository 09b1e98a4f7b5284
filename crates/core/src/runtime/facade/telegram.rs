//! The Telegram channel for the adapters: its state, the one-time link code, unlinking (the
//! gateway's routes), and what the channel's transport (`crate::channels::telegram`, beside
//! the adapters) keeps between polls: the offset, the link, refusals, the Souz chat it talks
//! in, and the bot token (read from the key store, registered for redaction before it is
//! handed out). The rows are `channels::store`'s.
//!
//! Invariants: a link code is shown once (only its hash is kept), lives
//! [`LINK_CODE_MINUTES`] minutes, is refused while an account is linked; the token never goes
//! into an error or a log line.

use base64::Engine;
use chrono::{Duration, Utc};
use souz_protocol::ErrorCode;
use souz_protocol::approvals::{ApprovalStatus, DecisionRequest, Verdict};
use souz_protocol::telegram::{TelegramAccount, TelegramLinkCode, TelegramStatus};

use super::ServiceError;
use crate::channels::store::{self as rows, Claim, Claimant, Prompt, TelegramState};
use crate::llm::service::service_keys::TELEGRAM;
use crate::runtime::RuntimeHandle;

/// How long a link code works, in minutes.
pub(crate) const LINK_CODE_MINUTES: i64 = 10;
/// The letters of a link code: Crockford's base 32 (no I, L, O, U; read back, O is 0 and I
/// and L are 1).
const CODE_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a link code (5 bits each: 50 bits).
const CODE_LENGTH: usize = 10;

impl RuntimeHandle {
    /// The channel's state: enabled, token configured, the linked account, a waiting code.
    pub async fn telegram_status(&self) -> Result<TelegramStatus, ServiceError> {
        let state = self.telegram_state().await?;
        let token_configured = self.llm().service_key(TELEGRAM.name).await?.is_some();
        Ok(TelegramStatus {
            enabled: self.config().channels.telegram.enabled,
            token_configured,
            linked: state.link.map(|link| TelegramAccount {
                user_id: link.user_id,
                username: link.username,
                linked_at: link.linked_at,
            }),
            code_expires_at: state.code_expires_at.filter(|until| *until > Utc::now()),
        })
    }

    /// A new one-time link code (replacing a waiting one); 409 while an account is linked.
    pub async fn create_telegram_link_code(&self) -> Result<TelegramLinkCode, ServiceError> {
        let code = new_code()?;
        let hash = rows::code_hash(&code);
        let expires_at = Utc::now() + Duration::minutes(LINK_CODE_MINUTES);
        let kept = self
            .store()
            .write(move |transaction| rows::set_code(transaction, &hash, expires_at))
            .await?;
        if !kept {
            return Err(ServiceError::conflict(
                ErrorCode::Conflict,
                "A Telegram account is linked already: unlink it first (souz telegram unlink).",
            ));
        }
        tracing::info!("telegram link code issued");
        Ok(TelegramLinkCode {
            command: format!("/start {code}"),
            code,
            expires_at,
        })
    }

    /// Forgets the linked account and any waiting code (idempotent).
    pub async fn unlink_telegram(&self) -> Result<TelegramStatus, ServiceError> {
        let was = self
            .store()
            .write(|transaction| rows::unlink(transaction, Utc::now()))
            .await?;
        if was {
            tracing::info!("telegram account unlinked");
        }
        self.telegram_status().await
    }

    /// The channel's rows as the transport reads them.
    pub(crate) async fn telegram_state(&self) -> Result<TelegramState, ServiceError> {
        Ok(self.store().read(rows::state).await?)
    }

    /// The bot token (stored, else `TELEGRAM_BOT_TOKEN`), registered for log redaction.
    pub(crate) async fn telegram_token(&self) -> Result<Option<String>, ServiceError> {
        let token = self.llm().service_key(TELEGRAM.name).await?;
        Ok(token.map(|token| {
            crate::redact::register_secret(token.expose());
            token.expose().to_owned()
        }))
    }

    /// Presents a link code on behalf of `claimant`.
    pub(crate) async fn claim_telegram_link(
        &self,
        code: String,
        claimant: Claimant,
    ) -> Result<Claim, ServiceError> {
        let claim = self
            .store()
            .write(move |transaction| rows::claim(transaction, &code, &claimant, Utc::now()))
            .await?;
        Ok(claim)
    }

    /// Records a refusal of `user_id`; `true` for the first one (the one to answer).
    pub(crate) async fn refuse_telegram_user(&self, user_id: i64) -> Result<bool, ServiceError> {
        Ok(self
            .store()
            .write(move |transaction| rows::refuse_once(transaction, user_id, Utc::now()))
            .await?)
    }

    /// Moves the poll past every update before `next`.
    pub(crate) async fn advance_telegram_offset(&self, next: i64) -> Result<(), ServiceError> {
        Ok(self
            .store()
            .write(move |transaction| rows::advance_offset(transaction, next))
            .await?)
    }

    /// Records the Souz chat the linked `user_id` talks in.
    pub(crate) async fn set_telegram_chat(
        &self,
        user_id: i64,
        chat_id: String,
    ) -> Result<(), ServiceError> {
        Ok(self
            .store()
            .write(move |transaction| rows::set_souz_chat(transaction, user_id, &chat_id))
            .await?)
    }
}

/// Bytes of randomness in a button's handle (22 characters of base64url: within Telegram's 64
/// bytes of callback data).
const HANDLE_BYTES: usize = 16;

impl RuntimeHandle {
    /// Two fresh button handles for `approval_id`: `(approve, deny)`.
    pub(crate) async fn telegram_buttons(
        &self,
        approval_id: &str,
    ) -> Result<(String, String), ServiceError> {
        let (approve, deny) = (new_handle()?, new_handle()?);
        let (approval, first, second) = (approval_id.to_owned(), approve.clone(), deny.clone());
        self.store()
            .write(move |transaction| {
                let now = Utc::now();
                rows::add_press(transaction, &first, &approval, "approve", now)?;
                rows::add_press(transaction, &second, &approval, "deny", now)
            })
            .await?;
        Ok((approve, deny))
    }

    /// Decides the approval of the button `handle` as the button says. A used, unknown or
    /// forged handle, or an approval no longer pending, changes nothing.
    pub(crate) async fn press_telegram_button(&self, handle: &str) -> Result<Press, ServiceError> {
        let handle = handle.to_owned();
        let press = self
            .store()
            .write(move |transaction| rows::take_press(transaction, &handle, Utc::now()))
            .await?;
        let Some((approval_id, verdict)) = press else {
            return Ok(Press::Invalid);
        };
        let approve = verdict == "approve";
        let request = DecisionRequest {
            decision: if approve {
                Verdict::Approve
            } else {
                Verdict::Deny
            },
            scope: Default::default(),
            minutes: None,
            argument_match: None,
            tool_group: None,
            via: Some(TELEGRAM_VIA.to_owned()),
        };
        match self
            .decide_approval(&approval_id, request, &super::Audience::Everyone)
            .await
        {
            Ok(_) if approve => Ok(Press::Approved),
            Ok(_) => Ok(Press::Denied),
            Err(
                ServiceError::Invalid(_)
                | ServiceError::NotFound { .. }
                | ServiceError::Conflict { .. },
            ) => match self.approval(&approval_id).await.map(|found| found.status) {
                Ok(ApprovalStatus::Expired) => Ok(Press::Expired),
                _ => Ok(Press::AlreadyDecided),
            },
            Err(error) => Err(error),
        }
    }

    /// Claims the Telegram prompt of `approval_id`, to be sent to `telegram_chat` with `text`;
    /// `false` when it was claimed (sent, or being sent) before.
    pub(crate) async fn claim_telegram_prompt(
        &self,
        approval_id: &str,
        telegram_chat: i64,
        text: &str,
    ) -> Result<bool, ServiceError> {
        let (approval_id, text) = (approval_id.to_owned(), text.to_owned());
        Ok(self
            .store()
            .write(move |transaction| {
                rows::claim_prompt(transaction, &approval_id, telegram_chat, &text, Utc::now())
            })
            .await?)
    }

    /// Records where a claimed prompt was sent (`Some(message)`), or forgets the claim of one
    /// that could not be sent (`None`), so that it can be tried again.
    pub(crate) async fn record_telegram_prompt(
        &self,
        approval_id: &str,
        message_id: Option<i32>,
    ) -> Result<(), ServiceError> {
        let approval_id = approval_id.to_owned();
        Ok(self
            .store()
            .write(move |transaction| match message_id {
                Some(message_id) => rows::set_prompt_message(transaction, &approval_id, message_id),
                None => rows::drop_prompt(transaction, &approval_id),
            })
            .await?)
    }

    /// The sent prompts not yet closed (of `approval_id` only, when given).
    pub(crate) async fn open_telegram_prompts(
        &self,
        approval_id: Option<String>,
    ) -> Result<Vec<Prompt>, ServiceError> {
        Ok(self
            .store()
            .read(move |connection| rows::open_prompts(connection, approval_id.as_deref()))
            .await?)
    }

    /// Marks the prompt of `approval_id` closed.
    pub(crate) async fn close_telegram_prompt(
        &self,
        approval_id: &str,
    ) -> Result<(), ServiceError> {
        let approval_id = approval_id.to_owned();
        Ok(self
            .store()
            .write(move |transaction| rows::close_prompt(transaction, &approval_id, Utc::now()))
            .await?)
    }
}

/// What a decision made with a Telegram button records as its `via`.
pub(crate) const TELEGRAM_VIA: &str = "telegram";

/// What pressing a Telegram button did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Press {
    /// The approval was approved.
    Approved,
    /// The approval was denied.
    Denied,
    /// A used, unknown or forged handle: nothing changed.
    Invalid,
    /// The approval was decided elsewhere first: nothing changed.
    AlreadyDecided,
    /// The approval had expired: nothing changed.
    Expired,
}

/// A fresh random button handle.
fn new_handle() -> Result<String, ServiceError> {
    let mut bytes = [0_u8; HANDLE_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|error| ServiceError::Internal(format!("no randomness for a handle: {error}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// A fresh random code of [`CODE_LENGTH`] letters of [`CODE_ALPHABET`].
fn new_code() -> Result<String, ServiceError> {
    let mut bytes = [0_u8; CODE_LENGTH];
    getrandom::fill(&mut bytes)
        .map_err(|error| ServiceError::Internal(format!("no randomness for a code: {error}")))?;
    Ok(bytes
        .iter()
        .map(|byte| char::from(CODE_ALPHABET[usize::from(byte % 32)]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_random_letters_of_the_alphabet() {
        let first = new_code().unwrap();
        let second = new_code().unwrap();
        assert_eq!(first.len(), CODE_LENGTH);
        assert_ne!(first, second);
        assert!(first.bytes().all(|byte| CODE_ALPHABET.contains(&byte)));
    }
}
