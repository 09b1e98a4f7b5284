//! `souz tools`: list the catalog and call a tool through the approval gate. Headings and
//! messages are in the person's language ([`crate::texts`]); tool names, risk classes,
//! policies, the tools' own descriptions and results, and JSON stay as they are.

use anyhow::{Context, Result};
use clap::Subcommand;
use souz_protocol::{ToolCallRequest, ToolCallStatus};

use crate::output::{print_json, say, truncate};
use crate::texts::{fill, tr};

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
    let client = crate::texts::connect().await?;
    match command {
        ToolsCommand::List { json } => {
            let list = client.tools().await?;
            if json {
                print_json(&list)?;
                return Ok(std::process::ExitCode::SUCCESS);
            }
            say!(
                "{:<22} {:<10} {:<7} {}",
                tr("TOOL", "ИНСТРУМЕНТ"),
                tr("RISK", "РИСК"),
                tr("POLICY", "ПРАВИЛО"),
                tr("DESCRIPTION", "ОПИСАНИЕ")
            );
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
            let arguments: serde_json::Value = serde_json::from_str(&args).context(tr(
                "--args must be a JSON object",
                "--args должен быть объектом JSON",
            ))?;
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
                let approval = call
                    .approval_id
                    .as_deref()
                    .map(|id| {
                        fill(
                            tr(
                                " (approval {id}: `souz approvals show {id}`)",
                                " (одобрение {id}: `souz approvals show {id}`)",
                            ),
                            &[("id", &id)],
                        )
                    })
                    .unwrap_or_default();
                say!(
                    "{}",
                    fill(
                        tr(
                            "Call {id} is {status}{approval}.",
                            "Вызов {id}: {status}{approval}."
                        ),
                        &[
                            ("id", &call.id),
                            ("status", &call.status.as_str()),
                            ("approval", &approval)
                        ]
                    )
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
