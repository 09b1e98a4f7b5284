//! Starting the daemon inside the app: the same `Runtime` and `Gateway` as `souz serve`, on the
//! same `[server]` address, in this process. If a headless `souz serve` of the same Souz home
//! already owns the port, the app becomes its client instead of failing.

use souz_core::config::{Config, Problem};
use souz_core::gateway::recovery::RecoveryEnd;
use souz_core::gateway::{BindError, Gateway};
use souz_core::runtime::discovery;
use souz_core::token::ApiToken;
use souz_core::{Runtime, RuntimeOptions};
use souz_protocol::DaemonInfo;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use souz_client::{DaemonClient, Home};

/// Why the daemon could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// `config.toml` is invalid (each problem on its own line).
    #[error("{0}")]
    Config(String),
    /// The runtime could not start.
    #[error("{0}")]
    Start(String),
    /// The port is taken by something that is not this home's Souz.
    #[error("{0}")]
    PortTaken(String),
}

/// The running daemon, or the one attached to.
pub enum Daemon {
    /// In this process.
    Embedded {
        /// The client of its gateway.
        client: DaemonClient,
        /// Stops the gateway.
        stop: Option<oneshot::Sender<()>>,
        /// Ends when the gateway and the runtime have shut down.
        done: Option<tokio::task::JoinHandle<()>>,
    },
    /// A separate `souz serve`.
    Attached {
        /// Its client.
        client: DaemonClient,
    },
}

impl Daemon {
    /// The client of the daemon's gateway.
    pub fn client(&self) -> &DaemonClient {
        match self {
            Self::Embedded { client, .. } | Self::Attached { client } => client,
        }
    }

    /// Starts (or attaches) with `config`.
    pub async fn start_with(config: Config) -> Result<Self, DaemonError> {
        let gateway = match Gateway::bind(&config.server).await {
            Ok(gateway) => gateway,
            Err(BindError::InUse { host, port }) => return attach(&config, &host, port).await,
            Err(error) => return Err(DaemonError::Start(error.to_string())),
        };
        let address = gateway.local_addr();
        let daemon_file = config.paths.daemon_file();
        let restart = CancellationToken::new();
        let runtime = Runtime::start_with(config, options(&restart))
            .await
            .map_err(|error| DaemonError::Start(error.to_string()))?;
        let handle = runtime.handle();
        let url = format!("http://{address}");
        let info = DaemonInfo {
            pid: std::process::id(),
            url: url.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        if let Err(error) = discovery::write(&daemon_file, &info) {
            tracing::warn!(%error, "could not write daemon.json");
        }
        let token = ApiToken::load(&handle.config().paths.token())
            .map_err(|error| DaemonError::Start(error.to_string()))?;
        let client = DaemonClient::for_own_daemon(&url, token.expose())
            .map_err(|error| DaemonError::Start(error.to_string()))?;
        let (stop, stopped) = oneshot::channel::<()>();
        let quit = CancellationToken::new();
        tokio::spawn({
            let quit = quit.clone();
            async move {
                let _ = stopped.await;
                quit.cancel();
            }
        });
        let done = tokio::spawn(serve_rounds(gateway, runtime, restart, quit));
        tracing::info!(%url, "Souz is listening (in the app)");
        Ok(Self::Embedded {
            client,
            stop: Some(stop),
            done: Some(done),
        })
    }

    /// Starts in recovery mode (`config.toml` has `problems`; `base` is the defaults with the
    /// environment's overrides): only the UI, health and the config routes, until a valid file
    /// is saved; then the runtime starts on the same socket as in [`start_with`](Self::start_with).
    pub async fn start_recovering(
        base: Config,
        problems: Vec<Problem>,
    ) -> Result<Self, DaemonError> {
        let gateway = match Gateway::bind(&base.server).await {
            Ok(gateway) => gateway,
            Err(BindError::InUse { host, port }) => return attach(&base, &host, port).await,
            Err(error) => return Err(DaemonError::Start(error.to_string())),
        };
        let url = format!("http://{}", gateway.local_addr());
        let token = ApiToken::load_or_create(&base.paths.token())
            .map_err(|error| DaemonError::Start(error.to_string()))?;
        let daemon_file = base.paths.daemon_file();
        let info = DaemonInfo {
            pid: std::process::id(),
            url: url.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        if let Err(error) = discovery::write(&daemon_file, &info) {
            tracing::warn!(%error, "could not write daemon.json");
        }
        let client = DaemonClient::for_own_daemon(&url, token.expose())
            .map_err(|error| DaemonError::Start(error.to_string()))?;
        let (stop, stopped) = oneshot::channel::<()>();
        let quit = CancellationToken::new();
        tokio::spawn({
            let quit = quit.clone();
            async move {
                let _ = stopped.await;
                quit.cancel();
            }
        });
        let secret = token.expose().to_owned();
        let done = tokio::spawn(async move {
            let waiting = quit.clone();
            let ended = gateway
                .serve_recovery(base, problems, secret, async move {
                    waiting.cancelled().await;
                    "quit".to_owned()
                })
                .await;
            let config = match ended {
                Ok(RecoveryEnd::Fixed(config)) => *config,
                Ok(RecoveryEnd::Stopped(_)) => return discovery::remove_if_ours(&daemon_file),
                Err(error) => {
                    tracing::error!(%error, "recovery mode failed");
                    return discovery::remove_if_ours(&daemon_file);
                }
            };
            let restart = CancellationToken::new();
            match Runtime::start_with(config, options(&restart)).await {
                Ok(runtime) => serve_rounds(gateway, runtime, restart, quit).await,
                Err(error) => {
                    tracing::error!(%error, "Souz could not start after recovery");
                    discovery::remove_if_ours(&daemon_file);
                }
            }
        });
        tracing::warn!(%url, "config.toml has problems: recovery mode (in the app)");
        Ok(Self::Embedded {
            client,
            stop: Some(stop),
            done: Some(done),
        })
    }

    /// Stops an embedded daemon (drains requests, closes the database); a no-op when attached.
    pub async fn shutdown(&mut self) {
        if let Self::Embedded { stop, done, .. } = self {
            if let Some(stop) = stop.take() {
                let _ = stop.send(());
            }
            if let Some(done) = done.take() {
                let _ = done.await;
            }
        }
    }
}

/// Serves runtime after runtime on the gateway's socket: "Restart Souz" (`POST /v1/restart`)
/// ends a round, and the next starts with `config.toml` read again; quitting ends the last.
async fn serve_rounds(
    gateway: Gateway,
    mut runtime: Runtime,
    mut restart: CancellationToken,
    quit: CancellationToken,
) {
    let daemon_file = runtime.handle().config().paths.daemon_file();
    loop {
        let round_stop = {
            let (quit, restart) = (quit.clone(), restart.clone());
            async move {
                tokio::select! {
                    () = quit.cancelled() => "quit".to_owned(),
                    () = restart.cancelled() => "restart".to_owned(),
                }
            }
        };
        if let Err(error) = gateway.serve_round(runtime.handle(), round_stop).await {
            tracing::error!(%error, "the gateway failed");
        }
        let config = runtime.handle().config().clone();
        let reason = if quit.is_cancelled() {
            "quit"
        } else {
            "restart"
        };
        if let Err(error) = runtime.shutdown(reason).await {
            tracing::error!(%error, "could not close the database cleanly");
        }
        if quit.is_cancelled() || !restart.is_cancelled() {
            break;
        }
        let config = match Config::load(&souz_core::config::process_env) {
            Ok(next) => next,
            Err(error) => {
                tracing::warn!(%error, "config.toml has problems now; restarting with the configuration loaded before");
                config
            }
        };
        restart = CancellationToken::new();
        runtime = match Runtime::start_with(config, options(&restart)).await {
            Ok(next) => next,
            Err(error) => {
                tracing::error!(%error, "Souz could not restart");
                break;
            }
        };
        tracing::info!("Souz restarted in place (in the app)");
    }
    drop(gateway);
    discovery::remove_if_ours(&daemon_file);
}

/// What the embedded runtime is started with.
fn options(restart: &CancellationToken) -> RuntimeOptions {
    RuntimeOptions {
        sandbox_helper: sandbox_helper(),
        restart: Some(restart.clone()),
        ..RuntimeOptions::default()
    }
}

async fn attach(config: &Config, host: &str, port: u16) -> Result<Daemon, DaemonError> {
    let taken = || {
        DaemonError::PortTaken(format!(
            "port {port} on {host} is in use by another program; change [server] port in \
             config.toml or set SOUZ_PORT"
        ))
    };
    // Only our own daemon can prove it knows this home's token; nothing else is sent it.
    let home = Home::new(config.paths.home());
    let client = DaemonClient::discover(&home, || format!("http://{host}:{port}"))
        .await
        .map_err(|_| taken())?;
    tracing::info!(url = %client.base(), "attached to a running souz serve");
    Ok(Daemon::Attached { client })
}

/// The `souz` binary next to the app (it implements the Landlock helper); without it commands
/// run unconfined, as `GET /health` reports.
fn sandbox_helper() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let sibling = exe.with_file_name(format!("souz{}", std::env::consts::EXE_SUFFIX));
    sibling.exists().then_some(sibling)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};

    use souz_core::config::SouzPaths;

    use super::*;

    /// A program on the configured port that answers every request with 200 and a body that
    /// fits both a made-up identity proof and a pause state, and keeps what it was sent.
    fn squatter() -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut buffer = [0u8; 4096];
                let read = stream.read(&mut buffer).unwrap_or(0);
                let request = String::from_utf8_lossy(&buffer[..read]).into_owned();
                seen.lock().unwrap().push(request);
                let body = r#"{"proof":"00","paused":false,"since":null}"#;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (port, requests)
    }

    #[tokio::test]
    async fn a_squatter_on_the_port_is_not_attached_to_and_never_gets_the_token() {
        let home = tempfile::tempdir().unwrap();
        let token = "a-token-of-this-souz-home-0123456789abcdef";
        std::fs::write(home.path().join("token"), token).unwrap();
        let (port, requests) = squatter();
        let mut config = Config::defaults(SouzPaths::new(home.path()));
        config.server.host = "127.0.0.1".to_owned();
        config.server.port = port;

        let outcome = Daemon::start_with(config).await;

        assert!(
            matches!(outcome, Err(DaemonError::PortTaken(_))),
            "attached to a squatter"
        );
        let requests = requests.lock().unwrap();
        assert!(!requests.is_empty(), "the identity check reached the port");
        assert!(
            requests.iter().all(|request| !request.contains(token)),
            "the token was sent: {requests:?}"
        );
    }
}
