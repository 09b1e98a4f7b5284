// @ts-check
// The Inbox (approvals, drawn with approval.js's `approvalDetails` as the Chat's approval line
// is, and the agents' questions from questions.js), Activity's Working now and Tool log
// (a row whose call changed files has Undo, from undo.js), the standing grants (Settings ›
// Approvals) and the client tokens (Connections). The Chat is in chat.js. Each page renders into
// `main` and returns a function that stops its subscriptions.

import { api, follow } from "./api.js";
import { approvalDetails } from "./approval.js";
import { h, preview, time, until, visible } from "./dom.js";
import { onRuntimeEvent } from "./events.js";
import { pendingQuestions, questionCard } from "./questions.js";
import { language, strings } from "./i18n.js";
import { t as undoText, undoableChanges, undoButton } from "./undo.js";
import { pendingReviews, reviewModeSwitch, reviewPanel, t as reviewText } from "./review.js";

const t = strings({
  en: {
    waiting: "Waiting for you",
    nothing_waiting: "Nothing is waiting for your approval.",
    wants_to_use: "{who} wants to use {tool}",
    chat_titled: "chat “{title}”",
    scheduled_run: "scheduled run “{name}”",
    asked_meta: "{reason} · asked {asked} · denied automatically {expires}",
    arguments: "Arguments",
    approve_once: "Approve once",
    approve_30: "Approve for 30 minutes",
    always_allow: "Always allow",
    always_title: "Adds a rule to config.toml",
    file_writes_offer: "Let {who} create and edit files in {folder} (until revoked)",
    file_writes_covers: "That covers NewFile and EditFile in {folder} and its subfolders, nothing else: deleting, moving, commands and the network still ask, and so do protected paths. Revoke it under Settings › Approvals.",
    deny: "Deny",
    server: "MCP server {name}",
    server_title: "The external MCP server this tool belongs to",
    live_turns: "Working now",
    no_agent: "No agent is working right now.",
    running: "running",
    stop: "Stop",
    stopping: "Stopping…",
    finished: "finished",
    failed: "failed",
    cancelled: "cancelled",
    chat_n: "Chat {id}",
    waiting_approval: "waiting for approval",
    no_answer: "no answer",
    via: "via",
    standing_grants: "Standing grants",
    grant: "Grant",
    created: "Created",
    expires: "Expires",
    until_revoked: "until revoked",
    revoke: "Revoke",
    no_grants: "No grants. Scoped approvals create them.",
    client_placeholder: "client name, e.g. my-agent",
    create_token: "Create token",
    mcp_clients: "MCP clients",
    clients_intro: "Each MCP client gets its own token: it reaches /mcp only, approvals name it, and grants bind to it. ",
    clients_claude: " makes one for Claude Code; ",
    clients_acp: " makes one for an editor (Zed), which reaches only the chats it starts and their approvals.",
    scope_chats: "editor: its own chats",
    name: "Name",
    id: "Id",
    no_clients: "No client tokens.",
    token_for: "Token for {name} (shown once; Souz keeps only its hash): ",
    older: "Older",
    audit_log: "Tool log",
    when: "When",
    who: "Who",
    tool: "Tool",
    decided_by: "Decided by",
    outcome: "Outcome",
  },
  ru: {
    waiting: "Ждёт вашего решения",
    nothing_waiting: "Ничто не ждёт вашего одобрения.",
    wants_to_use: "{who} хочет использовать {tool}",
    chat_titled: "чат «{title}»",
    scheduled_run: "запуск по расписанию «{name}»",
    asked_meta: "{reason} · запрошено {asked} · будет автоматически отклонено {expires}",
    arguments: "Аргументы",
    approve_once: "Разрешить один раз",
    approve_30: "Разрешить на 30 минут",
    always_allow: "Разрешать всегда",
    always_title: "Добавляет правило в config.toml",
    file_writes_offer: "Разрешить {who} создавать и изменять файлы в {folder} (до отзыва)",
    file_writes_covers: "Это NewFile и EditFile в {folder} и вложенных папках, и ничего больше: удаление, перемещение, команды и сеть по-прежнему спрашивают, как и защищённые пути. Отозвать можно в «Настройки › Одобрения».",
    deny: "Отклонить",
    server: "MCP-сервер {name}",
    server_title: "Внешний MCP-сервер, которому принадлежит этот инструмент",
    live_turns: "Работает сейчас",
    no_agent: "Сейчас ни один агент не работает.",
    running: "выполняется",
    stop: "Остановить",
    stopping: "Останавливается…",
    finished: "завершён",
    failed: "ошибка",
    cancelled: "отменён",
    chat_n: "Чат {id}",
    waiting_approval: "ждёт одобрения",
    no_answer: "нет ответа",
    via: "через",
    standing_grants: "Постоянные разрешения",
    grant: "Разрешение",
    created: "Создано",
    expires: "Истекает",
    until_revoked: "до отзыва",
    revoke: "Отозвать",
    no_grants: "Разрешений нет. Их создают одобрения с областью действия.",
    client_placeholder: "имя клиента, например my-agent",
    create_token: "Создать токен",
    mcp_clients: "MCP-клиенты",
    clients_intro: "У каждого MCP-клиента свой токен: он открывает только /mcp, одобрения называют клиента, разрешения привязаны к нему. ",
    clients_claude: " создаёт такой токен для Claude Code; ",
    clients_acp: " — для редактора (Zed): он видит только начатые им чаты и их одобрения.",
    scope_chats: "редактор: только свои чаты",
    name: "Имя",
    id: "Идентификатор",
    no_clients: "Токенов клиентов нет.",
    token_for: "Токен для {name} (показан один раз; Souz хранит только его хеш): ",
    older: "Раньше",
    audit_log: "Журнал инструментов",
    when: "Когда",
    who: "Кто",
    tool: "Инструмент",
    decided_by: "Кем решено",
    outcome: "Итог",
  },
});

/** @typedef {import("./types.js").Approval} Approval */
/** @typedef {import("./types.js").ApprovalList} ApprovalList */
/** @typedef {import("./types.js").AuditEntry} AuditEntry */
/** @typedef {import("./types.js").AuditPage} AuditPage */
/** @typedef {import("./types.js").ChatEvent} ChatEvent */
/** @typedef {import("./types.js").ChatEventList} ChatEventList */
/** @typedef {import("./types.js").ClientList} ClientList */
/** @typedef {import("./types.js").CreatedClient} CreatedClient */
/** @typedef {import("./types.js").DecisionResponse} DecisionResponse */
/** @typedef {import("./types.js").GrantList} GrantList */
/** @typedef {import("./types.js").Requester} Requester */
/** @typedef {import("./types.js").TurnList} TurnList */
/** A frame of `WS /v1/turns/ws` (and `/v1/chats/{id}/ws`): a chat event marked `kind: "event"`,
 *  or a stream control frame.
 *  @typedef {(ChatEvent & {kind: "event"}) | {kind: "live" | "resync", lastSeq: number}} ChatFrame */

/** Who asks, as the daemon names them (`requester_label`), with a chat's title and a scheduled
 *  run's name said in the interface language. @param {import("./types.js").Approval} approval */
function requesterName(approval) {
  if (approval.parked) return t("scheduled_run", { name: approval.parked.schedule_name });
  const titled = /^chat “(.*)”$/s.exec(approval.requester_label);
  if (approval.requester.kind === "chat" && titled) return t("chat_titled", { title: titled[1] });
  return approval.requester_label;
}

// ----- Queue --------------------------------------------------------------------------------

async function queue(main, [focus]) {
  const list = h("div#queue-list");
  const questions = h("div#question-list");
  const reviews = h("div#review-list");
  main.append(h("h1", {}, t("waiting")), reviews, questions, list);
  // Reviews of staged file changes: a panel per open review; one being decided here keeps its
  // panel (and its status line) until the review closes.
  const renderReviews = async () => {
    const open = await pendingReviews();
    const ids = new Set(open.map((review) => String(review.id)));
    for (const panel of reviews.querySelectorAll("[data-review]")) {
      if (!ids.has(/** @type {HTMLElement} */ (panel).dataset.review ?? "")) panel.remove();
    }
    for (const review of open) {
      const shown = reviews.querySelector(`[data-review="${review.id}"]`);
      const panel = reviewPanel(review);
      if (shown) shown.replaceWith(panel); else reviews.append(panel);
    }
    reviews.querySelector("h3")?.remove();
    if (open.length) reviews.prepend(h("h3", {}, reviewText("pending_reviews")));
  };
  const renderApprovals = async () => {
    const { items } = /** @type {ApprovalList} */ (await api("GET", "/v1/approvals?status=pending&limit=500"));
    list.replaceChildren();
    if (!items.length) list.append(h("p.empty", {}, t("nothing_waiting")));
    for (const approval of items.reverse()) list.append(approvalCard(approval, approval.id === focus));
  };
  // A card being answered keeps its state (the text typed so far) until its question ends.
  const renderQuestions = async () => {
    const items = await pendingQuestions();
    const open = new Set(items.map((question) => question.id));
    for (const card of questions.querySelectorAll("[data-option]")) if (!open.has(card.dataset.option)) card.remove();
    for (const question of items) {
      if (!questions.querySelector(`[data-option="${question.id}"]`)) questions.append(questionCard(question, question.id === focus));
    }
  };
  await Promise.all([renderApprovals(), renderQuestions(), renderReviews()]);
  main.querySelector(".focus")?.scrollIntoView({ block: "center" });
  return onRuntimeEvent((event) => {
    if (event?.type?.startsWith("approval.")) renderApprovals();
    if (event?.type === "review.opened" || event?.type === "review.closed") renderReviews();
    if (event?.type?.startsWith("option.")) renderQuestions();
  });
}

/** @param {Approval} approval @param {boolean} focused */
function approvalCard(approval, focused) {
  const status = h("span.meta");
  const decide = async (decision, scope, extra = {}) => {
    for (const button of card.querySelectorAll("button")) button.disabled = true;
    try {
      const response = /** @type {DecisionResponse} */ (await api("POST", `/v1/approvals/${approval.id}/decision`, { decision, scope, via: "ui", ...extra }));
      status.textContent = visible(response.warning || "");
    } catch (error) {
      status.textContent = visible(error.message);
      status.className = "error";
      for (const button of card.querySelectorAll("button")) button.disabled = false;
    }
  };
  const suggested = approval.suggested;
  const card = h("article.card" + (focused ? ".focus" : ""), { dataset: { approval: approval.id } },
    h("div.row", {},
      h("h2", {}, t("wants_to_use", { who: requesterName(approval), tool: approval.tool })),
      h("span.spacer"),
      approval.server ? h("span.tag.server", { title: t("server_title") }, t("server", { name: approval.server })) : null,
      h("span.tag", {}, approval.risk)),
    h("p", {}, approval.summary),
    h("p.meta", {}, t("asked_meta", { reason: approval.reason, asked: time(approval.created_at), expires: until(approval.expires_at, language()) })),
    ...approvalDetails(approval),
    h("div.row", {},
      h("button.primary", { onclick: () => decide("approve", "once") }, t("approve_once")),
      suggested && suggested.scope !== "once"
        ? h("button", { dataset: { suggested: suggested.tool_group || "tool" }, onclick: () => decide("approve", suggested.scope, { minutes: suggested.minutes, match: suggested.match, tool_group: suggested.tool_group }) },
          suggested.tool_group === "file_writes" ? t("file_writes_offer", { who: requesterName(approval), folder: suggested.match?.path_prefix || "" }) : suggested.label)
        : null,
      h("button", { onclick: () => decide("approve", "minutes", { minutes: 30, match: suggested?.match }) }, t("approve_30")),
      h("button", { onclick: () => decide("approve", "always", { match: suggested?.match }), title: t("always_title") }, t("always_allow")),
      h("span.spacer"),
      h("button.danger", { onclick: () => decide("deny", "once") }, t("deny"))),
    // What the one-click folder scope covers, before the person accepts it.
    suggested?.tool_group === "file_writes"
      ? h("p.meta.scope-covers", {}, t("file_writes_covers", { folder: suggested.match?.path_prefix || "" }))
      : null,
    status);
  return card;
}

// ----- Live turns ---------------------------------------------------------------------------

/** What a tool line says about the call `payload` is about: its name, and for a skill run the
 *  skill (`RunSkillCommand` → `NewFile`).
 *  @param {import("./types.js").ToolCallStartedPayload} payload @param {string} known */
function toolLabel(payload, known) {
  const skill = field(payload.argumentsPreview, "skillId");
  if (payload.name === "RunSkillCommand" && typeof skill === "string") return `${skill} (RunSkillCommand)`;
  return known && payload.name === "RunSkillCommand" ? known : (payload.name || known || "tool");
}

/** `value[name]` when `value` (a redacted preview, any JSON) is an object, else undefined.
 *  @param {unknown} value @param {string} name @returns {unknown} */
function field(value, name) {
  return value && typeof value === "object" && name in value ? value[name] : undefined;
}

async function live(main) {
  const list = h("div#turns");
  main.append(h("h1", {}, t("live_turns")), list);
  const turns = new Map();
  const empty = h("p.empty", {}, t("no_agent"));
  const refreshEmpty = () => { if (!turns.size && !list.querySelector(".card")) list.replaceChildren(empty); else empty.remove(); };

  const view = (executionId, chatId, title) => {
    if (turns.has(executionId)) return turns.get(executionId);
    const text = h("div.stream");
    const tools = h("div.tools");
    const status = h("span.tag", {}, t("running"));
    const stop = h("button.danger.stop", { type: "button" }, t("stop"));
    stop.addEventListener("click", async () => {
      stop.disabled = true;
      try {
        await api("POST", `/v1/chats/${chatId}/executions/${executionId}/cancel`);
        stop.textContent = t("stopping");
      } catch (error) {
        stop.disabled = false;
        status.textContent = visible(error.message);
      }
    });
    const card = h("article.card", { dataset: { execution: executionId } },
      h("div.row", {}, h("h2", {}, title || t("chat_n", { id: chatId.slice(0, 8) })), h("span.spacer"), stop, status),
      tools, text);
    empty.remove();
    list.append(card);
    const turn = { card, text, tools, status, stop, calls: new Map(), attempts: new Map(), seen: new Set() };
    turns.set(executionId, turn);
    return turn;
  };

  // One line per tool call, keyed by the model's call id, updated as the call moves on.
  /** @param {{toolCallId: string, approvalId?: string}} payload */
  const toolLine = (turn, payload) => {
    const id = payload.toolCallId || payload.approvalId;
    let call = turn.calls.get(id);
    if (!call) {
      call = { line: h("div.tool-call", { dataset: { toolCall: id } }), label: "", summary: "" };
      turn.calls.set(id, call);
      turn.tools.append(call.line);
    }
    return call;
  };
  const show = (call, state, text) => { call.line.className = "tool-call " + state; call.line.textContent = visible(text); };

  /** @param {ChatEvent} event */
  const apply = (event) => {
    if (!event.executionId) return;
    if (event.seq) {
      const key = `${event.chatId}:${event.seq}`;
      const existing = turns.get(event.executionId);
      if (existing?.seen.has(key)) return;
      existing?.seen.add(key);
    }
    const turn = view(event.executionId, event.chatId, null);
    if (event.seq) turn.seen.add(`${event.chatId}:${event.seq}`);
    const { type, payload } = event;
    switch (type) {
      case "message.delta": {
        // Each model request (attempt) streams into its own span, so a discarded one can go.
        let span = turn.attempts.get(payload.attempt);
        if (!span) { span = h("span", { dataset: { attempt: String(payload.attempt ?? "") } }); turn.attempts.set(payload.attempt, span); turn.text.append(span); }
        span.textContent += visible(payload.delta || "");
        break;
      }
      case "message.discarded": turn.attempts.get(payload.attempt)?.remove(); turn.attempts.delete(payload.attempt); break;
      case "message.completed": if (payload.role === "assistant") { turn.attempts.clear(); turn.text.textContent = visible(payload.content || ""); } break;
      case "tool.call.started": {
        const call = toolLine(turn, payload);
        call.label = toolLabel(payload, call.label);
        const args = field(payload.argumentsPreview, "arguments") ?? payload.argumentsPreview;
        show(call, "running", `▶ ${call.label} ${preview(args)}`);
        break;
      }
      case "approval.requested": {
        const call = toolLine(turn, payload);
        call.label = call.label || payload.name;
        call.summary = payload.summary || "";
        show(call, "waiting", `⏸ ${call.label}: ${call.summary} (${t("waiting_approval")})`);
        break;
      }
      case "approval.decided": {
        const call = toolLine(turn, payload);
        const approved = payload.status === "approved";
        show(call, approved ? "running" : "failed", `${approved ? "▶" : "✗"} ${call.label || payload.name}: ${call.summary} (${payload.status}${payload.via ? ` ${t("via")} ` + payload.via : ""})`);
        break;
      }
      case "approval.expired": {
        const call = toolLine(turn, payload);
        show(call, "failed", `✗ ${call.label || payload.name}: ${call.summary} (${t("no_answer")}: ${payload.reason || "expired"})`);
        break;
      }
      case "tool.call.progress": {
        const call = toolLine(turn, payload);
        call.label = call.label || payload.name;
        const done = payload.total ? `${payload.progress}/${payload.total}` : `${payload.progress}`;
        show(call, "running", `▶ ${call.label} … ${done}${payload.message ? " " + payload.message : ""}`);
        break;
      }
      case "tool.call.finished": {
        const call = toolLine(turn, payload);
        call.label = call.label || payload.name;
        show(call, "finished", `✓ ${call.label} (${payload.durationMs ?? "?"} ms) ${preview(payload.resultPreview)}`);
        break;
      }
      case "tool.call.failed": {
        const call = toolLine(turn, payload);
        call.label = call.label || payload.name;
        show(call, "failed", `✗ ${call.label} (${payload.durationMs ?? "?"} ms): ${payload.error || ""}`);
        break;
      }
      case "execution.finished": turn.stop.remove(); turn.status.textContent = t("finished"); turn.status.className = "tag succeeded"; break;
      case "execution.failed": turn.stop.remove(); turn.status.textContent = t("failed"); turn.status.className = "tag failed"; turn.text.append(h("p.error", {}, payload.errorMessage || "")); break;
      case "execution.cancelled": turn.stop.remove(); turn.status.textContent = t("cancelled"); turn.status.className = "tag denied"; break;
    }
  };

  const stop = follow(() => "/v1/turns/ws", async (/** @type {ChatFrame} */ frame) => {
    if (frame.kind === "live") {
      // (Re)connected: load the turns running now and what they did so far.
      const { items } = /** @type {TurnList} */ (await api("GET", "/v1/turns"));
      for (const item of items) {
        view(item.execution.id, item.execution.chatId, item.chatTitle);
        const { items: events } = /** @type {ChatEventList} */ (await api("GET", `/v1/chats/${item.execution.chatId}/events?afterSeq=${item.afterSeq}&limit=500`));
        for (const event of events) if (event.executionId === item.execution.id) apply(event);
      }
      refreshEmpty();
    } else if (frame.kind === "event") {
      apply(frame);
    }
  });
  refreshEmpty();
  return stop;
}

// ----- Grants -------------------------------------------------------------------------------

async function grants(main) {
  const body = h("tbody");
  main.append(h("h1", {}, t("standing_grants")), h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, t("grant")), h("th", {}, t("created")), h("th", {}, t("expires")), h("th"))), body));
  const render = async () => {
    const { items } = /** @type {GrantList} */ (await api("GET", "/v1/grants"));
    body.replaceChildren(...items.map((grant) => h("tr", {},
      h("td", {}, h("span.tag." + grant.effect, {}, grant.effect), " ", grant.label),
      h("td", {}, time(grant.created_at)),
      h("td", {}, grant.expires_at ? time(grant.expires_at) : t("until_revoked")),
      h("td", {}, h("button", { onclick: async () => { await api("DELETE", `/v1/grants/${grant.id}`); render(); } }, t("revoke"))))));
    if (!items.length) body.append(h("tr", {}, h("td.empty", { colSpan: 4 }, t("no_grants"))));
  };
  await render();
  return onRuntimeEvent((event) => { if (event?.type === "approval.decided") render(); });
}

// ----- Clients ------------------------------------------------------------------------------

// MCP client tokens: each client its own, valid on /mcp only. A new token is shown once.
async function clients(main) {
  const body = h("tbody");
  const name = h("input", { placeholder: t("client_placeholder"), required: true, pattern: "[A-Za-z0-9._-]{1,64}" });
  const shown = h("p.created");
  const form = h("form.inline", {}, name, h("button", { type: "submit" }, t("create_token")));
  main.append(h("h1", {}, t("mcp_clients")),
    h("p", {}, t("clients_intro"),
      h("code", {}, "souz mcp-config claude-code"), t("clients_claude"),
      h("code", {}, "souz acp-config"), t("clients_acp")),
    form, shown,
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, t("name")), h("th", {}, t("id")), h("th", {}, t("created")), h("th", { title: reviewText("review_mode_title") }, reviewText("review_mode_client")), h("th"))), body));
  const render = async () => {
    const { items } = /** @type {ClientList} */ (await api("GET", "/v1/clients"));
    body.replaceChildren(...items.map((client) => h("tr", {},
      h("td", {}, client.name, client.scope === "chats" ? h("span.meta", {}, ` (${t("scope_chats")})`) : ""),
      h("td", {}, h("code", {}, client.id.slice(0, 8))),
      h("td", {}, time(client.created_at)),
      h("td", {}, reviewModeSwitch({ client: client.name }, reviewText("review_mode_client"), (text) => { shown.className = "error"; shown.replaceChildren(visible(text)); })),
      h("td", {}, h("button", { onclick: () => attempt(async () => {
        await api("DELETE", `/v1/clients/${client.id}`);
        shown.replaceChildren();
        await render();
      }) }, t("revoke"))))));
    if (!items.length) body.append(h("tr", {}, h("td.empty", { colSpan: 5 }, t("no_clients"))));
  };
  // A failure shows its message (escaped like every text from the daemon), never silently.
  const attempt = async (step) => {
    try {
      await step();
    } catch (error) {
      shown.className = "error";
      shown.replaceChildren(visible(error.message));
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      const created = /** @type {CreatedClient} */ (await api("POST", "/v1/clients", { name: name.value.trim() }));
      name.value = "";
      shown.className = "created";
      shown.replaceChildren(t("token_for", { name: created.name }), h("code.token", {}, created.token));
      await render();
    });
  });
  await render();
}

// ----- Audit --------------------------------------------------------------------------------

async function audit(main) {
  const body = h("tbody");
  const more = h("button", {}, t("older"));
  main.append(h("h1", {}, t("audit_log")), h("table", {}, h("thead", {}, h("tr", {},
    h("th", {}, t("when")), h("th", {}, t("who")), h("th", {}, t("tool")), h("th", {}, t("decided_by")), h("th", {}, t("outcome")), h("th", {}, t("arguments")), h("th"))), body), h("p", {}, more));
  let before = null;
  const load = async (reset) => {
    const page = /** @type {AuditPage} */ (await api("GET", "/v1/audit?limit=50" + (before && !reset ? `&before=${before}` : "")));
    if (reset) body.replaceChildren();
    for (const entry of page.items) {
      const undoCell = h("td.actions");
      body.append(h("tr", { dataset: { callId: entry.call_id } },
        h("td", {}, time(entry.at)),
        h("td", {}, who(entry.requester)),
        h("td", {}, entry.tool),
        h("td", {}, decidedBy(entry.decided_by)),
        h("td", {}, h("span.tag." + entry.outcome, {}, entry.outcome)),
        h("td", {}, h("code", {}, JSON.stringify(entry.arguments).slice(0, 160))),
        undoCell));
      if (mayChangeFiles(entry)) offerUndo(entry.call_id, undoCell);
    }
    before = page.next_before ?? null;
    more.hidden = before === null;
  };
  more.addEventListener("click", () => load(false));
  await load(true);
  return onRuntimeEvent((event) => { if (event?.type?.startsWith("tool.call.f") || event?.type === "history.undone") load(true); });
}

/** Whether an audit row's call may have recorded changes to files (a call that ran and is not
 *  read-only or network-only): only those ask the history. @param {AuditEntry} entry */
const mayChangeFiles = (entry) => entry.outcome === "succeeded" && entry.risk !== "read_only" && entry.risk !== "network";

/** Puts Undo in `cell` when the call has recorded changes that can still be undone (the
 *  history's `call_id` filter tells). @param {string} callId @param {HTMLElement} cell */
async function offerUndo(callId, cell) {
  try {
    if (!(await undoableChanges(callId)).length) return;
  } catch (error) { console.warn(error); return; }
  const panel = h("div.undo-panel");
  cell.replaceChildren(undoButton({
    label: undoText("undo"), title: undoText("undo_title"), selection: { type: "call", call_id: callId },
    panel, dataset: { undoCall: callId },
  }), panel);
}

/** What decided a call, for a table cell: a person's decision says where it was made.
 *  @param {import("./types.js").DecisionSource} source */
function decidedBy(source) {
  return source.kind + (source.kind === "person" && source.via ? ` (${source.via})` : "");
}

/** Who asked, for a table cell: an MCP client by its token's name, what it calls itself after.
 *  @param {Requester} requester */
function who(requester) {
  if (requester.kind !== "mcp") return requester.kind;
  return requester.token_name ? `${requester.token_name} ("${requester.client_name}")` : `"${requester.client_name}"`;
}

export const pages = { queue, live, grants, clients, audit };
