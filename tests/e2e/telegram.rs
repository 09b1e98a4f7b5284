//! `souz telegram` end to end: the real daemon starts the Telegram channel (enabled in
//! `config.toml`, the token from its environment) against the fake Bot API; `link` prints a
//! one-time code, the bot links the account that sends it, `status` shows it, `unlink` forgets.

use std::process::Output;

use souz_testkit::telegram::FakeTelegram;

use crate::chats::{daemon_configured, provider};

const TOKEN: &str = "4242:e2e-bot-token-0123456789";

fn telegram(daemon: &souz_e2e::Daemon, args: &[&str]) -> Output {
    daemon.cli().arg("telegram").args(args).output().unwrap()
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_daemon_links_a_telegram_account_with_a_one_time_code() {
    let setup = provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fake = runtime.block_on(FakeTelegram::start(TOKEN));
    let extra = format!(
        "\n[channels.telegram]\nenabled = true\napi_url = \"{}\"\npoll_seconds = 1\n",
        fake.url()
    );
    let daemon = daemon_configured(&setup, &extra, |command| {
        command.env("TELEGRAM_BOT_TOKEN", TOKEN);
    });

    let status = telegram(&daemon, &["status"]);
    assert!(status.status.success(), "{status:?}");
    assert!(text(&status).contains("No account linked"), "{status:?}");

    let link = telegram(&daemon, &["link"]);
    assert!(link.status.success(), "{link:?}");
    let command = text(&link)
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("/start "))
        .unwrap_or_default()
        .to_owned();
    assert!(command.len() > "/start ".len(), "{link:?}");
    fake.push_text(7, &command);
    let sent = runtime.block_on(fake.wait_for_sent(1));
    assert!(sent[0].text.starts_with("Linked"), "{sent:?}");

    let status = telegram(&daemon, &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(json["linked"]["userId"], 7, "{json}");
    assert_eq!(json["tokenConfigured"], true, "{json}");

    let unlink = telegram(&daemon, &["unlink"]);
    assert!(unlink.status.success(), "{unlink:?}");
    let status = telegram(&daemon, &["status"]);
    assert!(text(&status).contains("No account linked"), "{status:?}");
    let stopped = daemon.stop("TERM");
    assert!(
        !stopped.stderr.contains(TOKEN),
        "the token never reaches the log"
    );
    assert!(
        stopped.stderr.contains("telegram channel started"),
        "{}",
        stopped.stderr
    );
}
