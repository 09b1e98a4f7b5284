// The Chat page in headless Chromium against a real `souz serve`: the chat list (search by
// title, rename, archive, delete with a confirmation), answers rendered as Markdown with no
// path to script injection, Stop and a follow-up sent while the agent works (queued for the
// graph agent's next turn), a tool call's approval given inline in the chat, and files
// attached by upload and by path, the diff an inline approval would allow (drawn as the Inbox
// draws it, whose card names the chat by its title and its expiry as a time to come, in both
// languages), a reopened chat's tool lines (approved and denied, in place, with Undo), the model
// picker's names, Enter sending and Shift+Enter starting a new line. Models are the fake OpenAI server (fake-openai.mjs). Prints
// two figures (MEASURE lines): the page's first contentful paint, and Send to the first
// streamed token on the page. Screenshots: `chat`, `chat-attachments`.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAi, text, toolCall } from "./fake-openai.mjs";
import { shot, startDaemon, startSession, stopDaemon, waitFor } from "./harness.mjs";

let session;
before(async () => { session = await startSession(); });
after(async () => { await session?.close(); });

/** A daemon of its own whose models are a fake OpenAI server, with `agent` as its agent. */
async function liveDaemon(agent) {
  const provider = await startFakeOpenAi();
  const home = mkdtempSync(join(tmpdir(), "souz-ui-chat-home-"));
  const user = mkdtempSync(join(tmpdir(), "souz-ui-chat-user-"));
  writeFileSync(join(home, "config.toml"),
    `[llm]\nopenai_base_url = "${provider.url}/v1"\n\n[agent]\ndefault_agent = "${agent}"\n`);
  const daemon = await startDaemon(home, user, { OPENAI_API_KEY: "sk-ui-test-key" });
  const call = async (method, path, body) => {
    const response = await fetch(daemon.url + path, {
      method,
      headers: { Authorization: `Bearer ${daemon.token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await response.text();
    return { status: response.status, body: answer ? JSON.parse(answer) : null };
  };
  const context = await session.browser.newContext({ viewport: { width: 1200, height: 820 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: daemon.url });
  const open = async (route) => {
    const tab = await context.newPage();
    tab.on("pageerror", (error) => { throw error; });
    await tab.goto(`${daemon.url}/app/#token=${daemon.token}&go=${route}`);
    await tab.waitForSelector("#connection.up");
    return tab;
  };
  const close = async () => {
    await context.close();
    await stopDaemon(daemon.child);
    await provider.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(user, { recursive: true, force: true });
  };
  return { provider, call, open, close, user, context };
}

const lastUserMessage = (request) => request.messages.filter((message) => message.role === "user").at(-1).content;

test("chats are searched, renamed, archived and deleted from the list", async () => {
  const { api } = session;
  const made = {};
  for (const title of ["Рецепт борща", "Trip plans", "Budget 2027"]) {
    const { status, body } = await api("POST", "/v1/chats", { title });
    assert.equal(status, 201, JSON.stringify(body));
    made[title] = body.chat.id;
  }
  const tab = await session.page(`/chat/${made["Trip plans"]}`);
  await tab.waitForSelector(`.chat-list [data-chat="${made["Budget 2027"]}"]`);
  const listed = async () => (await tab.locator(".chat-list button").allTextContents());

  // Search by title, in any case, Cyrillic too.
  await tab.fill("#chat-search", "БОРЩ");
  await waitFor(async () => (await listed()).length === 1, "the search result");
  assert.deepEqual(await listed(), ["Рецепт борща"]);
  await tab.fill("#chat-search", "");
  await waitFor(async () => (await listed()).length === 3, "all chats again");

  // Rename the open chat.
  await tab.click("#chat-rename");
  await tab.fill("#chat-title-input", "Trip to Kazan");
  await tab.click(".chat-head form.inline button.primary");
  await waitFor(async () => (await tab.textContent("#chat-title")) === "Trip to Kazan", "the new title");
  await waitFor(async () => (await listed()).includes("Trip to Kazan"), "the renamed chat in the list");
  assert.equal((await api("GET", "/v1/chats?q=kazan")).body.items[0].id, made["Trip plans"]);

  // Archive: it leaves the list, and comes back (marked) with "Show archived".
  await tab.click("#chat-archive");
  await waitFor(async () => !(await listed()).some((title) => title.startsWith("Trip to Kazan")), "the archived chat gone");
  await tab.check("#show-archived");
  await waitFor(async () => (await listed()).some((title) => title.startsWith("Trip to Kazan")), "the archived chat shown");
  assert.match(await tab.textContent(`.chat-list [data-chat="${made["Trip plans"]}"] .tag`), /archived/);
  await tab.click("#chat-archive");
  await waitFor(async () => !(await tab.locator(`.chat-list [data-chat="${made["Trip plans"]}"] .tag`).count()), "unarchived");

  // Delete asks first; "Keep" keeps it, "Delete for good" deletes it.
  await tab.click("#chat-delete");
  await tab.waitForSelector("#chat-delete-ask");
  await tab.click("#chat-delete-keep");
  await tab.waitForSelector("#chat-title");
  assert.equal((await api("GET", `/v1/chats/${made["Trip plans"]}/messages`)).status, 200);
  await tab.click("#chat-delete");
  await tab.click("#chat-delete-confirm");
  await waitFor(async () => (await api("GET", `/v1/chats/${made["Trip plans"]}/messages`)).status === 404, "the chat deleted");
  await waitFor(async () => !(await listed()).some((title) => title.startsWith("Trip to Kazan")), "the deleted chat gone from the list");
  await tab.context().close();
});

test("answers are Markdown: code with Copy, tables, safe links, and no injected script", async () => {
  const live = await liveDaemon("skills");
  try {
    const answer = [
      "## Result\n\nHere is **bold**, *italic* and `inline code`.\n\n",
      "```js\nconst answer = 42;\n```\n\n",
      "| Fruit | Count |\n|---|---:|\n| apple | 3 |\n| pear | 5 |\n\n",
      "- one\n- two\n\n",
      "<img src=x onerror=\"window.__pwned = 1\"> <script>window.__pwned = 2</script>\n\n",
      "[docs](https://example.com/docs) and [bad](javascript:window.__pwned=3) and [data](data:text/html,<b>x</b>)\n",
    ];
    live.provider.push(text(answer));
    const { body } = await live.call("POST", "/v1/chats", { title: "Markdown" });
    const tab = await live.open(`/chat/${body.chat.id}`);
    await tab.fill("#chat-input", "Show me some Markdown");
    await tab.click("#chat-send");
    const reply = ".messages .message.assistant:not(.streaming)";
    await tab.waitForSelector(`${reply} table`);

    assert.equal(await tab.textContent(`${reply} h4, ${reply} .md-heading`), "Result");
    assert.equal(await tab.textContent(`${reply} strong`), "bold");
    assert.equal(await tab.textContent(`${reply} em`), "italic");
    assert.deepEqual(await tab.locator(`${reply} table td`).allTextContents(), ["apple", "3", "pear", "5"]);
    assert.deepEqual(await tab.locator(`${reply} ul li`).allTextContents(), ["one", "two"]);
    // No element from the model's HTML; it shows as text, and nothing ran.
    assert.equal(await tab.locator(`${reply} img, ${reply} script`).count(), 0);
    assert.match(await tab.textContent(reply), /<img src=x onerror=/);
    // Only the https link is a link, and it opens in a new tab without access to this one.
    const links = tab.locator(`${reply} a`);
    assert.equal(await links.count(), 1);
    assert.equal(await links.getAttribute("href"), "https://example.com/docs");
    assert.equal(await links.getAttribute("target"), "_blank");
    assert.match(await links.getAttribute("rel"), /noopener/);
    assert.match(await tab.textContent(reply), /\[bad\]\(javascript:window\.__pwned=3\)/);
    // Copy puts the code (and only the code) on the clipboard.
    await tab.click(`${reply} .code-block .copy`);
    await waitFor(async () => (await tab.textContent(`${reply} .code-block .copy`)) !== "Copy", "the copy");
    assert.equal(await tab.evaluate(() => navigator.clipboard.readText()), "const answer = 42;");
    assert.equal(await tab.evaluate(() => /** @type {any} */ (window).__pwned), undefined);
  } finally {
    await live.close();
  }
});

test("Enter sends the message and Shift+Enter starts a new line in it, even while the chat still loads", async () => {
  const live = await liveDaemon("skills");
  try {
    live.provider.push(text(["Two lines received."]));
    live.provider.push(text(["One more received."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "Keys" });
    // The chat's history arrives late: what is typed and sent meanwhile is not lost.
    /** @type {(() => void) | null} */
    let release = null;
    const held = new Promise((resolve) => { release = resolve; });
    await live.context.route("**/v1/chats/*/messages?limit=100", async (route) => {
      await held;
      await route.continue();
    });
    const tab = await live.open(`/chat/${body.chat.id}`);
    await tab.focus("#chat-input");
    await tab.keyboard.type("first line");
    await tab.keyboard.press("Shift+Enter");
    await tab.keyboard.type("second line");
    assert.equal(await tab.inputValue("#chat-input"), "first line\nsecond line");
    assert.equal(live.provider.requests.length, 0, "Shift+Enter sent nothing");
    assert.ok(await tab.isDisabled("#chat-send"), "Enter comes before the chat has loaded");
    await tab.keyboard.press("Enter");
    assert.equal(await tab.inputValue("#chat-input"), "first line\nsecond line", "Enter added no line");
    release();
    await waitFor(() => live.provider.requests.length === 1, "the message sent by Enter");
    assert.equal(lastUserMessage(live.provider.requests[0]), "first line\nsecond line");
    await tab.waitForSelector(".message.assistant:not(.streaming)");
    assert.equal(await tab.inputValue("#chat-input"), "", "the box is emptied once sent");
    // Loaded, Enter sends at once.
    await tab.keyboard.type("third line");
    await tab.keyboard.press("Enter");
    await waitFor(() => live.provider.requests.length === 2, "the second message sent by Enter");
    assert.equal(lastUserMessage(live.provider.requests[1]), "third line");
  } finally {
    await live.close();
  }
});

test("Stop ends the turn, and a follow-up sent while it works starts the next turn", async () => {
  const live = await liveDaemon("graph");
  try {
    // The graph agent asks the model which tools a message needs first (`HELP 100`: all).
    live.provider.push(text(["HELP 100"]));
    live.provider.push(text(["Counting ", "slowly: ", "one, ", "two, ", "three, ", "four, ", "five."], 1500));
    live.provider.push(text(["HELP 100"]));
    live.provider.push(text(["Metric it is: ", "**5 km**."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "Follow-up" });
    const tab = await live.open(`/chat/${body.chat.id}`);
    await tab.fill("#chat-input", "Count to five");
    await tab.click("#chat-send");
    await tab.waitForSelector("#chat-stop:not([hidden])");
    await tab.waitForSelector(".message.assistant.streaming");

    // The box stays usable: the graph agent takes the follow-up as its next turn.
    await tab.fill("#chat-input", "Use metric units");
    await tab.click("#chat-send");
    await waitFor(async () => (await tab.locator(".message.user").allTextContents()).includes("Use metric units"), "the follow-up shown");
    assert.match(await tab.textContent("#chat-notice"), /new turn/);
    await shot(tab, "chat");

    await tab.click("#chat-stop");
    await waitFor(() => live.provider.requests.length === 4, "the follow-up's turn");
    assert.equal(lastUserMessage(live.provider.requests[3]), "Use metric units");
    await tab.waitForSelector(".message.assistant:not(.streaming) strong");
    assert.equal(await tab.textContent(".message.assistant:not(.streaming) strong"), "5 km");
    await waitFor(async () => await tab.isHidden("#chat-stop"), "Stop hidden once no turn runs");
    const { body: events } = await live.call("GET", `/v1/chats/${body.chat.id}/events?limit=1000`);
    const kinds = events.items.map((event) => event.type);
    assert.ok(kinds.includes("execution.cancelled"), kinds.join(","));
    assert.equal(kinds.filter((kind) => kind === "execution.started").length, 2, kinds.join(","));
  } finally {
    await live.close();
  }
});

test("files are attached by upload and by path: the image reaches the model as an image part", async () => {
  const live = await liveDaemon("skills");
  try {
    writeFileSync(join(live.user, "notes.txt"), "Buy milk and bread.");
    const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
    live.provider.push(text(["A one-pixel image and a shopping list."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "Attachments" });
    const chatId = body.chat.id;
    const tab = await live.open(`/chat/${chatId}`);
    await tab.waitForSelector("#chat-send:not([disabled])");

    // An upload lands in the chat's folder; a path is taken as typed.
    await tab.setInputFiles("#chat-files", { name: "pixel.png", mimeType: "image/png", buffer: png });
    await tab.waitForSelector("#chat-attachments .attachment");
    assert.ok(existsSync(join(live.user, "Documents", "souz", "attachments", chatId, "pixel.png")));
    await tab.click("#chat-attach-path");
    await tab.fill("#chat-attach-path-input", "~/notes.txt");
    await tab.press("#chat-attach-path-input", "Enter");
    assert.deepEqual(await tab.locator("#chat-attachments .attachment").evaluateAll((chips) => chips.map((chip) => chip.dataset.attachment)),
      [`~/Documents/souz/attachments/${chatId}/pixel.png`, "~/notes.txt"]);
    await tab.fill("#chat-input", "What are these?");
    await shot(tab, "chat-attachments");
    await tab.click("#chat-send");

    await waitFor(() => live.provider.requests.length === 1, "the model request");
    const content = lastUserMessage(live.provider.requests[0]);
    assert.ok(Array.isArray(content), JSON.stringify(content));
    assert.match(content[0].text, /^What are these\?/);
    assert.match(content[0].text, /<attached_file path="~\/notes.txt">\nBuy milk and bread\.\n<\/attached_file>/);
    assert.deepEqual(content[1], { type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } });
    // The message shows its files; the box is empty for the next one.
    const sent = tab.locator(".messages .message.user").last();
    assert.deepEqual(await sent.locator(".attachment .name").allTextContents(), ["pixel.png", "notes.txt"]);
    assert.deepEqual(await sent.locator(".attachment .kind").allTextContents(), ["image", "text"]);
    assert.equal(await tab.locator("#chat-attachments .attachment").count(), 0);
    await tab.waitForSelector(".message.assistant:not(.streaming)");

    // A path outside the folders is refused with the daemon's reason, and nothing is sent.
    await tab.click("#chat-attach-path");
    await tab.fill("#chat-attach-path-input", "/etc/hostname");
    await tab.click("#chat-attach-path-add");
    await tab.fill("#chat-input", "And this?");
    await tab.click("#chat-send");
    await waitFor(async () => /outside/.test(await tab.textContent("#chat-notice") || ""), "the refusal");
    assert.equal(live.provider.requests.length, 1);
    assert.equal(await tab.inputValue("#chat-input"), "And this?", "what was typed is kept");
  } finally {
    await live.close();
  }
});

test("the chat's approval shows the diff it approves, drawn as the Inbox draws it", async () => {
  const live = await liveDaemon("skills");
  try {
    const target = join(live.user, "groceries.txt");
    writeFileSync(target, "milk\nbread\n");
    live.provider.push(toolCall("edit-1", "RunSkillCommand", { skillId: "EditFile", arguments: { path: target, oldString: "bread", newString: "butter" } }));
    live.provider.push(text(["Changed."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "A diff inline" });
    const tab = await live.open(`/chat/${body.chat.id}`);
    await tab.fill("#chat-input", "Butter instead of bread");
    await tab.click("#chat-send");
    const detail = ".messages .tool-call.waiting .approval-detail[open]";
    await tab.waitForSelector(`${detail} pre.diff`);
    const diff = await tab.textContent(`${detail} pre.diff`);
    assert.match(diff, /^-bread$/m, diff);
    assert.match(diff, /^\+butter$/m, diff);
    assert.equal(await tab.locator(`${detail} pre.diff span.del`).count() > 0, true, "removed lines marked");
    assert.equal(await tab.locator(`${detail} pre.diff span.add`).count() > 0, true, "added lines marked");
    await shot(tab, "chat-approval-diff");
    // The Inbox shows the same approval with the same diff, drawn the same way.
    const approvalId = await tab.getAttribute(".messages .tool-call.waiting button[data-approve]", "data-approve");
    const inbox = await live.open(`/inbox/${approvalId}`);
    await inbox.waitForSelector(`[data-approval="${approvalId}"] pre.diff`);
    assert.equal(await inbox.innerHTML(`[data-approval="${approvalId}"] pre.diff`), await tab.innerHTML(`${detail} pre.diff`));
    // The card names the chat by its title, and says when it would be denied as a time to come.
    const card = `[data-approval="${approvalId}"]`;
    assert.match(await inbox.textContent(`${card} h2`), /^chat “A diff inline” wants to use /);
    assert.match(await inbox.textContent(`${card} p.meta`), /denied automatically in \d+ (minutes?|seconds?|hours?) \(/);
    await inbox.selectOption("#language", "ru");
    await waitFor(async () => /^чат «A diff inline» хочет использовать /.test(await inbox.textContent(`${card} h2`)), "the card in Russian");
    assert.match(await inbox.textContent(`${card} p.meta`), /будет автоматически отклонено через \d+ (минут[уы]?|секунд[уы]?|час(а|ов)?) \(\d{1,2}:\d{2}\)/);
    await inbox.selectOption("#language", "en");
    await inbox.close();

    await tab.click(".messages .tool-call.waiting button[data-approve]");
    await tab.waitForSelector(".message.assistant:not(.streaming)");
    assert.equal(readFileSync(target, "utf8"), "milk\nbutter\n");
    // Decided, the diff folds away under its line.
    await tab.waitForSelector(".messages .approval-detail:not([open])", { state: "attached" });
  } finally {
    await live.close();
  }
});

test("a turn's tool call is approved inline in the chat", async () => {
  const live = await liveDaemon("skills");
  try {
    const target = join(live.user, "shopping.txt");
    live.provider.push(toolCall("write-1", "RunSkillCommand", { skillId: "NewFile", arguments: { path: target, text: "milk\n" } }));
    live.provider.push(text(["Written."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "Approvals" });
    const tab = await live.open(`/chat/${body.chat.id}`);
    await tab.fill("#chat-input", "Start a shopping list");
    await tab.click("#chat-send");
    const approve = ".messages .tool-call.waiting button[data-approve]";
    await tab.waitForSelector(approve);
    assert.match(await tab.textContent(".messages .tool-call.waiting"), /NewFile|RunSkillCommand/);
    assert.equal(existsSync(target), false, "nothing written before the approval");
    await tab.click(approve);
    await tab.waitForSelector(".message.assistant:not(.streaming)");
    assert.equal(await tab.textContent(".message.assistant:not(.streaming)"), "Written.");
    assert.equal(existsSync(target), true);
    assert.equal(await tab.locator(".messages .tool-call .actions button").count(), 0, "no approval buttons once decided");

    // "Why?" under the answer: the turn's steps, each model request with what it was sent and
    // what it answered, and the tool's result.
    await tab.click(".messages [data-why]");
    await tab.waitForSelector(".trace .trace-step.model");
    assert.equal(await tab.locator(".trace .trace-step.model").count(), 2, "two model requests");
    const first = tab.locator(".trace .trace-step.model").first();
    assert.match(await first.locator(".trace-call").textContent(), /RunSkillCommand.*NewFile/);
    assert.match(await first.locator(".trace-prompt").textContent(), /Start a shopping list/);
    assert.match(await tab.textContent(".trace"), /tool RunSkillCommand/);
    await shot(tab, "chat-trace");
    await tab.click(".messages [data-why]");
    assert.equal(await tab.locator(".trace").count(), 0, "the button hides it again");
    // An answer loaded with the chat's history has it too.
    const again = await live.open(`/chat/${body.chat.id}`);
    await again.waitForSelector(".messages [data-why]");
  } finally {
    await live.close();
  }
});

test("a reopened chat shows its earlier turn's tool lines in place, approved and denied, with Undo where a file changed", async () => {
  const live = await liveDaemon("skills");
  try {
    const kept = join(live.user, "kept.txt");
    const refused = join(live.user, "refused.txt");
    live.provider.push(toolCall("write-kept", "RunSkillCommand", { skillId: "NewFile", arguments: { path: kept, text: "yes\n" } }));
    live.provider.push(toolCall("write-refused", "RunSkillCommand", { skillId: "NewFile", arguments: { path: refused, text: "no\n" } }));
    live.provider.push(text(["One written, one refused."]));
    live.provider.push(text(["Nothing more to do."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "Lines kept" });
    const chatId = body.chat.id;
    const tab = await live.open(`/chat/${chatId}`);
    await tab.fill("#chat-input", "Write two files");
    await tab.click("#chat-send");
    await tab.click('.messages .tool-call[data-tool-call="write-kept"] button[data-approve]');
    await tab.click('.messages .tool-call[data-tool-call="write-refused"] button[data-deny]');
    await waitFor(async () => (await tab.locator(".message.assistant:not(.streaming)").count()) === 1, "the first answer");
    await tab.fill("#chat-input", "Anything else?");
    await tab.click("#chat-send");
    await waitFor(async () => (await tab.locator(".message.assistant:not(.streaming)").count()) === 2, "the second answer");
    assert.equal(existsSync(kept), true);
    assert.equal(existsSync(refused), false, "the denied call wrote nothing");
    await tab.close();

    /** The messages' children in order: a message by its role, a tool line by its key. */
    const order = (page) => page.$$eval(".messages > .message, .messages > .tool-call", (nodes) =>
      nodes.map((node) => node.classList.contains("tool-call") ? `tool:${node.getAttribute("data-tool-call")}` : node.classList.contains("user") ? "user" : "assistant"));
    const again = await live.open(`/chat/${chatId}`);
    await again.waitForSelector('.messages .tool-call[data-tool-call="write-refused"]');
    assert.deepEqual(await order(again), ["user", "tool:write-kept", "tool:write-refused", "assistant", "user", "assistant"]);
    const keptLine = '.messages .tool-call[data-tool-call="write-kept"]';
    const refusedLine = '.messages .tool-call[data-tool-call="write-refused"]';
    assert.equal(await again.getAttribute(keptLine, "data-approval"), "approved");
    assert.equal(await again.getAttribute(keptLine, "data-state"), "finished", "the approved call ran");
    assert.match(await again.textContent(keptLine), /✓ \S+ .*· approved in Souz/s);
    assert.equal(await again.getAttribute(refusedLine, "data-approval"), "denied");
    assert.equal(await again.getAttribute(refusedLine, "data-state"), "failed");
    assert.match(await again.textContent(refusedLine), /✗ \S+ .*· denied in Souz/s);
    assert.equal(await again.locator(".messages .tool-call .actions button").count(), 0, "no approval buttons on decided lines");
    // The approved call wrote a file: its line offers Undo, as a live line does; the denied one none.
    await again.waitForSelector(`${keptLine} button[data-undo-call]`);
    assert.equal(await again.locator(`${refusedLine} button[data-undo-call]`).count(), 0);
    await again.click(`${keptLine} button[data-undo-call]`);
    await waitFor(() => !existsSync(kept), "the replayed line's undo");
    await again.waitForSelector(`${keptLine} .undo-panel .undone`);

    // In Russian, the same lines say it in Russian.
    await again.selectOption("#language", "ru");
    await again.waitForSelector(`${refusedLine} .verdict`);
    await waitFor(async () => /запрещено в Souz/.test(await again.textContent(`${refusedLine} .verdict`)), "the Russian verdict");
    assert.match(await again.textContent(`${keptLine} .verdict`), /разрешено в Souz/);
    assert.deepEqual(await order(again), ["user", "tool:write-kept", "tool:write-refused", "assistant", "user", "assistant"]);
  } finally {
    await live.close();
  }
});

test("a chat's own agent is picked in the chat; the skills agent takes a follow-up at its next step", async () => {
  const live = await liveDaemon("graph");
  try {
    live.provider.push(text(["Counting ", "slowly: ", "one, ", "two, ", "three, ", "four, ", "five."], 1500));
    live.provider.push(text(["Metric it is: 5 km."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "Steering" });
    const chatId = body.chat.id;
    const tab = await live.open(`/chat/${chatId}`);
    await tab.waitForSelector("#chat-agent");
    // The model picker names models as people know them; the value stays `provider/model`.
    const models = await tab.$$eval("#chat-model option", (nodes) => nodes.map((node) => ({ value: node.value, text: node.textContent || "" })));
    const openai = models.filter((option) => option.value.startsWith("openai/"));
    assert.ok(openai.length > 0, JSON.stringify(models));
    for (const option of openai) assert.equal(option.text, `${option.value.slice("openai/".length)} · OpenAI`);
    assert.doesNotMatch(models[0].text, /openai\//, "the default's option too");
    await tab.selectOption("#chat-agent", "skills");
    await waitFor(async () => (await live.call("GET", `/v1/chats/${chatId}/settings`)).body.agent === "skills", "the agent saved");
    // Tools: unchecking one stores the chat's own list.
    await tab.click(".chat-tools summary");
    const first = tab.locator(".chat-tools input[data-catalog]:checked").first();
    const name = await first.getAttribute("value");
    await first.uncheck();
    await waitFor(async () => {
      const { enabledTools } = (await live.call("GET", `/v1/chats/${chatId}/settings`)).body;
      return Array.isArray(enabledTools) && !enabledTools.includes(name);
    }, "the tools saved");

    await tab.fill("#chat-input", "Count to five");
    await tab.click("#chat-send");
    await tab.waitForSelector(".message.assistant.streaming");
    await tab.fill("#chat-input", "Use metric units");
    await tab.click("#chat-send");
    await waitFor(async () => /next step/.test((await tab.textContent("#chat-notice")) || ""), "the steered notice");
    await waitFor(() => live.provider.requests.length === 2, "the model asked again with the input");
    assert.match(JSON.stringify(live.provider.requests[1].messages), /Use metric units/);
    await tab.waitForSelector(".message.assistant:not(.streaming)");
    assert.equal(await tab.textContent(".message.assistant:not(.streaming)"), "Metric it is: 5 km.");
    const { body: events } = await live.call("GET", `/v1/chats/${chatId}/events?limit=1000`);
    assert.equal(events.items.filter((event) => event.type === "execution.started").length, 1, "one turn");
  } finally {
    await live.close();
  }
});

test("the chat says which tools its next turn offers, and turning memory off takes SearchMemory out of the model's request", async () => {
  const live = await liveDaemon("skills");
  try {
    live.provider.push(text(["No memory needed."]));
    const { body } = await live.call("POST", "/v1/chats", { title: "Tools offered" });
    const chatId = body.chat.id;
    const tab = await live.open(`/chat/${chatId}`);
    await tab.click(".chat-tools summary");
    const memory = tab.locator('[data-core-group="memory"] input');
    await memory.waitFor();
    assert.equal(await memory.isChecked(), true, "memory is on until the chat turns it off");
    // The groups, with the skills agent's tools in each, and the MCP servers' (none here).
    const groups = await tab.locator("[data-core-group]").evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-core-group")));
    assert.deepEqual(groups, ["memory", "knowledge", "skills", "askUser"]);
    assert.match(await tab.textContent('[data-core-group="memory"]'), /SearchMemory/);
    assert.match(await tab.textContent('[data-core-group="knowledge"]'), /GetKnowledge, SearchKnowledge/);
    assert.match(await tab.textContent(".offered-servers"), /No MCP server tools/);
    const counted = async () => Number((/\((\d+)\)/.exec((await tab.textContent(".chat-tools summary")) || "") || [])[1]);
    const before = await counted();
    const { body: all } = await live.call("GET", `/v1/chats/${chatId}/tools`);
    assert.equal(before, all.core.length + all.catalog.length + all.external.length, "the summary counts what the daemon says");

    await memory.uncheck();
    await waitFor(async () => {
      const { disabledCoreTools } = (await live.call("GET", `/v1/chats/${chatId}/settings`)).body;
      return Array.isArray(disabledCoreTools) && disabledCoreTools.includes("memory");
    }, "memory off saved");
    const { body: offered } = await live.call("GET", `/v1/chats/${chatId}/tools`);
    assert.ok(!offered.core.includes("SearchMemory"), JSON.stringify(offered));
    assert.ok(offered.core.includes("SearchKnowledge"), JSON.stringify(offered));
    await waitFor(async () => (await counted()) === before - 1, "the count follows");
    // Reopened, the page shows it off.
    const again = await live.open(`/chat/${chatId}`);
    await again.click(".chat-tools summary");
    await again.locator('[data-core-group="memory"] input').waitFor();
    assert.equal(await again.locator('[data-core-group="memory"] input').isChecked(), false);

    // A turn: the model's request no longer lists SearchMemory.
    await tab.fill("#chat-input", "What do you remember about me?");
    await tab.click("#chat-send");
    await tab.waitForSelector(".message.assistant:not(.streaming)");
    const listed = (live.provider.requests[0].tools || []).map((tool) => tool.function.name);
    assert.ok(!listed.includes("SearchMemory"), listed.join(", "));
    assert.ok(listed.includes("SearchKnowledge"), listed.join(", "));
    await shot(tab, "chat-tools-offered");
  } finally {
    await live.close();
  }
});

test("figures: the page's first paint, and from Send to the first streamed token on the page", async () => {
  const live = await liveDaemon("skills");
  try {
    // The first piece at once, the rest two seconds later: the first token is on the page
    // while the answer still streams.
    live.provider.push([...text(["Hello"]).slice(0, 2), ...text([" there."], 2000).slice(1)]);
    const { body } = await live.call("POST", "/v1/chats", { title: "Figures" });
    const opened = performance.now();
    const tab = await live.open(`/chat/${body.chat.id}`);
    const ready = performance.now() - opened;
    const paint = await tab.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? null);
    assert.ok(typeof paint === "number" && paint > 0, `a first paint: ${paint}`);
    await tab.fill("#chat-input", "Say hello");
    const sent = performance.now();
    await tab.click("#chat-send");
    await tab.waitForSelector(".message.assistant.streaming:has-text('Hello')");
    const firstToken = performance.now() - sent;
    assert.equal(await tab.locator(".message.assistant.streaming").count(), 1, "still streaming");
    await tab.waitForSelector(".message.assistant:not(.streaming):has-text('Hello there.')");
    console.log(`MEASURE first contentful paint ${paint.toFixed(0)} ms; page connected ${ready.toFixed(0)} ms after navigation`);
    console.log(`MEASURE Send to the first streamed token on the page ${firstToken.toFixed(0)} ms (fake provider, skills agent)`);
  } finally {
    await live.close();
  }
});
