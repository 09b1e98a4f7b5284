//! The gateway: one axum router over [`RuntimeHandle`] serving the HTTP API, WebSockets and
//! MCP (`/mcp`, see [`crate::mcp::server`]) on one loopback port.
//!
//! `router(handle, bound)` builds everything; `Gateway::bind` + `Gateway::serve` run it with a
//! bounded graceful shutdown. Every request crosses the [`perimeter`] first; [`identity`] says
//! whom it acts for (the local user, or behind a trusted proxy the operator or a proxied user).
//! Routes are added through [`api::ApiRouter`] so the OpenAPI document is generated from the
//! same list.

pub(crate) mod api;
pub(crate) mod client_scope;
pub(crate) mod connections;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod identity;
pub(crate) mod perimeter;
pub(crate) mod recovery;
pub(crate) mod routes;
mod ws;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::from_fn_with_state;
use tokio::net::TcpListener;
use tower::ServiceBuilder;

use self::error::ApiError;
use self::perimeter::Perimeter;
use crate::config::ServerConfig;
use crate::mcp;
use crate::mcp::server::Mount;
use crate::runtime::RuntimeHandle;

/// State shared by every handler.
#[derive(Clone)]
pub struct AppState {
    /// The runtime.
    pub handle: RuntimeHandle,
    /// The generated API documentation.
    pub docs: Arc<ApiDocs>,
}

impl FromRef<AppState> for RuntimeHandle {
    fn from_ref(state: &AppState) -> Self {
        state.handle.clone()
    }
}

/// The API description, from the route registry.
pub struct ApiDocs {
    /// Every route as `METHOD /path`, sorted.
    pub endpoints: Vec<String>,
    operations: Vec<api::Operation>,
    /// Built on the first request: generating every schema costs a few MB of memory at peak
    /// and touches much code, which a daemon that mostly idles should not pay at start.
    openapi: std::sync::OnceLock<bytes::Bytes>,
}

impl ApiDocs {
    /// The OpenAPI 3.1 document, serialized.
    pub fn openapi(&self) -> bytes::Bytes {
        self.openapi
            .get_or_init(|| {
                let document = api::openapi(&self.operations, env!("CARGO_PKG_VERSION"));
                serde_json::to_vec(&document).unwrap_or_default().into()
            })
            .clone()
    }
}

/// The complete router for a gateway bound to `bound`.
pub fn router(handle: RuntimeHandle, bound: SocketAddr) -> Router {
    let (routes, operations) = routes::all().finish();
    let mut endpoints: Vec<String> = operations.iter().map(api::Operation::endpoint).collect();
    endpoints.sort();
    let docs = Arc::new(ApiDocs {
        endpoints,
        operations,
        openapi: std::sync::OnceLock::new(),
    });
    let perimeter = Perimeter::new(&handle.config().server, bound);
    let body_limit = usize::try_from(perimeter.body_limit()).unwrap_or(usize::MAX);
    let mount = Mount {
        allowed_hosts: perimeter.hosts(),
        allowed_origins: perimeter.origins(),
        body_limit,
    };
    let routed = routes
        .route(
            "/mcp",
            mcp::server::route(handle.clone(), &mount, refuse_proxied_mcp),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(AppState {
            handle: handle.clone(),
            docs,
        });
    // The perimeter wraps the router as a whole rather than each route (`Router::layer`): a
    // request then copies the router (an `Arc`) instead of every layer under each one, which
    // was a third of the allocations of an MCP call. It runs for every request, unknown paths
    // included, as it did.
    let guarded = ServiceBuilder::new()
        .layer(from_fn_with_state(perimeter, perimeter::guard))
        .layer(from_fn_with_state(handle, perimeter::authenticate))
        .layer(DefaultBodyLimit::max(body_limit))
        .service(routed);
    Router::new().fallback_service(guarded)
}

/// `/mcp` serves the operator's own MCP clients only: a request carrying the trusted proxy's
/// headers (a proxied user's, or one pretending to be) gets 403 whether or not trusted-proxy
/// mode is on, so a user behind the proxy never reaches the operator's tools through it.
fn refuse_proxied_mcp(headers: &axum::http::HeaderMap) -> Option<axum::response::Response> {
    use axum::response::IntoResponse;
    (headers.contains_key(identity::PROXY_AUTH_HEADER)
        || headers.contains_key(identity::USER_ID_HEADER))
    .then(|| {
        ApiError::forbidden(
            "/mcp serves the daemon's own MCP clients; requests from behind the trusted proxy \
             (X-Souz-Proxy-Auth, X-User-Id) cannot use it.",
        )
        .into_response()
    })
}

async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("No route for {method} {}.", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        souz_protocol::ErrorCode::MethodNotAllowed,
        format!("{} does not accept {method}.", uri.path()),
    )
}

/// Why the gateway could not listen.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Another process owns the port.
    #[error(
        "port {port} on {host} is already in use (is another `souz serve` running?); \
         change [server] port in config.toml or set SOUZ_PORT"
    )]
    InUse {
        /// The host.
        host: String,
        /// The port.
        port: u16,
    },
    /// The configured host is not an address.
    #[error("[server] host `{0}` is not an IP address or `localhost`")]
    BadHost(String),
    /// Any other socket error.
    #[error("cannot listen on {host}:{port}: {source}")]
    Io {
        /// The host.
        host: String,
        /// The port.
        port: u16,
        /// The socket error.
        source: std::io::Error,
    },
}

/// A bound, not yet serving, gateway socket.
pub struct Gateway {
    listener: Arc<TcpListener>,
    address: SocketAddr,
}

impl Gateway {
    /// Binds `[server] host:port`.
    pub async fn bind(server: &ServerConfig) -> Result<Self, BindError> {
        let ip = server
            .ip()
            .ok_or_else(|| BindError::BadHost(server.host.clone()))?;
        let requested = SocketAddr::new(ip, server.port);
        let listener = TcpListener::bind(requested).await.map_err(|source| {
            if source.kind() == std::io::ErrorKind::AddrInUse {
                BindError::InUse {
                    host: server.host.clone(),
                    port: server.port,
                }
            } else {
                BindError::Io {
                    host: server.host.clone(),
                    port: server.port,
                    source,
                }
            }
        })?;
        let address = listener.local_addr().map_err(|source| BindError::Io {
            host: server.host.clone(),
            port: server.port,
            source,
        })?;
        Ok(Self {
            listener: Arc::new(listener),
            address,
        })
    }

    /// The address actually bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Serves until `stop` completes, then stops accepting, tells long-lived connections to
    /// close, and waits up to `[server] shutdown_grace_seconds` for in-flight requests.
    pub async fn serve<F>(self, handle: RuntimeHandle, stop: F) -> std::io::Result<()>
    where
        F: Future<Output = String> + Send + 'static,
    {
        serve_on(self.listener, self.address, handle, stop).await
    }

    /// Serves `handle` like [`serve`](Self::serve), but the socket stays bound after `stop`
    /// (new connections wait in its backlog) so the next runtime serves on the same address:
    /// how the daemon restarts in place.
    pub(crate) async fn serve_round<F>(&self, handle: RuntimeHandle, stop: F) -> std::io::Result<()>
    where
        F: Future<Output = String> + Send + 'static,
    {
        serve_on(Arc::clone(&self.listener), self.address, handle, stop).await
    }
}

/// Serves `handle` on `listener` until `stop`, then drains (the listener is dropped before the
/// drain: when it was the last reference, new connections are refused from then on).
async fn serve_on<F>(
    listener: Arc<TcpListener>,
    address: SocketAddr,
    handle: RuntimeHandle,
    stop: F,
) -> std::io::Result<()>
where
    F: Future<Output = String> + Send + 'static,
{
    let app = router(handle.clone(), address);
    let grace = Duration::from_secs(handle.config().server.shutdown_grace_seconds);
    let draining = Arc::new(tokio::sync::Notify::new());
    let graceful = {
        let draining = Arc::clone(&draining);
        let handle = handle.clone();
        async move {
            let reason = stop.await;
            tracing::info!(%reason, "shutting down: no new connections, draining requests");
            handle.begin_shutdown(&reason).await;
            draining.notify_one();
        }
    };
    let limits = connections::ConnectionLimits {
        max_connections: handle.config().server.max_connections,
        header_read_timeout: Duration::from_secs(
            handle.config().server.header_read_timeout_seconds,
        ),
    };
    let server = connections::serve(listener, app, limits, graceful);
    tokio::select! {
        () = server => Ok(()),
        () = async {
            draining.notified().await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!(seconds = grace.as_secs(), "requests still running after the grace period; stopping anyway");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
