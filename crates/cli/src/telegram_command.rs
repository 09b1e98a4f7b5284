//! `souz telegram`: the Telegram channel through the daemon — status (default), link (prints a
//! one-time code to send to the bot), unlink.

use anyhow::Result;
use clap::Subcommand;

use crate::output::{print_json, say};

#[derive(Debug, Subcommand)]
pub enum TelegramCommand {
    /// Whether the channel is on, has a token, and which account is linked.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a one-time code (valid 10 minutes, used once) to send to the bot as
    /// `/start CODE`; the account that sends it is then the only one served.
    Link,
    /// Unlink the Telegram account (idempotent).
    Unlink,
}

pub async fn run(command: Option<TelegramCommand>) -> Result<()> {
    let client = crate::client::connect().await?;
    match command.unwrap_or(TelegramCommand::Status { json: false }) {
        TelegramCommand::Status { json } => {
            let status = client.telegram_status().await?;
            if json {
                return print_json(&status);
            }
            say!(
                "Telegram: {}; bot token {}.",
                if status.enabled {
                    "enabled"
                } else {
                    "disabled ([channels.telegram] enabled = false)"
                },
                if status.token_configured {
                    "set"
                } else {
                    "not set (souz keys set telegram)"
                }
            );
            match status.linked {
                Some(account) => say!(
                    "Linked to Telegram user {}{} since {}.",
                    account.user_id,
                    account
                        .username
                        .map(|name| format!(" (@{name})"))
                        .unwrap_or_default(),
                    account.linked_at
                ),
                None => say!("No account linked: run `souz telegram link`."),
            }
        }
        TelegramCommand::Link => {
            let code = client.telegram_link().await?;
            say!(
                "Send this to your bot within 10 minutes (it works once):\n\n    {}\n",
                code.command
            );
        }
        TelegramCommand::Unlink => {
            client.telegram_unlink().await?;
            say!("No Telegram account is linked now.");
        }
    }
    Ok(())
}
