//! `souz models`: the in-process local models through the daemon (list, pull, rm).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use souz_protocol::{LocalModelInfo, LocalModelList, LocalModelState};

use souz_client::DaemonClient;

use crate::output::{print_json, say};

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
        LocalModelState::Missing => "missing".to_owned(),
        LocalModelState::Downloading { received, total } => {
            format!("downloading {} of {} MB", received >> 20, total >> 20)
        }
        LocalModelState::Ready => "ready".to_owned(),
        LocalModelState::Loaded => "loaded".to_owned(),
        LocalModelState::Failed { error } => format!("failed: {error}"),
    }
}

fn print_line(model: &LocalModelInfo) {
    say!(
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
    );
}

/// Runs `souz models …` (default: list).
pub async fn run(command: Option<ModelsCommand>) -> Result<ExitCode> {
    let client = crate::client::connect().await?;
    match command.unwrap_or(ModelsCommand::List { json: false }) {
        ModelsCommand::List { json } => {
            let list: LocalModelList = client.get("/v1/models/local").await?;
            if json {
                print_json(&list)?;
                return Ok(ExitCode::SUCCESS);
            }
            match &list.engine {
                Some(engine) => say!("engine: {engine}"),
                None => say!("engine: none (this daemon was built without local models)"),
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
            say!("removed {name}");
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
            "fetching {} (it goes on in Souz if you stop this; `souz models rm {}` stops it)",
            model.name, model.name
        );
    }
    let mut shown = None;
    while let LocalModelState::Downloading { received, total } = model.state {
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
        let list: LocalModelList = client.get("/v1/models/local").await?;
        match list.items.into_iter().find(|item| item.name == model.name) {
            Some(item) => model = item,
            None => anyhow::bail!("the daemon no longer lists {}", model.name),
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
            eprintln!("souz: {} could not be downloaded: {error}", model.name);
            Ok(ExitCode::FAILURE)
        }
        _ => {
            eprintln!("souz: the download of {} was stopped", model.name);
            Ok(ExitCode::FAILURE)
        }
    }
}
