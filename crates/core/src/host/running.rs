//! A bound daemon: [`DaemonHost::start`] binds and starts the first runtime (or recovery mode);
//! [`RunningDaemon::serve_until`] serves round after round on the same socket until it is told
//! to stop, then closes the socket and removes `daemon.json`.
//!
//! A round is one runtime: `POST /v1/restart` ends it and the next starts with `config.toml`
//! read again; a stop ends the last. Recovery mode, when the file had problems at start, comes
//! before the first round and ends with the first valid file saved.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use souz_protocol::DaemonInfo;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::stop::{self, StopFuture, StopLatch};
use super::{ConfigSource, DaemonHost, HostError, HostOptions, Startup};
use crate::config::{Config, Problem, SouzPaths};
use crate::gateway::Gateway;
use crate::gateway::recovery::RecoveryEnd;
use crate::llm::service::Environment;
use crate::runtime::{Runtime, RuntimeOptions, discovery};
use crate::token::ApiToken;

/// Where a running daemon is in its life (watch it with [`RunningDaemon::states`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostState {
    /// `config.toml` has problems: only the UI, health and the config routes answer.
    Recovering,
    /// A runtime serves.
    Serving,
    /// A restart was asked for: the runtime stopped, the next one is starting.
    Restarting,
    /// Serving ended; the socket is closed.
    Stopped,
}

/// What the socket serves next.
enum Phase {
    /// Recovery mode over `base` until a valid file is saved.
    Recovering {
        base: Box<Config>,
        problems: Vec<Problem>,
        token: ApiToken,
    },
    /// A runtime.
    Serving(Round),
}

/// One runtime and what asks it to restart.
struct Round {
    runtime: Runtime,
    restart: CancellationToken,
}

/// What stays the same across rounds.
struct Hosted {
    gateway: Gateway,
    url: String,
    paths: SouzPaths,
    source: ConfigSource,
    options: HostOptions,
    environment: Option<Environment>,
    state: watch::Sender<HostState>,
}

/// A bound daemon, serving once [`serve_until`](Self::serve_until) runs (connections wait in
/// the socket's backlog until then).
pub struct RunningDaemon {
    hosted: Hosted,
    phase: Phase,
    /// The stop signals, when asked for (installed already).
    signals: Option<StopFuture>,
}

impl DaemonHost {
    /// Installs the signal handlers (if asked for), binds `[server]`, then starts the runtime
    /// and writes `daemon.json`; in recovery mode loads (or makes) the operator token instead of
    /// starting a runtime. A port in use is [`HostError::Bind`] with `BindError::InUse`, and
    /// nothing was written.
    pub async fn start(self) -> Result<RunningDaemon, HostError> {
        let DaemonHost {
            source,
            options,
            startup,
            environment,
            scrubbed,
        } = self;
        match scrubbed {
            Some(Ok(names)) if !names.is_empty() => {
                tracing::info!(variables = ?names, "secret variables removed from the environment block");
            }
            Some(Err(error)) => {
                tracing::warn!(%error, "could not scrub secrets from the environment block");
            }
            Some(Ok(_)) | None => {}
        }
        let server = &startup.config().server;
        if !server.ip().is_some_and(|ip| ip.is_loopback()) {
            tracing::warn!(
                host = %server.host,
                "listening on a non-loopback address: anyone who can reach this port and has the token can use your tools"
            );
        }
        let signals = options.stop_on_signals.then(stop::signals);
        // Bind before opening the database, so "port in use" touches nothing.
        let gateway = Gateway::bind(server).await?;
        let (state, _) = watch::channel(HostState::Serving);
        let hosted = Hosted {
            url: format!("http://{}", gateway.local_addr()),
            gateway,
            paths: startup.config().paths.clone(),
            source,
            options,
            environment,
            state,
        };
        let phase = match startup {
            Startup::Normal(config) => Phase::Serving(hosted.begin_round(*config).await?),
            Startup::Recovery { base, problems } => {
                let token = ApiToken::load_or_create(&base.paths.token())?;
                hosted.state.send_replace(HostState::Recovering);
                hosted.announce();
                tracing::warn!(
                    url = %hosted.url,
                    problems = problems.len(),
                    "config.toml has problems: recovery mode (UI, health and config routes only){}",
                    hosted.options.log_suffix
                );
                Phase::Recovering {
                    base,
                    problems,
                    token,
                }
            }
        };
        Ok(RunningDaemon {
            hosted,
            phase,
            signals,
        })
    }
}

impl RunningDaemon {
    /// The daemon's base URL (`http://127.0.0.1:<port>`, the port actually bound).
    pub fn url(&self) -> &str {
        &self.hosted.url
    }

    /// The address actually bound.
    pub fn address(&self) -> SocketAddr {
        self.hosted.gateway.local_addr()
    }

    /// Whether it serves recovery mode first (`config.toml` has problems).
    pub fn is_recovering(&self) -> bool {
        matches!(self.phase, Phase::Recovering { .. })
    }

    /// The operator token of its Souz home (what the embedding app's own client uses).
    pub fn token(&self) -> Result<ApiToken, HostError> {
        Ok(ApiToken::load(&self.hosted.paths.token())?)
    }

    /// Follows its state: recovery, serving, restarting, stopped.
    pub fn states(&self) -> watch::Receiver<HostState> {
        self.hosted.state.subscribe()
    }

    /// Serves until `shutdown` resolves (with the reason to log) or, with
    /// [`stop_on_signals`](super::DaemonHostBuilder::stop_on_signals), a signal arrives; then
    /// stops accepting, drains requests (bounded by `[server] shutdown_grace_seconds`), closes
    /// the database and the socket, and removes `daemon.json`.
    pub async fn serve_until<F>(self, shutdown: F) -> Result<(), HostError>
    where
        F: Future<Output = String>,
    {
        let RunningDaemon {
            mut hosted,
            phase,
            signals,
        } = self;
        let latch = Arc::new(StopLatch::default());
        let watcher = {
            let latch = Arc::clone(&latch);
            async move {
                let reason = match signals {
                    Some(signals) => tokio::select! {
                        reason = shutdown => reason,
                        reason = signals => reason,
                    },
                    None => shutdown.await,
                };
                latch.trigger(reason);
                // The latch holds the stop now; the rounds below end on it.
                std::future::pending::<Infallible>().await
            }
        };
        let result = tokio::select! {
            result = hosted.serve(phase, &latch) => result,
            never = watcher => match never {},
        };
        hosted.state.send_replace(HostState::Stopped);
        let daemon_file: PathBuf = hosted.paths.daemon_file();
        let suffix = std::mem::take(&mut hosted.options.log_suffix);
        // The socket closes here, before `daemon.json` goes.
        drop(hosted);
        discovery::remove_if_ours(&daemon_file);
        if result.is_ok() {
            tracing::info!("Souz stopped{suffix}");
        }
        result
    }
}

impl Hosted {
    /// Recovery mode (if any), then rounds until a stop, an error, or a round that ended on
    /// its own.
    async fn serve(&self, phase: Phase, latch: &Arc<StopLatch>) -> Result<(), HostError> {
        let mut round = match phase {
            Phase::Serving(round) => round,
            Phase::Recovering {
                base,
                problems,
                token,
            } => match self.recover(*base, problems, &token, latch).await? {
                Some(config) => self.begin_round(config).await?,
                None => return Ok(()),
            },
        };
        loop {
            let round_stop = {
                let (latch, restart) = (Arc::clone(latch), round.restart.clone());
                async move {
                    tokio::select! {
                        reason = latch.wait() => reason,
                        () = restart.cancelled() => "restart".to_owned(),
                    }
                }
            };
            let served = self
                .gateway
                .serve_round(round.runtime.handle(), round_stop)
                .await;
            let config = round.runtime.handle().config().clone();
            let stopped = latch.is_stopped();
            let reason = if stopped {
                latch.wait().await
            } else {
                "restart".to_owned()
            };
            let closed = round.runtime.shutdown(&reason).await;
            served.map_err(HostError::Serve)?;
            closed?;
            if stopped || !round.restart.is_cancelled() {
                return Ok(());
            }
            self.state.send_replace(HostState::Restarting);
            let config = match self.source.load() {
                Ok(next) => next,
                Err(error) => {
                    tracing::warn!(
                        %error,
                        "config.toml has problems now; restarting with the configuration loaded before"
                    );
                    config
                }
            };
            tracing::info!("Souz restarts in place{}", self.options.log_suffix);
            round = self.begin_round(config).await?;
        }
    }

    /// Serves recovery mode until a valid `config.toml` is saved (its configuration) or the
    /// daemon is told to stop (`None`).
    async fn recover(
        &self,
        base: Config,
        problems: Vec<Problem>,
        token: &ApiToken,
        latch: &Arc<StopLatch>,
    ) -> Result<Option<Config>, HostError> {
        let stop = {
            let latch = Arc::clone(latch);
            async move { latch.wait().await }
        };
        let secret = token.expose().to_owned();
        match self
            .gateway
            .serve_recovery(base, problems, secret, stop)
            .await
        {
            Ok(RecoveryEnd::Fixed(config)) => {
                tracing::info!("config.toml is valid now: starting normally");
                Ok(Some(*config))
            }
            Ok(RecoveryEnd::Stopped(reason)) => {
                tracing::info!(%reason, "stopped in recovery mode");
                Ok(None)
            }
            Err(error) => Err(HostError::Serve(error)),
        }
    }

    /// Starts a runtime on `config` for the next round, and says where it listens.
    async fn begin_round(&self, config: Config) -> Result<Round, HostError> {
        let restart = CancellationToken::new();
        let options = RuntimeOptions {
            sandbox_helper: self.options.sandbox_helper.clone(),
            environment: self.environment.clone(),
            mcp_extension: self.options.mcp_extension.clone(),
            restart: Some(restart.clone()),
        };
        let runtime = Runtime::start_with(config, options).await?;
        // The chat apps: on the runtime's tasks, never in the way of serving.
        if let Err(error) = crate::channels::telegram::start(&runtime.handle()).await {
            tracing::warn!(%error, "the Telegram channel did not start");
        }
        self.announce();
        tracing::info!(
            url = %self.url,
            version = env!("CARGO_PKG_VERSION"),
            "Souz is listening{}",
            self.options.log_suffix
        );
        self.state.send_replace(HostState::Serving);
        Ok(Round { runtime, restart })
    }

    /// Writes `daemon.json` naming this process and its URL.
    fn announce(&self) {
        let info = DaemonInfo {
            pid: std::process::id(),
            url: self.url.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        let daemon_file = self.paths.daemon_file();
        if let Err(error) = discovery::write(&daemon_file, &info) {
            tracing::warn!(%error, path = %daemon_file.display(), "could not write daemon.json");
        }
    }
}
