// Drives the Souz web UI (/app) in headless Chromium against a real `souz serve` with its own
// Souz home: approve from the Inbox and see the tool's effect, deny, edit settings with an
// invalid value and see the positioned error, then a valid one and see it applied; and a live
// turn streaming from a fake OpenAI server (fake-openai.mjs) into Activity › Working now; and a
// question the agent asks (AskUser) answered in the Inbox, with the turn going on; a refused tab recovers when the `souz ui`
// address is pasted again.
// Screenshots of each page go to docs/screenshots/ when SOUZ_SCREENSHOTS is set. The daemon and
// browser harness is harness.mjs; other pages have test files of their own (*.test.mjs).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAi, text, toolCall } from "./fake-openai.mjs";
import { execFileSync } from "node:child_process";
import { shot, souz, startDaemon, startSession, stopDaemon, waitFor } from "./harness.mjs";

let session, browser, base, token, home, user;
const api = (...args) => session.api(...args);
const page = (...args) => session.page(...args);

/** Starts a call that asks and returns its id once its approval is pending. */
async function askingCall(name) {
  const started = await api("POST", "/v1/tool-calls", {
    tool: "NewFile", arguments: { path: join(user, name), text: "from the UI test" }, wait_ms: 0,
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const call = await waitFor(async () => {
    const { body } = await api("GET", `/v1/tool-calls/${started.body.id}`);
    return body.approval_id ? body : null;
  }, "the approval");
  return call;
}

before(async () => {
  session = await startSession();
  ({ browser, base, token, home, user } = session);
});

after(async () => {
  await session?.close();
});

test("`souz ui --open` signs a real browser in through its owner-only redirect page", async () => {
  // A fake browser launcher records what it was given; the real browser then opens it.
  const bin = mkdtempSync(join(tmpdir(), "souz-opener-"));
  const record = join(bin, "opened");
  writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s' "$1" > '${record}'\n`, { mode: 0o755 });
  execFileSync(souz, ["ui", "--open"], {
    env: { ...process.env, SOUZ_HOME: home, HOME: user, PATH: `${bin}:${process.env.PATH}` },
  });
  const opened = readFileSync(record, "utf8");
  assert.match(opened, /^file:\/\/.*\/ui-open\/open-[^/]+\.html$/);
  assert.ok(!opened.includes(token), "no token in the launcher's argument");
  const context = await browser.newContext();
  const tab = await context.newPage();
  await tab.goto(opened);
  await tab.waitForSelector("#connection.up");
  assert.ok(tab.url().startsWith(`${base}/app/`), tab.url());
  assert.ok(!tab.url().includes("code="), "the code leaves the address bar");
  await context.close();
  rmSync(bin, { recursive: true, force: true });
});

test("a one-time code signs the page in once, and Connections › Client tokens makes and revokes them", async () => {
  const issued = await api("POST", "/v1/ui-codes");
  assert.equal(issued.status, 201, JSON.stringify(issued.body));
  const editor = await api("POST", "/v1/clients", { name: "ui-test-editor", scope: "chats" });
  assert.equal(editor.status, 201, JSON.stringify(editor.body));
  const context = await browser.newContext({ viewport: { width: 1200, height: 820 } });
  const tab = await context.newPage();
  tab.on("pageerror", (error) => { throw error; });
  await tab.goto(`${base}/app/#code=${issued.body.code}&go=/connections/clients`);
  await tab.waitForSelector("#connection.up");
  assert.ok(!tab.url().includes(issued.body.code), "the code leaves the address bar");
  await tab.fill("form.inline input", "ui-test-client");
  await tab.click("form.inline button");
  await tab.waitForSelector("code.token");
  const shown = await tab.textContent("code.token");
  assert.match(shown, /^souz_client_/);
  await tab.waitForSelector("td:text('ui-test-client')");
  // An editor's token says what it reaches; an MCP client's needs no note.
  assert.match(await tab.textContent("tr:has(td:text('ui-test-editor'))"), /editor: its own chats/);
  assert.doesNotMatch(await tab.textContent("tr:has(td:text('ui-test-client'))"), /editor/);
  await shot(tab, "clients");
  assert.equal((await api("DELETE", `/v1/clients/${editor.body.id}`)).status, 204);
  const listed = await api("GET", "/v1/clients");
  assert.ok(!JSON.stringify(listed.body).includes(shown), "the list never shows a token");
  await tab.click("tr:has(td:text('ui-test-client')) button:text('Revoke')");
  await waitFor(async () => (await api("GET", "/v1/clients")).body.items.length === 0, "the revocation");
  await context.close();

  // The code was used: a second page with it is asked for the token.
  const again = await browser.newContext();
  const second = await again.newPage();
  await second.goto(`${base}/app/#code=${issued.body.code}`);
  await second.waitForSelector("#login-error:not([hidden])");
  assert.match(await second.textContent("#login-error"), /unknown, used or expired/);
  await again.close();
});

test("a page without the token asks for it and refuses a wrong one", async () => {
  const context = await browser.newContext();
  const tab = await context.newPage();
  await tab.goto(`${base}/app/`);
  await tab.waitForSelector("#login-form");
  await tab.fill("#login-token", "wrong");
  await tab.click("#login-form button");
  await tab.waitForSelector("#login-error:not([hidden])");
  assert.match(await tab.textContent("#login-error"), /not accepted/);
  await context.close();
});

test("a refused token gives way when the `souz ui` address is pasted again, without a reload", async () => {
  const context = await browser.newContext();
  const tab = await context.newPage();
  tab.on("pageerror", (error) => { throw error; });
  await tab.goto(`${base}/app/#token=wrong-token`);
  await tab.waitForSelector("#login-error:not([hidden])");
  // A mark on this page's window: a reload would lose it.
  await tab.evaluate(() => { window["souzSamePage"] = true; });
  // Pasting the address `souz ui` prints changes only the fragment of the same page.
  await tab.evaluate((good) => { location.hash = `#token=${good}&go=/schedules`; }, token);
  await tab.waitForSelector("#connection.up");
  await tab.waitForSelector("#login-form", { state: "detached" });
  await waitFor(() => new URL(tab.url()).hash === "#/schedules", "the route the address named");
  assert.equal(await tab.evaluate(() => window["souzSamePage"]), true, "the page was not reloaded");
  assert.ok(!tab.url().includes(token), "the token leaves the address bar");

  // A one-time code (what `souz ui --open` leads to) pasted into a refused tab works the same way.
  await tab.evaluate(() => { location.hash = "#token=refused-again"; });
  await tab.waitForSelector("#login-error:not([hidden])");
  const issued = await api("POST", "/v1/ui-codes");
  assert.equal(issued.status, 201, JSON.stringify(issued.body));
  await tab.evaluate((code) => { location.hash = `#code=${code}`; }, issued.body.code);
  await tab.waitForSelector("#login-form", { state: "detached" });
  await tab.waitForSelector("#connection.up");
  assert.equal(await tab.evaluate(() => window["souzSamePage"]), true, "still the same page");
  assert.ok(!tab.url().includes(issued.body.code), "the code leaves the address bar");
  await context.close();
});

test("approving from the Inbox runs the tool", async () => {
  const call = await askingCall("approved.txt");
  const tab = await page();
  const card = `[data-approval="${call.approval_id}"]`;
  await tab.waitForSelector(card);
  assert.match(await tab.textContent(card), /NewFile/);
  // When it would be denied reads as a time to come, with the clock time.
  assert.match(await tab.textContent(`${card} p.meta`), /denied automatically in \d+ (minutes?|seconds?|hours?) \(\d{1,2}:\d{2}( [AP]M)?\)/);
  assert.equal(await tab.textContent("#queue-count"), "1");
  await shot(tab, "queue");
  await tab.click(`${card} button.primary`);
  await waitFor(() => existsSync(join(user, "approved.txt")), "the file the tool writes");
  assert.equal(readFileSync(join(user, "approved.txt"), "utf8"), "from the UI test");
  await tab.waitForSelector(card, { state: "detached" });
  await tab.waitForSelector("#queue-count", { state: "hidden" });
  const { body } = await api("GET", `/v1/approvals/${call.approval_id}`);
  assert.equal(body.status, "approved");
  assert.equal(body.decision.via, "ui");
  await tab.context().close();
});

test("the folder offer covers the file writes in one folder, says what it covers, and asks once", async () => {
  const folder = join(user, "ui-project");
  mkdirSync(folder, { recursive: true });
  const call = await askingCall("ui-project/one.txt");
  const tab = await page(`/inbox/${call.approval_id}`);
  const card = `[data-approval="${call.approval_id}"]`;
  await tab.waitForSelector(`${card} .scope-covers`);
  const covers = await tab.textContent(`${card} .scope-covers`);
  assert.match(covers, /NewFile and EditFile in ~\/ui-project/);
  assert.match(covers, /deleting, moving, commands and the network still ask/);
  assert.match(await tab.textContent(`${card} button[data-suggested="file_writes"]`), /create and edit files in ~\/ui-project/);
  await tab.click(`${card} button[data-suggested="file_writes"]`);
  await waitFor(() => existsSync(join(folder, "one.txt")), "the file the tool writes");
  const { body } = await api("GET", `/v1/approvals/${call.approval_id}`);
  assert.equal(body.decision.tool_group, "file_writes");
  // The next create and an edit in the folder run without asking; a delete still asks.
  const create = await api("POST", "/v1/tool-calls", { tool: "NewFile", arguments: { path: join(folder, "two.txt"), text: "2" } });
  assert.equal(create.body.status, "succeeded", JSON.stringify(create.body));
  const edit = await api("POST", "/v1/tool-calls", { tool: "EditFile", arguments: { path: join(folder, "two.txt"), oldString: "2", newString: "3" } });
  assert.equal(edit.body.status, "succeeded", JSON.stringify(edit.body));
  assert.equal(readFileSync(join(folder, "two.txt"), "utf8"), "3");
  const remove = await api("POST", "/v1/tool-calls", { tool: "DeleteFile", arguments: { path: join(folder, "two.txt") }, wait_ms: 0 });
  assert.equal(remove.status, 202, JSON.stringify(remove.body));
  const asked = await waitFor(async () => (await api("GET", `/v1/tool-calls/${remove.body.id}`)).body.approval_id, "the delete's approval");
  await api("POST", `/v1/approvals/${asked}/decision`, { decision: "deny" });
  assert.ok(existsSync(join(folder, "two.txt")));
  const grants = await api("GET", "/v1/grants");
  const grant = grants.body.items.find((item) => item.tool === "@file_writes");
  assert.ok(grant, JSON.stringify(grants.body));
  await api("DELETE", `/v1/grants/${grant.id}`);
  await tab.context().close();
});

test("denying from the Inbox refuses the call", async () => {
  const call = await askingCall("denied.txt");
  const tab = await page(`/inbox/${call.approval_id}`);
  const card = `[data-approval="${call.approval_id}"]`;
  await tab.waitForSelector(`${card}.focus`);
  await tab.click(`${card} button.danger`);
  const ended = await waitFor(async () => {
    const { body } = await api("GET", `/v1/tool-calls/${call.id}`);
    return body.status === "denied" ? body : null;
  }, "the denial");
  assert.equal(ended.status, "denied");
  assert.ok(!existsSync(join(user, "denied.txt")));
  await tab.context().close();
});

test("the Inbox shows control and bidirectional characters escaped", async () => {
  const started = await api("POST", "/v1/tool-calls", {
    tool: "NewFile", arguments: { path: join(user, "shown.txt"), text: "invoice\u202Etxt.exe \u2066hidden\u2069" }, wait_ms: 0,
  });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const call = await waitFor(async () => {
    const { body } = await api("GET", `/v1/tool-calls/${started.body.id}`);
    return body.approval_id ? body : null;
  }, "the approval");
  const tab = await page(`/inbox/${call.approval_id}`);
  const card = `[data-approval="${call.approval_id}"]`;
  await tab.waitForSelector(`${card}.focus`);
  const shown = await tab.textContent(card);
  for (const raw of ["\u202E", "\u2066", "\u2069"]) assert.ok(!shown.includes(raw), `raw ${escape(raw)} in ${shown}`);
  assert.ok(shown.includes("\\u{202E}"), shown);
  await api("POST", `/v1/approvals/${call.approval_id}/decision`, { decision: "deny" });
  await tab.context().close();
});

test("settings show positioned problems, then save and apply a valid change", async () => {
  const tab = await page("/settings/advanced/toml");
  await tab.waitForSelector("#raw-toml");
  const original = await tab.inputValue("#raw-toml");
  const line = original.split("\n").indexOf("# port = 8383") + 1;
  assert.ok(line > 0, "the template shows the port");
  await tab.fill("#raw-toml", original.replace("# port = 8383", 'port = "eighty"'));
  await tab.click("#raw-save");
  await tab.waitForSelector("#problems li");
  const problem = await tab.textContent("#problems li");
  assert.match(problem, new RegExp(`line ${line}, column 8`), problem);
  assert.equal(readFileSync(join(home, "config.toml"), "utf8"), original, "nothing written");
  await shot(tab, "settings-error");

  await tab.goto(`${base}/app/#/settings/approvals`);
  await tab.waitForSelector("#field-approvals-timeout_seconds");
  await tab.fill("#field-approvals-timeout_seconds", "-5");
  await tab.click("#settings-save");
  await tab.waitForSelector("#problems li");
  assert.match(await tab.textContent("#problems"), /timeout_seconds/);
  await tab.waitForSelector('.field.invalid[data-key="approvals.timeout_seconds"]');

  await tab.fill("#field-approvals-timeout_seconds", "120");
  await tab.click("#settings-save");
  await tab.waitForSelector("#settings-result .ok");
  assert.match(await tab.textContent("#settings-result"), /Applied now: approvals\.timeout_seconds/);
  await shot(tab, "settings");
  assert.match(readFileSync(join(home, "config.toml"), "utf8"), /timeout_seconds = 120/);
  // Applied without a restart: a new approval expires 120 s after it was asked.
  const call = await askingCall("later.txt");
  const { body } = await api("GET", `/v1/approvals/${call.approval_id}`);
  const seconds = (Date.parse(body.expires_at) - Date.parse(body.created_at)) / 1000;
  assert.equal(Math.round(seconds), 120);
  await api("POST", `/v1/approvals/${call.approval_id}/decision`, { decision: "deny" });
  await tab.context().close();
});

test("provider keys are stored from Settings, shown by hint only, and removed", async () => {
  const tab = await page("/settings/model");
  await tab.waitForSelector("#keys #key-save");
  // Providers by the names people know; the value stays the wire name.
  assert.deepEqual(await tab.locator("#key-provider option").allTextContents(), ["OpenAI", "Anthropic", "Qwen", "AiTunnel", "GigaChat"]);
  assert.deepEqual(await tab.$$eval("#key-provider option", (nodes) => nodes.map((node) => node.value)), ["openai", "anthropic", "qwen", "ai_tunnel", "giga"]);
  const key = "sk-ui-secret-0123456789qrst";
  await tab.selectOption("#key-provider", "anthropic");
  await tab.fill("#key-value", key);
  await tab.click("#key-save");
  await tab.waitForSelector('#provider-keys tr[data-provider="anthropic"]');
  const row = await tab.textContent('#provider-keys tr[data-provider="anthropic"]');
  assert.match(row, /\.\.\.qrst/);
  assert.equal(await tab.textContent('#provider-keys tr[data-provider="anthropic"] td'), "Anthropic");
  assert.match(await tab.textContent("#keys-note"), /Stored the Anthropic key \.\.\.qrst/);
  assert.ok(!(await tab.content()).includes(key), "the key is never shown back");
  assert.equal(await tab.inputValue("#key-value"), "", "the field is cleared");
  const { body } = await api("GET", "/v1/me/provider-keys");
  assert.ok(body.items.some((item) => item.provider === "anthropic" && item.source === "stored"));

  await tab.click("#key-save");
  assert.match(await tab.textContent("#keys-note"), /Paste a key first/);

  await tab.click('#provider-keys tr[data-provider="anthropic"] .remove-key');
  await tab.waitForSelector('#provider-keys tr[data-provider="anthropic"]', { state: "detached" });
  assert.match(await tab.textContent("#keys-note"), /Removed the Anthropic key/);
  const after = await api("GET", "/v1/me/provider-keys");
  assert.ok(!after.body.items.some((item) => item.provider === "anthropic"));
  await tab.context().close();
});

/** A service key's card on `route`: stored (shown by its hint only, the field cleared), then
 *  removed. `id` prefixes the card's element ids; `none` is what the card says with no key. */
async function serviceKeyRoundTrip({ route, id, name, provider, none }) {
  const tab = await page(route);
  await tab.waitForSelector(`#${id}s #${id}-save`);
  assert.match(await tab.textContent(`#${id}`), none);
  const key = `${name}-ui-secret-0123456789mnop`;
  await tab.fill(`#${id}-value`, key);
  await tab.click(`#${id}-save`);
  await tab.waitForSelector(`#${id}-hint`);
  assert.equal(await tab.textContent(`#${id}-hint`), "...mnop");
  assert.match(await tab.textContent(`#${id}-note`), new RegExp(`Stored the ${provider} key \\.\\.\\.mnop`));
  assert.ok(!(await tab.content()).includes(key), "the key is never shown back");
  assert.equal(await tab.inputValue(`#${id}-value`), "", "the field is cleared");
  const { body } = await api("GET", "/v1/settings/service-keys");
  assert.deepEqual(body.items.map((item) => [item.name, item.source]), [[name, "stored"]]);

  await tab.click(`#${id}-remove`);
  await tab.waitForSelector(`#${id}-hint`, { state: "detached" });
  assert.match(await tab.textContent(`#${id}-note`), new RegExp(`Removed the ${provider} key`));
  assert.deepEqual((await api("GET", "/v1/settings/service-keys")).body.items, []);
  await tab.context().close();
}

test("the Brave web search key is stored from Settings, shown by hint only, and removed", async () => {
  await serviceKeyRoundTrip({ route: "/settings/model", id: "web-key", name: "brave", provider: "Brave", none: /web search uses DuckDuckGo/ });
});

test("the SaluteSpeech key is stored from Settings › Voice, shown by hint only, and removed", async () => {
  await serviceKeyRoundTrip({ route: "/settings/voice", id: "salute-key", name: "salute_speech", provider: "SaluteSpeech", none: /the `salute` engine cannot hear you/ });
});

test("pause from the header denies what waits and resumes", async () => {
  const call = await askingCall("paused.txt");
  const tab = await page("/settings/approvals");
  await tab.click("#pause");
  await tab.waitForSelector("#paused-banner:not([hidden])");
  const { body } = await api("GET", `/v1/approvals/${call.approval_id}`);
  assert.equal(body.expiry_reason, "paused");
  await tab.click("#pause");
  await tab.waitForSelector("#paused-banner", { state: "hidden" });
  assert.equal((await api("GET", "/v1/pause")).body.paused, false);
  await tab.context().close();
});

test("the standing grants, Tool log, Working now and Chat pages render", async () => {
  const tab = await page("/activity/audit");
  await tab.waitForSelector("table tbody tr");
  assert.match(await tab.textContent("tbody"), /NewFile/);
  await shot(tab, "audit");
  await tab.goto(`${base}/app/#/settings/approvals`);
  await tab.waitForSelector("h2:has-text('Standing grants')");
  await shot(tab, "grants");
  await tab.goto(`${base}/app/#/activity/live`);
  await tab.waitForSelector("#turns");
  await tab.goto(`${base}/app/#/chat`);
  await tab.click("#new-chat");
  await tab.waitForSelector("#chat-input");
  // The chat's screenshot (a conversation with a turn at work) is taken in chat.test.mjs.
  await tab.context().close();
});

test("a live turn streams from the model into Activity › Working now", async () => {
  // A daemon of its own, whose OpenAI provider is the fake server.
  const provider = await startFakeOpenAi();
  const liveHome = mkdtempSync(join(tmpdir(), "souz-ui-live-home-"));
  const liveUser = mkdtempSync(join(tmpdir(), "souz-ui-live-user-"));
  writeFileSync(join(liveHome, "config.toml"),
    `[llm]\nopenai_base_url = "${provider.url}/v1"\n\n[agent]\ndefault_agent = "skills"\n`);
  const live = await startDaemon(liveHome, liveUser, { OPENAI_API_KEY: "sk-ui-test-key" });
  const call = async (method, path, body) => {
    const response = await fetch(live.url + path, {
      method,
      headers: { Authorization: `Bearer ${live.token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };
  const context = await browser.newContext({ viewport: { width: 1200, height: 820 } });
  try {
    // The model computes with a read-only skill (runs without asking), then answers slowly.
    provider.push(toolCall("call-1", "RunSkillCommand", { skillId: "Calculator", arguments: { expression: "6*7" } }));
    provider.push(text(["The answer ", "to 6 × 7 ", "is ", "42", "."], 700));

    const tab = await context.newPage();
    tab.on("pageerror", (error) => { throw error; });
    await tab.goto(`${live.url}/app/#token=${live.token}&go=/activity/live`);
    await tab.waitForSelector("#connection.up");
    await tab.waitForSelector("#turns .empty");

    const chat = await call("POST", "/v1/chats", { title: "Arithmetic" });
    assert.equal(chat.status, 201, JSON.stringify(chat.body));
    const posted = await call("POST", `/v1/chats/${chat.body.chat.id}/messages`, { content: "What is 6 times 7?" });
    assert.equal(posted.status, 200, JSON.stringify(posted.body));
    const card = `[data-execution="${posted.body.execution.id}"]`;

    // The tool call's line names the tool (not "undefined") and ends finished.
    const line = `${card} .tool-call[data-tool-call="call-1"]`;
    await tab.waitForSelector(`${line}.finished`);
    const toolText = await tab.textContent(line);
    assert.match(toolText, /Calculator/, toolText);
    assert.doesNotMatch(toolText, /undefined/, toolText);
    assert.equal(await tab.locator(`${card} .tool-call`).count(), 1, "one line per call");

    // The answer appears piece by piece while the turn runs.
    const stream = `${card} .stream`;
    const partial = await waitFor(async () => {
      const shown = (await tab.textContent(stream)) || "";
      return shown.length > 0 && !shown.includes("42") ? shown : null;
    }, "the first streamed words");
    assert.ok("The answer to 6 × 7 is 42.".startsWith(partial), partial);
    assert.equal(await tab.textContent(`${card} .tag`), "running");
    await waitFor(async () => ((await tab.textContent(stream)) || "").includes("is "), "more streamed words");
    await shot(tab, "live");
    await tab.waitForSelector(`${card} .tag.succeeded`);
    assert.equal(await tab.textContent(stream), "The answer to 6 × 7 is 42.");

    // What the model was sent: the person's message, then the tool's result.
    assert.equal(provider.requests.length, 2);
    const result = provider.requests[1].messages.find((message) => message.role === "tool");
    assert.match(result.content, /42/, result.content);
  } finally {
    await context.close();
    await stopDaemon(live.child);
    await provider.close();
    rmSync(liveHome, { recursive: true, force: true });
    rmSync(liveUser, { recursive: true, force: true });
  }
});

test("a question the agent asks is answered in the Inbox and the turn goes on", async () => {
  // A daemon of its own whose model calls AskUser (a real turn against the fake provider).
  const provider = await startFakeOpenAi();
  const askHome = mkdtempSync(join(tmpdir(), "souz-ui-ask-home-"));
  const askUser = mkdtempSync(join(tmpdir(), "souz-ui-ask-user-"));
  writeFileSync(join(askHome, "config.toml"),
    `[llm]\nopenai_base_url = "${provider.url}/v1"\n\n[agent]\ndefault_agent = "skills"\n`);
  const asking = await startDaemon(askHome, askUser, { OPENAI_API_KEY: "sk-ui-test-key" });
  const call = async (method, path, body) => {
    const response = await fetch(asking.url + path, {
      method,
      headers: { Authorization: `Bearer ${asking.token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };
  const lastUserMessage = (request) => request.messages.filter((message) => message.role === "user").at(-1).content;
  const contexts = [];
  const open = async (route) => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 820 } });
    contexts.push(context);
    const tab = await context.newPage();
    tab.on("pageerror", (error) => { throw error; });
    await tab.goto(`${asking.url}/app/#token=${asking.token}&go=${route}`);
    await tab.waitForSelector("#connection.up");
    return tab;
  };
  try {
    provider.push(toolCall("ask-1", "AskUser", { question: "Which color should the logo be?", choices: ["Red", "Blue"] }));
    provider.push(text(["Blue it is."]));
    const tab = await open("/inbox");
    const chat = await call("POST", "/v1/chats", { title: "Logo" });
    const chatId = chat.body.chat.id;
    const posted = await call("POST", `/v1/chats/${chatId}/messages`, { content: "Pick a logo color" });
    assert.equal(posted.status, 200, JSON.stringify(posted.body));

    // It appears live, with who asks, the question and a button per choice.
    const card = await tab.waitForSelector("#question-list [data-option]");
    const optionId = await card.getAttribute("data-option");
    const selector = `[data-option="${optionId}"]`;
    assert.match(await tab.textContent(`${selector} h2`), /^Logo asks$/);
    assert.equal(await tab.textContent(`${selector} .question-text`), "Which color should the logo be?");
    assert.deepEqual(await tab.locator(`${selector} button.choice`).allTextContents(), ["Red", "Blue"]);
    assert.equal(await tab.locator(`${selector} input[type=checkbox]`).count(), 0);
    await tab.waitForSelector("#queue-count:text('1')");
    await shot(tab, "queue-question");

    // A deep link highlights it.
    const linked = await open(`/inbox/${optionId}`);
    await linked.waitForSelector(`${selector}.focus`);

    await tab.click(`${selector} button.choice:text('Blue')`);
    await tab.waitForSelector(selector, { state: "detached" });
    await linked.waitForSelector(selector, { state: "detached" });
    await tab.waitForSelector("#queue-count", { state: "hidden" });
    const answered = await call("GET", `/v1/options/${optionId}`);
    assert.equal(answered.body.status, "answered");
    assert.deepEqual(answered.body.answer.selectedOptionIds, ["choice-2"]);
    const reply = await waitFor(async () => {
      const { body } = await call("GET", `/v1/chats/${chatId}/messages`);
      const last = body.items.at(-1);
      return last?.role === "assistant" ? last : null;
    }, "the answer after the question");
    assert.equal(reply.content, "Blue it is.");
    assert.equal(provider.requests.length, 2);
    assert.match(lastUserMessage(provider.requests[1]), /Which color should the logo be\?.*Blue/);

    // Several choices: checkboxes, plus words of one's own.
    provider.push(toolCall("ask-2", "AskUser", {
      question: "Which fonts?", choices: ["Serif", "Sans", "Mono"], multiple: true, allowFreeText: true,
    }));
    provider.push(text(["Sans and Mono, rounded."]));
    await call("POST", `/v1/chats/${chatId}/messages`, { content: "And the fonts?" });
    const second = await tab.waitForSelector("#question-list [data-option]");
    const secondSelector = `[data-option="${await second.getAttribute("data-option")}"]`;
    assert.equal(await tab.locator(`${secondSelector} button.choice`).count(), 0);
    assert.equal(await tab.locator(`${secondSelector} input[type=checkbox]`).count(), 3);
    await tab.check(`${secondSelector} label.choice:has-text('Sans') input`);
    await tab.check(`${secondSelector} label.choice:has-text('Mono') input`);
    await tab.fill(`${secondSelector} .answer-text`, "rounded corners");
    await tab.click(`${secondSelector} button.send-answer`);
    await tab.waitForSelector(secondSelector, { state: "detached" });
    await waitFor(() => provider.requests.length === 4, "the resumed turn's request");
    assert.match(lastUserMessage(provider.requests[3]), /Which fonts\?.*Sans; Mono; rounded corners/);
  } finally {
    for (const context of contexts) await context.close();
    await stopDaemon(asking.child);
    await provider.close();
    rmSync(askHome, { recursive: true, force: true });
    rmSync(askUser, { recursive: true, force: true });
  }
});
