// The Servers page (ui/servers.js) against a real `souz serve`: add an external MCP server
// (@modelcontextprotocol/server-everything over stdio, installed by scripts/test.sh into
// tests/clients/) from the form, see a bad one refused with its line and column, restart the
// daemon and see the server connected with its tools, test it, see its tool's approval in the
// Queue named with its server, disable it and remove it.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { root, shot, startDaemon, startSession, stopDaemon, waitFor } from "./harness.mjs";

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

/** Restarts the daemon in the same homes (config.toml changes apply at start). */
async function restart() {
  await stopDaemon(session.daemon);
  const started = await startDaemon(session.home, session.user);
  Object.assign(session, { daemon: started.child, base: started.url, token: started.token });
}

test("servers are added, refused with positions, tested, named in the Queue, disabled and removed", async () => {
  let tab = await session.page("/servers");
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

  // A program server: written to config.toml, waiting for a restart.
  await tab.fill("#server-name", "everything");
  await tab.selectOption("#server-kind", "program");
  await tab.fill("#server-command", node);
  await tab.fill("#server-args", everything);
  await tab.click("#server-save");
  await tab.waitForSelector("tr[data-server='everything'] .restart");
  const text = readFileSync(config, "utf8");
  assert.match(text, /\[mcp\.servers\.everything\]/);
  assert.ok(text.includes(everything), text);

  await restart();
  await tab.context().close();
  tab = await session.page("/servers");
  await tab.waitForSelector("tr[data-server='everything']");
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

  // Its tool asks, and the Queue says which server it belongs to.
  const started = await api("POST", "/v1/tool-calls", {
    tool: "mcp__everything__echo", arguments: { message: "from the UI test" }, wait_ms: 0,
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const approvals = await waitFor(async () => {
    const { body } = await api("GET", "/v1/approvals?status=pending");
    return body.items.length ? body.items : null;
  }, "the approval");
  assert.equal(approvals[0].server, "everything");
  const queue = await session.page("/queue");
  await queue.waitForSelector(`article[data-approval='${approvals[0].id}'] .tag.server`);
  assert.equal(await queue.textContent(`article[data-approval='${approvals[0].id}'] .tag.server`), "MCP server everything");
  await queue.click(`article[data-approval='${approvals[0].id}'] button.primary`);
  await queue.context().close();

  // Off, then gone: each written to config.toml.
  await tab.click("tr[data-server='everything'] button.toggle");
  await tab.waitForSelector("tr[data-server='everything'] .restart");
  assert.match(readFileSync(config, "utf8"), /enabled = false/);
  tab.once("dialog", (dialog) => dialog.accept());
  await tab.click("tr[data-server='everything'] button.remove");
  await tab.waitForSelector("#servers td.meta");
  assert.ok(!readFileSync(config, "utf8").includes("[mcp.servers.everything]"));
  await tab.context().close();
});
