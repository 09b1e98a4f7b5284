//! Souz core: all domain logic and the gateway. Never depends on Tauri.
//!
//! Its modules form the layers of [`LAYERS`], bottom to top; imports point down (or within a
//! layer) only, and the `layering` test fails on any that points up. `docs/architecture.md`
//! draws the same table.
//!
//! Its public surface is what the adapters (CLI, app, end-to-end tests, benches) use; every
//! other item is `pub(crate)` and `unreachable_pub` keeps it so.

#![warn(unreachable_pub)]

pub mod agent;
pub mod approvals;
pub(crate) mod bus;
pub mod channels;
pub mod chat;
pub mod config;
pub mod gateway;
pub(crate) mod graph;
pub mod history;
pub mod host;
pub mod llm;
pub mod mcp;
pub mod memory;
pub(crate) mod redact;
pub mod runtime;
pub mod sandbox;
pub(crate) mod schedules;
pub(crate) mod shell;
pub(crate) mod skills;
pub mod speech;
pub mod store;
pub(crate) mod tasks;
pub mod telemetry;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod token;
pub mod tools;
pub mod voice;

#[cfg(test)]
mod layering;

pub use runtime::{Runtime, RuntimeError, RuntimeHandle, RuntimeOptions};

/// The layers of this crate, bottom to top, each a list of modules (`module::submodule` where a
/// part of a module sits in another layer than the rest: the most specific entry counts). A
/// module may use its own layer and the layers below it, never one above.
pub const LAYERS: &[&[&str]] = &[
    // Pure text functions: the shell lexer, redaction of secrets. File access beneath a folder
    // handle that follows no link (the walk, and the daemon's own files on top of it), which
    // imports nothing from the crate, so `config` and `token` write through it too. The
    // runtime's task tracker, which every service spawns its background tasks on.
    &[
        "shell",
        "tasks",
        "redact",
        "sandbox::beneath::walk",
        "sandbox::beneath::daemon_file",
    ],
    // `config.toml`, paths, the environment registry.
    &["config"],
    // SQLite and credentials.
    &["store", "token"],
    // The event bus, its followers, the pause switch.
    &["bus"],
    &["telemetry"],
    // Roots, checked paths, the command runner, confinement, the web client.
    &["sandbox"],
    // The policy and what it matches on, the pending queue, grants, audit.
    &["approvals"],
    // The history of file changes: checkpoints the gate records around a file tool's write,
    // kept contents, limits, reconciliation after a crash.
    &["history"],
    // The tool trait, the catalog, the gate, built-in tools.
    &["tools"],
    // Undo of recorded changes (it writes and trashes with the file tools' helpers).
    // Applying reviewed changes (it makes staged calls again through the gate).
    &["history::undo", "history::tests", "history::review::apply"],
    // File-backed skills: bundles, validation, the registry.
    &["skills"],
    &["llm"],
    // Spoken answers: the voices (a provider's speech API with its key, this machine's voice
    // run through the command runner).
    &["voice"],
    // Speech to text: decoding uploads, the engines (in process, and the servers through the
    // providers' keys and HTTP client).
    &["speech"],
    &["graph"],
    // What agents use through a trait: memory, and `mcp` without its server (the MCP client).
    &["memory", "mcp"],
    // The agents, bottom to top within: a submodule uses the ones on its own line and above.
    // Events, the model's choice, prompts, steering, which agent.
    &[
        "agent::events",
        "agent::models",
        "agent::prompts",
        "agent::steering",
        "agent::kind",
    ],
    // The core tools' names and results; the outside sources a turn draws on.
    &["agent::core_tool_types", "agent::sources"],
    // The history's view of a turn; turns as stored, and their trace.
    &["agent::context"],
    &["agent::ask_user", "agent::sessions", "agent::trace"],
    // Long-term memory as agents see it, Knowledge, one call through the gate, the tools of the
    // device that submitted the turn (called through the gate).
    &[
        "agent::memory",
        "agent::knowledge",
        "agent::gate_call",
        "agent::client_tools",
    ],
    &["agent::skills"],
    // The core tools; what a chat's agent offers (catalog, external and core tools).
    &["agent::core_tools", "agent::offered"],
    // What a turn may spend, and the watch that notices it is stuck.
    &["agent::limits"],
    // What one turn's nodes share, the routing of the model's calls, the nodes, how a turn
    // ends, the graphs.
    &["agent::scope"],
    &["agent::dispatch"],
    &["agent::nodes"],
    &["agent::ending"],
    &["agent::graphs"],
    &["agent"],
    &["chat"],
    // Scheduled runs: specs, the clock, claims, the engine; a fire is a chat execution. The
    // channels' rows (offset, link, audit), which the runtime's facade reads and writes; the
    // channel tools, which the runtime puts in the catalog and a running channel binds.
    &["schedules", "channels::store", "channels::tools"],
    // `Runtime::start` and `RuntimeHandle`, the facade of the adapters.
    &["runtime"],
    // The adapters, the channels (chat apps such as Telegram, over the facade like the
    // adapters), and the test kit (which may use everything; test modules of any layer may use
    // it).
    &["gateway", "mcp::server", "channels", "testing"],
    // The daemon's lifecycle over the runtime and the gateway, which `souz serve` and the app
    // both run.
    &["host"],
];

/// The id of the person at this machine: the one user of a daemon without trusted-proxy mode,
/// and the owner of everything stored before that mode was switched on. Reserved: a trusted
/// proxy cannot name it.
pub const LOCAL_USER: &str = "local";
