// @ts-check
// The Telegram card of Connections › Telegram (the same page in a browser and in the menu-bar app): the
// channel's state ([channels.telegram] enabled, the bot token's hint, the linked account); the
// bot token stored, replaced, checked or removed as the `telegram` service key (a password
// field cleared once sent: a token goes in, only its hint comes out); a one-time link code with
// the exact text to send the bot and when it stops working (the card looks again every two
// seconds while the code waits, so the account shows as linked once it sent it); and Unlink,
// confirmed in the card itself (no browser dialog, which the app's web view may not show).

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { h, time } from "./dom.js";

const t = strings({
  en: {
    title: "Telegram bot",
    channels: "Channels",
    channels_intro: "Talk to Souz from a chat app: its answers and its approvals come to you there.",
    on: "The channel is on: Souz polls the bot for messages.",
    off: "The channel is off: set enabled = true in [channels.telegram] (Settings › Advanced › config.toml) to talk to Souz through the bot.",
    no_token: "No bot token yet: make a bot with @BotFather in Telegram and store its token here.",
    token: "Bot token",
    stored_at: "stored {at}",
    environment: "environment ({variable})",
    store: "Store token",
    stored: "Stored the bot token {hint}.",
    paste_first: "Paste the bot's token first.",
    check: "Check",
    works: "Telegram accepted the token.",
    refused: "Telegram refused the check: {error}",
    no_answer: "no answer",
    remove: "Remove token",
    removed: "Removed the bot token.",
    linked: "Linked to {who} (since {at}): only this account is served.",
    not_linked: "No Telegram account is linked yet.",
    link: "Link an account",
    new_code: "New code",
    send: "From your Telegram account, send this to the bot before {at}:",
    once: "The code works once; anyone else who writes to the bot gets one refusal.",
    waiting: "A link code waits until {at}; it is shown only once: make a new one if you lost it.",
    unlink: "Unlink",
    unlink_ask: "Unlink {who}? Souz stops answering this account until one is linked again.",
    unlink_yes: "Unlink",
    keep: "Keep",
    unlinked: "Unlinked.",
  },
  ru: {
    title: "Бот Telegram",
    channels: "Каналы",
    channels_intro: "Говорите с Souz из мессенджера: его ответы и запросы на одобрение придут туда.",
    on: "Канал включён: Souz получает сообщения бота.",
    off: "Канал выключен: чтобы говорить с Souz через бота, задайте enabled = true в [channels.telegram] (Настройки › Дополнительно › config.toml).",
    no_token: "Токена бота пока нет: создайте бота через @BotFather в Telegram и сохраните здесь его токен.",
    token: "Токен бота",
    stored_at: "сохранён {at}",
    environment: "окружение ({variable})",
    store: "Сохранить токен",
    stored: "Токен бота {hint} сохранён.",
    paste_first: "Сначала вставьте токен бота.",
    check: "Проверить",
    works: "Telegram принял токен.",
    refused: "Telegram отклонил проверку: {error}",
    no_answer: "нет ответа",
    remove: "Удалить токен",
    removed: "Токен бота удалён.",
    linked: "Привязан к {who} (с {at}): Souz отвечает только этому аккаунту.",
    not_linked: "Аккаунт Telegram пока не привязан.",
    link: "Привязать аккаунт",
    new_code: "Новый код",
    send: "Отправьте боту со своего аккаунта Telegram до {at}:",
    once: "Код действует один раз; всем остальным, кто напишет боту, придёт один отказ.",
    waiting: "Код привязки действует до {at}; он показывается только раз: если он потерян, создайте новый.",
    unlink: "Отвязать",
    unlink_ask: "Отвязать {who}? Souz перестанет отвечать этому аккаунту, пока не будет привязан другой.",
    unlink_yes: "Отвязать",
    keep: "Оставить",
    unlinked: "Аккаунт отвязан.",
  },
});

/** @typedef {import("./types.js").TelegramStatus} TelegramStatus */
/** @typedef {import("./types.js").TelegramLinkCode} TelegramLinkCode */
/** @typedef {import("./types.js").TelegramAccount} TelegramAccount */

/** How often the card looks again while a shown code waits to be sent, in milliseconds. */
const WATCH_MS = 2000;

/** The account as people know it: `@username (id)`, or the id alone. @param {TelegramAccount} account */
const who = (account) => (account.username ? `@${account.username} (${account.userId})` : String(account.userId));

/** Connections › Telegram: the chat apps Souz is reached through (Telegram for now).
 *  @param {HTMLElement} main */
export async function channelsPage(main) {
  main.append(h("h1", {}, t("channels")), h("p.meta", {}, t("channels_intro")), await telegramSection());
}

/** The Telegram card. */
export async function telegramSection() {
  const state = h("p.meta#telegram-state");
  const token = h("div#telegram-token");
  const account = h("div#telegram-account");
  const note = h("span.meta#telegram-note");
  const input = /** @type {HTMLInputElement} */ (h("input#telegram-token-value", { type: "password", autocomplete: "off", placeholder: t("token") }));
  /** The code shown now (it is shown once), until it is used or stops working. @type {TelegramLinkCode | null} */
  let code = null;
  let watching = false;

  const show = async () => {
    /** @type {TelegramStatus} */
    const status = await api("GET", "/v1/channels/telegram");
    /** @type {import("./types.js").ServiceKeyList} */
    const keys = await api("GET", "/v1/settings/service-keys");
    const key = keys.items.find((item) => item.name === "telegram");
    state.replaceChildren(status.enabled ? t("on") : t("off"));
    state.className = status.enabled ? "meta" : "meta error";
    if (!key) token.replaceChildren(h("p.meta", {}, t("no_token")));
    else {
      const source = key.source === "stored" ? t("stored_at", { at: time(key.updatedAt) }) : t("environment", { variable: key.variable });
      token.replaceChildren(h("p.row", {}, t("token"), ": ", h("code#telegram-token-hint", {}, key.keyHint), " ", h("span.meta", {}, source), " ",
        h("button#telegram-token-check", { onclick: () => act(async () => {
          /** @type {import("./types.js").ServiceKeyTest} */
          const tested = await api("POST", "/v1/settings/service-keys/telegram/test");
          return tested.ok ? t("works") : t("refused", { error: tested.error || t("no_answer") });
        }) }, t("check")), " ",
        key.source === "stored" ? h("button#telegram-token-remove", { onclick: () => act(() => api("DELETE", "/v1/settings/service-keys/telegram"), t("removed")) }, t("remove")) : ""));
    }
    if (status.linked) {
      code = null;
      const linked = status.linked;
      account.replaceChildren(h("p.row#telegram-linked", {}, t("linked", { who: who(linked), at: time(linked.linkedAt) }), " ",
        h("button.danger#telegram-unlink", { onclick: () => askUnlink(linked) }, t("unlink"))));
      return;
    }
    const expired = code && Date.parse(code.expiresAt) <= Date.now();
    if (expired) code = null;
    account.replaceChildren(h("p.meta", {}, t("not_linked")),
      code ? h("div#telegram-code", {}, h("p", {}, t("send", { at: time(code.expiresAt) })),
        h("p", {}, h("code#telegram-command", {}, code.command)), h("p.meta", {}, t("once")))
        : status.codeExpiresAt && Date.parse(status.codeExpiresAt) > Date.now() ? h("p.meta#telegram-waiting", {}, t("waiting", { at: time(status.codeExpiresAt) })) : "",
      h("button.primary#telegram-link", { onclick: () => act(async () => {
        code = await api("POST", "/v1/channels/telegram/link");
        watch();
      }, "") }, code ? t("new_code") : t("link")));
  };

  /** Looks again every WATCH_MS while a code is shown, the card is on the page and nothing is linked. */
  const watch = () => {
    if (watching) return;
    watching = true;
    const again = async () => {
      if (!code || !card.isConnected) { watching = false; return; }
      try { await show(); } catch { /* the next look tries again */ }
      setTimeout(again, WATCH_MS);
    };
    setTimeout(again, WATCH_MS);
  };

  /** @param {TelegramAccount} linked */
  const askUnlink = (linked) => {
    account.replaceChildren(h("div.confirm#telegram-unlink-ask", {},
      h("p", {}, t("unlink_ask", { who: who(linked) })),
      h("button.danger#telegram-unlink-confirm", { onclick: () => act(() => api("DELETE", "/v1/channels/telegram/link"), t("unlinked")) }, t("unlink_yes")),
      h("button#telegram-unlink-keep", { onclick: () => act(async () => "", "") }, t("keep"))));
  };

  /** @param {() => Promise<unknown>} call @param {string} [done] what to say when `call` says nothing */
  const act = async (call, done = "") => {
    try { const said = await call(); note.textContent = typeof said === "string" ? said : done; }
    catch (error) { note.textContent = String(error instanceof Error ? error.message : error); }
    await show();
  };

  const save = h("button.primary#telegram-token-save", {
    onclick: () => {
      const value = input.value.trim();
      input.value = "";
      if (!value) { note.textContent = t("paste_first"); return; }
      act(async () => {
        /** @type {import("./types.js").ServiceKeyInfo} */
        const stored = await api("PUT", "/v1/settings/service-keys/telegram", { apiKey: value });
        return t("stored", { hint: stored.keyHint });
      });
    },
  }, t("store"));
  const card = h("div.card#telegram", {}, h("h2", {}, t("title")), state, token, h("div.row", {}, input, save), account, note);
  await show();
  return card;
}
