// @ts-check
// Servers: the external MCP servers of `[mcp.servers.<name>]` — where each stands (connected,
// tools in use, the last error), a test that connects and lists its tools, turning one on or
// off, removing it, and a form that adds or edits one (a program with arguments, or a
// streamable HTTP URL). Every change is written to config.toml by the daemon, validated like
// any settings edit (a problem comes back with its line and column, nothing is written), and
// applies at once: the daemon stops, starts or replaces the server (a server says "restart to
// apply" only for the moment that takes).

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { h, visible } from "./dom.js";
import { problemItems } from "./settings.js";

/** @typedef {import("./types.js").McpServerList} McpServerList */
/** @typedef {import("./types.js").McpServerStatus} McpServerStatus */
/** @typedef {import("./types.js").McpServerTest} McpServerTest */
/** @typedef {import("./types.js").ConfigSaved} ConfigSaved */
/** @typedef {import("./types.js").ConfigProblem} ConfigProblem */

const t = strings({
  en: {
    title: "MCP servers",
    intro: "External MCP servers whose tools Souz's agents (and your MCP clients through Souz) call, every call through the approval queue.",
    none: "No MCP server is configured yet.",
    name: "Name", transport: "Transport", state: "State", tools: "Tools", actions: "",
    connected: "connected", not_connected: "not connected", disabled: "disabled", on: "enabled",
    restart: "applying…",
    test: "Test", edit: "Edit", remove: "Remove", enable: "Enable", disable: "Disable",
    tested_ok: "{name}: ok, {n} tool(s).", tested_failed: "{name}: failed: {error}",
    add_title: "Add a server", edit_title: "Edit {name}",
    kind_program: "Program (stdio)", kind_url: "URL (streamable HTTP)",
    command: "Command", args: "Arguments (one per line)", url: "URL",
    env: "Environment (NAME=VALUE, one per line)", expose: "Show its tools to MCP clients at /mcp", enabled: "Enabled",
    save: "Save", cancel: "Cancel",
    saved: "Saved [mcp.servers.{name}] to config.toml.", removed: "Removed [mcp.servers.{name}].",
    toggled: "Saved: {name} is {state}.",
    restart_note: "Restart Souz to apply.",
    problems: "Not saved: the daemon found problems.",
    bad_env: "`{pair}` is not NAME=VALUE.",
    confirm_remove: "Remove {name} from config.toml?",
  },
  ru: {
    title: "MCP-серверы",
    intro: "Внешние MCP-серверы, чьи инструменты вызывают агенты Souz (и ваши MCP-клиенты через Souz); каждый вызов проходит через очередь подтверждений.",
    none: "MCP-серверы ещё не настроены.",
    name: "Имя", transport: "Транспорт", state: "Состояние", tools: "Инструменты", actions: "",
    connected: "подключён", not_connected: "не подключён", disabled: "выключен", on: "включён",
    restart: "применяется…",
    test: "Проверить", edit: "Изменить", remove: "Удалить", enable: "Включить", disable: "Выключить",
    tested_ok: "{name}: работает, инструментов: {n}.", tested_failed: "{name}: ошибка: {error}",
    add_title: "Добавить сервер", edit_title: "Изменить {name}",
    kind_program: "Программа (stdio)", kind_url: "URL (streamable HTTP)",
    command: "Команда", args: "Аргументы (по одному в строке)", url: "URL",
    env: "Окружение (ИМЯ=ЗНАЧЕНИЕ, по одному в строке)", expose: "Показывать его инструменты MCP-клиентам на /mcp", enabled: "Включён",
    save: "Сохранить", cancel: "Отмена",
    saved: "[mcp.servers.{name}] сохранён в config.toml.", removed: "[mcp.servers.{name}] удалён.",
    toggled: "Сохранено: {name} — {state}.",
    restart_note: "Перезапустите Souz, чтобы применить.",
    problems: "Не сохранено: демон нашёл ошибки.",
    bad_env: "`{pair}` — не ИМЯ=ЗНАЧЕНИЕ.",
    confirm_remove: "Удалить {name} из config.toml?",
  },
});

/** The Servers page. @param {HTMLElement} main */
export async function serversPage(main) {
  const note = h("div#servers-note");
  const table = h("table#servers");
  const form = h("div#server-form");
  /** @param {string} text @param {ConfigSaved | null} [saved] */
  const say = (text, saved) => {
    const restart = !saved || saved.restartRequired.length > 0;
    note.replaceChildren(h("div.card", {}, text, restart ? " " + t("restart_note") : ""));
  };
  /** @param {unknown} error */
  const fail = (error) => showError(note, error);
  const show = async () => {
    /** @type {McpServerList} */
    const list = await api("GET", "/v1/mcp/servers");
    table.replaceChildren(h("tr", {}, ...["name", "transport", "state", "tools", "actions"].map((key) => h("th", {}, t(key)))),
      ...list.servers.map((server) => row(server)));
    if (!list.servers.length) table.append(h("tr", {}, h("td.meta", { colspan: "5" }, t("none"))));
  };
  /** @param {McpServerStatus} server */
  const row = (server) => {
    const state = !server.enabled ? t("disabled") : server.connected ? t("connected") : t("not_connected");
    return h("tr", { dataset: { server: server.name } },
      h("td", {}, server.name),
      h("td", {}, server.transport),
      h("td.state", {}, state,
        server.restart_required ? h("span.tag.restart", {}, t("restart")) : null,
        server.error ? h("div.meta.error", {}, server.error) : null),
      h("td.tools", {}, String(server.tools)),
      h("td", {},
        h("button.test", { onclick: () => act(async () => {
          /** @type {McpServerTest} */
          const test = await api("POST", `/v1/mcp/servers/${encodeURIComponent(server.name)}/test`, {});
          note.replaceChildren(h("div.card" + (test.ok ? "" : ".error"), {}, test.ok
            ? t("tested_ok", { name: test.name, n: test.tools })
            : t("tested_failed", { name: test.name, error: test.error || "" })));
        }) }, t("test")),
        h("button.edit", { onclick: () => editor(form, server, done) }, t("edit")),
        h("button.toggle", { onclick: () => act(async () => {
          const enabled = !server.enabled;
          /** @type {ConfigSaved} */
          const saved = await api("PUT", `/v1/mcp/servers/${encodeURIComponent(server.name)}/enabled`, { enabled });
          say(t("toggled", { name: server.name, state: enabled ? t("on") : t("disabled") }), saved);
        }) }, server.enabled ? t("disable") : t("enable")),
        h("button.remove", { onclick: () => act(async () => {
          if (!confirm(t("confirm_remove", { name: server.name }))) return;
          await api("DELETE", `/v1/mcp/servers/${encodeURIComponent(server.name)}`);
          say(t("removed", { name: server.name }));
        }) }, t("remove"))));
  };
  /** @param {() => Promise<void>} work */
  const act = async (work) => {
    try { await work(); } catch (error) { fail(error); }
    await show();
  };
  /** @param {string} name @param {ConfigSaved} saved */
  const done = async (name, saved) => {
    form.replaceChildren();
    say(t("saved", { name }), saved);
    await show();
  };
  main.append(h("h1", {}, t("title")), h("p.meta", {}, t("intro")), note, table,
    h("button.primary#server-add", { onclick: () => editor(form, null, done) }, t("add_title")), form);
  await show();
}

/** The add/edit form. The whole table is sent; keys the form does not show are kept.
 *  @param {HTMLElement} form @param {McpServerStatus | null} server
 *  @param {(name: string, saved: ConfigSaved) => Promise<void>} done */
function editor(form, server, done) {
  /** @type {Record<string, any>} */
  const settings = server ? { ...(/** @type {Record<string, any>} */ (server.settings) || {}) } : {};
  const result = h("div#server-form-result");
  const name = /** @type {HTMLInputElement} */ (h("input#server-name", { type: "text", value: server?.name || "", disabled: !!server }));
  const isUrl = !!settings.url;
  const kind = /** @type {HTMLSelectElement} */ (h("select#server-kind", {},
    h("option", { value: "program", selected: !isUrl }, t("kind_program")),
    h("option", { value: "url", selected: isUrl }, t("kind_url"))));
  const command = /** @type {HTMLInputElement} */ (h("input#server-command", { type: "text", value: settings.command || "" }));
  const args = /** @type {HTMLTextAreaElement} */ (h("textarea#server-args", { rows: 3 }));
  args.value = (settings.args || []).join("\n");
  const env = /** @type {HTMLTextAreaElement} */ (h("textarea#server-env", { rows: 2 }));
  env.value = Object.entries(settings.env || {}).map(([key, value]) => `${key}=${value}`).join("\n");
  const url = /** @type {HTMLInputElement} */ (h("input#server-url", { type: "url", value: settings.url || "" }));
  const expose = /** @type {HTMLInputElement} */ (h("input#server-expose", { type: "checkbox", checked: settings.expose_to_mcp_clients !== false }));
  const enabled = /** @type {HTMLInputElement} */ (h("input#server-enabled", { type: "checkbox", checked: settings.enabled !== false }));
  const program = h("div", {}, h("label", {}, t("command"), command), h("label", {}, t("args"), args), h("label", {}, t("env"), env));
  const remote = h("div", {}, h("label", {}, t("url"), url));
  const switchKind = () => { program.hidden = kind.value !== "program"; remote.hidden = kind.value !== "url"; };
  kind.addEventListener("change", switchKind);
  switchKind();
  const save = async () => {
    const next = { ...settings, enabled: enabled.checked, expose_to_mcp_clients: expose.checked };
    if (kind.value === "url") {
      Object.assign(next, { url: url.value.trim(), command: "", args: [], env: {} });
    } else {
      /** @type {Record<string, string>} */
      const variables = {};
      for (const line of env.value.split("\n").map((text) => text.trim()).filter(Boolean)) {
        const at = line.indexOf("=");
        if (at < 1) { result.replaceChildren(h("div.card.error", {}, t("bad_env", { pair: line }))); return; }
        variables[line.slice(0, at)] = line.slice(at + 1);
      }
      Object.assign(next, { url: "", command: command.value.trim(), args: args.value.split("\n").map((text) => text.trim()).filter(Boolean), env: variables });
    }
    try {
      /** @type {ConfigSaved} */
      const saved = await api("PUT", `/v1/mcp/servers/${encodeURIComponent(name.value.trim())}`, { settings: next });
      await done(name.value.trim(), saved);
    } catch (error) {
      showError(result, error);
    }
  };
  form.replaceChildren(h("div.card", {},
    h("h2", {}, server ? t("edit_title", { name: server.name }) : t("add_title")),
    h("label", {}, t("name"), name), kind, program, remote,
    h("label.row", {}, enabled, t("enabled")), h("label.row", {}, expose, t("expose")),
    h("div.row", {}, h("button.primary#server-save", { onclick: save }, t("save")),
      h("button", { onclick: () => form.replaceChildren() }, t("cancel"))),
    result));
}

/** A refused change: the problems with their positions, or the error's message.
 *  @param {HTMLElement} where @param {unknown} error */
function showError(where, error) {
  const failure = /** @type {import("./api.js").ApiError} */ (error);
  const body = /** @type {Partial<import("./types.js").ConfigRejected> | null} */ (failure?.body ?? null);
  const problems = body?.problems;
  if (!problems) {
    where.replaceChildren(h("div.card.error", {}, visible(failure?.message ?? String(error))));
    return;
  }
  where.replaceChildren(h("div.card", {}, h("strong.error", {}, t("problems")),
    h("ul.problems#server-problems", {}, problemItems(problems))));
}
