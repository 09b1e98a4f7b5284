//! `souz models`: the in-process models through the daemon (list, pull, rm): the local LLM
//! profiles (`/v1/models/local`) and the speech models (`/v1/speech`, `[speech] local_model`).
//! A name is a speech model's when the daemon's `GET /v1/speech` lists it (the catalogs never
//! share a name), else a local LLM profile's. Labels, states and messages are in the person's
//! language ([`crate::texts`]); names, kinds and JSON stay as they are.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use serde::Serialize;
use souz_protocol::{LocalModelInfo, LocalModelList, LocalModelState, SpeechModelInfo};

use souz_client::DaemonClient;

use crate::output::{print_json, say};
use crate::texts::{fill, tr};

/// How often a pull asks the daemon how far it has come.
const POLL: Duration = Duration::from_millis(500);

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// List the local model profiles and the speech models, their files and states.
    List {
        /// Print JSON (the local models' list, with the speech models under `speech`).
        #[arg(long)]
        json: bool,
    },
    /// Fetch a model's files into the Souz home (pinned, resumable, checksum-verified), showing
    /// the progress; the download runs in the daemon and goes on if this command is stopped.
    /// A local profile (`qwen3-4b-instruct-2507`) or a speech model (`whisper-base`).
    Pull {
        /// The profile or speech model (`souz models list`).
        name: String,
    },
    /// Unload a model and delete its files (a running download of it stops).
    Rm {
        /// The profile or speech model.
        name: String,
    },
}

/// What `souz models list --json` prints.
#[derive(Serialize)]
struct Listed {
    #[serde(flatten)]
    local: LocalModelList,
    speech: Vec<SpeechModelInfo>,
}

/// The model a command acts on.
enum Target {
    /// A local LLM profile.
    Local(String),
    /// A speech model.
    Speech(String),
}

impl Target {
    /// A speech model when the daemon lists one by `name`, else a local profile.
    async fn of(client: &DaemonClient, name: &str) -> Self {
        let speech = speech_models(client).await;
        if speech.iter().any(|model| model.id == name) {
            Self::Speech(name.to_owned())
        } else {
            Self::Local(name.to_owned())
        }
    }

    fn name(&self) -> &str {
        match self {
            Self::Local(name) | Self::Speech(name) => name,
        }
    }

    /// Where it is removed (`DELETE`).
    fn path(&self) -> String {
        match self {
            Self::Local(name) => format!("/v1/models/local/{name}"),
            Self::Speech(id) => format!("/v1/speech/models/{id}"),
        }
    }

    /// Starts its download; its state and line.
    async fn pull(&self, client: &DaemonClient) -> Result<(LocalModelState, String)> {
        let path = format!("{}/pull", self.path());
        Ok(match self {
            Self::Local(_) => {
                let model: LocalModelInfo = client.post(&path, &serde_json::json!({})).await?;
                (model.state.clone(), local_line(&model))
            }
            Self::Speech(_) => {
                let model: SpeechModelInfo = client.post(&path, &serde_json::json!({})).await?;
                (model.state.clone(), speech_line(&model))
            }
        })
    }

    /// Its state and line now.
    async fn now(&self, client: &DaemonClient) -> Result<(LocalModelState, String)> {
        let found = match self {
            Self::Local(name) => {
                let list: LocalModelList = client.get("/v1/models/local").await?;
                let model = list.items.into_iter().find(|item| &item.name == name);
                model.map(|model| (model.state.clone(), local_line(&model)))
            }
            Self::Speech(id) => {
                let model = speech_models(client)
                    .await
                    .into_iter()
                    .find(|item| &item.id == id);
                model.map(|model| (model.state.clone(), speech_line(&model)))
            }
        };
        found.ok_or_else(|| anyhow::anyhow!("the daemon no longer lists {}", self.name()))
    }
}

/// The speech models the daemon lists (none when it cannot say).
async fn speech_models(client: &DaemonClient) -> Vec<SpeechModelInfo> {
    client
        .speech_status()
        .await
        .map(|status| status.models)
        .unwrap_or_default()
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

fn local_line(model: &LocalModelInfo) -> String {
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
    format!(
        "{:<24} {:<9} {sizes}  {}{}",
        model.name,
        model.kind,
        state(&model.state),
        if model.pullable {
            ""
        } else {
            tr("  (place the file by hand)", "  (положите файл вручную)")
        }
    )
}

fn speech_line(model: &SpeechModelInfo) -> String {
    let languages = if model.languages.len() > 3 {
        tr("multilingual", "многоязычная").to_owned()
    } else {
        model.languages.join(",")
    };
    format!(
        "{:<24} {:<9} {:>6} {}  {:<24} {}{}{}",
        model.id,
        "speech",
        model.bytes >> 20,
        tr("MB", "МБ"),
        languages,
        state(&model.state),
        if model.selected {
            tr(
                "  (chosen: [speech] local_model)",
                "  (выбрана: [speech] local_model)",
            )
        } else {
            ""
        },
        if model.pullable {
            ""
        } else {
            tr(
                "  (the tests' model: place its files by hand)",
                "  (модель для тестов: положите её файлы вручную)",
            )
        }
    )
}

/// Runs `souz models …` (default: list).
pub async fn run(command: Option<ModelsCommand>) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(ModelsCommand::List { json: false }) {
        ModelsCommand::List { json } => {
            let list: LocalModelList = client.get("/v1/models/local").await?;
            let speech = speech_models(&client).await;
            if json {
                print_json(&Listed {
                    local: list,
                    speech,
                })?;
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
                say!("{}", local_line(model));
            }
            for model in &speech {
                say!("{}", speech_line(model));
            }
        }
        ModelsCommand::Pull { name } => {
            let target = Target::of(&client, name.trim()).await;
            return pull(&client, &target).await;
        }
        ModelsCommand::Rm { name } => {
            let target = Target::of(&client, name.trim()).await;
            client.delete(&target.path()).await?;
            say!(
                "{}",
                fill(
                    tr("removed {name}", "модель {name} удалена"),
                    &[("name", &target.name())]
                )
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts the download in the daemon and follows it to its end: a progress line (redrawn on a
/// terminal, every tenth otherwise), then the model's line, or why it stopped.
async fn pull(client: &DaemonClient, target: &Target) -> Result<ExitCode> {
    let name = target.name();
    let (mut now, mut line) = target.pull(client).await?;
    let terminal = std::io::stderr().is_terminal();
    if matches!(now, LocalModelState::Downloading { .. }) {
        eprintln!(
            "{}",
            fill(
                tr(
                    "fetching {name} (it goes on in Souz if you stop this; `souz models rm {name}` \
                     stops it)",
                    "скачиваю {name} (скачивание продолжится в Souz, даже если прервать эту \
                     команду; остановить его: `souz models rm {name}`)"
                ),
                &[("name", &name)]
            )
        );
    }
    let mut shown = None;
    while let LocalModelState::Downloading { received, total } = now {
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
        (now, line) = target.now(client).await?;
    }
    if terminal && shown.is_some() {
        eprintln!();
    }
    match &now {
        LocalModelState::Ready | LocalModelState::Loaded => {
            say!("{line}");
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
                    &[("name", &name), ("error", error)]
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
                    &[("name", &name)]
                )
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
