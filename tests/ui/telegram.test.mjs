// The Telegram card of Settings in headless Chromium against a real `souz serve` whose
// `[channels.telegram]` points at a fake Bot API (fake-telegram.mjs): the bot token is stored
// from the card and shown by its hint only (checked with `getMe`, removed at the end); "Link an
// account" shows the one-time code, the exact text to send and when it stops working; the
// person's `/start CODE` through the fake links the account, which the card shows (and still
// shows after a reload); Unlink asks in the card, Keep keeps, Unlink unlinks.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { shot, startSession, waitFor } from "./harness.mjs";
import { startFakeTelegram } from "./fake-telegram.mjs";

const TOKEN = "4242:ui-test-bot-token-wxyz";
const ME = 7;

let session, telegram;

before(async () => {
  telegram = await startFakeTelegram(TOKEN);
  session = await startSession({}, {
    config: `[channels.telegram]\nenabled = true\napi_url = "${telegram.url}"\npoll_seconds = 1\n`,
  });
});

after(async () => {
  await session?.close();
  await telegram?.close();
});

test("the Telegram card stores the token, links an account with the code sent to the bot, and unlinks", async () => {
  const tab = await session.page("/connections/channels");
  await tab.waitForSelector("#telegram #telegram-token-save");
  assert.match(await tab.textContent("#telegram-state"), /The channel is on/);
  assert.match(await tab.textContent("#telegram-token"), /No bot token yet/);

  // The token goes in, only its hint comes out, and the channel starts polling the bot.
  await tab.fill("#telegram-token-value", TOKEN);
  await tab.click("#telegram-token-save");
  await tab.waitForSelector("#telegram-token-hint");
  assert.equal(await tab.textContent("#telegram-token-hint"), "...wxyz");
  assert.match(await tab.textContent("#telegram-note"), /Stored the bot token \.\.\.wxyz/);
  assert.equal(await tab.inputValue("#telegram-token-value"), "", "the field is cleared");
  assert.ok(!(await tab.content()).includes(TOKEN), "the token is never shown back");
  await tab.click("#telegram-token-check");
  await waitFor(async () => /Telegram accepted the token/.test(await tab.textContent("#telegram-note")), "the check");
  await waitFor(() => telegram.polls() > 0, "the channel's first long poll");

  // A code, the exact text to send, and when it stops working.
  assert.match(await tab.textContent("#telegram-account"), /No Telegram account is linked/);
  await tab.click("#telegram-link");
  await tab.waitForSelector("#telegram-command");
  const command = (await tab.textContent("#telegram-command")) || "";
  assert.match(command, /^\/start [A-Z0-9]{6,}$/);
  const { body: waiting } = await session.api("GET", "/v1/channels/telegram");
  const expires = await tab.evaluate((at) => new Date(at).toLocaleString(), waiting.codeExpiresAt);
  assert.ok((await tab.textContent("#telegram-code"))?.includes(`before ${expires}`), await tab.textContent("#telegram-code"));
  await shot(tab, "settings-telegram-code");

  // The person sends it to the bot: the account is linked, and the card sees it by itself.
  telegram.pushText(ME, command);
  await waitFor(() => telegram.sent.some((message) => message.chatId === ME), "the bot's answer to the code");
  await tab.waitForSelector("#telegram-linked", { timeout: 15000 });
  const { body: status } = await session.api("GET", "/v1/channels/telegram");
  assert.equal(status.linked?.userId, ME);
  await tab.reload();
  await tab.waitForSelector("#telegram-linked");
  assert.match(await tab.textContent("#telegram-linked"), /Linked to @user7 \(7\)/);
  assert.equal(await tab.$("#telegram-code"), null, "no code once linked");
  await shot(tab, "settings-telegram-linked");

  // Unlink asks first; Keep keeps the link.
  await tab.click("#telegram-unlink");
  await tab.waitForSelector("#telegram-unlink-ask");
  assert.match(await tab.textContent("#telegram-unlink-ask"), /Unlink @user7 \(7\)\?/);
  await tab.click("#telegram-unlink-keep");
  await tab.waitForSelector("#telegram-linked");
  assert.equal((await session.api("GET", "/v1/channels/telegram")).body.linked?.userId, ME);
  await tab.click("#telegram-unlink");
  await tab.click("#telegram-unlink-confirm");
  await tab.waitForSelector("#telegram-link");
  assert.match(await tab.textContent("#telegram-note"), /Unlinked/);
  assert.equal((await session.api("GET", "/v1/channels/telegram")).body.linked, null);

  await tab.click("#telegram-token-remove");
  await waitFor(async () => /No bot token yet/.test(await tab.textContent("#telegram-token")), "the token removed");
  assert.match(await tab.textContent("#telegram-note"), /Removed the bot token/);
  assert.equal((await session.api("GET", "/v1/channels/telegram")).body.tokenConfigured, false);
  await tab.context().close();
});
