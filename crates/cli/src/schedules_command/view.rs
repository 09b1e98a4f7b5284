//! What `souz schedules` prints: tables and details of schedules and runs, the preview, and
//! the summary `add` shows before asking. Times are the terminal's local time (`TZ`, else the
//! system's zone), with the weekday in the language of the messages; everything a person reads
//! is in English and Russian ([`tr`]).

use std::collections::HashMap;

use chrono::{DateTime, Datelike, Local, Utc, Weekday};
use souz_protocol::schedules::{
    MissedPolicy, OverlapPolicy, Schedule, ScheduleAction, ScheduleEnvelope, SchedulePreview,
    ScheduleRun,
};

use crate::output::{say, truncate};
use crate::texts::{fill, tr};

/// Fewest characters of an id the lists show. Schedule ids are UUIDv7 (time first), so ids
/// made close together share a long start: each is shown as long as it takes to be unique.
const SHORT_ID: usize = 8;

/// The start of each of `ids` that no other of them shares (at least [`SHORT_ID`] characters),
/// as `souz schedules show PREFIX` takes it.
pub(super) fn short_ids<'a>(ids: impl Iterator<Item = &'a str>) -> HashMap<&'a str, String> {
    let mut sorted: Vec<&str> = ids.collect();
    sorted.sort_unstable();
    let common = |left: &str, right: &str| {
        left.chars()
            .zip(right.chars())
            .take_while(|(left, right)| left == right)
            .count()
    };
    let mut shown = HashMap::with_capacity(sorted.len());
    for (index, id) in sorted.iter().enumerate() {
        let before = index
            .checked_sub(1)
            .and_then(|previous| sorted.get(previous))
            .map_or(0, |previous| common(previous, id));
        let after = sorted.get(index + 1).map_or(0, |next| common(id, next));
        let length = (before.max(after) + 1).max(SHORT_ID);
        shown.insert(*id, id.chars().take(length).collect());
    }
    shown
}

/// `at` in local time: `Mon 2026-12-07 08:30`.
pub(super) fn local_time(at: DateTime<Utc>) -> String {
    let local = at.with_timezone(&Local);
    format!(
        "{} {}",
        weekday(local.weekday()),
        local.format("%Y-%m-%d %H:%M")
    )
}

/// `at` in local time to the second, without the date when it is `day` (`08:30:02`).
fn clock(at: Option<DateTime<Utc>>, day: DateTime<Utc>) -> String {
    let Some(at) = at else {
        return "-".to_owned();
    };
    let local = at.with_timezone(&Local);
    if local.date_naive() == day.with_timezone(&Local).date_naive() {
        local.format("%H:%M:%S").to_string()
    } else {
        local.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

fn weekday(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => tr("Mon", "Пн"),
        Weekday::Tue => tr("Tue", "Вт"),
        Weekday::Wed => tr("Wed", "Ср"),
        Weekday::Thu => tr("Thu", "Чт"),
        Weekday::Fri => tr("Fri", "Пт"),
        Weekday::Sat => tr("Sat", "Сб"),
        Weekday::Sun => tr("Sun", "Вс"),
    }
}

/// When a schedule fires next, or why it does not.
pub(super) fn next_fire(schedule: &Schedule) -> String {
    match schedule.next_fire {
        Some(at) => local_time(at),
        None if !schedule.enabled => tr("none (paused)", "нет (на паузе)").to_owned(),
        None => tr(
            "none (nothing left to fire)",
            "нет (запусков больше не будет)",
        )
        .to_owned(),
    }
}

fn state(schedule: &Schedule) -> &'static str {
    if schedule.enabled {
        tr("active", "активно")
    } else {
        tr("paused", "на паузе")
    }
}

/// `--missed` as it is typed.
fn missed(policy: MissedPolicy) -> String {
    match policy {
        MissedPolicy::Skip => "skip".to_owned(),
        MissedPolicy::RunOnce => "run-once".to_owned(),
        MissedPolicy::CatchUp { limit } => format!("catch-up:{limit}"),
    }
}

/// `--overlap` as it is typed.
fn overlap(policy: OverlapPolicy) -> &'static str {
    match policy {
        OverlapPolicy::Skip => "skip",
        OverlapPolicy::QueueOne => "queue-one",
    }
}

/// What a schedule runs, in one line.
fn action(action: &ScheduleAction) -> String {
    match action {
        ScheduleAction::Prompt { prompt, .. } => fill(
            tr("the prompt \"{prompt}\"", "запрос «{prompt}»"),
            &[("prompt", &truncate(&prompt.replace('\n', " "), 80))],
        ),
        ScheduleAction::Skill { skill, prompt } => {
            let mut text = fill(
                tr("the skill {skill}", "навык {skill}"),
                &[("skill", skill)],
            );
            if let Some(prompt) = prompt {
                text.push_str(&format!(
                    ": \"{}\"",
                    truncate(&prompt.replace('\n', " "), 80)
                ));
            }
            text
        }
    }
}

/// What a schedule's runs may do without asking, one line each, indented by `indent`.
pub(super) fn envelope_lines(envelope: &ScheduleEnvelope, indent: &str) -> Vec<String> {
    if envelope.tools.is_empty() && envelope.folders.is_empty() && envelope.hosts.is_empty() {
        return vec![format!(
            "{indent}{}",
            tr(
                "read-only tools only; anything else asks you",
                "только инструменты для чтения; всё остальное спросит вас"
            )
        )];
    }
    let listed = |items: &[String], none: &'static str| {
        if items.is_empty() {
            none.to_owned()
        } else {
            items.join(", ")
        }
    };
    vec![
        format!(
            "{indent}{} {}",
            tr("tools:  ", "инструменты:"),
            if envelope.tools.is_empty() {
                tr("read-only ones only", "только для чтения").to_owned()
            } else {
                fill(
                    tr("read-only ones and {tools}", "для чтения и {tools}"),
                    &[("tools", &envelope.tools.join(", "))],
                )
            }
        ),
        format!(
            "{indent}{} {}",
            tr("folders:", "папки:      "),
            listed(&envelope.folders, tr("none", "нет"))
        ),
        format!(
            "{indent}{} {}",
            tr("hosts:  ", "хосты:      "),
            listed(&envelope.hosts, tr("none", "нет"))
        ),
        format!(
            "{indent}{}",
            tr("anything else asks you", "всё остальное спросит вас")
        ),
    ]
}

/// The spec, its zone and its next fires.
pub(super) fn preview_lines(preview: &SchedulePreview) -> Vec<String> {
    let mut lines = vec![fill(
        tr(
            "{spec} in {zone}; next fires (your local time):",
            "{spec} в зоне {zone}; ближайшие запуски (ваше местное время):",
        ),
        &[("spec", &preview.spec), ("zone", &preview.zone)],
    )];
    if preview.fires.is_empty() {
        lines.push(format!("  {}", tr("none", "нет")));
    }
    lines.extend(
        preview
            .fires
            .iter()
            .map(|at| format!("  {}", local_time(*at))),
    );
    lines
}

/// What `add` shows before it asks: the name, what it runs, when (the next fires), and what
/// it may do unasked.
pub(super) fn add_summary(
    name: &str,
    preview: &SchedulePreview,
    what: &ScheduleAction,
    envelope: &ScheduleEnvelope,
) -> Vec<String> {
    let mut lines = vec![
        fill(
            tr("Schedule {name}", "Расписание {name}"),
            &[("name", &name)],
        ),
        fill(
            tr("Runs {action}", "Запускает {action}"),
            &[("action", &action(what))],
        ),
    ];
    lines.extend(preview_lines(preview));
    lines.push(
        tr(
            "Unasked, its runs may use:",
            "Без вопросов его запуски могут использовать:",
        )
        .to_owned(),
    );
    lines.extend(envelope_lines(envelope, "  "));
    lines
}

/// `souz schedules list`.
pub(super) fn print_list(schedules: &[Schedule]) {
    if schedules.is_empty() {
        say!(
            "{}",
            tr(
                "No schedules. Add one with `souz schedules add NAME --cron \"30 8 * * 1-5\" --prompt TEXT`.",
                "Расписаний нет. Добавьте: `souz schedules add ИМЯ --cron \"30 8 * * 1-5\" --prompt ТЕКСТ`."
            )
        );
        return;
    }
    let short = short_ids(schedules.iter().map(|schedule| schedule.id.as_str()));
    let width = short.values().map(String::len).max().unwrap_or(SHORT_ID);
    say!(
        "{:<width$}  {:<24} {:<22} {:<18} {:<21} {}",
        "ID",
        tr("NAME", "ИМЯ"),
        tr("WHEN", "КОГДА"),
        tr("ZONE", "ЗОНА"),
        tr("NEXT (LOCAL TIME)", "СЛЕДУЮЩИЙ (МЕСТН.)"),
        tr("STATE", "СОСТОЯНИЕ"),
    );
    for schedule in schedules {
        say!(
            "{:<width$}  {:<24} {:<22} {:<18} {:<21} {}",
            short.get(schedule.id.as_str()).unwrap_or(&schedule.id),
            truncate(&schedule.name, 24),
            truncate(&schedule.spec, 22),
            truncate(&schedule.zone, 18),
            schedule
                .next_fire
                .map_or_else(|| "-".to_owned(), local_time),
            state(schedule),
        );
    }
}

/// `souz schedules show`.
pub(super) fn print_schedule(schedule: &Schedule, runs: &[ScheduleRun]) {
    let label = |en: &'static str, ru: &'static str| format!("{:<10}", tr(en, ru));
    say!("{}{}", label("Schedule", "Расписание"), schedule.name);
    say!("{}{}", label("Id", "Id"), schedule.id);
    say!(
        "{}{} ({})",
        label("When", "Когда"),
        schedule.spec,
        schedule.zone
    );
    say!("{}{}", label("Runs", "Запускает"), action(&schedule.action));
    say!("{}{}", label("Next", "Следующий"), next_fire(schedule));
    say!("{}{}", label("State", "Состояние"), state(schedule));
    say!("{}{}", label("Missed", "Пропуски"), missed(schedule.missed));
    say!(
        "{}{}",
        label("Overlap", "Наложение"),
        overlap(schedule.overlap)
    );
    say!("{}", tr("Unasked:", "Без вопросов:"));
    for line in envelope_lines(&schedule.envelope, "  ") {
        say!("{line}");
    }
    say!(
        "{}{}",
        label("Chat", "Чат"),
        schedule.chat_id.as_deref().unwrap_or("-")
    );
    say!(
        "{}{}",
        label("Created", "Создано"),
        local_time(schedule.created_at)
    );
    if runs.is_empty() {
        say!("{}", tr("It has not run yet.", "Ещё не запускалось."));
    } else {
        say!("{}", tr("Latest runs:", "Последние запуски:"));
        print_runs(runs);
    }
}

/// `souz schedules run`: the claimed run.
pub(super) fn print_started(schedule: &Schedule, short: &str, run: &ScheduleRun) {
    say!(
        "{}",
        fill(
            tr(
                "Run {run} of {name}: {state}{reason}.",
                "Запуск {run} расписания {name}: {state}{reason}."
            ),
            &[
                ("run", &run.id),
                ("name", &schedule.name),
                ("state", &run.state.as_str()),
                (
                    "reason",
                    &run.reason
                        .as_deref()
                        .map(|reason| format!(" ({reason})"))
                        .unwrap_or_default()
                ),
            ]
        )
    );
    say!(
        "{}",
        fill(
            tr(
                "Follow it with `souz schedules history {id}`.",
                "Следите за ним: `souz schedules history {id}`."
            ),
            &[("id", &short)]
        )
    );
}

/// `souz schedules history`.
pub(super) fn print_history(schedule: &Schedule, runs: &[ScheduleRun]) {
    if runs.is_empty() {
        say!(
            "{}",
            fill(
                tr("{name} has not run yet.", "{name} ещё не запускалось."),
                &[("name", &schedule.name)]
            )
        );
        return;
    }
    print_runs(runs);
}

fn print_runs(runs: &[ScheduleRun]) {
    say!(
        "{:<6} {:<8} {:<20} {:<8} {:<8} {:<36} {}",
        tr("RUN", "ЗАПУСК"),
        tr("STATE", "СОСТ."),
        tr("FIRE TIME", "ВРЕМЯ"),
        tr("STARTED", "НАЧАЛО"),
        tr("ENDED", "КОНЕЦ"),
        tr("CHAT", "ЧАТ"),
        tr("REASON", "ПРИЧИНА"),
    );
    for run in runs {
        say!(
            "{:<6} {:<8} {:<20} {:<8} {:<8} {:<36} {}",
            run.id,
            run.state.as_str(),
            local_time(run.fire_at),
            clock(run.started_at, run.fire_at),
            clock(run.ended_at, run.fire_at),
            run.chat_id.as_deref().unwrap_or("-"),
            truncate(&run.reason.as_deref().unwrap_or("").replace('\n', " "), 100),
        );
    }
}
