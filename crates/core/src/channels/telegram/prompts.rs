//! Approval prompts in Telegram: which approvals the linked account is asked about (those of
//! its Souz chat, and those a scheduled run is parked on, wherever it runs), each sent once
//! with Approve and Deny buttons — and a third that approves with the approval's suggested
//! scope, as the web UI offers it, when that scope reaches past this one call — (fresh
//! single-use handles), and closed when the approval ends however it ends — a button here, the
//! app, the web UI, the API, the CLI, or expiry: the message is edited to say so and its
//! buttons are gone. The same loop follows the agents' questions ([`questions`](super::questions)).
//!
//! Invariants:
//! - It follows the runtime's events (`approval.requested`, `approval.decided`,
//!   `approval.expired`) and, at start and whenever it fell behind, catches up from the
//!   database: pending approvals without a prompt are sent, open prompts of approvals no
//!   longer pending are closed. A prompt row is claimed before it is sent, so no approval is
//!   prompted twice; one that could not be sent is unclaimed and tried again at the next catch-up.
//! - A prompt's text is bounded ([`MAX_PROMPT_CHARS`]); what it quotes (the tool's summary, the
//!   schedule's name) is shown as plain text, escaped.

use std::sync::Arc;

use souz_protocol::approvals::{Approval, ApprovalStatus, Requester, ScopeKind, Verdict};
use souz_protocol::{RuntimeEvent, language::Language};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::Channel;
use super::api::TelegramError;
use super::outbound::retrying;
use super::questions;
use super::replies::{self, Reply, outcome};
use super::text::escape_markdown_v2;
use crate::channels::store::{NewPrompt, Prompt, PromptKind};
use crate::runtime::ServiceError;
use crate::runtime::facade::{Audience, TELEGRAM_VIA};

/// The longest prompt text, in characters (well within a message's 4,096 units, with room
/// for the line that closes it).
const MAX_PROMPT_CHARS: usize = 3000;
/// The longest suggested scope's label quoted in a prompt, in characters.
const MAX_LABEL_CHARS: usize = 300;
/// Pending approvals looked at in one catch-up.
const CATCH_UP_LIMIT: usize = 200;

/// Sends and closes prompts until `shutdown`.
pub(crate) async fn follow(channel: Arc<Channel>, shutdown: CancellationToken) {
    // Subscribed before catching up: nothing that happens in between is missed.
    let mut events = channel.handle.events().subscribe();
    catch_up(&channel).await;
    questions::catch_up(&channel).await;
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => return,
            event = events.recv() => event,
        };
        let outcome = match event {
            Ok(envelope) => match &envelope.event {
                RuntimeEvent::ApprovalRequested { approval } => offer(&channel, approval).await,
                RuntimeEvent::ApprovalDecided {
                    approval_id,
                    decision,
                    ..
                } => {
                    let status = match decision.decision {
                        Verdict::Approve => ApprovalStatus::Approved,
                        Verdict::Deny => ApprovalStatus::Denied,
                    };
                    close(&channel, approval_id, ending(status, Some(&decision.via))).await
                }
                RuntimeEvent::ApprovalExpired { approval_id, .. } => {
                    close(&channel, approval_id, outcome::EXPIRED).await
                }
                other => questions::on_event(&channel, other).await,
            },
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "telegram: the prompts fell behind the events");
                catch_up(&channel).await;
                questions::catch_up(&channel).await;
                Ok(())
            }
            Err(RecvError::Closed) => return,
        };
        if let Err(error) = outcome {
            tracing::warn!(%error, "telegram: an approval prompt was not handled");
        }
    }
}

/// Sends the prompts missing and closes those whose approval ended.
async fn catch_up(channel: &Channel) {
    let pending = channel
        .handle
        .list_approvals(
            &Audience::Everyone,
            Some(ApprovalStatus::Pending),
            CATCH_UP_LIMIT,
        )
        .await;
    let outcome = match pending {
        // Oldest first, as they were asked.
        Ok(pending) => {
            for approval in pending.iter().rev() {
                if let Err(error) = offer(channel, approval).await {
                    tracing::warn!(%error, "telegram: an approval prompt was not sent");
                }
            }
            close_ended(channel).await
        }
        Err(error) => Err(error),
    };
    if let Err(error) = outcome {
        tracing::warn!(%error, "telegram: cannot catch up with the approvals");
    }
}

/// Closes the open prompts whose approval is no longer pending.
async fn close_ended(channel: &Channel) -> Result<(), ServiceError> {
    let open = channel
        .handle
        .open_telegram_prompts(PromptKind::Approval, None)
        .await?;
    for prompt in open {
        let approval = match channel.handle.approval(&prompt.subject).await {
            Ok(approval) => approval,
            // Gone from the queue: it cannot be pending.
            Err(ServiceError::NotFound { .. }) => {
                close_one(channel, &prompt, outcome::EXPIRED.text(channel.language())).await?;
                continue;
            }
            Err(error) => return Err(error),
        };
        if approval.status != ApprovalStatus::Pending {
            let via = approval
                .decision
                .as_ref()
                .map(|decision| decision.via.as_str());
            let said = ending(approval.status, via).text(channel.language());
            close_one(channel, &prompt, said).await?;
        }
    }
    Ok(())
}

/// What a prompt says once its approval ended with `status` (decided `via`).
fn ending(status: ApprovalStatus, via: Option<&str>) -> Reply {
    let here = via == Some(TELEGRAM_VIA);
    match status {
        ApprovalStatus::Approved if here => outcome::APPROVED_HERE,
        ApprovalStatus::Approved => outcome::APPROVED,
        ApprovalStatus::Denied if here => outcome::DENIED_HERE,
        ApprovalStatus::Denied => outcome::DENIED,
        ApprovalStatus::Expired | ApprovalStatus::Pending => outcome::EXPIRED,
    }
}

/// The prompt's text for `approval`, when the linked account is to be asked about it.
fn prompt_text(approval: &Approval, souz_chat: Option<&str>, language: Language) -> Option<String> {
    let text = match (&approval.parked, &approval.requester) {
        (Some(parked), _) => replies::parked_asks(
            language,
            &parked.schedule_name,
            &approval.tool,
            &approval.summary,
        ),
        (None, Requester::Chat { chat_id }) if Some(chat_id.as_str()) == souz_chat => {
            replies::asks(language, &approval.tool, &approval.summary)
        }
        _ => return None,
    };
    let text = bounded(&text);
    if !offers_scope(approval) {
        return Some(text);
    }
    let label: String = approval
        .suggested
        .label
        .chars()
        .take(MAX_LABEL_CHARS)
        .collect();
    Some(format!(
        "{text}\n\n{}",
        replies::suggested(language, &label)
    ))
}

/// Whether the approval's prompt offers its suggested scope (one reaching past this call).
fn offers_scope(approval: &Approval) -> bool {
    approval.suggested.scope != ScopeKind::Once
}

/// `text` within [`MAX_PROMPT_CHARS`], marked when cut.
pub(super) fn bounded(text: &str) -> String {
    if text.chars().count() <= MAX_PROMPT_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_PROMPT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Sends the prompt of `approval` with its buttons, unless it is not the linked account's to
/// decide or was sent before.
async fn offer(channel: &Channel, approval: &Approval) -> Result<(), ServiceError> {
    if approval.status != ApprovalStatus::Pending {
        return Ok(());
    }
    let state = channel.handle.telegram_state().await?;
    let Some(link) = state.link else {
        return Ok(());
    };
    let language = channel.language();
    let Some(text) = prompt_text(approval, state.souz_chat.as_deref(), language) else {
        return Ok(());
    };
    let chat = link.telegram_chat;
    let prompt = NewPrompt {
        kind: PromptKind::Approval,
        subject: approval.id.clone(),
        telegram_chat: chat,
        text: text.clone(),
    };
    if !channel.handle.claim_telegram_prompt(prompt).await? {
        return Ok(());
    }
    let buttons = channel
        .handle
        .telegram_buttons(&approval.id, offers_scope(approval))
        .await;
    let sent = match buttons {
        Ok(buttons) => {
            let mut rows = vec![vec![
                (replies::APPROVE.text(language), buttons.approve.as_str()),
                (replies::DENY.text(language), buttons.deny.as_str()),
            ]];
            if let Some(suggested) = &buttons.suggested {
                rows.push(vec![(
                    replies::APPROVE_SUGGESTED.text(language),
                    suggested.as_str(),
                )]);
            }
            let escaped = escape_markdown_v2(&text);
            retrying(channel, || {
                channel.api.send_with_buttons(chat, &escaped, &rows)
            })
            .await
            .map_err(|error| ServiceError::Internal(error.to_string()))
        }
        Err(error) => Err(error),
    };
    let recorded = channel
        .handle
        .record_telegram_prompt(&approval.id, sent.as_ref().ok().copied())
        .await;
    sent?;
    recorded
}

/// Closes the prompt of `approval_id`, if one is open, with `said`.
async fn close(channel: &Channel, approval_id: &str, said: Reply) -> Result<(), ServiceError> {
    let prompts = channel
        .handle
        .open_telegram_prompts(PromptKind::Approval, Some(approval_id.to_owned()))
        .await?;
    for prompt in prompts {
        close_one(channel, &prompt, said.text(channel.language())).await?;
    }
    Ok(())
}

/// Edits `prompt` to end with `said`, without buttons, and records it closed. A network
/// failure leaves it open (the next catch-up tries again); a refusal (the message is gone)
/// closes it.
pub(crate) async fn close_one(
    channel: &Channel,
    prompt: &Prompt,
    said: &str,
) -> Result<(), ServiceError> {
    let text = format!("{}\n\n{said}", prompt.text);
    let escaped = escape_markdown_v2(&text);
    let edited = retrying(channel, || {
        channel
            .api
            .edit(prompt.telegram_chat, prompt.message_id, &escaped)
    })
    .await;
    match edited {
        Ok(()) | Err(TelegramError::Refused { .. }) => {}
        Err(error) => return Err(ServiceError::Internal(error.to_string())),
    }
    channel.handle.close_telegram_prompt(&prompt.subject).await
}
