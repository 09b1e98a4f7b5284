//! `souz status`: whether the daemon of this Souz home runs, is paused, or waits in recovery
//! mode for a valid `config.toml` (with the file's problems), and at which address.
//!
//! Exit codes: 0 running (paused or not), 1 not reachable (the usual error), 2 recovery mode
//! (an invalid configuration, as `souz config check` says it).

use std::process::ExitCode;

use souz_protocol::config::ConfigProblem;

use crate::output::say;
use crate::texts::{fill, tr};

/// `souz status`.
pub async fn run() -> anyhow::Result<ExitCode> {
    let client = crate::texts::connect().await?;
    if let Some(problems) = client.recovery_problems().await? {
        say!("{}", recovery_text(client.base(), &problems));
        return Ok(ExitCode::from(2));
    }
    let health = client.health().await?;
    let paused = client.pause_state().await?.paused;
    say!(
        "{}",
        fill(
            tr(
                "Souz {version} is running at {base}.",
                "Souz {version} работает на {base}."
            ),
            &[("version", &health.version), ("base", &client.base())]
        )
    );
    if paused {
        say!(
            "{}",
            tr(
                "It is paused: approval requests are denied and agents wait; `souz resume` \
                 lets them go on.",
                "Он на паузе: запросы одобрения отклоняются, агенты ждут; `souz resume` \
                 возобновит работу."
            )
        );
    }
    if health.status != "ok" {
        say!(
            "{}",
            fill(
                tr(
                    "Some part does not work ({status}): see `curl {base}/health`.",
                    "Что-то из частей не работает ({status}): см. `curl {base}/health`."
                ),
                &[("status", &health.status), ("base", &client.base())]
            )
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What a person reads about a daemon in recovery mode at `base`: why, every problem, and how
/// to get out of it.
pub fn recovery_text(base: &str, problems: &[ConfigProblem]) -> String {
    let mut text = fill(
        tr(
            "Souz at {base} is in recovery mode: config.toml has problems, so only the settings \
             editor runs.",
            "Souz на {base} в режиме восстановления: в config.toml есть ошибки, поэтому работает \
             только редактор настроек.",
        ),
        &[("base", &base)],
    );
    for problem in problems {
        text.push_str("\n  ");
        text.push_str(&problem.display);
    }
    text.push('\n');
    text.push_str(tr(
        "Fix them in the web UI (`souz ui --open`) or in the file (`souz config check` checks \
         it); Souz starts once a valid file is saved through the UI, or at its next start.",
        "Исправьте их в веб-интерфейсе (`souz ui --open`) или в самом файле (проверка: \
         `souz config check`); Souz запустится, как только верный файл будет сохранён через \
         интерфейс, или при следующем запуске.",
    ));
    text
}
