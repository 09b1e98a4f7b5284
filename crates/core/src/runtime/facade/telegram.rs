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
use souz_protocol::chat::{OptionAnswer, OptionStatus};
use souz_protocol::telegram::{TelegramAccount, TelegramLinkCode, TelegramStatus};

use super::ServiceError;
use crate::LOCAL_USER;
use crate::channels::store::{
    self as rows, Action, Claim, Claimant, NewPrompt, Prompt, PromptKind, TelegramState,
};
use crate::chat::ChatUser;
use crate::llm::service::service_keys::TELEGRAM;
use crate::runtime::RuntimeHandle;
use crate::store::StoreError;

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
            enabled: self
                .config_editor()
                .current()
                .await
                .channels
                .telegram
                .enabled,
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

/// The buttons of an approval's prompt.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalButtons {
    /// Approves once.
    pub approve: String,
    /// Denies.
    pub deny: String,
    /// Approves with the approval's suggested scope (when it suggests more than once).
    pub suggested: Option<String>,
}

impl RuntimeHandle {
    /// Fresh button handles for `approval_id` (the suggested scope's when `suggested`).
    pub(crate) async fn telegram_buttons(
        &self,
        approval_id: &str,
        suggested: bool,
    ) -> Result<ApprovalButtons, ServiceError> {
        let buttons = ApprovalButtons {
            approve: new_handle()?,
            deny: new_handle()?,
            suggested: if suggested { Some(new_handle()?) } else { None },
        };
        let (approval, kept) = (approval_id.to_owned(), buttons.clone());
        self.store()
            .write(move |transaction| {
                let now = Utc::now();
                rows::add_press(transaction, &kept.approve, &approval, &Action::Approve, now)?;
                rows::add_press(transaction, &kept.deny, &approval, &Action::Deny, now)?;
                if let Some(handle) = &kept.suggested {
                    rows::add_press(
                        transaction,
                        handle,
                        &approval,
                        &Action::ApproveSuggested,
                        now,
                    )?;
                }
                Ok::<(), StoreError>(())
            })
            .await?;
        Ok(buttons)
    }

    /// Fresh button handles for the choices `choice_ids` of the question `option_id`, in order:
    /// each answers with its choice, or, when `multiple`, picks or unpicks it, and then a last
    /// handle answers with the choices picked (Done).
    pub(crate) async fn telegram_choice_buttons(
        &self,
        option_id: &str,
        choice_ids: Vec<String>,
        multiple: bool,
    ) -> Result<ChoiceButtons, ServiceError> {
        let buttons = ChoiceButtons {
            choices: choice_ids
                .iter()
                .map(|_| new_handle())
                .collect::<Result<Vec<_>, _>>()?,
            done: if multiple { Some(new_handle()?) } else { None },
        };
        let (option, kept) = (option_id.to_owned(), buttons.clone());
        self.store()
            .write(move |transaction| {
                let now = Utc::now();
                for (handle, choice) in kept.choices.iter().zip(choice_ids) {
                    let action = if multiple {
                        Action::Toggle(choice)
                    } else {
                        Action::Answer(choice)
                    };
                    rows::add_press(transaction, handle, &option, &action, now)?;
                }
                if let Some(done) = &kept.done {
                    rows::add_press(transaction, done, &option, &Action::Submit, now)?;
                }
                Ok::<(), StoreError>(())
            })
            .await?;
        Ok(buttons)
    }

    /// The choices picked so far on the Telegram prompt of the question `option_id`.
    pub(crate) async fn telegram_picked(
        &self,
        option_id: &str,
    ) -> Result<Vec<String>, ServiceError> {
        let option = option_id.to_owned();
        Ok(self
            .store()
            .read(move |connection| rows::selected(connection, &option))
            .await?)
    }

    /// Picks or unpicks `choice` of the pending question `option_id` (a press of its button).
    async fn toggle_from_telegram(
        &self,
        option_id: &str,
        choice: String,
    ) -> Result<Press, ServiceError> {
        let user = ChatUser(LOCAL_USER.to_owned());
        match self
            .question(&user, option_id)
            .await
            .map(|found| found.status)
        {
            Ok(OptionStatus::Pending) => {}
            Ok(OptionStatus::Expired) => return Ok(Press::Expired),
            Ok(_) | Err(ServiceError::NotFound { .. }) => return Ok(Press::AlreadyAnswered),
            Err(error) => return Err(error),
        }
        let option = option_id.to_owned();
        self.store()
            .write(move |transaction| rows::toggle(transaction, &option, &choice))
            .await?;
        Ok(Press::Picked {
            option_id: option_id.to_owned(),
        })
    }

    /// Answers the question `option_id` with the choices picked on its Telegram prompt (a
    /// press of Done); with none picked, nothing is answered.
    async fn submit_from_telegram(&self, option_id: &str) -> Result<Press, ServiceError> {
        let picked = self.telegram_picked(option_id).await?;
        if picked.is_empty() {
            let user = ChatUser(LOCAL_USER.to_owned());
            return match self
                .question(&user, option_id)
                .await
                .map(|found| found.status)
            {
                Ok(OptionStatus::Pending) => Ok(Press::NothingPicked {
                    option_id: option_id.to_owned(),
                }),
                Ok(OptionStatus::Expired) => Ok(Press::Expired),
                Ok(_) | Err(ServiceError::NotFound { .. }) => Ok(Press::AlreadyAnswered),
                Err(error) => Err(error),
            };
        }
        self.answer_from_telegram(option_id, picked, None).await
    }

    /// Does what the button `handle` says: decides its approval or answers its question. A
    /// used, unknown or forged handle, or a subject no longer pending, changes nothing.
    pub(crate) async fn press_telegram_button(&self, handle: &str) -> Result<Press, ServiceError> {
        let handle = handle.to_owned();
        let press = self
            .store()
            .write(move |transaction| rows::take_press(transaction, &handle))
            .await?;
        match press {
            None => Ok(Press::Invalid),
            Some((option_id, Action::Answer(choice))) => {
                self.answer_from_telegram(&option_id, vec![choice], None)
                    .await
            }
            Some((option_id, Action::Toggle(choice))) => {
                self.toggle_from_telegram(&option_id, choice).await
            }
            Some((option_id, Action::Submit)) => self.submit_from_telegram(&option_id).await,
            Some((approval_id, action)) => self.decide_from_telegram(&approval_id, action).await,
        }
    }

    /// Decides `approval_id` as a button's `action` says.
    async fn decide_from_telegram(
        &self,
        approval_id: &str,
        action: Action,
    ) -> Result<Press, ServiceError> {
        let mut request = DecisionRequest::once(Verdict::Approve, TELEGRAM_VIA);
        match action {
            Action::Deny => request.decision = Verdict::Deny,
            Action::ApproveSuggested => {
                // As the web UI accepts the offer: its scope, minutes, match and tool group.
                let suggested = match self.approval(approval_id).await {
                    Ok(approval) => approval.suggested,
                    Err(ServiceError::NotFound { .. }) => return Ok(Press::Expired),
                    Err(error) => return Err(error),
                };
                request.scope = suggested.scope;
                request.minutes = suggested.minutes;
                request.argument_match = Some(suggested.argument_match);
                request.tool_group = suggested.tool_group;
            }
            Action::Approve | Action::Answer(_) | Action::Toggle(_) | Action::Submit => {}
        }
        let approve = request.decision == Verdict::Approve;
        match self
            .decide_approval(approval_id, request, &super::Audience::Everyone)
            .await
        {
            Ok(_) if approve => Ok(Press::Approved),
            Ok(_) => Ok(Press::Denied),
            Err(
                ServiceError::Invalid(_)
                | ServiceError::NotFound { .. }
                | ServiceError::Conflict { .. },
            ) => match self.approval(approval_id).await.map(|found| found.status) {
                Ok(ApprovalStatus::Expired) => Ok(Press::Expired),
                _ => Ok(Press::AlreadyDecided),
            },
            Err(error) => Err(error),
        }
    }

    /// Answers the question `option_id` of the local person's chats from Telegram: with the
    /// choices `selected`, or the person's own words `free_text`. Marked as answered from
    /// Telegram (`metadata.via`), so its prompt says where.
    pub(crate) async fn answer_from_telegram(
        &self,
        option_id: &str,
        selected: Vec<String>,
        free_text: Option<String>,
    ) -> Result<Press, ServiceError> {
        let user = ChatUser(LOCAL_USER.to_owned());
        let answer = OptionAnswer {
            selected_option_ids: selected,
            free_text,
            metadata: [(VIA_KEY.to_owned(), TELEGRAM_VIA.to_owned())].into(),
        };
        match self.answer_question(&user, option_id, answer).await {
            Ok(_) => Ok(Press::Answered),
            Err(ServiceError::Invalid(_) | ServiceError::NotFound { .. }) => {
                match self
                    .question(&user, option_id)
                    .await
                    .map(|found| found.status)
                {
                    Ok(OptionStatus::Expired) => Ok(Press::Expired),
                    Ok(OptionStatus::Pending) => Ok(Press::Invalid),
                    _ => Ok(Press::AlreadyAnswered),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Claims the Telegram prompt `prompt`; `false` when it was claimed (sent, or being sent)
    /// before.
    pub(crate) async fn claim_telegram_prompt(
        &self,
        prompt: NewPrompt,
    ) -> Result<bool, ServiceError> {
        Ok(self
            .store()
            .write(move |transaction| rows::claim_prompt(transaction, &prompt, Utc::now()))
            .await?)
    }

    /// Records where a claimed prompt was sent (`Some(message)`), or forgets the claim of one
    /// that could not be sent (`None`), so that it can be tried again.
    pub(crate) async fn record_telegram_prompt(
        &self,
        subject: &str,
        message_id: Option<i32>,
    ) -> Result<(), ServiceError> {
        let subject = subject.to_owned();
        Ok(self
            .store()
            .write(move |transaction| match message_id {
                Some(message_id) => rows::set_prompt_message(transaction, &subject, message_id),
                None => rows::drop_prompt(transaction, &subject),
            })
            .await?)
    }

    /// The sent prompts of `kind` not yet closed (of `subject` only, when given).
    pub(crate) async fn open_telegram_prompts(
        &self,
        kind: PromptKind,
        subject: Option<String>,
    ) -> Result<Vec<Prompt>, ServiceError> {
        Ok(self
            .store()
            .read(move |connection| rows::open_prompts(connection, kind, subject.as_deref()))
            .await?)
    }

    /// Marks the prompt of `subject` closed (its buttons are forgotten).
    pub(crate) async fn close_telegram_prompt(&self, subject: &str) -> Result<(), ServiceError> {
        let subject = subject.to_owned();
        Ok(self
            .store()
            .write(move |transaction| rows::close_prompt(transaction, &subject, Utc::now()))
            .await?)
    }
}

/// The key of an answer's metadata that says where it was given.
pub(crate) const VIA_KEY: &str = "via";

/// What a decision made with a Telegram button records as its `via`.
pub(crate) const TELEGRAM_VIA: &str = "telegram";

/// The buttons of a question's prompt.
#[derive(Debug, Clone)]
pub(crate) struct ChoiceButtons {
    /// One per choice, in order.
    pub choices: Vec<String>,
    /// Done: answers with the choices picked (a multiple-choice question's only).
    pub done: Option<String>,
}

/// What pressing a Telegram button did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Press {
    /// A choice of the multiple-choice question `option_id` was picked or unpicked: its
    /// prompt is to be redrawn (every button of it was used up).
    Picked {
        /// The question.
        option_id: String,
    },
    /// Done was pressed with no choice picked: nothing was answered; the prompt is to be
    /// redrawn.
    NothingPicked {
        /// The question.
        option_id: String,
    },
    /// The approval was approved.
    Approved,
    /// The approval was denied.
    Denied,
    /// The question was answered.
    Answered,
    /// The question was answered (or withdrawn) elsewhere first: nothing changed.
    AlreadyAnswered,
    /// A used, unknown or forged handle: nothing changed.
    Invalid,
    /// The approval was decided elsewhere first: nothing changed.
    AlreadyDecided,
    /// The approval or question had expired: nothing changed.
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
