//! The daemon host: the one lifecycle of a Souz daemon, whichever binary runs it (`souz serve`,
//! the menu-bar app). Load `config.toml` or enter recovery mode, scrub the environment, bind,
//! start the runtime, serve, restart in place, stop on signals or when told: written here
//! once, with the binaries' differences as options of [`DaemonHostBuilder`].
//!
//! ```text
//! prepare_process()                      once, before any thread or secret
//! DaemonHost::builder(source)            the options
//!     .load()        -> DaemonHost       config or recovery; environment scrub (sync)
//!     .start().await -> RunningDaemon    signals, bind, runtime (or recovery), daemon.json
//!     .serve_until(shutdown).await       rounds until a signal or `shutdown`; daemon.json gone
//! ```
//!
//! Invariants:
//! - The socket is bound before the database is opened (a port in use touches nothing), and
//!   stays bound across recovery and every restart: clients see one address for the daemon's
//!   life, and connections made during a restart wait in the backlog.
//! - Signal handlers (when asked for) are installed before the socket is bound, so a signal
//!   sent right after the first healthy answer never meets the default action.
//! - `daemon.json` names this process while it serves, and is removed (only if it still names
//!   this process) however serving ends.
//! - A restart reads `config.toml` again; when the file has problems by then, the next round
//!   runs with the configuration of the round before.

mod running;
mod stop;

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{Config, ConfigError, Problem, SouzPaths, process_lookup};
use crate::gateway::BindError;
use crate::llm::service::Environment;
use crate::mcp::extension::McpExtension;
use crate::runtime::RuntimeError;
use crate::sandbox::daemon_process;
use crate::store::StoreError;
use crate::token::TokenError;

pub use self::running::{HostState, RunningDaemon};

/// Makes large freed blocks go back to the system at once (glibc; a no-op elsewhere): what
/// [`prepare_process`] does first, for benchmarks that measure memory as the daemon holds it.
pub use crate::runtime::allocator::return_large_blocks;

/// Prepares this process to be a daemon: freed large blocks go back to the system, and the
/// process is closed to other processes of the same user (not dumpable). Call once, first
/// thing in `main`, before any thread allocates and before any secret is read.
pub fn prepare_process() -> Result<(), HostError> {
    return_large_blocks();
    daemon_process::protect().map_err(HostError::Protect)
}

/// Why the daemon could not start, or how serving failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The process could not be made non-dumpable.
    #[error("cannot protect the daemon's memory: {0}")]
    Protect(std::io::Error),
    /// The configuration could not be read (no home, an unreadable file); not its problems.
    #[error("{0}")]
    Config(ConfigError),
    /// `config.toml` has problems that recovery mode cannot fix: the environment's overrides
    /// have problems too, and there is nothing to edit. Shows every problem of the file.
    #[error("{0}")]
    Unrecoverable(ConfigError),
    /// The socket could not be bound.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// The runtime could not start (first, after recovery, or after a restart).
    #[error("{0}")]
    Start(#[from] RuntimeError),
    /// The operator token could not be loaded or made.
    #[error("cannot load the token: {0}")]
    Token(#[from] TokenError),
    /// Serving failed.
    #[error("server error: {0}")]
    Serve(std::io::Error),
    /// The database did not close cleanly.
    #[error("could not close the database cleanly: {0}")]
    Close(#[from] StoreError),
}

/// Where the configuration comes from: at start and again at every restart.
#[derive(Clone)]
pub enum ConfigSource {
    /// The process environment: `config.toml` of the Souz home it names, with its overrides.
    Process,
    /// This environment instead (tests, embedders): the home, the overrides, and the provider
    /// keys the runtime reads.
    Lookup(Environment),
}

impl ConfigSource {
    /// The environment's value of `name`.
    fn get(&self, name: &str) -> Option<String> {
        match self {
            Self::Process => process_lookup(name),
            Self::Lookup(lookup) => lookup(name),
        }
    }

    /// `config.toml` as the source gives it.
    fn load(&self) -> Result<Config, ConfigError> {
        Config::load(&|name| self.get(name))
    }

    /// How the daemon starts: the configuration, or recovery mode when the file has problems.
    fn startup(&self) -> Result<Startup, HostError> {
        let problems = match self.load() {
            Ok(config) => return Ok(Startup::Normal(Box::new(config))),
            Err(ConfigError::Problems(problems)) => problems,
            Err(other) => return Err(HostError::Config(other)),
        };
        let env = |name: &str| self.get(name);
        let paths = SouzPaths::resolve(&env).map_err(|error| {
            HostError::Config(ConfigError::NoHome(error)) // resolved a moment ago: unlikely
        })?;
        let file = paths.config_file();
        // Problems of the environment's overrides remain without the file: nothing to edit
        // in recovery mode, so the daemon does not start.
        match Config::parse(paths, &file, "", &env) {
            Ok(base) => Ok(Startup::Recovery {
                base: Box::new(base),
                problems,
            }),
            Err(_) => Err(HostError::Unrecoverable(ConfigError::Problems(problems))),
        }
    }
}

/// How the daemon starts: with a valid configuration, or in recovery mode.
#[derive(Debug)]
pub enum Startup {
    /// `config.toml` is valid.
    Normal(Box<Config>),
    /// `config.toml` has `problems`; `base` is the defaults with the environment's overrides:
    /// what recovery mode binds and validates a new file against.
    Recovery {
        /// The defaults with the environment's overrides.
        base: Box<Config>,
        /// The file's problems.
        problems: Vec<Problem>,
    },
}

impl Startup {
    /// The configuration the daemon binds and logs with (in recovery mode: the base).
    pub fn config(&self) -> &Config {
        match self {
            Self::Normal(config) | Self::Recovery { base: config, .. } => config,
        }
    }

    /// The problems of `config.toml` when starting in recovery mode.
    pub fn problems(&self) -> Option<&[Problem]> {
        match self {
            Self::Normal(_) => None,
            Self::Recovery { problems, .. } => Some(problems),
        }
    }
}

/// What differs between the binaries that host the daemon.
#[derive(Clone, Default)]
struct HostOptions {
    scrub_environment: bool,
    stop_on_signals: bool,
    sandbox_helper: Option<PathBuf>,
    mcp_extension: Option<Arc<dyn McpExtension>>,
    /// Appended to the lifecycle's log lines (` (in the app)`).
    log_suffix: String,
}

/// The options of a daemon host; [`load`](Self::load) reads the configuration.
pub struct DaemonHostBuilder {
    source: ConfigSource,
    options: HostOptions,
}

impl DaemonHostBuilder {
    /// Replaces the process's environment by a snapshot, and overwrites the values of secret
    /// variables in its initial environment block (what `/proc/<pid>/environ` shows). Only
    /// where no other thread reads the environment yet when [`load`](Self::load) runs: `souz
    /// serve` before its async runtime starts, not the app.
    pub fn scrub_environment(mut self) -> Self {
        self.options.scrub_environment = true;
        self
    }

    /// Stops the daemon on SIGINT and SIGTERM (Ctrl-C elsewhere) as well as on the
    /// `shutdown` given to [`RunningDaemon::serve_until`]; the handlers are installed when
    /// [`DaemonHost::start`] binds.
    pub fn stop_on_signals(mut self) -> Self {
        self.options.stop_on_signals = true;
        self
    }

    /// The binary implementing the hidden sandbox-helper subcommand; without one, commands
    /// are not confined by Landlock on Linux (`GET /health` says so).
    pub fn sandbox_helper(mut self, helper: Option<PathBuf>) -> Self {
        self.options.sandbox_helper = helper;
        self
    }

    /// What the MCP server serves beside Souz's tools (the conformance suite's fixtures).
    pub fn mcp_extension(mut self, extension: Option<Arc<dyn McpExtension>>) -> Self {
        self.options.mcp_extension = extension;
        self
    }

    /// Names where the daemon runs in the lifecycle's log lines (`"in the app"`).
    pub fn log_context(mut self, context: &str) -> Self {
        self.options.log_suffix = format!(" ({context})");
        self
    }

    /// Reads the configuration (recovery mode when `config.toml` has problems), then scrubs
    /// the environment if asked. Synchronous: it runs before the async runtime starts.
    pub fn load(self) -> Result<DaemonHost, HostError> {
        let startup = self.source.startup()?;
        let mut environment = match &self.source {
            ConfigSource::Process => None,
            ConfigSource::Lookup(lookup) => Some(Arc::clone(lookup)),
        };
        let mut scrubbed = None;
        if self.options.scrub_environment {
            // The configuration has been read; no thread reads the environment yet. From here
            // on the daemon reads a snapshot, and secret values are gone from the block.
            environment = Some(daemon_process::environment_snapshot());
            scrubbed = Some(daemon_process::scrub_environment());
        }
        Ok(DaemonHost {
            source: self.source,
            options: self.options,
            startup,
            environment,
            scrubbed,
        })
    }

    /// [`load`](Self::load), then [`DaemonHost::start`].
    pub async fn start(self) -> Result<RunningDaemon, HostError> {
        self.load()?.start().await
    }
}

/// A daemon whose configuration is read, not yet bound.
pub struct DaemonHost {
    source: ConfigSource,
    options: HostOptions,
    startup: Startup,
    /// What the runtime reads provider keys from (`None`: the process environment).
    environment: Option<Environment>,
    /// The outcome of the environment scrub, logged once logging is up.
    scrubbed: Option<std::io::Result<Vec<String>>>,
}

impl DaemonHost {
    /// A host reading its configuration from `source`.
    pub fn builder(source: ConfigSource) -> DaemonHostBuilder {
        DaemonHostBuilder {
            source,
            options: HostOptions::default(),
        }
    }

    /// How it starts: normally or in recovery mode.
    pub fn startup(&self) -> &Startup {
        &self.startup
    }

    /// The configuration it binds and logs with.
    pub fn config(&self) -> &Config {
        self.startup.config()
    }
}

#[cfg(test)]
mod tests;
