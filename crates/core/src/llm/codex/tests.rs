//! Codex against fake sign-in and Responses servers speaking their wire formats: device code,
//! polling, exchange, refresh rotation (and its races), expiry, 401 → refresh → retry → sign in
//! again, streamed text and a tool-call round trip.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use souz_testkit::FakeServer;
use souz_testkit::codex::{self, DEVICE_TOKEN_PATH, RESPONSES_PATH, TOKEN_PATH, USER_CODE_PATH};
use tokio_util::sync::CancellationToken;

use super::auth::AuthService;
use super::client::CodexClient;
use super::login::{self, LoginError, Pacing};
use super::session::{Session, Sessions};
use super::{CLIENT_ID, PROVIDER};
use crate::llm::keys::{ApiKey, KeyStore};
use crate::llm::tests::http;
use crate::llm::{
    ChatRequest, FinishReason, LlmClient, LlmError, Message, StreamEvent, ToolCall,
    ToolDeclaration, Usage, collect,
};
use crate::testing::TestHome;

const ACCOUNT: &str = "acct-1234";
const EMAIL: &str = "person@example.com";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn pacing() -> Pacing {
    Pacing {
        slow_down_step: Duration::from_millis(10),
    }
}

struct Fixture {
    _home: TestHome,
    server: FakeServer,
    sessions: Arc<Sessions>,
    keys: KeyStore,
}

impl Fixture {
    async fn new() -> Self {
        let home = TestHome::new();
        let store = home.store().await;
        let keys = KeyStore::new(store, home.path().join("provider-keys.key"));
        let server = FakeServer::start().await;
        let sessions = Arc::new(Sessions::new(AuthService::new(http(), server.url())));
        Self {
            _home: home,
            server,
            sessions,
            keys,
        }
    }

    /// Another process's view of the same sign-in service and store.
    fn other_process(&self) -> Sessions {
        Sessions::new(AuthService::new(http(), self.server.url()))
    }

    fn client(&self) -> CodexClient {
        CodexClient::new(
            http(),
            Arc::clone(&self.sessions),
            format!("{}/backend-api/codex", self.server.url()),
            self.keys.clone(),
        )
    }

    /// Stores a session whose access token `tag` expires at `exp`, refresh token `refresh`.
    async fn sign_in(&self, tag: &str, refresh: &str, exp: i64) -> Session {
        let session = Session {
            access_token: codex::access_token(tag, ACCOUNT, exp),
            refresh_token: refresh.to_owned(),
            id_token: Some(codex::id_token(EMAIL, ACCOUNT)),
            account_id: Some(ACCOUNT.to_owned()),
            email: Some(EMAIL.to_owned()),
            expires_at: Some(exp),
        };
        self.sessions.store(&self.keys, &session).await.unwrap();
        session
    }

    async fn stored(&self) -> Option<Session> {
        self.sessions.stored(&self.keys).await.unwrap()
    }
}

#[tokio::test]
async fn a_device_code_sign_in_polls_until_entered_then_stores_the_session() {
    let fixture = Fixture::new().await;
    let server = &fixture.server;
    server.push(USER_CODE_PATH, codex::user_code("dev-1", "ABCD-1234", 0));
    server.push(DEVICE_TOKEN_PATH, codex::pending());
    server.push(
        DEVICE_TOKEN_PATH,
        codex::device_error("authorization_pending"),
    );
    server.push(DEVICE_TOKEN_PATH, codex::device_error("slow_down"));
    server.push(
        DEVICE_TOKEN_PATH,
        codex::authorized("auth-code-1", "verifier-1"),
    );
    let access = codex::access_token("a1", ACCOUNT, now() + 3600);
    server.push(
        TOKEN_PATH,
        codex::tokens(&codex::id_token(EMAIL, ACCOUNT), &access, "rt-1"),
    );

    let cancel = CancellationToken::new();
    let code = fixture.sessions.auth().start(&cancel).await.unwrap();
    assert_eq!(code.user_code, "ABCD-1234");
    assert_eq!(
        code.verification_url,
        format!("{}/codex/device", server.url())
    );
    assert_eq!(code.interval, Duration::ZERO);
    let session = login::complete(&fixture.sessions, &fixture.keys, &code, pacing(), &cancel)
        .await
        .unwrap();
    assert_eq!(session.account_id.as_deref(), Some(ACCOUNT));
    assert_eq!(session.email.as_deref(), Some(EMAIL));
    assert_eq!(session.refresh_token, "rt-1");
    assert_eq!(fixture.stored().await, Some(session));

    let start = &server.requests_to(USER_CODE_PATH)[0];
    assert_eq!(start.json(), json!({"client_id": CLIENT_ID}));
    let polls = server.requests_to(DEVICE_TOKEN_PATH);
    assert_eq!(polls.len(), 4, "pending, pending, slow_down, authorized");
    assert_eq!(
        polls[0].json(),
        json!({"device_auth_id": "dev-1", "user_code": "ABCD-1234"})
    );
    let exchange = &server.requests_to(TOKEN_PATH)[0];
    let form: std::collections::HashMap<String, String> =
        reqwest::Url::parse(&format!("http://form/?{}", exchange.text()))
            .unwrap()
            .query_pairs()
            .into_owned()
            .collect();
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], "auth-code-1");
    assert_eq!(form["code_verifier"], "verifier-1");
    assert_eq!(form["client_id"], CLIENT_ID);
    assert_eq!(
        form["redirect_uri"],
        format!("{}/deviceauth/callback", server.url())
    );
    // The list of provider keys shows no token, only the account.
    let listed = fixture.keys.list().await.unwrap();
    assert_eq!(listed[0].key_hint, EMAIL);
}

#[tokio::test]
async fn an_expired_or_refused_code_ends_the_sign_in_without_a_session() {
    let fixture = Fixture::new().await;
    let server = &fixture.server;
    let cancel = CancellationToken::new();
    for (answer, expected) in [("expired_token", "expired"), ("access_denied", "denied")] {
        server.push(USER_CODE_PATH, codex::user_code("dev", "CODE-1", 0));
        server.push(DEVICE_TOKEN_PATH, codex::pending());
        server.push(DEVICE_TOKEN_PATH, codex::device_error(answer));
        let code = fixture.sessions.auth().start(&cancel).await.unwrap();
        let outcome =
            login::complete(&fixture.sessions, &fixture.keys, &code, pacing(), &cancel).await;
        match (expected, outcome) {
            ("expired", Err(LoginError::Expired)) | ("denied", Err(LoginError::Denied(_))) => {}
            (expected, other) => panic!("{expected}: {other:?}"),
        }
    }
    // A code past its own expiry is not polled at all.
    server.push(USER_CODE_PATH, codex::user_code("dev", "CODE-2", 0));
    let mut code = fixture.sessions.auth().start(&cancel).await.unwrap();
    code.expires_at = chrono::Utc::now() - chrono::Duration::seconds(1);
    let polls_before = server.requests_to(DEVICE_TOKEN_PATH).len();
    let outcome = login::complete(&fixture.sessions, &fixture.keys, &code, pacing(), &cancel).await;
    assert!(matches!(outcome, Err(LoginError::Expired)), "{outcome:?}");
    assert_eq!(server.requests_to(DEVICE_TOKEN_PATH).len(), polls_before);
    assert_eq!(fixture.stored().await, None);
    // A cancelled wait stops.
    server.set_fallback(DEVICE_TOKEN_PATH, codex::pending());
    server.push(USER_CODE_PATH, codex::user_code("dev", "CODE-3", 0));
    let code = fixture.sessions.auth().start(&cancel).await.unwrap();
    let stop = CancellationToken::new();
    let (outcome, ()) = tokio::join!(
        login::complete(&fixture.sessions, &fixture.keys, &code, pacing(), &stop),
        async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            stop.cancel();
        }
    );
    assert!(matches!(outcome, Err(LoginError::Cancelled)), "{outcome:?}");
}

#[tokio::test]
async fn an_expiring_access_token_is_refreshed_and_the_rotated_refresh_token_stored() {
    let fixture = Fixture::new().await;
    fixture.sign_in("old", "rt-1", now() + 30).await;
    let fresh = codex::access_token("new", ACCOUNT, now() + 3600);
    fixture.server.push(
        TOKEN_PATH,
        codex::tokens(&codex::id_token(EMAIL, ACCOUNT), &fresh, "rt-2"),
    );
    let session = fixture
        .sessions
        .current(&fixture.keys, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(session.access_token, fresh);
    assert_eq!(session.refresh_token, "rt-2");
    assert_eq!(fixture.stored().await.unwrap().refresh_token, "rt-2");
    let refresh = &fixture.server.requests_to(TOKEN_PATH)[0];
    assert_eq!(
        refresh.json(),
        json!({"client_id": CLIENT_ID, "grant_type": "refresh_token", "refresh_token": "rt-1"})
    );
    // A fresh session is used as it is.
    fixture
        .sessions
        .current(&fixture.keys, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(fixture.server.requests_to(TOKEN_PATH).len(), 1);
}

#[tokio::test]
async fn concurrent_refreshes_send_the_refresh_token_once_and_keep_the_rotated_one() {
    let fixture = Fixture::new().await;
    let stale = fixture.sign_in("old", "rt-1", now() - 10).await;
    let fresh = codex::access_token("new", ACCOUNT, now() + 3600);
    fixture.server.push(
        TOKEN_PATH,
        codex::tokens(&codex::id_token(EMAIL, ACCOUNT), &fresh, "rt-2"),
    );
    // Were the token sent twice, the second refresh would be refused as reused.
    fixture
        .server
        .set_fallback(TOKEN_PATH, codex::refresh_refused("refresh_token_reused"));
    let cancel = CancellationToken::new();
    let (first, second) = tokio::join!(
        fixture.sessions.refresh(&fixture.keys, &stale, &cancel),
        fixture.sessions.refresh(&fixture.keys, &stale, &cancel),
    );
    assert_eq!(first.unwrap().refresh_token, "rt-2");
    assert_eq!(second.unwrap().refresh_token, "rt-2");
    assert_eq!(fixture.server.requests_to(TOKEN_PATH).len(), 1);
    assert_eq!(fixture.stored().await.unwrap().refresh_token, "rt-2");

    // Another process that still holds the stale session takes the stored one.
    let other = fixture.other_process();
    let taken = other.refresh(&fixture.keys, &stale, &cancel).await.unwrap();
    assert_eq!(taken.refresh_token, "rt-2");
    assert_eq!(fixture.server.requests_to(TOKEN_PATH).len(), 1);
}

#[tokio::test]
async fn a_session_replaced_meanwhile_is_never_overwritten_by_a_stale_refresh() {
    let fixture = Fixture::new().await;
    let first = fixture.sign_in("a", "rt-1", now() + 3600).await;
    let first_text = ApiKey::new(serde_json::to_string(&first).unwrap());
    // Another process rotated the session (rt-2) after this one read it.
    let second = fixture.sign_in("b", "rt-2", now() + 3600).await;
    let mut mine = first.clone();
    mine.refresh_token = "rt-mine".to_owned();
    let written = fixture
        .keys
        .replace_session(
            PROVIDER,
            &first_text,
            &ApiKey::new(serde_json::to_string(&mine).unwrap()),
            EMAIL,
        )
        .await
        .unwrap();
    assert!(!written);
    assert_eq!(fixture.stored().await, Some(second.clone()));
    let removed = fixture
        .keys
        .remove_session_if(PROVIDER, &first_text)
        .await
        .unwrap();
    assert!(!removed);
    assert_eq!(fixture.stored().await, Some(second));
}

#[tokio::test]
async fn a_refused_refresh_signs_out_and_asks_to_sign_in_again() {
    let fixture = Fixture::new().await;
    fixture.sign_in("old", "rt-1", now() - 10).await;
    fixture
        .server
        .push(TOKEN_PATH, codex::refresh_refused("refresh_token_expired"));
    let error = fixture
        .sessions
        .current(&fixture.keys, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::SignInRequired { provider: PROVIDER });
    assert_eq!(fixture.stored().await, None);
    assert!(error.to_string().contains("souz login codex"), "{error}");
    // A failure that is not a refusal keeps the session.
    fixture.sign_in("old", "rt-1", now() - 10).await;
    fixture.server.push(
        TOKEN_PATH,
        souz_testkit::Reply::json(503, json!({"error": "busy"})),
    );
    let error = fixture
        .sessions
        .current(&fixture.keys, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::Status { status: 503, .. }),
        "{error:?}"
    );
    assert!(fixture.stored().await.is_some());
}

#[tokio::test]
async fn text_streams_from_the_responses_api_with_the_account_headers() {
    let fixture = Fixture::new().await;
    let session = fixture.sign_in("a1", "rt-1", now() + 3600).await;
    fixture
        .server
        .push(RESPONSES_PATH, codex::text(&["Hel", "lo"]));
    let request = ChatRequest::new(
        "gpt-5.2-codex",
        vec![Message::system("Be brief."), Message::user("Hi")],
    );
    let mut events = Vec::new();
    let mut stream = fixture.client().stream(request, CancellationToken::new());
    while let Some(event) = futures::StreamExt::next(&mut stream).await {
        events.push(event.unwrap());
    }
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hel".to_owned()),
            StreamEvent::TextDelta("lo".to_owned()),
            StreamEvent::Usage(Usage {
                input_tokens: 12,
                output_tokens: 2,
                cached_input_tokens: 2
            }),
            StreamEvent::Finish(FinishReason::Stop),
        ]
    );
    let sent = &fixture.server.requests_to(RESPONSES_PATH)[0];
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {}", session.access_token).as_str())
    );
    assert_eq!(sent.header("chatgpt-account-id"), Some(ACCOUNT));
    assert_eq!(sent.header("originator"), Some("codex_cli_rs"));
    assert_eq!(sent.header("openai-beta"), Some("responses=experimental"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    let body = sent.json();
    assert_eq!(body["model"], "gpt-5.2-codex");
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "Hi"}]}])
    );
    assert!(body.get("max_output_tokens").is_none());
    assert!(body.get("temperature").is_none());
}

#[tokio::test]
async fn a_tool_call_round_trips_as_function_call_and_function_call_output() {
    let fixture = Fixture::new().await;
    fixture.sign_in("a1", "rt-1", now() + 3600).await;
    let arguments = r#"{"path":"/tmp/notes.txt"}"#;
    fixture.server.push(
        RESPONSES_PATH,
        codex::function_call("call_7", "ReadFile", arguments, 3),
    );
    fixture
        .server
        .push(RESPONSES_PATH, codex::text(&["It says hi."]));
    let tool = ToolDeclaration {
        name: "ReadFile".to_owned(),
        description: "Reads a file.".to_owned(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    };
    let mut request = ChatRequest::new("gpt-5.2-codex", vec![Message::user("Read my notes")]);
    request.tools = vec![tool];
    let client = fixture.client();
    let mut stream = client.stream(request.clone(), CancellationToken::new());
    let mut deltas = String::new();
    let mut calls = Vec::new();
    let mut finish = None;
    while let Some(event) = futures::StreamExt::next(&mut stream).await {
        match event.unwrap() {
            StreamEvent::ToolCallDelta {
                index, arguments, ..
            } => {
                assert_eq!(index, 0);
                deltas.push_str(&arguments);
            }
            StreamEvent::ToolCall(call) => calls.push(call),
            StreamEvent::Finish(reason) => finish = Some(reason),
            _ => {}
        }
    }
    assert_eq!(deltas, arguments);
    let call = ToolCall {
        id: "call_7".to_owned(),
        name: "ReadFile".to_owned(),
        arguments: arguments.to_owned(),
    };
    assert_eq!(calls, vec![call.clone()]);
    assert_eq!(finish, Some(FinishReason::ToolCalls));
    let first = fixture.server.requests_to(RESPONSES_PATH)[0].json();
    assert_eq!(
        first["tools"],
        json!([{"type": "function", "name": "ReadFile", "description": "Reads a file.",
                "strict": false,
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}])
    );
    assert_eq!(first["tool_choice"], "auto");

    request.messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![call.clone()],
    });
    request.messages.push(Message::tool_result(&call, "hi"));
    let answer = collect(client.stream(request, CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(answer.content, "It says hi.");
    let second = fixture.server.requests_to(RESPONSES_PATH)[1].json();
    assert_eq!(
        second["input"],
        json!([
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Read my notes"}]},
            {"type": "function_call", "call_id": "call_7", "name": "ReadFile",
             "arguments": arguments},
            {"type": "function_call_output", "call_id": "call_7", "output": "hi"},
        ])
    );
}

#[tokio::test]
async fn an_expired_session_is_refreshed_before_the_request() {
    let fixture = Fixture::new().await;
    fixture.sign_in("old", "rt-1", now() - 5).await;
    let fresh = codex::access_token("new", ACCOUNT, now() + 3600);
    fixture.server.push(
        TOKEN_PATH,
        codex::tokens(&codex::id_token(EMAIL, ACCOUNT), &fresh, "rt-2"),
    );
    fixture.server.push(RESPONSES_PATH, codex::text(&["ok"]));
    collect(fixture.client().stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    let sent = &fixture.server.requests_to(RESPONSES_PATH)[0];
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {fresh}").as_str())
    );
    let order: Vec<String> = fixture
        .server
        .requests()
        .iter()
        .map(|request| request.path.clone())
        .collect();
    assert_eq!(order, vec![TOKEN_PATH, RESPONSES_PATH]);
}

fn request() -> ChatRequest {
    ChatRequest::new("gpt-5.2-codex", vec![Message::user("Hi")])
}

#[tokio::test]
async fn a_401_gets_one_refresh_and_one_retry() {
    let fixture = Fixture::new().await;
    fixture.sign_in("revoked", "rt-1", now() + 3600).await;
    let fresh = codex::access_token("new", ACCOUNT, now() + 3600);
    fixture.server.push(RESPONSES_PATH, codex::unauthorized());
    fixture.server.push(RESPONSES_PATH, codex::text(&["ok"]));
    fixture.server.push(
        TOKEN_PATH,
        codex::tokens(&codex::id_token(EMAIL, ACCOUNT), &fresh, "rt-2"),
    );
    let answer = collect(fixture.client().stream(request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(answer.content, "ok");
    let sent = fixture.server.requests_to(RESPONSES_PATH);
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[1].header("authorization"),
        Some(format!("Bearer {fresh}").as_str())
    );
    assert_eq!(fixture.stored().await.unwrap().refresh_token, "rt-2");
}

#[tokio::test]
async fn a_second_401_asks_to_sign_in_again() {
    let fixture = Fixture::new().await;
    fixture.sign_in("revoked", "rt-1", now() + 3600).await;
    let fresh = codex::access_token("new", ACCOUNT, now() + 3600);
    fixture
        .server
        .set_fallback(RESPONSES_PATH, codex::unauthorized());
    fixture.server.push(
        TOKEN_PATH,
        codex::tokens(&codex::id_token(EMAIL, ACCOUNT), &fresh, "rt-2"),
    );
    let error = collect(fixture.client().stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::SignInRequired { provider: PROVIDER });
    assert_eq!(fixture.server.requests_to(RESPONSES_PATH).len(), 2);
    assert_eq!(fixture.server.requests_to(TOKEN_PATH).len(), 1);

    // Without a session at all, nothing is sent.
    fixture.sessions.remove(&fixture.keys).await.unwrap();
    let error = collect(fixture.client().stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::SignInRequired { provider: PROVIDER });
    assert_eq!(fixture.server.requests_to(RESPONSES_PATH).len(), 2);
}

#[tokio::test]
async fn a_failed_response_and_a_cut_stream_are_errors() {
    let fixture = Fixture::new().await;
    fixture.sign_in("a1", "rt-1", now() + 3600).await;
    fixture.server.push(
        RESPONSES_PATH,
        codex::failed("usage_limit_reached", "You've hit your usage limit."),
    );
    let error = collect(fixture.client().stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        LlmError::Provider {
            provider: PROVIDER,
            kind: Some("usage_limit_reached".to_owned()),
            message: "You've hit your usage limit.".to_owned(),
        }
    );
    fixture
        .server
        .push(RESPONSES_PATH, codex::text_frames(&["par"]).disconnect());
    let error = collect(fixture.client().stream(request(), CancellationToken::new()))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            LlmError::Interrupted { .. } | LlmError::Transport { .. }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn sign_in_attempts_are_one_per_user_and_keep_how_they_ended() {
    use super::login::{Attempt, Logins};
    let fixture = Fixture::new().await;
    fixture
        .server
        .set_fallback(USER_CODE_PATH, codex::user_code("dev", "CODE-9", 0));
    let cancel = CancellationToken::new();
    let code = fixture.sessions.auth().start(&cancel).await.unwrap();
    let logins = Logins::default();
    let stop = CancellationToken::new();
    let first = logins.begin("ann", &code, &stop);
    assert!(matches!(
        logins.attempt("ann"),
        Some(Attempt::Pending { ref user_code, .. }) if user_code == "CODE-9"
    ));
    assert_eq!(logins.attempt("bob"), None);
    // A second start replaces (and cancels) the first; the first's ending is ignored.
    let second = logins.begin("ann", &code, &stop);
    assert!(first.cancel.is_cancelled());
    logins.finish::<()>(&first, &Err(LoginError::Expired));
    assert!(matches!(
        logins.attempt("ann"),
        Some(Attempt::Pending { .. })
    ));
    logins.finish::<()>(&second, &Err(LoginError::Denied("no".to_owned())));
    assert_eq!(
        logins.attempt("ann"),
        Some(Attempt::Failed("the sign-in was refused: no".to_owned()))
    );
    // Success leaves nothing (the stored session is the state); cancel forgets and stops.
    let third = logins.begin("ann", &code, &stop);
    logins.finish(&third, &Ok(()));
    assert_eq!(logins.attempt("ann"), None);
    let fourth = logins.begin("ann", &code, &stop);
    logins.cancel("ann");
    assert!(fourth.cancel.is_cancelled());
    assert_eq!(logins.attempt("ann"), None);
    // A code past its expiry reads as expired and its wait is stopped.
    let mut lapsed = code.clone();
    lapsed.expires_at = chrono::Utc::now() - chrono::Duration::seconds(1);
    let fifth = logins.begin("ann", &lapsed, &stop);
    assert_eq!(logins.attempt("ann"), Some(Attempt::Expired));
    assert!(fifth.cancel.is_cancelled());
    logins.finish::<()>(&fifth, &Err(LoginError::Cancelled));
    assert_eq!(logins.attempt("ann"), Some(Attempt::Expired));
}
