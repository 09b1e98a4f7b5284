// Review mode in headless Chromium against a real `souz serve` (issue 45): the chat's
// review-mode switch stages a turn's writes (the fake OpenAI server of fake-openai.mjs drives
// the turn), the turn ends with its review panel under the messages — each change with its
// diff — and Discard / Apply all decide it, checked on the disk; an MCP client switched to
// review mode on Connections › Client tokens stages its writes, the Inbox shows their review with a
// file changed on disk marked as a conflict, Apply all leaves that one, Apply anyway writes
// it; two edits of one file stage on each other, and a discarded first marks the second's
// conflict as an earlier change's. Screenshots: `review-chat`, `review-queue`.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeOpenAi, text, toolCall } from "./fake-openai.mjs";
import { shot, startSession, waitFor } from "./harness.mjs";

let session, provider;
before(async () => {
  provider = await startFakeOpenAi();
  session = await startSession({ OPENAI_API_KEY: "sk-ui-test-key" }, {
    config: `[llm]\nopenai_base_url = "${provider.url}/v1"\n\n[agent]\ndefault_agent = "skills"\n`,
  });
});
after(async () => {
  await session?.close();
  await provider?.close();
});

test("a chat turn in review mode ends with its review; discard one, apply the rest", async () => {
  const fresh = join(session.user, "fresh.txt");
  const notes = join(session.user, "notes.txt");
  const extra = join(session.user, "extra.txt");
  writeFileSync(notes, "milk\nbread\n");
  const { body } = await session.api("POST", "/v1/chats", { title: "Review from the chat" });
  const chatId = body.chat.id;
  const tab = await session.page(`/chat/${chatId}`);
  const toggle = `.chat-options input[data-review-mode="${chatId}"]`;
  await tab.waitForSelector(toggle);
  await tab.check(toggle);
  await waitFor(async () => (await session.api("GET", "/v1/review-mode")).body.chats.includes(chatId), "review mode on for the chat");

  provider.push(toolCall("w1", "RunSkillCommand", { skillId: "NewFile", arguments: { path: fresh, text: "new\n" } }));
  provider.push(toolCall("w2", "RunSkillCommand", { skillId: "EditFile", arguments: { path: notes, oldString: "bread", newString: "butter" } }));
  provider.push(toolCall("w3", "RunSkillCommand", { skillId: "NewFile", arguments: { path: extra, text: "not wanted\n" } }));
  provider.push(text(["Staged."]));
  await tab.fill("#chat-input", "Tidy my notes");
  await tab.click("#chat-send");

  // No approval asked; the turn ends with one review of three changes, diffs shown.
  const panel = "#chat-reviews [data-review]";
  await tab.waitForSelector(panel);
  await waitFor(async () => (await tab.locator(`${panel} .staged-change`).count()) === 3, "three staged changes");
  assert.equal(await tab.locator(".messages button[data-approve]").count(), 0, "no approval per write");
  assert.match(await tab.textContent(`${panel} .staged-change:nth-of-type(2) pre.diff`), /\+butter/);
  assert.ok(!existsSync(fresh) && !existsSync(extra));
  assert.equal(readFileSync(notes, "utf8"), "milk\nbread\n");
  await shot(tab, "review-chat");

  const [first, second, third] = await tab.locator(`${panel} .staged-change`).evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-change")));
  await tab.click(`${panel} [data-change="${third}"] button.review-discard`);
  await tab.waitForSelector(`${panel} [data-change="${third}"] .decision.discarded`);
  await tab.click(`${panel} button.review-apply-all`);
  await tab.waitForSelector(`${panel} [data-change="${first}"] .decision.applied`);
  await tab.waitForSelector(`${panel} [data-change="${second}"] .decision.applied`);
  assert.equal(readFileSync(fresh, "utf8"), "new\n");
  assert.equal(readFileSync(notes, "utf8"), "milk\nbutter\n");
  assert.ok(!existsSync(extra));
  assert.equal((await session.api("GET", "/v1/reviews")).body.items.length, 0);
});

/** A raw MCP client with its own token: initialize, then `call(tool, args)`. */
async function mcpClient(name) {
  const created = await session.api("POST", "/v1/clients", { name });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const token = created.body.token;
  let sessionId = "";
  let id = 0;
  const post = async (message) => {
    const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
    if (sessionId) headers["Mcp-Session-Id"] = sessionId;
    const response = await fetch(session.base + "/mcp", { method: "POST", headers, body: JSON.stringify(message) });
    sessionId = sessionId || response.headers.get("mcp-session-id") || "";
    return response.text();
  };
  await post({ jsonrpc: "2.0", id: ++id, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name, version: "1" } } });
  await post({ jsonrpc: "2.0", method: "notifications/initialized" });
  return {
    async call(tool, args) {
      const answer = await post({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: tool, arguments: args } });
      assert.match(answer, /Staged for review/);
    },
  };
}

test("the Inbox shows an MCP client's review; a conflict applies only with Apply anyway", async () => {
  const client = await mcpClient("claude-code");
  const clients = await session.page("/connections/clients");
  const toggle = 'input[data-review-mode="claude-code"]';
  await clients.waitForSelector(toggle);
  await clients.check(toggle);
  await waitFor(async () => (await session.api("GET", "/v1/review-mode")).body.clients.includes("claude-code"), "review mode on for the client");

  const list = join(session.user, "list.txt");
  const made = join(session.user, "from-claude.txt");
  writeFileSync(list, "alpha\nbeta\n");
  await client.call("EditFile", { path: list, oldString: "alpha", newString: "ALPHA" });
  await client.call("NewFile", { path: made, text: "hello\n" });
  // Someone changes the file while the edit waits.
  writeFileSync(list, "alpha\nbeta\ngamma\n");

  const tab = await session.page("/inbox");
  const panel = "#review-list [data-review]";
  await tab.waitForSelector(panel);
  assert.match(await tab.textContent(`${panel} h2`), /claude-code/);
  await tab.waitForSelector(`${panel} .staged-change.conflict .conflict-note`);
  assert.match(await tab.textContent(`${panel} .staged-change.conflict`), /list\.txt/);
  await shot(tab, "review-queue");

  await tab.click(`${panel} button.review-apply-all`);
  await tab.waitForSelector(`${panel} .review-status:has-text("Apply anyway")`);
  assert.equal(readFileSync(made, "utf8"), "hello\n");
  assert.equal(readFileSync(list, "utf8"), "alpha\nbeta\ngamma\n", "the conflicting edit is not applied");

  await tab.click(`${panel} button.review-force`);
  await waitFor(() => readFileSync(list, "utf8") === "ALPHA\nbeta\ngamma\n", "the forced edit on disk");
  // Every change decided: the review closes and leaves the Inbox.
  await tab.waitForSelector(panel, { state: "detached" });
});

test("two edits of one file stage on each other; discarding the first marks the second's conflict as such", async () => {
  const client = await mcpClient("second-client");
  const set = await session.api("PUT", "/v1/review-mode", { client: "second-client", on: true });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const todo = join(session.user, "todo.md");
  writeFileSync(todo, "- milk\n- bread\n");
  await client.call("EditFile", { path: todo, oldString: "milk", newString: "oat milk" });
  await client.call("EditFile", { path: todo, oldString: "oat milk", newString: "oat milk (2 l)" });

  const tab = await session.page("/inbox");
  const panel = "#review-list [data-review]:has(h2:has-text('second-client'))";
  await tab.waitForSelector(`${panel} .staged-change >> nth=1`);
  assert.equal(await tab.locator(`${panel} .staged-change.conflict`).count(), 0, "waiting for the first is no conflict");

  await tab.click(`${panel} .staged-change >> nth=0 >> button.review-discard`);
  await tab.waitForSelector(`${panel} .staged-change >> nth=0 >> .decision.discarded`);
  await tab.click(`${panel} .staged-change >> nth=1 >> button.review-apply`);
  const refused = `${panel} .staged-change.conflict[data-conflict="earlier_change"]`;
  await tab.waitForSelector(refused);
  assert.match(await tab.textContent(`${refused} .conflict-note`), /another change to this file/);
  await tab.waitForSelector(`${panel} button.review-force`);
  assert.equal(readFileSync(todo, "utf8"), "- milk\n- bread\n", "nothing written");
});
