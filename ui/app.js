// @ts-check
// The Souz web UI: a hash router over its sections (Chat, Inbox, Activity, Schedules,
// Connections, Skills & Memory, Settings; a section with several pages shows them as tabs), the
// runtime event stream that keeps the Inbox count and the gate's state current, and the login
// for a page opened without a token. Older addresses (`#/queue/<id>`, `#/live`, `#/grants`, ...,
// which the app's tray and notifications open) are redirected to their new place.

import { api, follow, forgetToken, setToken, takeTokenFromFragment, tauri, token } from "./api.js";
import { chatPage } from "./chat.js";
import { historyPage } from "./history.js";
import { h, visible } from "./dom.js";
import { announceRuntimeEvent } from "./events.js";
import { pages } from "./pages.js";
import { channelsPage } from "./telegram.js";
import { pendingQuestions } from "./questions.js";
import { serversPage } from "./servers.js";
import { memoryPage } from "./memory.js";
import { modelsPage } from "./models.js";
import { settingsPage } from "./settings.js";
import { setupPage } from "./setup.js";
import { connectPage } from "./connect.js";
import { inRecovery, recoveryPage } from "./recovery.js";
import { skillsPage } from "./skills.js";
import { schedulesPage } from "./schedules.js";
import { followDaemonLanguage, language, setLanguage, strings } from "./i18n.js";

// The page chrome: nav labels by the link's data-page (a page merged later adds its own pair
// here), and index.html's static text marked with data-i18n, data-i18n-html (our own markup
// only), data-i18n-title and data-i18n-placeholder.
const t = strings({
  en: {
    nav_chat: "Chat",
    nav_inbox: "Inbox",
    nav_activity: "Activity",
    nav_schedules: "Schedules",
    nav_connections: "Connections",
    nav_skills: "Skills & Memory",
    nav_settings: "Settings",
    tab_live: "Working now",
    tab_history: "File changes",
    tab_audit: "Tool log",
    tab_claude: "Claude",
    tab_servers: "MCP servers",
    tab_clients: "Client tokens",
    tab_channels: "Telegram",
    tab_skills: "Skills",
    tab_memory: "Memory",
    gate_on: "Approvals on",
    gate_on_title: "Every tool call passes the approval gate: what is not allowed by a rule or grant waits for you in the Inbox.",
    gate_paused: "Paused",
    gate_paused_title: "Souz is paused: approval requests are denied and agents are stopped.",
    pause: "Pause",
    resume: "Resume",
    language: "Language",
    connection: "Connection to the Souz daemon",
    paused_banner: "Souz is paused: approval requests are denied and agents are stopped until you resume.",
    login_title: "Connect to Souz",
    login_help: "Open this page with <code>souz ui</code>, or paste the token that <code>souz token</code> prints.",
    login_token: "token",
    login_connect: "Connect",
    token_refused: "The token was not accepted.",
  },
  ru: {
    nav_chat: "Чат",
    nav_inbox: "Входящие",
    nav_activity: "Активность",
    nav_schedules: "Расписания",
    nav_connections: "Подключения",
    nav_skills: "Навыки и память",
    nav_settings: "Настройки",
    tab_live: "Работает сейчас",
    tab_history: "Изменения файлов",
    tab_audit: "Журнал инструментов",
    tab_claude: "Claude",
    tab_servers: "MCP-серверы",
    tab_clients: "Токены клиентов",
    tab_channels: "Telegram",
    tab_skills: "Навыки",
    tab_memory: "Память",
    gate_on: "Одобрения включены",
    gate_on_title: "Каждый вызов инструмента проходит через одобрение: то, что не разрешено правилом или разрешением, ждёт вас во «Входящих».",
    gate_paused: "Пауза",
    gate_paused_title: "Souz на паузе: запросы на одобрение отклоняются, агенты остановлены.",
    pause: "Пауза",
    resume: "Продолжить",
    language: "Язык",
    connection: "Соединение с демоном Souz",
    paused_banner: "Souz на паузе: запросы на одобрение отклоняются, агенты остановлены, пока вы не продолжите.",
    login_title: "Подключение к Souz",
    login_help: "Откройте эту страницу командой <code>souz ui</code> или вставьте токен, который печатает <code>souz token</code>.",
    login_token: "токен",
    login_connect: "Подключиться",
    token_refused: "Токен не принят.",
  },
});

/** Puts the chrome (or `root`, e.g. the cloned login form) in the current language.
 *  @param {ParentNode} [root] */
function translateChrome(root = document) {
  for (const link of /** @type {NodeListOf<HTMLAnchorElement>} */ (root.querySelectorAll("#nav a[data-page]"))) {
    const key = `nav_${link.dataset.page}`;
    const label = [...link.childNodes].find((node) => node.nodeType === Node.TEXT_NODE && node.textContent?.trim());
    if (label && t(key) !== key) label.textContent = t(key) + (link.children.length ? " " : "");
  }
  for (const node of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll("[data-i18n]"))) node.textContent = t(node.dataset.i18n || "");
  for (const node of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll("[data-i18n-html]"))) node.innerHTML = t(node.dataset.i18nHtml || "");
  for (const node of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll("[data-i18n-title]"))) node.title = t(node.dataset.i18nTitle || "");
  for (const node of /** @type {NodeListOf<HTMLInputElement>} */ (root.querySelectorAll("[data-i18n-placeholder]"))) node.placeholder = t(node.dataset.i18nPlaceholder || "");
  const select = /** @type {HTMLSelectElement | null} */ (document.getElementById("language"));
  if (select) { select.value = language(); select.setAttribute("aria-label", t("language")); }
  document.documentElement.lang = language();
}

/** The EN/RU switch: remembered in this browser and kept as the user's `interfaceLanguage`
 *  (the tray, notifications and the agents' prompts follow it). */
async function switchLanguage(/** @type {string} */ lang) {
  if (lang !== "en" && lang !== "ru") return;
  setLanguage(lang);
  followDaemonLanguage(lang);
  translateChrome();
  if (!el("pause").hidden) showPause(state.paused);
  if (token()) {
    route();
    try { await api("PATCH", "/v1/me/settings", { interfaceLanguage: lang }); } catch (error) { console.warn(error); }
  }
}

/** The user's `interfaceLanguage` (the system locale's until set) guides an unchosen browser. */
async function loadDaemonLanguage() {
  try {
    followDaemonLanguage(/** @type {import("./types.js").SettingsResponse} */ (await api("GET", "/v1/me/settings")).settings.interfaceLanguage);
    translateChrome();
  } catch (error) { console.warn(error); }
}

/** @typedef {import("./types.js").ApprovalList} ApprovalList */
/** @typedef {import("./types.js").EventFrame} EventFrame */
/** @typedef {import("./types.js").PauseState} PauseState */

/** @typedef {(main: HTMLElement, rest: string[]) => unknown} Page */
/** A tab: its address (`activity/live`), its label's key (a one-tab section has none) and page.
 *  @typedef {{path: string, label?: string, page: Page}} Tab */
/** The nav's sections in order (`setup` has no link); a section's first tab is where its link
 *  goes. @type {{id: string, tabs: Tab[], hidden?: boolean}[]} */
export const SECTIONS = [
  { id: "chat", tabs: [{ path: "chat", page: chatPage }] },
  { id: "inbox", tabs: [{ path: "inbox", page: pages.queue }] },
  { id: "activity", tabs: [
    { path: "activity/live", label: "tab_live", page: pages.live },
    { path: "activity/history", label: "tab_history", page: historyPage },
    { path: "activity/audit", label: "tab_audit", page: pages.audit },
  ] },
  // Schedules are plans a person makes and edits (each with its runs), not a record of what
  // happened: their own section, where a person looks for "my recurring tasks".
  { id: "schedules", tabs: [{ path: "schedules", page: schedulesPage }] },
  { id: "connections", tabs: [
    { path: "connections/claude", label: "tab_claude", page: connectPage },
    { path: "connections/servers", label: "tab_servers", page: serversPage },
    { path: "connections/clients", label: "tab_clients", page: pages.clients },
    { path: "connections/channels", label: "tab_channels", page: channelsPage },
  ] },
  { id: "skills", tabs: [
    { path: "skills", label: "tab_skills", page: skillsPage },
    { path: "memory", label: "tab_memory", page: memoryPage },
  ] },
  { id: "settings", tabs: [{ path: "settings", page: (main, rest) => settingsPage(main, rest, { models: modelsPage, grants: pages.grants }) }] },
  { id: "setup", hidden: true, tabs: [{ path: "setup", page: setupPage }] },
];

/** Older addresses and where they live now (the longest matching prefix is replaced; the rest
 *  of the address, e.g. an approval's id after `queue/`, is kept). */
export const MOVED = {
  queue: "inbox",
  live: "activity/live",
  history: "activity/history",
  audit: "activity/audit",
  grants: "settings/approvals",
  clients: "connections/clients",
  connect: "connections/claude",
  servers: "connections/servers",
  models: "settings/model",
  "settings/form": "settings/advanced",
  "settings/raw": "settings/advanced/toml",
};

/** The section, tab and the rest of the address `hash` names, after any redirect; an unknown
 *  address is the Chat.
 *  @param {string} hash @returns {{section: typeof SECTIONS[number], tab: Tab, rest: string[], path: string}} */
export function resolve(hash) {
  let parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  for (const length of [2, 1]) {
    const moved = MOVED[parts.slice(0, length).join("/")];
    if (parts.length >= length && moved) { parts = [...moved.split("/"), ...parts.slice(length)]; break; }
  }
  let best = null;
  for (const section of SECTIONS) {
    for (const tab of section.tabs) {
      const path = tab.path.split("/");
      if (path.every((part, index) => parts[index] === part) && (!best || path.length > best.tab.path.split("/").length)) best = { section, tab };
    }
  }
  if (!best) {
    // A section's own name opens its first tab (`#/activity`); anything else is the Chat.
    const section = SECTIONS.find((item) => item.id === parts[0]) || SECTIONS[0];
    best = { section, tab: section.tabs[0] };
    parts = best.tab.path.split("/");
  }
  const rest = parts.slice(best.tab.path.split("/").length);
  return { ...best, rest, path: [...best.tab.path.split("/"), ...rest].join("/") };
}

/** Whether the page was opened on a named route (then the first-run setup does not take over). */
let explicitRoute = /^#\//.test(location.hash) || /(^|[#&])go=/.test(location.hash);
/** @type {{paused: boolean, pending: number, dispose: (() => void) | null}} */
const state = { paused: false, pending: 0, dispose: null };

export function isPaused() {
  return state.paused;
}

/** An element of index.html (missing: a bug in the page, reported as such).
 *  @param {string} id @returns {HTMLElement} */
function el(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

/** The badge counts what waits for the person: approvals and the agents' questions. */
async function refreshPending() {
  try {
    const [{ items }, questions] = await Promise.all([
      /** @type {Promise<ApprovalList>} */ (api("GET", "/v1/approvals?status=pending&limit=500")),
      pendingQuestions(),
    ]);
    state.pending = items.length + questions.length;
    const badge = el("queue-count");
    badge.textContent = String(state.pending);
    badge.hidden = state.pending === 0;
    document.title = state.pending ? `Souz (${state.pending})` : "Souz";
    showGate();
  } catch (error) { console.warn(error); }
}

function showPause(paused) {
  state.paused = paused;
  const button = el("pause");
  button.hidden = false;
  button.textContent = paused ? t("resume") : t("pause");
  button.classList.toggle("on", paused);
  el("paused-banner").hidden = !paused;
  showGate();
}

/** The gate's state beside the nav: on (and how many calls wait), or paused. */
function showGate() {
  const gate = el("gate");
  gate.hidden = false;
  gate.className = "gate " + (state.paused ? "paused" : "on");
  gate.textContent = state.paused ? t("gate_paused") : t("gate_on");
  gate.title = t(state.paused ? "gate_paused_title" : "gate_on_title");
}

async function refreshPause() {
  try { showPause(/** @type {PauseState} */ (await api("GET", "/v1/pause")).paused); } catch (error) { console.warn(error); }
}

async function togglePause() {
  const next = !state.paused;
  showPause(/** @type {PauseState} */ (await api("PUT", "/v1/pause", { paused: next, via: "ui" })).paused);
}

function startRuntimeEvents() {
  let lastSeq = null;
  return follow(
    () => (lastSeq === null ? "/v1/events?tail=true" : `/v1/events?after_seq=${lastSeq}`),
    /** @param {EventFrame} frame */ (frame) => {
      if ("type" in frame && (frame.type === "live" || frame.type === "resync")) {
        if (lastSeq === null) lastSeq = frame.last_seq;
        return;
      }
      if (typeof frame.seq === "number") lastSeq = frame.seq;
      const type = frame.event?.type || "";
      if (type.startsWith("approval.") || type.startsWith("option.")) refreshPending();
      if (type === "daemon.paused" || type === "daemon.resumed") refreshPause();
      announceRuntimeEvent(frame.event, frame);
    },
    {
      onState: (up) => {
        el("connection").className = "connection " + (up ? "up" : "down");
        if (up) { refreshPending(); refreshPause(); }
      },
    },
  );
}

/** @type {(() => void) | null} */
let current = null;
/** Counts routings: a page that finishes rendering after the next routing began is stopped. */
let routed = 0;
async function route() {
  const { section, tab, rest, path } = resolve(location.hash);
  // An older or partial address is replaced by the one it resolves to (no new history entry).
  if (location.hash !== `#/${path}`) history.replaceState(null, "", `${location.pathname}${location.search}#/${path}`);
  for (const link of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll("#nav a"))) {
    link.classList.toggle("active", link.dataset.page === section.id);
  }
  current?.();
  current = null;
  const generation = ++routed;
  const main = el("main");
  const body = h("div#page");
  main.replaceChildren(...(section.tabs.length > 1 ? [subnav(section.tabs, tab)] : []), body);
  try {
    const stop = await tab.page(body, rest.map(decodeURIComponent));
    if (typeof stop !== "function") return;
    // Left before it finished rendering: its subscriptions stop at once.
    if (generation !== routed) stop();
    else current = /** @type {() => void} */ (stop);
  } catch (error) {
    if (error.status === 401) return login(t("token_refused"));
    body.replaceChildren(h("p.error", {}, visible(error.message)));
  }
}

/** A section's tabs as links, the shown one marked.
 *  @param {Tab[]} tabs @param {Tab} shown */
function subnav(tabs, shown) {
  return h("nav.subnav#subnav", { "aria-label": t(`nav_${SECTIONS.find((section) => section.tabs.includes(shown))?.id}`) },
    tabs.map((tab) => h("a" + (tab === shown ? ".active" : ""), { href: `#/${tab.path}`, dataset: { tab: tab.path } }, t(tab.label || ""))));
}

/** @param {string} [problem] */
function login(problem) {
  forgetToken();
  state.dispose?.();
  const main = el("main");
  main.replaceChildren(/** @type {HTMLTemplateElement} */ (el("login")).content.cloneNode(true));
  translateChrome(main);
  if (problem) { el("login-error").hidden = false; el("login-error").textContent = problem; }
  el("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(/** @type {HTMLInputElement} */ (el("login-token")).value);
    start();
  });
}

/** Whether a fragment carries a token or a one-time code (`#token=…`, `#code=…`).
 *  @param {string} hash */
function hasCredentials(hash) {
  const fragment = new URLSearchParams(hash.replace(/^#/, ""));
  return fragment.has("token") || fragment.has("code");
}

/** The first time the window opens (the daemon keeps whether the setup was done or skipped),
 *  the setup comes first, unless the page was opened on a named route. */
async function offerSetup() {
  if (explicitRoute) return;
  try {
    const setup = /** @type {import("./types.js").SetupState} */ (await api("GET", "/v1/setup"));
    if (!setup.completed) history.replaceState(null, "", location.pathname + location.search + "#/setup");
  } catch (error) { console.warn(error); }
}

async function start() {
  if (await inRecovery()) {
    // config.toml has problems: only the config routes answer; the page offers to fix it.
    const main = el("main");
    main.replaceChildren();
    try { await recoveryPage(main); } catch (error) {
      if (error.status === 401) return login(t("token_refused"));
      main.append(Object.assign(document.createElement("p"), { className: "error", textContent: visible(error.message) }));
    }
    return;
  }
  try {
    await api("GET", "/v1/pause");
  } catch (error) {
    return login(error.status === 401 ? t("token_refused") : error.message);
  }
  await loadDaemonLanguage();
  state.dispose = startRuntimeEvents();
  await Promise.all([refreshPending(), refreshPause()]);
  await offerSetup();
  route();
}

/** Inside the menu-bar app, tells it when the page first painted (it logs how long a person
 *  waited for the window); the browser's paint timing where the engine has it, else the frame
 *  after the first one. */
function reportFirstPaint() {
  const bridge = tauri();
  if (!bridge) return;
  /** @param {number} ms */
  const report = (ms) => { bridge.invoke("window_painted", { firstPaintMs: ms }).catch((error) => console.warn("window_painted:", error)); };
  if (PerformanceObserver.supportedEntryTypes?.includes("paint")) {
    new PerformanceObserver((list, observer) => {
      const entries = list.getEntries();
      if (entries.length) { observer.disconnect(); report(Math.min(...entries.map((entry) => entry.startTime))); }
    }).observe({ type: "paint", buffered: true });
  } else {
    requestAnimationFrame(() => requestAnimationFrame(() => report(performance.now())));
  }
}

reportFirstPaint();
translateChrome();
el("language").addEventListener("change", (event) => { switchLanguage(/** @type {HTMLSelectElement} */ (event.target).value); });
el("pause").addEventListener("click", () => togglePause().catch((error) => alert(error.message)));
// The `souz ui` address pasted again into this tab changes only the fragment (no reload): its
// token or code is taken as at load, and the app starts again with it (a refused token's login
// form gives way).
window.addEventListener("hashchange", () => {
  if (hasCredentials(location.hash)) {
    explicitRoute = /(^|[#&])go=/.test(location.hash);
    state.dispose?.();
    state.dispose = null;
    takeTokenFromFragment().then(() => start()).catch((error) => login(error.message));
  } else if (token()) route();
});
takeTokenFromFragment()
  .then(() => (token() ? start() : login()))
  .catch((error) => login(error.message));
