// @ts-check
// The schedule form the Schedules page opens: create or edit one schedule. It owns turning the
// person's choice of "when" (a cron expression, a date and time, or "in N minutes/hours") into
// the daemon's spec, the live preview of the next fires (the daemon's own error shown inline,
// and Save disabled, while the spec or zone is refused), the policies with what they mean, and
// the envelope: what the runs may do unasked, read-only unless the person ticks something, and
// said back in plain words in a confirmation step before anything is stored.
// Invariant: Save is enabled only while the preview of exactly the current "when" and zone
// succeeded; nothing is sent to the daemon's store before the confirmation.

import { api } from "./api.js";
import { h, visible } from "./dom.js";
import { language, strings } from "./i18n.js";

/** @typedef {import("./types.js").Schedule} Schedule */
/** @typedef {import("./types.js").NewSchedule} NewSchedule */
/** @typedef {import("./types.js").SchedulePatch} SchedulePatch */
/** @typedef {import("./types.js").SchedulePreview} SchedulePreview */
/** @typedef {import("./types.js").ScheduleAction} ScheduleAction */
/** @typedef {import("./types.js").ScheduleEnvelope} ScheduleEnvelope */
/** @typedef {import("./types.js").MissedPolicy} MissedPolicy */
/** @typedef {import("./types.js").OverlapPolicy} OverlapPolicy */
/** @typedef {import("./types.js").SkillList} SkillList */
/** @typedef {import("./types.js").Bootstrap} Bootstrap */

const t = strings({
  en: {
    new_title: "New schedule",
    edit_title: "Edit “{name}”",
    name: "Name",
    name_placeholder: "Inbox summary",
    when: "When",
    kind_cron: "Repeats (cron)",
    kind_at: "Once, at a date and time",
    kind_in: "Once, in…",
    cron_placeholder: "e.g. 30 8 * * 1-5",
    cron_help: "Minute, hour, day of month, month, day of week: “30 8 * * 1-5” is 08:30 on weekdays; a sixth field in front counts seconds.",
    unit_minutes: "minutes",
    unit_hours: "hours",
    zone: "Time zone",
    next_fires: "Next fires",
    preview_empty: "It would not fire again.",
    in_zone: "{time} in {zone}",
    what: "What to run",
    what_prompt: "A prompt to the agent",
    what_skill: "A skill",
    prompt_placeholder: "Summarise the new files in ~/Inbox",
    skill_prompt_placeholder: "What the skill should do (optional)",
    no_skills: "No skill is installed and enabled.",
    missed: "Missed runs",
    missed_help: "What happens to runs missed while the computer slept or Souz was stopped.",
    missed_skip: "Skip them",
    missed_run_once: "Run once (the latest)",
    missed_catch_up: "Catch up, at most:",
    overlap: "If the previous run still goes",
    overlap_help: "Runs of one schedule never overlap.",
    overlap_skip: "Skip the new one",
    overlap_queue_one: "Queue one to start after it",
    envelope: "What it may do without asking",
    envelope_help: "Nothing ticked and no folders or hosts: read-only tools only. Anything else waits for your approval, as in a chat.",
    tools: "Tools",
    folders: "Folders it may write in (one per line)",
    hosts: "Hosts it may reach (one per line)",
    save: "Save",
    cancel: "Cancel",
    confirm_title: "Before saving",
    confirm_may: "This schedule may, without asking you:",
    confirm_read_only: "use read-only tools only",
    confirm_tools: "use {list}",
    confirm_folders: "write in {list}",
    confirm_hosts: "reach {list}",
    confirm_rest: "Anything else waits for your approval.",
    confirm_save: "Confirm and save",
    back: "Back",
    need_name: "Give it a name.",
    need_prompt: "Write the prompt.",
    need_skill: "Choose a skill.",
  },
  ru: {
    new_title: "Новое расписание",
    edit_title: "Изменить «{name}»",
    name: "Название",
    name_placeholder: "Сводка входящих",
    when: "Когда",
    kind_cron: "Повторять (cron)",
    kind_at: "Один раз, в дату и время",
    kind_in: "Один раз, через…",
    cron_placeholder: "например, 30 8 * * 1-5",
    cron_help: "Минута, час, день месяца, месяц, день недели: «30 8 * * 1-5» — 08:30 по будням; шестое поле в начале — секунды.",
    unit_minutes: "минут",
    unit_hours: "часов",
    zone: "Часовой пояс",
    next_fires: "Ближайшие запуски",
    preview_empty: "Больше не запустится.",
    in_zone: "{time} по поясу {zone}",
    what: "Что запускать",
    what_prompt: "Запрос агенту",
    what_skill: "Навык",
    prompt_placeholder: "Кратко опиши новые файлы в ~/Inbox",
    skill_prompt_placeholder: "Что сделать навыку (необязательно)",
    no_skills: "Нет установленных и включённых навыков.",
    missed: "Пропущенные запуски",
    missed_help: "Что делать с запусками, пропущенными, пока компьютер спал или Souz был остановлен.",
    missed_skip: "Пропустить",
    missed_run_once: "Выполнить один раз (последний)",
    missed_catch_up: "Наверстать, не больше:",
    overlap: "Если предыдущий запуск ещё идёт",
    overlap_help: "Запуски одного расписания никогда не идут одновременно.",
    overlap_skip: "Пропустить новый",
    overlap_queue_one: "Поставить один в очередь за ним",
    envelope: "Что можно без вашего разрешения",
    envelope_help: "Ничего не отмечено, папок и хостов нет: только инструменты для чтения. Всё остальное ждёт вашего одобрения, как в чате.",
    tools: "Инструменты",
    folders: "Папки, где можно писать (по одной в строке)",
    hosts: "Хосты, к которым можно обращаться (по одному в строке)",
    save: "Сохранить",
    cancel: "Отмена",
    confirm_title: "Перед сохранением",
    confirm_may: "Это расписание сможет без вашего разрешения:",
    confirm_read_only: "пользоваться только инструментами для чтения",
    confirm_tools: "пользоваться {list}",
    confirm_folders: "писать в {list}",
    confirm_hosts: "обращаться к {list}",
    confirm_rest: "Всё остальное ждёт вашего одобрения.",
    confirm_save: "Подтвердить и сохранить",
    back: "Назад",
    need_name: "Дайте ему название.",
    need_prompt: "Напишите запрос.",
    need_skill: "Выберите навык.",
  },
});

/** How long the preview waits after the last keystroke. */
const PREVIEW_DELAY_MS = 300;

/** The browser's IANA time zone. */
export function browserZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** `at` as the wall time `YYYY-MM-DDTHH:MM` in `zone` (what a datetime-local input shows).
 *  @param {Date} at @param {string} zone */
function wallTime(at, zone) {
  let parts;
  try {
    parts = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).formatToParts(at);
  } catch {
    return "";
  }
  const part = (/** @type {string} */ type) => parts.find((item) => item.type === type)?.value || "";
  return `${part("year")}-${part("month")}-${part("day")}T${part("hour")}:${part("minute")}`;
}

/** A fire time in the browser's zone, and in `zone` too when that differs.
 *  @param {string} at @param {string} zone */
export function fireTime(at, zone) {
  const date = new Date(at);
  const local = date.toLocaleString(language(), { dateStyle: "medium", timeStyle: "short" });
  if (zone === browserZone()) return local;
  let there;
  try {
    there = date.toLocaleString(language(), { timeZone: zone, dateStyle: "medium", timeStyle: "short" });
  } catch {
    return local;
  }
  return `${local} (${t("in_zone", { time: there, zone })})`;
}

/** Lines of a textarea, trimmed, without blanks. @param {HTMLTextAreaElement} area */
const lines = (area) => area.value.split("\n").map((line) => line.trim()).filter(Boolean);

/** A labelled row of the form. @param {string} label @param {...(Node | string | null)} children */
const field = (label, ...children) => h("div.field", {}, h("label", {}, label), h("div", {}, ...children));

/**
 * Renders the form into `box`. `existing` is the schedule being edited (absent: a new one).
 * `done(saved)` is called after a save (with the stored schedule) or a cancel (with null).
 * @param {HTMLElement} box @param {Schedule | null} existing
 * @param {(saved: Schedule | null) => void} done
 */
export async function scheduleForm(box, existing, done) {
  const [boot, skills] = await Promise.all([
    /** @type {Promise<Bootstrap>} */ (api("GET", "/v1/bootstrap")),
    /** @type {Promise<SkillList>} */ (api("GET", "/v1/skills")),
  ]);
  const usable = skills.items.filter((skill) => skill.enabled && !skill.error);
  const zone = existing?.zone || browserZone();
  const at = existing?.spec.startsWith("at ") ? existing.spec.slice(3) : null;

  const name = /** @type {HTMLInputElement} */ (h("input#schedule-name", { type: "text", placeholder: t("name_placeholder"), value: existing?.name || "" }));
  const kind = /** @type {HTMLSelectElement} */ (h("select#schedule-kind", {},
    h("option", { value: "cron" }, t("kind_cron")), h("option", { value: "at" }, t("kind_at")), h("option", { value: "in" }, t("kind_in"))));
  kind.value = at ? "at" : "cron";
  const cron = /** @type {HTMLInputElement} */ (h("input#schedule-cron", { type: "text", placeholder: t("cron_placeholder"), value: existing && !at ? existing.spec : "" }));
  const atInput = /** @type {HTMLInputElement} */ (h("input#schedule-at", { type: "datetime-local", value: at ? wallTime(new Date(at), zone) : "" }));
  const inCount = /** @type {HTMLInputElement} */ (h("input#schedule-in-count", { type: "number", min: "1", value: "30" }));
  const inUnit = /** @type {HTMLSelectElement} */ (h("select#schedule-in-unit", {},
    h("option", { value: "minutes" }, t("unit_minutes")), h("option", { value: "hours" }, t("unit_hours"))));
  const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  const zoneInput = /** @type {HTMLInputElement} */ (h("input#schedule-zone", { type: "text", value: zone, list: "schedule-zones" }));
  const zoneList = h("datalist#schedule-zones", {}, zones.map((name) => h("option", { value: name })));
  const cronRow = h("div.row", {}, cron, h("span.meta", {}, t("cron_help")));
  const atRow = h("div.row", {}, atInput);
  const inRow = h("div.row", {}, inCount, inUnit);
  const previewList = h("ol#schedule-preview");
  const specError = h("p.error#schedule-spec-error", { hidden: true });

  const action = existing?.action;
  const what = /** @type {HTMLSelectElement} */ (h("select#schedule-what", {},
    h("option", { value: "prompt" }, t("what_prompt")), h("option", { value: "skill" }, t("what_skill"))));
  what.value = action?.type === "skill" ? "skill" : "prompt";
  const prompt = /** @type {HTMLTextAreaElement} */ (h("textarea#schedule-prompt", { rows: 3, placeholder: t("prompt_placeholder") }));
  prompt.value = action?.prompt || "";
  const skill = /** @type {HTMLSelectElement} */ (h("select#schedule-skill", {}, usable.map((item) => h("option", { value: item.id }, item.id))));
  if (action?.type === "skill") {
    if (!usable.some((item) => item.id === action.skill)) skill.append(h("option", { value: action.skill }, action.skill));
    skill.value = action.skill;
  }
  const skillRow = h("div.row", {}, skill, usable.length ? null : h("span.meta", {}, t("no_skills")));

  const missed = /** @type {HTMLSelectElement} */ (h("select#schedule-missed", {},
    ["skip", "run_once", "catch_up"].map((value) => h("option", { value }, t("missed_" + value)))));
  missed.value = existing?.missed.type || "run_once";
  const catchUp = /** @type {HTMLInputElement} */ (h("input#schedule-catch-up", { type: "number", min: "1", max: "100",
    value: String(existing?.missed.type === "catch_up" ? existing.missed.limit : 3) }));
  const overlap = /** @type {HTMLSelectElement} */ (h("select#schedule-overlap", {},
    ["skip", "queue_one"].map((value) => h("option", { value }, t("overlap_" + value)))));
  overlap.value = existing?.overlap || "skip";

  const envelope = { tools: existing?.envelope.tools || [], folders: existing?.envelope.folders || [], hosts: existing?.envelope.hosts || [] };
  const toolChecks = boot.capabilities.tools.map((tool) => h("label.check", {},
    h("input", { type: "checkbox", value: tool.name, checked: envelope.tools.includes(tool.name) }), " ", h("code", {}, tool.name)));
  const folders = /** @type {HTMLTextAreaElement} */ (h("textarea#schedule-folders", { rows: 2 }));
  folders.value = envelope.folders.join("\n");
  const hosts = /** @type {HTMLTextAreaElement} */ (h("textarea#schedule-hosts", { rows: 2 }));
  hosts.value = envelope.hosts.join("\n");

  const problem = h("p.error#schedule-problem", { hidden: true });
  const save = /** @type {HTMLButtonElement} */ (h("button.primary#schedule-save", { type: "button", disabled: true }, t("save")));
  const confirmBox = h("div.card.confirm#schedule-confirm", { hidden: true });
  const form = h("div.card.schedule-form#schedule-form", {},
    h("h2", {}, existing ? t("edit_title", { name: existing.name }) : t("new_title")),
    field(t("name"), name),
    field(t("when"), h("div.row", {}, kind), cronRow, atRow, inRow),
    field(t("zone"), zoneInput, zoneList),
    field(t("next_fires"), previewList, specError),
    field(t("what"), h("div.row", {}, what), prompt, skillRow),
    field(t("missed"), h("div.row", {}, missed, catchUp), h("div.doc", {}, t("missed_help"))),
    field(t("overlap"), overlap, h("div.doc", {}, t("overlap_help"))),
    field(t("envelope"), h("div.doc", {}, t("envelope_help")),
      h("div.meta", {}, t("tools")), h("div.tool-checks#schedule-tools", {}, toolChecks),
      h("div.meta", {}, t("folders")), folders, h("div.meta", {}, t("hosts")), hosts),
    problem,
    h("div.row", {}, save, h("button#schedule-cancel", { type: "button", onclick: () => done(null) }, t("cancel"))));
  box.replaceChildren(form, confirmBox);

  /** The spec of the current choice. */
  const spec = () => {
    if (kind.value === "at") return atInput.value ? `at ${atInput.value.replace("T", " ")}` : "";
    if (kind.value === "in") return inCount.value ? `in ${inCount.value} ${inUnit.value}` : "";
    return cron.value.trim();
  };
  /** Whether the person changed when or where it fires (an edit keeps them otherwise). */
  let whenChanged = !existing;
  /** The spec and zone whose preview succeeded, as `spec\nzone`; null while none did. */
  let previewed = null;
  let sequence = 0;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const key = () => `${spec()}\n${zoneInput.value.trim()}`;
  const refreshSave = () => { save.disabled = previewed === null || previewed !== key(); };

  const runPreview = async () => {
    const mine = ++sequence;
    const text = spec();
    const where = zoneInput.value.trim();
    if (!text) {
      previewed = null;
      previewList.replaceChildren();
      specError.hidden = true;
      refreshSave();
      return;
    }
    const query = new URLSearchParams({ spec: text });
    if (where) query.set("zone", where);
    try {
      const answer = /** @type {SchedulePreview} */ (await api("GET", `/v1/schedules/preview?${query}`));
      if (mine !== sequence) return;
      previewed = `${text}\n${where}`;
      specError.hidden = true;
      previewList.replaceChildren(...(answer.fires.length
        ? answer.fires.map((fire) => h("li", { dataset: { at: fire } }, fireTime(fire, answer.zone)))
        : [h("li.meta", {}, t("preview_empty"))]));
    } catch (error) {
      if (mine !== sequence) return;
      previewed = null;
      previewList.replaceChildren();
      specError.hidden = false;
      specError.textContent = visible(error instanceof Error ? error.message : String(error));
    }
    refreshSave();
  };
  const whenEdited = () => {
    whenChanged = true;
    save.disabled = true;
    clearTimeout(timer);
    timer = setTimeout(runPreview, PREVIEW_DELAY_MS);
  };
  const showKind = () => {
    cronRow.hidden = kind.value !== "cron";
    atRow.hidden = kind.value !== "at";
    inRow.hidden = kind.value !== "in";
  };
  const showWhat = () => {
    prompt.placeholder = what.value === "skill" ? t("skill_prompt_placeholder") : t("prompt_placeholder");
    skillRow.hidden = what.value !== "skill";
  };
  const showMissed = () => { catchUp.hidden = missed.value !== "catch_up"; };
  for (const input of [cron, atInput, inCount, zoneInput]) input.addEventListener("input", whenEdited);
  for (const select of [kind, inUnit]) select.addEventListener("change", () => { showKind(); whenEdited(); });
  what.addEventListener("change", showWhat);
  missed.addEventListener("change", showMissed);
  showKind();
  showWhat();
  showMissed();
  await runPreview();

  /** The action, policies and envelope as the form says them. */
  const collect = () => {
    if (!name.value.trim()) throw new Error(t("need_name"));
    /** @type {ScheduleAction} */
    let chosen;
    if (what.value === "skill") {
      if (!skill.value) throw new Error(t("need_skill"));
      chosen = { type: "skill", skill: skill.value, prompt: prompt.value.trim() || null };
    } else {
      if (!prompt.value.trim()) throw new Error(t("need_prompt"));
      chosen = { type: "prompt", prompt: prompt.value.trim(), settings: action?.type === "prompt" ? action.settings : {} };
    }
    /** @type {MissedPolicy} */
    const missedPolicy = missed.value === "catch_up" ? { type: "catch_up", limit: Math.max(1, Math.min(100, Number(catchUp.value) || 1)) }
      : missed.value === "skip" ? { type: "skip" } : { type: "run_once" };
    const allowed = {
      tools: toolChecks.map((label) => /** @type {HTMLInputElement} */ (label.querySelector("input"))).filter((box) => box.checked).map((box) => box.value),
      folders: lines(folders),
      hosts: lines(hosts),
    };
    return { action: chosen, missed: missedPolicy, overlap: /** @type {OverlapPolicy} */ (overlap.value), envelope: allowed };
  };

  /** Stores the schedule: a new one is created, an edit sends what it changes. */
  const store = async (/** @type {ReturnType<typeof collect>} */ parts) => {
    const when = whenChanged ? { spec: spec(), zone: zoneInput.value.trim() || null } : {};
    if (existing) {
      /** @type {SchedulePatch} */
      const patch = { name: name.value.trim(), ...parts, ...when };
      return /** @type {Schedule} */ (await api("PATCH", `/v1/schedules/${encodeURIComponent(existing.id)}`, patch));
    }
    /** @type {NewSchedule} */
    const created = { name: name.value.trim(), spec: spec(), zone: zoneInput.value.trim() || null, ...parts };
    return /** @type {Schedule} */ (await api("POST", "/v1/schedules", created));
  };

  save.addEventListener("click", () => {
    let parts;
    try {
      parts = collect();
    } catch (error) {
      problem.hidden = false;
      problem.textContent = error instanceof Error ? error.message : String(error);
      return;
    }
    problem.hidden = true;
    const grants = [];
    const { tools, folders: writable, hosts: reachable } = parts.envelope;
    if (tools.length) grants.push(t("confirm_tools", { list: tools.join(", ") }));
    if (writable.length) grants.push(t("confirm_folders", { list: writable.join(", ") }));
    if (reachable.length) grants.push(t("confirm_hosts", { list: reachable.join(", ") }));
    if (!grants.length) grants.push(t("confirm_read_only"));
    const confirmSave = /** @type {HTMLButtonElement} */ (h("button.primary#schedule-confirm-save", { type: "button" }, t("confirm_save")));
    const said = h("p.error#schedule-save-error", { hidden: true });
    confirmSave.addEventListener("click", async () => {
      confirmSave.disabled = true;
      try {
        done(await store(parts));
      } catch (error) {
        said.hidden = false;
        said.textContent = visible(error instanceof Error ? error.message : String(error));
        confirmSave.disabled = false;
      }
    });
    confirmBox.replaceChildren(h("h2", {}, t("confirm_title")), h("p", {}, t("confirm_may")),
      h("ul#schedule-grants", {}, grants.map((grant) => h("li", {}, grant))),
      h("p", {}, h("strong", {}, t("confirm_rest"))), said,
      h("div.row", {}, confirmSave, h("button#schedule-back", { type: "button", onclick: () => { confirmBox.hidden = true; form.hidden = false; } }, t("back"))));
    form.hidden = true;
    confirmBox.hidden = false;
  });
}
