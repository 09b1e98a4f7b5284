// @ts-check
// The Chat page: the chat list (new, search by title, rename, archive, delete), a chat's
// messages with the answer streaming in and rendered as Markdown, its tool calls inline with
// their approvals and outcomes (tool-lines.js: Approve/Deny right there, Undo on a line whose call
// changed files; reopened, the chat shows its earlier turns' lines again), Stop, and one box that
// sends a message whether or not the agent is working (`POST /v1/chats/{id}/input`: a new turn,
// input the running turn takes at its next step, or input queued for the next turn). An answer
// whose turn changed files gets "Undo this turn" (undo.js). In review mode (a switch among the
// chat's options) a turn that staged writes ends with their review panel (review.js) under the
// messages. Renders into `main` and returns a function that stops its stream.

import { api, follow } from "./api.js";
import { strings } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { h, preview, visible } from "./dom.js";
import { onRuntimeEvent } from "./events.js";
import { t as undoText, undoButton } from "./undo.js";
import { toolLines } from "./tool-lines.js";
import { modelName } from "./providers.js";
import { pendingReviews, reviewModeSwitch, reviewPanel, t as reviewText } from "./review.js";
import { pushToTalk, spokenAnswersSwitch } from "./voice.js";

/** @typedef {import("./types.js").Attachment} Attachment */
/** @typedef {import("./types.js").Bootstrap} Bootstrap */
/** @typedef {import("./types.js").Chat} Chat */
/** @typedef {import("./types.js").ChatSettings} ChatSettings */
/** @typedef {import("./types.js").ChatTools} ChatTools */
/** @typedef {import("./types.js").ChatInputResponse} ChatInputResponse */
/** @typedef {import("./types.js").ChatList} ChatList */
/** @typedef {import("./types.js").CreateChatResponse} CreateChatResponse */
/** @typedef {import("./types.js").MessageList} MessageList */
/** @typedef {import("./types.js").TurnList} TurnList */
/** @typedef {import("./types.js").ExecutionTrace} ExecutionTrace */
/** @typedef {import("./types.js").TraceMessage} TraceMessage */
/** @typedef {import("./pages.js").ChatFrame} ChatFrame */

const t = strings({
  en: {
    title: "Chat",
    new_chat: "New chat",
    search: "Search chats",
    show_archived: "Show archived",
    archived: "archived",
    no_chats: "No chats yet.",
    no_match: "No chat title matches.",
    start: "Start a new chat.",
    untitled: "Chat {id}",
    new_title: "Chat {when}",
    rename: "Rename",
    save: "Save",
    cancel: "Cancel",
    archive: "Archive",
    unarchive: "Unarchive",
    delete: "Delete",
    delete_confirm: "Delete this chat for good? Its messages go, and Souz forgets what it remembered and kept from it.",
    delete_yes: "Delete for good",
    keep: "Keep",
    placeholder: "Message Souz's agent…",
    placeholder_busy: "Add to what the agent is doing…",
    send: "Send",
    stop: "Stop",
    stopping: "Stopping…",
    steered: "The agent takes this at its next step.",
    queued: "Queued: the agent reads this in a new turn once the current one ends.",
    failed: "The turn failed.",
    no_model: "No model is set up yet, so Souz cannot answer: it needs a provider key, a ChatGPT sign-in or a model server.",
    setup_model: "Set up a model",
    cancelled: "Stopped.",
    model: "Model",
    agent: "Agent",
    tools: "Tools this chat offers ({n})",
    offered_core: "Souz's own tools",
    offered_catalog: "Catalog tools",
    offered_servers: "MCP servers' tools",
    core_memory: "Memory: searching what you told Souz",
    core_knowledge: "Knowledge: reading back long tool results",
    core_skills: "Skills: finding and running skills",
    core_askUser: "Questions to you: asking and waiting for your answer",
    core_none: "(this agent has none)",
    not_offered: "not offered: a rule always refuses it",
    servers_none: "No MCP server tools are connected.",
    servers_note: "Which of a server's tools agents get is set for each server on the MCP servers page.",
    default_model: "My default ({model})",
    default_agent: "Configured default",
    agent_graph: "Graph agent (chooses tools for the task)",
    agent_skills: "Skills agent (takes input while it works)",
    tools_default: "Use my settings",
    saved: "Saved: this chat's next turns use it.",
    why: "Why?",
    why_hide: "Hide the trace",
    why_title: "Why the agent did this",
    trace_none: "No agent turn was recorded for this answer.",
    trace_turn: "{agent} agent, {model}: {status}, {ms} ms, {tokens} tokens",
    trace_prompt: "Sent to the model ({n} messages)",
    trace_step: "{node}: {summary} ({ms} ms)",
    trace_cut: "(cut)",
    trace_system: "system prompt ({n} characters)",
    attach: "Attach files",
    attach_button: "Attach…",
    kind_image: "image",
    kind_text: "text",
    kind_file: "file",
    attach_path: "Attach by path",
    path_placeholder: "A file inside your folders, e.g. ~/Documents/report.pdf",
    add: "Add",
    remove_attachment: "Remove {name}",
    uploading: "Uploading {name}…",
    attachments_while_running: "Files go with a new message: wait until the agent has finished, or stop it.",
  },
  ru: {
    title: "Чат",
    new_chat: "Новый чат",
    search: "Поиск по чатам",
    show_archived: "Показать архив",
    archived: "в архиве",
    no_chats: "Чатов пока нет.",
    no_match: "Нет чатов с таким названием.",
    start: "Начните новый чат.",
    untitled: "Чат {id}",
    new_title: "Чат {when}",
    rename: "Переименовать",
    save: "Сохранить",
    cancel: "Отмена",
    archive: "В архив",
    unarchive: "Из архива",
    delete: "Удалить",
    delete_confirm: "Удалить этот чат навсегда? Сообщения будут удалены, а Souz забудет всё, что запомнил и сохранил из него.",
    delete_yes: "Удалить навсегда",
    keep: "Оставить",
    placeholder: "Сообщение агенту Souz…",
    placeholder_busy: "Дополните то, что делает агент…",
    send: "Отправить",
    stop: "Остановить",
    stopping: "Останавливаю…",
    steered: "Агент учтёт это на следующем шаге.",
    queued: "В очереди: агент прочтёт это в новом ходе, когда закончит текущий.",
    failed: "Ход завершился ошибкой.",
    no_model: "Модель ещё не настроена, поэтому Souz не может ответить: нужен ключ провайдера, вход через ChatGPT или сервер моделей.",
    setup_model: "Настроить модель",
    cancelled: "Остановлено.",
    model: "Модель",
    agent: "Агент",
    tools: "Инструменты этого чата (доступно: {n})",
    offered_core: "Собственные инструменты Souz",
    offered_catalog: "Инструменты каталога",
    offered_servers: "Инструменты MCP-серверов",
    core_memory: "Память: поиск того, что вы рассказали Souz",
    core_knowledge: "Знания: чтение длинных результатов инструментов",
    core_skills: "Навыки: поиск и запуск навыков",
    core_askUser: "Вопросы вам: спросить и дождаться ответа",
    core_none: "(у этого агента их нет)",
    not_offered: "недоступен: правило всегда его запрещает",
    servers_none: "Инструменты MCP-серверов не подключены.",
    servers_note: "Какие инструменты сервера получают агенты, задаётся для каждого сервера на странице MCP-серверов.",
    default_model: "По умолчанию ({model})",
    default_agent: "Как в настройках",
    agent_graph: "Графовый агент (подбирает инструменты под задачу)",
    agent_skills: "Агент навыков (принимает сообщения во время работы)",
    tools_default: "Как в моих настройках",
    saved: "Сохранено: следующие ходы этого чата используют это.",
    why: "Почему?",
    why_hide: "Скрыть разбор",
    why_title: "Почему агент так сделал",
    trace_none: "Для этого ответа ход агента не записан.",
    trace_turn: "{agent}-агент, {model}: {status}, {ms} мс, токенов: {tokens}",
    trace_prompt: "Отправлено модели (сообщений: {n})",
    trace_step: "{node}: {summary} ({ms} мс)",
    trace_cut: "(обрезано)",
    trace_system: "системный промпт (символов: {n})",
    attach: "Прикрепить файлы",
    attach_button: "Файлы…",
    kind_image: "изображение",
    kind_text: "текст",
    kind_file: "файл",
    attach_path: "Прикрепить по пути",
    path_placeholder: "Файл в ваших папках, например ~/Documents/report.pdf",
    add: "Добавить",
    remove_attachment: "Убрать {name}",
    uploading: "Загружаю {name}…",
    attachments_while_running: "Файлы отправляются с новым сообщением: дождитесь, пока агент закончит, или остановите его.",
  },
});

/** An attachment as a chip: its name and, once the daemon has looked at it, its kind.
 *  @param {{path: string, name: string, kind?: string}} item @param {...HTMLElement} extra */
const attachmentChip = (item, ...extra) =>
  h("span.attachment", { title: item.path, dataset: { attachment: item.path, kind: item.kind || "" } },
    h("span.name", {}, item.name),
    item.kind ? h("span.kind", {}, t(item.kind === "image" ? "kind_image" : item.kind === "text" ? "kind_text" : "kind_file")) : null,
    ...extra);

/** A message bubble: the person's text as typed (with the files they attached), an answer as
 *  Markdown.
 *  @param {{id: string, role: string, content: string, attachments?: Attachment[]}} message */
function bubble(message) {
  const element = h("div.message." + message.role, { dataset: { message: message.id } });
  if (message.role === "assistant") {
    element.classList.add("markdown");
    element.append(renderMarkdown(message.content));
  } else {
    element.append(visible(message.content));
  }
  if (message.attachments?.length) {
    element.append(h("div.attachment-list", {}, message.attachments.map((attachment) => attachmentChip(attachment))));
  }
  return element;
}

/** One message of a trace: its role, its text, the tools it asked for.
 *  @param {TraceMessage} message */
function traceMessage(message) {
  const calls = message.toolCalls.map((call) => h("div.trace-call", {}, `→ ${call.name} ${preview(call.arguments)}`));
  const who = message.role === "tool" ? `tool ${message.tool ?? ""}${message.isError ? " ✗" : ""}` : message.role;
  const text = message.text + (message.truncated ? " " + t("trace_cut") : "");
  // The system prompt is long and the same every time: folded, like a prompt.
  if (message.role === "system") {
    return h("details.trace-message", { dataset: { role: message.role } }, h("summary", {}, t("trace_system", { n: message.text.length })), text);
  }
  return h("div.trace-message", { dataset: { role: message.role } }, h("b", {}, who + ": "), text, ...calls);
}

/** "Why did it do that": the execution's turns and graph steps, each model request with what
 *  it was sent and what it answered, tool results and timings, from
 *  `GET /v1/chats/{chatId}/executions/{executionId}/trace`.
 *  @param {ExecutionTrace} trace */
function renderTrace(trace) {
  const panel = h("div.trace", {}, h("h3", {}, t("why_title")));
  if (!trace.turns.length) panel.append(h("p.meta", {}, t("trace_none")));
  for (const turn of trace.turns) {
    panel.append(h("p.meta.trace-turn", {}, t("trace_turn", {
      agent: turn.agent, model: turn.model, status: turn.status,
      ms: turn.elapsedMs ?? "?", tokens: turn.usage?.totalTokens ?? "?",
    })));
    const steps = h("ol.trace-steps");
    for (const step of turn.steps) {
      const item = h("li.trace-step." + step.kind, { dataset: { kind: step.kind } },
        h("div", {}, t("trace_step", { node: step.node, summary: step.summary, ms: step.elapsedMs })));
      if (step.prompt.length) {
        item.append(h("details.trace-prompt", {}, h("summary", {}, t("trace_prompt", { n: step.prompt.length })),
          ...step.prompt.map(traceMessage)));
      }
      item.append(...step.added.map(traceMessage));
      steps.append(item);
    }
    panel.append(steps);
  }
  return panel;
}

export async function chatPage(main, [selected]) {
  const state = { query: "", archived: false, running: /** @type {string | null} */ (null) };
  const chatList = h("div.chat-list");
  const search = h("input#chat-search", { type: "search", placeholder: t("search"), "aria-label": t("search") });
  const showArchived = h("input#show-archived", { type: "checkbox" });
  const head = h("div.chat-head");
  const options = h("div.chat-options");
  const messages = h("div.messages");
  const reviews = h("div.chat-reviews#chat-reviews");
  const input = h("textarea#chat-input", { placeholder: t("placeholder") });
  const notice = h("p.meta#chat-notice");
  // Disabled until the page has what sending needs: a click before would submit the form
  // natively, reload the page and lose what was typed.
  const send = h("button.primary#chat-send", { type: "submit", disabled: true }, t("send"));
  const stop = h("button.danger#chat-stop", { type: "button", hidden: true }, t("stop"));
  // Files for the next message: uploaded into the chat's folder as they are picked, or named
  // by a path inside the roots; sent by path with the message.
  const files = h("input#chat-files", { type: "file", multiple: true, hidden: true });
  const attach = h("button#chat-attach", { type: "button", title: t("attach"), "aria-label": t("attach"), onclick: () => files.click() }, t("attach_button"));
  const pathField = h("input#chat-attach-path-input", { type: "text", placeholder: t("path_placeholder"), "aria-label": t("attach_path") });
  const pathForm = h("span.attach-path#chat-attach-path-form", { hidden: true }, pathField,
    h("button#chat-attach-path-add", { type: "button", onclick: () => addPath() }, t("add")));
  const attachPath = h("button.link#chat-attach-path", { type: "button", onclick: () => { pathForm.hidden = !pathForm.hidden; if (!pathForm.hidden) pathField.focus(); } }, t("attach_path"));
  const attachedList = h("div.attachment-list.pending#chat-attachments");
  /** @type {{path: string, name: string, kind?: string}[]} */
  let attached = [];
  const renderPending = () => {
    attachedList.replaceChildren(...attached.map((item, index) => attachmentChip(item,
      h("button.remove", { type: "button", title: t("remove_attachment", { name: item.name }), "aria-label": t("remove_attachment", { name: item.name }), onclick: () => { attached.splice(index, 1); renderPending(); } }, "×"))));
  };
  const addPath = () => {
    const path = pathField.value.trim();
    if (!path) return;
    if (!attached.some((item) => item.path === path)) attached.push({ path, name: path.split("/").pop() || path });
    pathField.value = "";
    pathForm.hidden = true;
    renderPending();
  };
  pathField.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { event.preventDefault(); addPath(); }
  });
  // Push-to-talk beside Send, and this chat's spoken answers (voice.js).
  const voice = pushToTalk({ input, send: () => form.requestSubmit(), say: (text, error) => say(text, error) });
  const form = h("form.compose", {}, attach, files, input, voice.mic, voice.meter, send, stop);
  /** Sends the box's text once the chat is loaded (set below). @type {(() => Promise<void>) | null} */
  let submit = null;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (submit) submit();
  });
  // Enter sends, as in every chat app; Shift+Enter starts a new line; Enter that ends an input
  // method's composition (Japanese, Chinese...) only ends the composition. Listening from the
  // start: Enter pressed while the chat still loads sends once it has loaded (rather than
  // putting a newline in the box, as a textarea would with no one listening yet).
  let sendWhenReady = false;
  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    if (!submit) sendWhenReady = true;
    else if (!send.disabled) form.requestSubmit();
  });
  main.append(h("h1", {}, t("title")), h("div.chat", {},
    h("div.chat-side", {},
      h("button#new-chat", { onclick: () => newChat() }, t("new_chat")),
      search,
      h("label.check", {}, showArchived, " ", t("show_archived")),
      chatList),
    h("div.chat-main", {}, head, options, messages, reviews, attachedList, form, h("div.attach-row", {}, attachPath, pathForm), notice)));

  const say = (text, error = false) => { notice.textContent = visible(text); notice.className = error ? "error" : "meta"; };
  /** Sending found no usable model: what is missing, and the way to the setup. */
  const sayNoModel = () => {
    notice.className = "error no-model";
    notice.replaceChildren(t("no_model"), " ", h("a#chat-setup-link", { href: "#/setup" }, t("setup_model")));
  };
  const attempt = async (step) => {
    try { await step(); } catch (error) { say(error.message, true); }
  };

  const newChat = () => attempt(async () => {
    const { chat } = /** @type {CreateChatResponse} */ (await api("POST", "/v1/chats", { title: t("new_title", { when: new Date().toLocaleString() }) }));
    location.hash = `#/chat/${chat.id}`;
  });
  /** @param {Chat} item */
  const label = (item) => item.title || t("untitled", { id: item.id.slice(0, 8) });
  const listChats = async () => {
    const params = new URLSearchParams({ limit: "100" });
    if (state.archived) params.set("includeArchived", "true");
    if (state.query.trim()) params.set("q", state.query.trim());
    const { items } = /** @type {ChatList} */ (await api("GET", `/v1/chats?${params}`));
    chatList.replaceChildren(...items.map((item) =>
      h("button" + (item.id === selected ? ".active" : ""), { dataset: { chat: item.id }, onclick: () => { location.hash = `#/chat/${item.id}`; } },
        label(item), item.archived ? h("span.tag", {}, t("archived")) : null)));
    if (!items.length) chatList.append(h("p.empty", {}, state.query.trim() ? t("no_match") : t("no_chats")));
    return items;
  };
  let searching = 0;
  search.addEventListener("input", () => {
    state.query = search.value;
    clearTimeout(searching);
    searching = window.setTimeout(() => attempt(listChats), 200);
  });
  showArchived.addEventListener("change", () => { state.archived = showArchived.checked; attempt(listChats); });

  const items = await listChats();
  if (!selected && items.length) selected = items[0].id;
  if (!selected) { messages.append(h("p.empty", {}, t("start"))); form.hidden = true; return () => voice.dispose(); }
  // The list just read has the chat unless it is archived (the list hides those by default).
  /** @type {Chat} */
  let chat = items.find((item) => item.id === selected)
    ?? (await api("GET", "/v1/chats?limit=100&includeArchived=true")).items.find((item) => item.id === selected)
    ?? { id: selected, title: null, archived: false, createdAt: "", updatedAt: "", lastMessagePreview: null };

  // ----- the chat's header: title, rename, archive, delete -----
  const renderHead = () => {
    const title = h("h2#chat-title", {}, label(chat));
    const rename = h("button#chat-rename", { type: "button", onclick: () => editTitle() }, t("rename"));
    const archive = h("button#chat-archive", { type: "button", onclick: () => attempt(async () => {
      chat = await api("POST", `/v1/chats/${chat.id}/${chat.archived ? "unarchive" : "archive"}`);
      renderHead();
      await listChats();
    }) }, chat.archived ? t("unarchive") : t("archive"));
    const remove = h("button.danger#chat-delete", { type: "button", onclick: () => confirmDelete() }, t("delete"));
    head.replaceChildren(title, h("span.spacer"), rename, archive, remove);
  };
  const editTitle = () => {
    const field = h("input#chat-title-input", { value: chat.title || "", "aria-label": t("rename") });
    const editor = h("form.inline", {}, field, h("button.primary", { type: "submit" }, t("save")),
      h("button", { type: "button", onclick: renderHead }, t("cancel")));
    editor.addEventListener("submit", (event) => {
      event.preventDefault();
      attempt(async () => {
        chat = await api("PATCH", `/v1/chats/${chat.id}/title`, { title: field.value });
        renderHead();
        await listChats();
      });
    });
    head.replaceChildren(editor);
    field.focus();
  };
  const confirmDelete = () => {
    head.replaceChildren(h("div.confirm#chat-delete-ask", {},
      h("p", {}, t("delete_confirm")),
      h("button.danger#chat-delete-confirm", { type: "button", onclick: () => attempt(async () => {
        await api("DELETE", `/v1/chats/${chat.id}`);
        location.hash = "#/chat";
      }) }, t("delete_yes")),
      h("button#chat-delete-keep", { type: "button", onclick: renderHead }, t("keep"))));
  };
  renderHead();
  await chatOptions(options, chat.id, say, voice);
  options.append(reviewModeSwitch({ chatId: chat.id }, reviewText("review_mode"), say));
  // The chat's open reviews (a turn in review mode that staged writes ends with one).
  const showReviews = () => attempt(async () => {
    const open = (await pendingReviews()).filter((review) => review.chatId === chat.id);
    reviews.replaceChildren(...open.map((review) => reviewPanel(review)));
  });
  showReviews();

  // ----- running state: Stop, and the box that adds to a running turn -----
  const setRunning = (executionId) => {
    state.running = executionId;
    stop.hidden = !executionId;
    stop.disabled = false;
    stop.textContent = t("stop");
    input.placeholder = executionId ? t("placeholder_busy") : t("placeholder");
  };
  stop.addEventListener("click", () => attempt(async () => {
    stop.disabled = true;
    stop.textContent = t("stopping");
    await api("POST", `/v1/chats/${chat.id}/cancel-active`);
  }));

  // ----- messages, the streamed answer, tool calls and approvals -----
  // The answer being streamed: its element (keyed by the answer's message id) and one span
  // per model request, so a discarded request's text can be removed.
  let streaming = null;
  /** @param {{id: string, role: string, content: string, metadata?: Record<string, string>, attachments?: Attachment[]}} message */
  const addMessage = (message) => {
    if (messages.querySelector(`[data-message="${message.id}"]`)) return;
    messages.append(bubble(message));
    const executionId = message.metadata?.executionId;
    if (message.role === "assistant" && executionId) messages.append(whyButton(executionId));
  };
  /** "Why?" under an answer: shows (and hides) its execution's trace. @param {string} executionId */
  const whyButton = (executionId) => {
    const box = h("div.why");
    const button = h("button.link", { type: "button", dataset: { why: executionId } }, t("why"));
    button.addEventListener("click", () => attempt(async () => {
      const shown = box.querySelector(".trace");
      if (shown) { shown.remove(); button.textContent = t("why"); return; }
      const trace = /** @type {ExecutionTrace} */ (await api("GET", `/v1/chats/${selected}/executions/${executionId}/trace`));
      box.append(renderTrace(trace));
      button.textContent = t("why_hide");
    }));
    box.append(button);
    offerTurnUndo(executionId, box);
    return box;
  };
  /** A turn's recorded changes (`GET /v1/history?execution_id=`): read once while the page
   *  loads (its answer's Undo and its tool lines' share the answer), again after any undo.
   *  @type {Map<string, Promise<import("./types.js").HistoryChange[]>>} */
  const loadedChanges = new Map();
  /** @param {string} executionId @param {boolean} [again] */
  const turnChanges = (executionId, again = false) => {
    const known = loadedChanges.get(executionId);
    if (known && !again) return known;
    const read = api("GET", `/v1/history?execution_id=${encodeURIComponent(executionId)}&limit=500`)
      .then((/** @type {import("./types.js").HistoryList} */ list) => list.changes);
    loadedChanges.set(executionId, read);
    return read;
  };
  /** "Undo this turn" under an answer whose turn changed files that can still be put back.
   *  Checked again after any undo (`again`). @param {string} executionId @param {HTMLElement} box @param {boolean} [again] */
  const offerTurnUndo = async (executionId, box, again = false) => {
    const found = /** @type {HTMLElement | null} */ (box.querySelector(".turn-undo"));
    const holder = found ?? h("span.turn-undo");
    if (!found) { box.append(holder); turnUndos.set(executionId, { box, holder }); }
    let undoable;
    try {
      undoable = (await turnChanges(executionId, again)).some((change) => change.status === "done");
    } catch (error) { console.warn(error); return; }
    // Only the button goes: its panel may be saying what the undo just did.
    if (!undoable) { holder.querySelector("button")?.remove(); return; }
    if (holder.querySelector("button")) return;
    const panel = h("div.undo-panel");
    holder.replaceChildren(" ", undoButton({
      label: undoText("undo_turn"), title: undoText("undo_turn_title"), selection: { type: "turn", execution_id: executionId },
      panel, dataset: { undoTurn: executionId }, done: () => holder.querySelector("button")?.remove(),
    }), panel);
  };
  /** The answers' turn undo holders, by execution. @type {Map<string, {box: HTMLElement, holder: HTMLElement}>} */
  const turnUndos = new Map();
  // The tool lines (tool-lines.js): a new live one goes above the answer being streamed.
  const tools = toolLines({ chatId: selected, messages, before: () => streaming?.node ?? null, attempt });

  const shownMessages = 100;
  const { items: history } = /** @type {MessageList} */ (await api("GET", `/v1/chats/${selected}/messages?limit=${shownMessages}`));
  history.forEach(addMessage);
  // The tool lines of the turns shown, approved or denied, back in their place.
  await tools.replay(history, history.length < shownMessages, (executionId) => turnChanges(executionId));
  const { items: turns } = /** @type {TurnList} */ (await api("GET", "/v1/turns"));
  setRunning(turns.find((turn) => turn.execution.chatId === selected)?.execution.id ?? null);
  // Approvals of this chat's turn still waiting, asked before the page opened.
  const pending = /** @type {import("./types.js").ApprovalList} */ (await api("GET", "/v1/approvals?status=pending&limit=500"));
  tools.pending(pending.items.filter(({ requester }) => requester.kind === "chat" && requester.chat_id === selected));

  /** @param {ChatFrame & {kind: "event"}} frame */
  const apply = (frame) => {
    const { type, payload } = frame;
    switch (type) {
      case "message.delta": {
        if (!streaming || streaming.id !== payload.messageId) {
          streaming?.node.remove();
          streaming = { id: payload.messageId, node: h("div.message.assistant.streaming", { dataset: { streaming: payload.messageId } }), attempts: new Map() };
          messages.append(streaming.node);
        }
        let span = streaming.attempts.get(payload.attempt);
        if (!span) { span = h("span"); streaming.attempts.set(payload.attempt, span); streaming.node.append(span); }
        span.textContent += visible(payload.delta || "");
        break;
      }
      case "message.discarded":
        if (streaming && streaming.id === payload.messageId) { streaming.attempts.get(payload.attempt)?.remove(); streaming.attempts.delete(payload.attempt); }
        break;
      case "message.created":
        // The stored answer has the id the deltas named: it replaces the streamed text.
        if (payload.role === "assistant") { streaming?.node.remove(); streaming = null; voice.speak(payload.content); }
        addMessage({ id: payload.messageId, role: payload.role, content: payload.content, attachments: payload.attachments, metadata: frame.executionId ? { executionId: frame.executionId } : {} });
        break;
      case "execution.started": setRunning(frame.executionId ?? payload.executionId ?? null); break;
      case "execution.failed":
        say(payload.errorMessage || t("failed"), true);
        if (frame.executionId === state.running) setRunning(null);
        break;
      case "execution.cancelled":
        streaming?.node.remove(); streaming = null;
        say(t("cancelled"));
        if (frame.executionId === state.running) setRunning(null);
        break;
      case "execution.finished":
        if (frame.executionId === state.running) setRunning(null);
        break;
      default:
        tools.live(frame);
    }
  };
  const stopHistory = onRuntimeEvent((event) => {
    if (event?.type === "review.opened" && event.chat_id === selected) { showReviews(); return; }
    if (event?.type === "history.undone") {
      tools.undone();
      for (const [executionId, { box, holder }] of turnUndos) if (holder.querySelector("button")) offerTurnUndo(executionId, box, true);
      return;
    }
    if (event?.type === "history.change.recorded" && event.chat_id === selected && !event.undoes) tools.changeRecorded(event.call_id);
  });
  // Live only: the history above came from the API; the all-chats stream brings what follows.
  const stopStream = follow(() => "/v1/turns/ws", (/** @type {ChatFrame} */ frame) => {
    if (frame.kind === "event" && frame.chatId === selected) apply(frame);
  });

  files.addEventListener("change", () => attempt(async () => {
    const picked = [...(files.files || [])];
    files.value = "";
    attach.disabled = true;
    try {
      for (const file of picked) {
        say(t("uploading", { name: file.name }));
        const saved = /** @type {Attachment} */ (await api("POST", `/v1/chats/${selected}/attachments?name=${encodeURIComponent(file.name)}`, file));
        attached.push({ path: saved.path, name: saved.name, kind: saved.kind });
        renderPending();
      }
      say("");
    } finally {
      attach.disabled = false;
    }
  }));

  submit = async () => {
    const content = input.value.trim();
    if (!content && !attached.length) return;
    if (attached.length && state.running) { say(t("attachments_while_running"), true); return; }
    send.disabled = true;
    say("");
    try {
      const body = { content, clientMessageId: crypto.randomUUID(), attachments: attached.map((item) => item.path) };
      const response = /** @type {ChatInputResponse} */ (await api("POST", `/v1/chats/${selected}/input`, body));
      addMessage(response.message);
      input.value = "";
      attached = [];
      renderPending();
      if (response.delivery === "turn") setRunning(response.execution.id);
      else say(response.delivery === "steered" ? t("steered") : t("queued"));
    } catch (error) {
      if (error.code === "onboarding_requires_model_access") sayNoModel();
      else say(error.message, true);
    } finally {
      send.disabled = false;
    }
  };
  send.disabled = false;
  if (sendWhenReady) { sendWhenReady = false; form.requestSubmit(); }
  voice.ready();
  return () => { stopStream(); stopHistory(); clearTimeout(searching); voice.dispose(); };
}

/** The chat's own model, agent and tools: each change is saved at once (`PUT .../settings`)
 *  and used by the chat's next turns. The tools panel shows what the next turn really offers
 *  (`GET /v1/chats/{id}/tools`), grouped: Souz's own tools (by group, each a switch), catalog
 *  tools (each a switch) and the MCP servers' tools (set per server, on the Servers page).
 *  Spoken answers are a switch there too (voice.js plays them).
 *  @param {HTMLElement} box @param {string} chatId @param {(text: string, error?: boolean) => void} say
 *  @param {import("./voice.js").PushToTalk} voice */
async function chatOptions(box, chatId, say, voice) {
  const [boot, current, voiceSettings] = await Promise.all([
    /** @type {Promise<Bootstrap>} */ (api("GET", "/v1/bootstrap")),
    /** @type {Promise<ChatSettings>} */ (api("GET", `/v1/chats/${chatId}/settings`)),
    voice.settings(),
  ]);
  /** @type {ChatSettings} */
  let stored = current;
  voice.setSpoken(Boolean(stored.spokenAnswers));
  const model = h("select#chat-model", { "aria-label": t("model") },
    h("option", { value: "" }, t("default_model", { model: boot.settings.defaultModel ? modelName(boot.settings.defaultModel) : "—" })),
    boot.capabilities.models.map(({ provider, model: name }) => h("option", { value: `${provider}/${name}` }, modelName(provider, name))));
  // A stored model no longer offered stays shown (and selected) rather than silently changing.
  if (stored.model && ![...model.options].some((option) => option.value === stored.model)) model.append(h("option", { value: stored.model }, modelName(stored.model)));
  model.value = stored.model ?? "";
  const agent = h("select#chat-agent", { "aria-label": t("agent") },
    h("option", { value: "" }, t("default_agent")),
    h("option", { value: "graph" }, t("agent_graph")),
    h("option", { value: "skills" }, t("agent_skills")));
  agent.value = stored.agent ?? "";
  const userTools = new Set(boot.capabilities.tools.filter((tool) => tool.enabled).map((tool) => tool.name));
  const checks = boot.capabilities.tools.map((tool) => h("label.check", { dataset: { tool: tool.name } },
    h("input", { type: "checkbox", value: tool.name, dataset: { catalog: tool.name }, checked: (stored.enabledTools ? stored.enabledTools.includes(tool.name) : userTools.has(tool.name)) }), " ", tool.name));
  const summary = h("summary");
  const reset = h("button#chat-tools-default", { type: "button" }, t("tools_default"));
  const core = h("div.offered-core.tool-checks");
  const servers = h("div.offered-servers");
  const tools = h("details.chat-tools#chat-offered", {}, summary,
    h("h4", {}, t("offered_core")), core,
    h("h4", {}, t("offered_catalog")), h("div.tool-checks.offered-catalog", {}, checks), reset,
    h("h4", {}, t("offered_servers")), servers);
  /** Shows what the chat's next turn offers, as the daemon computes it. */
  const refresh = async () => {
    const offered = /** @type {ChatTools} */ (await api("GET", `/v1/chats/${chatId}/tools`));
    summary.textContent = t("tools", { n: offered.core.length + offered.catalog.length + offered.external.length });
    core.replaceChildren(...(offered.coreGroups ?? []).map((group) => h("label.check", { dataset: { coreGroup: group.group } },
      h("input", { type: "checkbox", value: group.group, dataset: { core: group.group }, checked: group.enabled, disabled: !group.tools.length }),
      " ", t("core_" + group.group), " ",
      h("span.meta", {}, group.tools.length ? group.tools.join(", ") : t("core_none")))));
    const catalog = new Set(offered.catalog);
    for (const label of checks) {
      const input = label.querySelector("input");
      label.querySelector(".meta")?.remove();
      // Enabled for the chat but refused by a rule: not what the turn offers, and said so.
      if (input?.checked && !catalog.has(input.value)) label.append(h("span.meta", {}, " " + t("not_offered")));
    }
    servers.replaceChildren(
      offered.external.length ? h("ul.offered-server-tools", {}, offered.external.map((name) => h("li", {}, name))) : h("p.meta", {}, t("servers_none")),
      h("p.meta", {}, t("servers_note")));
  };
  /** @param {ChatSettings} next */
  const save = async (next) => {
    try {
      stored = /** @type {ChatSettings} */ (await api("PUT", `/v1/chats/${chatId}/settings`, next));
      say(t("saved"));
    } catch (error) {
      say(error.message, true);
      model.value = stored.model ?? "";
      agent.value = stored.agent ?? "";
    }
    await refresh().catch((error) => say(error.message, true));
  };
  model.addEventListener("change", () => save({ ...stored, model: model.value || null }));
  agent.addEventListener("change", () => save({ ...stored, agent: agent.value || null }));
  core.addEventListener("change", () => {
    const off = [...core.querySelectorAll("input")].filter((input) => !input.checked && !input.disabled).map((input) => input.value);
    save({ ...stored, disabledCoreTools: off });
  });
  checks.forEach((label) => label.addEventListener("change", () => {
    const enabled = checks.map((label) => label.querySelector("input")).filter((input) => input?.checked).map((input) => input?.value ?? "");
    save({ ...stored, enabledTools: enabled });
  }));
  reset.addEventListener("click", async () => {
    for (const label of checks) { const input = label.querySelector("input"); if (input) input.checked = userTools.has(input.value); }
    await save({ ...stored, enabledTools: null });
  });
  await refresh();
  const spoken = spokenAnswersSwitch(Boolean(stored.spokenAnswers), (on) => { voice.setSpoken(on); save({ ...stored, spokenAnswers: on }); }, voiceSettings);
  box.replaceChildren(h("label", {}, t("model"), " ", model), h("label", {}, t("agent"), " ", agent), spoken, tools);
}
