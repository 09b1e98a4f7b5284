//! appendActualInformation: background facts (current date and time, and whatever the host
//! adds) enter the prompt as one user message right before the person's message, replacing
//! the one of the previous turn. The envelope tells the model to use it only when relevant.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::agent::context::{AgentContext, CONTEXT_PREFIX, CONTEXT_SUFFIX, is_injected_context};
use crate::agent::scope::TurnScope;
pub(crate) use crate::agent::sources::{ContextItem, ContextSource};
use crate::graph::BoxError;
use crate::llm::Message;

/// The local clock: the current date, time and UTC offset.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LocalFacts;

impl ContextSource for LocalFacts {
    fn items<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Vec<ContextItem>> {
        Box::pin(async {
            let now = chrono::Local::now();
            vec![ContextItem {
                kind: "General fact".to_owned(),
                text: format!(
                    "Current date and time: {} (UTC{})",
                    now.format("%A, %Y-%m-%d %H:%M:%S"),
                    now.format("%:z")
                ),
            }]
        })
    }
}

/// The background-context message for `items`.
pub(crate) fn context_message(items: &[ContextItem]) -> Message {
    let mut text = String::from(CONTEXT_PREFIX);
    for item in items {
        text.push_str(&format!("- [{}]: {}\n", item.kind, item.text));
    }
    text.push_str(CONTEXT_SUFFIX);
    Message::user(text)
}

/// Replaces the previous background context with this turn's.
pub(crate) async fn append_information(
    scope: Arc<TurnScope>,
    mut context: AgentContext<String>,
) -> Result<AgentContext<String>, BoxError> {
    // The person's message is the last one here; it stays whatever it contains.
    let current = context.history.pop();
    context
        .history
        .retain(|message| !is_injected_context(message));
    if !context.user_input.trim().is_empty() {
        let items = scope.services.context.items(&context.user_input).await;
        if !items.is_empty() {
            context.history.push(context_message(&items));
        }
    }
    context.history.extend(current);
    Ok(context)
}
