// @ts-check
// Settings in tabs, the everyday ones first: Model & keys (the caller's provider keys, hints
// only: a key goes in, never out; ChatGPT sign-in; the web search key; the model fields; local
// models from models.js), Language (and Start at login inside the menu-bar app), Approvals (the
// gate's policy fields and the standing grants), Notifications, and Advanced: every other
// config.toml field as a form, and config.toml as raw TOML (validated by the daemon before
// anything is written; problems come back with line and column). Field docs are said in the
// interface language (config-docs.js).

import { api, tauri } from "./api.js";
import { voiceCards } from "./voice.js";
import { language, strings } from "./i18n.js";
import { h } from "./dom.js";
import { configDoc, configLabel } from "./config-docs.js";
import { providerName } from "./providers.js";

const t = strings({
  en: {
    restart: "Restart Souz",
    restarting: "Restarting…",
    not_back: "Souz did not come back; check its log.",
    test: "Test",
    key_works: "The {provider} key works (model {model}).",
    key_refused: "{provider} refused the check: {error}",
    no_answer: "no answer",
    run_setup: "Run the first-run setup again",
    form: "Form",
    raw: "config.toml",
    settings: "Settings",
    tab_model: "Model & keys",
    tab_language: "Language",
    tab_approvals: "Approvals",
    tab_notifications: "Notifications",
    tab_voice: "Voice",
    tab_advanced: "Advanced",
    model_fields: "Model",
    language_title: "Interface language",
    language_note: "The pages, the tray menu, notifications and the agents' answers follow it.",
    approvals_note: "What Souz may do without asking, per kind of tool; anything else waits for you in the Inbox. Rules for single tools or folders are edited in Advanced › config.toml.",
    notifications_note: "Shown by the Souz menu-bar app.",
    advanced_note: "Everything else in config.toml. Change it only if you know why.",
    app_title: "This computer",
    app_only: "Start at login and notifications are set in the Souz menu-bar app.",
    start_at_login: "Start Souz at login",
    api_key: "API key",
    provider: "Provider",
    key: "Key",
    source: "Source",
    stored_at: "stored {at}",
    environment: "environment",
    removed_key: "Removed the {provider} key.",
    remove: "Remove",
    no_keys: "No provider key yet: a chat needs one (or a local server).",
    paste_first: "Paste a key first.",
    stored_key: "Stored the {provider} key {hint}.",
    stored_key_short: "Stored the {provider} key.",
    store_key: "Store key",
    provider_keys: "Provider keys",
    chatgpt_sign_in: "Sign in with ChatGPT",
    chatgpt_note: "Use OpenAI's Codex models with your ChatGPT plan: no API key. Souz keeps the account's tokens encrypted on this computer and never touches other programs' sign-ins.",
    chatgpt_code: "Open {url}, sign in to ChatGPT and enter this code (valid until {time}). Never share it.",
    chatgpt_open: "Open the sign-in page",
    chatgpt_waiting: "Waiting for the code to be entered…",
    chatgpt_signed_in: "Signed in to ChatGPT (Codex) as {account}.",
    chatgpt_signed_in_plain: "Signed in to ChatGPT (Codex).",
    chatgpt_expired: "The code expired before it was entered. Sign in again.",
    chatgpt_failed: "The sign-in did not succeed: {error}",
    chatgpt_sign_out: "Sign out",
    chatgpt_signed_out: "Signed out of ChatGPT.",
    web_key: "Web search key (Brave Search API)",
    web_key_none: "No Brave key: web search uses DuckDuckGo (or SearXNG when configured).",
    web_key_works: "The Brave key works.",
    web_key_refused: "Brave refused the check: {error}",
    salute_key: "SaluteSpeech key (speech recognition by Sber)",
    salute_key_none: "No SaluteSpeech key: the `salute` engine cannot hear you until one is stored here (or in SALUTE_SPEECH_KEY).",
    salute_key_works: "The SaluteSpeech key works.",
    salute_key_refused: "SaluteSpeech refused the check: {error}",
    saved: "Saved. ",
    applied_now: "Applied now: {keys}. ",
    after_restart: "Takes effect after a restart: {keys}. ",
    nothing_changed: "Nothing changed. ",
    backup: "Previous version kept in {path}.",
    reload: "Reload",
    not_saved: "Not saved: the daemon found problems.",
    line_column: "line {line}, column {column}",
    applies_at_once: "applies at once",
    needs_restart: "needs a restart",
    overridden_by: "overridden by {name}",
    rules_in_raw: "Approval rules ([[approvals.rules]]) are edited in config.toml.",
    save: "Save",
    validate_save: "Validate and save",
  },
  ru: {
    restart: "Перезапустить Souz",
    restarting: "Перезапуск…",
    not_back: "Souz не вернулся; посмотрите его журнал.",
    test: "Проверить",
    key_works: "Ключ {provider} работает (модель {model}).",
    key_refused: "{provider} не принял проверку: {error}",
    no_answer: "нет ответа",
    run_setup: "Пройти первоначальную настройку снова",
    form: "Форма",
    raw: "config.toml",
    settings: "Настройки",
    tab_model: "Модель и ключи",
    tab_language: "Язык",
    tab_approvals: "Одобрения",
    tab_notifications: "Уведомления",
    tab_voice: "Голос",
    tab_advanced: "Дополнительно",
    model_fields: "Модель",
    language_title: "Язык интерфейса",
    language_note: "Ему следуют страницы, меню в строке меню, уведомления и ответы агентов.",
    approvals_note: "Что Souz может делать, не спрашивая, для каждого вида инструментов; всё остальное ждёт вас во «Входящих». Правила для отдельных инструментов или папок редактируются в «Дополнительно › config.toml».",
    notifications_note: "Их показывает приложение Souz в строке меню.",
    advanced_note: "Всё остальное из config.toml. Меняйте, только если знаете зачем.",
    app_title: "Этот компьютер",
    app_only: "Запуск при входе и уведомления настраиваются в приложении Souz в строке меню.",
    start_at_login: "Запускать Souz при входе",
    api_key: "API-ключ",
    provider: "Провайдер",
    key: "Ключ",
    source: "Источник",
    stored_at: "сохранён {at}",
    environment: "окружение",
    removed_key: "Ключ {provider} удалён.",
    remove: "Удалить",
    no_keys: "Ключей провайдеров пока нет: чату нужен ключ (или локальный сервер).",
    paste_first: "Сначала вставьте ключ.",
    stored_key: "Ключ {provider} {hint} сохранён.",
    stored_key_short: "Ключ {provider} сохранён.",
    store_key: "Сохранить ключ",
    provider_keys: "Ключи провайдеров",
    chatgpt_sign_in: "Войти через ChatGPT",
    chatgpt_note: "Модели Codex от OpenAI по вашей подписке ChatGPT, без API-ключа. Souz хранит токены аккаунта в зашифрованном виде на этом компьютере и не трогает входы других программ.",
    chatgpt_code: "Откройте {url}, войдите в ChatGPT и введите этот код (действует до {time}). Никому его не сообщайте.",
    chatgpt_open: "Открыть страницу входа",
    chatgpt_waiting: "Ждём, пока код будет введён…",
    chatgpt_signed_in: "Вход в ChatGPT (Codex) выполнен: {account}.",
    chatgpt_signed_in_plain: "Вход в ChatGPT (Codex) выполнен.",
    chatgpt_expired: "Срок действия кода истёк, а он так и не был введён. Войдите снова.",
    chatgpt_failed: "Войти не удалось: {error}",
    chatgpt_sign_out: "Выйти",
    chatgpt_signed_out: "Выход из ChatGPT выполнен.",
    web_key: "Ключ веб-поиска (Brave Search API)",
    web_key_none: "Ключа Brave нет: веб-поиск идёт через DuckDuckGo (или SearXNG, если настроен).",
    web_key_works: "Ключ Brave работает.",
    web_key_refused: "Brave отклонил проверку: {error}",
    salute_key: "Ключ SaluteSpeech (распознавание речи от Сбера)",
    salute_key_none: "Ключа SaluteSpeech нет: движок `salute` не услышит вас, пока ключ не сохранён здесь (или в SALUTE_SPEECH_KEY).",
    salute_key_works: "Ключ SaluteSpeech работает.",
    salute_key_refused: "SaluteSpeech отклонил проверку: {error}",
    saved: "Сохранено. ",
    applied_now: "Применено сразу: {keys}. ",
    after_restart: "Вступит в силу после перезапуска: {keys}. ",
    nothing_changed: "Ничего не изменилось. ",
    backup: "Предыдущая версия сохранена в {path}.",
    reload: "Перезагрузить",
    not_saved: "Не сохранено: демон нашёл ошибки.",
    line_column: "строка {line}, столбец {column}",
    applies_at_once: "применяется сразу",
    needs_restart: "нужен перезапуск",
    overridden_by: "переопределено {name}",
    rules_in_raw: "Правила одобрения ([[approvals.rules]]) редактируются в config.toml.",
    save: "Сохранить",
    validate_save: "Проверить и сохранить",
  },
});

/** @typedef {import("./types.js").ConfigDocument} ConfigDocument */
/** @typedef {import("./types.js").ConfigProblem} ConfigProblem */
/** @typedef {import("./types.js").ConfigSaved} ConfigSaved */
/** @typedef {import("./types.js").ProviderKeyList} ProviderKeyList */
/** @typedef {import("./types.js").ProviderKeyResponse} ProviderKeyResponse */
/** @typedef {import("./types.js").ProviderLogin} ProviderLogin */
/** @typedef {{doc: ConfigDocument}} DocumentState */

/** Providers that take a key (local servers need none). */
export const KEYED_PROVIDERS = ["openai", "anthropic", "qwen", "ai_tunnel", "giga"];

/** The everyday tabs' fields (`section.key`, or `section.*` for a whole section); Advanced has
 *  the rest. Exported for the test that every one of them has a Russian doc. */
export const EVERYDAY = {
  model: ["llm.default_model", "llm.local_models", "llm.disabled_providers", "agent.default_agent"],
  approvals: ["approvals.read_only", "approvals.write", "approvals.delete", "approvals.network", "approvals.exec", "approvals.timeout_seconds"],
  notifications: ["notifications.*"],
  voice: ["speech.engine", "speech.language", "speech.local_model", "speech.server_url", "speech.keep_audio", "voice.send_at_once", "voice.hotkey", "voice.tts", "voice.tts_voice", "voice.tts_url"],
};
const TABS = ["model", "language", "approvals", "notifications", "voice", "advanced"];

/** Whether `section.key` is one of `names` (`section.*` covers a section).
 *  @param {string[]} names @param {string} section @param {string} key */
const listed = (names, section, key) => names.includes(`${section}.${key}`) || names.includes(`${section}.*`);
/** Whether `section.key` is on an everyday tab. @param {string} section @param {string} key */
const everyday = (section, key) => Object.values(EVERYDAY).some((names) => listed(names, section, key));

/** Pages of a higher layer that Settings shows inside its tabs (app.js passes them): the local
 *  models (Model & keys) and the standing grants (Approvals).
 *  @typedef {{models: (main: HTMLElement) => Promise<unknown>, grants: (main: HTMLElement) => Promise<unknown>}} Embedded */

/** @param {HTMLElement} main @param {string[]} args `[tab, "toml"?]` @param {Embedded} embedded */
export async function settingsPage(main, [tab = "model", mode = ""], embedded) {
  if (!TABS.includes(tab)) tab = "model";
  /** @type {DocumentState} */
  const documentState = { doc: await api("GET", "/v1/config") };
  const result = h("div#settings-result");
  const body = h("div");
  const tabs = h("nav.subnav#settings-tabs", {}, TABS.map((name) =>
    h("a" + (name === tab ? ".active" : ""), { href: `#/settings/${name}`, dataset: { tab: `settings/${name}` } }, t(`tab_${name}`))));
  main.append(h("h1", {}, t("settings")), tabs);
  /** @type {unknown} */
  let stop = null;
  if (tab === "model") {
    const models = h("div#local-models");
    main.append(h("p.row", {}, h("a#run-setup", { href: "#/setup" }, t("run_setup")), restartButton("restart")),
      await keysSection(), await chatgptSignIn("settings"), body, result, await webKeySection(), models);
    formEditor(body, result, documentState, (section, key) => listed(EVERYDAY.model, section, key), t("model_fields"));
    stop = await embedded.models(models);
    for (const heading of models.querySelectorAll("h1")) heading.replaceWith(h("h2", {}, heading.textContent || ""));
  } else if (tab === "language") {
    main.append(languageSection(), await appSection());
  } else if (tab === "approvals") {
    const grants = h("div#grants");
    main.append(h("p.meta", {}, t("approvals_note")), result, body, grants);
    formEditor(body, result, documentState, (section, key) => listed(EVERYDAY.approvals, section, key));
    stop = await embedded.grants(grants);
    for (const heading of grants.querySelectorAll("h1")) heading.replaceWith(h("h2", {}, heading.textContent || ""));
  } else if (tab === "voice") {
    // Who hears you and who reads answers aloud (voice.js), then `[voice]` and `[speech]`.
    const voice = await voiceCards();
    main.append(...voice.cards, await saluteKeySection(), result, body);
    formEditor(body, result, documentState, (section, key) => listed(EVERYDAY.voice, section, key));
    stop = voice.stop;
  } else if (tab === "notifications") {
    main.append(h("p.meta", {}, t("notifications_note")), result, body);
    formEditor(body, result, documentState, (section, key) => listed(EVERYDAY.notifications, section, key));
  } else {
    const raw = mode === "toml";
    main.append(h("p.meta", {}, t("advanced_note")), h("p.row", {}, restartButton("restart")),
      h("div.tabs", {},
        h("button" + (raw ? "" : ".active"), { onclick: () => { location.hash = "#/settings/advanced"; } }, t("form")),
        h("button#raw-tab" + (raw ? ".active" : ""), { onclick: () => { location.hash = "#/settings/advanced/toml"; } }, t("raw"))),
      result, body);
    if (raw) rawEditor(body, result, documentState);
    else formEditor(body, result, documentState, (section, key) => !everyday(section, key));
  }
  return typeof stop === "function" ? stop : undefined;
}

/** The interface language, the same switch as the header's (which keeps it). */
function languageSection() {
  const select = /** @type {HTMLSelectElement} */ (h("select#settings-language", { "aria-label": t("language_title") },
    h("option", { value: "en" }, "English"), h("option", { value: "ru" }, "Русский")));
  select.value = language();
  select.addEventListener("change", () => {
    const header = /** @type {HTMLSelectElement | null} */ (document.getElementById("language"));
    if (!header) return;
    header.value = select.value;
    header.dispatchEvent(new Event("change"));
  });
  return h("div.card", {}, h("h2", {}, t("language_title")), h("p.row", {}, select), h("p.meta", {}, t("language_note")));
}

/** Start at login: only inside the app, and always read back from the system. */
async function appSection() {
  const bridge = tauri();
  if (!bridge) return h("div.card", {}, h("h2", {}, t("app_title")), h("p.meta", {}, t("app_only")));
  const box = h("input#autostart", { type: "checkbox" });
  const note = h("span.meta");
  const show = async () => { box.checked = await bridge.invoke("autostart_enabled"); };
  box.addEventListener("change", async () => {
    try { box.checked = await bridge.invoke("set_autostart", { enabled: box.checked }); note.textContent = ""; }
    catch (error) { note.textContent = String(error); await show(); }
  });
  await show();
  return h("div.card", {}, h("h2", {}, t("app_title")), h("label.row", {}, box, t("start_at_login")), note);
}

/** Provider keys: the configured ones with their hints (remove a stored one), and a form that
 *  stores or replaces a key. The key field is a password field, cleared once sent. */
async function keysSection() {
  const list = h("table#provider-keys");
  const note = h("span.meta#keys-note");
  const provider = /** @type {HTMLSelectElement} */ (h("select#key-provider", {},
    ...KEYED_PROVIDERS.map((name) => h("option", { value: name }, providerName(name)))));
  const input = /** @type {HTMLInputElement} */ (h("input#key-value", { type: "password", autocomplete: "off", placeholder: t("api_key") }));
  const show = async () => {
    /** @type {ProviderKeyList} */
    const keys = await api("GET", "/v1/me/provider-keys");
    list.replaceChildren(h("tr", {}, h("th", {}, t("provider")), h("th", {}, t("key")), h("th", {}, t("source")), h("th")),
      ...keys.items.map((key) => h("tr", { "data-provider": key.provider }, h("td", {}, providerName(key.provider)), h("td", {}, key.keyHint),
        h("td", {}, key.source === "stored" ? t("stored_at", { at: key.updatedAt ? new Date(key.updatedAt).toLocaleString() : "" }) : t("environment")),
        h("td", {}, h("button.test-key", { onclick: () => act(() => testKey(key.provider), "") }, t("test")), " ",
          key.source === "stored"
            ? h("button.remove-key", { onclick: () => act(() => api("DELETE", `/v1/me/provider-keys/${key.provider}`), t("removed_key", { provider: providerName(key.provider) })) }, t("remove"))
            : ""))));
    if (!keys.items.length) list.append(h("tr", {}, h("td.meta", { colspan: "4" }, t("no_keys"))));
  };
  /** @param {() => Promise<unknown>} call @param {string} done what to say when `call` says nothing */
  const act = async (call, done) => {
    try { const said = await call(); note.textContent = typeof said === "string" ? said : done; }
    catch (error) { note.textContent = String(error instanceof Error ? error.message : error); }
    await show();
  };
  const save = h("button.primary#key-save", {
    onclick: () => {
      const value = input.value.trim();
      input.value = "";
      if (!value) { note.textContent = t("paste_first"); return; }
      act(async () => {
        /** @type {ProviderKeyResponse} */
        const stored = await api("PUT", `/v1/me/provider-keys/${provider.value}`, { apiKey: value });
        return t("stored_key", { provider: providerName(stored.providerKey.provider), hint: stored.providerKey.keyHint });
      }, t("stored_key_short", { provider: providerName(provider.value) }));
    },
  }, t("store_key"));
  await show();
  return h("div.card#keys", {}, h("h2", {}, t("provider_keys")), list, h("div.row", {}, provider, input, save), note);
}

/** "Sign in with ChatGPT" (provider `codex`): the button starts a device-code sign-in, the code
 *  and the page to enter it at are shown, and the state is polled until it is signed in,
 *  expired or failed. Signed in: the account and Sign out. Used by Settings and the setup page;
 *  `prefix` keeps element ids apart, `changed` is told when the state settles.
 *  @param {string} prefix @param {() => Promise<void>} [changed] @returns {Promise<HTMLElement>} */
export async function chatgptSignIn(prefix, changed) {
  const box = h(`div.card#${prefix}-chatgpt`);
  const note = h(`p.meta#${prefix}-chatgpt-note`);
  /** @type {number | undefined} */
  let timer;
  /** @param {ProviderLogin} login */
  const render = (login) => {
    clearTimeout(timer);
    const start = h(`button.primary#${prefix}-chatgpt-start`, { onclick: () => act(() => api("POST", "/v1/me/provider-logins/codex")) }, t("chatgpt_sign_in"));
    const parts = [h("h2", {}, "ChatGPT (Codex)"), h("p.meta", {}, t("chatgpt_note"))];
    if (login.state === "pending") {
      const time = login.expiresAt ? new Date(login.expiresAt).toLocaleTimeString() : "";
      parts.push(h("p", {}, t("chatgpt_code", { url: login.verificationUrl || "", time })),
        h(`p.user-code#${prefix}-chatgpt-code`, {}, h("strong", {}, login.userCode || "")),
        h("p.row", {}, h(`a#${prefix}-chatgpt-link`, { href: login.verificationUrl || "#", target: "_blank", rel: "noopener" }, t("chatgpt_open"))),
        h(`p.meta#${prefix}-chatgpt-state`, { dataset: { state: login.state } }, t("chatgpt_waiting")));
      timer = window.setTimeout(() => act(() => api("GET", "/v1/me/provider-logins/codex")), 1500);
    } else if (login.state === "signed_in") {
      parts.push(h(`p.ok#${prefix}-chatgpt-state`, { dataset: { state: login.state } },
        login.account ? t("chatgpt_signed_in", { account: login.account }) : t("chatgpt_signed_in_plain")),
      h(`button#${prefix}-chatgpt-sign-out`, {
        onclick: () => act(async () => {
          await api("DELETE", "/v1/me/provider-logins/codex");
          note.textContent = t("chatgpt_signed_out");
          return api("GET", "/v1/me/provider-logins/codex");
        }),
      }, t("chatgpt_sign_out")));
    } else {
      const said = login.state === "expired" ? t("chatgpt_expired")
        : login.state === "failed" ? t("chatgpt_failed", { error: login.error || "?" }) : "";
      parts.push(h(`p${said ? ".error" : ".meta"}#${prefix}-chatgpt-state`, { dataset: { state: login.state } }, said), h("p.row", {}, start));
    }
    box.replaceChildren(...parts, note);
  };
  /** @param {() => Promise<ProviderLogin>} call */
  const act = async (call) => {
    try {
      const login = await call();
      render(login);
      if (login.state !== "pending" && changed) await changed();
    } catch (error) {
      note.className = "error";
      note.textContent = String(error instanceof Error ? error.message : error);
      if (!box.isConnected) clearTimeout(timer);
    }
  };
  await act(() => api("GET", "/v1/me/provider-logins/codex"));
  return box;
}

/** A daemon-wide service key's card: its hint and source, Test (one real call), Remove, and a
 *  password field that stores or replaces it.
 *  @param {{name: string, id: string, provider: string, title: string, none: string, works: string, refused: string}} key
 *  `id` prefixes the card's element ids; the texts are i18n keys. */
async function serviceKeySection(key) {
  const row = h(`div#${key.id}`);
  const note = h(`span.meta#${key.id}-note`);
  const input = /** @type {HTMLInputElement} */ (h(`input#${key.id}-value`, { type: "password", autocomplete: "off", placeholder: t("api_key") }));
  const path = `/v1/settings/service-keys/${key.name}`;
  const show = async () => {
    /** @type {import("./types.js").ServiceKeyList} */
    const keys = await api("GET", "/v1/settings/service-keys");
    const found = keys.items.find((item) => item.name === key.name);
    if (!found) { row.replaceChildren(h("p.meta", {}, t(key.none))); return; }
    const source = found.source === "stored" ? t("stored_at", { at: found.updatedAt ? new Date(found.updatedAt).toLocaleString() : "" }) : `${t("environment")} (${found.variable})`;
    row.replaceChildren(h("p.row", {}, h(`code#${key.id}-hint`, {}, found.keyHint), " ", h("span.meta", {}, source), " ",
      h(`button#${key.id}-test`, { onclick: () => act(async () => {
        /** @type {import("./types.js").ServiceKeyTest} */
        const tested = await api("POST", `${path}/test`);
        return tested.ok ? t(key.works) : t(key.refused, { error: tested.error || t("no_answer") });
      }) }, t("test")), " ",
      found.source === "stored" ? h(`button#${key.id}-remove`, { onclick: () => act(() => api("DELETE", path), t("removed_key", { provider: key.provider })) }, t("remove")) : ""));
  };
  /** @param {() => Promise<unknown>} call @param {string} [done] */
  const act = async (call, done = "") => {
    try { const said = await call(); note.textContent = typeof said === "string" ? said : done; }
    catch (error) { note.textContent = String(error instanceof Error ? error.message : error); }
    await show();
  };
  const save = h(`button.primary#${key.id}-save`, {
    onclick: () => {
      const value = input.value.trim();
      input.value = "";
      if (!value) { note.textContent = t("paste_first"); return; }
      act(async () => {
        /** @type {import("./types.js").ServiceKeyInfo} */
        const stored = await api("PUT", path, { apiKey: value });
        return t("stored_key", { provider: key.provider, hint: stored.keyHint });
      });
    },
  }, t("store_key"));
  await show();
  return h(`div.card#${key.id}s`, {}, h("h2", {}, t(key.title)), row, h("div.row", {}, input, save), note);
}

/** The Brave Search key of the web tools. */
const webKeySection = () => serviceKeySection({
  name: "brave", id: "web-key", provider: "Brave",
  title: "web_key", none: "web_key_none", works: "web_key_works", refused: "web_key_refused",
});

/** The SaluteSpeech authorization key (`[speech] engine = "salute"`). */
const saluteKeySection = () => serviceKeySection({
  name: "salute_speech", id: "salute-key", provider: "SaluteSpeech",
  title: "salute_key", none: "salute_key_none", works: "salute_key_works", refused: "salute_key_refused",
});

/** "Restart Souz": the daemon restarts in place (same address, config.toml read again); the
 *  page reloads once the event stream has dropped (the old runtime stopped) and come back.
 *  @param {string} id */
export function restartButton(id) {
  const note = h("span.meta", { id: `${id}-note` });
  const connection = () => document.getElementById("connection")?.className || "";
  /** @param {(name: string) => boolean} check */
  const until = async (check) => {
    for (let tries = 0; tries < 200; tries++) {
      if (check(connection())) return true;
      await new Promise((done) => setTimeout(done, 150));
    }
    return false;
  };
  const button = h("button", {
    id,
    onclick: async () => {
      button.disabled = true;
      try {
        await api("POST", "/v1/restart");
        note.textContent = ` ${t("restarting")}`;
        if (await until((name) => name.includes("down")) && await until((name) => name.includes("up"))) {
          location.reload();
          return;
        }
        note.textContent = ` ${t("not_back")}`;
      } catch (error) {
        note.textContent = ` ${error instanceof Error ? error.message : error}`;
      } finally { button.disabled = false; }
    },
  }, t("restart"));
  return h("span", {}, button, note);
}

/** Checks a provider's key with a one-token request; resolves to what to tell the person.
 *  @param {string} provider @returns {Promise<string>} */
async function testKey(provider) {
  /** @type {import("./types.js").ProviderKeyTest} */
  const tested = await api("POST", `/v1/me/provider-keys/${provider}/test`);
  const name = providerName(provider);
  return tested.ok ? t("key_works", { provider: name, model: tested.model }) : t("key_refused", { provider: name, error: tested.error || t("no_answer") });
}

/** @param {HTMLElement} result @param {ConfigSaved} saved */
function showSaved(result, saved) {
  result.replaceChildren(h("div.card.ok", {},
    h("strong", {}, t("saved")),
    saved.applied.length ? t("applied_now", { keys: saved.applied.join(", ") }) : "",
    saved.restartRequired.length ? t("after_restart", { keys: saved.restartRequired.join(", ") }) : "",
    saved.restartRequired.length ? restartButton("restart-now") : "",
    !saved.applied.length && !saved.restartRequired.length ? t("nothing_changed") : "",
    h("span.meta", {}, t("backup", { path: saved.backup }))));
}

/** A refused save: a conflict (409), or the problems the daemon found (a `ConfigRejected` body).
 *  @param {HTMLElement} result @param {import("./api.js").ApiError} error
 *  @param {(problem: ConfigProblem) => void} [onLocate] */
function showProblems(result, error, onLocate) {
  if (error.status === 409) {
    result.replaceChildren(h("div.card.error", {}, error.message + " ", h("button", { onclick: () => location.reload() }, t("reload"))));
    return;
  }
  const problems = rejected(error);
  if (!problems) { result.replaceChildren(h("div.card.error", {}, error.message)); return; }
  result.replaceChildren(h("div.card", {}, h("strong.error", {}, t("not_saved")),
    h("ul.problems#problems", {}, problemItems(problems, onLocate))));
}

/** The list items of config.toml's problems (the Settings, Recovery and Servers pages): where
 *  each is (a link that selects it when `onLocate` is given) and its message.
 *  @param {ConfigProblem[]} problems @param {(problem: ConfigProblem) => void} [onLocate] */
export function problemItems(problems, onLocate) {
  return problems.map((problem) => {
    const where = t("line_column", { line: problem.line ?? "", column: problem.column ?? "" });
    return h("li", {},
      !problem.line ? t("environment") : onLocate ? h("a", { onclick: () => onLocate(problem) }, where) : where,
      ": ", problem.message);
  });
}

/** Selects the character at `problem`'s line and column in `area`.
 *  @param {HTMLTextAreaElement} area @param {ConfigProblem} problem */
export function selectProblem(area, problem) {
  const lines = area.value.split("\n");
  let offset = 0;
  const [line, column] = [problem.line ?? 0, problem.column ?? 0];
  for (let index = 0; index < line - 1 && index < lines.length; index++) offset += lines[index].length + 1;
  offset += Math.max(0, column - 1);
  area.focus();
  area.setSelectionRange(offset, Math.min(area.value.length, offset + 1));
}

/** The problems of a `ConfigRejected` answer, or null for any other error.
 *  @param {import("./api.js").ApiError} error @returns {ConfigProblem[] | null} */
function rejected(error) {
  const body = /** @type {Partial<import("./types.js").ConfigRejected> | null} */ (error.body);
  return body?.problems ?? null;
}

/** The items of a list key's value (any JSON; `null` when unset).
 *  @param {unknown} value @returns {unknown[]} */
function items(value) {
  return Array.isArray(value) ? value : [];
}

/** The fields `include` picks, as a form with one Save (under one `title` when given, else by
 *  section).
 *  @param {HTMLElement} body @param {HTMLElement} result @param {DocumentState} documentState
 *  @param {(section: string, key: string) => boolean} include @param {string} [title] */
function formEditor(body, result, documentState, include, title) {
  const { doc } = documentState;
  const fields = [];
  for (const section of doc.sections) {
    const keys = section.keys.filter((key) => include(section.name, key.name) && (key.kind !== "list" || items(key.value).every((item) => typeof item !== "object")));
    if (!keys.length) continue;
    body.append(h("section.card", { dataset: { section: section.name } },
      title ? null : h("h2", {}, `[${section.name}]`), title ? null : h("p.meta", {}, configDoc(section.name, section.doc)),
      keys.map((key) => {
        const id = `field-${section.name}-${key.name}`;
        let input;
        if (key.kind === "boolean") input = h("input", { type: "checkbox", id, checked: Boolean(key.value) });
        else if (key.kind === "list") input = h("textarea", { id, rows: 2, value: items(key.value).join("\n") });
        else input = h("input", { type: key.kind === "integer" || key.kind === "float" ? "number" : "text", step: key.kind === "float" ? "any" : undefined, id, value: key.value ?? "" });
        const read = () => {
          if (key.kind === "boolean") return input.checked;
          if (key.kind === "list") return input.value.split("\n").map((line) => line.trim()).filter(Boolean);
          if (key.kind === "integer") return input.value === "" ? null : Number.isInteger(Number(input.value)) ? Number(input.value) : input.value;
          if (key.kind === "float") return input.value === "" ? null : Number(input.value);
          return input.value;
        };
        const row = h("div.field", { dataset: { key: `${section.name}.${key.name}` } },
          h("div", {}, h("label", { for: id }, configLabel(`${section.name}.${key.name}`) ?? key.name),
            configLabel(`${section.name}.${key.name}`) ? h("div.meta", {}, h("code", {}, key.name)) : null,
            h("div.meta", {}, key.live ? t("applies_at_once") : t("needs_restart")),
            key.overriddenBy ? h("div.meta.error", {}, t("overridden_by", { name: key.overriddenBy })) : null),
          h("div", {}, input, h("div.doc", {}, configDoc(`${section.name}.${key.name}`, key.doc))));
        const field = { section: section.name, key: key.name, read, dirty: false, row };
        input.addEventListener("input", () => { field.dirty = true; });
        input.addEventListener("change", () => { field.dirty = true; });
        fields.push(field);
        return row;
      })));
  }
  if (title) body.prepend(h("h2", {}, title));
  if (include("approvals", "rules")) body.append(h("p.meta", {}, t("rules_in_raw")));
  const save = h("button.primary#settings-save", {}, t("save"));
  body.append(save);
  save.addEventListener("click", async () => {
    const set = fields.filter((field) => field.dirty)
      .map((field) => ({ section: field.section, key: field.key, value: field.read() }));
    for (const field of fields) field.row.classList.remove("invalid");
    if (!set.length) { result.replaceChildren(h("div.card", {}, t("nothing_changed").trim())); return; }
    try {
      const saved = /** @type {ConfigSaved} */ (await api("PATCH", "/v1/config", { set, revision: documentState.doc.revision }));
      showSaved(result, saved);
      documentState.doc = await api("GET", "/v1/config");
      for (const field of fields) field.dirty = false;
    } catch (error) {
      showProblems(result, error);
      for (const problem of rejected(error) || []) {
        const match = /^\[([a-z_]+)\] ([a-z_]+):/.exec(problem.message);
        if (!match) continue;
        fields.find((field) => field.section === match[1] && field.key === match[2])?.row.classList.add("invalid");
      }
    }
  });
}

/** @param {HTMLElement} body @param {HTMLElement} result @param {DocumentState} documentState */
function rawEditor(body, result, documentState) {
  const area = h("textarea.raw#raw-toml", { spellcheck: false, value: documentState.doc.text });
  const save = h("button.primary#raw-save", {}, t("validate_save"));
  body.append(h("p.meta", {}, documentState.doc.path), area, h("div.row", {}, save));
  /** @param {ConfigProblem} problem */
  const locate = (problem) => selectProblem(/** @type {HTMLTextAreaElement} */ (area), problem);
  save.addEventListener("click", async () => {
    try {
      const saved = /** @type {ConfigSaved} */ (await api("PUT", "/v1/config", { text: area.value, revision: documentState.doc.revision }));
      showSaved(result, saved);
      documentState.doc = await api("GET", "/v1/config");
    } catch (error) {
      showProblems(result, error, locate);
      const first = rejected(error)?.find((problem) => problem.line);
      if (first) locate(first);
    }
  });
}
