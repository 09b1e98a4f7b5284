//! Memory end to end: `souz memory` on a real daemon — add (secrets removed), list with
//! filters, search with scores, show with evidence, forget (gone, and a clear error for an
//! unknown id), retire; status (by words only until the default local model is ready, which a
//! test daemon never downloads, and a download that fails, said by `search`); bad input exits
//! non-zero and stores nothing.

use souz_e2e::Daemon;

fn cli(daemon: &Daemon, args: &[&str]) -> (bool, String) {
    let output = daemon.cli().arg("memory").args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

fn json(daemon: &Daemon, args: &[&str]) -> serde_json::Value {
    let (ok, text) = cli(daemon, args);
    assert!(ok, "{args:?}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}"))
}

#[test]
fn add_list_search_show_and_forget_through_the_cli() {
    let daemon = Daemon::start();
    let (ok, text) = cli(&daemon, &["list"]);
    assert!(ok, "{text}");
    assert!(text.contains("Nothing remembered"), "{text}");

    let editor = json(
        &daemon,
        &[
            "add",
            "Prefers helix over vim; token sk-abcdefghijklmnopqrstuvwx",
            "--kind",
            "preference",
            "--title",
            "Editor",
            "--key",
            "user.preference.editor",
            "--json",
        ],
    );
    assert_eq!(editor["kind"], "PREFERENCE");
    assert_eq!(editor["canonical_key"], "user.preference.editor");
    let body = editor["body"].as_str().unwrap();
    assert!(!body.contains("sk-abcdefghijklmnopqrstuvwx"), "{body}");
    let editor_id = editor["id"].as_str().unwrap().to_owned();
    let deploys = [
        "add",
        "Deploys go through staging first",
        "--kind",
        "project_rule",
        "--scope",
        "project:souz",
    ];
    let (ok, text) = cli(&daemon, &[&deploys[..], &["--pin"]].concat());
    assert!(ok, "{text}");
    assert!(text.starts_with("Remembered "), "{text}");
    // The same fact again is confirmed, not stored twice, and the CLI says so.
    let (ok, again) = cli(&daemon, &deploys);
    assert!(ok, "{again}");
    let id = text
        .trim_start_matches("Remembered ")
        .split(':')
        .next()
        .unwrap();
    assert!(
        again.starts_with(&format!("Already remembered {id}: ")) && again.contains("(confirmed)"),
        "{again}"
    );

    let page = json(&daemon, &["list", "--json"]);
    assert_eq!(page["items"].as_array().unwrap().len(), 2, "{page}");
    let page = json(&daemon, &["list", "--kind", "PREFERENCE", "--json"]);
    assert_eq!(page["items"][0]["id"], editor_id.as_str());
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let page = json(&daemon, &["list", "--pinned", "--json"]);
    assert_eq!(page["items"][0]["scope"], "project:souz", "{page}");
    let (ok, text) = cli(&daemon, &["list", "--pinned"]);
    assert!(ok && text.contains(" project_rule "), "{text}");
    let (ok, text) = cli(&daemon, &["list", "--text", "helix"]);
    assert!(
        ok && text.contains(&editor_id) && !text.contains("staging"),
        "{text}"
    );

    let found = json(
        &daemon,
        &["search", "which editor does he prefer", "--json"],
    );
    assert_eq!(
        found["items"][0]["fact"]["id"],
        editor_id.as_str(),
        "{found}"
    );
    assert!(found["items"][0]["score"].as_f64().unwrap() > 0.0);
    let (ok, text) = cli(&daemon, &["search", "quantum chromodynamics"]);
    assert!(ok && text.contains("Nothing found"), "{text}");
    // The default local model is not downloaded under test: search says it went by words.
    assert!(
        text.contains(
            "Memory recalls by words only until the local model local/multilingual-e5-small is ready"
        ),
        "{text}"
    );
    let (ok, text) = cli(&daemon, &["status"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("by words only until the local model local/multilingual-e5-small is ready")
            && text.contains("downloaded into the Souz home on first use"),
        "{text}"
    );
    let status = json(&daemon, &["status", "--json"]);
    assert_eq!(
        status,
        serde_json::json!({"model": "local/multilingual-e5-small", "local": {"state": "missing"}}),
        "SOUZ_NO_MODEL_DOWNLOADS keeps a test daemon off the internet"
    );

    let (ok, text) = cli(&daemon, &["show", &editor_id]);
    assert!(ok, "{text}");
    assert!(
        text.contains("Editor") && text.contains("user.preference.editor"),
        "{text}"
    );
    assert!(text.contains("evidence: manual (written by hand"), "{text}");

    let (ok, text) = cli(&daemon, &["forget", &editor_id]);
    assert!(ok, "{text}");
    let (ok, text) = cli(&daemon, &["show", &editor_id]);
    assert!(!ok, "{text}");
    assert!(text.contains("not found"), "{text}");
    let page = json(&daemon, &["list", "--status", "all", "--json"]);
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
    let staging = page["items"][0]["id"].as_str().unwrap().to_owned();
    let (ok, text) = cli(&daemon, &["forget", "--retire", &staging]);
    assert!(ok, "{text}");
    let page = json(&daemon, &["list", "--status", "retired", "--json"]);
    assert_eq!(page["items"][0]["status"], "RETIRED", "{page}");
    assert_eq!(
        json(&daemon, &["list", "--json"])["items"],
        serde_json::json!([])
    );
}

#[test]
fn ids_by_their_start_titles_once_statuses_and_russian_labels() {
    let daemon = Daemon::start();
    let fact = json(
        &daemon,
        &["add", "Deploys go through staging first", "--json"],
    );
    let id = fact["id"].as_str().unwrap().to_owned();
    let other = json(
        &daemon,
        &[
            "add",
            "Backups run at night",
            "--title",
            "Backups",
            "--json",
        ],
    );
    let other_id = other["id"].as_str().unwrap().to_owned();

    // A fact without a title of its own is listed once, not as "title: title".
    let (ok, text) = cli(&daemon, &["list"]);
    assert!(ok, "{text}");
    let line = text.lines().find(|line| line.starts_with(&id)).unwrap();
    assert_eq!(line.matches("staging").count(), 1, "{line}");
    let line = text
        .lines()
        .find(|line| line.starts_with(&other_id))
        .unwrap();
    assert!(line.contains("Backups: Backups run at night"), "{line}");

    // `show` and `forget` take the start of an id, as `approvals` does.
    let shared = id
        .chars()
        .zip(other_id.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let prefix = &id[..shared + 1];
    let (ok, text) = cli(&daemon, &["show", prefix]);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("id {id}")), "{text}");
    let (ok, text) = cli(&daemon, &["show", &id[..shared]]);
    assert!(!ok && text.contains("matches 2 ids"), "{text}");
    let (ok, text) = cli(&daemon, &["forget", "--retire", prefix]);
    assert!(ok && text.contains(&id), "{text}");

    // A list of every status says each fact's status.
    let (ok, text) = cli(&daemon, &["list", "--status", "all"]);
    assert!(ok, "{text}");
    let line = text.lines().find(|line| line.starts_with(&id)).unwrap();
    assert!(line.contains(" retired "), "{line}");
    let line = text
        .lines()
        .find(|line| line.starts_with(&other_id))
        .unwrap();
    assert!(line.contains(" active "), "{line}");

    // In the interface language chosen in Souz, labels are Russian (ids, kinds and statuses
    // stay as they are).
    let patched = daemon.patch(
        "/v1/me/settings",
        &serde_json::json!({"interfaceLanguage": "ru"}),
    );
    assert_eq!(patched.status, 200, "{}", patched.body);
    let russian = |args: &[&str]| cli(&daemon, args).1;
    let text = russian(&["show", &other_id]);
    assert!(text.contains("источник: manual (записан вручную"), "{text}");
    let text = russian(&["status"]);
    assert!(text.contains("Память ищет только по словам"), "{text}");
    let text = russian(&["search", "quantum chromodynamics"]);
    assert!(text.contains("Ничего не найдено."), "{text}");
}

#[test]
fn bad_input_exits_non_zero_and_stores_nothing() {
    let daemon = Daemon::start();
    for args in [
        vec!["add", "   "],
        vec!["add", "ok", "--kind", "gossip"],
        vec!["add", "ok", "--scope", "galaxy:far"],
        vec!["add", "ok", "--key", "not.controlled"],
        vec!["list", "--status", "sometimes"],
        vec!["search", " "],
        vec!["forget", "no-such-fact"],
    ] {
        let (ok, text) = cli(&daemon, &args);
        assert!(!ok, "{args:?}: {text}");
        assert!(!text.trim().is_empty(), "{args:?}: a clear message");
    }
    let page = json(&daemon, &["list", "--status", "all", "--json"]);
    assert_eq!(page["items"], serde_json::json!([]));
}

/// Memory facts as MCP resources, with the official Python SDK as the client: the global fact
/// is listed and read as Markdown, a session fact is not a resource, an unknown id is refused,
/// and storing a fact tells the session `notifications/resources/list_changed`.
#[test]
fn the_python_sdk_reads_memory_facts_as_resources() {
    let clients = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    let python = clients.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh, which installs the MCP test clients",
        python.display()
    );
    let daemon = Daemon::start();
    let tea = daemon.post(
        "/v1/memory",
        &serde_json::json!({
            "body": "Prefers green tea",
            "title": "Tea",
            "kind": "PREFERENCE",
            "canonical_key": "user.preference.tea",
        }),
    );
    assert_eq!(tea.status, 201, "{}", tea.body);
    let session = daemon.post(
        "/v1/memory",
        &serde_json::json!({"body": "Draft is in notes.md", "scope": "session:chat-1"}),
    );
    assert_eq!(session.status, 201, "{}", session.body);
    let tea: serde_json::Value = serde_json::from_str(&tea.body).unwrap();

    let output = std::process::Command::new(python)
        .arg(clients.join("python/memory_resources.py"))
        .arg(format!("http://{}", daemon.address))
        .arg(&daemon.token)
        .arg(tea["id"].as_str().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for check in [
        "resources-list",
        "resources-read",
        "resources-templates",
        "resources-read-unknown",
        "resources-list-changed",
    ] {
        assert!(
            stdout.lines().any(|line| line == format!("ok {check}")),
            "{check} did not run:\n{stdout}"
        );
    }
}

/// A local embedding model whose download fails (its mirror, on this machine, has none of its
/// files): `souz memory search` says the search went by words only because the download
/// failed, with why and that Souz tries again, in the language chosen in Souz.
#[test]
fn a_failed_model_download_is_said_by_memory_search() {
    let mirror = crate::chats::provider();
    let host = mirror.provider.address().to_string();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[memory]\nlocal_model_mirror = \"http://{host}\"\n\n\
             [sandbox]\nnetwork_allow_hosts = [\"{host}\"]\n"
        ),
    )
    .unwrap();
    // Downloads allowed: the only place they can go is the mirror above.
    let daemon = Daemon::start_in(home, |command| {
        command.env("SOUZ_NO_MODEL_DOWNLOADS", "");
    });
    let (ok, text) = cli(&daemon, &["add", "Green tea in the morning"]);
    assert!(ok, "{text}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let status = json(&daemon, &["status", "--json"]);
        if status["local"]["state"] == "failed" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{status}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        !mirror.provider.requests().is_empty(),
        "the download went to the mirror"
    );

    let (ok, text) = cli(&daemon, &["search", "green tea"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("Green tea in the morning"),
        "found by words: {text}"
    );
    assert!(
        text.contains(
            "Memory recalls by words only until the local model local/multilingual-e5-small is \
             ready: its download failed ("
        ) && text.contains("Souz tries again later."),
        "{text}"
    );

    let patched = daemon.patch(
        "/v1/me/settings",
        &serde_json::json!({"interfaceLanguage": "ru"}),
    );
    assert_eq!(patched.status, 200, "{}", patched.body);
    let (ok, text) = cli(&daemon, &["search", "green tea"]);
    assert!(ok, "{text}");
    assert!(
        text.contains(
            "Память ищет только по словам, пока не готова локальная модель \
             local/multilingual-e5-small: её скачивание не удалось ("
        ) && text.contains("Souz попробует ещё раз позже."),
        "{text}"
    );
}
