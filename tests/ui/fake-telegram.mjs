// A fake Telegram Bot API for the browser tests, on loopback, speaking the real JSON as
// crates/testkit/src/telegram.rs does for the Rust tests: `getUpdates` long polls with offsets
// (updates before the offset are confirmed and dropped, as Telegram does), `sendMessage` and
// `editMessageText` (the text kept with MarkdownV2 escapes read), `deleteMessage`,
// `answerCallbackQuery`, `getMe`, and a wrong token's 401. The daemon's real Bot API client
// talks to it (`[channels.telegram] api_url`).

import { createServer } from "node:http";

/** MarkdownV2 text as Telegram shows it: each `\x` escape read as `x`. @param {string} text */
const unescape = (text) => text.replace(/\\(.)/g, "$1");

/** Starts the fake for the bot with `token` on a free loopback port. */
export async function startFakeTelegram(token) {
  let nextUpdate = 1000;
  let nextMessage = 0;
  /** Updates not yet confirmed by an offset past them. */
  let pending = [];
  /** Messages sent, as `{chatId, messageId, text}`, in order. */
  const sent = [];
  /** `getUpdates` calls so far. */
  let polls = 0;
  /** Long polls waiting for news: each is called when an update comes. */
  const waiting = new Set();
  const wake = () => { for (const done of waiting) done(); waiting.clear(); };

  const answer = (response, status, body) => {
    response.writeHead(status, { "Content-Type": "application/json" });
    response.end(JSON.stringify(body));
  };
  const ok = (response, result) => answer(response, 200, { ok: true, result });
  const refuse = (response, status, description) => answer(response, status, { ok: false, error_code: status, description });

  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (part) => { body += part; });
    request.on("end", async () => {
      const match = /^\/bot([^/]+)\/(\w+)$/.exec(request.url || "");
      if (!match || request.method !== "POST") return refuse(response, 404, "Not Found");
      if (match[1] !== token) return refuse(response, 401, "Unauthorized");
      let params = {};
      try { params = body ? JSON.parse(body) : {}; } catch { return refuse(response, 400, "Bad Request: invalid JSON"); }
      switch (match[2]) {
        case "getUpdates": {
          polls += 1;
          const offset = Number(params.offset || 0);
          pending = pending.filter((update) => update.update_id >= offset);
          if (!pending.length) {
            const seconds = Math.min(Number(params.timeout || 0), 50);
            await new Promise((done) => {
              const timer = setTimeout(() => { waiting.delete(done); done(); }, seconds * 1000);
              waiting.add(() => { clearTimeout(timer); done(); });
            });
          }
          if (response.destroyed) return;
          return ok(response, pending);
        }
        case "sendMessage": {
          nextMessage += 1;
          const text = params.parse_mode === "MarkdownV2" ? unescape(String(params.text)) : String(params.text);
          sent.push({ chatId: params.chat_id, messageId: nextMessage, text });
          return ok(response, { message_id: nextMessage, date: 1_700_000_000, chat: { id: params.chat_id, type: "private" }, text });
        }
        case "editMessageText":
          return ok(response, { message_id: params.message_id, date: 1_700_000_000, chat: { id: params.chat_id, type: "private" }, text: unescape(String(params.text)) });
        case "deleteMessage":
        case "answerCallbackQuery":
          return ok(response, true);
        case "getMe":
          return ok(response, { id: 1, is_bot: true, first_name: "Souz", username: "souz_bot" });
        default:
          return refuse(response, 404, "Not Found: method not found");
      }
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${port}`,
    sent,
    polls: () => polls,
    /** Queues a private text message from user `userId` (its chat has the same id). */
    pushText(userId, text) {
      nextUpdate += 1;
      const from = { id: userId, is_bot: false, first_name: "Tester", username: `user${userId}` };
      pending.push({
        update_id: nextUpdate,
        message: { message_id: 1, from, chat: { id: userId, type: "private", first_name: "Tester" }, date: 1_700_000_000, text },
      });
      wake();
    },
    close: () => new Promise((done) => { wake(); server.closeAllConnections(); server.close(done); }),
  };
}
