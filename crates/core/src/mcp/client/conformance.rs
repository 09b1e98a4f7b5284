//! A one-shot client for the MCP conformance suite's client side (`conformance client
//! --command "souz-conformance conformance-client" --suite auth`): it connects to a URL the
//! way Souz's MCP client does (the SSRF-safe transport, OAuth from [`super::oauth`]), signs in
//! when the server asks (reading the authorization page's redirect itself, as the browser
//! would bring it to the daemon's callback), lists the tools and calls each once, signing in
//! again with a wider scope when a call is refused for one.
//!
//! Invariants: everything it keeps (the key store, the OAuth credentials) lives in `home`,
//! which the caller owns; a sign-in is retried at most twice per run.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use tokio::sync::Notify;

use super::connection::{self, Connect, ConnectError, Events, Lookup, Session};
use super::oauth::{Flows, Login};
use crate::config::McpServerConfig;
use crate::llm::keys::KeyStore;
use crate::store::Store;

const NAME: &str = "conformance";
/// Never reached: the redirect is read, not followed.
const REDIRECT_URI: &str = "http://127.0.0.1:9/v1/mcp/oauth/callback";

struct Client {
    config: McpServerConfig,
    keys: KeyStore,
    lookup: Lookup,
    home: std::path::PathBuf,
    flows: Flows,
    client_secret: Option<String>,
}

/// Runs the client against `url`; what went wrong, if anything.
/// `preregistered`: a client id (and secret) the authorization server knows, instead of
/// dynamic registration.
pub async fn run_conformance_client(
    url: &str,
    home: &Path,
    preregistered: Option<(String, Option<String>)>,
) -> Result<(), String> {
    let store = Store::open(home.join("souz.db"))
        .await
        .map_err(|error| error.to_string())?;
    let client = Client {
        config: McpServerConfig {
            url: url.to_owned(),
            allow_private_network: true,
            oauth_client_id: preregistered
                .as_ref()
                .map(|(id, _)| id.clone())
                .unwrap_or_default(),
            ..McpServerConfig::default()
        },
        client_secret: preregistered.and_then(|(_, secret)| secret),
        keys: KeyStore::new(store, home.join("provider-keys.key")),
        lookup: Arc::new(|_| None),
        home: home.to_owned(),
        flows: Flows::default(),
    };
    let mut sign_ins = 0;
    let mut session = client.open(&mut sign_ins).await?;
    let tools = loop {
        match session.peer().list_all_tools().await {
            Ok(tools) => break tools,
            Err(error) if error.auth_challenge().is_some() && sign_ins < 2 => {
                sign_ins += 1;
                client
                    .sign_in(error.auth_challenge().map(str::to_owned))
                    .await?;
                let _ = session.close().await;
                session = client.open(&mut sign_ins).await?;
            }
            Err(error) => return Err(format!("tools/list: {error}")),
        }
    };
    for tool in tools {
        let call = || {
            session
                .peer()
                .call_tool(CallToolRequestParams::new(tool.name.to_string()))
        };
        match call().await {
            Err(error) if error.auth_challenge().is_some() && sign_ins < 2 => {
                let challenge = error.auth_challenge().map(str::to_owned);
                sign_ins += 1;
                client.sign_in(challenge).await?;
                let _ = session.close().await;
                session = client.open(&mut sign_ins).await?;
                let _ = session
                    .peer()
                    .call_tool(CallToolRequestParams::new(tool.name.to_string()))
                    .await;
            }
            _ => {}
        }
    }
    let _ = session.close().await;
    Ok(())
}

impl Client {
    async fn connect(&self) -> Result<Session, ConnectError> {
        let events = Events {
            tools_changed: Arc::new(Notify::new()),
            progress: rmcp::handler::client::progress::ProgressDispatcher::new(),
        };
        connection::connect(
            Connect {
                name: NAME,
                config: &self.config,
                lookup: &self.lookup,
                inherited: &[],
                home: &self.home,
                allow_hosts: &[],
                keys: &self.keys,
            },
            events,
        )
        .await
    }

    /// A session, signing in first when the server asks (at most twice in a run).
    async fn open(&self, sign_ins: &mut u32) -> Result<Session, String> {
        loop {
            match self.connect().await {
                Ok(session) => return Ok(session),
                Err(ConnectError {
                    challenge: Some(challenge),
                    ..
                }) if *sign_ins < 2 => {
                    *sign_ins += 1;
                    self.sign_in(Some(challenge)).await?;
                }
                Err(error) => return Err(error.message),
            }
        }
    }

    /// The browser's part: open the authorization page, take its redirect to the daemon's
    /// callback, and complete the flow with it.
    async fn sign_in(&self, challenge: Option<String>) -> Result<(), String> {
        let client = connection::oauth_client(&self.config, &[])?;
        let authorization_url = self
            .flows
            .start(Login {
                server: NAME,
                config: &self.config,
                client,
                keys: &self.keys,
                challenge,
                redirect_uri: REDIRECT_URI.to_owned(),
                client_secret: self.client_secret.clone(),
            })
            .await?;
        let browser = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| error.to_string())?;
        let response = browser
            .get(&authorization_url)
            .send()
            .await
            .map_err(|error| format!("the authorization page: {error}"))?;
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| reqwest::Url::parse(value).ok())
            .ok_or_else(|| format!("the authorization page answered {}", response.status()))?;
        let get = |name: &str| {
            location
                .query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        let (Some(code), Some(state)) = (get("code"), get("state")) else {
            return Err(format!("the redirect has no code: {location}"));
        };
        self.flows
            .complete(&state, &code, get("iss").as_deref())
            .await
            .map(drop)
            .map_err(|error| error.to_string())
    }
}
