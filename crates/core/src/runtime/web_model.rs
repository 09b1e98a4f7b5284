//! The operator's models and key store as the model-backed web and image tools see them
//! (`tools::builtin::internet::ModelAccess`): chat answers from the default chat model at
//! temperature 0, images to `[web] vision_model` (or the default chat model), generation with
//! `[web] image_model`, and the Brave key from the key store's secrets.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::WebConfig;
use crate::llm::service::LlmService;
use crate::llm::{ChatRequest, Message, complete};
use crate::tools::builtin::internet::{ImageInput, ModelAccess};

/// Most tokens of a research answer.
const MAX_TOKENS: u32 = 4_000;
/// Longest one model call of a tool may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// [`ModelAccess`] over the runtime's LLM service.
pub(crate) struct LlmModelAccess {
    pub llm: Arc<LlmService>,
    pub config: WebConfig,
}

impl LlmModelAccess {
    async fn model_name(&self, configured: &str) -> Result<String, String> {
        match configured.trim() {
            "" => self
                .llm
                .default_model()
                .await
                .map(|model| model.qualified())
                .map_err(|error| error.to_string()),
            name => Ok(name.to_owned()),
        }
    }
}

async fn timed<T>(
    work: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(CALL_TIMEOUT, work)
        .await
        .map_err(|_| format!("the model took longer than {} s", CALL_TIMEOUT.as_secs()))?
}

impl ModelAccess for LlmModelAccess {
    fn complete<'a>(
        &'a self,
        system: &'a str,
        user: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(timed(async move {
            let name = self.model_name("").await?;
            let (resolved, client) = self
                .llm
                .chat_client(&name)
                .await
                .map_err(|error| error.to_string())?;
            let mut request = ChatRequest::new(
                resolved.model,
                vec![Message::system(system), Message::user(user)],
            );
            request.temperature = Some(0.0);
            request.max_tokens = Some(MAX_TOKENS);
            let answer = complete(client.as_ref(), request, cancel.clone())
                .await
                .map_err(|error| error.to_string())?;
            Ok(answer.content)
        }))
    }

    fn view_image<'a>(
        &'a self,
        question: &'a str,
        image: &'a ImageInput,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(timed(async move {
            let name = self.model_name(&self.config.vision_model).await?;
            self.llm
                .view_image(&name, question, &image.media_type, &image.bytes, cancel)
                .await
                .map_err(|error| error.to_string())
        }))
    }

    fn generate_image<'a>(
        &'a self,
        prompt: &'a str,
        size: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(timed(async move {
            self.llm
                .generate_image(&self.config.image_model, prompt, size, cancel)
                .await
                .map_err(|error| error.to_string())
        }))
    }

    fn secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            self.llm
                .key_store()
                .get_secret(name)
                .await
                .map(|key| key.map(|key| key.expose().to_owned()))
                .map_err(|error| error.to_string())
        })
    }
}
