// Settings that never lock the person out: a `souz serve` whose config.toml has problems
// starts in recovery mode; the page lists every problem with line and column, refuses a text
// that still has problems (writing nothing), and once a valid one is saved Souz starts and the
// page becomes the normal app. Then "Restart Souz" on the Settings page restarts the daemon in
// place (same address) and the page comes back.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { shot, startSession, waitFor } from "./harness.mjs";

const BAD = "[server]\nmax_connections = \"many\"\n\n[llm]\ntemperature = \"hot\"\n";
let session;

before(async () => { session = await startSession({}, { config: BAD }); });
after(async () => { await session?.close(); });

test("an invalid config.toml opens recovery; a valid save starts Souz; Restart Souz restarts it", async () => {
  const { browser, home, base, token } = session;
  const context = await browser.newContext({ viewport: { width: 1200, height: 820 } });
  const tab = await context.newPage();
  tab.on("pageerror", (error) => { throw error; });
  await tab.goto(`${base}/app/#token=${token}`);
  await tab.waitForSelector("#recovery-problems li");
  const problems = await tab.locator("#recovery-problems li").allTextContents();
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[0], /line 2, column 19: .*max_connections/);
  assert.match(problems[1], /line 5, column 15: .*temperature/);
  assert.equal(await tab.inputValue("#recovery-toml"), BAD);
  await shot(tab, "recovery");

  // Still a problem: refused, nothing written, the remaining problem shown.
  await tab.fill("#recovery-toml", "[llm]\ntemperature = \"hot\"\n");
  await tab.click("#recovery-save");
  await tab.waitForSelector("#recovery-note.error");
  assert.equal((await tab.locator("#recovery-problems li").allTextContents()).length, 1);
  assert.equal(readFileSync(join(home, "config.toml"), "utf8"), BAD, "nothing written");

  // Valid: saved, Souz starts, the page reloads into the app.
  await tab.fill("#recovery-toml", "[log]\nlevel = \"info\"\n\n[agent]\ndefault_agent = \"graph\"\n");
  await tab.click("#recovery-save");
  await tab.waitForSelector("#connection.up", { timeout: 30000 });
  assert.match(readFileSync(join(home, "config.toml"), "utf8"), /default_agent = "graph"/);

  // A restart-bound change, then Restart Souz from Settings: same address, back up.
  await tab.goto(`${base}/app/#/settings/advanced`);
  await tab.waitForSelector("#field-server-max_connections");
  await tab.fill("#field-server-max_connections", "128");
  await tab.click("#settings-save");
  await tab.waitForSelector("#settings-result .ok");
  assert.match(await tab.textContent("#settings-result"), /Takes effect after a restart: server\.max_connections/);
  const pending = await fetch(`${base}/v1/config`, { headers: { Authorization: `Bearer ${token}` } }).then((answer) => answer.json());
  assert.deepEqual(pending.pendingRestart, ["server.max_connections"]);
  await tab.click("#restart-now");
  await waitFor(async () => {
    try {
      const answer = await fetch(`${base}/v1/config`, { headers: { Authorization: `Bearer ${token}` } });
      return answer.ok && (await answer.json()).pendingRestart.length === 0;
    } catch { return false; }
  }, "the restarted daemon", 30000);
  await tab.waitForSelector("#settings-save", { timeout: 30000 });
  await tab.waitForSelector("#connection.up");
  await context.close();
});
