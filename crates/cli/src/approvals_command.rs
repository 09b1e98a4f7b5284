//! `souz approvals` and `souz grants`: the approval queue and standing grants from a terminal.

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use souz_protocol::{
    Approval, ApprovalList, ApprovalStatus, ArgumentMatch, DecisionRequest, ScopeKind, Verdict,
};

use crate::client::{DaemonClient, resolve_prefix};
use crate::output::{age, print_json, say, truncate};
use crate::texts::{fill, tr};

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// List approvals (pending ones by default).
    List {
        /// Show every approval, not only pending ones.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one approval in full (arguments, diff, suggested scope).
    Show {
        /// Approval id (a unique prefix is enough).
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending approval.
    Approve(DecideArgs),
    /// Deny a pending approval.
    Deny(DecideArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    /// This call only.
    Once,
    /// This requester, until revoked.
    Requester,
    /// This requester, for --minutes.
    Minutes,
    /// Everyone, from now on (a rule in config.toml).
    Always,
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    /// Approval id (a unique prefix is enough).
    id: String,
    /// How far the decision reaches.
    #[arg(long, value_enum, default_value = "once")]
    scope: ScopeArg,
    /// Minutes, with --scope minutes.
    #[arg(long)]
    minutes: Option<u32>,
    /// Use the scope Souz suggested with the approval (folder, command prefix or domain).
    #[arg(long, conflicts_with_all = ["scope", "path_prefix", "command_prefix", "domain"])]
    suggested: bool,
    /// Narrow a scoped decision to this folder.
    #[arg(long)]
    path_prefix: Option<String>,
    /// Narrow a scoped decision to commands starting with these words.
    #[arg(long)]
    command_prefix: Option<String>,
    /// Narrow a scoped decision to this domain.
    #[arg(long)]
    domain: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum GrantsCommand {
    /// List active grants.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a grant.
    Revoke {
        /// Grant id (a unique prefix is enough).
        id: String,
    },
}

pub async fn run_approvals(command: Option<ApprovalsCommand>) -> Result<()> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(ApprovalsCommand::List {
        all: false,
        json: false,
    }) {
        ApprovalsCommand::List { all, json } => {
            let list: ApprovalList = if all {
                client.approvals(100).await?
            } else {
                client.pending_approvals(100).await?
            };
            if json {
                return print_json(&list);
            }
            if list.items.is_empty() {
                say!(
                    "{}",
                    if all {
                        tr("No approvals.", "Одобрений нет.")
                    } else {
                        tr(
                            "Nothing is waiting for you.",
                            "Ничто не ждёт вашего решения.",
                        )
                    }
                );
                return Ok(());
            }
            say!(
                "{:<10} {:>5}  {:<9} {:<20} {:<16} {}",
                "ID",
                tr("AGE", "ВОЗР."),
                tr("STATUS", "СОСТ."),
                tr("WHO", "КТО"),
                tr("TOOL", "ИНСТРУМЕНТ"),
                tr("WHAT", "ЧТО")
            );
            for approval in &list.items {
                say!(
                    "{:<10} {:>5}  {:<9} {:<20} {:<16} {}",
                    truncate(&approval.id, 10),
                    age(approval.created_at),
                    approval.status.as_str(),
                    truncate(&approval.requester_label, 20),
                    truncate(&approval.tool, 16),
                    truncate(&approval.summary, 60),
                );
            }
            Ok(())
        }
        ApprovalsCommand::Show { id, json } => {
            let approval = find(&client, &id).await?;
            if json {
                return print_json(&approval);
            }
            print_approval(&approval);
            Ok(())
        }
        ApprovalsCommand::Approve(args) => decide(&client, Verdict::Approve, args).await,
        ApprovalsCommand::Deny(args) => decide(&client, Verdict::Deny, args).await,
    }
}

pub async fn run_grants(command: Option<GrantsCommand>) -> Result<()> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(GrantsCommand::List { json: false }) {
        GrantsCommand::List { json } => {
            let list = client.grants().await?;
            if json {
                return print_json(&list);
            }
            if list.items.is_empty() {
                say!("{}", tr("No active grants.", "Действующих разрешений нет."));
            }
            for grant in &list.items {
                say!("{:<10} {}", truncate(&grant.id, 10), grant.label);
            }
            Ok(())
        }
        GrantsCommand::Revoke { id } => {
            let list = client.grants().await?;
            let id = resolve_prefix(
                tr("grant", "разрешения"),
                &id,
                list.items.iter().map(|grant| grant.id.as_str()),
            )?;
            client.revoke_grant(&id).await?;
            say!(
                "{}",
                fill(
                    tr("Revoked grant {id}.", "Разрешение {id} отозвано."),
                    &[("id", &id)]
                )
            );
            Ok(())
        }
    }
}

async fn find(client: &DaemonClient, id: &str) -> Result<Approval> {
    crate::client::find(
        client,
        tr("approval", "одобрения"),
        "/v1/approvals",
        id,
        |list: &ApprovalList| {
            list.items
                .iter()
                .map(|approval| approval.id.as_str())
                .collect()
        },
    )
    .await
}

async fn decide(client: &DaemonClient, verdict: Verdict, args: DecideArgs) -> Result<()> {
    let approval = find(client, &args.id).await?;
    if approval.status != ApprovalStatus::Pending {
        bail!(
            "{}",
            fill(
                tr(
                    "approval {id} is already {status}",
                    "одобрение {id} уже в состоянии {status}"
                ),
                &[("id", &approval.id), ("status", &approval.status.as_str())]
            )
        );
    }
    let (scope, minutes, argument_match, tool_group) = if args.suggested {
        let suggested = approval.suggested.clone();
        (
            suggested.scope,
            suggested.minutes,
            Some(suggested.argument_match),
            suggested.tool_group.filter(|_| verdict == Verdict::Approve),
        )
    } else {
        let scope = match args.scope {
            ScopeArg::Once => ScopeKind::Once,
            ScopeArg::Requester => ScopeKind::Requester,
            ScopeArg::Minutes => ScopeKind::Minutes,
            ScopeArg::Always => ScopeKind::Always,
        };
        let argument_match = ArgumentMatch {
            path_prefix: args.path_prefix,
            command_prefix: args.command_prefix,
            domain: args.domain,
        };
        (
            scope,
            args.minutes,
            (!argument_match.is_empty()).then_some(argument_match),
            None,
        )
    };
    let request = DecisionRequest {
        decision: verdict,
        scope,
        minutes,
        argument_match,
        tool_group,
        via: Some("cli".to_owned()),
    };
    let response = client.decide(&approval.id, &request).await?;
    let verb = match verdict {
        Verdict::Approve => tr("Approved", "Одобрено"),
        Verdict::Deny => tr("Denied", "Отклонено"),
    };
    say!("{verb}: {}", response.approval.summary);
    if let Some(grant) = &response.grant {
        say!(
            "{} {}: {}",
            tr("Grant", "Разрешение"),
            grant.id,
            grant.label
        );
    }
    if let Some(rule) = &response.rule {
        say!(
            "{}\n{rule}",
            tr("Added to config.toml:", "Добавлено в config.toml:")
        );
    }
    if let Some(warning) = &response.warning {
        eprintln!(
            "{}: {}",
            tr("warning", "предупреждение"),
            souz_protocol::display::display_text(&warning.to_string())
        );
    }
    Ok(())
}

/// A label padded to the width of the widest label in this language.
fn label(en: &'static str, ru: &'static str) -> String {
    crate::texts::label(en, ru, [9, 13])
}

fn print_approval(approval: &Approval) {
    say!("{} {}", label("Approval", "Одобрение"), approval.id);
    say!(
        "{} {}",
        label("Status", "Состояние"),
        approval.status.as_str()
    );
    say!("{} {}", label("Who", "Кто"), approval.requester_label);
    say!(
        "{} {} ({})",
        label("Tool", "Инструмент"),
        approval.tool,
        approval.risk.as_str()
    );
    say!("{} {}", label("What", "Что"), approval.summary);
    say!("{} {}", label("Why", "Почему"), approval.reason);
    say!(
        "{} {}",
        label("Asked", "Спрошено"),
        fill(
            tr("{age} ago; expires {at}", "{age} назад; истекает в {at}"),
            &[
                ("age", &age(approval.created_at)),
                ("at", &approval.expires_at.format("%H:%M:%S UTC"))
            ]
        )
    );
    say!(
        "{} {}",
        label("Arguments", "Аргументы"),
        serde_json::to_string_pretty(&approval.arguments).unwrap_or_default()
    );
    if let Some(diff) = &approval.diff {
        say!("{}\n{diff}", tr("Diff", "Изменения"));
    }
    if approval.status == ApprovalStatus::Pending {
        say!(
            "{} {}",
            label("Suggested", "Предложено"),
            approval.suggested.label
        );
        let short = truncate(&approval.id, 12);
        say!(
            "\n  souz approvals approve {short}              # {}",
            tr("this call only", "только этот вызов")
        );
        say!(
            "  souz approvals approve {short} --suggested  # {}",
            approval.suggested.label
        );
        say!("  souz approvals deny {short}");
    }
}
