//! `souz tools`: list the catalog and call a tool through the approval gate.

use anyhow::{Context, Result};
use clap::Subcommand;
use souz_protocol::{ToolCallRequest, ToolCallStatus};

use crate::output::{print_json, say, truncate};

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List every tool with its risk class and what the policy does with it.
    List {
        /// Print JSON (with schemas).
        #[arg(long)]
        json: bool,
    },
    /// Call a tool through the approval gate (it may wait for your approval).
    Call {
        /// Tool name.
        name: String,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// How long to wait for the result, in seconds.
        #[arg(long, default_value_t = 300)]
        wait: u64,
        /// Print the whole call as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(command: ToolsCommand) -> Result<std::process::ExitCode> {
    let client = crate::client::connect().await?;
    match command {
        ToolsCommand::List { json } => {
            let list = client.tools().await?;
            if json {
                print_json(&list)?;
                return Ok(std::process::ExitCode::SUCCESS);
            }
            say!("{:<22} {:<10} {:<7} DESCRIPTION", "TOOL", "RISK", "POLICY");
            for tool in &list.items {
                let policy = serde_json::to_value(tool.policy.action)?;
                say!(
                    "{:<22} {:<10} {:<7} {}",
                    tool.name,
                    tool.risk.as_str(),
                    policy.as_str().unwrap_or_default(),
                    truncate(tool.description.lines().next().unwrap_or_default(), 70)
                );
            }
            Ok(std::process::ExitCode::SUCCESS)
        }
        ToolsCommand::Call {
            name,
            args,
            wait,
            json,
        } => {
            let arguments: serde_json::Value =
                serde_json::from_str(&args).context("--args must be a JSON object")?;
            let request = ToolCallRequest {
                tool: name,
                arguments,
                wait_ms: Some(wait.saturating_mul(1000).min(600_000)),
            };
            let (_, call) = client.call_tool(&request).await?;
            if json {
                print_json(&call)?;
            } else if let Some(result) = &call.result {
                say!("{}", result.text);
            } else {
                say!(
                    "Call {} is {}{}.",
                    call.id,
                    call.status.as_str(),
                    call.approval_id
                        .as_deref()
                        .map(|id| format!(" (approval {id}: `souz approvals show {id}`)"))
                        .unwrap_or_default()
                );
            }
            let failed = call.result.as_ref().is_some_and(|result| result.is_error)
                || call.status != ToolCallStatus::Succeeded;
            Ok(if failed {
                std::process::ExitCode::FAILURE
            } else {
                std::process::ExitCode::SUCCESS
            })
        }
    }
}
