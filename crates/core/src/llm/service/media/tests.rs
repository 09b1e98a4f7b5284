//! Images through the providers against the fake server: the wire formats and errors.

use souz_testkit::{FakeServer, Reply};

use super::*;
use crate::config::LlmConfig;
use crate::testing::{self, TestHome};

async fn service(server: &FakeServer) -> (TestHome, LlmService) {
    let dir = TestHome::new();
    let config = LlmConfig {
        openai_base_url: format!("{}/v1", server.url()),
        anthropic_base_url: format!("{}/anthropic/v1", server.url()),
        ..LlmConfig::default()
    };
    let service = LlmService::new(
        &config,
        dir.store().await,
        dir.path().join("provider-keys.key"),
        testing::environment(&[
            ("OPENAI_API_KEY", "sk-test-openai-1111"),
            ("ANTHROPIC_API_KEY", "sk-ant-test-2222"),
        ]),
    )
    .unwrap();
    (dir, service)
}

#[tokio::test]
async fn an_image_goes_as_a_data_url_to_chat_completions_and_as_a_block_to_anthropic() {
    let server = FakeServer::start().await;
    let (_dir, service) = service(&server).await;
    server.push(
        "/v1/chat/completions",
        Reply::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": "A tomato."}}]}),
        ),
    );
    let cancel = CancellationToken::new();
    let answer = service
        .view_image(
            "openai/gpt-4o",
            "What is it?",
            ImageData {
                media_type: "image/png",
                bytes: b"PNGDATA",
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(answer, "A tomato.");
    let request = server.requests_to("/v1/chat/completions").pop().unwrap();
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-test-openai-1111")
    );
    let body = request.json();
    assert_eq!(body["stream"], false);
    assert_eq!(body["messages"][0]["content"][0]["text"], "What is it?");
    assert_eq!(
        body["messages"][0]["content"][1]["image_url"]["url"],
        "data:image/png;base64,UE5HREFUQQ=="
    );

    server.push(
        "/anthropic/v1/messages",
        Reply::json(
            200,
            json!({"content": [{"type": "text", "text": "A red tomato."}]}),
        ),
    );
    let answer = service
        .view_image(
            "anthropic/claude-sonnet-4-5",
            "What?",
            ImageData {
                media_type: "image/jpeg",
                bytes: b"JPG",
            },
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(answer, "A red tomato.");
    let request = server.requests_to("/anthropic/v1/messages").pop().unwrap();
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test-2222"));
    let block = &request.json()["messages"][0]["content"][0];
    assert_eq!(block["type"], "image");
    assert_eq!(block["source"]["media_type"], "image/jpeg");
    assert_eq!(block["source"]["data"], "SlBH");
}

#[tokio::test]
async fn generated_images_come_back_decoded_and_errors_are_reported() {
    let server = FakeServer::start().await;
    let (_dir, service) = service(&server).await;
    server.push(
        "/v1/images/generations",
        Reply::json(
            200,
            json!({"created": 1, "data": [{"b64_json": "iVBORw0KGgo="}]}),
        ),
    );
    let cancel = CancellationToken::new();
    let png = service
        .generate_image("gpt-image-1", "a tomato", "1024x1024", &cancel)
        .await
        .unwrap();
    assert_eq!(png, b"\x89PNG\r\n\x1a\n");
    let body = server
        .requests_to("/v1/images/generations")
        .pop()
        .unwrap()
        .json();
    assert_eq!(body["model"], "gpt-image-1");
    assert_eq!(body["size"], "1024x1024");
    assert!(
        body.get("response_format").is_none(),
        "gpt-image-1 rejects it"
    );

    server.push(
        "/v1/images/generations",
        Reply::json(
            400,
            json!({"error": {"message": "Your request was rejected by the safety system."}}),
        ),
    );
    let error = service
        .generate_image("dall-e-3", "something", "1024x1024", &cancel)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("safety system"), "{error}");
    let body = server
        .requests_to("/v1/images/generations")
        .pop()
        .unwrap()
        .json();
    assert_eq!(body["response_format"], "b64_json");
}
