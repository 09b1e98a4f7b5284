//! Questions the agent asks (options, in the original API's words): listing the pending ones
//! across the user's chats, reading one, and answering one, which resumes its turn.
//!
//! Every change of a question is a chat event *and* a runtime event, stored in one
//! transaction and announced after it commits, so the surfaces that follow the runtime bus
//! (the tray, notifications, the Queue page, `WS /v1/events`) see a question exactly as they
//! see an approval: `option.requested` when it is asked, then one of `option.answered`,
//! `option.cancelled` (its execution ended) or `option.expired`.

pub(crate) mod records;

use std::collections::BTreeMap;

use serde_json::json;
use souz_protocol::RuntimeEvent;
use souz_protocol::chat::events::OptionAnsweredPayload;
use souz_protocol::chat::{
    ChatEventBody, ExecutionStatus, OptionAnswer, OptionAnswerResponse, OptionChoice, OptionState,
    OptionStatus, Question, QuestionList, SelectionMode, Settings,
};

use super::events::NewChatEvent;
use super::turns::{Turn, TurnInput};
use super::{ChatError, ChatUser, Chats, records as chat_records};
use crate::store::codec::{from_json, now};

/// At most this many pending questions are listed.
pub(crate) const MAX_LISTED: usize = 500;

impl Chats {
    /// The user's pending questions (not expired), oldest first.
    pub async fn questions(
        &self,
        user: &ChatUser,
        limit: usize,
    ) -> Result<QuestionList, ChatError> {
        let user_id = user.0.clone();
        let limit = limit.clamp(1, MAX_LISTED);
        let items = self
            .inner
            .store
            .read(move |c| records::pending_questions(c, &user_id, now(), limit))
            .await?;
        Ok(QuestionList { items })
    }

    /// One question of the user's chats, whatever its status.
    pub async fn question(&self, user: &ChatUser, option_id: &str) -> Result<Question, ChatError> {
        let (user_id, id) = (user.0.clone(), option_id.to_owned());
        self.inner
            .store
            .read(move |c| records::load_question(c, &user_id, &id))
            .await?
            .ok_or(ChatError::OptionNotFound)
    }

    /// Answers a question the agent asked and resumes its turn (with the execution's settings
    /// snapshot, not the current settings).
    pub async fn answer_option(
        &self,
        user: &ChatUser,
        option_id: &str,
        answer: OptionAnswer,
    ) -> Result<OptionAnswerResponse, ChatError> {
        let option = self.question(user, option_id).await?;
        if option.status != OptionStatus::Pending {
            return Err(ChatError::Invalid("Option is not pending.".into()));
        }
        self.refuse_if_paused()?;
        let at = now();
        if option.expires_at.is_some_and(|expires| expires <= at) {
            self.expire(&option).await?;
            return Err(ChatError::Invalid("Option has expired.".into()));
        }
        let Answer {
            selected_ids,
            free_text,
            selected,
        } = check_answer(&option, &answer)?;
        let stored_answer = json!({"selectedOptionIds": selected_ids, "freeText": free_text, "metadata": answer.metadata});
        let (option_id, chat_id, execution_id) = (
            option.id.clone(),
            option.chat_id.clone(),
            option.execution_id.clone(),
        );
        let (answered_body, answered_event) =
            answered_events(&option, &selected_ids, free_text.as_ref(), &answer.metadata);
        let ((execution_row, usage), _) = self
            .inner
            .events
            .publish_with_runtime(move |tx| {
                if !records::settle_option(
                    tx,
                    &option_id,
                    OptionStatus::Answered,
                    Some(&stored_answer),
                    at,
                )? {
                    return Err(ChatError::Invalid("Option is not pending.".into()));
                }
                if !chat_records::transition(
                    tx,
                    &execution_id,
                    &[ExecutionStatus::WaitingOption],
                    ExecutionStatus::Running,
                    at,
                    None,
                    None,
                    None,
                )? {
                    return Err(ChatError::Invalid(
                        "Execution is not waiting for this option.".into(),
                    ));
                }
                let row = chat_records::load_execution(tx, &chat_id, &execution_id)?
                    .ok_or(ChatError::ExecutionNotFound)?;
                let usage = row.execution.usage.clone().unwrap_or_default();
                let event = NewChatEvent {
                    chat_id: chat_id.clone(),
                    execution_id: Some(execution_id.clone()),
                    body: answered_body,
                };
                Ok(((row, usage), vec![event], vec![answered_event]))
            })
            .await?;
        let snapshot: Settings = from_json("executions.settings", &execution_row.settings)?;
        let (agent, core_off) = self.chat_agent(&option.chat_id).await;
        let unattended = self.unattended_of(&option.execution_id).await?;
        let turn = Turn {
            unattended,
            agent,
            core_off,
            user_id: user.0.clone(),
            chat_id: option.chat_id.clone(),
            execution_id: option.execution_id.clone(),
            message_id: execution_row
                .reply_message_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::now_v7().to_string()),
            attached: String::new(),
            images: Vec::new(),
            input: TurnInput::OptionAnswer {
                option_id: option.id.clone(),
                question: option.title.clone(),
                selected,
                free_text,
                metadata: answer.metadata.clone(),
            },
            settings: snapshot,
            delivered: Vec::new(),
            client_tools: self
                .stored_device_tools(&option.chat_id, &option.execution_id)
                .await?,
        };
        self.launch(turn, usage)?;
        Ok(OptionAnswerResponse {
            option: OptionState {
                id: option.id,
                status: OptionStatus::Answered.as_str().to_owned(),
            },
            execution: execution_row.execution,
        })
    }

    /// Ends questions nobody answered in time, so their chats are free again: sleeps until
    /// the next expiry (woken when a question is asked), never polls. Runs until shutdown.
    pub(crate) async fn expire_questions(self) {
        loop {
            let next = match self.inner.store.read(records::next_expiry).await {
                Ok(next) => next,
                Err(error) => {
                    tracing::warn!(%error, "cannot read when the next question expires");
                    None
                }
            };
            let wait = next.map(|at| (at - now()).to_std().unwrap_or_default());
            tokio::select! {
                () = self.inner.shutdown.cancelled() => return,
                () = self.inner.asked.notified() => continue,
                () = async {
                    match wait {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
            let due = match self
                .inner
                .store
                .read(|c| records::due_questions(c, now()))
                .await
            {
                Ok(due) => due,
                Err(error) => {
                    tracing::warn!(%error, "cannot read the questions that expired");
                    continue;
                }
            };
            for option in due {
                if let Err(error) = self.expire(&option).await {
                    tracing::warn!(%error, option_id = %option.id, "could not expire a question");
                }
            }
        }
    }

    /// Marks a question that ran out of time as expired, says so on the runtime bus, and ends
    /// the turn that waited for it (failed, `option_expired`), which frees the chat.
    async fn expire(&self, option: &Question) -> Result<(), ChatError> {
        let event = RuntimeEvent::OptionExpired {
            option_id: option.id.clone(),
            chat_id: option.chat_id.clone(),
            execution_id: option.execution_id.clone(),
        };
        let id = option.id.clone();
        self.inner
            .events
            .publish_with_runtime(move |tx| {
                let expired = records::settle_option(tx, &id, OptionStatus::Expired, None, now())?;
                let events = if expired { vec![event] } else { Vec::new() };
                Ok::<_, ChatError>(((), Vec::new(), events))
            })
            .await?;
        // The turn's usage so far stays: ending it writes the usage it is given.
        let (chat_id, execution_id) = (option.chat_id.clone(), option.execution_id.clone());
        let usage = self
            .inner
            .store
            .read(move |c| chat_records::load_execution(c, &chat_id, &execution_id))
            .await?
            .and_then(|row| row.execution.usage)
            .unwrap_or_default();
        self.end_execution(
            &option.chat_id,
            &option.execution_id,
            &[ExecutionStatus::WaitingOption],
            super::turns::TurnOutcome::Failed {
                code: "option_expired".into(),
                message: "Nobody answered the question in time, so the turn stopped.".into(),
                usage,
            },
        )
        .await?;
        Ok(())
    }
}

/// The chat event and the runtime event of an answered question.
fn answered_events(
    option: &Question,
    selected_ids: &[String],
    free_text: Option<&String>,
    metadata: &BTreeMap<String, String>,
) -> (ChatEventBody, RuntimeEvent) {
    let body = ChatEventBody::OptionAnswered(OptionAnsweredPayload {
        option_id: option.id.clone(),
        status: "answered".into(),
        selected_option_ids: selected_ids.to_vec(),
        free_text: free_text.cloned().unwrap_or_default(),
        metadata: metadata.clone(),
    });
    let event = RuntimeEvent::OptionAnswered {
        option_id: option.id.clone(),
        chat_id: option.chat_id.clone(),
        execution_id: option.execution_id.clone(),
        selected_option_ids: selected_ids.to_vec(),
        free_text: free_text.cloned(),
    };
    (body, event)
}

/// An answer, checked against the question it answers.
struct Answer {
    selected_ids: Vec<String>,
    free_text: Option<String>,
    selected: Vec<OptionChoice>,
}

/// Checks an answer against its question: known, non-blank ids (one for a single-choice
/// question; none only with free text where the question takes it) and non-blank metadata keys.
fn check_answer(option: &Question, answer: &OptionAnswer) -> Result<Answer, ChatError> {
    let selected_ids: Vec<String> = answer
        .selected_option_ids
        .iter()
        .map(|id| id.trim().to_owned())
        .collect();
    let free_text = answer
        .free_text
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    if selected_ids.iter().any(String::is_empty) {
        return Err(ChatError::Invalid(
            "selectedOptionIds must not contain blank ids.".into(),
        ));
    }
    if selected_ids.is_empty() && !(option.free_text && free_text.is_some()) {
        return Err(ChatError::Invalid(
            "selectedOptionIds must not be empty.".into(),
        ));
    }
    if option.selection_mode == SelectionMode::Single && selected_ids.len() > 1 {
        return Err(ChatError::Invalid(
            "Exactly one option must be selected.".into(),
        ));
    }
    let mut selected = Vec::new();
    for id in &selected_ids {
        match option.options.iter().find(|choice| &choice.id == id) {
            Some(choice) => selected.push(choice.clone()),
            None => return Err(ChatError::Invalid(format!("Unknown option id: {id}."))),
        }
    }
    if answer.metadata.keys().any(|key| key.trim().is_empty()) {
        return Err(ChatError::Invalid(
            "metadata keys must not be blank.".into(),
        ));
    }
    Ok(Answer {
        selected_ids,
        free_text,
        selected,
    })
}
