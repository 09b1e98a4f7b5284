// Russian and English everywhere: every page the nav links to (pages merged later included),
// plus the first-run setup, rendered in both languages against a real `souz serve`. In Russian
// every visible text of the chrome and of the pages' headings, buttons, labels, table heads,
// links and placeholders must contain Cyrillic unless it is a product name, a number, an id or
// code; in English none may contain Cyrillic. The header's EN/RU switch and the user's
// `interfaceLanguage` setting follow each other. The daemon's errors are said in Russian by their
// code (what only the daemon can say stays as it wrote it), in English as it wrote them.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { shot, startSession, waitFor } from "./harness.mjs";

let session;

before(async () => { session = await startSession({ LANG: "C.UTF-8", LC_ALL: "" }); });
after(async () => { await session?.close(); });

/** Texts that need no translation: product and provider names, language codes, numbers, ids. */
const ALLOWED = /^(Souz|MCP|Claude|Claude Code|Claude Desktop|OpenAI|Anthropic|Qwen|GigaChat|Giga|AI Tunnel|Ollama|LM Studio|ChatGPT|Codex|Telegram|ChatGPT \(Codex\)|TOML|JSON|URL|API|EN|RU|ID|OK|[\d\s.,:;%()+\-–—×/·…]*|[0-9a-f-]{8,}|\S+\.(toml|json|md)|\[[a-z_.]+\]|[a-z0-9_.:/-]+)$/;
/** Routes a person reaches without a nav or tab link. */
const EXTRA_ROUTES = ["setup", "schedules/new", "settings/advanced/toml"];

/** The visible texts of the chrome and the page a person reads to find their way. */
function visibleTexts() {
  const selectors = "header a, header button, header option, #paused-banner, main h1, main h2, main h3, main button, main label, main th, main summary, main legend, main a, main .empty";
  const shown = (node) => node.getClientRects().length > 0 && getComputedStyle(node).visibility !== "hidden";
  const texts = [];
  for (const node of document.querySelectorAll(selectors)) {
    if (node.closest("code, pre, textarea, .token, [data-i18n-skip]") || !shown(node)) continue;
    const copy = node.cloneNode(true);
    for (const inner of copy.querySelectorAll("code, pre, select, textarea, .badge")) inner.remove();
    const text = (copy.textContent || "").replace(/\s+/g, " ").trim();
    if (text) texts.push(text);
  }
  for (const node of document.querySelectorAll("main [placeholder]")) {
    if (shown(node) && node.getAttribute("placeholder")) texts.push(node.getAttribute("placeholder"));
  }
  return texts;
}

/** Opens `route` and waits until the page stops changing. */
async function open(tab, route) {
  await tab.evaluate((hash) => { location.hash = hash; }, `#/${route}`);
  await tab.waitForSelector("main h1");
  let last = "";
  await waitFor(async () => {
    const now = await tab.evaluate(() => document.querySelector("main")?.innerHTML || "");
    const stable = now === last;
    last = now;
    await new Promise((done) => setTimeout(done, 200));
    return stable;
  }, `${route} to settle`);
}

/** Every route of the nav and of each section's tabs (as the page lists them now), and the
 *  extra ones. */
async function routes(tab) {
  const nav = await tab.$$eval("#nav a[data-page]", (links) => links.map((link) => link.dataset.page || ""));
  assert.ok(nav.length >= 6, `the nav lists the pages: ${nav}`);
  const all = [];
  for (const page of nav) {
    await open(tab, page);
    const tabs = await tab.$$eval("main a[data-tab]", (links) => links.map((link) => link.dataset.tab || ""));
    all.push(...(tabs.length ? tabs : [page]));
  }
  return [...new Set(all), ...EXTRA_ROUTES];
}

const cyrillic = /[\u0400-\u04FF]/;

test("the header switch and interfaceLanguage follow each other", async () => {
  assert.equal((await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: "ru" })).status, 200);
  const tab = await session.page("/inbox");
  await waitFor(() => tab.evaluate(() => document.documentElement.lang === "ru"), "Russian from interfaceLanguage");
  assert.equal((await tab.innerText('#nav a[data-page="inbox"]')).trim(), "Входящие");
  assert.equal(await tab.inputValue("#language"), "ru");

  await tab.selectOption("#language", "en");
  await waitFor(async () => (await session.api("GET", "/v1/me/settings")).body.settings.interfaceLanguage === "en", "interfaceLanguage set to en");
  assert.equal((await tab.innerText('#nav a[data-page="inbox"]')).trim(), "Inbox");
  await tab.waitForSelector("main h1");
  assert.doesNotMatch(await tab.textContent("main h1") || "", cyrillic);
  await tab.context().close();
});

test("the daemon's errors are said in the interface language", async () => {
  /** The message the page shows for a failed call, in `lang`. */
  const shown = async (lang, method, path, body) => {
    assert.equal((await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: lang })).status, 200);
    const tab = await session.page("/inbox");
    await waitFor(() => tab.evaluate((want) => document.documentElement.lang === want, lang), `the page in ${lang}`);
    const error = await tab.evaluate(async ([method, path, body]) => {
      const { api } = await import(new URL("api.js", document.baseURI).href);
      try { await api(method, path, body); return null; } catch (error) { return { message: error.message, code: error.code, detail: error.detail }; }
    }, [method, path, body]);
    await tab.context().close();
    assert.ok(error, `${method} ${path} failed`);
    return error;
  };
  const missing = await shown("ru", "GET", "/v1/chats/00000000-0000-4000-8000-000000000000/messages");
  assert.equal(missing.code, "chat_not_found");
  assert.equal(missing.message, "Такого чата нет (или он не ваш).");
  const invalid = await shown("ru", "PATCH", "/v1/me/settings", { interfaceLanguage: "de" });
  assert.equal(invalid.code, "invalid_request");
  assert.equal(invalid.message, `Запрос не принят: ${invalid.detail}`);
  assert.match(invalid.detail, /interfaceLanguage/);
  const english = await shown("en", "GET", "/v1/chats/00000000-0000-4000-8000-000000000000/messages");
  assert.equal(english.message, english.detail, "English shows the daemon's own words");
  assert.doesNotMatch(english.message, cyrillic);
});

for (const lang of /** @type {const} */ (["en", "ru"])) {
  test(`every page is in ${lang === "ru" ? "Russian" : "English"}`, async () => {
    assert.equal((await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: lang })).status, 200);
    const tab = await session.page("/inbox");
    await waitFor(() => tab.evaluate((want) => document.documentElement.lang === want, lang), `the page in ${lang}`);
    const problems = [];
    for (const route of await routes(tab)) {
      await open(tab, route);
      const texts = await tab.evaluate(visibleTexts);
      assert.ok(texts.length > 2, `${route} shows texts`);
      for (const text of texts) {
        const bad = lang === "ru" ? !cyrillic.test(text) && !ALLOWED.test(text) : cyrillic.test(text);
        if (bad) problems.push(`${route}: ${JSON.stringify(text)}`);
      }
      if (lang === "ru") await shot(tab, `${route.replaceAll("/", "-")}-ru`);
    }
    assert.deepEqual(problems, [], `untranslated (${lang}):\n${problems.join("\n")}`);
    await tab.context().close();
  });
}
