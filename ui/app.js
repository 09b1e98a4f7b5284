// @ts-check
// The Souz web UI: a hash router over seven pages, the runtime event stream that keeps the
// queue count and the pause state current, and the login for a page opened without a token.

import { api, follow, forgetToken, setToken, takeTokenFromFragment, token } from "./api.js";
import { chatPage } from "./chat.js";
import { pages, visible } from "./pages.js";
import { pendingQuestions } from "./questions.js";
import { serversPage } from "./servers.js";
import { memoryPage } from "./memory.js";
import { settingsPage } from "./settings.js";
import { setupPage } from "./setup.js";
import { connectPage } from "./connect.js";
import { inRecovery, recoveryPage } from "./recovery.js";
import { skillsPage } from "./skills.js";

/** @typedef {import("./types.js").ApprovalList} ApprovalList */
/** @typedef {import("./types.js").EventFrame} EventFrame */
/** @typedef {import("./types.js").PauseState} PauseState */
/** @typedef {import("./types.js").RuntimeEvent} RuntimeEvent */
/** @typedef {(event: RuntimeEvent, frame: import("./types.js").EventEnvelope) => void} RuntimeListener */

const routes = { ...pages, chat: chatPage, skills: skillsPage, servers: serversPage, memory: memoryPage, settings: settingsPage, setup: setupPage, connect: connectPage };
/** Whether the page was opened on a named route (then the first-run setup does not take over). */
const explicitRoute = /^#\//.test(location.hash) || /(^|[#&])go=/.test(location.hash);
/** @type {{paused: boolean, pending: number, listeners: Set<RuntimeListener>, dispose: (() => void) | null}} */
const state = { paused: false, pending: 0, listeners: new Set(), dispose: null };

/** Pages subscribe to runtime events (approval.*, option.*, tool.call.*, daemon.*) through this.
 *  @param {RuntimeListener} listener @returns {() => void} */
export function onRuntimeEvent(listener) {
  state.listeners.add(listener);
  return () => state.listeners.delete(listener);
}

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
  button.textContent = paused ? "Resume" : "Pause";
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
      for (const listener of state.listeners) listener(frame.event, frame);
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
    if (error.status === 401) return login("The token was not accepted.");
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
      if (error.status === 401) return login("The token was not accepted.");
      main.append(Object.assign(document.createElement("p"), { className: "error", textContent: visible(error.message) }));
    }
    return;
  }
  try {
    await api("GET", "/v1/pause");
  } catch (error) {
    return login(error.status === 401 ? "The token was not accepted." : error.message);
  }
  state.dispose = startRuntimeEvents();
  await Promise.all([refreshPending(), refreshPause()]);
  await offerSetup();
  route();
}

el("pause").addEventListener("click", () => togglePause().catch((error) => alert(error.message)));
window.addEventListener("hashchange", () => { if (token()) route(); });
takeTokenFromFragment()
  .then(() => (token() ? start() : login()))
  .catch((error) => login(error.message));
