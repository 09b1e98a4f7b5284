// The Schedules page (ui/schedules.js, ui/schedule-form.js) in headless Chromium against a real
// `souz serve`: an invalid cron shows the daemon's error inline with Save disabled and nothing
// stored; a valid one previews 5 fires; the confirmation says what the schedule may do unasked;
// the list shows it with its next fire; pause hides the next fire and resume brings it back;
// Run now adds a history row in the state the API reports (no model is configured here); the
// history links the run's chat; delete removes it. Each step is checked against the API too.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { shot, startSession, waitFor } from "./harness.mjs";

let session;
const api = (...args) => session.api(...args);

before(async () => { session = await startSession(); });
after(async () => { await session?.close(); });

test("the Schedules page creates, previews, pauses, runs, shows history and deletes", async () => {
  const tab = await session.page("/schedules");
  await tab.waitForSelector("h1:text('Schedules')");
  await tab.waitForSelector("#schedules td.empty");

  // The form: an invalid cron is refused inline by the daemon, and Save stays disabled.
  await tab.click("#schedule-new");
  await tab.waitForSelector("#schedule-form");
  const zone = await tab.inputValue("#schedule-zone");
  assert.equal(zone, await tab.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone), "the zone defaults to the browser's");
  await tab.fill("#schedule-name", "Inbox summary");
  await tab.fill("#schedule-prompt", "Summarise the new files in ~/Inbox");
  await tab.fill("#schedule-cron", "61 8 * * *");
  await tab.waitForSelector("#schedule-spec-error:not([hidden])");
  assert.match(await tab.textContent("#schedule-spec-error"), /invalid cron expression/);
  assert.equal(await tab.locator("#schedule-preview li").count(), 0);
  assert.ok(await tab.isDisabled("#schedule-save"), "Save is disabled while the spec is refused");
  assert.deepEqual((await api("GET", "/v1/schedules")).body.items, [], "nothing is stored");

  // An unknown zone is refused the same way.
  await tab.fill("#schedule-cron", "30 8 * * 1-5");
  await tab.fill("#schedule-zone", "Mars/Olympus");
  await tab.waitForSelector("#schedule-spec-error:not([hidden])");
  assert.ok(await tab.isDisabled("#schedule-save"));

  // A valid spec: the preview shows the next 5 fires, the daemon's own.
  await tab.fill("#schedule-zone", "Europe/Berlin");
  await tab.waitForSelector("#schedule-preview li:nth-child(5)");
  await waitFor(() => tab.isEnabled("#schedule-save"), "Save enabled");
  const shown = await tab.$$eval("#schedule-preview li", (items) => items.map((item) => item.getAttribute("data-at")));
  const preview = await api("GET", `/v1/schedules/preview?spec=${encodeURIComponent("30 8 * * 1-5")}&zone=Europe/Berlin`);
  assert.deepEqual(shown, preview.body.fires);
  assert.equal(shown.length, 5);

  // The confirmation says what it may do unasked: read-only by default.
  await tab.click("#schedule-save");
  await tab.waitForSelector("#schedule-confirm:not([hidden])");
  assert.match(await tab.textContent("#schedule-grants"), /read-only tools only/);
  assert.match(await tab.textContent("#schedule-confirm"), /Anything else waits for your approval/);
  await shot(tab, "schedule-confirm");
  assert.deepEqual((await api("GET", "/v1/schedules")).body.items, [], "nothing is stored before the confirmation");
  await tab.click("#schedule-confirm-save");

  // The list: the schedule with its next fire.
  await tab.waitForSelector("tr.schedule");
  const [stored] = (await api("GET", "/v1/schedules")).body.items;
  assert.equal(stored.name, "Inbox summary");
  assert.equal(stored.spec, "30 8 * * 1-5");
  assert.equal(stored.zone, "Europe/Berlin");
  assert.deepEqual(stored.envelope, { tools: [], folders: [], hosts: [] });
  assert.deepEqual(stored.action, { type: "prompt", prompt: "Summarise the new files in ~/Inbox", settings: stored.action.settings });
  const row = `tr.schedule[data-schedule='${stored.id}']`;
  assert.equal(await tab.getAttribute(`${row} .next`, "data-at"), stored.nextFire);
  assert.match(await tab.textContent(`${row} .when`), /Weekdays at 08:30/);
  await shot(tab, "schedules");

  // Pause hides the next fire; resume brings it back.
  await tab.click(`${row} button.toggle`);
  await tab.waitForSelector(`${row}[data-enabled='false'] .tag.paused`);
  assert.equal(await tab.locator(`${row} .next`).count(), 0);
  const paused = (await api("GET", `/v1/schedules/${stored.id}`)).body;
  assert.equal(paused.enabled, false);
  assert.equal(paused.nextFire, null);
  await tab.click(`${row} button.toggle`);
  await tab.waitForSelector(`${row}[data-enabled='true'] .next`);
  const resumed = (await api("GET", `/v1/schedules/${stored.id}`)).body;
  assert.equal(await tab.getAttribute(`${row} .next`, "data-at"), resumed.nextFire);

  // Run now: the history gets a row, in the state the API reports once the run has ended.
  await tab.click(`${row} button.run`);
  await tab.waitForSelector("#schedule-note p.ok");
  const ended = await waitFor(async () => {
    const { items } = (await api("GET", `/v1/schedules/${stored.id}/runs`)).body;
    return items.length === 1 && ["ok", "failed", "blocked", "skipped"].includes(items[0].state) ? items[0] : null;
  }, "the run to end");
  await tab.click(`${row} a.history`);
  await tab.waitForSelector(`#schedule-runs tr.run[data-run='${ended.id}']`);
  assert.equal(await tab.locator("#schedule-runs tr.run").count(), 1);
  assert.equal(await tab.getAttribute(`tr.run[data-run='${ended.id}']`, "data-state"), ended.state);
  assert.equal(await tab.getAttribute(`tr.run[data-run='${ended.id}'] .tag`, "data-state"), ended.state);
  assert.equal((await tab.textContent(`tr.run[data-run='${ended.id}'] .reason`)).trim(), ended.reason ?? "");
  await shot(tab, "schedule-history");
  if (ended.chatId) {
    await tab.click(`tr.run[data-run='${ended.id}'] a.chat-link`);
    await waitFor(() => tab.evaluate(() => location.hash), "the chat route");
    assert.equal(await tab.evaluate(() => location.hash), `#/chat/${ended.chatId}`);
  }

  // Delete, after the confirmation.
  await tab.evaluate(() => { location.hash = "#/schedules"; });
  await tab.waitForSelector(row);
  tab.once("dialog", (dialog) => dialog.accept());
  await tab.click(`${row} button.delete`);
  await tab.waitForSelector("#schedules td.empty");
  assert.deepEqual((await api("GET", "/v1/schedules")).body.items, []);
  await tab.context().close();
});

test("editing keeps the schedule's time and changes what it may do unasked", async () => {
  const created = await api("POST", "/v1/schedules", {
    name: "Tidy downloads", spec: "0 22 * * *", zone: "America/New_York",
    action: { type: "prompt", prompt: "Tidy ~/Downloads" },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const tab = await session.page(`/schedules/${created.body.id}/edit`);
  await tab.waitForSelector("#schedule-preview li:nth-child(5)");
  assert.equal(await tab.inputValue("#schedule-cron"), "0 22 * * *");
  assert.equal(await tab.inputValue("#schedule-zone"), "America/New_York");
  await tab.fill("#schedule-folders", "/tmp/downloads\n");
  await tab.fill("#schedule-hosts", "example.org");
  await tab.click("#schedule-save");
  await tab.waitForSelector("#schedule-confirm:not([hidden])");
  const grants = await tab.textContent("#schedule-grants");
  assert.match(grants, /write in \/tmp\/downloads/);
  assert.match(grants, /reach example\.org/);
  await tab.click("#schedule-confirm-save");
  await tab.waitForSelector("tr.schedule");
  const changed = (await api("GET", `/v1/schedules/${created.body.id}`)).body;
  assert.deepEqual(changed.envelope, { tools: [], folders: ["/tmp/downloads"], hosts: ["example.org"] });
  assert.equal(changed.spec, "0 22 * * *");
  assert.equal(changed.nextFire, created.body.nextFire);
  assert.equal(await api("DELETE", `/v1/schedules/${created.body.id}`).then((answer) => answer.status), 204);
  await tab.context().close();
});
