// @ts-check
// Markdown for the agents' answers: a small, hand-written subset rendered straight into DOM
// nodes. Nothing from the model is ever parsed as HTML: every piece of text becomes a text
// node (shown through visible(), like all text from the daemon), so `<img onerror=…>` or
// `<script>` in an answer is shown as the characters it is. Links keep only http(s) and
// mailto targets (anything else, `javascript:` included, stays plain text) and open in a new
// tab without access to this page (rel="noopener noreferrer").
//
// Supported: ATX headings, paragraphs, line breaks, **bold**, *italic* / _italic_,
// ~~strike~~, `code`, fenced code blocks (``` or ~~~, with a Copy button), bullet and numbered
// lists (one level), > quotes, --- rules, GFM pipe tables, [text](url) links and bare URLs.

import { visible } from "./dom.js";
import { strings } from "./i18n.js";

const t = strings({
  en: { copy: "Copy", copied: "Copied", copy_failed: "Copy failed" },
  ru: { copy: "Копировать", copied: "Скопировано", copy_failed: "Не удалось скопировать" },
});

/** @param {string} tag @param {string} [className] @returns {HTMLElement} */
function node(tag, className) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  return element;
}

/** A text node showing `text` as it may be shown. @param {string} text */
const textNode = (text) => document.createTextNode(visible(text));

/** The URL a link may open, or null: absolute http(s) and mailto only.
 *  @param {string} target @returns {string | null} */
export function safeUrl(target) {
  const trimmed = target.trim();
  if (!/^(https?:\/\/|mailto:)/i.test(trimmed)) return null;
  try {
    const url = new URL(trimmed);
    return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

/** @param {string} href @param {string} label */
function link(href, label) {
  const anchor = /** @type {HTMLAnchorElement} */ (node("a"));
  anchor.href = href;
  anchor.target = "_blank";
  anchor.rel = "noopener noreferrer";
  anchor.append(...inline(label, false));
  return anchor;
}

// Inline spans, tried at each position in this order; only code spans and bare URLs (`anywhere`)
// may start inside a word.
const INLINE = [
  { anywhere: true, re: /^`([^`\n]+)`/, make: (m) => { const code = node("code"); code.append(textNode(m[1])); return code; } },
  { re: /^\*\*(?=\S)([\s\S]*?\S)\*\*/, make: (m, links) => wrap("strong", m[1], links) },
  { re: /^__(?=\S)([\s\S]*?\S)__/, make: (m, links) => wrap("strong", m[1], links) },
  { re: /^~~(?=\S)([\s\S]*?\S)~~/, make: (m, links) => wrap("del", m[1], links) },
  { re: /^\*(?=[^\s*])([\s\S]*?[^\s*])\*/, make: (m, links) => wrap("em", m[1], links) },
  { re: /^_(?=[^\s_])([\s\S]*?[^\s_])_(?![A-Za-z0-9])/, make: (m, links) => wrap("em", m[1], links) },
  {
    re: /^\[([^\]\n]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/,
    make: (m, links) => {
      const href = links ? safeUrl(m[2]) : null;
      return href ? link(href, m[1]) : textNode(m[0]);
    },
  },
  {
    anywhere: true,
    re: /^(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/,
    make: (m, links) => {
      const href = links ? safeUrl(m[1]) : null;
      return href ? link(href, m[1]) : textNode(m[1]);
    },
  },
];

/** @param {string} tag @param {string} text @param {boolean} links */
function wrap(tag, text, links) {
  const element = node(tag);
  element.append(...inline(text, links));
  return element;
}

/** Inline Markdown of `text` as nodes; `links` false inside a link's own label.
 *  @param {string} text @param {boolean} [links] @returns {Node[]} */
function inline(text, links = true) {
  /** @type {Node[]} */
  const out = [];
  let plain = "";
  const flush = () => { if (plain) { out.push(textNode(plain)); plain = ""; } };
  let rest = text;
  while (rest) {
    if (rest.startsWith("\\") && rest.length > 1 && /[\\`*_{}[\]()#+\-.!~|>]/.test(rest[1])) {
      plain += rest[1];
      rest = rest.slice(2);
      continue;
    }
    if (rest.startsWith("  \n") || rest.startsWith("\\\n")) {
      flush();
      out.push(node("br"));
      rest = rest.slice(rest.indexOf("\n") + 1);
      continue;
    }
    let matched = false;
    // A span starts at a word boundary (so snake_case_names stay as they are).
    const boundary = !plain || /[\s([{"'>*_~-]$/.test(plain);
    for (const { anywhere, re, make } of INLINE) {
      if (!boundary && !anywhere) continue;
      const match = re.exec(rest);
      if (!match) continue;
      flush();
      out.push(make(match, links));
      rest = rest.slice(match[0].length);
      matched = true;
      break;
    }
    if (!matched) {
      plain += rest[0];
      rest = rest.slice(1);
    }
  }
  flush();
  return out;
}

/** A fenced code block with a Copy button. @param {string} code @param {string} language */
function codeBlock(code, language) {
  const figure = node("div", "code-block");
  const pre = node("pre");
  const element = node("code");
  if (language) element.dataset.language = language;
  element.append(textNode(code));
  pre.append(element);
  const copy = /** @type {HTMLButtonElement} */ (node("button", "copy"));
  copy.type = "button";
  copy.textContent = t("copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(code);
      copy.textContent = t("copied");
    } catch {
      copy.textContent = t("copy_failed");
    }
    setTimeout(() => { copy.textContent = t("copy"); }, 1500);
  });
  figure.append(copy, pre);
  return figure;
}

/** The cells of a table row `| a | b |`. @param {string} line */
function cells(line) {
  let body = line.trim();
  if (body.startsWith("|")) body = body.slice(1);
  if (body.endsWith("|") && !body.endsWith("\\|")) body = body.slice(0, -1);
  return body.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;
const LIST_ITEM = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/;

/** @param {string[]} header @param {string[]} rows @param {string} rule */
function table(header, rows, rule) {
  const aligns = cells(rule).map((cell) => (cell.startsWith(":") && cell.endsWith(":") ? "center" : cell.endsWith(":") ? "right" : ""));
  const element = node("table", "md-table");
  const head = node("thead");
  const headRow = node("tr");
  header.forEach((cell, index) => {
    const th = node("th");
    if (aligns[index]) th.style.textAlign = aligns[index];
    th.append(...inline(cell));
    headRow.append(th);
  });
  head.append(headRow);
  const body = node("tbody");
  for (const row of rows) {
    const tr = node("tr");
    const values = cells(row);
    header.forEach((_, index) => {
      const td = node("td");
      if (aligns[index]) td.style.textAlign = aligns[index];
      td.append(...inline(values[index] ?? ""));
      tr.append(td);
    });
    body.append(tr);
  }
  element.append(head, body);
  const scroll = node("div", "table-scroll");
  scroll.append(element);
  return scroll;
}

/** Renders `source` into a fragment of block nodes.
 *  @param {string} source @returns {DocumentFragment} */
export function renderMarkdown(source) {
  const fragment = document.createDocumentFragment();
  const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
  let index = 0;
  /** @type {string[]} */
  let paragraph = [];
  const endParagraph = () => {
    if (!paragraph.length) return;
    const p = node("p");
    p.append(...inline(paragraph.join("\n")));
    fragment.append(p);
    paragraph = [];
  };
  while (index < lines.length) {
    const line = lines[index];
    const fence = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      endParagraph();
      const body = [];
      index += 1;
      while (index < lines.length && !lines[index].trim().startsWith(fence[1])) body.push(lines[index++]);
      index += 1;
      fragment.append(codeBlock(body.join("\n"), fence[2]));
      continue;
    }
    if (!line.trim()) { endParagraph(); index += 1; continue; }
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      endParagraph();
      const element = node(`h${Math.min(heading[1].length + 2, 6)}`, "md-heading");
      element.append(...inline(heading[2]));
      fragment.append(element);
      index += 1;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { endParagraph(); fragment.append(node("hr")); index += 1; continue; }
    if (line.includes("|") && index + 1 < lines.length && TABLE_RULE.test(lines[index + 1]) && lines[index + 1].includes("-")) {
      endParagraph();
      const header = cells(line);
      const rule = lines[index + 1];
      index += 2;
      const rows = [];
      while (index < lines.length && lines[index].includes("|") && lines[index].trim()) rows.push(lines[index++]);
      fragment.append(table(header, rows, rule));
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      endParagraph();
      const quoted = [];
      while (index < lines.length && /^\s{0,3}>/.test(lines[index])) quoted.push(lines[index++].replace(/^\s{0,3}>\s?/, ""));
      const quote = node("blockquote");
      quote.append(renderMarkdown(quoted.join("\n")));
      fragment.append(quote);
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      endParagraph();
      const ordered = /\d/.test(item[1]);
      const list = /** @type {HTMLOListElement} */ (node(ordered ? "ol" : "ul"));
      if (ordered && parseInt(item[1], 10) !== 1) list.start = parseInt(item[1], 10);
      while (index < lines.length) {
        const current = LIST_ITEM.exec(lines[index]);
        if (!current || /\d/.test(current[1]) !== ordered) break;
        const text = [current[2]];
        index += 1;
        // Continuation lines are indented.
        while (index < lines.length && /^\s{2,}\S/.test(lines[index]) && !LIST_ITEM.exec(lines[index])) text.push(lines[index++].trim());
        const li = node("li");
        li.append(...inline(text.join("\n")));
        list.append(li);
      }
      fragment.append(list);
      continue;
    }
    paragraph.push(line);
    index += 1;
  }
  endParagraph();
  return fragment;
}
