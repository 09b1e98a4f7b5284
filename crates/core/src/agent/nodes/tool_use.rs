//! Tool use: runs the tool calls of the accepted answer one after the other, in the order the
//! model made them, and appends one tool message per call. Calls run sequentially so a person
//! is asked about one call at a time. A denied or failed call is a result for the model; the
//! loop goes back to the chat node either way — unless a call of an unattended run parked on an
//! approval: then the calls after it are answered "not run" and the turn ends there.

use std::sync::Arc;

use crate::agent::context::{AgentContext, ChatOutcome};
use crate::agent::dispatch;
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
        let message = if scope.is_parked() {
            Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: NOT_RUN_WHILE_PARKED.to_owned(),
                is_error: true,
            }
        } else {
            dispatch::execute(&scope, &context.executable, call).await
        };
        context.history.push(message);
    }
    Ok(context)
}
