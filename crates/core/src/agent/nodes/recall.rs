//! Memory recall: memory recalled in earlier turns is removed, and facts relevant to this
//! turn's input are inserted right before the person's message, inside the envelope that marks
//! them as data. A recall that fails adds nothing (the turn goes on); cancellation propagates
//! because the node's future is simply dropped.

use std::sync::Arc;

use crate::agent::context::{AgentContext, is_injected_memory, memory_message};
use crate::agent::events::AgentEvent;
use crate::agent::memory::MemoryScope;
use crate::agent::scope::TurnScope;
use crate::graph::BoxError;

/// Replaces injected memory with what is recalled for this turn's input.
pub(crate) async fn recall(
    scope: Arc<TurnScope>,
    mut context: AgentContext<String>,
) -> Result<AgentContext<String>, BoxError> {
    // The input node has just appended the person's message: it is the last one, and it is
    // never treated as injected memory whatever it contains.
    let current = context.history.pop();
    context
        .history
        .retain(|message| !is_injected_memory(message));
    if !context.user_input.trim().is_empty() {
        let memory_scope = MemoryScope {
            owner: scope.owner.clone(),
            chat_id: scope.chat_id.clone(),
        };
        match scope
            .services
            .memory
            .recall(&memory_scope, &context.user_input)
            .await
        {
            Ok(Some(recalled)) if !recalled.block.trim().is_empty() => {
                context.history.push(memory_message(&recalled.block));
                scope.sink.send(AgentEvent::MemoryRecalled {
                    facts: recalled.facts.len(),
                });
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "memory recall failed; going on without it"),
        }
    }
    context.history.extend(current);
    Ok(context)
}
