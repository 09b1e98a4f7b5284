// @ts-check
// Models: the local models Souz runs in its own process (no key, nothing leaves the machine).
// Each profile with its size, context, the memory it needs and where it stands (missing,
// downloading with a progress bar, ready, loaded, or why its download failed); Download starts
// a fetch in the daemon (from the model hub at the commit Souz pins, or the operator's mirror;
// resumable, checked against the file's SHA-256; it goes on when the page is closed; the row
// links the file's page at that commit), Cancel stops it, Remove deletes the file. Progress comes from the runtime
// events the app follows (`local.model.download.progress|completed|failed|cancelled`), so a
// download started anywhere (`souz models pull`, another window) shows here too.

import { api } from "./api.js";
import { onRuntimeEvent } from "./events.js";
import { strings } from "./i18n.js";
import { h, size, visible } from "./dom.js";

/** @typedef {import("./types.js").LocalModelInfo} LocalModelInfo */
/** @typedef {import("./types.js").LocalModelList} LocalModelList */
/** @typedef {import("./types.js").RuntimeEvent} RuntimeEvent */

const t = strings({
  en: {
    title: "Local models",
    intro: "Models that run inside Souz on this machine: no provider key, and nothing you write leaves the computer. Pick one in a chat's model list (“<name> · Souz (on this computer)”) or as [llm] default_model = \"local/<name>\".",
    engine: "Engine: {engine}.", no_engine: "This build of Souz has no local model engine.",
    memory: "Souz uses {rss} of memory now.",
    name: "Model", kind: "Kind", size: "Size", context: "Context", ram: "Needs", state: "State", actions: "",
    chat: "chat", embedding: "embedding", test: "test model",
    missing: "not downloaded", ready: "downloaded", loaded: "in memory", failed: "download failed: {error}",
    downloading: "{received} of {total} ({percent}%)",
    tokens: "{n} tokens", ram_gb: "{n} GB RAM",
    download: "Download", cancel: "Cancel", remove: "Remove",
    by_hand: "Souz has no verified source for this file: place it at {path}.",
    source: "source", source_title: "Where Download fetches it from (the SHA-256 is checked)",
    started: "Downloading {name}. It goes on if you close this page.",
    done: "{name} is downloaded and verified.", cancelled: "The download of {name} was stopped.",
    removed: "{name} was removed.",
    confirm_remove: "Delete the file of {name} ({size})? You can download it again later.",
    confirm_cancel: "Stop downloading {name}? What has arrived is deleted.",
  },
  ru: {
    title: "Локальные модели",
    intro: "Модели, которые работают внутри Souz на этом компьютере: без ключа провайдера, и ничего из написанного вами не покидает компьютер. Выберите модель в списке моделей чата («<имя> · Souz (на этом компьютере)») или в [llm] default_model = \"local/<имя>\".",
    engine: "Движок: {engine}.", no_engine: "В этой сборке Souz нет движка локальных моделей.",
    memory: "Сейчас Souz занимает {rss} памяти.",
    name: "Модель", kind: "Вид", size: "Размер", context: "Контекст", ram: "Нужно", state: "Состояние", actions: "",
    chat: "чат", embedding: "эмбеддинги", test: "тестовая модель",
    missing: "не скачана", ready: "скачана", loaded: "в памяти", failed: "не скачалась: {error}",
    downloading: "{received} из {total} ({percent}%)",
    tokens: "{n} токенов", ram_gb: "{n} ГБ ОЗУ",
    download: "Скачать", cancel: "Отменить", remove: "Удалить",
    by_hand: "У Souz нет проверенного источника этого файла: положите его сюда: {path}.",
    source: "источник", source_title: "Откуда его скачивает кнопка «Скачать» (SHA-256 проверяется)",
    started: "{name} скачивается. Загрузка продолжится, даже если закрыть эту страницу.",
    done: "{name} скачана и проверена.", cancelled: "Загрузка {name} остановлена.",
    removed: "{name} удалена.",
    confirm_remove: "Удалить файл {name} ({size})? Потом её можно скачать снова.",
    confirm_cancel: "Остановить загрузку {name}? Уже скачанное будет удалено.",
  },
});

/** Whole percent of `part` in `whole`. @param {number} part @param {number} whole */
const percent = (part, whole) => Math.min(100, Math.floor((part * 100) / Math.max(whole, 1)));

/** The Models page. @param {HTMLElement} main */
export async function modelsPage(main) {
  const note = h("div#models-note");
  const summary = h("p.meta#models-engine");
  const table = h("table#models");
  /** @type {Map<string, HTMLElement>} model name → its row */
  const rows = new Map();
  /** The furthest progress an event reported, by model: a list read before that event must not
   *  move the bar back (the mirror may send nothing more for a while).
   *  @type {Map<string, number>} */
  const reached = new Map();
  /** Counts list reads: only the newest one is shown (answers can arrive out of order). */
  let reads = 0;

  /** @param {string} text @param {boolean} [error] */
  const say = (text, error = false) => note.replaceChildren(h(error ? "div.card.error" : "div.card", {}, visible(text)));

  /** The state cell of a download at `received` of `total`. @param {number} received @param {number} total */
  const progress = (received, total) => h("div.download", {},
    h("progress", { max: Math.max(total, 1), value: Math.min(received, total) }),
    h("span.meta", {}, t("downloading", { received: size(received), total: size(total), percent: percent(received, total) })));

  /** @param {LocalModelInfo} model */
  const stateCell = (model) => {
    switch (model.state) {
      case "downloading": return progress(Math.max(model.received, reached.get(model.name) ?? 0), model.total);
      case "failed": return h("span.error", {}, t("failed", { error: model.error }));
      default: return h("span", {}, t(model.state));
    }
  };

  /** @param {LocalModelInfo} model */
  const actions = (model) => {
    const name = encodeURIComponent(model.name);
    if (model.state === "downloading") {
      return h("button.cancel", { onclick: () => act(async () => {
        if (!confirm(t("confirm_cancel", { name: model.name }))) return;
        await api("DELETE", `/v1/models/local/${name}`);
        say(t("cancelled", { name: model.name }));
      }) }, t("cancel"));
    }
    if (model.state === "ready" || model.state === "loaded") {
      return h("button.remove", { onclick: () => act(async () => {
        if (!confirm(t("confirm_remove", { name: model.name, size: size(model.bytes) }))) return;
        await api("DELETE", `/v1/models/local/${name}`);
        say(t("removed", { name: model.name }));
      }) }, t("remove"));
    }
    if (!model.pullable) return h("span.meta.by-hand", {}, t("by_hand", { path: model.path }));
    const source = model.source
      ? h("a.meta.source", { href: model.source, target: "_blank", rel: "noopener noreferrer", title: t("source_title") }, t("source"))
      : null;
    return [h("button.primary.download", { onclick: () => act(async () => {
      /** @type {LocalModelInfo} */
      const started = await api("POST", `/v1/models/local/${name}/pull`, {});
      say(started.state === "downloading" ? t("started", { name: model.name }) : t("done", { name: model.name }));
    }) }, t("download")), source ? " " : null, source];
  };

  /** @param {LocalModelInfo} model */
  const row = (model) => {
    const node = h("tr", { dataset: { model: model.name, state: model.state } },
      h("td", {}, h("code", {}, `local/${model.name}`), model.testModel ? h("span.tag", {}, t("test")) : null),
      h("td", {}, t(model.kind)),
      h("td", {}, size(model.bytes)),
      h("td", {}, t("tokens", { n: model.contextTokens })),
      h("td", {}, t("ram_gb", { n: model.minRamGb })),
      h("td.state", {}, stateCell(model)),
      h("td.actions", {}, actions(model)));
    rows.set(model.name, node);
    return node;
  };

  const show = async () => {
    const read = ++reads;
    try {
      /** @type {LocalModelList} */
      const list = await api("GET", "/v1/models/local");
      if (read !== reads) return;
      summary.textContent = [list.engine ? t("engine", { engine: list.engine }) : t("no_engine"),
        list.rssBytes ? t("memory", { rss: size(list.rssBytes) }) : ""].filter(Boolean).join(" · ");
      rows.clear();
      table.replaceChildren(h("tr", {}, ...["name", "kind", "size", "context", "ram", "state", "actions"].map((key) => h("th", {}, t(key)))),
        ...list.items.map(row));
    } catch (error) {
      say(String(error instanceof Error ? error.message : error), true);
    }
  };

  /** @param {() => Promise<void>} work */
  const act = async (work) => {
    try { await work(); } catch (error) { say(String(error instanceof Error ? error.message : error), true); }
    await show();
  };

  /** A download's progress moves its bar in place; its end reloads the list. @param {RuntimeEvent} event */
  const follow = (event) => {
    if (event.type === "local.model.download.progress") {
      reached.set(event.model, Math.max(event.received, reached.get(event.model) ?? 0));
      const node = rows.get(event.model);
      const cell = node?.querySelector("td.state");
      if (!node || !cell) { show(); return; }
      if (node.dataset.state !== "downloading") { show(); return; }
      cell.replaceChildren(progress(reached.get(event.model) ?? event.received, event.total));
    } else if (event.type === "local.model.download.completed") {
      reached.delete(event.model);
      say(t("done", { name: event.model }));
      show();
    } else if (event.type === "local.model.download.failed" || event.type === "local.model.download.cancelled") {
      reached.delete(event.model);
      show();
    }
  };
  const stop = onRuntimeEvent(follow);
  main.append(h("h1", {}, t("title")), h("p.meta", {}, t("intro")), summary, note, table);
  await show();
  return stop;
}
