//! One request through the whole router, as a route's tests send it: the bound Host, a bearer
//! token, an optional JSON body; the answer's status, its JSON (`Null` when it is none) and
//! its text.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::Value;
use tower::ServiceExt;

use crate::gateway::router;
use crate::testing::TestRuntime;

/// The address the router believes it is bound to.
pub(crate) const BOUND: &str = "127.0.0.1:8383";

/// Sends `method path` with `body` as `token`'s bearer to `runtime`'s router.
pub(crate) async fn send_as(
    runtime: &TestRuntime,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value, String) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {token}"));
    let request = match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    }
    .unwrap();
    let response = router(runtime.handle(), BOUND.parse().unwrap())
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    )
}

/// [`send_as`] with the runtime's own operator token.
pub(crate) async fn send(
    runtime: &TestRuntime,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value, String) {
    send_as(runtime, runtime.token(), method, path, body).await
}
