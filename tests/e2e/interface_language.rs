//! The CLI in the interface language chosen in Souz (issue 46), command by command: `history`,
//! `undo`, `models`, `mcp servers` (add, list, test), `telegram`, `clients` (add, list,
//! revoke), `tools` and `ui --open` print their labels and messages in English when English is
//! chosen and in Russian when Russian is, whatever the terminal's locale says. (`approvals`,
//! `memory`, `keys`, `skills`, `pause`: `approvals::the_cli_speaks_the_interface_language_chosen_in_souz`
//! and `memory`; `questions show`: `questions`.)

use std::time::{Duration, Instant};

use serde_json::json;
use souz_e2e::Daemon;

/// What a command printed (stdout and stderr), and whether it succeeded, run in a terminal
/// whose locale is `locale`.
fn said(daemon: &Daemon, locale: &str, args: &[&str], path: Option<&std::path::Path>) -> String {
    let mut command = daemon.cli();
    command
        .env("LANG", locale)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .args(args);
    if let Some(path) = path {
        command.env("PATH", path);
    }
    let output = command.output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Chooses `language` in Souz (the Settings page's `PATCH /v1/me/settings`).
fn choose(daemon: &Daemon, language: &str) {
    let patched = daemon.patch("/v1/me/settings", &json!({"interfaceLanguage": language}));
    assert_eq!(patched.status, 200, "{}", patched.body);
}

/// A file written by the gate's `NewFile`, approved: a change in `souz history`.
fn approved_write(daemon: &Daemon, path: &str) {
    let response = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "NewFile", "arguments": {"path": path, "text": "milk\n"}, "wait_ms": 300}),
    );
    assert_eq!(response.status, 202, "{}", response.body);
    let call = response.json();
    let approval = call["approval_id"].as_str().unwrap();
    let decided = daemon.post(
        &format!("/v1/approvals/{approval}/decision"),
        &json!({"decision": "approve"}),
    );
    assert_eq!(decided.status, 200, "{}", decided.body);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !daemon.user_home().join(path).exists() {
        assert!(Instant::now() < deadline, "{path} was not written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Each command's output in one language: the words `expected` holds for each command must be
/// in it, and those of the other language (`foreign`) must not.
fn check(daemon: &Daemon, locale: &str, cases: &[(&[&str], &[&str], &[&str])]) {
    let no_programs = tempfile::tempdir().unwrap();
    for (args, expected, foreign) in cases {
        // `ui --open` finds no browser launcher on an empty PATH: its error is said.
        let path = args.contains(&"--open").then(|| no_programs.path());
        let text = said(daemon, locale, args, path);
        for word in *expected {
            assert!(text.contains(word), "{args:?}: no {word:?} in\n{text}");
        }
        for word in *foreign {
            assert!(!text.contains(word), "{args:?}: {word:?} in\n{text}");
        }
    }
}

#[test]
fn every_command_speaks_the_language_chosen_in_souz() {
    let daemon = Daemon::start();
    approved_write(&daemon, "notes/list.md");

    // English chosen in Souz, in a Russian terminal.
    choose(&daemon, "en");
    check(
        &daemon,
        "ru_RU.UTF-8",
        &[
            (&["history"], &[" by ", "    call "], &["вызов"]),
            (&["undo"], &["say what to undo"], &["укажите"]),
            (&["models"], &["engine:"], &["движок"]),
            (
                &[
                    "mcp",
                    "servers",
                    "add",
                    "gone-en",
                    "--",
                    "/nonexistent/mcp-server",
                ],
                &[
                    "Saved [mcp.servers.gone-en] to config.toml.",
                    "Souz applies it now",
                ],
                &["сохранён"],
            ),
            (
                &["mcp", "servers"],
                &["not connected", "0 tools"],
                &["подключён"],
            ),
            (
                &["mcp", "servers", "test", "gone-en"],
                &["gone-en: failed: "],
                &["ошибка"],
            ),
            (
                &["telegram"],
                &["Telegram: ", "bot token ", "No account linked"],
                &["токен"],
            ),
            (
                &["clients", "add", "e2e-en"],
                &["Its token, shown this once:"],
                &["токен"],
            ),
            (&["clients"], &["e2e-en", " ago"], &["создан"]),
            (
                &["clients", "revoke", "e2e-en"],
                &["Revoked client "],
                &["отозван"],
            ),
            (&["tools", "list"], &["TOOL", "DESCRIPTION"], &["ОПИСАНИЕ"]),
            (
                &["ui", "--open"],
                &["could not run `xdg-open`"],
                &["не удалось"],
            ),
        ],
    );

    // Russian chosen in Souz, in an English terminal.
    choose(&daemon, "ru");
    check(
        &daemon,
        "en_US.UTF-8",
        &[
            (
                &["history"],
                &[", клиент ", "    вызов "],
                &[" by ", "    call "],
            ),
            (&["undo"], &["укажите, что отменить"], &["say what"]),
            (&["models"], &["движок:"], &["engine"]),
            (
                &[
                    "mcp",
                    "servers",
                    "add",
                    "gone-ru",
                    "--",
                    "/nonexistent/mcp-server",
                ],
                &[
                    "[mcp.servers.gone-ru] сохранён в config.toml.",
                    "Souz применяет его сейчас",
                ],
                &["Saved", "applies"],
            ),
            (
                &["mcp", "servers"],
                &["gone-en", "gone-ru", "не подключён", "0 инструментов"],
                &["not connected", "0 tools"],
            ),
            (
                &["mcp", "servers", "test", "gone-ru"],
                &["gone-ru: ошибка: "],
                &[": failed:"],
            ),
            (
                &["telegram"],
                &["Telegram: ", "токен бота ", "Аккаунт не привязан"],
                &["bot token", "No account"],
            ),
            (
                &["clients", "add", "e2e-ru"],
                &["Его токен (показывается только сейчас):"],
                &["shown"],
            ),
            (
                &["clients"],
                &["e2e-ru", "создан ", " назад"],
                &["made", " ago"],
            ),
            (
                &["clients", "revoke", "e2e-ru"],
                &["Токен клиента ", " отозван."],
                &["Revoked"],
            ),
            (
                &["tools", "list"],
                &["ИНСТРУМЕНТ", "ОПИСАНИЕ"],
                &["DESCRIPTION"],
            ),
            (
                &["ui", "--open"],
                &["не удалось запустить `xdg-open`"],
                &["could not"],
            ),
        ],
    );
}
