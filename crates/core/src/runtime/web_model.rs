//! The models and key store as the model-backed web and image tools see them
//! (`tools::builtin::internet::ModelAccess`). A call made in a chat uses that chat's model (its
//! settings' `model`, else its user's default) with its user's keys, so a user behind the
//! trusted proxy never spends the operator's keys; other calls use the operator's default chat
//! model. Images go to `[web] vision_model` when set, else to the same chat model; generation
//! uses `[web] image_model`; the Brave key is the service key `brave` (stored, else
//! `BRAVE_SEARCH_API_KEY`: `LlmService::service_key`).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rusqlite::OptionalExtension;
use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use crate::config::WebConfig;
use crate::llm::service::{ImageData, LlmService, LlmServiceError};
use crate::llm::{ChatRequest, Message, complete};
use crate::store::{Store, StoreError};
use crate::tools::builtin::internet::{ImageInput, ModelAccess};

/// Most tokens of a research answer.
const MAX_TOKENS: u32 = 4_000;
/// Longest one model call of a tool may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// [`ModelAccess`] over the runtime's LLM service.
pub(crate) struct LlmModelAccess {
    pub llm: Arc<LlmService>,
    pub store: Store,
    pub config: WebConfig,
}

/// The service acting for the caller, and the model to use (`None`: that user's default).
struct Caller {
    llm: LlmService,
    model: Option<String>,
}

impl LlmModelAccess {
    /// Who the call acts for: a chat's user and model, else the local user.
    async fn caller(&self, requester: &Requester) -> Result<Caller, String> {
        let local = || Caller {
            llm: self.llm.for_user(self.llm.user()),
            model: None,
        };
        let Requester::Chat { chat_id } = requester else {
            return Ok(local());
        };
        let id = chat_id.clone();
        let row: Option<(String, Option<String>)> = self
            .store
            .read(move |connection| {
                connection
                    .query_row(
                        "SELECT c.user_id, s.settings FROM chats c
                         LEFT JOIN chat_settings s ON s.chat_id = c.id WHERE c.id = ?1",
                        [&id],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                    .map_err(StoreError::from)
            })
            .await
            .map_err(|error| error.to_string())?;
        let Some((user, settings)) = row else {
            return Ok(local());
        };
        let model = settings
            .and_then(|settings| serde_json::from_str::<serde_json::Value>(&settings).ok())
            .and_then(|settings| settings["model"].as_str().map(str::to_owned))
            .filter(|model| !model.trim().is_empty());
        Ok(Caller {
            llm: self.llm.for_user(&user),
            model,
        })
    }
}

impl Caller {
    async fn model(&self, preferred: &str) -> Result<String, String> {
        if !preferred.trim().is_empty() {
            return Ok(preferred.trim().to_owned());
        }
        if let Some(model) = &self.model {
            return Ok(model.clone());
        }
        self.llm
            .default_model()
            .await
            .map(|model| model.qualified())
            .map_err(|error| error.to_string())
    }
}

async fn timed<T>(work: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::time::timeout(CALL_TIMEOUT, work)
        .await
        .map_err(|_| format!("the model took longer than {} s", CALL_TIMEOUT.as_secs()))?
}

impl ModelAccess for LlmModelAccess {
    fn complete<'a>(
        &'a self,
        requester: &'a Requester,
        system: &'a str,
        user: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(timed(async move {
            let caller = self.caller(requester).await?;
            let name = caller.model("").await?;
            let (resolved, client) = caller
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
        requester: &'a Requester,
        question: &'a str,
        image: &'a ImageInput,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(timed(async move {
            let caller = self.caller(requester).await?;
            let name = caller.model(&self.config.vision_model).await?;
            caller
                .llm
                .view_image(
                    &name,
                    question,
                    ImageData {
                        media_type: &image.media_type,
                        bytes: &image.bytes,
                    },
                    cancel,
                )
                .await
                .map_err(|error| error.to_string())
        }))
    }

    fn generate_image<'a>(
        &'a self,
        requester: &'a Requester,
        prompt: &'a str,
        size: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(timed(async move {
            let caller = self.caller(requester).await?;
            caller
                .llm
                .generate_image(&self.config.image_model, prompt, size, cancel)
                .await
                .map_err(|error| error.to_string())
        }))
    }

    fn secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            match self.llm.service_key(name).await {
                Ok(key) => Ok(key.map(|key| key.expose().to_owned())),
                Err(LlmServiceError::UnknownServiceKey(_)) => Ok(None),
                Err(error) => Err(error.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests;
