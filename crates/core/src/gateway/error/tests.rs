//! The one HTTP mapping, tested from domain errors through [`ServiceError`] to the response.

use super::*;
use crate::chat::ChatError;
use crate::llm::keys::KeyStoreError;
use crate::llm::service::LlmServiceError;
use crate::runtime::config_editor::ConfigEditError;
use crate::store::StoreError;

/// A domain error as the gateway answers it: through the runtime's one error type.
fn api(error: impl Into<ServiceError>) -> ApiError {
    ApiError::from(error.into())
}

async fn body_json(response: Response) -> serde_json::Value {
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn internal_errors_hide_details() {
    let response = ApiError::internal(&"disk /secret/path exploded").into_response();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body = body_json(response).await;
    assert_eq!(body["error"]["code"], "internal_error");
    assert!(!body.to_string().contains("secret"));
}

#[tokio::test]
async fn store_errors_map_by_kind() {
    let closed = api(StoreError::Closed);
    assert_eq!(closed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let corrupt = api(StoreError::Corrupt("row 5".into()));
    assert_eq!(corrupt.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body = body_json(corrupt.into_response()).await;
    assert!(!body.to_string().contains("row 5"));
}

/// A rejected `config.toml` is mapped here like every other error: the envelope, plus
/// every problem and the text that was validated.
#[tokio::test]
async fn a_rejected_config_keeps_its_problems_beside_the_envelope() {
    use crate::config::{Location, Problem};
    let problem = |line| Problem {
        location: Location::File {
            path: "config.toml".into(),
            line,
            column: 3,
        },
        message: "unknown key `x`".into(),
    };
    let error = api(ConfigEditError::Invalid {
        problems: vec![problem(2), problem(5)],
        text: "x = 1\n".into(),
    });
    let response = error.into_response();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = body_json(response).await;
    assert_eq!(
        body,
        serde_json::json!({
            "error": {
                "code": "invalid_request",
                "message": "Not saved: config.toml:2:3: unknown key `x` (and 1 more)",
            },
            "problems": [
                {"line": 2, "column": 3, "message": "unknown key `x`",
                 "display": "config.toml:2:3: unknown key `x`"},
                {"line": 5, "column": 3, "message": "unknown key `x`",
                 "display": "config.toml:5:3: unknown key `x`"},
            ],
            "text": "x = 1\n",
        })
    );
    let conflict = api(ConfigEditError::Conflict {
        current: "r2".into(),
    });
    assert_eq!(conflict.status(), StatusCode::CONFLICT);
    assert_eq!(conflict.code(), ErrorCode::Conflict);
    let io = api(ConfigEditError::Io("disk /secret full".into()));
    let body = body_json(io.into_response()).await;
    assert!(!body.to_string().contains("secret"));
}

/// A chat operation that fails in the LLM layer answers exactly as the LLM layer's own
/// routes do: one mapping, not a second one in `chat`.
#[test]
fn chat_errors_from_the_llm_layer_map_like_the_llm_layers_own() {
    let broken_key_file = || {
        LlmServiceError::Keys(KeyStoreError::KeyFile {
            path: "/home/u/.souz/provider-keys.key".into(),
            problem: "it is 3 bytes long, not 32".into(),
        })
    };
    let unknown = || LlmServiceError::UnknownProvider("nope".into());
    let no_ca = || LlmServiceError::CaFile {
        path: "/etc/ca.pem".into(),
        source: std::io::Error::other("gone"),
    };
    for error in [broken_key_file, unknown, no_ca] {
        let through_chat = api(ChatError::from(error()));
        let direct = api(error());
        assert_eq!(through_chat, direct);
    }
    let through_chat = api(ChatError::from(broken_key_file()));
    assert_eq!(through_chat.status(), StatusCode::CONFLICT);
    let through_chat = api(ChatError::from(no_ca()));
    assert_eq!(through_chat.status(), StatusCode::INTERNAL_SERVER_ERROR);
}

#[tokio::test]
async fn unauthorized_carries_a_challenge() {
    let response = ApiError::unauthorized("no token").into_response();
    assert_eq!(
        response.headers().get(header::WWW_AUTHENTICATE).unwrap(),
        "Bearer realm=\"souz\""
    );
}
