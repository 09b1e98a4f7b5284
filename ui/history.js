// @ts-check
// The History page: every change Souz's file tools made (from any client), newest first, from
// `GET /v1/history`: when, which client, the chat turn (linked to its chat), the tool, and what
// happened to each path (created, edited, moved, deleted; restorable or not). Pages of 50 with
// "Load older" (`before`), a filter by client, Undo for one change and for its whole turn (with
// the three-way conflict view of undo.js). `history.change.recorded` and `history.undone`
// events reload what is shown. `#/history/turn/<execution id>` (where the app's notification
// leads when its Undo met files changed since) shows only that turn's changes, and above them
// what an undo of the turn would meet now (`POST /v1/history/undo/check`, which touches
// nothing): the conflict view with "Keep current" and "Restore anyway", else "Undo this turn".
// Renders into `main` and returns a function that stops listening.

import { api } from "./api.js";
import { h, time, visible } from "./dom.js";
import { onRuntimeEvent } from "./events.js";
import { strings } from "./i18n.js";
import { pathEffect, restorable, showConflicts, t as undoText, undoButton } from "./undo.js";

/** @typedef {import("./types.js").HistoryChange} HistoryChange */
/** @typedef {import("./types.js").HistoryList} HistoryList */
/** @typedef {import("./types.js").UndoCheck} UndoCheck */
/** @typedef {import("./types.js").UndoSelection} UndoSelection */

const PAGE = 50;

const t = strings({
  en: {
    title: "File changes",
    intro: "Every change Souz's tools made to your files, whoever asked for it, newest first. Undo one change, or everything a chat turn changed.",
    client: "Client",
    all_clients: "All clients",
    when: "When",
    turn: "Chat turn",
    tool: "Tool",
    paths: "What happened",
    chat_n: "Chat {id}",
    no_chat: "not in a chat",
    load_older: "Load older",
    empty: "No changes recorded yet.",
    undoes: "undoes change {id}",
    undone_by: "undone (change {id})",
    pending: "not confirmed yet",
    turn_title: "Changes of one chat turn",
    all_changes: "All changes",
    turn_nothing: "Nothing of this turn is left to undo.",
  },
  ru: {
    title: "Изменения файлов",
    intro: "Все изменения, которые инструменты Souz внесли в ваши файлы, кто бы о них ни попросил, новые сверху. Отмените одно изменение или всё, что изменил ход чата.",
    client: "Клиент",
    all_clients: "Все клиенты",
    when: "Когда",
    turn: "Ход чата",
    tool: "Инструмент",
    paths: "Что произошло",
    chat_n: "Чат {id}",
    no_chat: "не в чате",
    load_older: "Показать более ранние",
    empty: "Изменений пока не записано.",
    undoes: "отменяет изменение {id}",
    undone_by: "отменено (изменение {id})",
    pending: "ещё не подтверждено",
    turn_title: "Изменения одного хода чата",
    all_changes: "Все изменения",
    turn_nothing: "В этом ходе больше нечего отменять.",
  },
});

/** One change as a table row, with its undo buttons and the panel they report in.
 *  @param {HistoryChange} change @param {() => void} reload */
function changeRow(change, reload) {
  const panel = h("div.undo-panel");
  const paths = h("ul.history-paths", {}, change.paths.map((path) => {
    const effect = pathEffect(change, path);
    return h("li", { dataset: { path: path.path, effect } },
      h("code", {}, path.path), " ",
      h("span.tag.effect-" + effect, {}, undoText(effect)),
      restorable(path) ? null : h("span.tag.failed.not-restorable", {}, undoText("not_restorable")));
  }));
  const state = change.status === "undone"
    ? h("span.tag.denied.undone", {}, t("undone_by", { id: change.undoneBy ?? "?" }))
    : change.status === "pending" ? h("span.tag", {}, t("pending")) : null;
  const actions = h("td.actions");
  if (change.status === "done") {
    actions.append(undoButton({
      label: undoText("undo"), title: undoText("undo_title"), selection: { type: "change", id: change.id },
      panel, done: reload, dataset: { undoChange: String(change.id) },
    }));
    if (change.executionId) {
      actions.append(" ", undoButton({
        label: undoText("undo_turn"), title: undoText("undo_turn_title"),
        selection: { type: "turn", execution_id: change.executionId },
        panel, done: reload, dataset: { undoTurn: change.executionId },
      }));
    }
  }
  return h("tr", { dataset: { change: String(change.id), callId: change.callId, status: change.status } },
    h("td", {}, time(change.createdAt)),
    h("td", {}, change.client),
    h("td", {}, change.chatId
      ? h("a.chat-link", { href: `#/chat/${encodeURIComponent(change.chatId)}` }, t("chat_n", { id: change.chatId.slice(0, 8) }))
      : h("span.meta", {}, t("no_chat"))),
    h("td", {}, change.tool,
      change.undoes ? h("div.meta", {}, t("undoes", { id: change.undoes })) : null,
      h("div.meta.summary", {}, change.summary)),
    h("td", {}, paths, state, panel),
    actions);
}

/** What an undo of a whole turn would meet now, in `panel`: the conflict view when files
 *  changed since Souz wrote them, else "Undo this turn" (nothing is undone until a click).
 *  @param {string} executionId @param {HTMLElement} panel @param {() => void} reload */
async function turnCheck(executionId, panel, reload) {
  /** @type {UndoSelection} */
  const selection = { type: "turn", execution_id: executionId };
  /** @type {UndoCheck} */
  let check;
  try {
    check = /** @type {UndoCheck} */ (await api("POST", "/v1/history/undo/check", { selection }));
  } catch (error) {
    panel.className = error.status === 404 ? "undo-panel meta" : "undo-panel error";
    panel.replaceChildren(error.status === 404 ? t("turn_nothing") : visible(error.message));
    return;
  }
  if (check.conflicts.length) {
    showConflicts(check.conflicts, selection, panel, reload);
    return;
  }
  panel.className = "undo-panel";
  panel.replaceChildren(undoButton({
    label: undoText("undo_turn"), title: undoText("undo_turn_title"), selection, panel,
    done: reload, dataset: { undoTurn: executionId },
  }));
}

/** @param {HTMLElement} main @param {string[]} [args] `turn` and an execution id: that turn only */
export async function historyPage(main, args = []) {
  // Paint the frame first, then fetch: the first paint never waits for the daemon.
  performance.mark("souz-history-start");
  const body = h("tbody#history-rows");
  const more = h("button#history-more", { type: "button", hidden: true }, t("load_older"));
  const clientFilter = h("select#history-client", { "aria-label": t("client") }, h("option", { value: "" }, t("all_clients")));
  const empty = h("p.empty#history-empty", { hidden: true }, t("empty"));
  const turn = args[0] === "turn" && args[1] ? args[1] : null;
  const turnPanel = h("div.undo-panel#history-turn-panel");
  main.append(h("h1", {}, t("title")), h("p.meta", {}, t("intro")));
  if (turn) {
    main.append(h("section.history-turn#history-turn", { dataset: { turn } },
      h("h2", {}, t("turn_title")), h("p", {}, h("a", { href: "#/activity/history" }, t("all_changes"))), turnPanel));
  }
  main.append(h("label", {}, t("client"), " ", clientFilter),
    h("table.history", {}, h("thead", {}, h("tr", {},
      h("th", {}, t("when")), h("th", {}, t("client")), h("th", {}, t("turn")), h("th", {}, t("tool")), h("th", {}, t("paths")), h("th"))), body),
    empty, h("p", {}, more));

  /** Clients seen so far: the filter offers each. */
  const clients = new Set();
  /** How many rows are shown, so a reload keeps as many. */
  let shown = 0;
  /** The oldest id shown (`before` of the next page), null at the end. @type {number | null} */
  let before = null;
  /** @param {HistoryChange[]} changes */
  const addClients = (changes) => {
    for (const change of changes) {
      if (clients.has(change.client)) continue;
      clients.add(change.client);
      clientFilter.append(h("option", { value: change.client }, change.client));
    }
  };
  /** One page older than what is shown. @param {boolean} reset */
  const load = async (reset) => {
    const params = new URLSearchParams({ limit: String(reset ? Math.min(Math.max(shown, PAGE), 500) : PAGE) });
    if (!reset && before !== null) params.set("before", String(before));
    if (clientFilter.value) params.set("client", clientFilter.value);
    if (turn) params.set("execution_id", turn);
    const { changes } = /** @type {HistoryList} */ (await api("GET", `/v1/history?${params}`));
    if (reset) { body.replaceChildren(); shown = 0; }
    body.append(...changes.map((change) => changeRow(change, reloadSoon)));
    shown += changes.length;
    addClients(changes);
    before = changes.length ? changes[changes.length - 1].id : before;
    more.hidden = changes.length < Number(params.get("limit"));
    empty.hidden = shown > 0;
  };
  let timer = 0;
  /** Several events in a row (a turn's undo) reload once. */
  // An open conflict view stays until the person chooses (its answer reloads the page).
  const reloadSoon = () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => { if (!body.querySelector(".conflict-list")) load(true).catch(console.warn); }, 100);
  };
  more.addEventListener("click", () => load(false).catch(console.warn));
  clientFilter.addEventListener("change", () => { shown = 0; load(true).catch(console.warn); });
  await load(true);
  if (turn) await turnCheck(turn, turnPanel, reloadSoon);
  requestAnimationFrame(() => performance.mark("souz-history-painted"));
  const stop = onRuntimeEvent((event) => {
    if (event?.type === "history.change.recorded" || event?.type === "history.undone") reloadSoon();
  });
  return () => { stop(); clearTimeout(timer); };
}
