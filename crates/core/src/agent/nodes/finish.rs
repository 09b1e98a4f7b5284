//! The end of a turn: the answer is returned, after the history was summarized if it grew to
//! 80 % of the context window; or, when the request failed, the error node explains.
//!
//! The size estimate uses the provider's own token count when the last request reported one
//! (its prompt plus the answer: exactly what the next request will carry), and otherwise the
//! original's heuristic of one token per four UTF-16 characters, counted over the history
//! including tool-call arguments. The provider's count is preferred because four characters
//! per token overestimates English and badly underestimates Cyrillic or CJK text, where the
//! heuristic let histories overflow before summarizing.
//!
//! A failed summary is retried once (the graph's policy: two attempts on model errors); if it
//! fails again the turn still returns its answer with the history unsummarized (see
//! `agent::turn`), since losing an answer the person already saw would be worse.

use std::sync::Arc;

use souz_protocol::chat::events::TurnEndReason;

use crate::agent::context::{AgentContext, ChatOutcome, Reply, ReplyFailure, message_chars};
use crate::agent::nodes::{names, scoped};
use crate::agent::prompts::{FailureReply, OUTPUT_TOKEN, SUMMARY_PREFIX, SUMMARY_PROMPT};
use crate::agent::scope::TurnScope;
use crate::graph::{BoxError, Cancelled, Graph, GraphBuildError, GraphBuilder, RetryPolicy};
use crate::llm::{ChatRequest, ChatResponse, LlmError, Message, complete};

/// The history is summarized at this fraction of the context window.
pub(crate) const SUMMARIZE_AT: f64 = 0.8;

/// Estimated tokens of the history (see the module documentation).
pub(crate) fn estimated_tokens<I>(context: &AgentContext<I>) -> u64 {
    if let Some(usage) = context.last_chat_usage
        && usage.input_tokens > 0
    {
        return usage.input_tokens + usage.output_tokens;
    }
    context
        .history
        .iter()
        .map(|message| message_chars(message).div_ceil(4) as u64)
        .sum()
}

/// Whether the history should be summarized now.
pub(crate) fn history_is_too_big<I>(context: &AgentContext<I>) -> bool {
    estimated_tokens(context) as f64 >= f64::from(context.settings.context_size) * SUMMARIZE_AT
}

/// An answer and the summary made after it.
#[derive(Debug, Clone)]
pub(crate) struct Summarized {
    answer: ChatOutcome,
    summary: String,
}

/// The retry policy of model calls inside the graphs: two attempts, model errors only (not a
/// cancellation, and not an answer cut at the output limit: the same request meets the same
/// limit).
pub(crate) fn llm_retry_policy() -> RetryPolicy {
    RetryPolicy::attempts(2).when(|error, _| {
        error
            .downcast_ref::<LlmError>()
            .is_some_and(|error| !matches!(error, LlmError::Cancelled | LlmError::CutOff { .. }))
    })
}

async fn summarize(
    scope: Arc<TurnScope>,
    mut context: AgentContext<ChatOutcome>,
) -> Result<AgentContext<Summarized>, BoxError> {
    let mut messages = context.history.clone();
    messages.push(Message::user(SUMMARY_PROMPT));
    let mut request = ChatRequest::new(scope.model.request_name.clone(), messages);
    request.temperature = context.settings.temperature;
    match scope
        .within_request_timeout(complete(
            scope.model.client.as_ref(),
            request,
            scope.cancel.clone(),
        ))
        .await
    {
        Ok(response) => {
            if let Some(usage) = response.usage {
                context.usage.add(usage);
            }
            let answer = context.input.clone();
            Ok(context.with(Summarized {
                answer,
                summary: response.content,
            }))
        }
        Err(LlmError::Cancelled) if scope.cancel.is_cancelled() => Err(Box::new(Cancelled)),
        Err(error) => {
            // A cut summary used its tokens; this context dies with the error, the scope not.
            if let LlmError::CutOff { used, .. } = &error {
                scope
                    .summary_usage
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .add(*used);
            }
            Err(Box::new(error))
        }
    }
}

fn summary_to_history(context: AgentContext<Summarized>) -> AgentContext<ChatOutcome> {
    let Summarized { answer, summary } = context.input.clone();
    let mut context = context.with(answer);
    let last = context.history.pop();
    let mut history = vec![
        Message::system(context.system_prompt.clone()),
        Message::assistant(format!("{SUMMARY_PREFIX}:\n{summary}")),
    ];
    history.extend(last);
    context.history = history;
    // The estimate must not reuse the pre-summary token count.
    context.last_chat_usage = None;
    context
}

fn answer_text(context: AgentContext<ChatOutcome>) -> AgentContext<Reply> {
    let text = match &context.input {
        ChatOutcome::Answer(ChatResponse { content, .. }) => content.clone(),
        ChatOutcome::Failed(error) => error.to_string(),
    };
    context.with(Reply {
        text,
        failure: None,
        question: None,
    })
}

/// The "Summarize or return" subgraph.
pub(crate) fn finish_graph(
    scope: &Arc<TurnScope>,
) -> Result<Graph<AgentContext<ChatOutcome>, AgentContext<Reply>>, GraphBuildError> {
    let mut builder =
        GraphBuilder::<AgentContext<ChatOutcome>, AgentContext<Reply>>::new(names::FINISH)
            .retry_policy(llm_retry_policy());
    let summarize = builder.add(scoped(scope, names::SUMMARIZE, summarize));
    let to_history = builder.add(scoped(
        scope,
        names::SUMMARY_TO_HISTORY,
        |_, context| async move { Ok(summary_to_history(context)) },
    ));
    let answer = builder.add(scoped(scope, names::ANSWER, |_, context| async move {
        Ok(answer_text(context))
    }));
    let (summarize_target, answer_target) = (summarize.target(), answer.target());
    builder.route(
        builder.start(),
        move |context: &AgentContext<ChatOutcome>| {
            Some(if history_is_too_big(context) {
                summarize_target
            } else {
                answer_target
            })
        },
    );
    builder.edge(summarize, to_history);
    builder.edge(to_history, answer);
    builder.edge(answer, builder.exit());
    builder.build()
}

fn is_timeout_message(message: &str) -> bool {
    let message = message.to_lowercase();
    message.contains("request timeout has expired") || message.contains("request_timeout=")
}

/// The error node: turns a failed request into a reply (original §2.4 mappings).
pub(crate) fn error_reply(context: AgentContext<ChatOutcome>) -> AgentContext<Reply> {
    let error = match &context.input {
        ChatOutcome::Failed(error) => error.clone(),
        ChatOutcome::Answer(_) => return answer_text(context),
    };
    let detail = error.to_string();
    let mut context = context.with(());
    let say = |reply: FailureReply| reply.text(context.settings.language);
    let (text, code) = match &error {
        LlmError::Status { status: 413, .. } => {
            context.history.clear();
            (
                say(FailureReply::ContextReset).to_owned(),
                TurnEndReason::ContextReset,
            )
        }
        LlmError::Status {
            status: 402,
            message,
            ..
        } => {
            context.history.clear();
            let is_json =
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(message).is_ok();
            let no_balance = say(FailureReply::NoBalance);
            let text = if is_json {
                format!("{no_balance}\n\n```json\n{message}\n```")
            } else {
                format!("{no_balance}\n\n{message}")
            };
            (text, TurnEndReason::NoBalance)
        }
        LlmError::Timeout { .. } => (
            say(FailureReply::Timeout).to_owned(),
            TurnEndReason::Timeout,
        ),
        LlmError::CutOff { limit, .. } => (
            say(FailureReply::CutOff).replace(
                "{tokens}",
                &OUTPUT_TOKEN.count(u64::from(*limit), context.settings.language),
            ),
            TurnEndReason::CutOff,
        ),
        _ if is_timeout_message(&detail) => (
            say(FailureReply::Timeout).to_owned(),
            TurnEndReason::Timeout,
        ),
        other => (
            crate::agent::prompts::provider_failure(other, context.settings.language),
            TurnEndReason::ModelError,
        ),
    };
    context.with(Reply {
        text,
        failure: Some(ReplyFailure { code, detail }),
        question: None,
    })
}
