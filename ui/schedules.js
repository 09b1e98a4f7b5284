// @ts-check
// The Schedules page: the person's schedules (when each fires, said in words and as the next
// fire time in the browser's zone, paused or not, how the last run ended) with Run now,
// Pause/Resume, Edit, Delete and History; the form (schedule-form.js) for a new or changed one;
// and one schedule's history: each run's state as a coloured badge, its fire, start and end
// times, its reason, and a link to its chat. Routes: `#/schedules`, `#/schedules/new`,
// `#/schedules/<id>/edit`, `#/schedules/<id>/runs`. Everything the daemon says is shown as text.

import { api } from "./api.js";
import { h, time, visible } from "./dom.js";
import { strings } from "./i18n.js";
import { browserZone, fireTime, scheduleForm } from "./schedule-form.js";

/** @typedef {import("./types.js").Schedule} Schedule */
/** @typedef {import("./types.js").ScheduleList} ScheduleList */
/** @typedef {import("./types.js").ScheduleRun} ScheduleRun */
/** @typedef {import("./types.js").ScheduleRunList} ScheduleRunList */

const t = strings({
  en: {
    title: "Schedules",
    intro: "Runs that start by themselves: a prompt or a skill at set times. Inside what you allowed a run goes on unasked; anything else waits in the Inbox for your approval.",
    new: "New schedule",
    col_name: "Name",
    col_when: "When",
    col_last: "Last run",
    none: "No schedules yet.",
    next: "Next: {time}",
    paused: "paused",
    no_next: "will not fire again",
    never_ran: "not run yet",
    once_at: "Once, at {time}",
    every_day: "Every day at {time}",
    weekdays: "Weekdays at {time}",
    weekly: "Every {day} at {time}",
    cron: "Cron {spec}",
    zone: "zone {zone}",
    run_now: "Run now",
    pause: "Pause",
    resume: "Resume",
    edit: "Edit",
    delete: "Delete",
    history: "History",
    confirm_delete: "Delete “{name}” and its run history? Its chat stays.",
    started: "Started “{name}”: {state}.",
    deleted: "Deleted “{name}”.",
    saved: "Saved “{name}”.",
    paused_note: "Paused “{name}”.",
    resumed_note: "Resumed “{name}”.",
    history_title: "History of “{name}”",
    back: "All schedules",
    col_state: "State",
    col_fire: "Due",
    col_started: "Started",
    col_ended: "Ended",
    col_reason: "Reason",
    no_runs: "No runs yet.",
    open_chat: "Open chat",
    state_claimed: "waiting",
    state_running: "running",
    state_parked: "waiting for approval",
    state_ok: "ok",
    state_blocked: "blocked",
    state_failed: "failed",
    state_skipped: "skipped",
  },
  ru: {
    title: "Расписания",
    intro: "Запуски, которые начинаются сами: запрос или навык в заданное время. В пределах того, что вы разрешили, запуск идёт без вопросов; всё остальное ждёт вашего одобрения во «Входящих».",
    new: "Новое расписание",
    col_name: "Название",
    col_when: "Когда",
    col_last: "Последний запуск",
    none: "Расписаний пока нет.",
    next: "Следующий: {time}",
    paused: "на паузе",
    no_next: "больше не запустится",
    never_ran: "ещё не запускалось",
    once_at: "Один раз, {time}",
    every_day: "Каждый день в {time}",
    weekdays: "По будням в {time}",
    weekly: "Каждую неделю ({day}) в {time}",
    cron: "Cron {spec}",
    zone: "пояс {zone}",
    run_now: "Запустить сейчас",
    pause: "Пауза",
    resume: "Продолжить",
    edit: "Изменить",
    delete: "Удалить",
    history: "История",
    confirm_delete: "Удалить «{name}» и историю его запусков? Чат останется.",
    started: "«{name}» запущено: {state}.",
    deleted: "«{name}» удалено.",
    saved: "«{name}» сохранено.",
    paused_note: "«{name}» на паузе.",
    resumed_note: "«{name}» снова по расписанию.",
    history_title: "История «{name}»",
    back: "Все расписания",
    col_state: "Состояние",
    col_fire: "Срок",
    col_started: "Начало",
    col_ended: "Конец",
    col_reason: "Причина",
    no_runs: "Запусков ещё не было.",
    open_chat: "Открыть чат",
    state_claimed: "ждёт",
    state_running: "идёт",
    state_parked: "ждёт одобрения",
    state_ok: "готово",
    state_blocked: "заблокирован",
    state_failed: "ошибка",
    state_skipped: "пропущен",
  },
});

/** A run's state as a coloured badge. @param {ScheduleRun["state"]} state */
const badge = (state) => h(`span.tag.run.run-${state}`, { dataset: { state } }, t("state_" + state));

/** `spec` in words where it is a common shape (daily, weekdays, weekly at a time, or once),
 *  else the expression itself. @param {Schedule} schedule */
function describe(schedule) {
  const { spec, zone } = schedule;
  if (spec.startsWith("at ")) return t("once_at", { time: fireTime(spec.slice(3), zone) });
  const fields = spec.trim().split(/\s+/);
  if (fields.length === 5 && /^\d+$/.test(fields[0]) && /^\d+$/.test(fields[1]) && fields[2] === "*" && fields[3] === "*") {
    const clock = `${fields[1].padStart(2, "0")}:${fields[0].padStart(2, "0")}`;
    const there = zone === browserZone() ? clock : `${clock} (${t("zone", { zone })})`;
    if (fields[4] === "*") return t("every_day", { time: there });
    if (fields[4] === "1-5") return t("weekdays", { time: there });
    if (/^[0-7]$/.test(fields[4])) {
      // 2024-01-07 was a Sunday: day 0 (and 7) of cron.
      const day = new Date(Date.UTC(2024, 0, 7 + (Number(fields[4]) % 7))).toLocaleDateString(document.documentElement.lang || "en", { weekday: "long", timeZone: "UTC" });
      return t("weekly", { day, time: there });
    }
  }
  return t("cron", { spec }) + (zone === browserZone() ? "" : ` (${t("zone", { zone })})`);
}

/** @param {HTMLElement} main @param {string[]} [rest] */
export async function schedulesPage(main, rest = []) {
  const [first, second] = rest;
  if (first === "new") return formView(main, null);
  if (first && second === "edit") return formView(main, /** @type {Schedule} */ (await api("GET", `/v1/schedules/${encodeURIComponent(first)}`)));
  if (first && second === "runs") return historyView(main, first);
  return listView(main);
}

/** The form, then back to the list with a note. @param {HTMLElement} main @param {Schedule | null} existing */
async function formView(main, existing) {
  const box = h("div#schedule-form-box");
  main.append(h("h1", {}, t("title")), box);
  await scheduleForm(box, existing, (saved) => {
    if (saved) sessionStorage.setItem("souz.schedules.note", t("saved", { name: saved.name }));
    location.hash = "#/schedules";
  });
}

/** @param {HTMLElement} main */
async function listView(main) {
  const note = h("div#schedule-note");
  const remembered = sessionStorage.getItem("souz.schedules.note");
  if (remembered) {
    sessionStorage.removeItem("souz.schedules.note");
    note.append(h("p.ok", {}, remembered));
  }
  const body = h("tbody#schedules");
  main.append(h("h1", {}, t("title")), h("p.meta", {}, t("intro")),
    h("div.row", {}, h("a.button.primary#schedule-new", { href: "#/schedules/new" }, t("new"))),
    note,
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, t("col_name")), h("th", {}, t("col_when")), h("th", {}, t("col_last")), h("th"))), body));

  /** Runs `step` and shows what it says (or the daemon's error), then the list again.
   *  @param {() => Promise<string>} step */
  const act = async (step) => {
    try {
      note.replaceChildren(h("p.ok", {}, await step()));
    } catch (error) {
      note.replaceChildren(h("p.error", {}, visible(error instanceof Error ? error.message : String(error))));
    }
    await render();
  };

  /** @param {Schedule} schedule */
  const row = async (schedule) => {
    const path = `/v1/schedules/${encodeURIComponent(schedule.id)}`;
    const { items: [last] } = /** @type {ScheduleRunList} */ (await api("GET", `${path}/runs?limit=1`));
    const next = !schedule.enabled ? h("span.tag.paused", {}, t("paused"))
      : schedule.nextFire ? h("span.next", { dataset: { at: schedule.nextFire } }, t("next", { time: fireTime(schedule.nextFire, schedule.zone) }))
        : h("span.meta", {}, t("no_next"));
    const remove = () => {
      if (!confirm(t("confirm_delete", { name: schedule.name }))) return;
      act(async () => { await api("DELETE", path); return t("deleted", { name: schedule.name }); });
    };
    return h("tr.schedule", { dataset: { schedule: schedule.id, enabled: String(schedule.enabled) } },
      h("td", {}, h("strong", {}, schedule.name)),
      h("td", {}, h("div.when", {}, describe(schedule)), h("div.meta", {}, next)),
      h("td.last", {}, last ? [badge(last.state), " ", h("span.meta", {}, time(last.endedAt || last.startedAt || last.fireAt))] : h("span.meta", {}, t("never_ran"))),
      h("td", {}, h("div.row", {},
        h("button.run", { onclick: () => act(async () => {
          const run = /** @type {ScheduleRun} */ (await api("POST", `${path}/run`));
          return t("started", { name: schedule.name, state: t("state_" + run.state) });
        }) }, t("run_now")),
        h("button.toggle", { onclick: () => act(async () => {
          await api("POST", `${path}/${schedule.enabled ? "pause" : "resume"}`);
          return t(schedule.enabled ? "paused_note" : "resumed_note", { name: schedule.name });
        }) }, t(schedule.enabled ? "pause" : "resume")),
        h("a.button.edit", { href: `#/schedules/${encodeURIComponent(schedule.id)}/edit` }, t("edit")),
        h("a.button.history", { href: `#/schedules/${encodeURIComponent(schedule.id)}/runs` }, t("history")),
        h("button.danger.delete", { onclick: remove }, t("delete")))));
  };

  const render = async () => {
    const { items } = /** @type {ScheduleList} */ (await api("GET", "/v1/schedules"));
    body.replaceChildren(...await Promise.all(items.map(row)));
    if (!items.length) body.append(h("tr", {}, h("td.empty", { colSpan: 4 }, t("none"))));
  };
  await render();
}

/** @param {HTMLElement} main @param {string} id */
async function historyView(main, id) {
  const path = `/v1/schedules/${encodeURIComponent(id)}`;
  const [schedule, runs] = await Promise.all([
    /** @type {Promise<Schedule>} */ (api("GET", path)),
    /** @type {Promise<ScheduleRunList>} */ (api("GET", `${path}/runs?limit=100`)),
  ]);
  const rows = runs.items.map((run) => h("tr.run", { dataset: { run: String(run.id), state: run.state } },
    h("td", {}, badge(run.state)),
    h("td", {}, time(run.fireAt)),
    h("td", {}, time(run.startedAt)),
    h("td", {}, time(run.endedAt)),
    h("td.reason", {}, run.reason || ""),
    h("td", {}, run.chatId ? h("a.chat-link", { href: `#/chat/${encodeURIComponent(run.chatId)}` }, t("open_chat")) : null)));
  main.append(h("h1", {}, t("history_title", { name: schedule.name })),
    h("p", {}, h("a#schedule-back", { href: "#/schedules" }, t("back"))),
    h("table", {}, h("thead", {}, h("tr", {}, ["col_state", "col_fire", "col_started", "col_ended", "col_reason"].map((key) => h("th", {}, t(key))), h("th"))),
      h("tbody#schedule-runs", {}, rows.length ? rows : h("tr", {}, h("td.empty", { colSpan: 6 }, t("no_runs"))))));
}
