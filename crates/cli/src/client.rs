//! A small HTTP client for the running daemon, for the CLI's client commands. Finds the daemon
//! through `daemon.json` (or `[server]` in config.toml) and reads the token from the Souz home.
//!
//! Invariant: no credential is sent to a listener before it proved to be the daemon
//! ([`verify_listener`]: `GET /v1/identity` answered with an HMAC only the holder of the
//! token's digest can compute). Whatever else listens on the port gets no token.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;
use souz_core::config::{Config, SouzPaths, process_env};
use souz_core::runtime::discovery;
use souz_core::token::{ApiToken, proof};
use souz_protocol::IdentityProof;

/// How long the identity check may take.
const IDENTITY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a listener was not trusted with a credential.
#[derive(Debug, thiserror::Error)]
pub enum ListenerError {
    /// Nothing answered at the address.
    #[error("cannot reach Souz at {base} ({reason}); start it with `souz serve`")]
    Unreachable {
        /// `http://host:port`.
        base: String,
        /// What failed.
        reason: String,
    },
    /// Something answered, but it could not prove it is the daemon holding this token.
    #[error(
        "something else is listening on {host}; it is not Souz (or not the Souz this token \
         belongs to: {detail}); not sending the token"
    )]
    NotSouz {
        /// `host:port`.
        host: String,
        /// What went wrong with the proof.
        detail: String,
    },
}

/// `host:port` of `base` (`http://host:port`), as the `Host` header names it.
fn host_of(base: &str) -> &str {
    base.trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/')
}

/// Checks that the listener at `base` is the Souz daemon that knows `token`, without sending
/// the token: it must answer a fresh nonce with the HMAC keyed by the token's digest.
pub async fn verify_listener(
    http: &reqwest::Client,
    base: &str,
    token: &str,
) -> Result<(), ListenerError> {
    let host = host_of(base).to_owned();
    let not_souz = |detail: String| ListenerError::NotSouz {
        host: host.clone(),
        detail,
    };
    let digest = proof::digest(token);
    let nonce = proof::new_nonce().map_err(|error| not_souz(format!("no randomness: {error}")))?;
    let url = format!(
        "{base}/v1/identity?nonce={nonce}&key={}",
        proof::key_id(&digest)
    );
    let response = http
        .get(url)
        .timeout(IDENTITY_TIMEOUT)
        .send()
        .await
        .map_err(|error| ListenerError::Unreachable {
            base: base.to_owned(),
            reason: error.to_string(),
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(not_souz(format!(
            "it answered the identity check with {status}; a revoked token gets 404"
        )));
    }
    let answer: IdentityProof = response
        .json()
        .await
        .map_err(|_| not_souz("it answered the identity check with no proof".to_owned()))?;
    if !proof::verify(&digest, &nonce, &host, &answer.proof) {
        return Err(not_souz("its proof of identity is wrong".to_owned()));
    }
    Ok(())
}

/// An HTTP client for the daemon (never through a proxy).
pub fn http_client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .context("cannot build an HTTP client")
}

/// Where the daemon of the Souz home named by the environment listens, and its token.
pub struct Endpoint {
    /// `http://host:port`, from `daemon.json` when the daemon runs, else from config.toml.
    pub base: String,
    /// The bearer token.
    pub token: ApiToken,
}

impl Endpoint {
    /// The Souz home named by the environment.
    pub fn paths() -> Result<SouzPaths> {
        SouzPaths::resolve(&process_env).map_err(|message| anyhow!(message))
    }

    /// Where the daemon of `paths` listens: `daemon.json`, else `[server]` in config.toml.
    pub fn base(paths: &SouzPaths) -> String {
        match discovery::read(&paths.daemon_file()) {
            Some(info) => info.url,
            None => {
                let config = Config::load_file(paths.clone(), &paths.config_file(), &process_env)
                    .unwrap_or_else(|_| Config::defaults(paths.clone()));
                format!("http://{}:{}", config.server.host, config.server.port)
            }
        }
    }

    /// Reads `daemon.json` (or `[server]` in config.toml) and the token from the Souz home.
    pub fn discover() -> Result<Self> {
        let paths = Self::paths()?;
        let base = Self::base(&paths);
        let token = ApiToken::load(&paths.token()).with_context(|| {
            format!(
                "cannot read the token in {}; has `souz serve` ever run?",
                paths.home().display()
            )
        })?;
        Ok(Self { base, token })
    }
}

/// A client of the local daemon.
pub struct DaemonClient {
    base: String,
    token: ApiToken,
    http: reqwest::Client,
}

impl DaemonClient {
    /// Connects to the daemon of the Souz home named by the environment, once it proved it is
    /// the daemon ([`verify_listener`]).
    pub async fn discover() -> Result<Self> {
        let Endpoint { base, token } = Endpoint::discover()?;
        let http = http_client()?;
        verify_listener(&http, &base, token.expose()).await?;
        Ok(Self { base, token, http })
    }

    /// `http://host:port` of the daemon.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The web UI's address with the token in its fragment (never sent to a server).
    pub fn ui_url(&self) -> String {
        format!("{}/app/#token={}", self.base, self.token.expose())
    }

    /// The web UI's address with a one-time sign-in code (valid once, for about a minute), so
    /// the token never appears in the browser's process arguments.
    pub async fn ui_code_url(&self) -> Result<String> {
        let (_, code): (u16, souz_protocol::UiCode) =
            self.post("/v1/ui-codes", &serde_json::json!({})).await?;
        Ok(format!("{}/app/#code={}", self.base, code.code))
    }

    /// PUT `path`.
    pub async fn put<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T> {
        self.send(self.http.put(self.url(path)).json(body)).await
    }

    /// GET `path`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.send(self.http.get(self.url(path))).await
    }

    /// POST `body` to `path`; returns the status too.
    pub async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<(u16, T)> {
        let response = self
            .authorized(self.http.post(self.url(path)).json(body))
            .send()
            .await
            .map_err(|error| self.unreachable(error))?;
        let status = response.status().as_u16();
        Ok((status, Self::decode(response).await?))
    }

    /// DELETE `path`.
    pub async fn delete(&self, path: &str) -> Result<()> {
        let response = self
            .authorized(self.http.delete(self.url(path)))
            .send()
            .await
            .map_err(|error| self.unreachable(error))?;
        if response.status().is_success() {
            return Ok(());
        }
        Err(Self::error(response).await)
    }

    /// The item at `{collection}/{id}`, where `id` may be the start of an id as the lists print
    /// it: a full id is fetched at once, else it is matched ([`resolve_prefix`]) against the ids
    /// `ids` reads from the first 500 items of the list at `collection`. `what` names the items
    /// in errors.
    pub async fn find<T: DeserializeOwned, L: DeserializeOwned>(
        &self,
        what: &str,
        collection: &str,
        id: &str,
        ids: impl Fn(&L) -> Vec<&str>,
    ) -> Result<T> {
        if let Ok(item) = self.get::<T>(&format!("{collection}/{id}")).await {
            return Ok(item);
        }
        let list: L = self.get(&format!("{collection}?limit=500")).await?;
        let full = resolve_prefix(what, id, ids(&list).into_iter())?;
        self.get(&format!("{collection}/{full}")).await
    }

    async fn send<T: DeserializeOwned>(&self, request: reqwest::RequestBuilder) -> Result<T> {
        let response = self
            .authorized(request)
            .send()
            .await
            .map_err(|error| self.unreachable(error))?;
        Self::decode(response).await
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request
            .bearer_auth(self.token.expose())
            .header("X-Souz-Client", "cli")
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn unreachable(&self, error: reqwest::Error) -> anyhow::Error {
        anyhow!(
            "cannot reach Souz at {} ({error}); start it with `souz serve`",
            self.base
        )
    }

    async fn decode<T: DeserializeOwned>(response: reqwest::Response) -> Result<T> {
        if !response.status().is_success() {
            return Err(Self::error(response).await);
        }
        response
            .json()
            .await
            .context("the daemon sent an unexpected answer")
    }

    async fn error(response: reqwest::Response) -> anyhow::Error {
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        match body["error"]["message"].as_str() {
            Some(message) => anyhow!("{message} ({status})"),
            None => anyhow!("the daemon answered {status}"),
        }
    }
}

/// Finds the one id in `ids` that starts with `prefix` (full ids match exactly; a trailing
/// `…`, as the lists print shortened ids, is ignored). `what` names the ids in the error
/// (`approval`, `grant`, `question`).
pub fn resolve_prefix<'a>(
    what: &str,
    prefix: &str,
    ids: impl Iterator<Item = &'a str>,
) -> Result<String> {
    let prefix = prefix.trim().trim_end_matches('…');
    if prefix.is_empty() {
        bail!("give a {what} id (or the start of one)");
    }
    let matches: Vec<&str> = ids.filter(|id| id.starts_with(prefix)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => bail!("no {what} id starts with `{prefix}`"),
        many => bail!(
            "`{prefix}` matches {} ids; give more characters",
            many.len()
        ),
    }
}
