//! Souz as the one MCP entry in front of external servers: a real MCP client (the official
//! Python SDK, `tests/clients/python/gateway.py`) calls server-everything's and a
//! misbehaving Python server's tools re-exported on Souz's `/mcp` and through `souz
//! mcp-stdio`: asked → approved → the server's result, the server's progress passed through,
//! and a restarted server's changed tool list flowing to the client. The servers and the
//! client are installed by `scripts/test.sh` into `tests/clients/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use souz_e2e::{Daemon, clients, souz_bin};

fn installed(path: PathBuf) -> String {
    souz_e2e::installed(path).display().to_string()
}

/// A daemon with server-everything and the misbehaving server (keeping its state in `state`).
fn gateway_daemon(state: &Path) -> Daemon {
    let home = tempfile::tempdir().unwrap();
    let python = installed(clients().join(".venv/bin/python"));
    let config = format!(
        "[mcp]\napproval_wait_seconds = 20\n\n\
         [mcp.servers.everything]\ncommand = {node:?}\nargs = [{everything:?}]\n\n\
         [mcp.servers.odd]\ncommand = {python:?}\nargs = [{odd:?}, {state:?}]\n\n\
         [[approvals.rules]]\naction = \"allow\"\ntool = \"mcp__everything__trigger-long-running-operation\"\n\n\
         [[approvals.rules]]\naction = \"allow\"\ntool = \"mcp__odd__crash_once\"\n",
        node = installed(clients().join("node_modules/.bin/node")),
        everything = installed(
            clients().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        ),
        odd = installed(clients().join("python/misbehaving_server.py")),
        state = state.display().to_string(),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let daemon = Daemon::start_in(home, |_| {});
    daemon.wait_until("/v1/mcp/servers", |body| {
        body["servers"]
            .as_array()
            .is_some_and(|servers| servers.iter().all(|server| server["connected"] == true))
    });
    daemon
}

fn run_gateway(transport: &str) {
    let state = tempfile::tempdir().unwrap();
    let daemon = gateway_daemon(state.path());
    let url = format!("http://{}", daemon.address);
    let mut command = Command::new(installed(clients().join(".venv/bin/python")));
    command
        .arg(clients().join("python/gateway.py"))
        .arg(transport)
        .arg(&url)
        .arg(&daemon.token)
        .arg(state.path())
        .env("HOME", daemon.user_home())
        .env("SOUZ_HOME", daemon.home.path())
        .env_remove("SOUZ_PORT");
    if transport == "stdio" {
        let configured = Command::new(souz_bin())
            .args(["mcp-config", "claude-desktop"])
            .env("SOUZ_HOME", daemon.home.path())
            .env_remove("SOUZ_PORT")
            .output()
            .unwrap();
        assert!(configured.status.success(), "{configured:?}");
        command.arg(souz_bin());
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "gateway scenarios failed over {transport}:\n{stdout}\n{stderr}"
    );
    for scenario in [
        "listed",
        "asked-approved-result",
        "progress",
        "list-changed",
    ] {
        assert!(
            stdout.contains(&format!("ok {scenario}\n")),
            "{scenario} over {transport}:\n{stdout}"
        );
    }
}

#[test]
fn external_tools_are_called_through_souz_over_http() {
    run_gateway("http");
}

#[test]
fn external_tools_are_called_through_the_stdio_bridge() {
    run_gateway("stdio");
}
