// @ts-check
// Connect Claude: for Claude Code (~/.claude.json) and Claude Desktop (claude_desktop_config.json)
// the change shown as a diff before anything is written (a backup is kept; other servers are
// never removed; no token goes into either file: Souz keeps it in its own home); for Claude Code
// also the copy-paste command as a fallback (no token in it either; the older form with the
// token in a header is offered last, with a warning); and which MCP clients used Souz recently,
// what they may do without asking, and whether they may read your memory (a choice per client).

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { diffView, h, time, visible } from "./dom.js";

/** @typedef {import("./types.js").ConnectStatus} ConnectStatus */
/** @typedef {import("./types.js").ClaudeCodeCommand} ClaudeCodeCommand */
/** @typedef {import("./types.js").DesktopConfigChange} DesktopConfigChange */
/** @typedef {import("./types.js").DesktopConfigApplied} DesktopConfigApplied */

const t = strings({
  en: {
    title: "Connect Claude",
    code_title: "Claude Code",
    code_config_note: "Souz adds itself to Claude Code's configuration ({path}). You see the change before it is made; the previous file is kept as a backup and other settings are left as they are. No token goes into that file: Claude Code asks `souz mcp-headers` for it. Start a new Claude Code session afterwards.",
    code_configured: "Claude Code already lists Souz.",
    code_apply: "Add Souz to Claude Code",
    code_done: "Added. Previous file kept as {backup}. Start a new Claude Code session to connect.",
    code_done_new: "Added (a new file). Start a new Claude Code session to connect.",
    code_note: "Or run this command in a terminal. It holds no token (Claude Code gets it from `souz mcp-headers`); making a new command revokes the previous token.",
    code_make: "Show the command",
    code_header_summary: "Older Claude Code without headersHelper",
    code_header_note: "This form carries the token itself: it lands in your shell history and, while it runs, in the process list that other local users can read. Use it only if the command above does not work.",
    copy: "Copy",
    copied: "Copied.",
    copy_failed: "Select the command and copy it.",
    show: "Show the change",
    nothing: "Nothing to change.",
    new_file: "The file does not exist yet; it will be created.",
    desktop_title: "Claude Desktop",
    desktop_note: "Souz adds itself to Claude Desktop's configuration ({path}). You see the change before it is made; the previous file is kept as a backup and other servers are left as they are. Restart Claude Desktop afterwards.",
    desktop_configured: "Claude Desktop already lists Souz.",
    desktop_apply: "Add Souz to Claude Desktop",
    desktop_done: "Added. Previous file kept as {backup}. Restart Claude Desktop to connect.",
    desktop_done_new: "Added (a new file). Restart Claude Desktop to connect.",
    clients_title: "MCP clients",
    clients_note: "Each client has its own token. Calls that need approval are still asked; grants below let a client skip asking for what they cover.",
    clients_none: "No MCP client yet.",
    client: "Client",
    created: "Token made",
    last: "Last call (30 days)",
    calls: "Calls",
    may: "May do without asking",
    memory: "Reads your memory",
    memory_ask: "asks once",
    memory_allow: "allowed",
    memory_deny: "denied",
    never: "never",
    only_rules: "what the rules allow",
  },
  ru: {
    title: "Подключить Claude",
    code_title: "Claude Code",
    code_config_note: "Souz добавит себя в настройки Claude Code ({path}). Изменение показывается до записи; предыдущий файл сохраняется как резервная копия, остальные настройки не трогаются. Токена в этом файле не будет: Claude Code получает его у `souz mcp-headers`. Затем начните новый сеанс Claude Code.",
    code_configured: "Souz уже есть в Claude Code.",
    code_apply: "Добавить Souz в Claude Code",
    code_done: "Добавлено. Предыдущий файл сохранён как {backup}. Начните новый сеанс Claude Code.",
    code_done_new: "Добавлено (новый файл). Начните новый сеанс Claude Code.",
    code_note: "Или выполните эту команду в терминале. Токена в ней нет (Claude Code получает его у `souz mcp-headers`); новая команда отзывает предыдущий токен.",
    code_make: "Показать команду",
    code_header_summary: "Старый Claude Code без headersHelper",
    code_header_note: "В этой форме сам токен: он попадёт в историю оболочки и, пока команда выполняется, в список процессов, который видят другие локальные пользователи. Используйте её, только если команда выше не работает.",
    copy: "Копировать",
    copied: "Скопировано.",
    copy_failed: "Выделите команду и скопируйте её.",
    show: "Показать изменение",
    nothing: "Менять нечего.",
    new_file: "Файла ещё нет; он будет создан.",
    desktop_title: "Claude Desktop",
    desktop_note: "Souz добавит себя в настройки Claude Desktop ({path}). Изменение показывается до записи; предыдущий файл сохраняется как резервная копия, другие серверы не трогаются. Затем перезапустите Claude Desktop.",
    desktop_configured: "Souz уже есть в Claude Desktop.",
    desktop_apply: "Добавить Souz в Claude Desktop",
    desktop_done: "Добавлено. Предыдущий файл сохранён как {backup}. Перезапустите Claude Desktop.",
    desktop_done_new: "Добавлено (новый файл). Перезапустите Claude Desktop.",
    clients_title: "MCP-клиенты",
    clients_note: "У каждого клиента свой токен. Вызовы, требующие одобрения, по-прежнему спрашиваются; разрешения ниже позволяют клиенту не спрашивать то, что они покрывают.",
    clients_none: "MCP-клиентов пока нет.",
    client: "Клиент",
    created: "Токен создан",
    last: "Последний вызов (30 дней)",
    calls: "Вызовы",
    may: "Может без вопроса",
    memory: "Читает вашу память",
    memory_ask: "спросить один раз",
    memory_allow: "разрешено",
    memory_deny: "запрещено",
    never: "никогда",
    only_rules: "то, что разрешают правила",
  },
});

/** @param {HTMLElement} main */
export async function connectPage(main) {
  /** @type {ConnectStatus} */
  const status = await api("GET", "/v1/connect");
  const clients = h("div.card#connect-clients");
  const refresh = async () => showClients(clients, await api("GET", "/v1/connect"), refresh);
  main.append(h("h1", {}, t("title")), codeCard(status, refresh), desktopCard(status, refresh), clients);
  showClients(clients, status, refresh);
}

/** The parts of a card that adds Souz to a client's configuration file after showing the diff.
 *  @typedef {{ prefix: string, endpoint: string, apply: string, done: string, doneNew: string }} ConfigFile */

/** @param {ConnectStatus} status @param {() => Promise<void>} refresh */
function codeCard(status, refresh) {
  const file = configFile({ prefix: "code-config", endpoint: "/v1/connect/claude-code/config",
    apply: t("code_apply"), done: "code_done", doneNew: "code_done_new" }, refresh);
  const command = /** @type {HTMLTextAreaElement} */ (h("textarea.command#code-command", { readOnly: true, rows: 3, spellcheck: false, hidden: true }));
  const headerCommand = /** @type {HTMLTextAreaElement} */ (h("textarea.command#code-header-command", { readOnly: true, rows: 3, spellcheck: false }));
  const fallback = h("details#code-header", { hidden: true }, h("summary", {}, t("code_header_summary")),
    h("p.meta.warning", {}, t("code_header_note")), headerCommand);
  const note = h("span.meta#code-note");
  const copy = h("button#code-copy", {
    hidden: true,
    onclick: async () => {
      try { await navigator.clipboard.writeText(command.value); note.textContent = t("copied"); }
      catch { command.select(); note.textContent = t("copy_failed"); }
    },
  }, t("copy"));
  const make = h("button#code-make", {
    onclick: async () => {
      try {
        /** @type {ClaudeCodeCommand} */
        const made = await api("POST", "/v1/connect/claude-code");
        command.value = made.command;
        headerCommand.value = made.headerCommand;
        command.hidden = false;
        copy.hidden = false;
        fallback.hidden = false;
        note.textContent = "";
        await refresh();
      } catch (error) {
        note.textContent = visible(error instanceof Error ? error.message : String(error));
      }
    },
  }, t("code_make"));
  return h("div.card#connect-code", {}, h("h2", {}, t("code_title")),
    h("p.meta", {}, t("code_config_note", { path: status.codeConfigPath })),
    status.codeConfigured ? h("p.ok#code-configured", {}, t("code_configured")) : null,
    ...file,
    h("p.meta", {}, t("code_note")), h("div.row", {}, make, copy, note), command, fallback);
}

/** @param {ConnectStatus} status @param {() => Promise<void>} refresh */
function desktopCard(status, refresh) {
  const file = configFile({ prefix: "desktop", endpoint: "/v1/connect/claude-desktop",
    apply: t("desktop_apply"), done: "desktop_done", doneNew: "desktop_done_new" }, refresh);
  return h("div.card#connect-desktop", {}, h("h2", {}, t("desktop_title")),
    h("p.meta", {}, t("desktop_note", { path: status.desktopConfigPath })),
    status.desktopConfigured ? h("p.ok#desktop-configured", {}, t("desktop_configured")) : null,
    ...file);
}

/** The "Show the change" button, the diff with its apply button, and the note.
 *  @param {ConfigFile} file @param {() => Promise<void>} refresh @returns {HTMLElement[]} */
function configFile(file, refresh) {
  const body = h(`div#${file.prefix}-change`);
  const note = h(`p#${file.prefix}-note`);
  const show = h(`button.primary#${file.prefix}-show`, {
    onclick: async () => {
      note.className = "";
      note.textContent = "";
      try {
        /** @type {DesktopConfigChange} */
        const change = await api("GET", file.endpoint);
        renderChange(file, body, note, change, refresh);
      } catch (error) {
        note.className = "error";
        note.textContent = String(error instanceof Error ? error.message : error);
      }
    },
  }, t("show"));
  return [show, body, note];
}

/** @param {ConfigFile} file @param {HTMLElement} body @param {HTMLElement} note
 *  @param {DesktopConfigChange} change @param {() => Promise<void>} refresh */
function renderChange(file, body, note, change, refresh) {
  if (!change.diff) { body.replaceChildren(h("p.meta", {}, t("nothing"))); return; }
  const apply = h(`button.primary#${file.prefix}-apply`, {
    onclick: async () => {
      try {
        /** @type {DesktopConfigApplied} */
        const applied = await api("POST", file.endpoint, { revision: change.revision });
        body.replaceChildren();
        note.className = "ok";
        note.textContent = applied.backup ? t(file.done, { backup: applied.backup }) : t(file.doneNew);
        await refresh();
      } catch (error) {
        note.className = "error";
        note.textContent = String(error instanceof Error ? error.message : error);
      }
    },
  }, file.apply);
  body.replaceChildren(
    change.exists ? "" : h("p.meta", {}, t("new_file")),
    Object.assign(diffView(change.diff), { id: `${file.prefix}-diff` }),
    apply);
}

/** The per-client choice about reading your memory.
 *  @param {import("./types.js").ConnectedClient} client @param {() => Promise<void>} refresh */
function memoryChoice(client, refresh) {
  const options = ["ask", "allow", "deny"].map((access) =>
    h("option", { value: access, selected: client.memory === access }, t(`memory_${access}`)));
  const select = /** @type {HTMLSelectElement} */ (h("select.memory-access", {
    onchange: async () => {
      select.disabled = true;
      try {
        await api("PUT", `/v1/connect/clients/${encodeURIComponent(client.id)}/memory`, { access: select.value });
      } finally {
        await refresh();
      }
    },
  }, options));
  return select;
}

/** @param {HTMLElement} card @param {ConnectStatus} status @param {() => Promise<void>} refresh */
function showClients(card, status, refresh) {
  const rows = status.clients.map((client) => h("tr", { dataset: { client: client.name } },
    h("td", {}, client.name), h("td", {}, time(client.createdAt)),
    h("td", {}, client.lastCallAt ? time(client.lastCallAt) : t("never")), h("td", {}, String(client.calls)),
    h("td", {}, client.grants.length ? h("ul", {}, client.grants.map((grant) => h("li", {}, grant))) : h("span.meta", {}, t("only_rules"))),
    h("td", {}, memoryChoice(client, refresh))));
  card.replaceChildren(h("h2", {}, t("clients_title")), h("p.meta", {}, t("clients_note")),
    rows.length
      ? h("table#connect-client-list", {}, h("tr", {}, h("th", {}, t("client")), h("th", {}, t("created")), h("th", {}, t("last")), h("th", {}, t("calls")), h("th", {}, t("may")), h("th", {}, t("memory"))), rows)
      : h("p.meta", {}, t("clients_none")));
}
