//! `souz skills`: file-backed skills (list, show, install, validate, enable, disable, remove)
//! through the daemon. Paths are made absolute here, since the daemon reads them.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use souz_protocol::{FindingSeverity, SkillFinding, SkillGitSource, SkillSource};

use crate::output::{print_json, say};
use crate::texts::{fill, tr};

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List every skill: installed, then a project's `.agents/skills`, `~/.agents/skills`,
    /// `~/.claude/skills` (the first of an id wins).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one skill: its metadata, files and validation.
    Show {
        /// The skill's id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Install a skill from a folder, a `.zip` or a git repository's http(s) URL; a rejected
    /// skill is not installed.
    Install {
        /// The skill folder or `.zip`, or a git URL (a repository, or a GitHub, GitLab or Gitea
        /// page of the skill's folder).
        path: String,
        /// With a git URL: the branch, tag or commit (default: the default branch).
        #[arg(long = "ref", value_name = "REF")]
        reference: Option<String>,
        /// With a git URL: the skill's folder in the repository (default: the top, or the only
        /// folder with a SKILL.md).
        #[arg(long)]
        folder: Option<String>,
    },
    /// Validate a skill folder or `.zip` without installing it (exit 1 when rejected).
    Validate {
        /// The skill folder or `.zip`.
        path: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let the agents use an installed skill.
    Enable {
        /// The skill's id.
        id: String,
    },
    /// Hide an installed skill from the agents.
    Disable {
        /// The skill's id.
        id: String,
    },
    /// Remove an installed skill and all its stored bundles.
    Remove {
        /// The skill's id.
        id: String,
    },
}

fn absolute(path: &str) -> Result<String> {
    let path = std::path::absolute(Path::new(path)).with_context(|| {
        fill(
            tr(
                "cannot make `{path}` absolute",
                "не удалось сделать `{path}` абсолютным путём",
            ),
            &[("path", &path)],
        )
    })?;
    Ok(path.display().to_string())
}

fn source(source: SkillSource) -> &'static str {
    match source {
        SkillSource::Installed => tr("installed", "установлен"),
        SkillSource::Project => tr("project", "проект"),
        SkillSource::UserAgents => "~/.agents",
        SkillSource::UserClaude => "~/.claude",
    }
}

/// Installs from a folder or `.zip` (`path`) or a git URL (with `reference` and `folder`), and
/// says what became of the skill's consent.
async fn install(
    client: &souz_client::DaemonClient,
    path: String,
    reference: Option<String>,
    folder: Option<String>,
) -> Result<()> {
    let installed = if is_url(&path) {
        let source = SkillGitSource {
            url: path,
            reference,
            folder,
        };
        client.install_skill_git(&source).await?
    } else if reference.is_some() || folder.is_some() {
        anyhow::bail!(
            "{}",
            tr(
                "--ref and --folder go with a git URL, not a folder or `.zip`",
                "--ref и --folder указываются с адресом git, не с папкой и не с `.zip`"
            )
        );
    } else {
        let folder = absolute(&path)?;
        match client.install_skill(&folder).await {
            Ok(installed) => installed,
            Err(error) => {
                // A refused bundle: show every finding, as `souz skills validate` does.
                if let Ok(validation) = client.validate_skill(&folder).await
                    && !validation.approved
                {
                    print_validation(&validation, &path);
                }
                return Err(error.into());
            }
        }
    };
    say!(
        "{}",
        fill(
            tr("Installed {id} ({hash}).", "Установлен {id} ({hash})."),
            &[("id", &installed.id), ("hash", &installed.hash)]
        )
    );
    print_findings(&installed.validation.findings);
    match installed.consent_approval_id {
        Some(approval) => {
            say!(
                "{}",
                fill(
                    tr(
                        "Consent pending: approve {approval} (souz approvals) to let its commands \
                         run.",
                        "Нужно согласие: одобрите {approval} (souz approvals), чтобы его команды \
                         могли выполняться."
                    ),
                    &[("approval", &approval)]
                )
            );
        }
        None => say!(
            "{}",
            tr(
                "Consent: this bundle was approved before.",
                "Согласие: этот пакет уже был одобрен раньше."
            )
        ),
    }
    Ok(())
}

/// Whether `text` is a URL rather than a path (`http://`, `https://`, or another scheme the
/// daemon will refuse with its reason).
fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
    })
}

/// A validation's verdict and findings, as `souz skills validate` prints them.
fn print_validation(validation: &souz_protocol::SkillValidation, path: &str) {
    let verdict = if validation.approved {
        tr("valid", "годен")
    } else {
        tr("rejected", "отклонён")
    };
    say!("{}: {verdict}", validation.id.as_deref().unwrap_or(path));
    print_findings(&validation.findings);
}

fn print_findings(findings: &[SkillFinding]) {
    for finding in findings {
        let severity = match finding.severity {
            FindingSeverity::Info => tr("info", "инфо"),
            FindingSeverity::Warning => tr("warning", "важно"),
            FindingSeverity::Error => tr("error", "ошибка"),
        };
        say!("  {severity:<7} {:<32} {}", finding.code, finding.message);
    }
}

/// A skill as `souz skills show` prints it.
fn print_detail(detail: &souz_protocol::SkillDetail) {
    say!("{} ({})", detail.summary.id, source(detail.summary.source));
    say!("{}", detail.summary.description);
    let enabled = if detail.summary.enabled {
        tr("yes", "да")
    } else {
        tr("no", "нет")
    };
    say!("{} {}", tr("folder:", "папка: "), detail.summary.path);
    say!("{} {}", tr("hash:  ", "хеш:   "), detail.summary.hash);
    say!("{} {enabled}", tr("enabled:", "включён:"));
    for (key, value) in &detail.metadata {
        say!("{key}: {value}");
    }
    say!("{} {}", tr("files:", "файлы:"), detail.files.join(", "));
    let verdict = if detail.validation.approved {
        tr("approved", "одобрен")
    } else {
        tr("rejected", "отклонён")
    };
    say!("{} {verdict}", tr("validation:", "проверка:"));
    print_findings(&detail.validation.findings);
}

pub async fn run(command: Option<SkillsCommand>) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(SkillsCommand::List { json: false }) {
        SkillsCommand::List { json } => {
            let list = client.skills().await?;
            if json {
                print_json(&list)?;
                return Ok(ExitCode::SUCCESS);
            }
            if list.items.is_empty() {
                say!(
                    "{}",
                    tr(
                        "No skills. Install one with `souz skills install PATH`.",
                        "Навыков нет. Установите: `souz skills install ПУТЬ`."
                    )
                );
            }
            for skill in &list.items {
                let state = match (&skill.error, skill.enabled) {
                    (Some(_), _) => tr("invalid", "с ошибкой"),
                    (None, true) => tr("enabled", "включён"),
                    (None, false) => tr("disabled", "выключен"),
                };
                say!(
                    "{:<32} {:<10} {:<9} {}",
                    skill.id,
                    source(skill.source),
                    state,
                    skill.error.as_deref().unwrap_or(&skill.description)
                );
            }
        }
        SkillsCommand::Show { id, json } => {
            let detail = client.skill(&id).await?;
            if json {
                print_json(&detail)?;
                return Ok(ExitCode::SUCCESS);
            }
            print_detail(&detail);
        }
        SkillsCommand::Install {
            path,
            reference,
            folder,
        } => {
            install(&client, path, reference, folder).await?;
        }
        SkillsCommand::Validate { path, json } => {
            let validation = client.validate_skill(&absolute(&path)?).await?;
            if json {
                print_json(&validation)?;
            } else {
                print_validation(&validation, &path);
            }
            if !validation.approved {
                return Ok(ExitCode::FAILURE);
            }
        }
        SkillsCommand::Enable { id } => {
            client.set_skill_enabled(&id, true).await?;
            say!(
                "{}",
                fill(tr("Enabled {id}.", "Навык {id} включён."), &[("id", &id)])
            );
        }
        SkillsCommand::Disable { id } => {
            client.set_skill_enabled(&id, false).await?;
            say!(
                "{}",
                fill(tr("Disabled {id}.", "Навык {id} выключен."), &[("id", &id)])
            );
        }
        SkillsCommand::Remove { id } => {
            client.remove_skill(&id).await?;
            say!(
                "{}",
                fill(tr("Removed {id}.", "Навык {id} удалён."), &[("id", &id)])
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
