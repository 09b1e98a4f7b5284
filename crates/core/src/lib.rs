//! Souz core: all domain logic and the gateway. Never depends on Tauri.
//!
//! Imports point down only: `gateway` -> `runtime` -> (`store`, `telemetry`, `token`) ->
//! `config` -> `souz_protocol`. See `docs/architecture.md`.

pub mod config;
