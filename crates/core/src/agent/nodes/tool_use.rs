//! Tool use: runs the tool calls of the accepted answer one after the other, in the order the
//! model made them, and appends one tool message per call. Calls run sequentially so a person
//! is asked about one call at a time. A denied or failed call is a result for the model; the
//! loop goes back to the chat node either way — unless a call of an unattended run parked on an
//! approval: then the calls after it are answered "not run" and the turn ends there. Each call
//! that ran is counted by the turn's [`Watch`](crate::agent::limits::Watch); once it stopped the
//! turn (a repeated call, too many calls), the calls after it are answered "not run" as well
//! and the turn ends with the stop's explanation.

use std::sync::Arc;

use crate::agent::context::{AgentContext, ChatOutcome};
use crate::agent::dispatch;
use crate::agent::limits::NOT_RUN_AFTER_STOP;
use crate::agent::scope::TurnScope;
use crate::graph::BoxError;
use crate::llm::Message;

/// The result of a call after one that parked.
const NOT_RUN_WHILE_PARKED: &str = "Not run: an earlier call of this step waits for the \
                                    person's approval. Make this call again after it is \
                                    decided, if it is still needed.";

/// Runs the calls of the answer and appends their results.
pub(crate) async fn use_tools(
    scope: Arc<TurnScope>,
    context: AgentContext<ChatOutcome>,
) -> Result<AgentContext<String>, BoxError> {
    let calls = match &context.input {
        ChatOutcome::Answer(response) => response.tool_calls.clone(),
        ChatOutcome::Failed(_) => Vec::new(),
    };
    let input = context.user_input.clone();
    let mut context = context.with(input);
    for call in &calls {
        // A call parked: the turn stops there, and the calls after it do not run (every call
        // still gets its result, as the wire formats require).
        let not_run = if scope.is_parked() {
            Some(NOT_RUN_WHILE_PARKED)
        } else if scope.watch.stopped().is_some() {
            Some(NOT_RUN_AFTER_STOP)
        } else {
            None
        };
        let message = match not_run {
            Some(reason) => Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: reason.to_owned(),
                is_error: true,
            },
            None => {
                let message = dispatch::execute(&scope, &context.executable, call).await;
                scope.watch.record(call, &message);
                message
            }
        };
        context.history.push(message);
    }
    Ok(context)
}
