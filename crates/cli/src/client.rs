//! A small HTTP client for the running daemon, for the CLI's client commands. Finds the daemon
//! through `daemon.json` (or `[server]` in config.toml) and reads the token from the Souz home.

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;
use souz_core::config::{Config, SouzPaths, process_env};
use souz_core::runtime::discovery;
use souz_core::token::ApiToken;

/// Where the daemon of the Souz home named by the environment listens, and its token.
pub struct Endpoint {
    /// `http://host:port`, from `daemon.json` when the daemon runs, else from config.toml.
    pub base: String,
    /// The bearer token.
    pub token: ApiToken,
}

impl Endpoint {
    /// Reads `daemon.json` (or `[server]` in config.toml) and the token from the Souz home.
    pub fn discover() -> Result<Self> {
        let paths = SouzPaths::resolve(&process_env).map_err(|message| anyhow!(message))?;
        let base = match discovery::read(&paths.daemon_file()) {
            Some(info) => info.url,
            None => {
                let config = Config::load_file(paths.clone(), &paths.config_file(), &process_env)
                    .unwrap_or_else(|_| Config::defaults(paths.clone()));
                format!("http://{}:{}", config.server.host, config.server.port)
            }
        };
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
    /// Connects to the daemon of the Souz home named by the environment.
    pub fn discover() -> Result<Self> {
        let Endpoint { base, token } = Endpoint::discover()?;
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .context("cannot build an HTTP client")?;
        Ok(Self { base, token, http })
    }

    /// The web UI's address with the token in its fragment (never sent to a server).
    pub fn ui_url(&self) -> String {
        format!("{}/app/#token={}", self.base, self.token.expose())
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
