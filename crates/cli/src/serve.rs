//! `souz serve`: the daemon host of `souz_core::host` with the command line's options. The
//! environment is scrubbed before the async runtime starts, SIGINT/SIGTERM stop the daemon,
//! this binary is the sandbox helper, and what goes wrong is printed to stderr: the problems of
//! `config.toml` (recovery mode follows, or exit code 2 when recovery cannot help) and any
//! other failure (exit code 1).

use std::process::ExitCode;

use souz_core::config::ConfigError;
use souz_core::host::{self, ConfigSource, DaemonHost, HostError};
use souz_core::telemetry;

pub fn run() -> ExitCode {
    // Before any secret is read: other processes of this user (and the commands it runs) must
    // not read this process's memory or environment; before any thread allocates: freed large
    // blocks go back at once.
    if let Err(error) = host::prepare_process() {
        return crate::fail(&error.to_string());
    }
    // Configuration first: a bad file is reported before anything else happens, and the daemon
    // then starts in recovery mode (the UI, health and the config routes only).
    let host = match DaemonHost::builder(ConfigSource::Process)
        .scrub_environment()
        .stop_on_signals()
        // Commands are confined by re-running this very binary as the sandbox helper.
        .sandbox_helper(std::env::current_exe().ok())
        .mcp_extension(mcp_extension())
        .load()
    {
        Ok(host) => host,
        Err(HostError::Unrecoverable(problems)) => {
            eprintln!("{problems}");
            return ExitCode::from(2);
        }
        Err(error) => return crate::fail(&error.to_string()),
    };
    if let Some(problems) = host.startup().problems() {
        eprintln!("{}", ConfigError::Problems(problems.to_vec()));
        eprintln!(
            "souz: {}",
            crate::texts::tr(
                "starting in recovery mode: fix config.toml in Settings (souz ui)",
                "запуск в режиме восстановления: исправьте config.toml в настройках (souz ui)"
            )
        );
    }
    let _logging = match telemetry::init(&host.config().log, &host.config().paths.logs()) {
        Ok(guard) => guard,
        Err(error) => return crate::fail(&error.to_string()),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("souz")
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return crate::fail(&format!("cannot start the async runtime: {error}")),
    };
    runtime.block_on(serve(host))
}

/// Binds, starts, and serves until a signal (restarting in place when asked).
async fn serve(host: DaemonHost) -> ExitCode {
    let running = match host.start().await {
        Ok(running) => running,
        Err(error) => return crate::fail(&error.to_string()),
    };
    match running.serve_until(std::future::pending()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => crate::fail(&error.to_string()),
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
