//! `souz memory`: long-term memory through the daemon (list, search, add, forget, show, and
//! status: whether it recalls by meaning or, until its model is ready, by words only).
//! Kinds and statuses are accepted in any case; the daemon checks everything else. Ids may be
//! given by their start, as the list prints them (`show`, `forget`). Labels are in the
//! person's language ([`crate::texts`]); kinds, statuses, ids and JSON stay as they are.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde::Serialize;
use serde::de::DeserializeOwned;
use souz_protocol::{
    MemoryFact, MemoryKind, MemoryQuery, MemorySearchRequest, MemoryStatusFilter, NewMemoryFact,
    RecallMode,
};

use crate::output::{print_json, say, truncate};
use crate::texts::{fill, tr};

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List remembered facts, most recently updated first.
    List {
        /// Only this kind (semantic, preference, procedure, project_rule, episode_note,
        /// project_decision).
        #[arg(long)]
        kind: Option<String>,
        /// Only this scope (global, session:<chat id>, project:<id>).
        #[arg(long)]
        scope: Option<String>,
        /// active (default), retired or all.
        #[arg(long)]
        status: Option<String>,
        /// Only facts containing this text.
        #[arg(long)]
        text: Option<String>,
        /// Only pinned facts.
        #[arg(long)]
        pinned: bool,
        /// At most this many facts.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search memory as the agents recall it, best first, with scores.
    Search {
        /// What you are looking for.
        query: String,
        /// Also search this chat's session facts.
        #[arg(long)]
        chat: Option<String>,
        /// At most this many facts (1..20).
        #[arg(long)]
        limit: Option<u32>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remember a fact (secrets are removed before it is stored).
    Add {
        /// The fact.
        body: String,
        /// Short title (default: the first line of the fact).
        #[arg(long)]
        title: Option<String>,
        /// Its kind (default semantic).
        #[arg(long)]
        kind: Option<String>,
        /// Its scope (default global).
        #[arg(long)]
        scope: Option<String>,
        /// A canonical key (user.preference.<name>, ...): replaces the fact holding it.
        #[arg(long)]
        key: Option<String>,
        /// Pin it.
        #[arg(long)]
        pin: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a fact: delete it, and keep it from being captured again (`--retire`: only stop
    /// recalling it, keeping it for history).
    Forget {
        /// The fact's id (or the start of one).
        id: String,
        /// Retire instead of deleting.
        #[arg(long)]
        retire: bool,
    },
    /// How memory recalls now: by words only, or by meaning too (the embedding model, and a
    /// local model's download).
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a fact and where it came from.
    Show {
        /// The fact's id (or the start of one).
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// A wire enum from its name in any case (`project_rule`, `PROJECT_RULE`); `refused` says a
/// name that is none (`{text}` in it is the name).
fn wire_enum<T: DeserializeOwned>(refused: &str, text: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(text.trim().to_uppercase()))
        .with_context(|| fill(refused, &[("text", &text)]))
}

/// A wire enum's name in lower case (`project_rule`), as the options take it.
fn wire_name<T: Serialize>(value: T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name.to_lowercase(),
        _ => String::new(),
    }
}

fn kind(text: Option<String>) -> Result<Option<MemoryKind>> {
    text.map(|text| {
        wire_enum(
            tr(
                "`{text}` is not a memory kind",
                "`{text}` — не вид факта памяти",
            ),
            &text,
        )
    })
    .transpose()
}

fn status_filter(text: Option<String>) -> Result<Option<MemoryStatusFilter>> {
    text.map(|text| {
        wire_enum(
            tr(
                "`{text}` is not a memory status",
                "`{text}` — не состояние факта памяти",
            ),
            &text,
        )
    })
    .transpose()
}

/// One fact on one line; `with_status` adds its status (for lists that mix them). A fact
/// without a title of its own (its title is its first line) is printed once, not twice.
fn print_fact_line(fact: &MemoryFact, with_status: bool) {
    let pin = if fact.pinned { "*" } else { " " };
    let status = if with_status {
        format!(" {:<7}", wire_name(fact.status))
    } else {
        String::new()
    };
    let body = fact.body.replace('\n', " ");
    let first_line = fact.body.lines().next().unwrap_or_default().trim();
    let text = if fact.title.trim() == first_line || fact.title.trim() == body.trim() {
        truncate(&body, 120)
    } else {
        format!("{}: {}", truncate(&fact.title, 40), truncate(&body, 80))
    };
    say!(
        "{}{status} {pin} {:<16} {:<20} {text}",
        fact.id,
        wire_name(fact.kind),
        truncate(&fact.scope, 20),
    );
}

/// The full id of the fact `id` names, which may be the start of one (as the list prints
/// ids), among the newest 500 facts in any status.
async fn fact_id(client: &souz_client::DaemonClient, id: &str) -> Result<String> {
    let not_found = match client.memory_fact(id).await {
        Ok(_) => return Ok(id.to_owned()),
        Err(error) => error,
    };
    let query = MemoryQuery {
        kind: None,
        scope: None,
        status: Some(MemoryStatusFilter::All),
        text: None,
        pinned: None,
        limit: Some(500),
        offset: None,
    };
    let page = client.memory(&query).await?;
    let prefix = id.trim().trim_end_matches('…');
    if prefix.is_empty() || !page.items.iter().any(|fact| fact.id.starts_with(prefix)) {
        // Not the start of any id: the daemon's own answer for the id says it best.
        return Err(not_found.into());
    }
    crate::client::resolve_prefix(
        tr("memory fact", "факта памяти"),
        id,
        page.items.iter().map(|fact| fact.id.as_str()),
    )
}

async fn show(client: &souz_client::DaemonClient, id: &str, json: bool) -> Result<()> {
    let id = fact_id(client, id).await?;
    let fact = client.memory_fact(&id).await?;
    let evidence = client.memory_evidence(&id).await?;
    if json {
        print_json(&serde_json::json!({"fact": fact, "evidence": evidence.items}))?;
        return Ok(());
    }
    say!("{}", fact.title);
    say!("{}", fact.body);
    say!(
        "id {}  {}  {}  {}",
        fact.id,
        wire_name(fact.kind),
        fact.scope,
        wire_name(fact.status)
    );
    if let Some(key) = &fact.canonical_key {
        say!("{} {key}", tr("key", "ключ"));
    }
    say!(
        "{}{}",
        fill(
            tr(
                "by {by}  created {created}  updated {updated}",
                "автор {by}  создан {created}  изменён {updated}"
            ),
            &[
                ("by", &fact.created_by),
                ("created", &fact.created_at),
                ("updated", &fact.updated_at)
            ]
        ),
        if fact.pinned {
            tr("  pinned", "  закреплён")
        } else {
            ""
        }
    );
    for item in &evidence.items {
        let origin = match (&item.chat_id, &item.client) {
            (Some(chat), _) => format!("{} {chat}", tr("chat", "чат")),
            (None, Some(client)) => format!("{} {client}", tr("MCP client", "MCP-клиент")),
            (None, None) => tr("written by hand", "записан вручную").to_owned(),
        };
        say!(
            "{}: {} ({origin}, {})",
            tr("evidence", "источник"),
            item.source_type,
            item.created_at
        );
        if let Some(excerpt) = &item.excerpt {
            say!("  \"{}\"", truncate(excerpt, 200));
        }
    }
    Ok(())
}

async fn search(
    client: &souz_client::DaemonClient,
    request: MemorySearchRequest,
    json: bool,
) -> Result<()> {
    let found = client.search_memory(&request).await?;
    if json {
        print_json(&found)?;
        return Ok(());
    }
    if found.items.is_empty() {
        say!("{}", tr("Nothing found.", "Ничего не найдено."));
    } else {
        for hit in &found.items {
            say!("{:.3} {}", hit.score, hit.fact.title);
            say!("      {}  {}", hit.fact.id, truncate(&hit.fact.body, 100));
        }
    }
    // Found by words only (the search says so itself): say so, and why.
    if found.mode == RecallMode::Lexical {
        let model = client.memory_model().await?;
        if model.by_meaning() {
            say!(
                "{}",
                tr(
                    "This search matched by words only: the embedding model did not answer in \
                     time.",
                    "Этот поиск искал только по словам: модель эмбеддингов не ответила вовремя."
                )
            );
        } else {
            say!("{}", model.describe_in(crate::texts::language()));
        }
    }
    Ok(())
}

async fn status(client: &souz_client::DaemonClient, json: bool) -> Result<()> {
    let model = client.memory_model().await?;
    if json {
        print_json(&model)?;
    } else {
        say!("{}", model.describe_in(crate::texts::language()));
    }
    Ok(())
}

async fn remember(
    client: &souz_client::DaemonClient,
    new: &NewMemoryFact,
    json: bool,
) -> Result<()> {
    let (fact, created) = client.remember(new).await?;
    if json {
        return print_json(&fact);
    }
    let said = if created {
        tr("Remembered {id}: {title}", "Запомнено {id}: {title}")
    } else {
        tr(
            "Already remembered {id}: {title} (confirmed)",
            "Уже в памяти {id}: {title} (подтверждено)",
        )
    };
    say!(
        "{}",
        fill(said, &[("id", &fact.id), ("title", &fact.title)])
    );
    Ok(())
}

async fn forget(client: &souz_client::DaemonClient, id: &str, retire: bool) -> Result<()> {
    let id = fact_id(client, id).await?;
    let said = if retire {
        client.retire_memory_fact(&id).await?;
        tr("Retired {id}.", "Факт {id} больше не вспоминается.")
    } else {
        client.forget_memory_fact(&id).await?;
        tr("Forgot {id}.", "Факт {id} забыт.")
    };
    say!("{}", fill(said, &[("id", &id)]));
    Ok(())
}

pub async fn run(command: Option<MemoryCommand>) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    let command = command.unwrap_or(MemoryCommand::List {
        kind: None,
        scope: None,
        status: None,
        text: None,
        pinned: false,
        limit: 50,
        json: false,
    });
    match command {
        MemoryCommand::List {
            kind: kind_name,
            scope,
            status,
            text,
            pinned,
            limit,
            json,
        } => {
            let status = status_filter(status)?;
            let with_status = status.is_some_and(|status| status != MemoryStatusFilter::Active);
            let query = MemoryQuery {
                kind: kind(kind_name)?,
                scope,
                status,
                text,
                pinned: pinned.then_some(true),
                limit: Some(limit),
                offset: None,
            };
            let page = client.memory(&query).await?;
            if json {
                print_json(&page)?;
            } else if page.items.is_empty() {
                say!(
                    "{}",
                    tr(
                        "Nothing remembered. Add a fact with `souz memory add TEXT`.",
                        "Память пуста. Добавьте факт: `souz memory add ТЕКСТ`."
                    )
                );
            } else {
                for fact in &page.items {
                    print_fact_line(fact, with_status);
                }
            }
        }
        MemoryCommand::Search {
            query,
            chat,
            limit,
            json,
        } => {
            search(
                &client,
                MemorySearchRequest {
                    query,
                    hints: Vec::new(),
                    limit,
                    chat_id: chat,
                },
                json,
            )
            .await?;
        }
        MemoryCommand::Add {
            body,
            title,
            kind: kind_name,
            scope,
            key,
            pin,
            json,
        } => {
            let new = NewMemoryFact {
                body,
                title,
                kind: kind(kind_name)?,
                scope,
                canonical_key: key,
                pinned: pin,
                importance: None,
            };
            remember(&client, &new, json).await?;
        }
        MemoryCommand::Status { json } => status(&client, json).await?,
        MemoryCommand::Forget { id, retire } => forget(&client, &id, retire).await?,
        MemoryCommand::Show { id, json } => show(&client, &id, json).await?,
    }
    Ok(ExitCode::SUCCESS)
}
