//! `souz models`: the in-process local models through the daemon (list, pull, rm). Labels,
//! states and messages are in the person's language ([`crate::texts`]); profile names, kinds
//! and JSON stay as they are.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use souz_protocol::{LocalModelInfo, LocalModelList, LocalModelState};

use souz_client::DaemonClient;

use crate::output::{print_json, say};
use crate::texts::{fill, tr};

/// How often a pull asks the daemon how far it has come.
const POLL: Duration = Duration::from_millis(500);

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// List the local model profiles, their files and states.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fetch a profile's file into the Souz home (resumable, checksum-verified), showing its
    /// progress; the download runs in the daemon and goes on if this command is stopped.
    Pull {
        /// The profile (`souz models list`).
        name: String,
    },
    /// Unload a profile's model and delete its file.
    Rm {
        /// The profile.
        name: String,
    },
}

fn state(state: &LocalModelState) -> String {
    match state {
        LocalModelState::Missing => tr("missing", "не скачана").to_owned(),
        LocalModelState::Downloading { received, total } => fill(
            tr(
                "downloading {received} of {total} MB",
                "скачивается: {received} из {total} МБ",
            ),
            &[("received", &(received >> 20)), ("total", &(total >> 20))],
        ),
        LocalModelState::Ready => tr("ready", "готова").to_owned(),
        LocalModelState::Loaded => tr("loaded", "загружена").to_owned(),
        LocalModelState::Failed { error } => fill(
            tr("failed: {error}", "ошибка: {error}"),
            &[("error", error)],
        ),
    }
}

fn print_line(model: &LocalModelInfo) {
    // The numbers padded first: the columns line up in both languages.
    let sizes = fill(
        tr(
            "{size} MB  ctx {context} RAM {ram} GB",
            "{size} МБ  контекст {context} ОЗУ {ram} ГБ",
        ),
        &[
            ("size", &format!("{:>6}", model.bytes >> 20)),
            ("context", &format!("{:<6}", model.context_tokens)),
            ("ram", &format!("{:>2}", model.min_ram_gb)),
        ],
    );
    say!(
        "{:<24} {:<9} {sizes}  {}{}",
        model.name,
        model.kind,
        state(&model.state),
        if model.pullable {
            ""
        } else {
            tr("  (place the file by hand)", "  (положите файл вручную)")
        }
    );
}

/// Runs `souz models …` (default: list).
pub async fn run(command: Option<ModelsCommand>) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(ModelsCommand::List { json: false }) {
        ModelsCommand::List { json } => {
            let list: LocalModelList = client.get("/v1/models/local").await?;
            if json {
                print_json(&list)?;
                return Ok(ExitCode::SUCCESS);
            }
            match &list.engine {
                Some(engine) => say!("{} {engine}", tr("engine:", "движок:")),
                None => say!(
                    "{}",
                    tr(
                        "engine: none (this daemon was built without local models)",
                        "движок: нет (этот Souz собран без локальных моделей)"
                    )
                ),
            }
            for model in &list.items {
                print_line(model);
            }
        }
        ModelsCommand::Pull { name } => return pull(&client, name.trim()).await,
        ModelsCommand::Rm { name } => {
            client
                .delete(&format!("/v1/models/local/{}", name.trim()))
                .await?;
            say!(
                "{}",
                fill(
                    tr("removed {name}", "модель {name} удалена"),
                    &[("name", &name)]
                )
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts the download in the daemon and follows it to its end: a progress line (redrawn on a
/// terminal, every tenth otherwise), then the model's line, or why it stopped.
async fn pull(client: &DaemonClient, name: &str) -> Result<ExitCode> {
    let mut model: LocalModelInfo = client
        .post(
            &format!("/v1/models/local/{name}/pull"),
            &serde_json::json!({}),
        )
        .await?;
    let terminal = std::io::stderr().is_terminal();
    if matches!(model.state, LocalModelState::Downloading { .. }) {
        eprintln!(
            "{}",
            fill(
                tr(
                    "fetching {name} (it goes on in Souz if you stop this; `souz models rm {name}` \
                     stops it)",
                    "скачиваю {name} (скачивание продолжится в Souz, даже если прервать эту \
                     команду; остановить его: `souz models rm {name}`)"
                ),
                &[("name", &model.name)]
            )
        );
    }
    let mut shown = None;
    while let LocalModelState::Downloading { received, total } = model.state {
        let tenth = received.saturating_mul(10) / total.max(1);
        let megabytes = fill(
            tr("{received} of {total} MB", "{received} из {total} МБ"),
            &[("received", &(received >> 20)), ("total", &(total >> 20))],
        );
        if terminal {
            eprint!(
                "\r  {:>5.1}%  {megabytes} ",
                received as f64 * 100.0 / total.max(1) as f64,
            );
            let _ = std::io::stderr().flush();
        } else if shown != Some(tenth) {
            eprintln!("  {}%  {megabytes}", tenth * 10);
        }
        shown = Some(tenth);
        tokio::time::sleep(POLL).await;
        let list: LocalModelList = client.get("/v1/models/local").await?;
        match list.items.into_iter().find(|item| item.name == model.name) {
            Some(item) => model = item,
            None => anyhow::bail!(
                "{}",
                fill(
                    tr(
                        "the daemon no longer lists {name}",
                        "Souz больше не показывает {name}"
                    ),
                    &[("name", &model.name)]
                )
            ),
        }
    }
    if terminal && shown.is_some() {
        eprintln!();
    }
    match &model.state {
        LocalModelState::Ready | LocalModelState::Loaded => {
            print_line(&model);
            Ok(ExitCode::SUCCESS)
        }
        LocalModelState::Failed { error } => {
            eprintln!(
                "souz: {}",
                souz_protocol::display::display_text(&fill(
                    tr(
                        "{name} could not be downloaded: {error}",
                        "не удалось скачать {name}: {error}"
                    ),
                    &[("name", &model.name), ("error", error)]
                ))
            );
            Ok(ExitCode::FAILURE)
        }
        _ => {
            eprintln!(
                "souz: {}",
                fill(
                    tr(
                        "the download of {name} was stopped",
                        "скачивание {name} остановлено"
                    ),
                    &[("name", &model.name)]
                )
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
