// The web UI's sections against a real `souz serve` in headless Chromium: the nav lists Chat,
// Inbox, Activity, Schedules, Connections, Skills & Memory and Settings in that order, in
// English and in Russian; a section with several pages shows them as tabs; the older addresses
// (which the app's tray and notifications open: `#/queue/<id>`, `#/live`, `#/grants`, ...)
// land on their new place with the right section and tab marked; an unknown address is the
// Chat; the header shows the gate's state; and at 1280 px the nav takes one line and overflows
// nothing in either language (measured). Screenshot: `nav-ru`.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { shot, startSession, waitFor } from "./harness.mjs";

let session;
before(async () => { session = await startSession(); });
after(async () => { await session?.close(); });

const NAV = {
  en: ["Chat", "Inbox", "Activity", "Schedules", "Connections", "Skills & Memory", "Settings"],
  ru: ["Чат", "Входящие", "Активность", "Расписания", "Подключения", "Навыки и память", "Настройки"],
};

/** A page in `lang` at `width` px, opened at `route`. */
async function open(lang, route, width = 1280) {
  assert.equal((await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: lang })).status, 200);
  const context = await session.browser.newContext({ viewport: { width, height: 800 } });
  const tab = await context.newPage();
  tab.on("pageerror", (error) => { throw error; });
  await tab.goto(`${session.base}/app/#token=${session.token}&go=${route}`);
  await tab.waitForSelector("#connection.up");
  await waitFor(() => tab.evaluate((want) => document.documentElement.lang === want, lang), `the page in ${lang}`);
  return tab;
}

/** The nav's labels as shown (a badge's count left out). */
const labels = (tab) => tab.$$eval("#nav a", (links) => links.map((link) => [...link.childNodes]
  .filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => node.textContent).join("").trim()));

test("the nav lists the sections, Chat first, in English and Russian", async () => {
  for (const lang of /** @type {const} */ (["en", "ru"])) {
    const tab = await open(lang, "/chat");
    assert.deepEqual(await labels(tab), NAV[lang]);
    await tab.waitForSelector('#nav a.active[data-page="chat"]');
    // The gate's state is in the header, and the Inbox link carries the pending count.
    await tab.waitForSelector("#gate.on:not([hidden])");
    assert.equal((await tab.textContent("#gate")).trim(), lang === "en" ? "Approvals on" : "Одобрения включены");
    await tab.context().close();
  }
  await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: "en" });
});

test("older addresses land on their new place, section and tab marked", async () => {
  const { status, body } = await session.api("POST", "/v1/tool-calls", {
    tool: "NewFile", arguments: { path: `${session.user}/nav.txt`, text: "nav" }, wait_ms: 0,
  });
  assert.equal(status, 202, JSON.stringify(body));
  const call = await waitFor(async () => {
    const answer = await session.api("GET", `/v1/tool-calls/${body.id}`);
    return answer.body.approval_id ? answer.body : null;
  }, "the approval");
  const moved = [
    // [old address, new address, nav section, tab (null: a section without tabs)]
    [`queue/${call.approval_id}`, `inbox/${call.approval_id}`, "inbox", null],
    ["queue", "inbox", "inbox", null],
    ["live", "activity/live", "activity", "activity/live"],
    ["history", "activity/history", "activity", "activity/history"],
    ["history/turn/abc", "activity/history/turn/abc", "activity", "activity/history"],
    ["audit", "activity/audit", "activity", "activity/audit"],
    ["grants", "settings/approvals", "settings", "settings/approvals"],
    ["clients", "connections/clients", "connections", "connections/clients"],
    ["connect", "connections/claude", "connections", "connections/claude"],
    ["servers", "connections/servers", "connections", "connections/servers"],
    ["models", "settings/model", "settings", "settings/model"],
    ["settings/form", "settings/advanced", "settings", "settings/advanced"],
    ["settings/raw", "settings/advanced/toml", "settings", "settings/advanced"],
    ["activity", "activity/live", "activity", "activity/live"],
    ["connections", "connections/claude", "connections", "connections/claude"],
    ["memory", "memory", "skills", "memory"],
    ["schedules/new", "schedules/new", "schedules", null],
    ["no-such-page", "chat", "chat", null],
  ];
  const tab = await open("en", "/chat");
  for (const [old, now, section, subtab] of moved) {
    await tab.evaluate((hash) => { location.hash = hash; }, `#/${old}`);
    await waitFor(() => tab.evaluate((want) => location.hash === want, `#/${now}`), `#/${old} to become #/${now}`);
    await tab.waitForSelector(`#nav a.active[data-page="${section}"]`);
    assert.equal(await tab.locator("#nav a.active").count(), 1, `${old}: one section marked`);
    if (subtab) await tab.waitForSelector(`main a.active[data-tab="${subtab}"]`);
    else assert.equal(await tab.locator("#subnav").count(), 0, `${old}: no tabs`);
  }
  // The approval the tray's "show" opens is the focused card.
  await tab.evaluate((hash) => { location.hash = hash; }, `#/queue/${call.approval_id}`);
  await tab.waitForSelector(`[data-approval="${call.approval_id}"].focus`);
  await session.api("POST", `/v1/approvals/${call.approval_id}/decision`, { decision: "deny" });
  await tab.context().close();
});

test("at 1280 px the nav takes one line and overflows nothing, in Russian and English", async () => {
  for (const lang of ["ru", "en"]) {
    const tab = await open(lang, "/settings/approvals");
    const measure = await tab.evaluate(() => {
      const nav = /** @type {HTMLElement} */ (document.getElementById("nav"));
      const links = [...nav.querySelectorAll("a")].map((link) => link.getBoundingClientRect());
      const after = [...document.querySelectorAll("header > :not(#nav):not(.logo)")]
        .filter((node) => node.getClientRects().length)
        .map((node) => node.getBoundingClientRect().left);
      return {
        tops: [...new Set(links.map((rect) => Math.round(rect.top)))],
        navHeight: nav.getBoundingClientRect().height,
        linkHeight: Math.max(...links.map((rect) => rect.height)),
        overflow: nav.scrollWidth - nav.clientWidth,
        lastRight: Math.max(...links.map((rect) => rect.right)),
        nextLeft: Math.min(...after),
        header: document.querySelector("header")?.getBoundingClientRect().height ?? 0,
      };
    });
    assert.equal(measure.tops.length, 1, `${lang}: the nav's links sit on ${measure.tops.length} lines`);
    assert.ok(measure.navHeight < measure.linkHeight * 1.5, `${lang}: the nav is ${measure.navHeight}px tall for ${measure.linkHeight}px links`);
    assert.ok(measure.overflow <= 0, `${lang}: the nav overflows by ${measure.overflow}px`);
    assert.ok(measure.lastRight <= measure.nextLeft, `${lang}: the last link (${measure.lastRight}) runs into the header's controls (${measure.nextLeft})`);
    assert.ok(measure.header < 60, `${lang}: the header is ${measure.header}px tall`);
    if (lang === "ru") await shot(tab, "nav-ru");
    await tab.context().close();
  }
  await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: "en" });
});
