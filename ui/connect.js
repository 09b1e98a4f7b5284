// @ts-check
// Connect Claude: the exact Claude Code command (with a token of its own, made on request) with a
// copy button; for Claude Desktop, the change to claude_desktop_config.json shown as a diff
// before anything is written (a backup is kept; other servers are never removed); and which
// MCP clients used Souz recently and what they may do without asking.

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { diffView, h, time, visible } from "./pages.js";

/** @typedef {import("./types.js").ConnectStatus} ConnectStatus */
/** @typedef {import("./types.js").ClaudeCodeCommand} ClaudeCodeCommand */
/** @typedef {import("./types.js").DesktopConfigChange} DesktopConfigChange */
/** @typedef {import("./types.js").DesktopConfigApplied} DesktopConfigApplied */

const t = strings({
  en: {
    title: "Connect Claude",
    code_title: "Claude Code",
    code_note: "Run this command in a terminal. It carries a token for Claude Code only; making a new command revokes the previous one.",
    code_make: "Show the command",
    copy: "Copy",
    copied: "Copied.",
    copy_failed: "Select the command and copy it.",
    desktop_title: "Claude Desktop",
    desktop_note: "Souz adds itself to Claude Desktop's configuration ({path}). You see the change before it is made; the previous file is kept as a backup and other servers are left as they are. Restart Claude Desktop afterwards.",
    desktop_configured: "Claude Desktop already lists Souz.",
    desktop_show: "Show the change",
    desktop_apply: "Add Souz to Claude Desktop",
    desktop_nothing: "Nothing to change.",
    desktop_new_file: "The file does not exist yet; it will be created.",
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
    never: "never",
    only_rules: "what the rules allow",
  },
  ru: {
    title: "Подключить Claude",
    code_title: "Claude Code",
    code_note: "Выполните эту команду в терминале. В ней токен только для Claude Code; новая команда отзывает предыдущую.",
    code_make: "Показать команду",
    copy: "Копировать",
    copied: "Скопировано.",
    copy_failed: "Выделите команду и скопируйте её.",
    desktop_title: "Claude Desktop",
    desktop_note: "Souz добавит себя в настройки Claude Desktop ({path}). Изменение показывается до записи; предыдущий файл сохраняется как резервная копия, другие серверы не трогаются. Затем перезапустите Claude Desktop.",
    desktop_configured: "Souz уже есть в Claude Desktop.",
    desktop_show: "Показать изменение",
    desktop_apply: "Добавить Souz в Claude Desktop",
    desktop_nothing: "Менять нечего.",
    desktop_new_file: "Файла ещё нет; он будет создан.",
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
    never: "никогда",
    only_rules: "то, что разрешают правила",
  },
});

/** @param {HTMLElement} main */
export async function connectPage(main) {
  /** @type {ConnectStatus} */
  const status = await api("GET", "/v1/connect");
  const clients = h("div.card#connect-clients");
  const refresh = async () => showClients(clients, await api("GET", "/v1/connect"));
  main.append(h("h1", {}, t("title")), codeCard(refresh), desktopCard(status, refresh), clients);
  showClients(clients, status);
}

/** @param {() => Promise<void>} refresh */
function codeCard(refresh) {
  const command = /** @type {HTMLTextAreaElement} */ (h("textarea.command#code-command", { readOnly: true, rows: 3, spellcheck: false, hidden: true }));
  const note = h("span.meta#code-note");
  const copy = h("button#code-copy", {
    hidden: true,
    onclick: async () => {
      try { await navigator.clipboard.writeText(command.value); note.textContent = t("copied"); }
      catch { command.select(); note.textContent = t("copy_failed"); }
    },
  }, t("copy"));
  const make = h("button.primary#code-make", {
    onclick: async () => {
      try {
        /** @type {ClaudeCodeCommand} */
        const made = await api("POST", "/v1/connect/claude-code");
        command.value = made.command;
        command.hidden = false;
        copy.hidden = false;
        note.textContent = "";
        await refresh();
      } catch (error) {
        note.textContent = visible(error instanceof Error ? error.message : String(error));
      }
    },
  }, t("code_make"));
  return h("div.card#connect-code", {}, h("h2", {}, t("code_title")), h("p.meta", {}, t("code_note")),
    h("div.row", {}, make, copy, note), command);
}

/** @param {ConnectStatus} status @param {() => Promise<void>} refresh */
function desktopCard(status, refresh) {
  const body = h("div#desktop-change");
  const note = h("p#desktop-note");
  const show = h("button.primary#desktop-show", {
    onclick: async () => {
      note.className = "";
      note.textContent = "";
      try {
        /** @type {DesktopConfigChange} */
        const change = await api("GET", "/v1/connect/claude-desktop");
        renderChange(body, note, change, refresh);
      } catch (error) {
        note.className = "error";
        note.textContent = String(error instanceof Error ? error.message : error);
      }
    },
  }, t("desktop_show"));
  return h("div.card#connect-desktop", {}, h("h2", {}, t("desktop_title")),
    h("p.meta", {}, t("desktop_note", { path: status.desktopConfigPath })),
    status.desktopConfigured ? h("p.ok#desktop-configured", {}, t("desktop_configured")) : null,
    show, body, note);
}

/** @param {HTMLElement} body @param {HTMLElement} note @param {DesktopConfigChange} change
 *  @param {() => Promise<void>} refresh */
function renderChange(body, note, change, refresh) {
  if (!change.diff) { body.replaceChildren(h("p.meta", {}, t("desktop_nothing"))); return; }
  const apply = h("button.primary#desktop-apply", {
    onclick: async () => {
      try {
        /** @type {DesktopConfigApplied} */
        const applied = await api("POST", "/v1/connect/claude-desktop", { revision: change.revision });
        body.replaceChildren();
        note.className = "ok";
        note.textContent = applied.backup ? t("desktop_done", { backup: applied.backup }) : t("desktop_done_new");
        await refresh();
      } catch (error) {
        note.className = "error";
        note.textContent = String(error instanceof Error ? error.message : error);
      }
    },
  }, t("desktop_apply"));
  body.replaceChildren(
    change.exists ? "" : h("p.meta", {}, t("desktop_new_file")),
    Object.assign(diffView(change.diff), { id: "desktop-diff" }),
    apply);
}

/** @param {HTMLElement} card @param {ConnectStatus} status */
function showClients(card, status) {
  const rows = status.clients.map((client) => h("tr", { dataset: { client: client.name } },
    h("td", {}, client.name), h("td", {}, time(client.createdAt)),
    h("td", {}, client.lastCallAt ? time(client.lastCallAt) : t("never")), h("td", {}, String(client.calls)),
    h("td", {}, client.grants.length ? h("ul", {}, client.grants.map((grant) => h("li", {}, grant))) : h("span.meta", {}, t("only_rules")))));
  card.replaceChildren(h("h2", {}, t("clients_title")), h("p.meta", {}, t("clients_note")),
    rows.length
      ? h("table#connect-client-list", {}, h("tr", {}, h("th", {}, t("client")), h("th", {}, t("created")), h("th", {}, t("last")), h("th", {}, t("calls")), h("th", {}, t("may"))), rows)
      : h("p.meta", {}, t("clients_none")));
}
