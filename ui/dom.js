// @ts-check
// Building the UI's elements and showing the daemon's text in them, shared by every page: `h()`
// makes an element and shows its text children through `visible()`, which escapes characters
// that hide or reorder text. Imports nothing, so every module may use it.

/**
 * Text as it may be shown: controls and characters that hide or reorder text (ESC, C0/C1,
 * bidirectional embeddings, overrides and isolates, zero-width characters, invisible tags)
 * become visible escapes such as \u{202E}; newlines and tabs stay. The same rule as
 * `souz_protocol::display` for the CLI, tray and notifications.
 */
const HIDDEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200B-\u200F\u2028-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\uFFF9-\uFFFB]|\uDB40[\uDC00-\uDC7F]/g;
export function visible(text) {
  return String(text).replace(HIDDEN, (character) => `\\u{${(character.codePointAt(0) ?? 0).toString(16).toUpperCase()}}`);
}

/** Bytes in a readable unit (GB with one decimal from 1 GB on, MB from 1 MB on). @param {number} bytes */
export function size(bytes) {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} B`;
}

/** Builds an element: h("div.card", {onclick}, child, ...); text children are shown with visible(). */
export function h(tag, attributes = {}, ...children) {
  const [head, id] = tag.split("#");
  const [name, ...classes] = head.split(".");
  const node = document.createElement(name);
  if (id) node.id = id;
  if (classes.length) node.className = classes.join(" ");
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "value" || (key in node && typeof value !== "string")) node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" || typeof child === "number" ? visible(child) : child);
  }
  return node;
}

/** A time from the daemon in the browser's locale ("" when there is none).
 *  @param {string | null | undefined} at */
export const time = (at) => (at ? new Date(at).toLocaleString() : "");

/** A time still to come, as a person reads it: "in 9 minutes (10:58)", "через 9 минут (10:58)".
 *  @param {string | null | undefined} at @param {"en" | "ru"} lang */
export const until = (at, lang) => {
  if (!at) return "";
  const when = new Date(at);
  const seconds = Math.max(0, Math.round((when.getTime() - Date.now()) / 1000));
  /** @type {[number, Intl.RelativeTimeFormatUnit]} */
  const [value, unit] = seconds < 60 ? [seconds, "second"]
    : seconds < 3600 ? [Math.round(seconds / 60), "minute"]
      : seconds < 86400 ? [Math.round(seconds / 3600), "hour"]
        : [Math.round(seconds / 86400), "day"];
  const relative = new Intl.RelativeTimeFormat(lang, { numeric: "auto" }).format(value, unit);
  const clock = when.toLocaleTimeString(lang, { hour: "2-digit", minute: "2-digit" });
  return `${relative} (${clock})`;
};

/** A unified diff with its added, removed and hunk lines marked (`---`/`+++` name the files).
 *  @param {string} diff */
export function diffView(diff) {
  return h("pre.diff", {}, diff.split("\n").map((line) => {
    const header = line.startsWith("+++") || line.startsWith("---");
    const kind = line.startsWith("@@") ? "hunk" : header ? "" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    return h("span" + (kind ? "." + kind : ""), {}, line + "\n");
  }));
}

/** A value shortened for a tool call's line. @param {unknown} value */
export const preview = (value) => {
  if (value === undefined || value === null || value === "") return "";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 120 ? text.slice(0, 117) + "..." : text;
};
