//! `souz models`: the in-process models through the daemon (list, pull, rm): the local LLM
//! profiles (`/v1/models/local`) and the speech models (`/v1/speech`, `[speech] local_model`).
//! A name is a speech model's when the daemon's `GET /v1/speech` lists it (the catalogs never
//! share a name), else a local LLM profile's.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use serde::Serialize;
use souz_protocol::{LocalModelInfo, LocalModelList, LocalModelState, SpeechModelInfo};

use souz_client::DaemonClient;

use crate::output::{print_json, say};

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
        LocalModelState::Missing => "missing".to_owned(),
        LocalModelState::Downloading { received, total } => {
            format!("downloading {} of {} MB", received >> 20, total >> 20)
        }
        LocalModelState::Ready => "ready".to_owned(),
        LocalModelState::Loaded => "loaded".to_owned(),
        LocalModelState::Failed { error } => format!("failed: {error}"),
    }
}

fn local_line(model: &LocalModelInfo) -> String {
    format!(
        "{:<24} {:<9} {:>6} MB  ctx {:<6} RAM {:>2} GB  {}{}",
        model.name,
        model.kind,
        model.bytes >> 20,
        model.context_tokens,
        model.min_ram_gb,
        state(&model.state),
        if model.pullable {
            ""
        } else {
            "  (place the file by hand)"
        }
    )
}

fn speech_line(model: &SpeechModelInfo) -> String {
    let languages = if model.languages.len() > 3 {
        "multilingual".to_owned()
    } else {
        model.languages.join(",")
    };
    format!(
        "{:<24} {:<9} {:>6} MB  {:<24} {}{}{}",
        model.id,
        "speech",
        model.bytes >> 20,
        languages,
        state(&model.state),
        if model.selected {
            "  ([speech] local_model)"
        } else {
            ""
        },
        if model.pullable {
            ""
        } else {
            "  (the tests' model: place its files by hand)"
        }
    )
}

/// Runs `souz models …` (default: list).
pub async fn run(command: Option<ModelsCommand>) -> Result<ExitCode> {
    let client = crate::client::connect().await?;
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
                Some(engine) => say!("engine: {engine}"),
                None => say!("engine: none (this daemon was built without local models)"),
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
            say!("removed {}", target.name());
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
            "fetching {name} (it goes on in Souz if you stop this; `souz models rm {name}` stops it)"
        );
    }
    let mut shown = None;
    while let LocalModelState::Downloading { received, total } = now {
        let tenth = received.saturating_mul(10) / total.max(1);
        if terminal {
            eprint!(
                "\r  {:>5.1}%  {} of {} MB ",
                received as f64 * 100.0 / total.max(1) as f64,
                received >> 20,
                total >> 20
            );
            let _ = std::io::stderr().flush();
        } else if shown != Some(tenth) {
            eprintln!(
                "  {}%  {} of {} MB",
                tenth * 10,
                received >> 20,
                total >> 20
            );
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
            eprintln!("souz: {name} could not be downloaded: {error}");
            Ok(ExitCode::FAILURE)
        }
        _ => {
            eprintln!("souz: the download of {name} was stopped");
            Ok(ExitCode::FAILURE)
        }
    }
}
