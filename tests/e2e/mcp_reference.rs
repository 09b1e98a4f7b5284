//! The official reference MCP servers behind Souz: `@modelcontextprotocol/server-filesystem`
//! (a temporary folder as its one allowed directory) and `@modelcontextprotocol/server-memory`
//! (its memory file in a temporary folder), both over stdio, their tools in Souz's catalog as
//! `mcp__fs__…` / `mcp__memory__…` and re-exported on Souz's `/mcp`. A real MCP client (the
//! official Python SDK, `tests/clients/python/reference_servers.py`) calls them under a client
//! token; every call asks, and the person approves or denies. The servers and the client are
//! installed by `scripts/test.sh` into `tests/clients/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use souz_e2e::{Daemon, clients};

fn installed(path: PathBuf) -> String {
    souz_e2e::installed(path).display().to_string()
}

/// A daemon with one reference server, `[mcp.servers.<name>]` being `server` (its `command`,
/// `args`, ... lines), connected and its tools listed.
fn daemon_with(name: &str, server: &str) -> Daemon {
    let home = tempfile::tempdir().unwrap();
    let config = format!("[mcp]\napproval_wait_seconds = 20\n\n[mcp.servers.{name}]\n{server}\n");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let daemon = Daemon::start_in(home, |_| {});
    daemon.wait_until("/v1/mcp/servers", |body| {
        body["servers"].as_array().is_some_and(|servers| {
            servers.iter().any(|server| {
                server["name"] == name
                    && server["connected"] == true
                    && server["tools"].as_u64().is_some_and(|tools| tools > 0)
            })
        })
    });
    daemon
}

/// A reference server started by the pinned Node 22.
fn node_server(package: &str, args: &[&str]) -> String {
    let node = installed(clients().join("node_modules/.bin/node"));
    let script = installed(
        clients()
            .join("node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js"),
    );
    let args: Vec<String> = std::iter::once(script.as_str())
        .chain(args.iter().copied())
        .map(|arg| format!("{arg:?}"))
        .collect();
    format!("command = {node:?}\nargs = [{}]\n", args.join(", "))
}

/// The tools of `server` in the agents' catalog: each asks by default.
fn assert_catalog_asks(daemon: &Daemon, server: &str, tools: &[&str]) {
    let catalog = daemon.get("/v1/tools").json();
    let external: Vec<_> = catalog["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| {
            item["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("mcp__"))
        })
        .map(|item| (item["name"].clone(), item["policy"]["action"].clone()))
        .collect();
    for tool in tools {
        let name = format!("mcp__{server}__{tool}");
        assert!(
            external
                .iter()
                .any(|(listed, action)| *listed == name && *action == "ask"),
            "{name} asks in the catalog: {external:?}\n{}",
            daemon.get("/v1/mcp/servers").json()
        );
    }
}

/// Runs the Python client's scenarios of `kind` under a fresh client token; its output.
fn run_client(daemon: &Daemon, kind: &str, extra: &[&str]) -> String {
    let added = daemon
        .cli()
        .args(["clients", "add", "reference-client"])
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let added = String::from_utf8_lossy(&added.stdout).into_owned();
    let client_token = added.lines().last().unwrap().trim().to_owned();
    assert_ne!(client_token, daemon.token);
    let output = Command::new(installed(clients().join(".venv/bin/python")))
        .arg(clients().join("python/reference_servers.py"))
        .arg(kind)
        .arg(format!("http://{}", daemon.address))
        .arg(&client_token)
        .arg(&daemon.token)
        .args(extra)
        .env_remove("SOUZ_PORT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{kind} scenarios failed:\n{stdout}\n{stderr}"
    );
    stdout
}

fn assert_scenarios(stdout: &str, scenarios: &[&str]) {
    for scenario in scenarios {
        assert!(
            stdout.contains(&format!("ok {scenario}\n")),
            "{scenario}:\n{stdout}"
        );
    }
}

#[test]
fn server_filesystem_writes_only_what_the_person_approves() {
    let allowed = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "outside secret").unwrap();
    let allowed_dir = allowed.path().canonicalize().unwrap().display().to_string();
    let daemon = daemon_with("fs", &node_server("server-filesystem", &[&allowed_dir]));
    assert_catalog_asks(
        &daemon,
        "fs",
        &["read_text_file", "write_file", "list_directory"],
    );

    let stdout = run_client(
        &daemon,
        "filesystem",
        &[&allowed_dir, &secret.display().to_string()],
    );
    assert_scenarios(
        &stdout,
        &[
            "listed",
            "approved-write",
            "denied-write",
            "outside-refused",
            "read-back",
        ],
    );
    let written = Path::new(&allowed_dir).join("approved.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "through souz");
    assert!(!Path::new(&allowed_dir).join("denied.txt").exists());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "outside secret");
}

#[test]
fn server_memory_keeps_what_approved_calls_create() {
    let folder = tempfile::tempdir().unwrap();
    let memory_file = folder.path().join("memory.jsonl");
    let server = format!(
        "{}env = {{ MEMORY_FILE_PATH = {:?} }}\n",
        node_server("server-memory", &[]),
        memory_file.display().to_string()
    );
    let daemon = daemon_with("memory", &server);
    assert_catalog_asks(
        &daemon,
        "memory",
        &["create_entities", "read_graph", "search_nodes"],
    );

    let stdout = run_client(&daemon, "memory", &[]);
    assert_scenarios(
        &stdout,
        &["listed", "created", "read-graph", "search-nodes"],
    );
    // The server kept the entities in its own file, where it was told to.
    let kept = std::fs::read_to_string(&memory_file).unwrap();
    assert!(
        kept.contains("\"Souz\"") && kept.contains("\"Gate\""),
        "{kept}"
    );
}
