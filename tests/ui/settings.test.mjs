// Settings in tabs against a real `souz serve` in headless Chromium: every field of the everyday
// tabs (Model & keys, Approvals, Notifications) that the daemon's schema has is on its tab and,
// in Russian, its name and doc are Russian (the daemon serves English docs; ui/config-docs.js
// says them in Russian) — a field added to an everyday section without a Russian doc fails here; Advanced
// has every other field and the raw config.toml editor; a field saved from an everyday tab is
// written. Prints how many of all fields have a Russian doc.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { shot, startSession, waitFor } from "./harness.mjs";

let session;
before(async () => { session = await startSession({ LANG: "C.UTF-8", LC_ALL: "" }); });
after(async () => { await session?.close(); });

const cyrillic = /[\u0400-\u04FF]/;

/** The `section.key` names on the everyday tabs, by tab, from the daemon's schema and the
 *  page's own list (settings.js EVERYDAY). */
async function everydayKeys(tab) {
  const { body: doc } = await session.api("GET", "/v1/config");
  const everyday = await tab.evaluate(async () => (await import(new URL("settings.js", document.baseURI).href)).EVERYDAY);
  /** @type {Record<string, string[]>} */
  const byTab = {};
  for (const [name, listed] of Object.entries(everyday)) {
    byTab[name] = doc.sections.flatMap((section) => section.keys
      .filter((key) => listed.includes(`${section.name}.${key.name}`) || listed.includes(`${section.name}.*`))
      .map((key) => `${section.name}.${key.name}`));
    assert.ok(byTab[name].length > 0, `${name}: the daemon has its fields`);
  }
  return { byTab, doc };
}

test("every everyday field is on its tab with a Russian doc", async () => {
  assert.equal((await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: "ru" })).status, 200);
  const tab = await session.page("/settings/model", { height: 1400 });
  await waitFor(() => tab.evaluate(() => document.documentElement.lang === "ru"), "the page in Russian");
  const { byTab, doc } = await everydayKeys(tab);
  const problems = [];
  for (const [name, keys] of Object.entries(byTab)) {
    await tab.evaluate((hash) => { location.hash = hash; }, `#/settings/${name}`);
    await tab.waitForSelector(`main a.active[data-tab="settings/${name}"]`);
    await tab.waitForSelector("#settings-save");
    const shown = await tab.$$eval(".field[data-key]", (rows) => rows.map((row) => ({
      key: row.getAttribute("data-key") || "",
      label: row.querySelector("label")?.textContent || "",
      doc: row.querySelector(".doc")?.textContent || "",
    })));
    for (const key of keys) {
      const row = shown.find((item) => item.key === key);
      if (!row) { problems.push(`${name}: ${key} is not on the tab`); continue; }
      if (!cyrillic.test(row.doc)) problems.push(`${name}: ${key} has no Russian doc: ${JSON.stringify(row.doc)}`);
      if (!cyrillic.test(row.label)) problems.push(`${name}: ${key} has no Russian name: ${JSON.stringify(row.label)}`);
    }
    assert.deepEqual(shown.map((row) => row.key).sort(), [...keys].sort(), `${name}: only its own fields`);
    await shot(tab, `settings-${name}-ru`);
  }
  assert.deepEqual(problems, [], problems.join("\n"));

  // The rest: every other field on Advanced (also said in Russian where config-docs.js has it).
  await tab.evaluate(() => { location.hash = "#/settings/advanced"; });
  await tab.waitForSelector('main a.active[data-tab="settings/advanced"]');
  await tab.waitForSelector("#settings-save");
  const advanced = await tab.$$eval(".field[data-key]", (rows) => rows.map((row) => ({
    key: row.getAttribute("data-key") || "", doc: row.querySelector(".doc")?.textContent || "",
  })));
  const everyday = new Set(Object.values(byTab).flat());
  assert.ok(advanced.length > 20, "Advanced has the other fields");
  for (const row of advanced) assert.ok(!everyday.has(row.key), `${row.key} is on an everyday tab and on Advanced`);
  const all = doc.sections.flatMap((section) => section.keys.map((key) => `${section.name}.${key.name}`));
  const russian = await tab.evaluate(async (keys) => {
    const { hasRussianDoc } = await import(new URL("config-docs.js", document.baseURI).href);
    return keys.filter((key) => hasRussianDoc(key));
  }, all);
  console.log(`MEASURE fields with a Russian doc: ${russian.length} of ${all.length}`);
  // The raw editor stays, under Advanced.
  await tab.click("#raw-tab");
  await tab.waitForSelector("#raw-toml");
  assert.equal(await tab.evaluate(() => location.hash), "#/settings/advanced/toml");
  await tab.context().close();
  await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: "en" });
});

test("a notification switch saved from its tab is written to config.toml", async () => {
  const tab = await session.page("/settings/notifications");
  await tab.waitForSelector("#field-notifications-turn_finished");
  const was = await tab.isChecked("#field-notifications-turn_finished");
  await tab.click("#field-notifications-turn_finished");
  await tab.click("#settings-save");
  await tab.waitForSelector("#settings-result .ok");
  assert.match(readFileSync(join(session.home, "config.toml"), "utf8"), new RegExp(`turn_finished = ${!was}`));
  await tab.context().close();
});
