// @ts-check
// First-run setup: a provider key (stored encrypted by the daemon, then checked with a real
// one-token request), a ChatGPT account (Codex, signed in with a device code: settings.js), or a
// model server found on this computer (Ollama, LM Studio, llama.cpp) or at an address the
// person types (another port, another computer of the network),
// then a default model. Skippable and resumable: whether it was done is kept by the daemon
// (`/v1/setup`), so every window and the tray agree; the page always shows the current state.

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { h } from "./dom.js";
import { KEYED_PROVIDERS, chatgptSignIn, restartButton } from "./settings.js";
import { modelName, providerName } from "./providers.js";

/** @typedef {import("./types.js").SetupState} SetupState */
/** @typedef {import("./types.js").LocalServerList} LocalServerList */
/** @typedef {import("./types.js").LocalServer} LocalServer */
/** @typedef {import("./types.js").ProviderKeyList} ProviderKeyList */
/** @typedef {import("./types.js").ProviderKeyTest} ProviderKeyTest */
/** @typedef {import("./types.js").ConfigDocument} ConfigDocument */
/** @typedef {import("./types.js").ConfigSaved} ConfigSaved */
/** @typedef {import("./types.js").Bootstrap} Bootstrap */

const t = strings({
  en: {
    title: "Set up Souz",
    intro: "Souz needs a language model. Use a provider's API key, or a model server already running on this computer. You can change all of this later in Settings.",
    step_key: "1. A provider key",
    step_key_note: "The key is stored encrypted on this computer and checked with a one-token request.",
    key_placeholder: "Paste the API key",
    save_test: "Save and test",
    paste_first: "Paste a key first.",
    testing: "Checking the {provider} key…",
    key_ok: "The {provider} key works (model {model}).",
    key_failed: "The key was stored, but {provider} refused the check: {error}",
    keys_present: "Keys already set: {list}.",
    step_local: "…or a model server on this computer",
    looking: "Looking for Ollama, LM Studio and llama.cpp…",
    none_found: "No local model server answered (Ollama on :11434, LM Studio on :1234, llama.cpp on :8080).",
    search_again: "Search again",
    use_server: "Use this server",
    using_server: "Souz will use {model} on {provider}.",
    using_address: "Souz will use {model} on {provider} at {url}.",
    url_label: "Model server address",
    url_note: "A server on another port or another computer of your network, e.g. http://127.0.0.1:1234/v1 or http://192.168.1.20:11434.",
    url_check: "Check",
    url_checking: "Asking {url} for its models…",
    url_kind: "Server",
    kind_llama_cpp: "llama.cpp or another OpenAI-compatible server",
    problem_invalid_url: "That is not a server address: type one like http://127.0.0.1:1234/v1.",
    problem_not_local: "Souz looks for model servers only on this computer and your local network, and {url} is neither.",
    problem_unreachable: "Nothing answers at {url}. Is the server running and listening on that address?",
    problem_not_model_server: "Something answers at {url}, but it is not a model server: it has no model list at {url}/models.",
    problem_no_models: "The model server at {url} serves no model yet: load or download one in it first.",
    step_model: "2. The default model",
    model_note: "Used by every chat that names no model.",
    no_models: "No model is usable yet: add a key or a local server above.",
    use_model: "Use as default",
    default_now: "Default model: {model}.",
    default_auto: "Default model: the first provider with a key.",
    restart_needed: "Saved; it takes effect after Souz restarts ({keys}).",
    finish: "Finish",
    finish_anyway: "Finish anyway",
    finish_without_model: "No model is usable yet, so chats will not answer until you add a provider key, sign in with ChatGPT or start a model server on this computer. Finish anyway?",
    skip: "Skip for now",
    done_note: "You can come back here from the tray (Set up Souz…) or Settings.",
  },
  ru: {
    title: "Настройка Souz",
    intro: "Souz нужна языковая модель. Укажите API-ключ провайдера или используйте сервер моделей, уже запущенный на этом компьютере. Всё это можно изменить позже в настройках.",
    step_key: "1. Ключ провайдера",
    step_key_note: "Ключ хранится в зашифрованном виде на этом компьютере и проверяется запросом на один токен.",
    key_placeholder: "Вставьте API-ключ",
    save_test: "Сохранить и проверить",
    paste_first: "Сначала вставьте ключ.",
    testing: "Проверяем ключ {provider}…",
    key_ok: "Ключ {provider} работает (модель {model}).",
    key_failed: "Ключ сохранён, но {provider} не принял проверку: {error}",
    keys_present: "Уже заданы ключи: {list}.",
    step_local: "…или сервер моделей на этом компьютере",
    looking: "Ищем Ollama, LM Studio и llama.cpp…",
    none_found: "Локальный сервер моделей не ответил (Ollama на :11434, LM Studio на :1234, llama.cpp на :8080).",
    search_again: "Искать снова",
    use_server: "Использовать этот сервер",
    using_server: "Souz будет использовать {model} на {provider}.",
    using_address: "Souz будет использовать {model} на {provider} по адресу {url}.",
    url_label: "Адрес сервера моделей",
    url_note: "Сервер на другом порту или на другом компьютере вашей сети, например http://127.0.0.1:1234/v1 или http://192.168.1.20:11434.",
    url_check: "Проверить",
    url_checking: "Запрашиваем у {url} список моделей…",
    url_kind: "Сервер",
    kind_llama_cpp: "llama.cpp или другой сервер, совместимый с OpenAI",
    problem_invalid_url: "Это не адрес сервера: введите адрес вида http://127.0.0.1:1234/v1.",
    problem_not_local: "Souz ищет серверы моделей только на этом компьютере и в вашей локальной сети, а {url} — ни там, ни там.",
    problem_unreachable: "По адресу {url} никто не отвечает. Сервер запущен и слушает этот адрес?",
    problem_not_model_server: "По адресу {url} что-то отвечает, но это не сервер моделей: по адресу {url}/models нет списка моделей.",
    problem_no_models: "Сервер моделей по адресу {url} пока не отдаёт ни одной модели: сначала загрузите в него модель.",
    step_model: "2. Модель по умолчанию",
    model_note: "Используется в каждом чате, где модель не выбрана.",
    no_models: "Пока нет доступной модели: добавьте ключ или локальный сервер выше.",
    use_model: "Сделать моделью по умолчанию",
    default_now: "Модель по умолчанию: {model}.",
    default_auto: "Модель по умолчанию: первый провайдер с ключом.",
    restart_needed: "Сохранено; вступит в силу после перезапуска Souz ({keys}).",
    finish: "Готово",
    finish_anyway: "Всё равно завершить",
    finish_without_model: "Пока нет доступной модели, поэтому чаты не будут отвечать, пока вы не добавите ключ провайдера, не войдёте через ChatGPT или не запустите сервер моделей на этом компьютере. Всё равно завершить?",
    skip: "Пропустить",
    done_note: "Вернуться сюда можно из меню в трее (Настроить Souz…) или из настроек.",
  },
});

/** The current value of `[section] key` in a config document.
 *  @param {ConfigDocument} doc @param {string} section @param {string} key @returns {unknown} */
function configValue(doc, section, key) {
  return doc.sections.find((s) => s.name === section)?.keys.find((k) => k.name === key)?.value ?? null;
}

/** Sets `[llm]` keys against `read` (config.toml as read, now when not given); resolves to what the daemon said
 *  (applied now or after a restart).
 *  @param {{key: string, value: unknown}[]} changes @param {ConfigDocument} [read]
 *  @returns {Promise<string>} */
async function setLlm(changes, read) {
  /** @type {ConfigDocument} */
  const doc = read ?? await api("GET", "/v1/config");
  /** @type {ConfigSaved} */
  const saved = await api("PATCH", "/v1/config", {
    set: changes.map(({ key, value }) => ({ section: "llm", key, value })),
    revision: doc.revision,
  });
  return saved.restartRequired.length ? t("restart_needed", { keys: saved.restartRequired.join(", ") }) : "";
}

/** @param {HTMLElement} main */
export async function setupPage(main) {
  const modelCard = h("div.card#setup-model");
  /** How many models are usable, as the model card last found. */
  let usable = 0;
  const refreshModels = async () => { usable = await modelSection(modelCard); };
  const finishNote = h("p.error#setup-finish-note", { hidden: true });
  // Finishing with no usable model says plainly what will not work, and finishes on a second click.
  const finishButton = h("button.primary#setup-finish", {
    onclick: () => {
      if (usable > 0 || !finishNote.hidden) { finish("#/chat"); return; }
      finishNote.textContent = t("finish_without_model");
      finishNote.hidden = false;
      finishButton.textContent = t("finish_anyway");
    },
  }, t("finish"));
  main.append(
    h("h1", {}, t("title")),
    h("p", {}, t("intro")),
    await keySection(refreshModels),
    await chatgptSignIn("setup", refreshModels),
    localSection(refreshModels),
    modelCard,
    h("div.row", {}, finishButton, h("button#setup-skip", { onclick: () => finish("#/chat") }, t("skip"))),
    finishNote,
    h("p.meta", {}, t("done_note")),
  );
  await refreshModels();
}

/** Marks the setup done (finished or skipped) and leaves for `next`. @param {string} next */
async function finish(next) {
  await api("PUT", "/v1/setup", { completed: true });
  location.hash = next;
}

/** Paste a key, store it, then test it with a real call.
 *  @param {() => Promise<void>} changed @returns {Promise<HTMLElement>} */
async function keySection(changed) {
  const provider = /** @type {HTMLSelectElement} */ (h("select#setup-provider", {},
    ...KEYED_PROVIDERS.map((name) => h("option", { value: name }, providerName(name)))));
  const input = /** @type {HTMLInputElement} */ (h("input#setup-key", { type: "password", autocomplete: "off", placeholder: t("key_placeholder") }));
  const note = h("p.meta#setup-key-note");
  const present = h("p.meta#setup-keys-present");
  const showPresent = async () => {
    /** @type {ProviderKeyList} */
    const keys = await api("GET", "/v1/me/provider-keys");
    present.textContent = keys.items.length
      ? t("keys_present", { list: keys.items.map((key) => `${providerName(key.provider)} (${key.keyHint})`).join(", ") })
      : "";
  };
  const save = h("button.primary#setup-key-save", {
    onclick: async () => {
      const value = input.value.trim();
      input.value = "";
      note.className = "meta";
      if (!value) { note.textContent = t("paste_first"); return; }
      const name = provider.value;
      const shown = providerName(name);
      try {
        await api("PUT", `/v1/me/provider-keys/${name}`, { apiKey: value });
        note.textContent = t("testing", { provider: shown });
        /** @type {ProviderKeyTest} */
        const tested = await api("POST", `/v1/me/provider-keys/${name}/test`);
        note.className = tested.ok ? "ok" : "error";
        note.textContent = tested.ok
          ? t("key_ok", { provider: shown, model: tested.model })
          : t("key_failed", { provider: shown, error: tested.error || "?" });
      } catch (error) {
        note.className = "error";
        note.textContent = String(error instanceof Error ? error.message : error);
      }
      await showPresent();
      await changed();
    },
  }, t("save_test"));
  await showPresent();
  return h("div.card#setup-key-card", {}, h("h2", {}, t("step_key")), h("p.meta", {}, t("step_key_note")),
    h("div.row", {}, provider, input, save), note, present);
}

/** The local servers that answer, each with a model to pick, and a field for a server at
 *  another address.
 *  @param {() => Promise<void>} changed @returns {HTMLElement} */
function localSection(changed) {
  const list = h("div#local-servers");
  const note = h("p.meta#local-note");
  const search = async () => {
    list.replaceChildren(h("p.meta", {}, t("looking")));
    /** @type {LocalServerList} */
    const found = await api("GET", "/v1/setup/local-servers");
    list.replaceChildren(...found.items.map((server) => serverRow(server, note, changed)));
    if (!found.items.length) list.append(h("p.meta#no-local", {}, t("none_found")));
  };
  search().catch((error) => { list.replaceChildren(h("p.error", {}, String(error.message || error))); });
  return h("div.card#setup-local", {}, h("h2", {}, t("step_local")), list,
    h("button#local-search", { onclick: () => search() }, t("search_again")),
    addressForm(note, changed), note);
}

/** A model server's address typed by the person (another port, another computer of the
 *  network): the daemon asks it for its models (`POST /v1/setup/local-servers/probe`), and what
 *  answers is offered like a server found, with the kind of server it looks like.
 *  @param {HTMLElement} note @param {() => Promise<void>} changed */
function addressForm(note, changed) {
  const field = /** @type {HTMLInputElement} */ (h("input#local-url", { type: "text", inputmode: "url", autocomplete: "off", spellcheck: false, placeholder: "http://127.0.0.1:1234/v1" }));
  const result = h("div#local-url-result");
  const form = h("form.row#local-url-form", {},
    h("label", { for: "local-url" }, t("url_label")), field, h("button#local-url-check", { type: "submit" }, t("url_check")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const typed = field.value.trim();
    result.replaceChildren(h("p.meta", {}, t("url_checking", { url: typed })));
    try {
      /** @type {import("./types.js").LocalServerProbe} */
      const found = await api("POST", "/v1/setup/local-servers/probe", { baseUrl: typed });
      result.replaceChildren(found.problem
        ? h("p.error#local-url-problem", { dataset: { problem: found.problem } }, t(`problem_${found.problem}`, { url: found.baseUrl }))
        : serverRow(found, note, changed, true));
    } catch (error) {
      result.replaceChildren(h("p.error", {}, String(error instanceof Error ? error.message : error)));
    }
  });
  return h("div#local-url-box", {}, form, h("p.meta", {}, t("url_note")), result);
}

/** A server with its models to pick and "Use this server": its model becomes the default and
 *  is listed in `[llm] local_models`; a `typed` server's address is saved too, as the base URL
 *  of the kind picked (`[llm] <kind>_base_url`), through the same config edit as Settings.
 *  @param {LocalServer} server @param {HTMLElement} note @param {() => Promise<void>} changed
 *  @param {boolean} [typed] */
function serverRow(server, note, changed, typed = false) {
  const model = /** @type {HTMLSelectElement} */ (h("select.local-model", { "aria-label": t("step_model") },
    ...server.models.map((name) => h("option", { value: name }, name))));
  const kind = /** @type {HTMLSelectElement} */ (h("select.server-kind", { "aria-label": t("url_kind") },
    ...["ollama", "lm_studio", "llama_cpp"].map((name) => h("option", { value: name, selected: name === server.provider },
      name === "llama_cpp" ? t("kind_llama_cpp") : providerName(name)))));
  const use = h("button.primary.use-server", {
    onclick: async () => {
      const provider = typed ? kind.value : server.provider;
      const chosen = `${provider}/${model.value}`;
      try {
        /** @type {ConfigDocument} */
        const doc = await api("GET", "/v1/config");
        const current = configValue(doc, "llm", "local_models");
        const listed = Array.isArray(current) ? current.map(String) : [];
        const said = await setLlm([
          ...(typed ? [{ key: `${provider}_base_url`, value: server.baseUrl }] : []),
          { key: "local_models", value: listed.includes(chosen) ? listed : [...listed, chosen] },
          { key: "default_model", value: chosen },
        ], doc);
        note.className = "ok";
        const using = typed
          ? t("using_address", { model: model.value, provider: providerName(provider), url: server.baseUrl })
          : t("using_server", { model: model.value, provider: providerName(provider) });
        note.textContent = `${using} ${said}`;
        if (said) note.append(" ", restartButton("setup-restart"));
      } catch (error) {
        note.className = "error";
        note.textContent = String(error instanceof Error ? error.message : error);
      }
      await changed();
    },
  }, t("use_server"));
  return h("div.row.local-server", { dataset: { provider: server.provider, typed: typed ? "true" : "" } },
    typed ? kind : h("strong", {}, providerName(server.provider)), h("span.meta", {}, server.baseUrl), model, use);
}

/** The default model: the current one, and the usable models to pick from; resolves to how
 *  many are usable.
 *  @param {HTMLElement} card @returns {Promise<number>} */
async function modelSection(card) {
  /** @type {[ConfigDocument, Bootstrap]} */
  const [doc, bootstrap] = await Promise.all([api("GET", "/v1/config"), api("GET", "/v1/bootstrap")]);
  const current = String(configValue(doc, "llm", "default_model") || "");
  const note = h("p.meta#model-note");
  const models = bootstrap.capabilities.models.map((model) => `${model.provider}/${model.model}`);
  if (current && !models.includes(current)) models.unshift(current);
  const select = /** @type {HTMLSelectElement} */ (h("select#setup-default-model", {},
    ...models.map((name) => h("option", { value: name, selected: name === current }, modelName(name)))));
  const use = h("button#setup-model-save", {
    onclick: async () => {
      try {
        const said = await setLlm([{ key: "default_model", value: select.value }]);
        note.className = "ok";
        note.textContent = `${t("default_now", { model: modelName(select.value) })} ${said}`;
        if (said) note.append(" ", restartButton("setup-model-restart"));
      } catch (error) {
        note.className = "error";
        note.textContent = String(error instanceof Error ? error.message : error);
      }
    },
  }, t("use_model"));
  card.replaceChildren(h("h2", {}, t("step_model")), h("p.meta", {}, t("model_note")),
    h("p#setup-current-model", {}, current ? t("default_now", { model: modelName(current) }) : t("default_auto")),
    models.length ? h("div.row", {}, select, use) : h("p.meta", {}, t("no_models")), note);
  return bootstrap.capabilities.models.length;
}
