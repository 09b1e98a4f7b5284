//! Images through the providers: a question about an image to a vision-capable chat model
//! (Chat Completions' `image_url` with a `data:` URL; Anthropic's base64 `image` block), and
//! OpenAI's images API (`/images/generations`, base64 PNG).
//!
//! Invariants: non-streaming calls through the shared provider HTTP (retries, `Retry-After`,
//! credentials scrubbed from errors, the answer read within [`BODY_LIMIT`]); the image never
//! leaves except to the resolved provider.

use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{LlmService, LlmServiceError};
use crate::llm::anthropic::ANTHROPIC_VERSION;
use crate::llm::http::{BODY_LIMIT, ProviderHttp, endpoint, read_body};
use crate::llm::models::ModelKind;
use crate::llm::openai_compatible::preset;
use crate::llm::{LlmError, ProviderId};

/// Most tokens of an answer about an image.
const VISION_MAX_TOKENS: u32 = 1_500;

fn malformed(provider: ProviderId, detail: impl Into<String>) -> LlmServiceError {
    LlmServiceError::Llm(LlmError::Malformed {
        provider,
        detail: detail.into(),
    })
}

/// The JSON of a provider's answer, read within [`BODY_LIMIT`].
async fn json_body(
    provider: ProviderId,
    response: reqwest::Response,
    http: &ProviderHttp,
    cancel: &CancellationToken,
) -> Result<Value, LlmServiceError> {
    let timeout = http.settings().request_timeout;
    let bytes = read_body(provider, response, BODY_LIMIT, timeout, cancel).await?;
    serde_json::from_slice(&bytes)
        .map_err(|error| malformed(provider, format!("the answer is not JSON: {error}")))
}

/// An image sent to a model.
#[derive(Debug, Clone, Copy)]
pub struct ImageData<'a> {
    /// Its media type (`image/png`).
    pub media_type: &'a str,
    /// Its bytes.
    pub bytes: &'a [u8],
}

impl LlmService {
    /// The answer of the chat model `model` to `question` about `image`.
    pub async fn view_image(
        &self,
        model: &str,
        question: &str,
        image: ImageData<'_>,
        cancel: &CancellationToken,
    ) -> Result<String, LlmServiceError> {
        let ImageData { media_type, bytes } = image;
        let resolved = self.resolve(model, ModelKind::Chat)?;
        let provider = resolved.provider;
        let key = self.required_key(provider).await?;
        let base_url = self.base_url(provider);
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let http = self.shared().http.clone();
        if provider == ProviderId::Anthropic {
            let body = json!({
                "model": resolved.model,
                "max_tokens": VISION_MAX_TOKENS,
                "messages": [{"role": "user", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}},
                    {"type": "text", "text": question},
                ]}],
            });
            let url = endpoint(&base_url, "messages");
            let build = |client: &reqwest::Client| {
                let request = client
                    .post(&url)
                    .header("anthropic-version", ANTHROPIC_VERSION)
                    .json(&body);
                match &key {
                    Some(key) => request.header("x-api-key", key.expose()),
                    None => request,
                }
            };
            let answer = json_body(
                provider,
                http.send(provider, build, cancel).await?,
                &http,
                cancel,
            )
            .await?;
            let text: Vec<&str> = answer["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|block| block["text"].as_str())
                .collect();
            return Ok(text.join("\n"));
        }
        let official = provider == ProviderId::OpenAi;
        if !official && preset(provider).is_none() {
            return Err(LlmServiceError::Model(format!(
                "`{model}` cannot look at images: provider {provider} has no vision endpoint in \
                 this build"
            )));
        }
        let mut body = json!({
            "model": resolved.model,
            "stream": false,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": question},
                {"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}},
            ]}],
        });
        let limit = if official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[limit] = json!(VISION_MAX_TOKENS);
        let url = endpoint(&base_url, "chat/completions");
        let build = |client: &reqwest::Client| {
            let request = client.post(&url).json(&body);
            match &key {
                Some(key) => request.bearer_auth(key.expose()),
                None => request,
            }
        };
        let answer = json_body(
            provider,
            http.send(provider, build, cancel).await?,
            &http,
            cancel,
        )
        .await?;
        answer["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| malformed(provider, "no choices[0].message.content in the answer"))
    }

    /// A PNG from OpenAI's images API: `model` (`gpt-image-1`, `dall-e-3`) draws `prompt` at
    /// `size`.
    pub async fn generate_image(
        &self,
        model: &str,
        prompt: &str,
        size: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, LlmServiceError> {
        let provider = ProviderId::OpenAi;
        let key = self.required_key(provider).await?;
        let base_url = self.base_url(provider);
        let model = model.trim().trim_start_matches("openai/");
        let mut body = json!({"model": model, "prompt": prompt, "size": size, "n": 1});
        if model.starts_with("dall-e") {
            body["response_format"] = json!("b64_json");
        }
        let url = endpoint(&base_url, "images/generations");
        let build = |client: &reqwest::Client| {
            let request = client.post(&url).json(&body);
            match &key {
                Some(key) => request.bearer_auth(key.expose()),
                None => request,
            }
        };
        let http = self.shared().http.clone();
        let answer = json_body(
            provider,
            http.send(provider, build, cancel).await?,
            &http,
            cancel,
        )
        .await?;
        let encoded = answer["data"][0]["b64_json"]
            .as_str()
            .ok_or_else(|| malformed(provider, "no data[0].b64_json in the answer"))?;
        base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|error| malformed(provider, format!("the image is not base64: {error}")))
    }
}

#[cfg(test)]
mod tests;
