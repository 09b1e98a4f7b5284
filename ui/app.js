// The Souz web UI: a hash router over seven pages, the runtime event stream that keeps the
// queue count and the pause state current, and the login for a page opened without a token.

import { api, follow, forgetToken, setToken, takeTokenFromFragment, token } from "./api.js";
import { pages, visible } from "./pages.js";
import { pendingQuestions } from "./questions.js";
import { settingsPage } from "./settings.js";

const routes = { ...pages, settings: settingsPage };
const state = { paused: false, pending: 0, listeners: new Set(), dispose: null };

/** Pages subscribe to runtime events (approval.*, option.*, tool.call.*, daemon.*) through this. */
export function onRuntimeEvent(listener) {
  state.listeners.add(listener);
  return () => state.listeners.delete(listener);
}

export function isPaused() {
  return state.paused;
}

function el(id) { return document.getElementById(id); }

/** The badge counts what waits for the person: approvals and the agents' questions. */
async function refreshPending() {
  try {
    const [{ items }, questions] = await Promise.all([
      api("GET", "/v1/approvals?status=pending&limit=500"),
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
  try { showPause((await api("GET", "/v1/pause")).paused); } catch (error) { console.warn(error); }
}

async function togglePause() {
  const next = !state.paused;
  showPause((await api("PUT", "/v1/pause", { paused: next, via: "ui" })).paused);
}

function startRuntimeEvents() {
  let lastSeq = null;
  return follow(
    () => (lastSeq === null ? "/v1/events?tail=true" : `/v1/events?after_seq=${lastSeq}`),
    (frame) => {
      if (frame.type === "live" || frame.type === "resync") {
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

let current = null;
async function route() {
  const [, name = "queue", ...rest] = location.hash.replace(/^#/, "").split("/");
  const page = routes[name] ? name : "queue";
  for (const link of document.querySelectorAll("#nav a")) {
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

function login(problem) {
  forgetToken();
  state.dispose?.();
  const main = el("main");
  main.replaceChildren(el("login").content.cloneNode(true));
  if (problem) { el("login-error").hidden = false; el("login-error").textContent = problem; }
  el("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(el("login-token").value);
    start();
  });
}

async function start() {
  try {
    await api("GET", "/v1/pause");
  } catch (error) {
    return login(error.status === 401 ? "The token was not accepted." : error.message);
  }
  state.dispose = startRuntimeEvents();
  await Promise.all([refreshPending(), refreshPause()]);
  route();
}

el("pause").addEventListener("click", () => togglePause().catch((error) => alert(error.message)));
window.addEventListener("hashchange", () => { if (token()) route(); });
takeTokenFromFragment()
  .then(() => (token() ? start() : login()))
  .catch((error) => login(error.message));
