//! First-run setup: whether the person finished (or skipped) it, kept in `daemon_state` so every
//! window and the tray agree, and the probe of model servers (Ollama, LM Studio, llama.cpp):
//! at their configured endpoints, and at an address the person types ([`probe`]).
//!
//! Invariants:
//! - A probe only talks to local destinations (this computer or a local network, see
//!   [`probe`]): a configured remote server is never contacted from here, and the probe never
//!   follows redirects or uses a proxy.
//! - A configured server counts only when it answers `GET <base>/models` with at least one
//!   model within [`probe::PROBE_TIMEOUT`]; anything else (refused, slow, not JSON) leaves it out.

mod probe;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction};
use souz_protocol::{LocalServer, LocalServerProbe, SetupState};

use crate::config::LlmConfig;
use crate::store::StoreError;
use crate::store::codec::{from_time, to_time};

/// The `daemon_state` key holding when the setup was completed.
const KEY: &str = "setup_completed_at";

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

/// Asks every configured local server for its models, in parallel; lists those that answer.
pub(crate) async fn probe_local_servers(config: &LlmConfig) -> Vec<LocalServer> {
    let probes = endpoints(config).map(|(provider, base)| async move {
        let models = probe::configured_server(&base).await?;
        Some(LocalServer {
            provider: provider.to_owned(),
            base_url: base,
            models,
        })
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// What answers at the address a person typed (see [`probe::typed_server`]).
pub(crate) async fn probe_typed_server(typed: &str) -> LocalServerProbe {
    probe::typed_server(typed).await
}
