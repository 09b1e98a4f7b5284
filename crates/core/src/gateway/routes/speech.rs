//! `/v1/speech`: which engine hears the person, and one transcription (a multipart upload with
//! the audio). Authorized like posting chat input ([`ChatUser`]): whoever may send a message
//! may dictate it. Fetching and removing an in-process model's files
//! (`/v1/speech/models/{id}`) is the operator's only, as the local models' are: model files
//! are the machine's.
//!
//! The multipart body is parsed here (no streaming: the whole body is already bounded by the
//! perimeter's limit for this route): parts are split on the boundary the `Content-Type`
//! names, each part's headers read for its `name`; unknown parts are ignored, a repeated part
//! or one without a name refused.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use souz_protocol::{ErrorBody, SpeechModelInfo, SpeechStatus, SpeechTranscription};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::{ChatUser, TranscriptionRequest};

/// The most parts a request may have.
const MAX_PARTS: usize = 16;
/// The longest text field (`language`, `engine`).
const MAX_FIELD: usize = 64;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/speech")
                .summary("Which engine hears you: the speech-to-text engine, its model, whether it can run now.")
                .description(
                    "`cloud` says whether audio leaves this computer with it (`[speech] engine`). \
                     `reason` (in your interface language) says why it is not `ready`. \
                     `models` lists the in-process Whisper models with their state \
                     (`missing`, `downloading` with `received`/`total`, `ready`, `loaded`, \
                     `failed` with `error`); `selected` marks `[speech] local_model`.",
                )
                .tag("speech")
                .response::<SpeechStatus>(200, "The engine."),
            status,
        )
        .route(
            Operation::post("/v1/speech/models/{id}/pull")
                .summary("Start fetching an in-process speech model's files into the Souz home.")
                .description(
                    "The download runs in the daemon (a client that goes away does not stop \
                     it; removing the model does) and fetches `config.json`, `tokenizer.json` \
                     and `model.safetensors` from the model hub (`[llm] local_model_hub`) at \
                     the commit Souz pins, into `<home>/models/speech/<id>/`. Before any byte \
                     is fetched, the hub's listing of every file is checked against what Souz \
                     pins besides (SHA-256 and size, where known); each file is resumable (a \
                     `.part` file is continued) and verified before it takes its name — by its \
                     SHA-256 (LFS files) or its git blob id (small files the hub keeps in git). \
                     Progress is on the `speech.model.download.progress|completed|failed|cancelled` \
                     runtime events and in `GET /v1/speech`.",
                )
                .tag("speech")
                .operator()
                .response::<SpeechModelInfo>(200, "Its files are there already.")
                .response::<SpeechModelInfo>(202, "Downloading (started now, or running already).")
                .response::<ErrorBody>(400, "Not downloadable (the tests' model).")
                .response::<ErrorBody>(404, "No such model."),
            pull,
        )
        .route(
            Operation::delete("/v1/speech/models/{id}")
                .summary("Stop its download, unload an in-process speech model and delete its files.")
                .tag("speech")
                .operator()
                .response::<SpeechModelInfo>(200, "Removed (or was not there).")
                .response::<ErrorBody>(404, "No such model.")
                .response::<ErrorBody>(409, "In use by a transcription."),
            remove,
        )
        .route(
            Operation::post("/v1/speech/transcriptions")
                .summary("Transcribe a recording (multipart: `audio`, optional `language` and `engine`).")
                .description(
                    "`audio` is a WAV, OGG/Opus or WebM/Opus file (recognised by its content), at \
                     most 25 MiB and 120 s of sound. `language` (`ru`, `en`, ...) defaults to \
                     `[speech] language`, then the interface language; `engine` (`local`, \
                     `openai`, `ai_tunnel`, `salute`, `server`) to `[speech] engine`. The audio \
                     is dropped once transcribed unless `[speech] keep_audio` is on. Errors \
                     are said in your interface language: 400 for audio Souz cannot read or \
                     that is too long, 409 when the engine is not set up (no key, no model), \
                     413 for a file over 25 MiB, and for the engine's own failures 502 (it \
                     refused the key or failed), 429 (it is rate-limiting; `Retry-After` when \
                     it said) or 504 (it did not answer in time).",
                )
                .tag("speech")
                .multipart_request(upload_schema)
                .response::<SpeechTranscription>(200, "What was heard.")
                .response::<ErrorBody>(400, "Not audio Souz reads, too long, or a bad field.")
                .response::<ErrorBody>(409, "The engine is not set up.")
                .response::<ErrorBody>(413, "Larger than 25 MiB.")
                .response::<ErrorBody>(429, "The engine is rate-limiting.")
                .response::<ErrorBody>(502, "The engine refused the key or failed.")
                .response::<ErrorBody>(504, "The engine did not answer in time."),
            transcribe,
        )
}

fn upload_schema() -> Value {
    json!({
        "type": "object",
        "required": ["audio"],
        "properties": {
            "audio": {
                "type": "string",
                "contentMediaType": "application/octet-stream",
                "description": "The recording: WAV, OGG/Opus or WebM/Opus."
            },
            "language": {"type": "string", "description": "The language spoken: ru, en, ..."},
            "engine": {
                "type": "string",
                "enum": ["local", "openai", "ai_tunnel", "salute", "server"],
                "description": "The engine to use instead of [speech] engine."
            }
        }
    })
}

async fn status(user: ChatUser, State(handle): State<RuntimeHandle>) -> axum::Json<SpeechStatus> {
    axum::Json(handle.speech_status(&user).await)
}

async fn pull(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<(StatusCode, axum::Json<SpeechModelInfo>), ApiError> {
    let model = handle.pull_speech_model(&id).await?;
    Ok((
        super::local_models::pull_status(&model.state),
        axum::Json(model),
    ))
}

async fn remove(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<SpeechModelInfo>, ApiError> {
    Ok(axum::Json(handle.remove_speech_model(&id).await?))
}

async fn transcribe(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<axum::Json<SpeechTranscription>, ApiError> {
    let request = parse_upload(&headers, &body)?;
    // Dropped with the request when the client goes away: the engine's work stops with it.
    let cancel = tokio_util::sync::CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    Ok(axum::Json(
        handle.transcribe(&user, request, &cancel).await?,
    ))
}

/// The boundary of a `multipart/form-data` content type.
fn boundary(headers: &HeaderMap) -> Result<String, ApiError> {
    let content_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let (media, parameters) = content_type.split_once(';').unwrap_or((content_type, ""));
    if !media.trim().eq_ignore_ascii_case("multipart/form-data") {
        return Err(ApiError::invalid(
            "Content-Type must be multipart/form-data with the recording in the `audio` part.",
        ));
    }
    parameters
        .split(';')
        .filter_map(|parameter| parameter.split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, value)| value.trim().trim_matches('"').to_owned())
        .filter(|boundary| (1..=70).contains(&boundary.len()))
        .ok_or_else(|| ApiError::invalid("the multipart Content-Type has no usable boundary"))
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|at| at + from)
}

/// The `name` of a part, from its `Content-Disposition` header.
fn part_name(headers: &str) -> Option<String> {
    headers
        .split("\r\n")
        .find(|line| {
            line.split_once(':')
                .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("content-disposition"))
        })?
        .split(';')
        .filter_map(|parameter| parameter.split_once('='))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("name"))
        .map(|(_, value)| value.trim().trim_matches('"').to_owned())
}

/// The parts of a multipart body: the audio and the text fields.
fn parse_upload(headers: &HeaderMap, body: &[u8]) -> Result<TranscriptionRequest, ApiError> {
    let delimiter = format!("--{}", boundary(headers)?);
    let bad = |what: &str| ApiError::invalid(format!("malformed multipart body: {what}"));
    let mut at = find(body, delimiter.as_bytes(), 0).ok_or_else(|| bad("no boundary"))?;
    let mut request = TranscriptionRequest::default();
    let mut seen: Vec<String> = Vec::new();
    let next_delimiter = format!("\r\n{delimiter}");
    for _ in 0..=MAX_PARTS {
        at += delimiter.len();
        if body.get(at..at + 2) == Some(b"--") {
            break;
        }
        let headers_start = at + 2;
        let headers_end =
            find(body, b"\r\n\r\n", headers_start).ok_or_else(|| bad("a part has no headers"))?;
        let part_headers = String::from_utf8_lossy(&body[headers_start..headers_end]);
        let content_start = headers_end + 4;
        let content_end = find(body, next_delimiter.as_bytes(), content_start)
            .ok_or_else(|| bad("a part does not end"))?;
        let content = &body[content_start..content_end];
        let name = part_name(&part_headers).ok_or_else(|| bad("a part has no name"))?;
        if seen.contains(&name) {
            return Err(ApiError::invalid(format!(
                "the part `{name}` is sent twice"
            )));
        }
        let text = || -> Result<String, ApiError> {
            if content.len() > MAX_FIELD {
                return Err(ApiError::invalid(format!("`{name}` is too long")));
            }
            Ok(String::from_utf8_lossy(content).trim().to_owned())
        };
        match name.as_str() {
            "audio" | "file" => request.audio = content.to_vec(),
            "language" => request.language = Some(text()?).filter(|value| !value.is_empty()),
            "engine" => request.engine = Some(text()?).filter(|value| !value.is_empty()),
            _ => {}
        }
        seen.push(name);
        at = content_end + 2;
        if seen.len() > MAX_PARTS {
            return Err(bad("too many parts"));
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            axum::http::header::CONTENT_TYPE,
            content_type.parse().unwrap(),
        );
        headers
    }

    #[test]
    fn parts_are_read_by_name_and_bad_bodies_refused() {
        let body = b"--xyz\r\nContent-Disposition: form-data; name=\"language\"\r\n\r\nru\r\n--xyz\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF\r\n--xy\r\n\r\n--xyz--\r\n";
        let parsed = parse_upload(&headers("multipart/form-data; boundary=xyz"), body).unwrap();
        assert_eq!(parsed.language.as_deref(), Some("ru"));
        assert_eq!(parsed.audio, b"RIFF\r\n--xy\r\n");
        assert_eq!(parsed.engine, None);

        assert!(parse_upload(&headers("application/json"), body).is_err());
        let twice = b"--b\r\nContent-Disposition: form-data; name=\"audio\"\r\n\r\n1\r\n--b\r\nContent-Disposition: form-data; name=\"audio\"\r\n\r\n2\r\n--b--\r\n";
        assert!(parse_upload(&headers("multipart/form-data; boundary=b"), twice).is_err());
        let cut = b"--b\r\nContent-Disposition: form-data; name=\"audio\"\r\n\r\n123";
        assert!(parse_upload(&headers("multipart/form-data; boundary=b"), cut).is_err());
    }
}
