//! `souz models`: the in-process local models through the daemon (list, pull, rm).

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use souz_protocol::{LocalModelInfo, LocalModelList, LocalModelState};

use crate::output::{print_json, say};

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// List the local model profiles, their files and states.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fetch a profile's file into the Souz home (resumable, checksum-verified).
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
        ModelsCommand::Pull { name } => {
            say!("fetching {name}…");
            let model: LocalModelInfo = client
                .post(
                    &format!("/v1/models/local/{}/pull", name.trim()),
                    &serde_json::json!({}),
                )
                .await?;
            print_line(&model);
        }
        ModelsCommand::Rm { name } => {
            client
                .delete(&format!("/v1/models/local/{}", name.trim()))
                .await?;
            say!("removed {name}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
