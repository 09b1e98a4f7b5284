//! `souz schedules` end to end: the real CLI against a real daemon. `add` shows the next fires
//! (in the terminal's local time, here `TZ=UTC`) and what the schedule may do unasked before
//! storing, refuses without a terminal unless `--yes`; `list`, `show`, `pause`/`resume` (the
//! next fire goes and comes back), `run` and `history` (read against the API), `rm`; an invalid
//! cron and an unknown zone are the daemon's refusal with nothing stored; Russian output.

use serde_json::Value;
use souz_e2e::Daemon;

/// Runs `souz ARGS` against `daemon` in an English UTC terminal: (success, stdout, stderr).
fn cli(daemon: &Daemon, args: &[&str]) -> (bool, String, String) {
    cli_in(daemon, "UTC", args)
}

/// Like [`cli`], in a terminal whose local time zone is `zone`.
fn cli_in(daemon: &Daemon, zone: &str, args: &[&str]) -> (bool, String, String) {
    let output = daemon
        .cli()
        .env("TZ", zone)
        .env("LANG", "en_US.UTF-8")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .args(args)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The stored schedules, from the API.
fn stored(daemon: &Daemon) -> Vec<Value> {
    let list = daemon.get("/v1/schedules");
    assert_eq!(list.status, 200, "{}", list.body);
    list.json()["items"].as_array().unwrap().clone()
}

/// `2026-12-07T05:30:00Z` as the CLI shows it in UTC: `2026-12-07 05:30`.
fn shown(time: &Value) -> String {
    let time = time.as_str().unwrap();
    format!("{} {}", &time[..10], &time[11..16])
}

const WEEKDAYS: &[&str] = &["30", "8", "*", "*", "1-5"];

fn add_weekdays(daemon: &Daemon, name: &str, extra: &[&str]) -> (bool, String, String) {
    let cron = WEEKDAYS.join(" ");
    let mut args = vec![
        "schedules",
        "add",
        name,
        "--cron",
        &cron,
        "--zone",
        "Europe/Moscow",
        "--prompt",
        "Summarise my inbox folder",
    ];
    args.extend_from_slice(extra);
    cli(daemon, &args)
}

#[test]
fn the_cli_adds_lists_shows_pauses_resumes_and_removes_a_schedule() {
    let daemon = Daemon::start();
    let (ok, stdout, stderr) = cli(&daemon, &["schedules"]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("No schedules."), "{stdout}");

    // No terminal and no --yes: it shows what it would store, then refuses; nothing stored.
    let (ok, stdout, stderr) = add_weekdays(&daemon, "Inbox summary", &[]);
    assert!(!ok);
    assert!(stdout.contains("read-only tools only"), "{stdout}");
    assert!(
        stderr.contains("not a terminal") && stderr.contains("--yes"),
        "{stderr}"
    );
    assert!(stored(&daemon).is_empty());

    // With --yes: the preview the daemon computes, in local time (08:30 Moscow is 05:30 UTC).
    let (ok, stdout, stderr) = add_weekdays(&daemon, "Inbox summary", &["--yes"]);
    assert!(ok, "{stderr}");
    let preview = daemon
        .get("/v1/schedules/preview?spec=30%208%20*%20*%201-5&zone=Europe/Moscow")
        .json();
    let fires = preview["fires"].as_array().unwrap();
    assert_eq!(fires.len(), 5);
    for fire in fires {
        assert!(shown(fire).ends_with("05:30"), "{fire}");
        assert!(stdout.contains(&shown(fire)), "{} in {stdout}", shown(fire));
    }
    assert!(
        stdout.contains("30 8 * * 1-5 in Europe/Moscow; next fires (your local time):"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Runs the prompt \"Summarise my inbox folder\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("Unasked, its runs may use:\n  read-only tools only"),
        "{stdout}"
    );
    let schedules = stored(&daemon);
    assert_eq!(schedules.len(), 1);
    let schedule = &schedules[0];
    let id = schedule["id"].as_str().unwrap().to_owned();
    assert_eq!(schedule["spec"], "30 8 * * 1-5");
    assert_eq!(schedule["zone"], "Europe/Moscow");
    assert_eq!(schedule["missed"]["type"], "run_once");
    assert!(stdout.contains(&format!("Created schedule Inbox summary ({id})")));

    // An envelope is shown as it is stored; policies as typed.
    let (ok, stdout, stderr) = cli(
        &daemon,
        &[
            "schedules",
            "add",
            "Tidy downloads",
            "--in",
            "2 hours",
            "--skill",
            "tidy",
            "--allow-tool",
            "NewFile",
            "--allow-folder",
            "~/Downloads",
            "--allow-host",
            "example.com",
            "--missed",
            "catch-up:3",
            "--overlap",
            "queue-one",
            "--yes",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("tools:   read-only ones and NewFile"),
        "{stdout}"
    );
    assert!(stdout.contains("folders: ~/Downloads"), "{stdout}");
    assert!(stdout.contains("hosts:   example.com"), "{stdout}");
    let tidy = stored(&daemon)
        .into_iter()
        .find(|schedule| schedule["name"] == "Tidy downloads")
        .unwrap();
    assert!(tidy["spec"].as_str().unwrap().starts_with("at "), "{tidy}");
    // What the preview showed is what was stored (the relative time resolved once).
    assert!(stdout.contains(&shown(&tidy["nextFire"])), "{stdout}");
    assert_eq!(tidy["envelope"]["tools"][0], "NewFile");
    assert_eq!(tidy["envelope"]["hosts"][0], "example.com");
    assert_eq!(tidy["missed"]["limit"], 3);
    assert_eq!(tidy["overlap"], "queue_one");
    assert_eq!(tidy["action"]["skill"], "tidy");

    let next = shown(&schedule["nextFire"]);
    let (ok, stdout, stderr) = cli(&daemon, &["schedules", "list"]);
    assert!(ok, "{stderr}");
    let line = stdout
        .lines()
        .find(|line| line.contains("Inbox summary"))
        .unwrap();
    for part in [&id[..8], "30 8 * * 1-5", "Europe/Moscow", &next, "active"] {
        assert!(line.contains(part), "{part} in {line}");
    }

    let (ok, stdout, stderr) = cli(&daemon, &["schedules", "show", "Inbox summary"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains(&format!("Id        {id}")), "{stdout}");
    assert!(stdout.contains("Missed    run-once"), "{stdout}");
    assert!(stdout.contains("It has not run yet."), "{stdout}");

    let (ok, stdout, stderr) = cli(&daemon, &["schedules", "pause", &id[..13]]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("Paused Inbox summary"), "{stdout}");
    let paused = daemon.get(&format!("/v1/schedules/{id}")).json();
    assert_eq!(paused["enabled"], false);
    assert!(paused["nextFire"].is_null());
    let (_, stdout, _) = cli(&daemon, &["schedules", "list"]);
    let line = stdout
        .lines()
        .find(|line| line.contains("Inbox summary"))
        .unwrap();
    assert!(line.ends_with("paused") && !line.contains(&next), "{line}");

    let (ok, stdout, stderr) = cli(&daemon, &["schedules", "resume", &id]);
    assert!(ok, "{stderr}");
    let resumed = daemon.get(&format!("/v1/schedules/{id}")).json();
    assert_eq!(resumed["enabled"], true);
    let next = shown(&resumed["nextFire"]);
    assert!(
        stdout.contains("next fire: ") && stdout.contains(&next),
        "{stdout}"
    );
    let (_, stdout, _) = cli(&daemon, &["schedules", "list"]);
    assert!(
        stdout.contains(&next) && stdout.contains("active"),
        "{stdout}"
    );

    // rm asks: without a terminal and --yes nothing is deleted.
    let (ok, _, stderr) = cli(&daemon, &["schedules", "rm", &id]);
    assert!(!ok);
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(stored(&daemon).len(), 2);
    let (ok, stdout, stderr) = cli(&daemon, &["schedules", "rm", &id, "--yes"]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("Deleted schedule Inbox summary."),
        "{stdout}"
    );
    let left = stored(&daemon);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["name"], "Tidy downloads");
    assert_eq!(daemon.get(&format!("/v1/schedules/{id}")).status, 404);
}

#[test]
fn the_cli_runs_a_schedule_and_its_history_shows_the_run_as_the_api_has_it() {
    let daemon = Daemon::start();
    let (ok, _, stderr) = add_weekdays(&daemon, "Inbox summary", &["--yes"]);
    assert!(ok, "{stderr}");
    let id = stored(&daemon)[0]["id"].as_str().unwrap().to_owned();

    let (ok, stdout, stderr) = cli(&daemon, &["schedules", "run", "Inbox summary"]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("Run "), "{stdout}");
    assert!(stdout.contains("souz schedules history"), "{stdout}");
    // No model is configured: the run may fail; whatever it ends as, history says the same.
    let runs = daemon.wait_until(&format!("/v1/schedules/{id}/runs"), |runs| {
        runs["items"][0]["state"]
            .as_str()
            .is_some_and(|state| ["ok", "failed", "blocked", "skipped"].contains(&state))
    });
    let run = &runs["items"][0];
    assert_eq!(runs["items"].as_array().unwrap().len(), 1);
    let state = run["state"].as_str().unwrap();

    let (ok, stdout, stderr) = cli(&daemon, &["schedules", "history", &id]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one run: {stdout}");
    assert!(
        lines[0].starts_with("RUN    STATE    FIRE TIME"),
        "{stdout}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[0], run["id"].to_string(), "{stdout}");
    assert_eq!(row[1], state, "{stdout}");
    assert!(lines[1].contains(&shown(&run["fireAt"])), "{stdout}");
    if let Some(reason) = run["reason"].as_str() {
        let start: String = reason.chars().take(40).collect();
        assert!(lines[1].contains(&start), "{reason} in {stdout}");
    }
    if let Some(chat) = run["chatId"].as_str() {
        assert!(lines[1].contains(chat), "{stdout}");
    }
    let (ok, stdout, _) = cli(&daemon, &["schedules", "history", &id, "--json"]);
    assert!(ok);
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["items"][0]["state"], state);
    let (ok, stdout, _) = cli(&daemon, &["schedules", "show", &id]);
    assert!(ok);
    assert!(stdout.contains("Latest runs:"), "{stdout}");
}

#[test]
fn an_invalid_cron_or_unknown_zone_is_the_daemons_refusal_and_nothing_is_stored() {
    let daemon = Daemon::start();
    let (ok, stdout, stderr) = cli(
        &daemon,
        &[
            "schedules",
            "add",
            "Bad",
            "--cron",
            "61 * * * *",
            "--prompt",
            "x",
            "--yes",
        ],
    );
    assert!(!ok);
    assert!(
        stdout.is_empty(),
        "nothing shown as if it would be stored: {stdout}"
    );
    assert!(
        stderr.starts_with("souz: invalid cron expression '61 * * * *'"),
        "{stderr}"
    );
    let (ok, _, stderr) = cli(
        &daemon,
        &[
            "schedules",
            "add",
            "Bad",
            "--cron",
            "0 9 * * *",
            "--zone",
            "Mars/Olympus",
            "--prompt",
            "x",
            "--yes",
        ],
    );
    assert!(!ok);
    assert!(
        stderr.starts_with("souz: unknown time zone 'Mars/Olympus'"),
        "{stderr}"
    );
    let (ok, _, stderr) = cli(
        &daemon,
        &["schedules", "preview", "--at", "2001-01-01 09:00"],
    );
    assert!(!ok);
    assert!(stderr.contains("never fires after now"), "{stderr}");
    assert!(stored(&daemon).is_empty());
    let (ok, stdout, _) = cli(&daemon, &["schedules", "list"]);
    assert!(ok);
    assert!(stdout.starts_with("No schedules."), "{stdout}");
    // Preview stores nothing either; its times are the terminal's local time, not UTC nor
    // the schedule's zone: 09:00 in Moscow (+03:00 all year) is 06:00 UTC, 15:00 in Tokyo
    // (no daylight saving time in either).
    let (ok, stdout, stderr) = cli_in(
        &daemon,
        "Asia/Tokyo",
        &[
            "schedules",
            "preview",
            "--cron",
            "0 9 * * *",
            "--zone",
            "Europe/Moscow",
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 6, "{stdout}");
    assert!(
        stdout.lines().skip(1).all(|line| line.ends_with(" 15:00")),
        "{stdout}"
    );
    assert!(stored(&daemon).is_empty());
}

#[test]
fn the_cli_speaks_russian_about_schedules_when_chosen_in_souz() {
    let daemon = Daemon::start();
    let patched = daemon.patch(
        "/v1/me/settings",
        &serde_json::json!({"interfaceLanguage": "ru"}),
    );
    assert_eq!(patched.status, 200, "{}", patched.body);
    let (ok, stdout, stderr) = cli(&daemon, &["schedules"]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("Расписаний нет."), "{stdout}");
    let (ok, stdout, stderr) = add_weekdays(&daemon, "Почта", &["--yes"]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("ближайшие запуски (ваше местное время)"),
        "{stdout}"
    );
    assert!(stdout.contains("Пн "), "weekdays in Russian: {stdout}");
    assert!(stdout.contains("только инструменты для чтения"), "{stdout}");
    assert!(stdout.contains("Расписание Почта создано"), "{stdout}");
    let (ok, _, stderr) = cli(&daemon, &["schedules", "rm", "Почта"]);
    assert!(!ok);
    assert!(stderr.contains("добавьте --yes"), "{stderr}");
}

/// Runs `souz ARGS` at a terminal (util-linux `script` gives it a pseudo-terminal) with
/// `typed` as what the person types: (success, what the terminal showed).
#[cfg(target_os = "linux")]
fn at_terminal(daemon: &Daemon, args: &[&str], typed: &str) -> (bool, String) {
    use std::io::Write;
    let quoted: Vec<String> = std::iter::once(souz_e2e::souz_bin().display().to_string())
        .chain(args.iter().map(|arg| (*arg).to_owned()))
        .map(|arg| format!("'{}'", arg.replace('\'', r"'\''")))
        .collect();
    let mut child = souz_e2e::program_in(std::path::Path::new("script"), daemon.home.path())
        .env("HOME", daemon.user_home())
        .env("TZ", "UTC")
        .env("LANG", "en_US.UTF-8")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs the CLI at a pseudo-terminal");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(typed.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[cfg(target_os = "linux")]
#[test]
fn at_a_terminal_the_typed_answer_decides() {
    let daemon = Daemon::start();
    let add = [
        "schedules",
        "add",
        "Inbox summary",
        "--cron",
        "30 8 * * 1-5",
        "--prompt",
        "Summarise my inbox folder",
    ];
    let (ok, shown) = at_terminal(&daemon, &add, "n\n");
    assert!(!ok);
    assert!(shown.contains("read-only tools only"), "{shown}");
    assert!(shown.contains("Create this schedule? [y/N]"), "{shown}");
    assert!(shown.contains("cancelled, nothing changed"), "{shown}");
    assert!(stored(&daemon).is_empty());

    let (ok, shown) = at_terminal(&daemon, &add, "yes\n");
    assert!(ok, "{shown}");
    assert!(shown.contains("Created schedule Inbox summary"), "{shown}");
    assert_eq!(stored(&daemon).len(), 1);

    let rm = ["schedules", "rm", "Inbox summary"];
    let (ok, shown) = at_terminal(&daemon, &rm, "\n");
    assert!(!ok, "no answer is no: {shown}");
    assert_eq!(stored(&daemon).len(), 1);
    let (ok, shown) = at_terminal(&daemon, &rm, "да\n");
    assert!(ok, "{shown}");
    assert!(shown.contains("Deleted schedule Inbox summary."), "{shown}");
    assert!(stored(&daemon).is_empty());
}

/// The typed client's calls the CLI does not make (change) and their refusals, against the
/// real daemon.
#[tokio::test]
async fn the_client_changes_and_deletes_a_schedule_and_says_the_daemons_refusals() {
    use souz_client::ClientError;
    use souz_protocol::ErrorCode;
    use souz_protocol::schedules::{NewSchedule, ScheduleAction, SchedulePatch};

    let daemon = Daemon::start();
    let client = daemon.client().await;
    let created = client
        .create_schedule(&NewSchedule {
            name: "Inbox".to_owned(),
            spec: "0 9 * * *".to_owned(),
            zone: Some("Europe/Moscow".to_owned()),
            action: ScheduleAction::Prompt {
                prompt: "Summarise".to_owned(),
                settings: Default::default(),
            },
            missed: None,
            overlap: None,
            envelope: None,
            enabled: None,
        })
        .await
        .unwrap();
    let changed = client
        .patch_schedule(
            &created.id,
            &SchedulePatch {
                name: Some("Inbox, Berlin".to_owned()),
                zone: Some("Europe/Berlin".to_owned()),
                ..SchedulePatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(changed.name, "Inbox, Berlin");
    assert_eq!(changed.zone, "Europe/Berlin");
    assert_eq!(client.schedule(&created.id).await.unwrap(), changed);
    let refused = client
        .patch_schedule(
            &created.id,
            &SchedulePatch {
                zone: Some("Mars/Olympus".to_owned()),
                ..SchedulePatch::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ClientError::Api { code: ErrorCode::InvalidRequest, message, .. }
            if message.contains("Mars/Olympus")),
        "{refused:?}"
    );
    assert_eq!(
        client.schedule(&created.id).await.unwrap().zone,
        "Europe/Berlin"
    );
    client.delete_schedule(&created.id).await.unwrap();
    let gone = client.delete_schedule(&created.id).await.unwrap_err();
    assert!(
        matches!(
            gone,
            ClientError::Api {
                code: ErrorCode::NotFound,
                ..
            }
        ),
        "{gone:?}"
    );
    assert!(client.schedules().await.unwrap().items.is_empty());
}
