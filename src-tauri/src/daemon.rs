//! Starting the daemon inside the app: the daemon host of `souz_core::host`, the same
//! lifecycle as `souz serve` on the same `[server]` address, in this process. The app's options:
//! no environment scrub (the async runtime's threads already run), no signal handlers (Quit
//! stops it), the `souz` binary beside the app as the sandbox helper. If a headless `souz
//! serve` of the same Souz home already owns the port, the app becomes its client instead of
//! failing.

use souz_core::gateway::BindError;
use souz_core::host::{ConfigSource, DaemonHost, HostError, RunningDaemon};
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

/// The daemon host of the app: `config.toml` of the Souz home the environment names, or
/// recovery mode when the file has problems.
pub fn load() -> Result<DaemonHost, DaemonError> {
    builder(ConfigSource::Process)
        .load()
        .map_err(|error| DaemonError::Config(error.to_string()))
}

/// The app's options of the daemon host.
fn builder(source: ConfigSource) -> souz_core::host::DaemonHostBuilder {
    DaemonHost::builder(source)
        .sandbox_helper(sandbox_helper())
        .log_context("in the app")
}

impl Daemon {
    /// The client of the daemon's gateway.
    pub fn client(&self) -> &DaemonClient {
        match self {
            Self::Embedded { client, .. } | Self::Attached { client } => client,
        }
    }

    /// Starts `host` in this process (normally or in recovery mode, which ends with the first
    /// valid `config.toml` saved), or attaches to the `souz serve` that owns the port.
    pub async fn start(host: DaemonHost) -> Result<Self, DaemonError> {
        let home = Home::new(host.config().paths.home());
        let running = match host.start().await {
            Ok(running) => running,
            Err(HostError::Bind(BindError::InUse { host, port })) => {
                return attach(&home, &host, port).await;
            }
            Err(error) => return Err(DaemonError::Start(error.to_string())),
        };
        let client = match own_client(&running) {
            Ok(client) => client,
            Err(error) => {
                // Stop at once: the socket closes and daemon.json goes.
                let _ = running.serve_until(async { "quit".to_owned() }).await;
                return Err(error);
            }
        };
        let (stop, stopped) = oneshot::channel::<()>();
        #[allow(
            clippy::disallowed_methods,
            reason = "the app's in-process daemon, owned by EmbeddedDaemon: stopped by its oneshot and awaited in stop()"
        )]
        let done = tokio::spawn(async move {
            let served = running
                .serve_until(async move {
                    let _ = stopped.await;
                    "quit".to_owned()
                })
                .await;
            // Said when it happens (a restart that could not start the next runtime), not
            // only at quit.
            if let Err(error) = served {
                tracing::error!(%error, "Souz stopped with an error");
            }
        });
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

/// The client of the daemon running in this process, with its home's operator token.
fn own_client(running: &RunningDaemon) -> Result<DaemonClient, DaemonError> {
    let token = running
        .token()
        .map_err(|error| DaemonError::Start(error.to_string()))?;
    DaemonClient::for_own_daemon(running.url(), token.expose())
        .map_err(|error| DaemonError::Start(error.to_string()))
}

async fn attach(home: &Home, host: &str, port: u16) -> Result<Daemon, DaemonError> {
    let taken = || {
        DaemonError::PortTaken(format!(
            "port {port} on {host} is in use by another program; change [server] port in \
             config.toml or set SOUZ_PORT"
        ))
    };
    // Only our own daemon can prove it knows this home's token; nothing else is sent it.
    let client = DaemonClient::discover(home, || format!("http://{host}:{port}"))
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
        let path = home.path().to_string_lossy().into_owned();
        let port = port.to_string();
        let environment: &[(&str, &str)] = &[
            ("SOUZ_HOME", &path),
            ("SOUZ_HOST", "127.0.0.1"),
            ("SOUZ_PORT", &port),
        ];
        let environment: Vec<(String, String)> = environment
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        let source = ConfigSource::Lookup(std::sync::Arc::new(move |name: &str| {
            environment
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        }));
        let host = builder(source).load().unwrap();

        let outcome = Daemon::start(host).await;

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
