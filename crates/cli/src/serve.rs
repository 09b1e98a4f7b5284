//! `souz serve`: load the config, start logging, bind the port, start the runtime, serve until
//! SIGINT/SIGTERM, then shut down in order (stop accepting, drain, close the database).

use std::process::ExitCode;

use souz_core::gateway::Gateway;
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
    // Configuration first: a bad file is reported before anything else happens.
    let config = match crate::load_config() {
        Ok(config) => config,
        Err(code) => return code,
    };
    let _logging = match telemetry::init(&config.log, &config.paths.logs()) {
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
    runtime.block_on(serve(config, environment))
}

async fn serve(
    config: souz_core::config::Config,
    environment: souz_core::llm::service::Environment,
) -> ExitCode {
    if !config.server.ip().is_some_and(|ip| ip.is_loopback()) {
        tracing::warn!(
            host = %config.server.host,
            "listening on a non-loopback address: anyone who can reach this port and has the token can use your tools"
        );
    }
    let stop = stop_signal();
    // Bind before opening the database, so "port in use" touches nothing.
    let gateway = match Gateway::bind(&config.server).await {
        Ok(gateway) => gateway,
        Err(error) => return crate::fail(&error.to_string()),
    };
    let address = gateway.local_addr();
    let daemon_file = config.paths.daemon_file();
    // Commands are confined by re-running this very binary as the sandbox helper.
    let options = RuntimeOptions {
        sandbox_helper: std::env::current_exe().ok(),
        environment: Some(environment),
        mcp_extension: mcp_extension(),
    };
    let runtime = match Runtime::start_with(config, options).await {
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

    let served = gateway.serve(runtime.handle(), stop).await;
    let closed = runtime.shutdown("signal").await;
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
