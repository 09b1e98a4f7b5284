// The History page and the undo buttons in headless Chromium against a real `souz serve`: a
// file a tool writes shows up live on the History page and Undo takes it off the disk; an
// edit changed outside Souz afterwards makes Undo stop and show the three versions, "Keep
// current" leaves the file, "Restore anyway" puts back what was before; the Audit row of a
// call that wrote a file undoes it; and the Undo on a chat turn's tool line (the fake OpenAI
// server of fake-openai.mjs drives the turn) takes that call's file back, the answer's "Undo this
// turn" the rest, and the History page links the change to its chat; a turn's route
// (`#/history/turn/<id>`, where the app's notification leads) shows the conflicts an undo would
// meet without undoing, else "Undo this turn"; pages of 50 with Load older, and the filter by
// client. Every undo is checked on the disk. Screenshots: `history`, `history-conflict`,
// `history-turn-conflict`.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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

/** Runs `tool` through the gate as the API, approving it once if it asks; resolves to the
 *  call's id once it succeeded. */
async function run(tool, args) {
  const { api } = session;
  const started = await api("POST", "/v1/tool-calls", { tool, arguments: args, wait_ms: 0 });
  assert.ok(started.status === 200 || started.status === 202, JSON.stringify(started.body));
  const id = started.body.id;
  let approved = false;
  const ended = await waitFor(async () => {
    const { body } = await api("GET", `/v1/tool-calls/${id}`);
    if (body.status === "waiting_approval" && body.approval_id && !approved) {
      approved = true;
      const decided = await api("POST", `/v1/approvals/${body.approval_id}/decision`, { decision: "approve", scope: "once" });
      assert.equal(decided.status, 200, JSON.stringify(decided.body));
    }
    return ["succeeded", "failed", "denied", "cancelled"].includes(body.status) ? body : null;
  }, `${tool} to finish`);
  assert.equal(ended.status, "succeeded", JSON.stringify(ended));
  return id;
}

test("the History page shows a write live, undoes it on disk, and shows a conflict's three versions", async () => {
  const tab = await session.page("/activity/history");
  await tab.waitForSelector("#history-empty", { state: "visible" });

  // A file written after the page opened shows up by itself (history.change.recorded).
  const notes = join(session.user, "notes.txt");
  const created = await run("NewFile", { path: notes, text: "one\n" });
  const row = `#history-rows tr[data-call-id="${created}"]`;
  await tab.waitForSelector(row);
  assert.equal(await tab.getAttribute(`${row} li[data-path="${notes}"]`, "data-effect"), "created");
  assert.match(await tab.textContent(row), /NewFile/);
  assert.equal(await tab.textContent(`${row} td:nth-child(2)`), "api");
  assert.equal(await tab.locator(`#history-client option[value="api"]`).count(), 1, "the client filter offers it");

  // Undo this change: the file leaves the disk, the row says undone, the undo has its own row.
  await tab.click(`${row} button[data-undo-change]`);
  await waitFor(() => !existsSync(notes), "the created file to be gone");
  await tab.waitForSelector(`${row}[data-status="undone"]`);
  await waitFor(async () => (await tab.locator("#history-rows tr").count()) === 2, "the undo's own row");
  assert.match(await tab.textContent("#history-rows tr:first-child"), /undoes change/);

  // An edit, then a change outside Souz: undo stops and shows the three versions.
  const plan = join(session.user, "plan.txt");
  await run("NewFile", { path: plan, text: "alpha\nbeta\n" });
  const edited = await run("EditFile", { path: plan, oldString: "beta", newString: "gamma" });
  assert.equal(readFileSync(plan, "utf8"), "alpha\ngamma\n");
  writeFileSync(plan, "alpha\ngamma\ndelta\n");
  const editRow = `#history-rows tr[data-call-id="${edited}"]`;
  await tab.waitForSelector(editRow);
  assert.equal(await tab.getAttribute(`${editRow} li[data-path="${plan}"]`, "data-effect"), "edited");
  await tab.click(`${editRow} button[data-undo-change]`);
  const conflict = `${editRow} .conflict[data-conflict-path="${plan}"]`;
  await tab.waitForSelector(conflict);
  const wrote = await tab.textContent(`${conflict} .souz-diff`);
  assert.match(wrote, /^-beta$/m, wrote);
  assert.match(wrote, /^\+gamma$/m, wrote);
  assert.match(await tab.textContent(`${conflict} .since-diff`), /^\+delta$/m);
  assert.equal(readFileSync(plan, "utf8"), "alpha\ngamma\ndelta\n", "nothing undone while it conflicts");
  await shot(tab, "history-conflict");

  // Keep current: nothing changes. Undo again, then Restore anyway: what was before is back.
  await tab.click(`${editRow} button.keep-current`);
  await tab.waitForSelector(`${editRow} .conflict-list`, { state: "detached" });
  assert.equal(readFileSync(plan, "utf8"), "alpha\ngamma\ndelta\n");
  await tab.click(`${editRow} button[data-undo-change]`);
  await tab.waitForSelector(conflict);
  await tab.click(`${editRow} button.restore-anyway`);
  await waitFor(() => readFileSync(plan, "utf8") === "alpha\nbeta\n", "the file as it was before the edit");
  await tab.waitForSelector(`${editRow}[data-status="undone"]`);
  const { body } = await session.api("GET", `/v1/history?call_id=${edited}`);
  assert.equal(body.changes[0].status, "undone", JSON.stringify(body));
  await shot(tab, "history");
  await tab.context().close();
});

test("an Audit row whose call wrote a file undoes it", async () => {
  const draft = join(session.user, "draft.txt");
  const created = await run("NewFile", { path: draft, text: "draft\n" });
  const tab = await session.page("/activity/audit");
  const button = `tr[data-call-id="${created}"] button[data-undo-call="${created}"]`;
  await tab.waitForSelector(button);
  // A call that changed no file has no Undo.
  const { body } = await session.api("GET", "/v1/audit?limit=50");
  const denied = body.items.find((entry) => entry.outcome !== "succeeded");
  if (denied) assert.equal(await tab.locator(`tr[data-call-id="${denied.call_id}"] button[data-undo-call]`).count(), 0);
  await tab.click(button);
  await waitFor(() => !existsSync(draft), "the audited write to be undone");
  await tab.waitForSelector(button, { state: "detached" });
  await tab.context().close();
});

test("a chat turn's tool line undoes its call's file; the answer's Undo this turn the rest", async () => {
  const first = join(session.user, "shopping.txt");
  const second = join(session.user, "errands.txt");
  provider.push(toolCall("write-1", "RunSkillCommand", { skillId: "NewFile", arguments: { path: first, text: "milk\n" } }));
  provider.push(toolCall("write-2", "RunSkillCommand", { skillId: "NewFile", arguments: { path: second, text: "post office\n" } }));
  provider.push(text(["Written."]));
  const { body } = await session.api("POST", "/v1/chats", { title: "Undo from the chat" });
  const tab = await session.page(`/chat/${body.chat.id}`);
  await tab.fill("#chat-input", "Start a shopping list and an errands list");
  await tab.click("#chat-send");
  await tab.click('.messages .tool-call[data-tool-call="write-1"] button[data-approve]');
  await tab.click('.messages .tool-call[data-tool-call="write-2"] button[data-approve]');
  await tab.waitForSelector(".message.assistant:not(.streaming)");
  assert.equal(readFileSync(first, "utf8"), "milk\n");
  assert.equal(readFileSync(second, "utf8"), "post office\n");
  const undo = '.messages .tool-call[data-tool-call="write-1"] button[data-undo-call]';
  await tab.waitForSelector(undo);
  await tab.waitForSelector('.messages .tool-call[data-tool-call="write-2"] button[data-undo-call]');

  // On the History page the change names its chat (a link to it) and offers the whole turn.
  const history = await session.page("/activity/history");
  const callId = await tab.getAttribute(undo, "data-undo-call");
  const row = `#history-rows tr[data-call-id="${callId}"]`;
  await history.waitForSelector(`${row} a.chat-link[href="#/chat/${body.chat.id}"]`);
  await history.waitForSelector(`${row} button[data-undo-turn]`);
  await history.click(`${row} a.chat-link`);
  await history.waitForSelector(`.chat-list button.active[data-chat="${body.chat.id}"]`);
  await history.context().close();

  // The tool line's Undo takes back that call's file only.
  await tab.click(undo);
  await waitFor(() => !existsSync(first), "the first call's file to be undone");
  await tab.waitForSelector('.messages .tool-call[data-tool-call="write-1"] .undo-panel .undone');
  assert.equal(await tab.locator(undo).count(), 0, "no Undo once undone");
  assert.equal(readFileSync(second, "utf8"), "post office\n", "the other call's file stays");

  // Opened again, the chat shows its tool lines again: the undone call's without Undo, the
  // other's with it; the answer offers the rest of its turn.
  const again = await session.page(`/chat/${body.chat.id}`);
  await again.waitForSelector('.messages .tool-call[data-tool-call="write-2"] button[data-undo-call]');
  assert.equal(await again.locator('.messages .tool-call[data-tool-call="write-1"] button[data-undo-call]').count(), 0, "the undone call has no Undo");
  await again.click(".messages button[data-undo-turn]");
  await waitFor(() => !existsSync(second), "the rest of the turn to be undone");
  await again.waitForSelector(".messages .turn-undo .undone");
  // Both pages follow: the second line's Undo goes (nothing left to undo).
  await tab.waitForSelector('.messages .tool-call[data-tool-call="write-2"] button[data-undo-call]', { state: "detached" });
  await again.waitForSelector('.messages .tool-call[data-tool-call="write-2"] button[data-undo-call]', { state: "detached" });
  await again.context().close();
  await tab.context().close();
});

test("a turn's History route shows what its undo would meet: the conflicts, else Undo this turn", async () => {
  // Where the app's notification leads when its Undo met a file changed since.
  const file = join(session.user, "turn-route.txt");
  provider.push(toolCall("write-3", "RunSkillCommand", { skillId: "NewFile", arguments: { path: file, text: "souz\n" } }));
  provider.push(text(["Noted."]));
  const { body } = await session.api("POST", "/v1/chats", { title: "Turn route" });
  await session.api("POST", `/v1/chats/${body.chat.id}/messages`, { content: "Write a note" });
  const asked = await waitFor(async () => (await session.api("GET", "/v1/approvals?status=pending&limit=10")).body.items[0]?.id, "the turn's approval");
  await session.api("POST", `/v1/approvals/${asked}/decision`, { decision: "approve", scope: "once" });
  await waitFor(() => existsSync(file), "the turn's write");
  const executionId = await waitFor(async () => (await session.api("GET", "/v1/history?limit=5")).body.changes
    .find((change) => change.chatId === body.chat.id)?.executionId, "the turn's change");
  writeFileSync(file, "mine\n");

  // A file changed since: the three versions, and nothing undone by opening the page.
  const tab = await session.page(`/activity/history/turn/${encodeURIComponent(executionId)}`);
  await tab.waitForSelector(`#history-turn-panel .conflict[data-conflict-path="${file}"]`);
  await tab.waitForSelector("#history-rows tr");
  assert.equal(await tab.locator("#history-rows tr").count(), 1, "only the turn's changes are listed");
  assert.equal(readFileSync(file, "utf8"), "mine\n", "opening the page undid nothing");
  await shot(tab, "history-turn-conflict");
  await tab.click("#history-turn-panel .keep-current");
  await tab.waitForSelector("#history-turn-panel:not(.conflicts)");
  assert.equal(readFileSync(file, "utf8"), "mine\n");
  await tab.context().close();

  // As Souz left it: Undo this turn, which takes the file back.
  writeFileSync(file, "souz\n");
  const again = await session.page(`/activity/history/turn/${encodeURIComponent(executionId)}`);
  await again.click(`#history-turn-panel button[data-undo-turn="${executionId}"]`);
  await waitFor(() => !existsSync(file), "the turn to be undone");
  await again.waitForSelector("#history-turn-panel .undone");
  await again.context().close();

  // Nothing left: the page says so.
  const done = await session.page(`/activity/history/turn/${encodeURIComponent(executionId)}`);
  await done.waitForSelector("#history-turn-panel.meta");
  assert.match(await done.textContent("#history-turn-panel"), /Nothing of this turn is left to undo/);
  await done.context().close();
});

test("the History page pages with Load older and filters by client", async () => {
  const folder = join(session.user, "paged");
  mkdirSync(folder, { recursive: true });
  for (let index = 0; index < 52; index += 1) await run("NewFile", { path: join(folder, `api-${index}.txt`), text: `${index}\n` });
  // One change by the souz CLI (as `souz` calls the API).
  const started = await fetch(`${session.base}/v1/tool-calls`, {
    method: "POST",
    headers: { Authorization: `Bearer ${session.token}`, "Content-Type": "application/json", "X-Souz-Client": "cli" },
    body: JSON.stringify({ tool: "NewFile", arguments: { path: join(folder, "cli.txt"), text: "cli\n" }, wait_ms: 0 }),
  });
  const cliCall = (await started.json()).id;
  const asked = await waitFor(async () => (await session.api("GET", `/v1/tool-calls/${cliCall}`)).body.approval_id, "the CLI call's approval");
  await session.api("POST", `/v1/approvals/${asked}/decision`, { decision: "approve", scope: "once" });
  await waitFor(async () => (await session.api("GET", `/v1/tool-calls/${cliCall}`)).body.status === "succeeded", "the CLI call");

  const { body } = await session.api("GET", "/v1/history?limit=500");
  const tab = await session.page("/activity/history");
  await tab.waitForSelector("#history-rows tr");
  assert.equal(await tab.locator("#history-rows tr").count(), 50, "one page");
  assert.equal(await tab.getAttribute("#history-rows tr:first-child", "data-call-id"), cliCall, "newest first");
  await tab.click("#history-more");
  await waitFor(async () => (await tab.locator("#history-rows tr").count()) === Math.min(body.changes.length, 100), "the older page");
  const shown = await tab.locator("#history-rows tr").evaluateAll((rows) => rows.map((row) => Number(row.getAttribute("data-change"))));
  assert.deepEqual(shown, body.changes.slice(0, shown.length).map((change) => change.id), "the API's order, no gap, no repeat");

  await tab.selectOption("#history-client", "cli");
  await waitFor(async () => (await tab.locator("#history-rows tr").count()) === 1, "only the CLI's change");
  assert.equal(await tab.getAttribute("#history-rows tr", "data-call-id"), cliCall);
  assert.equal(await tab.isHidden("#history-more"), true, "no older page of the CLI's");
  await tab.context().close();
});
