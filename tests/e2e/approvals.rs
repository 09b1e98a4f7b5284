//! The approval gate end to end: the real daemon, real file tools, decisions through the HTTP
//! API and the `souz` CLI.

use serde_json::{Value, json};
use souz_e2e::Daemon;

fn cli_output(daemon: &Daemon, args: &[&str]) -> (bool, String, String) {
    let output = daemon.cli().args(args).output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn start_waiting_call(daemon: &Daemon, tool: &str, arguments: Value) -> (String, String) {
    let response = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": tool, "arguments": arguments, "wait_ms": 300}),
    );
    assert_eq!(response.status, 202, "{}", response.body);
    let call = response.json();
    assert_eq!(call["status"], "waiting_approval", "{call}");
    (
        call["id"].as_str().unwrap().to_owned(),
        call["approval_id"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn read_only_calls_run_at_once_and_writes_wait_for_a_yes() {
    let daemon = Daemon::start();
    std::fs::write(daemon.user_home().join("hello.txt"), "hi").unwrap();

    let listed = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "ListFiles", "arguments": {"path": "~"}}),
    );
    assert_eq!(listed.status, 200, "{}", listed.body);
    let listed = listed.json();
    assert_eq!(listed["status"], "succeeded", "{listed}");
    assert!(
        listed["result"]["text"]
            .as_str()
            .unwrap()
            .contains("hello.txt"),
        "{listed}"
    );

    // A write waits; the person approves it through the CLI (by id prefix); it then runs.
    let (call_id, approval_id) = start_waiting_call(
        &daemon,
        "NewFile",
        json!({"path": "notes/todo.md", "text": "buy milk\n"}),
    );
    let target = daemon.user_home().join("notes/todo.md");
    assert!(!target.exists(), "nothing is written before the yes");
    let pending = daemon.get("/v1/approvals?status=pending").json();
    let approval = &pending["items"][0];
    assert_eq!(approval["id"], approval_id.as_str());
    assert_eq!(approval["tool"], "NewFile");
    assert_eq!(approval["requester"]["kind"], "api");
    assert!(
        approval["diff"].as_str().unwrap().contains("+buy milk"),
        "{approval}"
    );

    let (ok, stdout, stderr) = cli_output(&daemon, &["approvals"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("NewFile"), "{stdout}");
    let (ok, stdout, stderr) = cli_output(&daemon, &["approvals", "show", &approval_id[..13]]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("+buy milk"), "{stdout}");
    let (ok, stdout, stderr) = cli_output(&daemon, &["approvals", "approve", &approval_id[..13]]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("Approved:"), "{stdout}");

    let call = daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |c| {
        c["status"] == "succeeded"
    });
    assert_eq!(call["result"]["is_error"], false);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "buy milk\n");

    // A second decision on the same approval conflicts.
    let again = daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "deny"}),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(again.json()["error"]["code"], "conflict");
}

#[test]
fn denial_and_scoped_grants() {
    let daemon = Daemon::start();
    // Denied through the HTTP API: nothing happens and the caller sees why.
    let (call_id, approval_id) =
        start_waiting_call(&daemon, "NewFile", json!({"path": "a.txt", "text": "x"}));
    let denied = daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "deny", "via": "ui"}),
    );
    assert_eq!(denied.status, 200, "{}", denied.body);
    let call = daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |c| {
        c["status"] == "denied"
    });
    assert_eq!(call["result"]["is_error"], true);
    assert!(!daemon.user_home().join("a.txt").exists());

    // Approved with the suggested scope: later similar calls run without asking.
    std::fs::create_dir_all(daemon.user_home().join("p")).unwrap();
    let (call_id, approval_id) = start_waiting_call(
        &daemon,
        "NewFile",
        json!({"path": "p/one.txt", "text": "1"}),
    );
    let (ok, stdout, stderr) = cli_output(
        &daemon,
        &["approvals", "approve", &approval_id, "--suggested"],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Grant"), "{stdout}");
    daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |c| {
        c["status"] == "succeeded"
    });
    let second = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "NewFile", "arguments": {"path": "p/two.txt", "text": "2"}}),
    );
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(second.json()["status"], "succeeded");
    // Outside the granted folder it asks again.
    let outside = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "NewFile", "arguments": {"path": "q.txt", "text": "3"}, "wait_ms": 200}),
    );
    assert_eq!(outside.status, 202);

    // Revoking the grant makes the folder ask again.
    let grants = daemon.get("/v1/grants").json();
    let grant_id = grants["items"][0]["id"].as_str().unwrap().to_owned();
    let (ok, _, stderr) = cli_output(&daemon, &["grants", "revoke", &grant_id]);
    assert!(ok, "{stderr}");
    let third = daemon.post("/v1/tool-calls", &json!({"tool": "NewFile", "arguments": {"path": "p/three.txt", "text": "3"}, "wait_ms": 200}));
    assert_eq!(third.status, 202, "{}", third.body);

    // The audit has a row per call, with who decided.
    let audit = daemon.get("/v1/audit?limit=50").json();
    let rows = audit["items"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        3,
        "the two calls still waiting have no row yet: {audit}"
    );
    assert!(
        rows.iter().any(|r| r["decided_by"]["kind"] == "grant"),
        "{audit}"
    );
    assert!(
        rows.iter()
            .any(|r| r["decided_by"]["kind"] == "person" && r["decided_by"]["via"] == "ui"),
        "{audit}"
    );
}

#[test]
fn cli_output_into_a_closed_pipe_ends_quietly() {
    let daemon = Daemon::start();
    // The reader is gone before the command writes a byte, as with `souz tools list | head -0`.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = daemon
        .cli()
        .args(["tools", "list"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn cli_tools_and_validation() {
    let daemon = Daemon::start();
    let (ok, stdout, stderr) = cli_output(&daemon, &["tools", "list"]);
    assert!(ok, "{stderr}");
    for tool in ["ListFiles", "NewFile", "EditFile", "DeleteFile", "MoveFile"] {
        assert!(stdout.contains(tool), "{tool} missing from\n{stdout}");
    }
    let newfile_line = stdout.lines().find(|l| l.starts_with("NewFile")).unwrap();
    assert!(newfile_line.contains("ask"), "{newfile_line}");
    std::fs::write(daemon.user_home().join("x.md"), "hello").unwrap();
    let (ok, stdout, stderr) = cli_output(
        &daemon,
        &[
            "tools",
            "call",
            "SearchFileContent",
            "--args",
            r#"{"query":"hello"}"#,
        ],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("x.md"), "{stdout}");
    let (ok, _, stderr) = cli_output(
        &daemon,
        &["tools", "call", "ListFiles", "--args", "not json"],
    );
    assert!(!ok);
    assert!(stderr.contains("--args must be a JSON object"), "{stderr}");

    for (body, code) in [
        (
            json!({"tool": "ListFiles", "wait_ms": 700_000}),
            "invalid_request",
        ),
        (json!({"tool": ""}), "invalid_request"),
        (json!({"arguments": {}}), "invalid_request"),
        (json!({"tool": "ListFiles", "extra": 1}), "invalid_request"),
    ] {
        let response = daemon.post("/v1/tool-calls", &body);
        assert_eq!(response.status, 400, "{body}: {}", response.body);
        assert_eq!(response.json()["error"]["code"], code);
    }
    let bad_decision = daemon.post("/v1/approvals/x/decision", &json!({"decision": "maybe"}));
    assert_eq!(bad_decision.status, 400);
    let missing = daemon.post(
        "/v1/approvals/nope/decision",
        &json!({"decision": "approve"}),
    );
    assert_eq!(missing.status, 404);
    assert_eq!(daemon.get("/v1/tool-calls/nope").status, 404);
    let (ok, _, stderr) = cli_output(&daemon, &["approvals", "approve", "zzzz"]);
    assert!(!ok);
    assert!(
        stderr.contains("no approval id starts with `zzzz`"),
        "{stderr}"
    );
}

#[test]
fn a_restart_denies_what_was_pending() {
    let daemon = Daemon::start();
    let (call_id, approval_id) =
        start_waiting_call(&daemon, "NewFile", json!({"path": "late.txt", "text": "x"}));
    let stopped = daemon.stop("KILL");
    let daemon = Daemon::restart(stopped);
    let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
    assert_eq!(approval["status"], "expired", "{approval}");
    assert_eq!(approval["expiry_reason"], "restart");
    let call = daemon.get(&format!("/v1/tool-calls/{call_id}")).json();
    assert_eq!(call["status"], "failed", "{call}");
    let late = daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve"}),
    );
    assert_eq!(late.status, 409);
    assert!(!daemon.user_home().join("late.txt").exists());
}

#[test]
fn secrets_never_reach_the_audit_or_the_logs() {
    let daemon = Daemon::start_with(|command| {
        command.env("SOUZ_LOG", "debug");
    });
    let secret = "sk-proj-e2eSECRETe2eSECRETe2e";
    let command = format!("OPENAI_API_KEY={secret} echo done");
    // Denied quickly by the person, so nothing runs; the arguments still reach the audit.
    let (call_id, approval_id) =
        start_waiting_call(&daemon, "RunCommand", json!({"command": command}));
    let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
    assert_eq!(
        approval["arguments"]["command"],
        command.as_str(),
        "the person sees the full call"
    );
    daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "deny"}),
    );
    daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |c| {
        c["status"] == "denied"
    });
    // Approved, so it runs and announces itself: its events carry the summary, redacted.
    let (ran, approval_id) = start_waiting_call(&daemon, "RunCommand", json!({"command": command}));
    daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve"}),
    );
    daemon.wait_until(&format!("/v1/tool-calls/{ran}"), |c| {
        c["status"] == "succeeded"
    });
    let result = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "Calculator", "arguments": {"expression": "2+2"}}),
    );
    assert_eq!(result.json()["result"]["text"], "4");

    let audit = daemon.get("/v1/audit").body;
    assert!(audit.contains("[REDACTED]"), "{audit}");
    assert!(!audit.contains(secret), "{audit}");
    let home = daemon.home.path().to_owned();
    let stopped = daemon.stop("TERM");
    assert!(!stopped.stderr.contains(secret), "stderr leaked the secret");
    let token = std::fs::read_to_string(home.join("token")).unwrap();
    for entry in std::fs::read_dir(home.join("logs")).unwrap() {
        let log = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!log.is_empty());
        assert!(!log.contains(secret), "a log file leaked the secret");
        assert!(
            !log.contains(token.trim()),
            "a log file leaked the API token"
        );
    }
    assert!(!stopped.stderr.contains(token.trim()));
    let database = rusqlite::Connection::open(home.join("souz.db")).unwrap();
    let mut query = database
        .prepare("SELECT payload FROM runtime_events WHERE kind LIKE 'tool.call.%'")
        .unwrap();
    let events: Vec<String> = query
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        events.iter().any(|event| event.contains("[REDACTED]")),
        "{events:?}"
    );
    assert!(
        events.iter().all(|event| !event.contains(secret)),
        "a tool call event leaked the secret: {events:?}"
    );
}

#[test]
fn audit_pages_and_filters() {
    let daemon = Daemon::start();
    for expression in ["1+1", "2*3", "10/4", "nope("] {
        daemon.post(
            "/v1/tool-calls",
            &json!({"tool": "Calculator", "arguments": {"expression": expression}}),
        );
    }
    daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "ListFiles", "arguments": {}}),
    );
    let first = daemon.get("/v1/audit?limit=2").json();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let before = first["next_before"].as_i64().unwrap();
    let second = daemon
        .get(&format!("/v1/audit?limit=10&before={before}"))
        .json();
    assert_eq!(second["items"].as_array().unwrap().len(), 3);
    assert!(second["next_before"].is_null());
    let ids: Vec<i64> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["items"].as_array().unwrap())
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[0] > w[1]),
        "newest first, no overlap: {ids:?}"
    );
    let calculator = daemon.get("/v1/audit?tool=Calculator").json();
    assert_eq!(calculator["items"].as_array().unwrap().len(), 4);
    let failed = daemon.get("/v1/audit?outcome=failed").json();
    assert_eq!(failed["items"].as_array().unwrap().len(), 1, "{failed}");
    assert_eq!(failed["items"][0]["arguments"]["expression"], "nope(");
    assert_eq!(daemon.get("/v1/audit?limit=0").status, 400);
    assert_eq!(daemon.get("/v1/audit?outcome=exploded").status, 400);

    // One more call from the command line: the requester filter tells them apart.
    let (ok, _, stderr) = cli_output(
        &daemon,
        &[
            "tools",
            "call",
            "Calculator",
            "--args",
            r#"{"expression":"7*6"}"#,
        ],
    );
    assert!(ok, "{stderr}");
    let from_cli = daemon.get("/v1/audit?requester=cli").json();
    assert_eq!(from_cli["items"].as_array().unwrap().len(), 1, "{from_cli}");
    assert_eq!(from_cli["items"][0]["arguments"]["expression"], "7*6");
    let from_api = daemon.get("/v1/audit?requester=api").json();
    assert_eq!(from_api["items"].as_array().unwrap().len(), 5, "{from_api}");
    let from_chat = daemon.get("/v1/audit?chat_id=0193f2aa").json();
    assert_eq!(
        from_chat["items"].as_array().unwrap().len(),
        0,
        "{from_chat}"
    );
    assert_eq!(daemon.get("/v1/audit?requester=robot").status, 400);
}

#[test]
fn the_cli_shows_terminal_controls_and_bidi_characters_escaped() {
    let daemon = Daemon::start();
    // A command whose text would retitle the terminal, clear it, and show `exe.txt` for
    // `txt.exe` if printed raw.
    let command = "echo \u{1b}]0;pwned\u{7}\u{1b}[2J invoice\u{202e}txt.exe";
    let (_call, approval_id) =
        start_waiting_call(&daemon, "RunCommand", json!({"command": command}));
    for args in [
        vec!["approvals", "list"],
        vec!["approvals", "show", approval_id.as_str()],
        vec!["approvals", "show", approval_id.as_str(), "--json"],
    ] {
        let (ok, stdout, stderr) = cli_output(&daemon, &args);
        assert!(ok, "{args:?}: {stderr}");
        for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
            assert!(
                !stdout.contains(raw),
                "{args:?} printed {raw:?} raw: {stdout}"
            );
        }
        if args.contains(&"--json") {
            let shown: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(
                shown["arguments"]["command"], command,
                "JSON keeps the value"
            );
        } else {
            assert!(stdout.contains(r"\u{202E}"), "{args:?}: {stdout}");
        }
    }
}

/// What `souz approvals` prints in a terminal whose locale is English.
fn approvals_in_english(daemon: &Daemon) -> String {
    let output = daemon
        .cli()
        .env("LANG", "en_US.UTF-8")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .args(["approvals"])
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn the_cli_speaks_the_interface_language_chosen_in_souz() {
    let daemon = Daemon::start();
    assert_eq!(approvals_in_english(&daemon), "Nothing is waiting for you.");
    // Chosen in Souz (the Settings page, PATCH /v1/me/settings): the CLI follows it, whatever
    // the terminal's locale says.
    let patched = daemon.patch("/v1/me/settings", &json!({"interfaceLanguage": "ru"}));
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        approvals_in_english(&daemon),
        "Ничто не ждёт вашего решения."
    );
    // A refusal from the daemon is said in that language too (its own words kept inside),
    // also by a command that prints nothing else.
    let (ok, _, stderr) = cli_output(&daemon, &["memory", "forget", "0123abcd"]);
    assert!(!ok);
    assert!(
        stderr.starts_with("souz: Не найдено: ") && stderr.contains("0123abcd"),
        "{stderr}"
    );
    // What a call will do is said in that language too (the queue, the CLI and the
    // notifications show it), and still after a restart.
    let (_, approval) = start_waiting_call(
        &daemon,
        "NewFile",
        json!({"path": "notes/todo.md", "text": "buy milk\nbread\n"}),
    );
    // An approval's text at `pointer` (`/summary`, `/suggested/label`).
    let said = |daemon: &Daemon, approval: &str, pointer: &str| {
        let approval = daemon.get(&format!("/v1/approvals/{approval}")).json();
        approval
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        said(&daemon, &approval, "/summary"),
        "Создать файл ~/notes/todo.md (2 строки, 15 Б)"
    );
    let offered = said(&daemon, &approval, "/suggested/label");
    assert!(
        offered.starts_with("Всегда разрешать ") && offered.contains("в ~/notes"),
        "{offered}"
    );
    assert!(
        approvals_in_english(&daemon).contains("Создать файл ~/notes/todo.md"),
        "{}",
        approvals_in_english(&daemon)
    );
    // Every command's labels, not only the lists: `approvals show` (keys, skills and pause
    // at the end).
    let (ok, shown, _) = cli_output(&daemon, &["approvals", "show", &approval]);
    assert!(ok, "{shown}");
    for label in [
        "Одобрение ",
        "Состояние ",
        "Инструмент ",
        "Почему ",
        "Аргументы ",
    ] {
        assert!(shown.contains(label), "{label:?} missing: {shown}");
    }
    assert!(!shown.contains("Status "), "{shown}");
    // Taken, it is a grant labelled in that language.
    let offer = daemon.get(&format!("/v1/approvals/{approval}")).json()["suggested"].clone();
    let taken = daemon.post(
        &format!("/v1/approvals/{approval}/decision"),
        &json!({"decision": "approve", "scope": offer["scope"], "match": offer["match"],
                "tool_group": offer["tool_group"]}),
    );
    assert_eq!(taken.status, 200, "{}", taken.body);
    let granted = || daemon.get("/v1/grants").json()["items"][0]["label"].clone();
    assert!(
        granted().as_str().unwrap().starts_with("Разрешить "),
        "{}",
        granted()
    );
    let daemon = Daemon::restart(daemon.stop("TERM"));
    std::fs::create_dir_all(daemon.user_home().join("old")).unwrap();
    std::fs::write(daemon.user_home().join("old/a.txt"), "abc").unwrap();
    let (_, approval) = start_waiting_call(&daemon, "DeleteFile", json!({"path": "~/old"}));
    assert_eq!(
        said(&daemon, &approval, "/summary"),
        "Переместить папку ~/old в Корзину (1 файл, 0 папок, 3 Б)"
    );
    for (args, expected) in [
        (&["keys"][..], "Ключей провайдеров нет"),
        (&["skills"], "Навыков нет."),
        (&["pause"], "Souz на паузе"),
        (&["resume"], "Souz работает."),
    ] {
        let (ok, stdout, stderr) = cli_output(&daemon, args);
        assert!(
            ok && stdout.contains(expected),
            "{args:?}: {stdout}{stderr}"
        );
    }
}
