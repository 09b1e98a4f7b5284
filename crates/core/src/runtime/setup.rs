//! First-run setup: whether the person finished (or skipped) it, kept in `daemon_state` so every
//! window and the tray agree, and the probe of local model servers (Ollama, LM Studio,
//! llama.cpp) at their configured endpoints.
//!
//! Invariants:
//! - The probe only talks to loopback endpoints (`127.0.0.1`, `::1`, `localhost`): a
//!   configured remote server is never contacted from here, and the probe never follows
//!   redirects or uses a proxy.
//! - A server counts only when it answers `GET <base>/models` with at least one model within
//!   [`PROBE_TIMEOUT`]; anything else (refused, slow, not JSON) leaves it out.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction};
use souz_protocol::{LocalServer, SetupState};

use crate::config::LlmConfig;
use crate::store::StoreError;
use crate::store::codec::{from_time, to_time};

/// The `daemon_state` key holding when the setup was completed.
const KEY: &str = "setup_completed_at";
/// How long one server may take to list its models.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// The most models listed per server.
const MAX_MODELS: usize = 200;
/// The largest model list read from a server.
const MAX_BODY: usize = 1024 * 1024;

/// The stored setup state.
pub(crate) fn load(connection: &Connection) -> Result<SetupState, StoreError> {
    let value: Option<String> = connection
        .query_row(
            "SELECT value FROM daemon_state WHERE key = ?1",
            [KEY],
            |row| row.get(0),
        )
        .optional()?;
    let completed_at: Option<DateTime<Utc>> = value
        .map(|text| from_time("daemon_state.setup_completed_at", &text))
        .transpose()?;
    Ok(SetupState {
        completed: completed_at.is_some(),
        completed_at,
    })
}

/// Marks the setup completed (keeping the first time) or not yet done.
pub(crate) fn store(transaction: &Transaction<'_>, completed: bool) -> Result<(), StoreError> {
    if completed {
        transaction.execute(
            "INSERT INTO daemon_state (key, value) VALUES (?1, ?2) \
             ON CONFLICT (key) DO NOTHING",
            [KEY, &to_time(crate::store::codec::now())],
        )?;
    } else {
        transaction.execute("DELETE FROM daemon_state WHERE key = ?1", [KEY])?;
    }
    Ok(())
}

/// The local servers configured in `[llm]`, as (provider, base URL).
fn endpoints(config: &LlmConfig) -> [(&'static str, String); 3] {
    [
        ("ollama", config.ollama_base_url.clone()),
        ("lm_studio", config.lm_studio_base_url.clone()),
        ("llama_cpp", config.llama_cpp_base_url.clone()),
    ]
}

/// Whether `base` points at this machine.
pub(crate) fn is_loopback(base: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base.trim()) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// Asks every configured local server for its models, in parallel; lists those that answer.
pub(crate) async fn probe_local_servers(config: &LlmConfig) -> Vec<LocalServer> {
    let Ok(client) = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .connect_timeout(PROBE_TIMEOUT)
        .build()
    else {
        return Vec::new();
    };
    let probes = endpoints(config).map(|(provider, base)| {
        let client = client.clone();
        async move {
            if !is_loopback(&base) {
                return None;
            }
            let models = list_models(&client, &base).await?;
            Some(LocalServer {
                provider: provider.to_owned(),
                base_url: base,
                models,
            })
        }
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// `GET <base>/models` (the OpenAI-compatible list every one of these servers has); `None`
/// unless it answers with at least one model.
async fn list_models(client: &reqwest::Client, base: &str) -> Option<Vec<String>> {
    let url = format!("{}/models", base.trim().trim_end_matches('/'));
    let response = client.get(url).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = crate::llm::http::bounded::read_limited(response, MAX_BODY)
        .await
        .ok()?;
    let models = parse_models(&body);
    (!models.is_empty()).then_some(models)
}

/// The model ids of an OpenAI-style list (`{"data": [{"id": ...}]}`) or Ollama's own
/// (`{"models": [{"name": ...}]}`).
fn parse_models(body: &[u8]) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    let (items, field) = match (value.get("data"), value.get("models")) {
        (Some(serde_json::Value::Array(items)), _) => (items, "id"),
        (_, Some(serde_json::Value::Array(items))) => (items, "name"),
        _ => return Vec::new(),
    };
    items
        .iter()
        .filter_map(|item| item.get(field).and_then(serde_json::Value::as_str))
        .map(str::trim)
        .filter(|name| !name.is_empty() && !name.contains(char::is_control))
        .take(MAX_MODELS)
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_endpoints_are_probed() {
        assert!(is_loopback("http://127.0.0.1:11434/v1"));
        assert!(is_loopback("http://localhost:1234/v1"));
        assert!(is_loopback("http://[::1]:8080/v1"));
        assert!(!is_loopback("http://192.168.1.5:11434/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("http://localhost.evil.example/v1"));
        assert!(!is_loopback("file:///etc/passwd"));
        assert!(!is_loopback("not a url"));
    }

    #[test]
    fn model_lists_of_both_shapes_are_read() {
        let openai = br#"{"object":"list","data":[{"id":"llama3.2"},{"id":"qwen3:8b"},{"x":1}]}"#;
        assert_eq!(parse_models(openai), vec!["llama3.2", "qwen3:8b"]);
        let ollama = br#"{"models":[{"name":"llama3.2:latest"}]}"#;
        assert_eq!(parse_models(ollama), vec!["llama3.2:latest"]);
        assert!(parse_models(b"<html>").is_empty());
        assert!(parse_models(br#"{"data":"nope"}"#).is_empty());
        assert!(parse_models(br#"{"data":[{"id":"bad\nname"}]}"#).is_empty());
    }
}
