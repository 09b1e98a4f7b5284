// @ts-check
// Interface language (English and Russian). Each page module owns its strings:
//   const t = strings({ en: { save: "Save" }, ru: { save: "Сохранить" } });
//   t("save")          // in the current language, English when a Russian string is missing
//   t("saved_n", { n: 3 })  // "{n}" placeholders
// The language is the person's choice in this browser (kept in localStorage), else the daemon's
// `interfaceLanguage` setting (which follows the system locale until the person sets it), else
// the browser's.

const STORAGE_KEY = "souz.lang";
/** @typedef {"en" | "ru"} Language */
/** @typedef {Record<string, string>} Table */

/** The daemon's `interfaceLanguage`, once known. @type {Language | null} */
let daemonLanguage = null;

/** @returns {Language} */
export function language() {
  let chosen = null;
  try { chosen = localStorage.getItem(STORAGE_KEY); } catch { /* storage off: follow the browser */ }
  if (chosen === "en" || chosen === "ru") return chosen;
  if (daemonLanguage) return daemonLanguage;
  return (navigator.language || "en").toLowerCase().startsWith("ru") ? "ru" : "en";
}

/** Remembers the choice; the caller re-renders. @param {Language} lang */
export function setLanguage(lang) {
  try { localStorage.setItem(STORAGE_KEY, lang); } catch { /* storage off: this page only */ }
  document.documentElement.lang = lang;
}

/** Follows the daemon's `interfaceLanguage` setting (unless this browser chose one).
 *  @param {string | null | undefined} lang */
export function followDaemonLanguage(lang) {
  daemonLanguage = lang === "ru" || lang === "en" ? lang : null;
  document.documentElement.lang = language();
}

/** A translator over one module's strings.
 *  @param {{en: Table, ru?: Table}} tables
 *  @returns {(key: string, values?: Record<string, string | number>) => string} */
export function strings(tables) {
  return (key, values = {}) => {
    const table = language() === "ru" && tables.ru && key in tables.ru ? tables.ru : tables.en;
    const text = table[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  };
}
