//! `souz schedules`: scheduled runs from a terminal (list, preview, add, show, run, pause,
//! resume, rm, history), over the daemon's `/v1/schedules`.
//!
//! Invariants: `add` shows the next fires and what the schedule may do unasked before anything
//! is stored, and stores exactly the spec and zone it showed (a relative `--in` is resolved once,
//! by the preview); `add` and `rm` go ahead only on `--yes` or a "yes" typed at a terminal, and
//! refuse without a terminal; the daemon checks specs and zones, and its refusal is printed as
//! it said it, with nothing stored. Times are shown in the terminal's local time; spec, zone,
//! ids, state names and JSON stay as they are in both languages.

mod view;

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use souz_protocol::chat::ChatSettings;
use souz_protocol::schedules::{
    MissedPolicy, NewSchedule, OverlapPolicy, Schedule, ScheduleAction, ScheduleEnvelope,
};

use crate::client::{DaemonClient, resolve_prefix};
use crate::output::{print_json, say};
use crate::texts::{fill, tr};

/// Runs listed by `souz schedules show`.
const SHOWN_RUNS: u32 = 5;

#[derive(Debug, Subcommand)]
pub enum SchedulesCommand {
    /// List schedules: id, name, when, zone, next fire (local time), active or paused.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the next 5 fires of a time spec in a zone, storing nothing.
    Preview {
        #[command(flatten)]
        when: When,
        /// IANA time zone the spec is read in (default: your time zone setting in Souz).
        #[arg(long)]
        zone: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a schedule: shows its next fires and what it may do unasked, then asks.
    Add(AddArgs),
    /// Show a schedule in full, with its latest runs.
    Show {
        /// Schedule id (a unique prefix is enough) or its exact name.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a schedule now, with the same envelope and policies as a real fire.
    Run {
        /// Schedule id (a unique prefix is enough) or its exact name.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Pause a schedule: it does not fire until resumed.
    Pause {
        /// Schedule id (a unique prefix is enough) or its exact name.
        id: String,
    },
    /// Resume a paused schedule (occurrences of the pause are not owed).
    Resume {
        /// Schedule id (a unique prefix is enough) or its exact name.
        id: String,
    },
    /// Delete a schedule and its run history (its chat stays); asks first.
    Rm {
        /// Schedule id (a unique prefix is enough) or its exact name.
        id: String,
        /// Delete without asking.
        #[arg(long)]
        yes: bool,
    },
    /// A schedule's runs, newest first: state, fire time, start and end, chat, reason.
    History {
        /// Schedule id (a unique prefix is enough) or its exact name.
        id: String,
        /// At most this many runs (1..500).
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// When a schedule fires: exactly one of a cron expression, a time, or a delay from now.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct When {
    /// A cron expression: 5 fields (`30 8 * * 1-5`), or 6 with seconds first.
    #[arg(long, value_name = "EXPRESSION")]
    cron: Option<String>,
    /// Once, at a wall time in the zone (`2026-12-24 09:00`) or an RFC 3339 time.
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
    /// Once, after this long from now (`2 hours`, `30 minutes`, `1 day`).
    #[arg(long = "in", value_name = "DURATION")]
    after: Option<String>,
}

impl When {
    /// The spec as `NewSchedule::spec` takes it (`30 8 * * 1-5`, `at …`, `in …`).
    fn spec(&self) -> String {
        let prefixed = |keyword: &str, text: &str| {
            let text = text.trim();
            let bare = text
                .get(..keyword.len())
                .filter(|head| head.eq_ignore_ascii_case(keyword))
                .and_then(|_| text.get(keyword.len()..))
                .filter(|rest| rest.starts_with(' '))
                .map_or(text, str::trim_start);
            format!("{keyword} {bare}")
        };
        match (&self.cron, &self.at, &self.after) {
            (Some(cron), _, _) => cron.trim().to_owned(),
            (None, Some(at), _) => prefixed("at", at),
            (None, None, Some(after)) => prefixed("in", after),
            // clap requires exactly one; an empty spec gets the daemon's refusal.
            (None, None, None) => String::new(),
        }
    }
}

/// `--overlap`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OverlapArg {
    /// The occurrence is recorded as skipped.
    Skip,
    /// One occurrence waits for the running one.
    QueueOne,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Its name (also the title of its chat).
    name: String,
    #[command(flatten)]
    when: When,
    /// IANA time zone the time is read in (default: your time zone setting in Souz).
    #[arg(long)]
    zone: Option<String>,
    /// What the agent is asked (with --skill: what the skill is asked to do).
    #[arg(long, required_unless_present = "skill")]
    prompt: Option<String>,
    /// Run this skill (by id) instead of a plain prompt.
    #[arg(long)]
    skill: Option<String>,
    /// Missed occurrences: skip, run-once (default) or catch-up:N (the latest N, 1..100).
    #[arg(long, value_parser = parse_missed, value_name = "POLICY")]
    missed: Option<MissedPolicy>,
    /// An occurrence due while a run still goes: skip (default) or queue-one.
    #[arg(long, value_enum)]
    overlap: Option<OverlapArg>,
    /// A tool its runs may use unasked (repeatable; none: read-only tools only).
    #[arg(long = "allow-tool", value_name = "TOOL")]
    allow_tools: Vec<String>,
    /// A folder its runs may write in unasked (repeatable).
    #[arg(long = "allow-folder", value_name = "FOLDER")]
    allow_folders: Vec<String>,
    /// A host its runs may reach unasked (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Create it without asking.
    #[arg(long)]
    yes: bool,
    /// Print the created schedule as JSON (what it will do goes to stderr).
    #[arg(long)]
    json: bool,
}

/// `--missed`: `skip`, `run-once` or `catch-up:N`.
fn parse_missed(text: &str) -> Result<MissedPolicy, String> {
    let text = text.trim().to_ascii_lowercase().replace('_', "-");
    match text.as_str() {
        "skip" => Ok(MissedPolicy::Skip),
        "run-once" => Ok(MissedPolicy::RunOnce),
        _ => text
            .strip_prefix("catch-up:")
            .and_then(|limit| limit.trim().parse::<u32>().ok())
            .filter(|limit| (1..=100).contains(limit))
            .map(|limit| MissedPolicy::CatchUp { limit })
            .ok_or_else(|| "expected skip, run-once or catch-up:N with N from 1 to 100".to_owned()),
    }
}

/// A folder as the daemon should read it: relative paths are made absolute here, where they
/// mean something; `~/…` and absolute paths are kept.
fn folder(text: &str) -> Result<String> {
    let path = std::path::Path::new(text.trim());
    if path.is_absolute() || text.trim_start().starts_with('~') {
        return Ok(text.trim().to_owned());
    }
    let absolute = std::path::absolute(path).with_context(|| {
        fill(
            tr(
                "cannot make `{path}` an absolute path",
                "не удалось сделать `{path}` абсолютным путём",
            ),
            &[("path", &text)],
        )
    })?;
    Ok(absolute.to_string_lossy().into_owned())
}

impl AddArgs {
    fn action(&self) -> ScheduleAction {
        match &self.skill {
            Some(skill) => ScheduleAction::Skill {
                skill: skill.clone(),
                prompt: self.prompt.clone(),
            },
            None => ScheduleAction::Prompt {
                prompt: self.prompt.clone().unwrap_or_default(),
                settings: ChatSettings::default(),
            },
        }
    }

    fn envelope(&self) -> Result<ScheduleEnvelope> {
        Ok(ScheduleEnvelope {
            tools: self.allow_tools.clone(),
            folders: self
                .allow_folders
                .iter()
                .map(|text| folder(text))
                .collect::<Result<_>>()?,
            hosts: self.allow_hosts.clone(),
        })
    }
}

pub async fn run(command: Option<SchedulesCommand>) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    match command.unwrap_or(SchedulesCommand::List { json: false }) {
        SchedulesCommand::List { json } => {
            let list = client.schedules().await?;
            if json {
                print_json(&list)?;
            } else {
                view::print_list(&list.items);
            }
        }
        SchedulesCommand::Preview { when, zone, json } => {
            let preview = client
                .preview_schedule(&when.spec(), zone.as_deref())
                .await?;
            if json {
                print_json(&preview)?;
            } else {
                view::preview_lines(&preview)
                    .iter()
                    .for_each(|line| say!("{line}"));
            }
        }
        SchedulesCommand::Add(args) => add(&client, args).await?,
        SchedulesCommand::Show { id, json } => {
            let schedule = find(&client, &id).await?.schedule;
            let runs = client.schedule_runs(&schedule.id, SHOWN_RUNS).await?;
            if json {
                print_json(&serde_json::json!({"schedule": schedule, "runs": runs.items}))?;
            } else {
                view::print_schedule(&schedule, &runs.items);
            }
        }
        SchedulesCommand::Run { id, json } => {
            let Found { schedule, short } = find(&client, &id).await?;
            let run = client.run_schedule(&schedule.id).await?;
            if json {
                print_json(&run)?;
            } else {
                view::print_started(&schedule, &short, &run);
            }
        }
        SchedulesCommand::Pause { id } => set_enabled(&client, &id, false).await?,
        SchedulesCommand::Resume { id } => set_enabled(&client, &id, true).await?,
        SchedulesCommand::Rm { id, yes } => remove(&client, &id, yes).await?,
        SchedulesCommand::History { id, limit, json } => {
            let schedule = find(&client, &id).await?.schedule;
            let runs = client.schedule_runs(&schedule.id, limit).await?;
            if json {
                print_json(&runs)?;
            } else {
                view::print_history(&schedule, &runs.items);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `souz schedules pause` (`enabled` false) and `resume`.
async fn set_enabled(client: &DaemonClient, id: &str, enabled: bool) -> Result<()> {
    let Found { schedule, short } = find(client, id).await?;
    let changed = client.set_schedule_enabled(&schedule.id, enabled).await?;
    if enabled {
        say!(
            "{}",
            fill(
                tr(
                    "Resumed {name}; next fire: {next}.",
                    "{name} снова работает; следующий запуск: {next}."
                ),
                &[
                    ("name", &changed.name),
                    ("next", &view::next_fire(&changed))
                ]
            )
        );
    } else {
        say!(
            "{}",
            fill(
                tr(
                    "Paused {name}: it does not fire until `souz schedules resume {id}`.",
                    "{name} на паузе: не запустится до `souz schedules resume {id}`."
                ),
                &[("name", &changed.name), ("id", &short)]
            )
        );
    }
    Ok(())
}

/// `souz schedules rm`: asks unless `yes`.
async fn remove(client: &DaemonClient, id: &str, yes: bool) -> Result<()> {
    let schedule = find(client, id).await?.schedule;
    let question = fill(
        tr(
            "Delete schedule {name} and its run history (its chat stays)?",
            "Удалить расписание {name} и историю его запусков (чат останется)?",
        ),
        &[("name", &schedule.name)],
    );
    confirm(&question, yes)?;
    client.delete_schedule(&schedule.id).await?;
    say!(
        "{}",
        fill(
            tr("Deleted schedule {name}.", "Расписание {name} удалено."),
            &[("name", &schedule.name)]
        )
    );
    Ok(())
}

/// `souz schedules add`: preview, show, ask, store what was shown.
async fn add(client: &DaemonClient, args: AddArgs) -> Result<()> {
    let preview = client
        .preview_schedule(&args.when.spec(), args.zone.as_deref())
        .await?;
    let envelope = args.envelope()?;
    let action = args.action();
    let summary = view::add_summary(&args.name, &preview, &action, &envelope);
    for line in &summary {
        if args.json {
            // stdout carries the JSON only.
            eprintln!("{}", souz_protocol::display::display_text(line));
        } else {
            say!("{line}");
        }
    }
    confirm(
        tr("Create this schedule?", "Создать это расписание?"),
        args.yes,
    )?;
    let created = client
        .create_schedule(&NewSchedule {
            name: args.name,
            // What the preview showed: a relative `in …` resolved once, in the zone it named.
            spec: preview.spec,
            zone: Some(preview.zone),
            action,
            missed: args.missed,
            overlap: args.overlap.map(|overlap| match overlap {
                OverlapArg::Skip => OverlapPolicy::Skip,
                OverlapArg::QueueOne => OverlapPolicy::QueueOne,
            }),
            envelope: Some(envelope),
            enabled: None,
        })
        .await?;
    if args.json {
        return print_json(&created);
    }
    say!(
        "{}",
        fill(
            tr(
                "Created schedule {name} ({id}); next fire: {next}.",
                "Расписание {name} создано ({id}); следующий запуск: {next}."
            ),
            &[
                ("name", &created.name),
                ("id", &created.id),
                ("next", &view::next_fire(&created)),
            ]
        )
    );
    Ok(())
}

/// Goes ahead on `--yes` or a "yes" typed at the terminal; refuses without a terminal (a
/// script must say `--yes`) and on any other answer.
fn confirm(question: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!(
            "{}",
            tr(
                "not confirmed, nothing changed: standard input is not a terminal to ask at; \
                 add --yes to go ahead",
                "не подтверждено, ничего не изменено: стандартный ввод — не терминал, спросить \
                 негде; добавьте --yes, чтобы продолжить"
            )
        );
    }
    let mut stderr = std::io::stderr().lock();
    write!(
        stderr,
        "{} [{}] ",
        souz_protocol::display::display_text(question),
        tr("y/N", "д/Н")
    )
    .and_then(|()| stderr.flush())
    .context("cannot ask at the terminal")?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    if is_yes(&answer) {
        Ok(())
    } else {
        bail!(
            "{}",
            tr("cancelled, nothing changed", "отменено, ничего не изменено")
        )
    }
}

/// Whether a typed answer means yes (English or Russian, any case).
fn is_yes(answer: &str) -> bool {
    matches!(
        answer.trim().to_lowercase().as_str(),
        "y" | "yes" | "д" | "да"
    )
}

/// A schedule named on the command line, with the shortest start of its id that names it.
struct Found {
    schedule: Schedule,
    short: String,
}

/// The schedule `text` names: its full id, its exact name (when only one has it), or the
/// start of its id as the lists print it.
async fn find(client: &DaemonClient, text: &str) -> Result<Found> {
    let list = client.schedules().await?;
    let text = text.trim();
    let named: Vec<&Schedule> = list
        .items
        .iter()
        .filter(|schedule| schedule.name == text)
        .collect();
    let by_id = list.items.iter().find(|schedule| schedule.id == text);
    let id = match (by_id, named.as_slice()) {
        (Some(schedule), _) => schedule.id.clone(),
        (None, [schedule]) => schedule.id.clone(),
        _ => resolve_prefix(
            tr("schedule", "расписания"),
            text,
            list.items.iter().map(|schedule| schedule.id.as_str()),
        )?,
    };
    let short = view::short_ids(list.items.iter().map(|schedule| schedule.id.as_str()))
        .remove(id.as_str())
        .unwrap_or_else(|| id.clone());
    let schedule = list
        .items
        .into_iter()
        .find(|schedule| schedule.id == id)
        .context(tr(
            "the schedule disappeared while it was looked up",
            "расписание исчезло, пока его искали",
        ))?;
    Ok(Found { schedule, short })
}

#[cfg(test)]
mod tests;
