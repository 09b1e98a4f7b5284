//! `souz clients`: the client tokens (list, add, revoke), and the rotation `souz mcp-config`
//! and `souz acp-config` use to give a client a fresh token under its name. Messages are in the
//! person's language ([`crate::texts`]); names, scopes, ids and tokens stay as they are.

use anyhow::Result;
use clap::Subcommand;
use souz_protocol::{ClientScope, CreatedClient};

use crate::client::{DaemonClient, resolve_prefix};
use crate::output::{age, print_json, say, truncate};
use crate::texts::{fill, tr};

#[derive(Debug, Subcommand)]
pub enum ClientsCommand {
    /// List the active client tokens (never the tokens themselves).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a token for a client; it is printed once.
    Add {
        /// A name for the client (letters, digits, `-`, `_`, `.`).
        name: String,
        /// What it reaches: `mcp` (`/mcp` only, the default) or `chats` (the chats it makes
        /// and their approvals: an editor through `souz acp`).
        #[arg(long, value_parser = parse_scope, default_value = "mcp")]
        scope: ClientScope,
    },
    /// Revoke a client token: from then on it is refused.
    Revoke {
        /// Client id (a unique prefix is enough) or name.
        id: String,
    },
}

pub async fn run(command: Option<ClientsCommand>) -> Result<()> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(ClientsCommand::List { json: false }) {
        ClientsCommand::List { json } => {
            let list = client.clients().await?;
            if json {
                return print_json(&list);
            }
            if list.items.is_empty() {
                say!(
                    "{}",
                    tr(
                        "No client tokens. Make one with `souz clients add NAME` or \
                         `souz mcp-config`.",
                        "Токенов клиентов нет. Создайте токен: `souz clients add ИМЯ` или \
                         `souz mcp-config`."
                    )
                );
            }
            for item in &list.items {
                say!(
                    "{:<10} {:<24} {:<6} {}",
                    truncate(&item.id, 10),
                    item.name,
                    item.scope.as_str(),
                    fill(
                        tr("made {age} ago", "создан {age} назад"),
                        &[("age", &age(item.created_at))]
                    )
                );
            }
            Ok(())
        }
        ClientsCommand::Add { name, scope } => {
            let created = client.create_client(&name, scope).await?;
            say!(
                "{}",
                fill(
                    tr(
                        "Client {name} ({id}). Its token, shown this once:",
                        "Клиент {name} ({id}). Его токен (показывается только сейчас):"
                    ),
                    &[("name", &created.name), ("id", &created.id)]
                )
            );
            say!("{}", created.token);
            Ok(())
        }
        ClientsCommand::Revoke { id } => {
            let list = client.clients().await?;
            let by_name = list.items.iter().find(|item| item.name == id);
            let id = match by_name {
                Some(item) => item.id.clone(),
                None => resolve_prefix(
                    tr("client", "клиента"),
                    &id,
                    list.items.iter().map(|c| c.id.as_str()),
                )?,
            };
            client.revoke_client(&id).await?;
            say!(
                "{}",
                fill(
                    tr("Revoked client {id}.", "Токен клиента {id} отозван."),
                    &[("id", &id)]
                )
            );
            Ok(())
        }
    }
}

/// A fresh token for the client `name`: the active one of that name (if any) is revoked
/// first, so a client configured again stops using its old token.
pub async fn rotate(
    client: &DaemonClient,
    name: &str,
    scope: ClientScope,
) -> Result<CreatedClient> {
    let list = client.clients().await?;
    for old in list
        .items
        .iter()
        .filter(|item| item.name.eq_ignore_ascii_case(name))
    {
        client.revoke_client(&old.id).await?;
    }
    Ok(client.create_client(name, scope).await?)
}

fn parse_scope(name: &str) -> Result<ClientScope, String> {
    ClientScope::parse(name).ok_or_else(|| {
        fill(
            tr(
                "`{name}` is not a scope: mcp or chats",
                "`{name}` — не область доступа: mcp или chats",
            ),
            &[("name", &name)],
        )
    })
}
