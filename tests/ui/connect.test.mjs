// The Connect Claude page (ui/connect.js) against a real `souz serve`: Claude Code's ~/.claude.json
// and Claude Desktop's claude_desktop_config.json changed only after the diff was shown, with a
// backup, other settings kept, no token in either (Claude Code's headersHelper prints it), and
// refused when the file changed since; the copy-paste commands; the MCP clients listed with the
// choice about reading memory, per client.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { shot, startSession, waitFor } from "./harness.mjs";

let session;

before(async () => { session = await startSession(); });
after(async () => { await session?.close(); });

test("Claude Code and Claude Desktop get Souz after the diff, with a backup and no token; the fallback commands", async () => {
  const folder = join(session.user, ".config", "Claude");
  const file = join(folder, "claude_desktop_config.json");
  mkdirSync(folder, { recursive: true });
  const original = JSON.stringify({ theme: "dark", mcpServers: { files: { command: "npx", args: ["server-filesystem", "/tmp"] } } }, null, 2);
  writeFileSync(file, original);

  const claudeJson = join(session.user, ".claude.json");
  writeFileSync(claudeJson, JSON.stringify({ numStartups: 4, mcpServers: { github: { type: "http", url: "https://example.invalid/mcp" } } }, null, 2));
  const initialize = (token) => fetch(`${session.base}/mcp`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });

  const tab = await session.page("/connections/claude");
  // Claude Code: its own file, changed after the diff, with no token in it.
  await tab.click("#code-config-show");
  await tab.waitForSelector("#code-config-diff");
  const codeDiff = await tab.textContent("#code-config-diff");
  assert.match(codeDiff, /\+\s+"souz": \{/);
  assert.match(codeDiff, /mcp-headers/);
  assert.doesNotMatch(codeDiff, /souz_client_/);
  await tab.click("#code-config-apply");
  await tab.waitForSelector("#code-config-note.ok");
  const claude = JSON.parse(readFileSync(claudeJson, "utf8"));
  assert.equal(claude.numStartups, 4);
  assert.equal(claude.mcpServers.github.url, "https://example.invalid/mcp");
  assert.equal(claude.mcpServers.souz.url, `${session.base}/mcp`);
  assert.ok(existsSync(`${claudeJson}.bak`));
  const helped = execFileSync("sh", ["-c", claude.mcpServers.souz.headersHelper], { env: { ...process.env, HOME: session.user } });
  const helperToken = JSON.parse(helped.toString()).Authorization.replace(/^Bearer /, "");
  assert.equal((await initialize(helperToken)).status, 200, "the helper's token opens an MCP session");
  assert.ok(!readFileSync(claudeJson, "utf8").includes(helperToken), "no token in Claude Code's file");
  assert.equal(statSync(join(session.home, "clients", "claude-code.token")).mode & 0o777, 0o600);

  // The fallback commands: the first holds no token; the older one does, with a warning.
  await tab.click("#code-make");
  await tab.waitForSelector("#code-command:not([hidden])");
  const command = await tab.inputValue("#code-command");
  assert.ok(command.startsWith("claude mcp add-json --scope user souz '"), command);
  assert.doesNotMatch(command, /souz_client_/);
  const headerCommand = await tab.inputValue("#code-header-command");
  const prefix = `claude mcp add --transport http souz ${session.base}/mcp --header "Authorization: Bearer `;
  assert.ok(headerCommand.startsWith(prefix), headerCommand);
  const token = headerCommand.slice(prefix.length, -1);
  assert.equal((await initialize(token)).status, 200, "the command's token opens an MCP session");
  assert.equal((await initialize(helperToken)).status, 401, "the previous token is revoked");
  await tab.waitForSelector('#connect-client-list tr[data-client="claude-code"]');

  // Reading memory: asked once by default, a choice per client.
  const row = '#connect-client-list tr[data-client="claude-code"] select.memory-access';
  assert.equal(await tab.inputValue(row), "ask");
  await tab.selectOption(row, "deny");
  await waitFor(async () => {
    const { body } = await session.api("GET", "/v1/connect");
    return body.clients.find((client) => client.name === "claude-code")?.memory === "deny";
  }, "the choice");
  await tab.waitForSelector(`${row}:not([disabled])`);
  assert.equal(await tab.inputValue(row), "deny");

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
  const tab = await session.page("/connections/claude");
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
