//! End-to-end tests: the real `souz` binary, a temporary `SOUZ_HOME`, real sockets and signals.

mod acp;
mod approvals;
mod bounds;
mod chats;
mod client;
mod codex;
mod config;
mod confinement;
mod crash_loop;
mod credentials;
mod daemon;
mod devices;
mod history_crash;
mod hostile_pages;
mod keys;
mod keys_cli;
#[cfg(feature = "local-llm")]
mod local_llm;
mod mcp;
mod mcp_gateway;
mod mcp_reference;
mod mcp_servers;
mod memory;
mod parked_runs;
mod planting;
mod privileges;
mod questions;
mod restart;
mod reviews;
mod sandbox;
mod schedules;
mod shared_temporary;
mod skill_prompts;
mod skills;
mod telegram;
mod terminal_chat;
