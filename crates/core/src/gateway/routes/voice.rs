//! Push-to-talk and spoken answers: `GET /v1/voice` (the `[voice]` settings the chat page
//! follows) and `POST /v1/speech/synthesis` (text in, audio out). Same capability as using
//! the chats.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use souz_protocol::ErrorBody;
use souz_protocol::voice::{SpeechSynthesis, VoiceSettings};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::ChatUser;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/voice")
                .summary("Push-to-talk and spoken answers as `[voice]` sets them.")
                .description(
                    "Whether a transcript is sent at once or put in the box for review, the \
                     app's hotkey, and the voice that reads answers aloud: its name, whether \
                     the text leaves this machine, and whether it can speak now.",
                )
                .tag("voice")
                .response::<VoiceSettings>(200, "The settings."),
            voice_settings,
        )
        .route(
            Operation::post("/v1/speech/synthesis")
                .summary("Read a text aloud with the `[voice] tts` voice: the audio.")
                .description(
                    "Answers with the audio bytes (`audio/mpeg` from a speech API, `audio/wav` \
                     from this machine's voice). The text's Markdown marks are dropped and a \
                     text past `[voice] tts_max_chars` is cut at a sentence end. The text is \
                     sent to the voice's provider only for `openai`, `ai_tunnel` or a `server` \
                     not on this machine.",
                )
                .tag("voice")
                .request::<SpeechSynthesis>()
                .plain_response(200, "The audio.")
                .response::<ErrorBody>(400, "No text to read.")
                .response::<ErrorBody>(
                    409,
                    "Spoken answers are off, the voice is not installed, its key is missing or \
                     refused, it is rate limited or could not be reached.",
                ),
            synthesize,
        )
}

async fn voice_settings(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
) -> axum::Json<VoiceSettings> {
    axum::Json(handle.voice_settings(&user).await)
}

async fn synthesize(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<SpeechSynthesis>,
) -> Result<Response, ApiError> {
    let audio = handle.synthesize_speech(&user, request).await?;
    Ok((
        [
            (header::CONTENT_TYPE, audio.mime),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        audio.bytes,
    )
        .into_response())
}
