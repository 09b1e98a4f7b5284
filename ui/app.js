// @ts-check
// The Souz web UI: a hash router over its pages, the runtime event stream that keeps the
// queue count and the pause state current, and the login for a page opened without a token.

import { api, follow, forgetToken, setToken, takeTokenFromFragment, tauri, token } from "./api.js";
import { chatPage } from "./chat.js";
import { historyPage } from "./history.js";
import { visible } from "./dom.js";
import { announceRuntimeEvent } from "./events.js";
import { pages } from "./pages.js";
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
    nav_queue: "Queue",
    nav_live: "Live turns",
    nav_chat: "Chat",
    nav_memory: "Memory",
    nav_models: "Models",
    nav_servers: "Servers",
    nav_skills: "Skills",
    nav_schedules: "Schedules",
    nav_grants: "Grants",
    nav_clients: "Clients",
    nav_connect: "Connect Claude",
    nav_audit: "Audit",
    nav_history: "History",
    nav_settings: "Settings",
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
    nav_queue: "Очередь",
    nav_live: "Текущие ходы",
    nav_chat: "Чат",
    nav_memory: "Память",
    nav_models: "Модели",
    nav_servers: "Серверы",
    nav_skills: "Навыки",
    nav_schedules: "Расписания",
    nav_grants: "Разрешения",
    nav_clients: "Клиенты",
    nav_connect: "Подключить Claude",
    nav_audit: "Аудит",
    nav_history: "История",
    nav_settings: "Настройки",
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

const routes = { ...pages, chat: chatPage, history: historyPage, skills: skillsPage, schedules: schedulesPage, servers: serversPage, memory: memoryPage, models: modelsPage, settings: settingsPage, setup: setupPage, connect: connectPage };
/** Whether the page was opened on a named route (then the first-run setup does not take over). */
const explicitRoute = /^#\//.test(location.hash) || /(^|[#&])go=/.test(location.hash);
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
  } catch (error) { console.warn(error); }
}

function showPause(paused) {
  state.paused = paused;
  const button = el("pause");
  button.hidden = false;
  button.textContent = paused ? t("resume") : t("pause");
  button.classList.toggle("on", paused);
  el("paused-banner").hidden = !paused;
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
async function route() {
  const [, name = "queue", ...rest] = location.hash.replace(/^#/, "").split("/");
  const page = routes[name] ? name : "queue";
  for (const link of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll("#nav a"))) {
    link.classList.toggle("active", link.dataset.page === page);
  }
  current?.();
  current = null;
  const main = el("main");
  main.replaceChildren();
  try {
    current = (await routes[page](main, rest.map(decodeURIComponent))) || null;
  } catch (error) {
    if (error.status === 401) return login(t("token_refused"));
    main.innerHTML = "";
    const message = document.createElement("p");
    message.className = "error";
    message.textContent = visible(error.message);
    main.append(message);
  }
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
window.addEventListener("hashchange", () => { if (token()) route(); });
takeTokenFromFragment()
  .then(() => (token() ? start() : login()))
  .catch((error) => login(error.message));
