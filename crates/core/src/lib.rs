//! Souz core: all domain logic and the gateway. Never depends on Tauri.
//!
//! Imports point down only: (`gateway`, `mcp::server`) -> `runtime` -> `chat` -> `agent` ->
//! (`llm`, `graph`, `tools`) -> (`approvals`, `sandbox`, `store`, `token`) -> `config` ->
//! `souz_protocol`. `telemetry` is used by binaries only. See `docs/architecture.md`.

pub mod agent;
pub mod approvals;
pub mod chat;
pub mod config;
pub mod gateway;
pub mod graph;
pub mod llm;
pub mod mcp;
pub mod runtime;
pub mod sandbox;
pub mod store;
pub mod telemetry;
pub mod token;
pub mod tools;

pub use runtime::{Runtime, RuntimeError, RuntimeHandle, RuntimeOptions};

/// The id of the person at this machine: the one user of a daemon without trusted-proxy mode,
/// and the owner of everything stored before that mode was switched on. Reserved: a trusted
/// proxy cannot name it.
pub const LOCAL_USER: &str = "local";
