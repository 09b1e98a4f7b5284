// Shared by the UI test files: a real `souz serve` in its own Souz home, headless Chromium,
// and helpers to call the API and open pages. Each test file calls `startSession()` in
// `before` and `session.close()` in `after`.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

export const root = resolve(import.meta.dirname, "../..");
export const souz = process.env.SOUZ_BIN || join(process.env.CARGO_TARGET_DIR || join(root, "target"), "debug", "souz");
const shots = process.env.SOUZ_SCREENSHOTS ? join(root, "docs", "screenshots") : null;

export async function waitFor(check, what, timeout = 15000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** Saves a screenshot to docs/screenshots/ when SOUZ_SCREENSHOTS is set. */
export async function shot(tab, name) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await tab.screenshot({ path: join(shots, `${name}.png`) });
}

/** Starts `souz serve` in `home` (with `env` added); resolves to the process, its URL and
 *  token once `daemon.json` is written. */
export async function startDaemon(home, user, env = {}) {
  const child = spawn(souz, ["serve"], {
    // SOUZ_NO_MODEL_DOWNLOADS: tests never reach the internet, so the default local memory
    // model is not downloaded (a test that serves its files clears it).
    env: { ...process.env, SOUZ_HOME: home, HOME: user, SOUZ_PORT: "0", SOUZ_LOG: "warn", SOUZ_NO_MODEL_DOWNLOADS: "1", ...env },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const info = await waitFor(() => {
    try { return JSON.parse(readFileSync(join(home, "daemon.json"), "utf8")); } catch { return null; }
  }, "daemon.json");
  return { child, url: info.url, token: readFileSync(join(home, "token"), "utf8").trim() };
}

export async function stopDaemon(child) {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  await exited;
}

/** A daemon in fresh Souz and user homes (its config.toml `config` when given), and a browser
 *  (with `browserArgs` added to Chromium's command line).
 *  `daemon`, `base` and `token` may be replaced by a test that restarts the daemon.
 *  @param {Record<string, string>} [env] @param {{config?: string, browserArgs?: string[]}} [options] */
export async function startSession(env = {}, { config, browserArgs = [] } = {}) {
  const home = mkdtempSync(join(tmpdir(), "souz-ui-home-"));
  const user = mkdtempSync(join(tmpdir(), "souz-ui-user-"));
  if (config !== undefined) writeFileSync(join(home, "config.toml"), config);
  const started = await startDaemon(home, user, env);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", ...browserArgs],
  });
  const session = {
    home, user, browser, daemon: started.child, base: started.url, token: started.token,
    /** Calls the API with the operator token; resolves to the status and the decoded body. */
    async api(method, path, body) {
      const response = await fetch(session.base + path, {
        method,
        headers: { Authorization: `Bearer ${session.token}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    /** Opens the app signed in at `route` (none named: where the app opens by itself), once
     *  it is connected. */
    async page(route = "/inbox", { height = 820 } = {}) {
      const context = await browser.newContext({ viewport: { width: 1200, height } });
      const tab = await context.newPage();
      tab.on("pageerror", (error) => { throw error; });
      await tab.goto(`${session.base}/app/#token=${session.token}${route ? `&go=${route}` : ""}`);
      await tab.waitForSelector("#connection.up");
      return tab;
    },
    async close() {
      await browser.close();
      await stopDaemon(session.daemon);
      rmSync(home, { recursive: true, force: true });
      rmSync(user, { recursive: true, force: true });
    },
  };
  return session;
}
