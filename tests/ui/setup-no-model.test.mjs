// The first-run setup with no usable model (no key, no model server answering): "Finish" does
// not finish silently — it says plainly that chats will not answer and how to fix that, and
// finishes only when asked again ("Finish anyway"); and a message sent in a chat says no model
// is set up and links to the setup, instead of an API error. In both languages.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startSession, waitFor } from "./harness.mjs";

let session;

/** A loopback port nothing answers on (so a real local server on this machine is not found). */
async function closedPort() {
  const server = createServer();
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  await new Promise((done) => server.close(done));
  return `http://127.0.0.1:${port}/v1`;
}

before(async () => {
  session = await startSession({}, {
    config: [
      "[llm]",
      `ollama_base_url = "${await closedPort()}"`,
      `lm_studio_base_url = "${await closedPort()}"`,
      `llama_cpp_base_url = "${await closedPort()}"`,
      "",
    ].join("\n"),
  });
});

after(async () => {
  await session?.close();
});

test("Finish with no usable model says what will not work and finishes on the second click", async () => {
  const { body: bootstrap } = await session.api("GET", "/v1/bootstrap");
  assert.equal(bootstrap.capabilities.models.length, 0, "no model is usable in this home");
  const tab = await session.page(null, { height: 900 });
  await tab.waitForSelector("#setup-finish");
  await waitFor(async () => /No model is usable/.test(await tab.textContent("#setup-model")), "the model card");
  assert.equal(await tab.isVisible("#setup-finish-note"), false);

  await tab.click("#setup-finish");
  await waitFor(() => tab.isVisible("#setup-finish-note"), "the warning");
  const said = await tab.textContent("#setup-finish-note");
  assert.match(said, /chats will not answer/);
  assert.match(said, /provider key/);
  assert.equal((await tab.textContent("#setup-finish")).trim(), "Finish anyway");
  assert.equal(new URL(tab.url()).hash, "#/setup", "still on the setup");
  assert.equal((await session.api("GET", "/v1/setup")).body.completed, false, "not finished yet");

  await tab.click("#setup-finish");
  await waitFor(async () => new URL(tab.url()).hash === "#/chat", "the Chat");
  assert.equal((await session.api("GET", "/v1/setup")).body.completed, true);
  await tab.context().close();
});

test("the warning is in Russian too", async () => {
  await session.api("PUT", "/v1/setup", { completed: false });
  const tab = await session.page("/setup", { height: 900 });
  await tab.waitForSelector("#setup-finish");
  await tab.selectOption("#language", "ru");
  await waitFor(async () => (await tab.textContent("#setup-finish")).trim() === "Готово", "the Russian page");
  await tab.click("#setup-finish");
  await waitFor(() => tab.isVisible("#setup-finish-note"), "the warning");
  assert.match(await tab.textContent("#setup-finish-note"), /чаты не будут отвечать/);
  assert.equal((await tab.textContent("#setup-finish")).trim(), "Всё равно завершить");
  await tab.context().close();
});

test("Send with no usable model says so and links to the setup, in both languages", async () => {
  await session.api("PATCH", "/v1/me/settings", { interfaceLanguage: "en" });
  const { body } = await session.api("POST", "/v1/chats", { title: "No model yet" });
  const tab = await session.page(`/chat/${body.chat.id}`, { height: 900 });
  await tab.waitForSelector("#chat-send:not([disabled])");
  await tab.fill("#chat-input", "Hello?");
  await tab.click("#chat-send");
  await tab.waitForSelector("#chat-notice a#chat-setup-link");
  assert.match(await tab.textContent("#chat-notice"), /No model is set up yet/);
  assert.doesNotMatch(await tab.textContent("#chat-notice"), /PUT \/v1|souz keys set/, "no API or CLI talk");
  assert.equal((await tab.textContent("#chat-setup-link")).trim(), "Set up a model");
  assert.equal(await tab.inputValue("#chat-input"), "Hello?", "what was typed stays in the box");

  await tab.selectOption("#language", "ru");
  await tab.waitForSelector("#chat-send:not([disabled])");
  await waitFor(async () => (await tab.textContent("#chat-send")).trim() === "Отправить", "the Russian page");
  await tab.fill("#chat-input", "Привет?");
  await tab.click("#chat-send");
  await tab.waitForSelector("#chat-notice a#chat-setup-link");
  assert.equal((await tab.textContent("#chat-setup-link")).trim(), "Настроить модель");
  assert.match(await tab.textContent("#chat-notice"), /Модель ещё не настроена/);
  await tab.click("#chat-setup-link");
  await waitFor(async () => new URL(tab.url()).hash === "#/setup", "the setup");
  await tab.waitForSelector("#setup-finish");
  await tab.context().close();
});
