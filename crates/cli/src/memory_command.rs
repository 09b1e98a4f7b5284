//! `souz memory`: long-term memory through the daemon (list, search, add, forget, show, and
//! status: whether it recalls by meaning or, until its model is ready, by words only).
//! Kinds and statuses are accepted in any case; the daemon checks everything else.

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
        /// The fact's id.
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
        /// The fact's id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// A wire enum from its name in any case (`project_rule`, `PROJECT_RULE`).
fn wire_enum<T: DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(text.trim().to_uppercase()))
        .with_context(|| format!("`{text}` is not a memory {what}"))
}

/// A wire enum's name in lower case (`project_rule`), as the options take it.
fn wire_name<T: Serialize>(value: T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name.to_lowercase(),
        _ => String::new(),
    }
}

fn kind(text: Option<String>) -> Result<Option<MemoryKind>> {
    text.map(|text| wire_enum("kind", &text)).transpose()
}

fn print_fact_line(fact: &MemoryFact) {
    let pin = if fact.pinned { "*" } else { " " };
    say!(
        "{} {pin} {:<16} {:<20} {}: {}",
        fact.id,
        wire_name(fact.kind),
        truncate(&fact.scope, 20),
        truncate(&fact.title, 40),
        truncate(&fact.body.replace('\n', " "), 80),
    );
}

async fn show(client: &souz_client::DaemonClient, id: &str, json: bool) -> Result<()> {
    let fact = client.memory_fact(id).await?;
    let evidence = client.memory_evidence(id).await?;
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
        say!("key {key}");
    }
    say!(
        "by {}  created {}  updated {}{}",
        fact.created_by,
        fact.created_at,
        fact.updated_at,
        if fact.pinned { "  pinned" } else { "" }
    );
    for item in &evidence.items {
        let origin = match (&item.chat_id, &item.client) {
            (Some(chat), _) => format!("chat {chat}"),
            (None, Some(client)) => format!("MCP client {client}"),
            (None, None) => "written by hand".to_owned(),
        };
        say!(
            "evidence: {} ({origin}, {})",
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
        say!("Nothing found.");
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
            say!("This search matched by words only: the embedding model did not answer in time.");
        } else {
            say!("{}", model.describe());
        }
    }
    Ok(())
}

async fn status(client: &souz_client::DaemonClient, json: bool) -> Result<()> {
    let model = client.memory_model().await?;
    if json {
        print_json(&model)?;
    } else {
        say!("{}", model.describe());
    }
    Ok(())
}

pub async fn run(command: Option<MemoryCommand>) -> Result<ExitCode> {
    let client = crate::client::connect().await?;
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
            let query = MemoryQuery {
                kind: kind(kind_name)?,
                scope,
                status: status
                    .map(|status| wire_enum::<MemoryStatusFilter>("status", &status))
                    .transpose()?,
                text,
                pinned: pinned.then_some(true),
                limit: Some(limit),
                offset: None,
            };
            let page = client.memory(&query).await?;
            if json {
                print_json(&page)?;
            } else if page.items.is_empty() {
                say!("Nothing remembered. Add a fact with `souz memory add TEXT`.");
            } else {
                page.items.iter().for_each(print_fact_line);
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
            let (fact, created) = client.remember(&new).await?;
            if json {
                print_json(&fact)?;
            } else if created {
                say!("Remembered {}: {}", fact.id, fact.title);
            } else {
                say!("Already remembered {}: {} (confirmed)", fact.id, fact.title);
            }
        }
        MemoryCommand::Status { json } => status(&client, json).await?,
        MemoryCommand::Forget { id, retire } => {
            if retire {
                client.retire_memory_fact(&id).await?;
                say!("Retired {id}.");
            } else {
                client.forget_memory_fact(&id).await?;
                say!("Forgot {id}.");
            }
        }
        MemoryCommand::Show { id, json } => show(&client, &id, json).await?,
    }
    Ok(ExitCode::SUCCESS)
}
