//! End-to-end tests: the real `souz` binary, a temporary `SOUZ_HOME`, real sockets and signals.

mod approvals;
mod chats;
mod config;
mod confinement;
mod daemon;
mod keys;
mod mcp;
mod questions;
mod sandbox;
