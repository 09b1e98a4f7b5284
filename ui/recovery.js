// @ts-check
// Recovery mode: config.toml has problems, so Souz serves only this page, /health and the
// config routes. The page lists every problem with its line and column, lets the person fix
// the file here, and once a valid text is saved (nothing is written before that) waits for
// Souz to start normally and reloads.

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { h } from "./dom.js";
import { problemItems, selectProblem } from "./settings.js";

/** @typedef {import("./types.js").ConfigProblem} ConfigProblem */
/** @typedef {{recovery: boolean, path: string, revision: string, text: string, problems: ConfigProblem[]}} RecoveryDocument */

const t = strings({
  en: {
    title: "Souz is in recovery mode",
    intro: "config.toml has problems, so Souz has not started. Fix them below; nothing is written until the whole file is valid, and then Souz starts.",
    problems: "Problems",
    save: "Validate and save",
    saved: "Saved. Souz is starting…",
    not_started: "Saved, but Souz did not answer yet; reload the page in a moment.",
    rejected: "Not saved: the file still has problems.",
  },
  ru: {
    title: "Souz в режиме восстановления",
    intro: "В config.toml есть ошибки, поэтому Souz не запущен. Исправьте их ниже; файл не записывается, пока он целиком не станет корректным, после этого Souz запустится.",
    problems: "Ошибки",
    save: "Проверить и сохранить",
    saved: "Сохранено. Souz запускается…",
    not_started: "Сохранено, но Souz ещё не ответил; обновите страницу чуть позже.",
    rejected: "Не сохранено: в файле остались ошибки.",
  },
});

/** The daemon's public /health status, or null while it does not answer (e.g. starting). */
async function healthStatus() {
  try {
    const health = await fetch("/health").then((answer) => answer.json());
    return String(health?.status ?? "");
  } catch { return null; }
}

/** Whether the daemon is in recovery mode (its public /health says so). */
export async function inRecovery() {
  return (await healthStatus()) === "recovery";
}

/** @param {HTMLElement} main */
export async function recoveryPage(main) {
  /** @type {RecoveryDocument} */
  const doc = await api("GET", "/v1/config");
  const area = /** @type {HTMLTextAreaElement} */ (h("textarea.raw#recovery-toml", { spellcheck: false, value: doc.text }));
  const list = h("ul.problems#recovery-problems");
  const note = h("p#recovery-note");
  /** @param {ConfigProblem} problem */
  const locate = (problem) => selectProblem(area, problem);
  /** @param {ConfigProblem[]} problems */
  const show = (problems) => list.replaceChildren(...problemItems(problems, locate));
  show(doc.problems);
  const revision = doc.revision;
  const save = h("button.primary#recovery-save", {
    onclick: async () => {
      note.className = "";
      try {
        await api("PUT", "/v1/config", { text: area.value, revision });
        note.className = "ok";
        note.textContent = t("saved");
        for (let tries = 0; tries < 100; tries++) {
          await new Promise((done) => setTimeout(done, 300));
          const status = await healthStatus();
          if (status !== null && status !== "recovery") { location.reload(); return; }
        }
        note.textContent = t("not_started");
      } catch (error) {
        const problems = /** @type {{problems?: ConfigProblem[]} | null} */ (error.body)?.problems;
        note.className = "error";
        note.textContent = problems ? t("rejected") : String(error.message || error);
        if (problems) { show(problems); const first = problems.find((problem) => problem.line); if (first) locate(first); }
      }
    },
  }, t("save"));
  main.append(h("h1", {}, t("title")), h("p", {}, t("intro")),
    h("div.card.error-card", {}, h("h2", {}, t("problems")), list),
    h("p.meta", {}, doc.path), area, h("div.row", {}, save), note);
}
