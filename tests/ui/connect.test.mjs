// The Connect Claude page (ui/connect.js) against a real `souz serve`: the Claude Code command
// with a token of its own; Claude Desktop's claude_desktop_config.json changed only after the
// diff was shown, with a backup, other servers kept, and refused when the file changed since;
// the MCP clients listed.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { shot, startSession, waitFor } from "./harness.mjs";

let session;

before(async () => { session = await startSession(); });
after(async () => { await session?.close(); });

test("Claude Code gets the exact command; Claude Desktop gets Souz after the diff, with a backup", async () => {
  const folder = join(session.user, ".config", "Claude");
  const file = join(folder, "claude_desktop_config.json");
  mkdirSync(folder, { recursive: true });
  const original = JSON.stringify({ theme: "dark", mcpServers: { files: { command: "npx", args: ["server-filesystem", "/tmp"] } } }, null, 2);
  writeFileSync(file, original);

  const tab = await session.page("/connect");
  await tab.waitForSelector("#code-make");
  await tab.click("#code-make");
  await tab.waitForSelector("#code-command:not([hidden])");
  const command = await tab.inputValue("#code-command");
  const prefix = `claude mcp add --transport http souz ${session.base}/mcp --header "Authorization: Bearer `;
  assert.ok(command.startsWith(prefix), command);
  const token = command.slice(prefix.length, -1);
  const mcp = await fetch(`${session.base}/mcp`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  assert.equal(mcp.status, 200, "the command's token opens an MCP session");
  await tab.waitForSelector('#connect-client-list tr[data-client="claude-code"]');

  // The change is shown first; nothing is written yet.
  await tab.click("#desktop-show");
  await tab.waitForSelector("#desktop-diff");
  const diff = await tab.textContent("#desktop-diff");
  assert.match(diff, /\+\s+"souz": \{/);
  assert.match(diff, /mcp-stdio/);
  assert.doesNotMatch(diff, /^-.*files/m, "no other server is removed");
  assert.equal(readFileSync(file, "utf8"), original);
  await shot(tab, "connect");

  await tab.click("#desktop-apply");
  await tab.waitForSelector("#desktop-note.ok");
  assert.match(await tab.textContent("#desktop-note"), /Previous file kept as .*claude_desktop_config\.json\.bak/);
  const written = JSON.parse(readFileSync(file, "utf8"));
  assert.equal(written.theme, "dark");
  assert.deepEqual(written.mcpServers.files, { command: "npx", args: ["server-filesystem", "/tmp"] });
  assert.deepEqual(written.mcpServers.souz.args, ["mcp-stdio"]);
  assert.ok(existsSync(written.mcpServers.souz.command), written.mcpServers.souz.command);
  assert.ok(!JSON.stringify(written).includes(token), "no token in Claude's file");
  assert.equal(readFileSync(`${file}.bak`, "utf8"), original);
  const tokenFile = join(session.home, "clients", "claude-desktop.token");
  assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
  await tab.waitForSelector('#connect-client-list tr[data-client="claude-desktop"]');
  await tab.context().close();
});

test("a file changed after the diff was shown is not touched", async () => {
  const file = join(session.user, ".config", "Claude", "claude_desktop_config.json");
  writeFileSync(file, JSON.stringify({ mcpServers: {} }));
  const tab = await session.page("/connect");
  await tab.click("#desktop-show");
  await tab.waitForSelector("#desktop-apply");
  const meanwhile = JSON.stringify({ mcpServers: { other: { command: "x" } } });
  writeFileSync(file, meanwhile);
  await tab.click("#desktop-apply");
  await tab.waitForSelector("#desktop-note.error");
  assert.match(await tab.textContent("#desktop-note"), /changed since the change was shown/);
  assert.equal(readFileSync(file, "utf8"), meanwhile);

  // Not a JSON object: refused with a clear message, nothing written.
  writeFileSync(file, "[1, 2]");
  await tab.click("#desktop-show");
  await waitFor(async () => /not a JSON object/.test(await tab.textContent("#desktop-note") || ""), "the refusal");
  assert.equal(readFileSync(file, "utf8"), "[1, 2]");
  await tab.context().close();
});
