//! Input->History: the person's message enters the conversation. A conversation that has no
//! messages yet starts with the system prompt.

use crate::agent::context::AgentContext;
use crate::graph::BoxError;
use crate::llm::Message;

/// Appends the turn's input as a user message, with the images attached to it, (after the system prompt on a fresh history).
pub(crate) fn input_to_history(
    mut context: AgentContext<String>,
) -> Result<AgentContext<String>, BoxError> {
    if context.history.is_empty() {
        context
            .history
            .push(Message::system(context.system_prompt.clone()));
    }
    let images = std::mem::take(&mut context.images);
    context
        .history
        .push(Message::user_with_images(context.input.clone(), images));
    Ok(context)
}
