//! The runtime: `Runtime::start(Config)` wires the daemon's parts together and
//! [`RuntimeHandle`] (a cheap clone) is the only API the adapters (gateway, MCP, CLI, Tauri) use.
//!
//! Lifecycle: one `CancellationToken` is the root of every long-lived task; only the runtime
//! spawns such tasks (through its `TaskTracker`), so `shutdown` can stop and await all of them
//! before closing the database.

pub mod discovery;
pub mod events;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use souz_protocol::{Bootstrap, ComponentStatus, Features, Health, LocalUser, RuntimeEvent};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::llm::service::{Environment, LlmService, LlmServiceError};
use crate::store::{Store, StoreError};
use crate::token::{ApiToken, TokenError};

pub use events::{EventBus, FollowItem};

/// Live events buffered per follower before it is told to resync.
const EVENT_CHANNEL_CAPACITY: usize = 1024;
/// How long shutdown waits for background tasks before closing the database anyway.
const TASK_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The Souz home could not be prepared.
    #[error("cannot prepare the Souz home {path}: {source}")]
    Home {
        /// The home folder.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The token could not be loaded or made.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The LLM layer could not be set up (extra CA files, default model).
    #[error(transparent)]
    Llm(#[from] LlmServiceError),
}

/// The running daemon core. Dropping it without `shutdown` leaves the database to close when
/// the last handle goes.
pub struct Runtime {
    handle: RuntimeHandle,
}

/// Cheap-clone access to the running daemon.
#[derive(Clone)]
pub struct RuntimeHandle {
    state: Arc<State>,
}

struct State {
    config: Config,
    store: Store,
    events: EventBus,
    token: ApiToken,
    llm: LlmService,
    user: LocalUser,
    started: Instant,
    shutdown: CancellationToken,
    stopping: AtomicBool,
    tasks: TaskTracker,
}

impl Runtime {
    /// Prepares the Souz home, the token and the database, then announces the start. Provider
    /// keys may come from the process environment.
    pub async fn start(config: Config) -> Result<Self, RuntimeError> {
        Self::start_with_environment(config, Arc::new(|name: &str| std::env::var(name).ok())).await
    }

    /// [`Runtime::start`] reading environment variables (provider keys) through `environment`.
    pub async fn start_with_environment(
        config: Config,
        environment: Environment,
    ) -> Result<Self, RuntimeError> {
        config
            .paths
            .ensure_home()
            .map_err(|source| RuntimeError::Home {
                path: config.paths.home().display().to_string(),
                source,
            })?;
        let token = ApiToken::load_or_create(&config.paths.token())?;
        let store = Store::open(config.paths.database()).await?;
        let events = EventBus::new(store.clone(), EVENT_CHANNEL_CAPACITY);
        let llm = LlmService::new(
            &config.llm,
            store.clone(),
            config.paths.provider_key_file(),
            environment,
        )?;
        let user = LocalUser {
            id: "local".to_owned(),
            name: std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "local".to_owned()),
        };
        let handle = RuntimeHandle {
            state: Arc::new(State {
                config,
                store,
                events,
                token,
                llm,
                user,
                started: Instant::now(),
                shutdown: CancellationToken::new(),
                stopping: AtomicBool::new(false),
                tasks: TaskTracker::new(),
            }),
        };
        handle
            .events()
            .publish(RuntimeEvent::DaemonStarted {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                pid: std::process::id(),
            })
            .await?;
        Ok(Self { handle })
    }

    /// A handle for adapters.
    pub fn handle(&self) -> RuntimeHandle {
        self.handle.clone()
    }

    /// Announces the stop, cancels every long-lived task, waits for them (bounded), and closes
    /// the database.
    pub async fn shutdown(self, reason: &str) -> Result<(), StoreError> {
        self.handle.begin_shutdown(reason).await;
        let state = &self.handle.state;
        state.tasks.close();
        if tokio::time::timeout(TASK_DRAIN_TIMEOUT, state.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("background tasks did not stop in time; closing anyway");
        }
        state.store.close().await
    }
}

impl RuntimeHandle {
    /// The configuration the runtime started with.
    pub fn config(&self) -> &Config {
        &self.state.config
    }

    /// The database.
    pub fn store(&self) -> &Store {
        &self.state.store
    }

    /// The runtime event bus.
    pub fn events(&self) -> &EventBus {
        &self.state.events
    }

    /// Language models: provider keys, the model registry, clients.
    pub fn llm(&self) -> &LlmService {
        &self.state.llm
    }

    /// Whether `presented` is the API token.
    pub fn verify_token(&self, presented: &str) -> bool {
        self.state.token.matches(presented)
    }

    /// Cancelled when the daemon begins to shut down; long-lived connections watch it.
    pub fn shutdown_signal(&self) -> CancellationToken {
        self.state.shutdown.clone()
    }

    /// Announces the stop (once) and cancels long-lived work; the database stays open until
    /// [`Runtime::shutdown`].
    pub async fn begin_shutdown(&self, reason: &str) {
        if self.state.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        let stopping = RuntimeEvent::DaemonStopping {
            reason: reason.to_owned(),
        };
        if let Err(error) = self.events().publish(stopping).await {
            tracing::warn!(%error, "could not record the stop event");
        }
        self.state.shutdown.cancel();
    }

    /// Spawns a long-lived task that shutdown waits for.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.state.tasks.spawn(task);
    }

    /// Liveness and the state of the daemon's parts.
    pub async fn health(&self) -> Health {
        let database = match self.state.store.ping().await {
            Ok(()) => ComponentStatus {
                ok: true,
                detail: None,
            },
            Err(error) => ComponentStatus {
                ok: false,
                detail: Some(match error {
                    StoreError::Closed => "closed".to_owned(),
                    _ => "not answering".to_owned(),
                }),
            },
        };
        Health {
            status: if database.ok { "ok" } else { "degraded" }.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            uptime_s: self.state.started.elapsed().as_secs(),
            database,
        }
    }

    /// What a client needs before its first real call.
    pub fn bootstrap(&self) -> Bootstrap {
        Bootstrap {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            user: self.state.user.clone(),
            features: Features {
                runtime_events: true,
                ..Features::default()
            },
        }
    }
}
