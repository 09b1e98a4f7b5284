//! [`DaemonClient`]: one daemon's gateway API over HTTP, with the bearer token.
//!
//! Invariants: a client is made only for a listener that proved it is the daemon
//! ([`DaemonClient::connect`]) or by the process that bound the daemon's listener itself
//! ([`DaemonClient::for_own_daemon`]); every failing answer becomes a [`ClientError`].

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::home::Home;
use crate::identity::{http_client, verify_listener};
use crate::{ClientError, Discovered};

/// A client of one daemon. Cheap to clone.
#[derive(Clone)]
pub struct DaemonClient {
    base: String,
    token: String,
    http: reqwest::Client,
    /// Sent as `X-Souz-Client` (the daemon names the requester by it, e.g. `cli`).
    name: Option<String>,
    /// Whether a new connection must first prove the listener is the daemon again (every
    /// client but the daemon's own: the daemon may have died and something else taken its
    /// port since the last proof).
    proves_listener: bool,
}

impl std::fmt::Debug for DaemonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonClient")
            .field("base", &self.base)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl DaemonClient {
    /// A client of the daemon at `base` (`http://127.0.0.1:8383`) holding `token`, once the
    /// listener there proved it is that daemon; nothing else gets the token.
    pub async fn connect(base: &str, token: &str) -> Result<Self, ClientError> {
        let client = Self {
            proves_listener: true,
            ..Self::unverified(base, token)?
        };
        client.prove_listener().await?;
        Ok(client)
    }

    /// Reads the daemon's address (`daemon.json`, else `fallback()`) and the operator token
    /// from `home`, then [`Self::connect`]s.
    pub async fn discover(
        home: &Home,
        fallback: impl FnOnce() -> String,
    ) -> Result<Self, ClientError> {
        let Discovered { base, token } = home.discover(fallback)?;
        Self::connect(&base, &token).await
    }

    /// A client of the daemon this process runs itself, on the listener it bound: there is
    /// nothing to prove (and the check could not be answered before the gateway serves).
    pub fn for_own_daemon(base: &str, token: &str) -> Result<Self, ClientError> {
        Self::unverified(base, token)
    }

    fn unverified(base: &str, token: &str) -> Result<Self, ClientError> {
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            http: http_client()?,
            name: None,
            proves_listener: false,
        })
    }

    /// Checks again that the listener is the daemon, before a new connection carries the
    /// token (nothing to check for the daemon's own client).
    pub(crate) async fn prove_listener(&self) -> Result<(), ClientError> {
        if self.proves_listener {
            verify_listener(&self.http, &self.base, &self.token).await?;
        }
        Ok(())
    }

    /// Names this client to the daemon (`X-Souz-Client`, e.g. `cli`).
    #[must_use]
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// `http://host:port` of the daemon.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The token this client sends (for the WebSocket followers and the UI link).
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// The web UI's address, opened at `route` (`/queue/<id>`), with the token in its fragment
    /// (never sent to a server).
    pub fn ui_url(&self, route: Option<&str>) -> String {
        let mut url = format!("{}/app/#token={}", self.base, self.token);
        if let Some(route) = route {
            url.push_str("&go=");
            url.push_str(route);
        }
        url
    }

    /// GET `path`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send(self.http.get(self.url(path))).await
    }

    /// PUT `body` to `path`.
    pub async fn put<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        self.send(self.http.put(self.url(path)).json(body)).await
    }

    /// PATCH `body` to `path`.
    pub async fn patch<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        self.send(self.http.patch(self.url(path)).json(body)).await
    }

    /// POST `body` to `path`.
    pub async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        Ok(self.post_with_status(path, body).await?.1)
    }

    /// POST `body` to `path`; returns the status too (`200` or `202`, say).
    pub async fn post_with_status<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<(u16, T), ClientError> {
        let (status, bytes) = self
            .exchange(self.http.post(self.url(path)).json(body))
            .await?;
        Ok((status, decode(&bytes)?))
    }

    /// PUT `body` to `path`; the answer's body, if any, is ignored (`204 No Content`).
    pub async fn put_empty<B: Serialize>(&self, path: &str, body: &B) -> Result<(), ClientError> {
        self.exchange(self.http.put(self.url(path)).json(body))
            .await?;
        Ok(())
    }

    /// POST a `multipart/form-data` body (already framed with `boundary`) to `path`.
    pub async fn post_multipart<T: DeserializeOwned>(
        &self,
        path: &str,
        boundary: &str,
        body: Vec<u8>,
    ) -> Result<T, ClientError> {
        let request = self
            .http
            .post(self.url(path))
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body);
        self.send(request).await
    }

    /// DELETE `path` (the answer's body, if any, is ignored).
    pub async fn delete(&self, path: &str) -> Result<(), ClientError> {
        self.exchange(self.http.delete(self.url(path))).await?;
        Ok(())
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, ClientError> {
        let (_, bytes) = self.exchange(request).await?;
        decode(&bytes)
    }

    /// Sends `request` with the token; the status and body of a successful answer.
    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<(u16, bytes::Bytes), ClientError> {
        let mut request = request.bearer_auth(&self.token);
        if let Some(name) = &self.name {
            request = request.header("X-Souz-Client", name);
        }
        let unreachable = |error: reqwest::Error| ClientError::Unreachable {
            base: self.base.clone(),
            reason: error.to_string(),
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(unreachable)?;
        if !status.is_success() {
            return Err(ClientError::from_failure(status, &bytes));
        }
        Ok((status.as_u16(), bytes))
    }
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ClientError> {
    serde_json::from_slice(bytes).map_err(|error| ClientError::Decode {
        reason: error.to_string(),
    })
}
