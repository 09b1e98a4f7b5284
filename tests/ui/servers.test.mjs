// Connections › MCP servers (ui/servers.js) against a real `souz serve`: add an external MCP server
// (@modelcontextprotocol/server-everything over stdio, installed by scripts/test.sh into
// tests/clients/) from the form, see a bad one refused with its line and column, see the
// server connected with its tools with no restart, test it, see its tool's approval in the
// Inbox named with its server, turn it off (its tools gone at once) and remove it.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { root, shot, startSession, waitFor } from "./harness.mjs";

const clients = join(root, "tests", "clients");
const node = join(clients, "node_modules", ".bin", "node");
const everything = join(clients, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");

let session;
const api = (...args) => session.api(...args);

before(async () => {
  for (const path of [node, everything]) {
    assert.ok(existsSync(path), `${path} is missing: run scripts/test.sh, which installs the MCP test servers`);
  }
  session = await startSession();
});

after(async () => {
  await session?.close();
});

test("servers are added, refused with positions, tested, named in the Inbox, disabled and removed", async () => {
  const tab = await session.page("/connections/servers");
  await tab.waitForSelector("#servers td.meta");

  // A server with a URL that is not http(s): refused with its position, nothing written.
  await tab.click("#server-add");
  await tab.fill("#server-name", "broken");
  await tab.selectOption("#server-kind", "url");
  await tab.fill("#server-url", "ftp://example.org/mcp");
  await tab.click("#server-save");
  await tab.waitForSelector("#server-problems li");
  const problem = await tab.textContent("#server-problems li");
  assert.match(problem, /line \d+, column \d+/);
  assert.match(problem, /http\(s\) URL/);
  const config = join(session.home, "config.toml");
  assert.ok(!existsSync(config) || !readFileSync(config, "utf8").includes("broken"), "nothing was written");

  // A program server: written to config.toml and started at once, no restart.
  await tab.fill("#server-name", "everything");
  await tab.selectOption("#server-kind", "program");
  await tab.fill("#server-command", node);
  await tab.fill("#server-args", everything);
  await tab.click("#server-save");
  await tab.waitForSelector("tr[data-server='everything']");
  const text = readFileSync(config, "utf8");
  assert.match(text, /\[mcp\.servers\.everything\]/);
  assert.ok(text.includes(everything), text);
  assert.doesNotMatch(await tab.textContent("#servers-note"), /Restart Souz/);
  await waitFor(async () => {
    await tab.reload();
    await tab.waitForSelector("#connection.up");
    await tab.waitForSelector("tr[data-server='everything']");
    const tools = Number(await tab.textContent("tr[data-server='everything'] td.tools"));
    return tools > 0 && !(await tab.$("tr[data-server='everything'] .restart"));
  }, "the server connected with its tools", 30000);
  await tab.click("tr[data-server='everything'] button.test");
  await tab.waitForSelector("#servers-note :text('everything: ok')");
  await shot(tab, "servers");

  // Its tool asks, and the Inbox says which server it belongs to.
  const started = await api("POST", "/v1/tool-calls", {
    tool: "mcp__everything__echo", arguments: { message: "from the UI test" }, wait_ms: 0,
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const approvals = await waitFor(async () => {
    const { body } = await api("GET", "/v1/approvals?status=pending");
    return body.items.length ? body.items : null;
  }, "the approval");
  assert.equal(approvals[0].server, "everything");
  const queue = await session.page("/inbox");
  await queue.waitForSelector(`article[data-approval='${approvals[0].id}'] .tag.server`);
  assert.equal(await queue.textContent(`article[data-approval='${approvals[0].id}'] .tag.server`), "MCP server everything");
  await queue.click(`article[data-approval='${approvals[0].id}'] button.primary`);
  await queue.context().close();

  // Off, then gone: each written to config.toml and applied at once.
  await tab.click("tr[data-server='everything'] button.toggle");
  await waitFor(async () => readFileSync(config, "utf8").includes("enabled = false"), "enabled = false written");
  await waitFor(async () => {
    const { body } = await api("GET", "/v1/tools");
    return !JSON.stringify(body).includes("mcp__everything__echo");
  }, "its tools gone", 30000);
  await waitFor(async () => {
    await tab.reload();
    await tab.waitForSelector("tr[data-server='everything']");
    return Number(await tab.textContent("tr[data-server='everything'] td.tools")) === 0
      && !(await tab.$("tr[data-server='everything'] .restart"));
  }, "the server stopped", 30000);
  tab.once("dialog", (dialog) => dialog.accept());
  await tab.click("tr[data-server='everything'] button.remove");
  await tab.waitForSelector("#servers td.meta");
  assert.ok(!readFileSync(config, "utf8").includes("[mcp.servers.everything]"));
  await tab.context().close();
});
