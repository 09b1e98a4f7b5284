//! Tool use: runs the tool calls of the accepted answer one after the other, in the order the
//! model made them, and appends one tool message per call. Calls run sequentially so a person
//! is asked about one call at a time. A denied or failed call is a result for the model; the
//! loop goes back to the chat node either way.

use std::sync::Arc;

use crate::agent::context::{AgentContext, ChatOutcome};
use crate::agent::dispatch;
use crate::agent::scope::TurnScope;
use crate::graph::BoxError;

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
        let message = dispatch::execute(&scope, &context.executable, call).await;
        context.history.push(message);
    }
    Ok(context)
}
