//! The model behind `[skills] review`: a chat model of the LLM service that answers the
//! reviewer's prompt (`skills::review`) at temperature 0.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::llm::service::LlmService;
use crate::llm::{ChatRequest, Message, complete};
use crate::skills::review::{BundleReviewer, REVIEW_PROMPT};

/// Most tokens of the reviewer's answer.
const MAX_TOKENS: u32 = 1_500;
/// Longest a review may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(120);

/// Reviews with `model` (empty: the default chat model) of the operator's LLM service.
pub(crate) struct LlmReviewer {
    pub llm: Arc<LlmService>,
    pub model: String,
}

impl BundleReviewer for LlmReviewer {
    fn name(&self) -> String {
        if self.model.trim().is_empty() {
            "default-chat-model".to_owned()
        } else {
            self.model.trim().to_owned()
        }
    }

    fn review<'a>(&'a self, prompt: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let name = match self.model.trim() {
                "" => self
                    .llm
                    .default_model()
                    .await
                    .map_err(|error| error.to_string())?
                    .qualified(),
                model => model.to_owned(),
            };
            let (resolved, client) = self
                .llm
                .chat_client(&name)
                .await
                .map_err(|error| error.to_string())?;
            let mut request = ChatRequest::new(
                resolved.model,
                vec![Message::system(REVIEW_PROMPT), Message::user(prompt)],
            );
            request.temperature = Some(0.0);
            request.max_tokens = Some(MAX_TOKENS);
            let answer = tokio::time::timeout(
                REVIEW_TIMEOUT,
                complete(client.as_ref(), request, CancellationToken::new()),
            )
            .await
            .map_err(|_| {
                format!(
                    "the reviewer took longer than {} s",
                    REVIEW_TIMEOUT.as_secs()
                )
            })?
            .map_err(|error| error.to_string())?;
            Ok(answer.content)
        })
    }
}
