//! Unattended executions that park (issue 40): a schedule's run posts its prompt as an
//! unattended execution ([`Chats::post_unattended`]); a call of its turn that needs a person
//! parks on a durable approval (see `tools::gate::parking`) and the execution waits in
//! `waiting_approval` instead of failing. Deciding the approval — from any surface, hours or
//! restarts later — resumes it ([`Chats::resume_parked`]): approved, the parked call runs and
//! the turn goes on from its result; denied or expired, the execution fails with
//! `approval_denied` / `approval_expired` (which a schedule records as `blocked`).
//!
//! Invariants:
//! - `waiting_approval` is active (one per chat) and not a crash: recovery leaves it alone.
//! - An execution leaves `waiting_approval` once, by a conditional transition in the same
//!   transaction as its `approval.decided`/`approval.expired` chat event; a second resume of
//!   the same approval finds nothing waiting and does nothing.
//! - Cancelling a parked execution withdraws its approval in the same transaction (expired,
//!   `withdrawn`): nobody is left asked about a call whose run is gone.
//! - Resuming is driven by the runtime's approval events, and at start (and after falling
//!   behind the bus) by a sweep of every parked execution whose approval is no longer pending.

use souz_protocol::chat::events::ApprovalResolvedPayload;
use souz_protocol::chat::{
    ChatEventBody, ExecutionStatus, PostMessage, PostMessageResponse, Settings, Usage,
};
use souz_protocol::language::Language;
use souz_protocol::{Approval, ApprovalStatus, ExpiryReason, RuntimeEvent};
use tokio::sync::broadcast::error::RecvError;

use super::events::NewChatEvent;
use super::turns::{Turn, TurnInput, TurnOutcome};
use super::{ChatError, ChatUser, Chats, records};
use crate::store::StoreError;
use crate::store::codec::{from_json, from_json_opt, now, to_json};
use crate::tools::gate::Unattended;

impl Chats {
    /// Posts `request` like [`Chats::post_message`], as the unattended run `run`: calls of its
    /// turn that need a person park instead of waiting.
    pub(crate) async fn post_unattended(
        &self,
        user: &ChatUser,
        chat_id: &str,
        request: PostMessage,
        run: Unattended,
    ) -> Result<PostMessageResponse, ChatError> {
        self.post_message_as(user, chat_id, request, Some(run))
            .await
    }

    /// The unattended run an execution is, if it is one.
    pub(super) async fn unattended_of(
        &self,
        execution_id: &str,
    ) -> Result<Option<Unattended>, ChatError> {
        let id = execution_id.to_owned();
        Ok(self.inner.store.read(move |c| unattended(c, &id)).await?)
    }

    /// An unattended execution a dead process left running after its call parked (the approval
    /// is stored before the execution records that it waits): it is moved to
    /// `waiting_approval` on that approval instead of failing. Whether it was one.
    pub(super) async fn adopt_parked(&self, execution_id: &str) -> Result<bool, ChatError> {
        let id = execution_id.to_owned();
        Ok(self
            .inner
            .store
            .write(move |tx| {
                let Some(run) = unattended(tx, &id)? else {
                    return Ok::<_, StoreError>(false);
                };
                let approval = crate::approvals::queue::pending_parked_for_run(tx, run.run.run_id)?;
                let Some(approval_id) = approval else {
                    return Ok(false);
                };
                // One being cancelled is not adopted: it ends as any other orphan.
                let moved = records::transition(
                    tx,
                    &id,
                    &[ExecutionStatus::Running],
                    ExecutionStatus::WaitingApproval,
                    now(),
                    None,
                    None,
                    None,
                )?;
                if moved {
                    park(tx, &id, &approval_id, "")?;
                }
                Ok(moved)
            })
            .await?)
    }

    /// Resumes the execution parked on `approval_id`, if one is and the approval is decided:
    /// approved, its turn goes on; denied or expired, it fails. Returns whether it resumed one.
    pub(crate) async fn resume_parked(&self, approval_id: &str) -> Result<bool, ChatError> {
        let id = approval_id.to_owned();
        let found = self
            .inner
            .store
            .read(move |c| {
                let Some(parked) = parked_on(c, &id)? else {
                    return Ok(None);
                };
                let approval = crate::approvals::queue::load(c, &id)?;
                Ok::<_, StoreError>(approval.map(|approval| (parked, approval)))
            })
            .await?;
        let Some((parked, approval)) = found else {
            return Ok(false);
        };
        match approval.status {
            ApprovalStatus::Pending => Ok(false),
            ApprovalStatus::Approved => self.go_on(parked, &approval).await,
            ApprovalStatus::Denied | ApprovalStatus::Expired => {
                self.end_blocked(parked, &approval).await
            }
        }
    }

    /// Resumes every parked execution whose approval was decided (at start, and after the
    /// approval events were missed).
    async fn resume_all_decided(&self) {
        let decided = self.inner.store.read(decided_parked).await;
        match decided {
            Ok(ids) => {
                for id in ids {
                    if let Err(error) = self.resume_parked(&id).await {
                        tracing::warn!(%error, approval_id = %id, "could not resume a parked run");
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "could not list parked runs"),
        }
    }

    /// Resumes parked executions as their approvals are decided, until shutdown.
    pub(super) async fn follow_parked(self) {
        let mut events = self.inner.events.runtime().subscribe();
        self.resume_all_decided().await;
        loop {
            let received = tokio::select! {
                () = self.inner.shutdown.cancelled() => return,
                received = events.recv() => received,
            };
            match received {
                Ok(envelope) => {
                    let approval_id = match &envelope.event {
                        RuntimeEvent::ApprovalDecided { approval_id, .. }
                        | RuntimeEvent::ApprovalExpired { approval_id, .. } => approval_id,
                        _ => continue,
                    };
                    if let Err(error) = self.resume_parked(approval_id).await {
                        tracing::warn!(%error, %approval_id, "could not resume a parked run");
                    }
                }
                Err(RecvError::Lagged(_)) => self.resume_all_decided().await,
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// The approval was given: the execution runs again, and its turn starts with the call.
    async fn go_on(&self, parked: Parked, approval: &Approval) -> Result<bool, ChatError> {
        let body = resolved_event(&parked, approval);
        let (chat_id, execution_id) = (parked.chat_id.clone(), parked.execution_id.clone());
        let at = now();
        let (row, _) = self
            .inner
            .events
            .publish_with_runtime(move |tx| {
                if !leave_parking(tx, &execution_id, ExecutionStatus::Running, at, None)? {
                    return Ok((None, Vec::new(), Vec::new()));
                }
                let row = records::load_execution(tx, &chat_id, &execution_id)?;
                let task = match row
                    .as_ref()
                    .and_then(|row| row.execution.user_message_id.clone())
                {
                    Some(message_id) => message_text(tx, &message_id)?,
                    None => None,
                };
                let row = row.map(|row| (row, task));
                let event = NewChatEvent {
                    chat_id: chat_id.clone(),
                    execution_id: Some(execution_id.clone()),
                    body,
                };
                Ok::<_, ChatError>((row, vec![event], Vec::new()))
            })
            .await?;
        let Some((row, task)) = row else {
            return Ok(false);
        };
        let snapshot: Settings = from_json("executions.settings", &row.settings)?;
        let usage = row.execution.usage.clone().unwrap_or_default();
        let (agent, core_off) = self.chat_agent(&parked.chat_id).await;
        let turn = Turn {
            agent,
            core_off,
            user_id: parked.user_id,
            chat_id: parked.chat_id,
            execution_id: parked.execution_id,
            message_id: row
                .reply_message_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::now_v7().to_string()),
            input: TurnInput::Approved {
                approval_id: approval.id.clone(),
                task: task.unwrap_or_default(),
            },
            attached: String::new(),
            images: Vec::new(),
            settings: snapshot,
            unattended: parked.run,
            delivered: Vec::new(),
            // A parked run is an unattended one (a schedule's): no device submitted it.
            client_tools: None,
        };
        self.launch(turn, usage)?;
        Ok(true)
    }

    /// The approval was denied or ran out: the execution fails, and nothing of the call ran.
    async fn end_blocked(&self, parked: Parked, approval: &Approval) -> Result<bool, ChatError> {
        let body = resolved_event(&parked, approval);
        let (chat, id) = (parked.chat_id.clone(), parked.execution_id.clone());
        let row = self
            .inner
            .store
            .read(move |c| records::load_execution(c, &chat, &id))
            .await?;
        // In the person's language: the one the run's settings were taken in.
        let language = row
            .and_then(|row| from_json::<Settings>("executions.settings", &row.settings).ok())
            .map(|settings| settings.language())
            .unwrap_or_default();
        let denied = approval.status == ApprovalStatus::Denied;
        let code = if denied {
            "approval_denied"
        } else {
            "approval_expired"
        };
        let message = blocked_message(denied, approval, language);
        let ended = self
            .end_execution_after(
                &parked.chat_id,
                &parked.execution_id,
                (
                    &[ExecutionStatus::WaitingApproval],
                    TurnOutcome::Failed {
                        code: code.to_owned(),
                        message,
                        usage: Usage::default(),
                    },
                ),
                Some(body),
            )
            .await?;
        Ok(ended.is_some())
    }
}

/// Why a parked run ended blocked, in `language`.
fn blocked_message(denied: bool, approval: &Approval, language: Language) -> String {
    let (tool, summary) = (&approval.tool, &approval.summary);
    match (denied, language) {
        (true, Language::En) => format!("The run stopped: you denied `{tool}` ({summary})."),
        (true, Language::Ru) => {
            format!("Запуск остановлен: вы отклонили `{tool}` ({summary}).")
        }
        (false, Language::En) => {
            format!("The run stopped: nobody approved `{tool}` ({summary}) in time.")
        }
        (false, Language::Ru) => {
            format!("Запуск остановлен: никто не одобрил `{tool}` ({summary}) вовремя.")
        }
    }
}

/// An execution parked on an approval.
#[derive(Debug)]
struct Parked {
    chat_id: String,
    user_id: String,
    execution_id: String,
    tool_call_id: String,
    run: Option<Unattended>,
}

/// The chat event saying how the parked call's approval ended.
fn resolved_event(parked: &Parked, approval: &Approval) -> ChatEventBody {
    let decision = approval
        .decision
        .as_ref()
        .filter(|_| approval.expiry_reason.is_none());
    let payload = ApprovalResolvedPayload {
        approval_id: approval.id.clone(),
        tool_call_id: parked.tool_call_id.clone(),
        call_id: approval.call_id.clone(),
        name: approval.tool.clone(),
        status: approval.status,
        scope: decision.map(|decision| decision.scope),
        via: decision.map(|decision| decision.via.clone()),
        decided_at: decision.map(|decision| decision.decided_at),
        grant_id: decision.and_then(|decision| decision.grant_id.clone()),
        reason: approval.expiry_reason,
    };
    if approval.status == ApprovalStatus::Expired {
        ChatEventBody::ApprovalExpired(payload)
    } else {
        ChatEventBody::ApprovalDecided(payload)
    }
}

/// Records that a new execution is the unattended run `run`.
pub(super) fn set_unattended(
    tx: &rusqlite::Connection,
    execution_id: &str,
    run: &Unattended,
) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE executions SET unattended = ?2 WHERE id = ?1",
        rusqlite::params![execution_id, to_json(run)?],
    )?;
    Ok(())
}

fn unattended(
    connection: &rusqlite::Connection,
    execution_id: &str,
) -> Result<Option<Unattended>, StoreError> {
    use rusqlite::OptionalExtension;
    let raw: Option<Option<String>> = connection
        .query_row(
            "SELECT unattended FROM executions WHERE id = ?1",
            [execution_id],
            |row| row.get(0),
        )
        .optional()?;
    from_json_opt("executions.unattended", raw.flatten())
}

/// Moves an execution into `waiting_approval` on `approval_id` (inside the ending
/// transaction, after its state moved).
pub(super) fn park(
    tx: &rusqlite::Connection,
    execution_id: &str,
    approval_id: &str,
    tool_call_id: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE executions SET parked_approval = ?2, parked_call = ?3 WHERE id = ?1",
        rusqlite::params![execution_id, approval_id, tool_call_id],
    )?;
    Ok(())
}

/// Withdraws the approval an ending execution was parked on (cancelled while it waited): the
/// call it would run has no run to go on any more, so nobody is asked about it. The
/// approval's `approval.expired` event (`withdrawn`), when it was still pending.
pub(super) fn withdraw_parked(
    tx: &rusqlite::Connection,
    execution_id: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Option<RuntimeEvent>, StoreError> {
    use rusqlite::OptionalExtension;
    let parked: Option<Option<String>> = tx
        .query_row(
            "SELECT parked_approval FROM executions WHERE id = ?1",
            [execution_id],
            |row| row.get(0),
        )
        .optional()?;
    let Some(approval_id) = parked.flatten() else {
        return Ok(None);
    };
    tx.execute(
        "UPDATE executions SET parked_approval = NULL, parked_call = NULL WHERE id = ?1",
        [execution_id],
    )?;
    let expired = crate::approvals::expire_in(tx, &approval_id, ExpiryReason::Withdrawn, at)?;
    Ok(expired.map(|(_, event)| event))
}

/// Moves a parked execution out of `waiting_approval` to `to`; false when it was not there.
fn leave_parking(
    tx: &rusqlite::Connection,
    execution_id: &str,
    to: ExecutionStatus,
    at: chrono::DateTime<chrono::Utc>,
    error: Option<(&str, &str)>,
) -> Result<bool, StoreError> {
    let moved = records::transition(
        tx,
        execution_id,
        &[ExecutionStatus::WaitingApproval],
        to,
        at,
        error,
        None,
        None,
    )?;
    if moved {
        tx.execute(
            "UPDATE executions SET parked_approval = NULL, parked_call = NULL WHERE id = ?1",
            [execution_id],
        )?;
    }
    Ok(moved)
}

/// The execution waiting on `approval_id`.
fn parked_on(
    connection: &rusqlite::Connection,
    approval_id: &str,
) -> Result<Option<Parked>, StoreError> {
    use rusqlite::OptionalExtension;
    let row = connection
        .query_row(
            "SELECT e.chat_id, c.user_id, e.id, coalesce(e.parked_call, ''), e.unattended \
             FROM executions e JOIN chats c ON c.id = e.chat_id \
             WHERE e.parked_approval = ?1 AND e.status = 'waiting_approval'",
            [approval_id],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<String>>(4)?,
                ))
            },
        )
        .optional()?;
    row.map(|(chat_id, user_id, execution_id, tool_call_id, run)| {
        Ok(Parked {
            chat_id,
            user_id,
            execution_id,
            tool_call_id,
            run: from_json_opt("executions.unattended", run)?,
        })
    })
    .transpose()
}

/// The approvals of parked executions that are no longer pending.
fn decided_parked(connection: &rusqlite::Connection) -> Result<Vec<String>, StoreError> {
    let mut statement = connection.prepare(
        "SELECT e.parked_approval FROM executions e JOIN approvals a ON a.id = e.parked_approval \
         WHERE e.status = 'waiting_approval' AND a.status <> 'pending'",
    )?;
    let ids = statement
        .query_map([], |row| row.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(ids)
}

/// The text of message `id`.
fn message_text(connection: &rusqlite::Connection, id: &str) -> Result<Option<String>, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(connection
        .query_row("SELECT content FROM messages WHERE id = ?1", [id], |row| {
            row.get(0)
        })
        .optional()?)
}
