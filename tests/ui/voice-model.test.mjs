// Settings › Voice downloads the in-process speech model in headless Chromium against a real
// daemon whose `[llm] local_model_hub` is a fake model hub on this machine speaking the Hugging
// Face Hub's API: the tree of `openai/whisper-tiny` at the commit Souz pins (config.json and
// tokenizer.json as plain git blobs listed by their blob id, model.safetensors as an LFS file
// listed by its SHA-256) and `resolve/<commit>/<path>` serving the bytes. The engine is `local`
// with `[speech] local_model = "whisper-tiny"`, which is missing: Download shows a progress bar
// from the runtime events while the hub holds back the rest of the weights, then the model is
// "downloaded and verified" and `GET /v1/speech` says ready; Cancel stops a download and
// leaves no file. Screenshot: settings-voice-download.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { shot, startSession, waitFor } from "./harness.mjs";

const MODEL = "whisper-tiny";
const REPO = "openai/whisper-tiny";
const COMMIT = "169d4a4341b33bc18d8881c4b69c2e104e1cc0af";
/** The model's files as the fake hub serves them: small JSON files and 12 MiB of "weights". */
const FILES = {
  "config.json": Buffer.from(JSON.stringify({ d_model: 384, encoder_layers: 4, vocab_size: 51865 })),
  "tokenizer.json": Buffer.from(JSON.stringify({ version: "1.0", model: { type: "BPE", vocab: { a: 0, b: 1 } } })),
  "model.safetensors": weights(12 << 20),
};

/** `length` bytes that are not all alike. @param {number} length */
function weights(length) {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i += 1) bytes[i] = (Math.imul(i, 2654435761) >>> 13) & 0xff;
  return bytes;
}

/** What `git hash-object` prints for `bytes`. @param {Buffer} bytes */
const gitBlobId = (bytes) => createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
const sha256 = (/** @type {Buffer} */ bytes) => createHash("sha256").update(bytes).digest("hex");

/** The fake hub; the weights' first 8 MiB are sent, the rest only after `release()`. */
async function startHub() {
  let release = () => {};
  let released = new Promise((resolve) => { release = resolve; });
  /** @type {string[]} */
  const asked = [];
  const server = createServer(async (request, response) => {
    const url = request.url ?? "";
    asked.push(url);
    if (url === `/api/models/${REPO}/tree/${COMMIT}`) {
      const entries = Object.entries(FILES).map(([path, bytes]) => path === "model.safetensors"
        ? { type: "file", oid: gitBlobId(Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(bytes)}\nsize ${bytes.length}\n`)), size: bytes.length, path, lfs: { oid: sha256(bytes), size: bytes.length, pointerSize: 134 } }
        : { type: "file", oid: gitBlobId(bytes), size: bytes.length, path });
      response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(entries));
      return;
    }
    const prefix = `/${REPO}/resolve/${COMMIT}/`;
    const bytes = url.startsWith(prefix) ? FILES[/** @type {keyof typeof FILES} */ (url.slice(prefix.length))] : undefined;
    if (!bytes) { response.writeHead(404, { "Content-Type": "application/json" }).end('{"error":"Entry not found"}'); return; }
    const range = /^bytes=(\d+)-$/.exec(request.headers.range ?? "");
    const from = range ? Number(range[1]) : 0;
    const body = bytes.subarray(from);
    response.writeHead(range ? 206 : 200, {
      "Content-Length": body.length,
      "Content-Type": "application/octet-stream",
      ...(range ? { "Content-Range": `bytes ${from}-${bytes.length - 1}/${bytes.length}` } : {}),
    });
    const head = url.endsWith("model.safetensors") ? Math.max(0, (8 << 20) - from) : body.length;
    response.write(body.subarray(0, head));
    if (head < body.length) await released;
    if (!response.destroyed) response.end(body.subarray(head));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = /** @type {import("node:net").AddressInfo} */ (server.address());
  const host = `127.0.0.1:${address.port}`;
  return {
    asked,
    release: () => release(),
    /** Holds back the next transfer again. */
    hold: () => { released = new Promise((resolve) => { release = resolve; }); },
    config: `[llm]\nlocal_model_hub = "http://${host}"\n\n[sandbox]\nnetwork_allow_hosts = ["${host}"]\n\n[speech]\nengine = "local"\nlocal_model = "${MODEL}"\n`,
    close: () => { release(); server.closeAllConnections(); server.close(); },
  };
}

let hub;
let session;

before(async () => {
  hub = await startHub();
  session = await startSession({}, { config: hub.config });
});
after(async () => { await session?.close(); hub?.close(); });

const folder = () => join(session.home, "models", "speech", MODEL);
const selected = async () => (await session.api("GET", "/v1/speech")).body;

test("Settings › Voice downloads the chosen speech model with its progress, and it is ready", async () => {
  const before = await selected();
  assert.equal(before.ready, false);
  assert.match(before.reason, /souz models pull whisper-tiny/);
  const tab = await session.page("/settings/voice");
  await tab.waitForSelector(`#voice-model[data-model="${MODEL}"][data-state="missing"]`);
  assert.match(await tab.locator("#voice-model").innerText(), /Not downloaded yet/);
  assert.equal(await tab.locator("#voice-model a.source").getAttribute("href"),
    `http://${hub.config.match(/127\.0\.0\.1:\d+/)?.[0]}/${REPO}/tree/${COMMIT}`);

  await tab.locator("#voice-model-download").click();
  await tab.waitForSelector('#voice-model[data-state="downloading"]');
  // The downloader reports every 4 MiB: the 8 MiB sent before the hub holds back show.
  const bar = tab.locator("#voice-model progress");
  await waitFor(async () => (await bar.evaluate((node) => /** @type {HTMLProgressElement} */ (node).value)) >= 4 << 20,
    "the first 4 MiB on the bar", 30_000);
  const { value, max } = await bar.evaluate((node) => ({
    value: /** @type {HTMLProgressElement} */ (node).value, max: /** @type {HTMLProgressElement} */ (node).max,
  }));
  const total = Object.values(FILES).reduce((sum, bytes) => sum + bytes.length, 0);
  assert.equal(max, total, "the bar counts all three files, as the hub lists them");
  assert.ok(value < max, `partial: ${value} of ${max}`);
  assert.match(await tab.locator("#voice-model-progress").innerText(), /of 12\.0 MB \(\d+%\)\. It goes on if you close this page/);
  await tab.locator("#voice-hears").scrollIntoViewIfNeeded();
  await shot(tab, "settings-voice-download");
  // Nothing has the weights' name before they are verified, so the model is not complete.
  assert.equal(existsSync(join(folder(), "model.safetensors")), false);
  assert.equal((await selected()).ready, false);

  hub.release();
  await tab.waitForSelector('#voice-model[data-state="ready"]', { timeout: 60_000 });
  assert.match(await tab.locator("#voice-model").innerText(), /downloaded and verified/);
  for (const [name, bytes] of Object.entries(FILES)) {
    assert.ok(readFileSync(join(folder(), name)).equals(bytes), name);
    assert.equal(existsSync(join(folder(), `${name}.part`)), false, `${name}.part`);
  }
  assert.equal(statSync(folder()).mode & 0o777, 0o700);
  const now = await selected();
  assert.equal(now.ready, true, JSON.stringify(now));
  assert.equal(now.models.find((/** @type {{id: string}} */ model) => model.id === MODEL).state, "ready");
  // Only the pinned commit was asked for, never a branch.
  assert.ok(hub.asked.every((url) => url.includes(COMMIT)), hub.asked.join("\n"));

  // In Russian too (the choice is the person's setting: back to English for the next test).
  await tab.selectOption("#language", "ru");
  await tab.waitForSelector("#voice-model:has-text('Скачана и проверена')");
  await tab.selectOption("#language", "en");
  await tab.waitForSelector("#voice-model:has-text('Downloaded and verified')");
  await tab.context().close();
});

test("Cancel stops a speech model's download and leaves no file", async () => {
  const removed = await session.api("DELETE", `/v1/speech/models/${MODEL}`);
  assert.equal(removed.status, 200, JSON.stringify(removed.body));
  assert.equal(removed.body.state, "missing");
  hub.hold();
  const tab = await session.page("/settings/voice");
  await tab.waitForSelector('#voice-model[data-state="missing"]');
  await tab.locator("#voice-model-download").click();
  await tab.waitForSelector('#voice-model[data-state="downloading"]');
  await waitFor(() => existsSync(join(folder(), "model.safetensors.part")), "the partial weights");
  tab.once("dialog", (dialog) => dialog.accept());
  await tab.locator("#voice-model-cancel").click();
  await tab.waitForSelector('#voice-model[data-state="missing"]');
  assert.match(await tab.locator("#voice-model-note").innerText(), /was stopped/);
  for (const name of Object.keys(FILES)) {
    assert.equal(existsSync(join(folder(), name)), false, name);
    assert.equal(existsSync(join(folder(), `${name}.part`)), false, `${name}.part`);
  }
  hub.release();
  await tab.context().close();
});
