//! `souz-client`: the one client of the Souz daemon, used by the CLI, the MCP stdio bridge, the
//! menu-bar app and the end-to-end tests.
//!
//! - [`home`]: the files of a Souz home a client reads (`daemon.json`, the operator token, the
//!   bridges' client tokens).
//! - [`identity`]: the daemon's proof of identity, checked before any credential is sent.
//! - [`DaemonClient`]: typed calls over the gateway API with the types of `souz-protocol`.
//!   Route groups with many calls have their own module (`memory`, `schedules`).
//! - [`follow`]: the WebSocket event streams (`/v1/events`, `/v1/turns/ws`), with reconnect.
//!
//! Invariants: no credential leaves this crate before the listener proved it is the daemon that
//! knows it ([`DaemonClient::connect`]; the only exception, [`DaemonClient::for_own_daemon`],
//! is for a process that bound the daemon's listener itself); the client never goes through a
//! proxy; a failing response becomes a [`ClientError`], with the daemon's error envelope decoded
//! into [`ClientError::Api`]. It depends on `souz-protocol`, never on `souz-core`.

mod calls;
mod client;
mod error;
pub mod follow;
mod history;
pub mod home;
pub mod identity;
mod memory;
mod schedules;
mod speech;
mod telegram;

pub use client::DaemonClient;
pub use error::ClientError;
pub use follow::{EventStream, Reconnect, StreamItem};
pub use home::{Discovered, Home};
