//! `souz telegram`: the Telegram channel through the daemon — status (default), link (prints a
//! one-time code to send to the bot), unlink. Messages are in the person's language
//! ([`crate::texts`]); the code, ids and JSON stay as they are.

use anyhow::Result;
use clap::Subcommand;

use crate::output::{print_json, say};
use crate::texts::{fill, tr};

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
    let client = crate::texts::connect().await?;
    match command.unwrap_or(TelegramCommand::Status { json: false }) {
        TelegramCommand::Status { json } => {
            let status = client.telegram_status().await?;
            if json {
                return print_json(&status);
            }
            print_status(status);
        }
        TelegramCommand::Link => {
            let code = client.telegram_link().await?;
            say!(
                "{}\n\n    {}\n",
                tr(
                    "Send this to your bot within 10 minutes (it works once):",
                    "Отправьте это своему боту в течение 10 минут (сработает один раз):"
                ),
                code.command
            );
        }
        TelegramCommand::Unlink => {
            client.telegram_unlink().await?;
            say!(
                "{}",
                tr(
                    "No Telegram account is linked now.",
                    "Теперь ни один аккаунт Telegram не привязан."
                )
            );
        }
    }
    Ok(())
}

/// The channel's state and the linked account, as `souz telegram` prints them.
fn print_status(status: souz_protocol::telegram::TelegramStatus) {
    say!(
        "{}",
        fill(
            tr(
                "Telegram: {channel}; bot token {token}.",
                "Telegram: {channel}; токен бота {token}."
            ),
            &[
                (
                    "channel",
                    &if status.enabled {
                        tr("enabled", "включён")
                    } else {
                        tr(
                            "disabled ([channels.telegram] enabled = false)",
                            "выключен ([channels.telegram] enabled = false)",
                        )
                    }
                ),
                (
                    "token",
                    &if status.token_configured {
                        tr("set", "задан")
                    } else {
                        tr(
                            "not set (souz keys set telegram)",
                            "не задан (souz keys set telegram)",
                        )
                    }
                )
            ]
        )
    );
    match status.linked {
        Some(account) => say!(
            "{}",
            fill(
                tr(
                    "Linked to Telegram user {user}{name} since {at}.",
                    "Привязан пользователь Telegram {user}{name} с {at}."
                ),
                &[
                    ("user", &account.user_id),
                    (
                        "name",
                        &account
                            .username
                            .map(|name| format!(" (@{name})"))
                            .unwrap_or_default()
                    ),
                    ("at", &account.linked_at)
                ]
            )
        ),
        None => say!(
            "{}",
            tr(
                "No account linked: run `souz telegram link`.",
                "Аккаунт не привязан: выполните `souz telegram link`."
            )
        ),
    }
}
