//! The LLM chat node: asks the model with the history and the advertised tools, streams the
//! answer text to the sink as it arrives, and appends the answer to the history.
//!
//! The skills agent uses the *steerable* form: its request is provisional until the turn's
//! [`Mailbox`](crate::agent::steering::Mailbox) agrees. Input that arrives while the model
//! answers cancels only that request (never a started tool batch) and the model is asked again
//! with the input appended; an answer that completes in the same instant wins the tie, and the
//! input is then applied before the answer is accepted. A tool-use answer is accepted when no
//! input waits (input arriving later waits for the tools' results); a final answer is accepted
//! only by sealing an empty mailbox, so input can never slip in after the answer was taken.
//!
//! Errors of the request are values ([`ChatOutcome::Failed`]) for the error node; only the
//! turn's own cancellation stops the node.

use std::sync::Arc;

use crate::agent::context::{AgentContext, ChatOutcome};
use crate::agent::events::AgentEvent;
use crate::agent::scope::TurnScope;
use crate::agent::steering::{Mailbox, NextStep};
use crate::graph::{BoxError, Cancelled};
use crate::llm::{self, ChatRequest, ChatResponse, LlmError, Message};

fn request(scope: &TurnScope, context: &AgentContext<String>) -> ChatRequest {
    ChatRequest {
        model: scope.model.request_name.clone(),
        messages: context.history.clone(),
        tools: context.advertised.clone(),
        temperature: context.settings.temperature,
        // The completion budget is the provider's configured default; the original sent the
        // whole context size here, which providers reject or bill for.
        max_tokens: None,
    }
}

/// Streams one answer, forwarding its text to the sink under `attempt`, within the turn's
/// request timeout.
async fn stream_answer(
    scope: &TurnScope,
    request: ChatRequest,
    attempt: u64,
) -> Result<ChatResponse, LlmError> {
    scope
        .within_request_timeout(stream_unbounded(scope, request, attempt))
        .await
}

async fn stream_unbounded(
    scope: &TurnScope,
    request: ChatRequest,
    attempt: u64,
) -> Result<ChatResponse, LlmError> {
    let stream = scope
        .model
        .client
        .stream(request, scope.cancel.child_token());
    llm::collect_with(stream, |text| {
        scope.sink.send(AgentEvent::TextDelta { attempt, text });
    })
    .await
}

fn outcome(
    scope: &TurnScope,
    result: Result<ChatResponse, LlmError>,
) -> Result<ChatOutcome, BoxError> {
    match result {
        Ok(response) => Ok(ChatOutcome::Answer(response)),
        Err(LlmError::Cancelled) if scope.cancel.is_cancelled() => Err(Box::new(Cancelled)),
        Err(error) => Ok(ChatOutcome::Failed(error)),
    }
}

fn commit(mut context: AgentContext<String>, outcome: ChatOutcome) -> AgentContext<ChatOutcome> {
    if let ChatOutcome::Answer(response) = &outcome {
        context.history.push(Message::Assistant {
            content: response.content.clone(),
            tool_calls: response.tool_calls.clone(),
        });
    }
    context.with(outcome)
}

fn count_usage(context: &mut AgentContext<String>, outcome: &ChatOutcome) {
    match outcome {
        ChatOutcome::Answer(response) => {
            context.last_chat_usage = response.usage;
            if let Some(usage) = response.usage {
                context.usage.add(usage);
            }
        }
        // An answer cut at the output limit was paid for although it cannot be used.
        ChatOutcome::Failed(LlmError::CutOff { used, .. }) => context.usage.add(*used),
        ChatOutcome::Failed(_) => {}
    }
}

/// Asks the model once and commits its answer.
pub(crate) async fn chat(
    scope: Arc<TurnScope>,
    mut context: AgentContext<String>,
) -> Result<AgentContext<ChatOutcome>, BoxError> {
    let attempt = scope.next_attempt();
    let result = stream_answer(&scope, request(&scope, &context), attempt).await;
    let outcome = outcome(&scope, result)?;
    count_usage(&mut context, &outcome);
    Ok(commit(context, outcome))
}

fn apply_input(
    scope: &TurnScope,
    mailbox: &Mailbox,
    context: &mut AgentContext<String>,
    input: String,
) {
    context.history.push(Message::user(input.clone()));
    context.input = input;
    scope.sink.send(AgentEvent::InputApplied {
        revision: mailbox.revision(),
    });
}

enum Race {
    Answered(Result<ChatResponse, LlmError>),
    Interrupted,
}

/// The steerable form of [`chat`] (see the module documentation).
pub(crate) async fn steerable_chat(
    scope: Arc<TurnScope>,
    mut context: AgentContext<String>,
) -> Result<AgentContext<ChatOutcome>, BoxError> {
    let Some(mailbox) = scope.mailbox.clone() else {
        return chat(scope, context).await;
    };
    loop {
        match mailbox.next_step() {
            Ok(NextStep::Queued(input)) => {
                apply_input(&scope, &mailbox, &mut context, input);
                continue;
            }
            Ok(NextStep::Request { .. }) => {}
            // Closed: the turn is being cancelled.
            Err(_) => return Err(Box::new(Cancelled)),
        }
        let attempt = scope.next_attempt();
        let answer = stream_answer(&scope, request(&scope, &context), attempt);
        tokio::pin!(answer);
        let race = tokio::select! {
            // A completed answer wins a tie with arriving input; the input is applied below.
            biased;
            result = &mut answer => Race::Answered(result),
            () = mailbox.input_arrived() => Race::Interrupted,
        };
        let result = match race {
            Race::Answered(result) => result,
            Race::Interrupted => {
                // Only this request is dropped; the turn and its tools are untouched.
                scope.sink.send(AgentEvent::AnswerDiscarded { attempt });
                continue;
            }
        };
        let outcome = outcome(&scope, result)?;
        count_usage(&mut context, &outcome);
        let waiting = if outcome.wants_tools() {
            // An empty drain accepts the tool batch; later input waits for its results.
            mailbox.drain()
        } else {
            mailbox.drain_or_seal().await
        };
        match waiting {
            Some(input) => {
                // The answer (and any tool calls in it) predates this input: ask again.
                scope.sink.send(AgentEvent::AnswerDiscarded { attempt });
                apply_input(&scope, &mailbox, &mut context, input);
            }
            None => return Ok(commit(context, outcome)),
        }
    }
}
