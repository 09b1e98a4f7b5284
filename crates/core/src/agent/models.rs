//! Where a turn gets its model: the LLM service in the daemon, a fixed client in tests and
//! benchmarks. Provider-neutral: the agent only ever sees an [`LlmClient`]. A model is asked
//! for on behalf of a user, whose provider keys its requests carry (then the daemon's).

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::llm::service::{LlmService, LlmServiceError};
use crate::llm::{LlmClient, ProviderId};

/// A chat model ready to be asked.
#[derive(Clone)]
pub struct ChatModel {
    /// The name people see (`openai/gpt-5-mini`).
    pub label: String,
    /// The provider's model name, sent in requests.
    pub request_name: String,
    /// The provider, when the model came from the registry.
    pub provider: Option<ProviderId>,
    /// The client.
    pub client: Arc<dyn LlmClient>,
}

impl std::fmt::Debug for ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// Resolves the model a turn asked for (`None`: the default).
pub trait ChatModels: Send + Sync {
    /// The model named `name`, or the default one, for `user` (whose keys it uses).
    fn chat_model<'a>(
        &'a self,
        user: &'a str,
        name: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ChatModel, LlmServiceError>>;
}

impl ChatModels for LlmService {
    fn chat_model<'a>(
        &'a self,
        user: &'a str,
        name: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ChatModel, LlmServiceError>> {
        Box::pin(async move {
            let service = self.for_user(user);
            let name = match name.map(str::trim).filter(|name| !name.is_empty()) {
                Some(name) => name.to_owned(),
                None => {
                    let model = service.default_model().await?;
                    format!("{}/{}", model.provider, model.model)
                }
            };
            let (resolved, client) = service.chat_client(&name).await?;
            Ok(ChatModel {
                label: format!("{}/{}", resolved.provider, resolved.model),
                request_name: resolved.model,
                provider: Some(resolved.provider),
                client,
            })
        })
    }
}

/// Always the same model, whatever is asked (tests, benchmarks, embedded single-model use).
#[derive(Debug, Clone)]
pub struct FixedModel(pub ChatModel);

impl FixedModel {
    /// `client` under the name `name`.
    pub fn new(name: &str, client: Arc<dyn LlmClient>) -> Self {
        Self(ChatModel {
            label: name.to_owned(),
            request_name: name.to_owned(),
            provider: None,
            client,
        })
    }
}

impl ChatModels for FixedModel {
    fn chat_model<'a>(
        &'a self,
        _: &'a str,
        _: Option<&'a str>,
    ) -> BoxFuture<'a, Result<ChatModel, LlmServiceError>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}
