//! External MCP servers through the real daemon: `souz mcp servers list|test`, their tools in
//! the catalog, and the server's whole process group stopped when the daemon stops. The
//! server is the misbehaving one built with the official Python SDK
//! (`tests/clients/python/misbehaving_server.py`, installed by `scripts/test.sh`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use souz_e2e::{Daemon, clients};

fn python() -> PathBuf {
    let python = clients().join(".venv/bin/python");
    assert!(
        python.exists(),
        "run scripts/test.sh to install the MCP test servers"
    );
    python
}

#[test]
fn servers_are_listed_tested_and_stopped_with_the_daemon() {
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        "[mcp.servers.odd]\ncommand = {:?}\nargs = [{:?}, {:?}]\n\n\
         [mcp.servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n",
        python().display().to_string(),
        clients()
            .join("python/misbehaving_server.py")
            .display()
            .to_string(),
        state.path().display().to_string(),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let daemon = Daemon::start_in(home, |_| {});

    daemon.wait_until("/v1/mcp/servers", |body| {
        body["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|server| {
                server["name"] == "odd" && server["connected"] == true && server["tools"] == 4
            })
    });
    let tools = daemon.get("/v1/tools").json();
    assert!(
        tools["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "mcp__odd__echo" && tool["policy"]["action"] == "ask"),
        "{tools}"
    );

    let listed = daemon.cli().args(["mcp", "servers"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{stdout}");
    assert!(
        stdout.contains("odd") && stdout.contains("connected"),
        "{stdout}"
    );
    assert!(
        stdout.contains("gone") && stdout.contains("not connected"),
        "{stdout}"
    );

    let tested = daemon
        .cli()
        .args(["mcp", "servers", "test", "odd"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(tested.status.success(), "{stdout}");
    assert!(stdout.contains("odd: ok, 4 tools"), "{stdout}");
    let failed = daemon
        .cli()
        .args(["mcp", "servers", "test", "gone"])
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&failed.stdout).contains("/nonexistent/mcp-server"));

    let starts = std::fs::read_to_string(state.path().join("starts")).unwrap();
    let server_pid: u32 = starts.lines().last().unwrap().trim().parse().unwrap();
    assert!(Path::new(&format!("/proc/{server_pid}")).exists());
    daemon.stop("TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{server_pid}")).exists() && !is_zombie(server_pid) {
        assert!(
            Instant::now() < deadline,
            "the MCP server outlived the daemon"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn a_claude_desktop_file_is_imported_as_checked_sections() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("claude_desktop_config.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "server-filesystem"]},
            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer s3cret"}}}}"#,
    )
    .unwrap();
    let output = souz_e2e::souz(folder.path())
        .args(["mcp", "import"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("[mcp.servers.files]"), "{stdout}");
    assert!(
        stdout.contains("url = \"https://mcp.example.com/mcp\""),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cret"), "{stdout}");

    std::fs::write(&file, "{\"other\": 1}").unwrap();
    let refused = souz_e2e::souz(folder.path())
        .args(["mcp", "import"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!refused.status.success());
}

#[test]
fn servers_are_added_refused_disabled_and_removed_from_the_cli() {
    let daemon = Daemon::start();
    let cli = |args: &[&str]| {
        let output = daemon.cli().args(args).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    };
    let config = daemon.home.path().join("config.toml");
    let before = std::fs::read_to_string(&config).unwrap_or_default();

    let (ok, text) = cli(&[
        "mcp",
        "servers",
        "add",
        "web",
        "--url",
        "ftp://example.org/mcp",
    ]);
    assert!(!ok, "{text}");
    // The problem with its position in the file: `…/config.toml:<line>:<column>: …`.
    assert!(
        text.contains("config.toml:") && text.contains("http(s) URL"),
        "{text}"
    );
    // Nothing written.
    assert_eq!(std::fs::read_to_string(&config).unwrap_or_default(), before);

    let (ok, text) = cli(&[
        "mcp",
        "servers",
        "add",
        "files",
        "--env",
        "LEVEL=2",
        "--",
        "/usr/bin/true",
        "--flag",
    ]);
    assert!(ok, "{text}");
    assert!(
        text.contains("Souz applies it now") && !text.contains("Restart Souz"),
        "{text}"
    );
    let written = std::fs::read_to_string(&config).unwrap();
    let section = |text: &str| {
        text.lines()
            .any(|line| line.trim() == "[mcp.servers.files]")
    };
    assert!(section(&written), "{written}");
    assert!(written.contains("command = \"/usr/bin/true\""), "{written}");
    assert!(written.contains("\"--flag\""), "{written}");
    assert!(written.contains("LEVEL = \"2\""), "{written}");
    let (ok, text) = cli(&["mcp", "servers"]);
    assert!(ok && text.contains("files"), "{text}");

    let (ok, text) = cli(&["mcp", "servers", "disable", "files"]);
    assert!(ok, "{text}");
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("enabled = false")
    );
    let (ok, text) = cli(&["mcp", "servers"]);
    assert!(ok && text.contains("disabled"), "{text}");
    let (ok, text) = cli(&["mcp", "servers", "enable", "files"]);
    assert!(ok, "{text}");
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("enabled = true")
    );

    let (ok, text) = cli(&["mcp", "servers", "rm", "files"]);
    assert!(ok, "{text}");
    let left = std::fs::read_to_string(&config).unwrap();
    assert!(!section(&left) && !left.contains("/usr/bin/true"), "{left}");
    let (ok, text) = cli(&["mcp", "servers", "rm", "files"]);
    assert!(!ok, "{text}");
    assert!(text.contains("no [mcp.servers.files]"), "{text}");
}

#[test]
fn mcp_help_lists_every_verb() {
    let home = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let output = souz_e2e::souz(home.path()).args(args).output().unwrap();
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // What `souz mcp --help` opens with, and the line `souz --help` gives `mcp`.
    let own = help(&["mcp", "--help"]);
    let own = own.split("Usage:").next().unwrap_or_default().to_owned();
    let listed = help(&["--help"]);
    let listed = listed
        .lines()
        .find(|line| line.trim_start().starts_with("mcp "))
        .unwrap_or_default()
        .to_owned();
    for text in [own, listed] {
        for verb in [
            "list", "test", "add", "rm", "enable", "disable", "import", "token", "login",
        ] {
            assert!(text.contains(verb), "`{verb}` is not named: {text}");
        }
    }
}
