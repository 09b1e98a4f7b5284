//! Scheduled runs as the shell shows them: the schedules it knows (name, next fire, enabled,
//! chat), folded from `GET /v1/schedules` at every (re)connection and again on every
//! `schedules.changed`; the tray's "Next: …" line; the parked runs (pending approvals whose
//! `parked` names a schedule's run) and their tray lines; and the words of the notifications
//! for a parked approval and for a run's end.
//!
//! Invariants: the known schedules are replaced whole by each fetch, never patched by events,
//! so a missed `schedules.changed` heals at the next one or at the next reconnect; the "Next"
//! line only considers enabled schedules with a next fire; times are shown in the zone the
//! caller passes (the tray passes the local one), so the words are tested without the machine's
//! zone.

use chrono::{DateTime, Datelike, TimeZone, Timelike, Utc, Weekday};
use souz_protocol::approvals::ParkedRun;
use souz_protocol::schedules::{RunState, Schedule};
use souz_protocol::{Approval, RuntimeEvent};

use super::{Notice, ShellState, shorten, tool_label};
use crate::texts::{fill, language, tr};

/// A schedule the shell knows, as `GET /v1/schedules` listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownSchedule {
    /// Schedule id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it fires next (`None`: paused, or a one-shot that fired).
    pub next_fire: Option<DateTime<Utc>>,
    /// Whether it fires.
    pub enabled: bool,
    /// Its chat, once it ran.
    pub chat_id: Option<String>,
}

impl From<Schedule> for KnownSchedule {
    fn from(schedule: Schedule) -> Self {
        Self {
            id: schedule.id,
            name: schedule.name,
            next_fire: schedule.next_fire,
            enabled: schedule.enabled,
            chat_id: schedule.chat_id,
        }
    }
}

/// Where a run's notification leads: the run's chat when the shell knows it, else the
/// schedule's history.
pub fn run_route(schedule_id: &str, chat_id: Option<&str>) -> String {
    match chat_id {
        Some(chat_id) => format!("/chat/{}", encode(chat_id)),
        None => format!("/schedules/{}/runs", encode(schedule_id)),
    }
}

/// An id as one segment of a UI route (the UI decodes each segment).
pub(super) fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

impl ShellState {
    /// Replaces the known schedules with what `GET /v1/schedules` listed.
    pub fn set_schedules(&mut self, schedules: Vec<Schedule>) {
        self.schedules = schedules
            .into_iter()
            .map(|schedule| (schedule.id.clone(), KnownSchedule::from(schedule)))
            .collect();
    }

    /// Whether a runtime event calls for fetching the schedules again.
    pub fn refetches_schedules(event: &RuntimeEvent) -> bool {
        matches!(event, RuntimeEvent::SchedulesChanged {})
    }

    /// The enabled schedule that fires first, with its next fire time.
    pub fn next_run(&self) -> Option<(&KnownSchedule, DateTime<Utc>)> {
        self.schedules
            .values()
            .filter(|schedule| schedule.enabled)
            .filter_map(|schedule| schedule.next_fire.map(|at| (schedule, at)))
            .min_by_key(|(schedule, at)| (*at, schedule.name.clone()))
    }

    /// The tray's "Next: <name> at Mon 08:30" line, in `zone`; `None` when no enabled schedule
    /// has a next fire.
    pub fn next_run_line<Tz: TimeZone>(&self, zone: &Tz) -> Option<String>
    where
        Tz::Offset: Copy,
    {
        let (schedule, at) = self.next_run()?;
        Some(fill(
            tr("Next: {name} at {time}", "Далее: {name} в {time}"),
            &[
                ("name", &shorten(&schedule.name, 40)),
                ("time", &short_time(at, zone)),
            ],
        ))
    }

    /// The pending approvals a scheduled run is parked on, oldest first.
    pub fn parked_runs(&self) -> Vec<(&Approval, &ParkedRun)> {
        let mut parked: Vec<_> = self
            .pending
            .values()
            .filter_map(|approval| approval.parked.as_ref().map(|run| (approval, run)))
            .collect();
        parked.sort_by_key(|(approval, _)| approval.created_at);
        parked
    }

    /// The notice of a run that ended (`schedule.run.ended`): the outcome, and where a click
    /// leads; nothing for other events.
    pub(super) fn run_ended(&self, event: &RuntimeEvent) -> Vec<Notice> {
        let RuntimeEvent::ScheduleRunEnded {
            schedule_id,
            schedule_name,
            run_id,
            state,
            reason,
            chat_id,
        } = event
        else {
            return Vec::new();
        };
        // The run's own chat; for an event from before runs named it, the schedule's.
        let chat_id = chat_id.as_deref().or_else(|| {
            self.schedules
                .get(schedule_id)
                .and_then(|schedule| schedule.chat_id.as_deref())
        });
        vec![Notice::RunEnded {
            schedule_id: schedule_id.clone(),
            run_id: *run_id,
            text: run_ended_text(schedule_name, *state, reason.as_deref()),
            route: run_route(schedule_id, chat_id),
        }]
    }
}

/// An approval's line in the tray: who asks, the tool and the key argument; for a scheduled
/// run parked on it, which run waits and since when ([`parked_line`]).
pub fn approval_line<Tz: TimeZone>(approval: &Approval, zone: &Tz) -> String
where
    Tz::Offset: Copy,
{
    match &approval.parked {
        Some(run) => parked_line(approval, run, zone),
        None => {
            let what =
                super::key_argument(approval).unwrap_or_else(|| shorten(&approval.summary, 60));
            format!(
                "{} · {} · {}",
                approval.requester_label,
                tool_label(approval),
                shorten(&what, 60)
            )
        }
    }
}

/// The tray line of a parked run: "<name> waits for your approval since Mon 08:30".
pub fn parked_line<Tz: TimeZone>(approval: &Approval, run: &ParkedRun, zone: &Tz) -> String
where
    Tz::Offset: Copy,
{
    fill(
        tr(
            "{name} waits for your approval since {time}",
            "{name} ждёт вашего одобрения с {time}",
        ),
        &[
            ("name", &shorten(&run.schedule_name, 40)),
            ("time", &short_time(approval.created_at, zone)),
        ],
    )
}

/// The notification's title and body for the approval a scheduled run is parked on.
pub fn parked_text(approval: &Approval, run: &ParkedRun) -> (String, String) {
    let title = fill(
        tr(
            "Scheduled run '{name}' wants to use {tool}",
            "Запуск по расписанию «{name}» хочет использовать {tool}",
        ),
        &[
            ("name", &shorten(&run.schedule_name, 60)),
            ("tool", &tool_label(approval)),
        ],
    );
    let (_, body) = super::approval_text(approval);
    let waits = tr(
        "The run waits for your approval.",
        "Запуск ждёт вашего одобрения.",
    );
    (title, format!("{body}\n{waits}"))
}

/// The notification's title and body for a run that ended.
pub fn run_ended_text(name: &str, state: RunState, reason: Option<&str>) -> (String, String) {
    let name = shorten(name, 60);
    let reason = reason.map(|reason| shorten(reason, 200));
    let template = match (state, reason.is_some()) {
        (RunState::Ok, _) => tr("'{name}' finished", "«{name}» завершён"),
        (RunState::Blocked, true) => tr(
            "'{name}' was blocked: {reason}",
            "«{name}» заблокирован: {reason}",
        ),
        (RunState::Blocked, false) => tr("'{name}' was blocked", "«{name}» заблокирован"),
        (RunState::Skipped, true) => tr(
            "'{name}' was skipped: {reason}",
            "«{name}» пропущен: {reason}",
        ),
        (RunState::Skipped, false) => tr("'{name}' was skipped", "«{name}» пропущен"),
        (_, true) => tr("'{name}' failed: {reason}", "«{name}» не удался: {reason}"),
        (_, false) => tr("'{name}' failed", "«{name}» не удался"),
    };
    let body = fill(
        template,
        &[("name", &name), ("reason", reason.as_deref().unwrap_or(""))],
    );
    (tr("Scheduled run", "Запуск по расписанию").to_owned(), body)
}

/// A time as the tray shows it: the weekday and the time of day in `zone` ("Mon 08:30").
pub fn short_time<Tz: TimeZone>(at: DateTime<Utc>, zone: &Tz) -> String
where
    Tz::Offset: Copy,
{
    let local = at.with_timezone(zone);
    format!(
        "{} {:02}:{:02}",
        weekday(local.weekday()),
        local.hour(),
        local.minute()
    )
}

/// A weekday's short name in the shell's language.
fn weekday(day: Weekday) -> &'static str {
    const EN: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const RU: [&str; 7] = ["Пн", "Вт", "Ср", "Чт", "Пт", "Сб", "Вс"];
    let index = day.num_days_from_monday() as usize;
    match language() {
        souz_protocol::language::Language::En => EN[index],
        souz_protocol::language::Language::Ru => RU[index],
    }
}
