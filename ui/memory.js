// @ts-check
// Memory: what Souz remembers about the person. Search (the recall the agents use, with
// scores), filter by kind, scope and status, add a fact, edit, pin, retire, forget (delete with
// a tombstone so it is not captured again), and see each fact's evidence: where it came from
// (a chat turn, a tool output, an MCP client, or written by hand). Fact text is shown as data.
// The local embedding model's download shows here too, from the runtime events the app follows
// (`memory.model.download.progress|completed|failed`): a progress bar with bytes received of
// the total, then "ready" or the failure (memory searches by words meanwhile).

import { api } from "./api.js";
import { onRuntimeEvent } from "./events.js";
import { strings } from "./i18n.js";
import { h, size } from "./dom.js";

/** @typedef {import("./types.js").MemoryFact} MemoryFact */
/** @typedef {import("./types.js").MemoryFactList} MemoryFactList */
/** @typedef {import("./types.js").MemoryEvidenceList} MemoryEvidenceList */
/** @typedef {import("./types.js").MemorySearchResult} MemorySearchResult */
/** @typedef {import("./types.js").RuntimeEvent} RuntimeEvent */
/** @typedef {import("./types.js").MemoryModelInfo} MemoryModelInfo */

const t = strings({
  en: {
    title: "Memory", search: "Search", search_placeholder: "What do you remember about…",
    all_kinds: "All kinds", any_scope: "Any scope (global, session:<chat>, project:<id>)",
    active: "Active", retired: "Retired", all: "All", clear: "Clear",
    add: "Remember", add_placeholder: "A fact to remember", nothing: "Nothing remembered yet.",
    no_match: "Nothing found.", edit: "Edit", save: "Save", cancel: "Cancel", pin: "Pin",
    unpin: "Unpin", retire: "Retire", forget: "Forget", evidence: "Evidence",
    confirm_forget: "Forget this fact? It will not be remembered again from conversations.",
    pinned: "pinned", score: "score {score}", by: "by {who}", from_chat: "chat {chat}",
    from_client: "MCP client {client}", by_hand: "written by hand", turn: "turn {turn}",
    forgotten: "Forgotten.", saved: "Saved.", added: "Remembered.",
    model_downloading: "Downloading the local memory model {model}: {received} of {total}. Memory searches by words only until it is ready.",
    model_missing: "Memory searches by words only until the local memory model {model} is ready: it is downloaded on first use.",
    words_only: "Found by words only: the local memory model {model} is not ready yet.",
    words_only_plain: "Found by words only: no model for searching by meaning is ready.",
    model_ready: "The local memory model {model} is ready: memory now also searches by meaning.",
    model_failed: "The local memory model {model} could not be downloaded: {error}. Memory searches by words meanwhile; Souz tries again later.",
  },
  ru: {
    title: "Память", search: "Найти", search_placeholder: "Что я помню о…",
    all_kinds: "Все виды", any_scope: "Любая область (global, session:<чат>, project:<id>)",
    active: "Активные", retired: "В архиве", all: "Все", clear: "Сбросить",
    add: "Запомнить", add_placeholder: "Что запомнить", nothing: "Пока ничего не запомнено.",
    no_match: "Ничего не найдено.", edit: "Изменить", save: "Сохранить", cancel: "Отмена",
    pin: "Закрепить", unpin: "Открепить", retire: "В архив", forget: "Забыть",
    evidence: "Источник",
    confirm_forget: "Забыть этот факт? Он не будет снова запомнен из разговоров.",
    pinned: "закреплён", score: "оценка {score}", by: "автор {who}", from_chat: "чат {chat}",
    from_client: "MCP-клиент {client}", by_hand: "записан вручную", turn: "ход {turn}",
    forgotten: "Забыто.", saved: "Сохранено.", added: "Запомнено.",
    model_downloading: "Загружается локальная модель памяти {model}: {received} из {total}. Пока она не готова, память ищет только по словам.",
    model_missing: "Пока локальная модель памяти {model} не готова, память ищет только по словам: модель загружается при первом использовании.",
    words_only: "Найдено только по словам: локальная модель памяти {model} ещё не готова.",
    words_only_plain: "Найдено только по словам: модель поиска по смыслу не готова.",
    model_ready: "Локальная модель памяти {model} готова: теперь память ищет и по смыслу.",
    model_failed: "Не удалось загрузить локальную модель памяти {model}: {error}. Пока память ищет по словам; Souz попробует снова позже.",
  },
});

/** The local model's download as `GET /v1/memory/model` says when the page opens, then as
 *  runtime events tell it (hidden without a local model); `waiting` names the local model
 *  memory waits for (searching by words only meanwhile), if any.
 *  @returns {{node: HTMLElement, update: (event: RuntimeEvent | undefined) => void, start: (info: MemoryModelInfo) => void, waiting: () => string | null}} */
function modelPanel() {
  const bar = /** @type {HTMLProgressElement} */ (h("progress#memory-model-progress"));
  const text = h("span#memory-model-text");
  const node = h("div.card#memory-model", { hidden: true }, text, bar);
  /** @param {string} model @param {number} received @param {number} total */
  const downloading = (model, received, total) => {
    node.hidden = false;
    node.dataset.state = "downloading";
    node.dataset.model = model;
    bar.hidden = false;
    bar.max = Math.max(total, 1);
    bar.value = Math.min(received, bar.max);
    text.textContent = t("model_downloading", { model, received: size(received), total: size(total) });
  };
  /** @param {string} model */
  const missing = (model) => {
    node.hidden = false;
    node.dataset.state = "missing";
    node.dataset.model = model;
    bar.hidden = true;
    text.textContent = t("model_missing", { model });
  };
  /** @param {string} model */
  const ready = (model) => {
    node.hidden = false;
    node.dataset.state = "ready";
    node.dataset.model = model;
    bar.hidden = true;
    text.textContent = t("model_ready", { model });
  };
  /** @param {string} model @param {string} error */
  const failed = (model, error) => {
    node.hidden = false;
    node.dataset.state = "failed";
    node.dataset.model = model;
    bar.hidden = true;
    text.textContent = t("model_failed", { model, error });
  };
  /** @param {RuntimeEvent | undefined} event */
  const update = (event) => {
    if (!event) return;
    if (event.type === "memory.model.download.progress") downloading(event.model, event.received, event.total);
    else if (event.type === "memory.model.download.completed") ready(event.model);
    else if (event.type === "memory.model.download.failed") failed(event.model, event.error);
  };
  /** Where the model was when the page opened (an event already shown wins). @param {MemoryModelInfo} info */
  const start = (info) => {
    if (!node.hidden || !info.model || !info.local) return;
    if (info.local.state === "downloading") downloading(info.model, info.local.received, info.local.total);
    else if (info.local.state === "failed") failed(info.model, info.local.error);
    else if (info.local.state === "missing") missing(info.model);
  };
  const waiting = () => (!node.hidden && node.dataset.state !== "ready" ? node.dataset.model ?? null : null);
  return { node, update, start, waiting };
}

const KINDS = ["SEMANTIC", "PREFERENCE", "PROCEDURE", "PROJECT_RULE", "EPISODE_NOTE", "PROJECT_DECISION"];

/** @param {HTMLElement} main */
export async function memoryPage(main) {
  const model = modelPanel();
  const note = h("p.meta#memory-note");
  const list = h("div#memory-list");
  const query = /** @type {HTMLInputElement} */ (h("input#memory-query", { placeholder: t("search_placeholder") }));
  const kind = /** @type {HTMLSelectElement} */ (h("select#memory-kind", {},
    h("option", { value: "" }, t("all_kinds")), ...KINDS.map((name) => h("option", { value: name }, name.toLowerCase()))));
  const scope = /** @type {HTMLInputElement} */ (h("input#memory-scope", { placeholder: t("any_scope") }));
  const status = /** @type {HTMLSelectElement} */ (h("select#memory-status", {},
    h("option", { value: "ACTIVE" }, t("active")), h("option", { value: "RETIRED" }, t("retired")), h("option", { value: "ALL" }, t("all"))));
  const body = /** @type {HTMLInputElement} */ (h("input#memory-new", { placeholder: t("add_placeholder") }));

  /** @param {() => Promise<unknown>} action @param {string} done */
  const act = async (action, done) => {
    try { await action(); note.textContent = done; } catch (error) { note.textContent = String(error instanceof Error ? error.message : error); }
    await show();
  };

  const show = async () => {
    try {
      if (query.value.trim()) {
        /** @type {MemorySearchResult} */
        const found = await api("POST", "/v1/memory/search", { query: query.value.trim(), limit: 20 });
        list.replaceChildren(...(found.items.length ? found.items.map((hit) => card(hit.fact, hit.score)) : [h("p.meta", {}, t("no_match"))]));
        // The search says itself whether it matched by words only; the model panel says why.
        const waiting = model.waiting();
        if (found.mode === "lexical") list.prepend(h("p.meta#memory-words-only", {}, waiting ? t("words_only", { model: waiting }) : t("words_only_plain")));
        return;
      }
      const params = new URLSearchParams({ status: status.value });
      if (kind.value) params.set("kind", kind.value);
      if (scope.value.trim()) params.set("scope", scope.value.trim());
      /** @type {MemoryFactList} */
      const page = await api("GET", `/v1/memory?${params}`);
      list.replaceChildren(...(page.items.length ? page.items.map((fact) => card(fact)) : [h("p.meta", {}, t("nothing"))]));
    } catch (error) {
      note.textContent = String(error instanceof Error ? error.message : error);
    }
  };

  /** One fact: its text, kind, scope, who stored it, and its actions. @param {MemoryFact} fact @param {number} [score] */
  const card = (fact, score) => {
    const evidence = h("div.evidence");
    const path = `/v1/memory/${encodeURIComponent(fact.id)}`;
    const active = fact.status === "ACTIVE";
    const node = h("div.card.memory-fact", { dataset: { id: fact.id } },
      h("div.row", {},
        h("strong.fact-title", {}, fact.title),
        h("span.meta", {}, ` ${fact.kind.toLowerCase()} · ${fact.scope} · ${t("by", { who: fact.created_by })}`),
        fact.pinned ? h("span.badge.pinned", {}, t("pinned")) : "",
        fact.status === "RETIRED" ? h("span.badge", {}, t("retired")) : "",
        score === undefined ? "" : h("span.meta.score", {}, ` ${t("score", { score: score.toFixed(3) })}`)),
      h("p.fact-body", {}, fact.body),
      h("div.row", {},
        active ? h("button.edit", { onclick: () => edit(node, fact) }, t("edit")) : "",
        active ? h("button.pin", { onclick: () => act(() => api("POST", `${path}/${fact.pinned ? "unpin" : "pin"}`), t("saved")) }, fact.pinned ? t("unpin") : t("pin")) : "",
        active ? h("button.retire", { onclick: () => act(() => api("POST", `${path}/retire`), t("saved")) }, t("retire")) : "",
        h("button.forget", {
          onclick: () => { if (confirm(t("confirm_forget"))) act(() => api("DELETE", path), t("forgotten")); },
        }, t("forget")),
        h("button.show-evidence", { onclick: () => showEvidence(evidence, path) }, t("evidence"))),
      evidence);
    return node;
  };

  /** @param {HTMLElement} node @param {MemoryFact} fact */
  const edit = (node, fact) => {
    const title = /** @type {HTMLInputElement} */ (h("input.edit-title", { value: fact.title }));
    const text = /** @type {HTMLTextAreaElement} */ (h("textarea.edit-body", { rows: 3 }));
    text.value = fact.body;
    const editKind = /** @type {HTMLSelectElement} */ (h("select.edit-kind", {}, ...KINDS.map((name) => h("option", { value: name, selected: name === fact.kind }, name.toLowerCase()))));
    const editScope = /** @type {HTMLInputElement} */ (h("input.edit-scope", { value: fact.scope }));
    node.replaceChildren(title, text, h("div.row", {}, editKind, editScope,
      h("button.primary.save", {
        onclick: () => act(() => api("PATCH", `/v1/memory/${encodeURIComponent(fact.id)}`, {
          title: title.value, body: text.value, kind: editKind.value, scope: editScope.value,
        }), t("saved")),
      }, t("save")),
      h("button.cancel", { onclick: () => show() }, t("cancel"))));
  };

  /** @param {HTMLElement} box @param {string} path */
  const showEvidence = async (box, path) => {
    try {
      /** @type {MemoryEvidenceList} */
      const found = await api("GET", `${path}/evidence`);
      box.replaceChildren(...found.items.map((item) => h("div.evidence-item", {},
        h("div.meta", {}, [
          item.chat_id ? t("from_chat", { chat: item.chat_id }) : item.client ? t("from_client", { client: item.client }) : t("by_hand"),
          item.turn_id ? t("turn", { turn: item.turn_id }) : "",
          new Date(item.created_at).toLocaleString(),
        ].filter(Boolean).join(" · ")),
        item.excerpt ? h("blockquote", {}, item.excerpt) : "",
        h("pre.source", {}, item.text))));
    } catch (error) {
      box.replaceChildren(h("p.meta", {}, String(error instanceof Error ? error.message : error)));
    }
  };

  const searchForm = h("form.inline#memory-search", {
    onsubmit: (/** @type {Event} */ event) => { event.preventDefault(); show(); },
  }, query, h("button.primary", { type: "submit" }, t("search")),
  h("button", { type: "button", onclick: () => { query.value = ""; show(); } }, t("clear")));
  const addForm = h("form.inline#memory-add", {
    onsubmit: (/** @type {Event} */ event) => {
      event.preventDefault();
      const text = body.value.trim();
      if (!text) return;
      act(async () => { await api("POST", "/v1/memory", { body: text }); body.value = ""; }, t("added"));
    },
  }, body, h("button.primary", { type: "submit" }, t("add")));
  for (const control of [kind, status]) control.addEventListener("change", () => show());
  scope.addEventListener("change", () => show());
  const stop = onRuntimeEvent((event) => model.update(event));
  // Only a head start: if this read fails, the download's events still fill the panel.
  api("GET", "/v1/memory/model").then(model.start, () => {});
  main.append(h("h1", {}, t("title")), model.node, searchForm, h("div.row.filters", {}, kind, scope, status), addForm, note, list);
  await show();
  return stop;
}
