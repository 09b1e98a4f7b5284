// The Memory page in headless Chromium against a real daemon: facts added through the API and
// the page are listed; search shows scores; filter by kind; edit a fact; pin it; see its
// evidence (written by hand); forget one (gone from the API too). Screenshot: memory.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { shot, startSession, waitFor } from "./harness.mjs";

let session;
const api = (...args) => session.api(...args);

before(async () => { session = await startSession(); });
after(async () => { await session?.close(); });

test("the Memory page searches, filters, edits, pins, shows evidence and forgets", async () => {
  const editor = await api("POST", "/v1/memory", { title: "Editor", body: "Prefers helix over vim", kind: "PREFERENCE" });
  assert.equal(editor.status, 201, JSON.stringify(editor.body));
  const deploy = await api("POST", "/v1/memory", { title: "Deploys", body: "Deploys go through staging first", kind: "PROCEDURE" });
  assert.equal(deploy.status, 201, JSON.stringify(deploy.body));

  const tab = await session.page("/memory");
  await tab.waitForSelector(`.memory-fact[data-id="${editor.body.id}"]`);
  assert.equal(await tab.locator(".memory-fact").count(), 2);

  // Add through the page.
  await tab.fill("#memory-new", "Tea, not coffee, in the afternoon");
  await tab.click("#memory-add button");
  await tab.waitForSelector(".memory-fact:has-text('Tea, not coffee')");
  assert.equal(await tab.locator(".memory-fact").count(), 3);

  // Filter by kind.
  await tab.selectOption("#memory-kind", "PROCEDURE");
  await waitFor(async () => (await tab.locator(".memory-fact").count()) === 1, "the kind filter");
  assert.match(await tab.textContent(".memory-fact"), /staging/);
  await tab.selectOption("#memory-kind", "");
  await waitFor(async () => (await tab.locator(".memory-fact").count()) === 3, "all kinds again");

  // Search, with scores.
  await tab.fill("#memory-query", "which editor is preferred");
  await tab.click("#memory-search button[type=submit]");
  await tab.waitForSelector(".memory-fact .score");
  assert.equal(await tab.locator(".memory-fact").count(), 1);
  assert.match(await tab.textContent(".memory-fact"), /helix/);
  await tab.click("#memory-search button[type=button]");
  await waitFor(async () => (await tab.locator(".memory-fact").count()) === 3, "the list again");

  // Edit and pin.
  const card = () => tab.locator(`.memory-fact[data-id="${editor.body.id}"]`);
  await card().locator("button.edit").click();
  await card().locator("textarea.edit-body").fill("Prefers helix, with vim keys");
  await card().locator("button.save").click();
  await tab.waitForSelector(".memory-fact:has-text('with vim keys')");
  const edited = await api("GET", `/v1/memory/${editor.body.id}`);
  assert.equal(edited.body.body, "Prefers helix, with vim keys");
  await card().locator("button.pin").click();
  await tab.waitForSelector(`.memory-fact[data-id="${editor.body.id}"] .badge.pinned`);
  assert.equal((await api("GET", `/v1/memory/${editor.body.id}`)).body.pinned, true);

  // Evidence.
  await card().locator("button.show-evidence").click();
  await tab.waitForSelector(`.memory-fact[data-id="${editor.body.id}"] .evidence-item`);
  assert.match(await card().locator(".evidence-item").textContent(), /written by hand/);
  await shot(tab, "memory");

  // Forget.
  tab.once("dialog", (dialog) => dialog.accept());
  await tab.locator(`.memory-fact[data-id="${deploy.body.id}"] button.forget`).click();
  await waitFor(async () => (await tab.locator(".memory-fact").count()) === 2, "the fact to go");
  assert.equal((await api("GET", `/v1/memory/${deploy.body.id}`)).status, 404);
  await tab.context().close();
});

// The local model's download on the Memory page, from the real event stream: a daemon whose
// memory uses the local model `all-minilm-l6-v2` starts its download on first use (a fact
// stored); with no route to the model's host here the download fails, and the page shows the
// failure and that memory searches by words meanwhile (a model that downloads shows a progress
// bar, then "ready").
test("the Memory page shows the local model's download and its failure", async () => {
  const local = await startSession({}, { config: '[memory]\nembeddings_model = "local/all-minilm-l6-v2"\n' });
  try {
    const tab = await local.page("/memory");
    await tab.waitForSelector("#memory-list");
    assert.equal(await tab.locator("#memory-model").isHidden(), true, "nothing to show before a download");
    const stored = await local.api("POST", "/v1/memory", { title: "Tea", body: "Green tea in the morning" });
    assert.equal(stored.status, 201, JSON.stringify(stored.body));
    await tab.waitForSelector('#memory-model[data-state="failed"]', { timeout: 60_000 });
    const text = await tab.locator("#memory-model-text").innerText();
    assert.match(text, /local\/all-minilm-l6-v2 could not be downloaded: .*huggingface\.co/);
    assert.match(text, /searches by words meanwhile/);
    assert.equal(await tab.locator("#memory-model-progress").isHidden(), true);
    await shot(tab, "memory-model");
  } finally {
    await local.close();
  }
});
