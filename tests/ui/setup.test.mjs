// The first-run setup (ui/setup.js) against a real `souz serve`: the window opens on it the
// first time, a key is stored and checked with a real call to a fake OpenAI server (a refusal
// is said clearly), a fake "Ollama" on a loopback port (its endpoint set through
// `[llm] ollama_base_url`) is offered with its models and chosen, a server at an address typed
// (a fake OpenAI-compatible server on another port) is checked, used and answers a chat, with
// the problems of other addresses said in both languages, and once skipped the window
// opens on the Chat. Also the Test button of the Settings page's Provider keys card.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeOpenAi, text } from "./fake-openai.mjs";
import { shot, startSession, waitFor } from "./harness.mjs";

let provider, ollama, session;

/** A loopback server answering `GET /v1/models` the way Ollama's OpenAI-compatible API does. */
async function startFakeOllama(models) {
  const server = createServer((request, response) => {
    if (request.method === "GET" && request.url === "/v1/models") {
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ object: "list", data: models.map((id) => ({ id, object: "model" })) }));
      return;
    }
    response.writeHead(404).end();
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((done) => server.close(done)) };
}

/** A loopback port nothing answers on (so a real local server on this machine is not found). */
async function closedPort() {
  const server = createServer();
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  await new Promise((done) => server.close(done));
  return `http://127.0.0.1:${port}/v1`;
}

const api = (...args) => session.api(...args);

/** Opens the app the way the menu-bar app does ("Open Souz": no route named). */
const openWindow = (route) => session.page(route ?? null, { height: 900 });

before(async () => {
  provider = await startFakeOpenAi();
  ollama = await startFakeOllama(["llama3.2", "qwen3:8b"]);
  session = await startSession({}, {
    config: [
      "[llm]",
      `openai_base_url = "${provider.url}/v1"`,
      `ollama_base_url = "${ollama.url}/v1"`,
      `lm_studio_base_url = "${await closedPort()}"`,
      `llama_cpp_base_url = "${await closedPort()}"`,
      "max_retries = 0",
      "",
    ].join("\n"),
  });
});

after(async () => {
  await session?.close();
  await provider?.close();
  await ollama?.close();
});

test("the first window opens on the setup: a key is stored and checked, a refusal is clear", async () => {
  const tab = await openWindow();
  await tab.waitForSelector("#setup-key-card");
  assert.equal(new URL(tab.url()).hash, "#/setup");

  // Providers by the names people know; the value stays the wire name.
  assert.deepEqual(await tab.locator("#setup-provider option").allTextContents(), ["OpenAI", "Anthropic", "Qwen", "AiTunnel", "GigaChat"]);
  // The fake provider has no reply scripted: it answers 500, which the check reports.
  await tab.selectOption("#setup-provider", "openai");
  await tab.fill("#setup-key", "sk-setup-test-0123456789wxyz");
  await tab.click("#setup-key-save");
  await tab.waitForSelector("#setup-key-note.error");
  assert.match(await tab.textContent("#setup-key-note"), /The key was stored, but OpenAI refused the check: .+/);
  assert.equal(await tab.inputValue("#setup-key"), "", "the field is cleared");
  assert.match(await tab.textContent("#setup-keys-present"), /OpenAI \(\.\.\.wxyz\)/);
  assert.ok(!(await tab.content()).includes("sk-setup-test-0123456789wxyz"), "the key is never shown back");

  // Now the provider answers: the check says so, with a real request carrying the key.
  provider.push(text(["ok"]));
  const before = provider.requests.length;
  await tab.fill("#setup-key", "sk-setup-test-0123456789wxyz");
  await tab.click("#setup-key-save");
  await tab.waitForSelector("#setup-key-note.ok");
  assert.match(await tab.textContent("#setup-key-note"), /The OpenAI key works \(model .+\)/);
  assert.equal(provider.requests.length, before + 1, "one real request checked the key");

  // The default model can be picked among the usable ones.
  await waitFor(async () => (await tab.locator("#setup-default-model option").count()) > 0, "usable models");
  const options = await tab.$$eval("#setup-default-model option", (nodes) => nodes.map((node) => ({ value: node.value, text: node.textContent || "" })));
  const openai = options.filter((option) => option.value.startsWith("openai/"));
  assert.ok(openai.length > 0, JSON.stringify(options));
  for (const option of openai) assert.equal(option.text, `${option.value.slice("openai/".length)} · OpenAI`, "shown as model · provider");
  await tab.context().close();
});

test("a local server that answers is offered with its models and chosen", async () => {
  const tab = await openWindow("/setup");
  await tab.waitForSelector('.local-server[data-provider="ollama"]');
  assert.equal(await tab.locator(".local-server").count(), 1, "only the server that answers");
  assert.equal(await tab.textContent('.local-server[data-provider="ollama"] strong'), "Ollama");
  const models = await tab.locator('.local-server[data-provider="ollama"] .local-model option').allTextContents();
  assert.deepEqual(models, ["llama3.2", "qwen3:8b"]);
  await shot(tab, "setup");
  await tab.selectOption('.local-server[data-provider="ollama"] .local-model', "qwen3:8b");
  await tab.click('.local-server[data-provider="ollama"] .use-server');
  await tab.waitForSelector("#local-note.ok");
  assert.match(await tab.textContent("#local-note"), /Souz will use qwen3:8b on Ollama/);
  const config = readFileSync(join(session.home, "config.toml"), "utf8");
  assert.match(config, /local_models = \["ollama\/qwen3:8b"\]/);
  assert.match(config, /default_model = "ollama\/qwen3:8b"/);
  assert.match(config, /max_retries = 0/, "the rest of the file is kept");
  await tab.waitForSelector("#setup-current-model");
  await waitFor(async () => /Default model: qwen3:8b · Ollama\./.test(await tab.textContent("#setup-current-model")), "the default model by its names");
  await tab.context().close();
});

test("a model server at a typed address is checked, offered with its models and used; problems are said in both languages", async () => {
  // An OpenAI-compatible server on a port none of the known servers use.
  const typed = await startFakeOpenAi({ models: ["tiny-chat", "tiny-coder"] });
  const empty = await startFakeOpenAi({ models: [] });
  const closed = await closedPort();
  try {
    const tab = await openWindow("/setup");
    await tab.waitForSelector("#local-url");
    const check = async (address) => {
      await tab.fill("#local-url", address);
      await tab.click("#local-url-check");
    };
    // Typed without `/v1`: found there, its models offered, saved as llama.cpp's (the plain
    // OpenAI-compatible server).
    await check(typed.url);
    const row = '#local-url-result .local-server[data-typed="true"]';
    await tab.waitForSelector(row);
    assert.deepEqual(await tab.locator(`${row} .local-model option`).allTextContents(), ["tiny-chat", "tiny-coder"]);
    assert.equal(await tab.textContent(`${row} .meta`), `${typed.url}/v1`);
    assert.equal(await tab.inputValue(`${row} .server-kind`), "llama_cpp");
    await tab.click(`${row} .use-server`);
    await tab.waitForSelector("#local-note.ok");
    assert.match(await tab.textContent("#local-note"), new RegExp(`Souz will use tiny-chat on llama\\.cpp at ${typed.url.replace(/[.]/g, "\\.")}/v1\\.`));
    const config = readFileSync(join(session.home, "config.toml"), "utf8");
    assert.match(config, new RegExp(`llama_cpp_base_url = "${typed.url.replace(/[.]/g, "\\.")}/v1"`));
    assert.match(config, /local_models = \[.*"llama_cpp\/tiny-chat".*\]/);
    assert.match(config, /default_model = "llama_cpp\/tiny-chat"/);
    assert.match(config, /max_retries = 0/, "the rest of the file is kept");

    // The daemon uses it: a chat's answer comes from that server.
    typed.push(text(["Hello from the typed server."]));
    const { body } = await api("POST", "/v1/chats", { title: "Typed server" });
    // The skills agent answers in one model request (the graph agent first picks tool groups).
    const { body: settings } = await api("GET", `/v1/chats/${body.chat.id}/settings`);
    assert.equal((await api("PUT", `/v1/chats/${body.chat.id}/settings`, { ...settings, agent: "skills" })).status, 200);
    const chat = await openWindow(`/chat/${body.chat.id}`);
    await chat.waitForSelector("#chat-send:not([disabled])");
    await chat.fill("#chat-input", "Hello?");
    await chat.click("#chat-send");
    await chat.waitForSelector(".message.assistant:not(.streaming)");
    assert.equal(await chat.textContent(".message.assistant:not(.streaming)"), "Hello from the typed server.");
    assert.equal(typed.requests.at(-1).model, "tiny-chat");
    await chat.context().close();

    // What offers no model says why.
    const problem = async (address, pattern) => {
      await check(address);
      await waitFor(async () => pattern.test((await tab.locator("#local-url-problem").textContent({ timeout: 500 }).catch(() => "")) || ""), `${pattern} for ${address}`);
    };
    await problem(closed, /Nothing answers at http:\/\/127\.0\.0\.1:\d+\/v1\. Is the server running/);
    await problem(`${empty.url}/v1`, /serves no model yet/);
    await problem(`${ollama.url}/other`, /it is not a model server/);
    await problem("http://8.8.8.8:11434/v1", /only on this computer and your local network/);
    await problem("127.0.0.1:1234", /That is not a server address/);
    await tab.selectOption("#language", "ru");
    await tab.waitForSelector("#local-url");
    await problem(closed, /По адресу http:\/\/127\.0\.0\.1:\d+\/v1 никто не отвечает/);
    await problem(`${empty.url}/v1`, /пока не отдаёт ни одной модели/);
    await problem("http://8.8.8.8:11434/v1", /только на этом компьютере и в вашей локальной сети/);
    await tab.selectOption("#language", "en");
    await tab.context().close();
  } finally {
    await typed.close();
    await empty.close();
  }
});

test("skipping ends the setup: the next window opens on the Chat; it can be resumed", async () => {
  const tab = await openWindow();
  await tab.waitForSelector("#setup-skip");
  await tab.click("#setup-skip");
  await waitFor(async () => new URL(tab.url()).hash === "#/chat", "the Chat");
  const { body } = await api("GET", "/v1/setup");
  assert.equal(body.completed, true);
  await tab.context().close();

  const again = await openWindow();
  await again.waitForSelector("#main");
  await waitFor(async () => (await again.locator("#main > *").count()) > 0, "a page");
  assert.notEqual(new URL(again.url()).hash, "#/setup");
  // Resumable from Settings.
  await again.goto(`${session.base}/app/#/settings`);
  await again.waitForSelector("#run-setup");
  await again.click("#run-setup");
  await again.waitForSelector("#setup-key-card");
  await again.context().close();
});

test("the Provider keys card tests a key", async () => {
  provider.push(text(["ok"]));
  const tab = await openWindow("/settings/model");
  await tab.waitForSelector('#provider-keys tr[data-provider="openai"] .test-key');
  await tab.click('#provider-keys tr[data-provider="openai"] .test-key');
  await waitFor(async () => /The OpenAI key works/.test(await tab.textContent("#keys-note")), "the test result");
  await tab.click('#provider-keys tr[data-provider="openai"] .test-key');
  await waitFor(async () => /OpenAI refused the check/.test(await tab.textContent("#keys-note")), "a refusal");
  await tab.context().close();
});
