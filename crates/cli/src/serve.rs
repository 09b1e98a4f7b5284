//! `souz serve`: load the config, start logging, bind the port, start the runtime, serve until
//! SIGINT/SIGTERM, then shut down in order (stop accepting, drain, close the database).

use std::process::ExitCode;

use souz_core::config::{Config, ConfigError, Problem, SouzPaths, process_env};
use souz_core::gateway::Gateway;
use souz_core::gateway::recovery::RecoveryEnd;
use souz_core::runtime::discovery;
use souz_core::{Runtime, RuntimeOptions, telemetry};
use souz_protocol::DaemonInfo;

pub fn run() -> ExitCode {
    // Before any secret is read: other processes of this user (and the commands it runs) must
    // not read this process's memory or environment.
    // Once per process, before any thread allocates: freed large blocks go back at once.
    souz_core::runtime::memory::return_large_blocks();
    if let Err(error) = souz_core::sandbox::daemon_process::protect() {
        return crate::fail(&format!("cannot protect the daemon's memory: {error}"));
    }
    // Configuration first: a bad file is reported before anything else happens, and the daemon
    // then starts in recovery mode (the UI, health and the config routes only).
    let start = match load_start() {
        Ok(start) => start,
        Err(code) => return code,
    };
    let log = match &start {
        Start::Normal(config) | Start::Recovery { base: config, .. } => config.log.clone(),
    };
    let logs = match &start {
        Start::Normal(config) | Start::Recovery { base: config, .. } => config.paths.logs(),
    };
    let _logging = match telemetry::init(&log, &logs) {
        Ok(guard) => guard,
        Err(error) => return crate::fail(&error.to_string()),
    };
    // The configuration has been read; no thread reads the environment yet. From here on the daemon
    // reads its environment from a snapshot, and secret values are gone from the block that
    // /proc/<pid>/environ shows (root reads it although the process is not dumpable).
    let environment = souz_core::sandbox::daemon_process::environment_snapshot();
    let scrubbed = souz_core::sandbox::daemon_process::scrub_environment();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("souz")
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return crate::fail(&format!("cannot start the async runtime: {error}")),
    };
    match scrubbed {
        Ok(names) if !names.is_empty() => {
            tracing::info!(variables = ?names, "secret variables removed from the environment block");
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "could not scrub secrets from the environment block"),
    }
    runtime.block_on(serve(start, environment))
}

/// How the daemon starts: with a valid configuration, or in recovery mode.
enum Start {
    /// `config.toml` is valid.
    Normal(Config),
    /// `config.toml` has `problems`; `base` is the defaults with the environment's overrides.
    Recovery {
        /// What the recovery gateway binds and validates against.
        base: Config,
        /// The file's problems (already printed).
        problems: Vec<Problem>,
    },
}

/// Loads `config.toml`; a file with problems prints them and leads to recovery mode (problems
/// in the environment's overrides still stop the daemon: there is nothing to edit).
fn load_start() -> Result<Start, ExitCode> {
    match Config::load(&process_env) {
        Ok(config) => Ok(Start::Normal(config)),
        Err(error @ ConfigError::Problems(_)) => {
            eprintln!("{error}");
            let ConfigError::Problems(problems) = error else {
                return Err(ExitCode::from(2));
            };
            let paths = SouzPaths::resolve(&process_env).map_err(|error| crate::fail(&error))?;
            let file = paths.config_file();
            // Problems of the environment's overrides remain without the file: nothing to
            // edit in recovery mode, so the daemon stops as before.
            let Ok(base) = Config::parse(paths, &file, "", &process_env) else {
                return Err(ExitCode::from(2));
            };
            eprintln!("souz: starting in recovery mode: fix config.toml in Settings (souz ui)");
            Ok(Start::Recovery { base, problems })
        }
        Err(other) => Err(crate::fail(&other.to_string())),
    }
}

async fn serve(start: Start, environment: souz_core::llm::service::Environment) -> ExitCode {
    let (config, recovery) = match start {
        Start::Normal(config) => (config, None),
        Start::Recovery { base, problems } => (base.clone(), Some((base, problems))),
    };
    if !config.server.ip().is_some_and(|ip| ip.is_loopback()) {
        tracing::warn!(
            host = %config.server.host,
            "listening on a non-loopback address: anyone who can reach this port and has the token can use your tools"
        );
    }
    let stop = stopped_watch(stop_signal());
    // Bind before opening the database, so "port in use" touches nothing.
    let gateway = match Gateway::bind(&config.server).await {
        Ok(gateway) => gateway,
        Err(error) => return crate::fail(&error.to_string()),
    };
    let address = gateway.local_addr();
    let daemon_file = config.paths.daemon_file();
    let mut config = config;
    if let Some((base, problems)) = recovery {
        match recover(&gateway, base, problems, &stop).await {
            Some(fixed) => config = fixed,
            None => {
                discovery::remove_if_ours(&daemon_file);
                return ExitCode::SUCCESS;
            }
        }
    }
    // One runtime per round; a restart (`POST /v1/restart`) ends a round and starts the next
    // on the same socket with `config.toml` read again. A signal ends the last round.
    let (served, closed) = loop {
        let restart = tokio_util::sync::CancellationToken::new();
        // Commands are confined by re-running this very binary as the sandbox helper.
        let options = RuntimeOptions {
            sandbox_helper: std::env::current_exe().ok(),
            environment: Some(environment.clone()),
            mcp_extension: mcp_extension(),
            restart: Some(restart.clone()),
        };
        let runtime = match Runtime::start_with(config.clone(), options).await {
            Ok(runtime) => runtime,
            Err(error) => return crate::fail(&error.to_string()),
        };
        let info = DaemonInfo {
            pid: std::process::id(),
            url: format!("http://{address}"),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        if let Err(error) = discovery::write(&daemon_file, &info) {
            tracing::warn!(%error, path = %daemon_file.display(), "could not write daemon.json");
        }
        tracing::info!(url = %info.url, version = %info.version, "Souz is listening");

        let round_stop = {
            let mut stop = stop.clone();
            let restart = restart.clone();
            async move {
                tokio::select! {
                    reason = wait_stopped(&mut stop) => reason,
                    () = restart.cancelled() => "restart".to_owned(),
                }
            }
        };
        let served = gateway.serve_round(runtime.handle(), round_stop).await;
        let signalled = stop.borrow().is_some();
        let reason = if signalled { "signal" } else { "restart" };
        let closed = runtime.shutdown(reason).await;
        if signalled || served.is_err() || closed.is_err() || !restart.is_cancelled() {
            break (served, closed);
        }
        match crate::load_config() {
            Ok(next) => config = next,
            Err(_) => tracing::warn!(
                "config.toml has problems now; restarting with the configuration loaded before"
            ),
        }
        tracing::info!("Souz restarts in place");
    };
    drop(gateway);
    discovery::remove_if_ours(&daemon_file);
    match (served, closed) {
        (Ok(()), Ok(())) => {
            tracing::info!("Souz stopped");
            ExitCode::SUCCESS
        }
        (Err(error), _) => crate::fail(&format!("server error: {error}")),
        (_, Err(error)) => crate::fail(&format!("could not close the database cleanly: {error}")),
    }
}

/// Serves recovery mode until a valid `config.toml` is saved (its configuration) or a signal
/// stops the daemon (`None`).
async fn recover(
    gateway: &Gateway,
    base: Config,
    problems: Vec<Problem>,
    stop: &tokio::sync::watch::Receiver<Option<String>>,
) -> Option<Config> {
    let token = match souz_core::token::ApiToken::load_or_create(&base.paths.token()) {
        Ok(token) => token.expose().to_owned(),
        Err(error) => {
            tracing::error!(%error, "cannot load the token; recovery mode is unavailable");
            return None;
        }
    };
    let info = DaemonInfo {
        pid: std::process::id(),
        url: format!("http://{}", gateway.local_addr()),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let daemon_file = base.paths.daemon_file();
    if let Err(error) = discovery::write(&daemon_file, &info) {
        tracing::warn!(%error, path = %daemon_file.display(), "could not write daemon.json");
    }
    tracing::warn!(url = %info.url, problems = problems.len(), "config.toml has problems: recovery mode (UI, health and config routes only)");
    let mut stop = stop.clone();
    let stopped = async move { wait_stopped(&mut stop).await };
    match gateway.serve_recovery(base, problems, token, stopped).await {
        Ok(RecoveryEnd::Fixed(config)) => {
            tracing::info!("config.toml is valid now: starting normally");
            Some(*config)
        }
        Ok(RecoveryEnd::Stopped(reason)) => {
            tracing::info!(%reason, "stopped in recovery mode");
            None
        }
        Err(error) => {
            tracing::error!(%error, "recovery mode failed");
            None
        }
    }
}

/// The stop signal as a watch: `Some(reason)` once SIGINT/SIGTERM arrived (every round of the
/// serve loop looks at it).
fn stopped_watch(
    signal: impl Future<Output = String> + Send + 'static,
) -> tokio::sync::watch::Receiver<Option<String>> {
    let (sender, receiver) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        let reason = signal.await;
        let _ = sender.send(Some(reason));
        // Keep the sender so receivers never see the channel close.
        std::future::pending::<()>().await;
    });
    receiver
}

/// Resolves with the signal's name once one arrived.
async fn wait_stopped(stop: &mut tokio::sync::watch::Receiver<Option<String>>) -> String {
    match stop.wait_for(Option::is_some).await {
        Ok(reason) => reason.clone().unwrap_or_default(),
        Err(_) => "stopped".to_owned(),
    }
}

/// Installs the SIGINT and SIGTERM handlers now (before anyone can reach the daemon, so a
/// signal sent right after the first healthy answer is never met by the default action) and
/// returns a future that resolves with the signal's name.
fn stop_signal() -> impl Future<Output = String> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        async move {
            let (Ok(mut interrupt), Ok(mut terminate)) = handlers else {
                tracing::error!("cannot install signal handlers; stop Souz with Ctrl-C");
                let _ = tokio::signal::ctrl_c().await;
                return "SIGINT".to_owned();
            };
            tokio::select! {
                _ = interrupt.recv() => "SIGINT".to_owned(),
                _ = terminate.recv() => "SIGTERM".to_owned(),
            }
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C".to_owned()
        }
    }
}

/// What the MCP server serves beside Souz's tools: the conformance suite's fixtures in a build
/// with the `conformance` feature (tests only), nothing otherwise.
fn mcp_extension() -> Option<std::sync::Arc<dyn souz_core::mcp::extension::McpExtension>> {
    #[cfg(feature = "conformance")]
    return Some(std::sync::Arc::new(crate::conformance::Fixtures));
    #[cfg(not(feature = "conformance"))]
    None
}
