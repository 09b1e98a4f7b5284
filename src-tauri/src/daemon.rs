//! Starting the daemon inside the app: the same `Runtime` and `Gateway` as `souz serve`, on the
//! same `[server]` address, in this process. If a headless `souz serve` of the same Souz home
//! already owns the port, the app becomes its client instead of failing.

use souz_core::config::Config;
use souz_core::gateway::{BindError, Gateway};
use souz_core::runtime::discovery;
use souz_core::token::ApiToken;
use souz_core::{Runtime, RuntimeOptions};
use souz_protocol::DaemonInfo;
use tokio::sync::oneshot;

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
        let options = RuntimeOptions {
            sandbox_helper: sandbox_helper(),
            ..RuntimeOptions::default()
        };
        let runtime = Runtime::start_with(config, options)
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
        let done = tokio::spawn(async move {
            let served = gateway
                .serve(runtime.handle(), async move {
                    let _ = stopped.await;
                    "quit".to_owned()
                })
                .await;
            if let Err(error) = served {
                tracing::error!(%error, "the gateway failed");
            }
            if let Err(error) = runtime.shutdown("quit").await {
                tracing::error!(%error, "could not close the database cleanly");
            }
            discovery::remove_if_ours(&daemon_file);
        });
        tracing::info!(%url, "Souz is listening (in the app)");
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
