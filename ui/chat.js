// @ts-check
// The Chat page: the chat list, a chat's messages with the answer streaming in, and the box
// that sends a message. Renders into `main` and returns a function that stops its stream.

import { api, follow } from "./api.js";
import { h, visible } from "./pages.js";

/** @typedef {import("./types.js").ChatList} ChatList */
/** @typedef {import("./types.js").CreateChatResponse} CreateChatResponse */
/** @typedef {import("./types.js").MessageList} MessageList */
/** @typedef {import("./types.js").PostMessageResponse} PostMessageResponse */
/** @typedef {import("./pages.js").ChatFrame} ChatFrame */

export async function chatPage(main, [selected]) {
  const chatList = h("div.chat-list");
  const messages = h("div.messages");
  const input = h("textarea#chat-input", { placeholder: "Message Souz's agent…" });
  const notice = h("p.meta");
  const send = h("button.primary#chat-send", { type: "submit" }, "Send");
  const form = h("form.compose", {}, input, send);
  main.append(h("h1", {}, "Chat"), h("div.chat", {},
    h("div", {}, h("button#new-chat", { onclick: () => newChat() }, "New chat"), chatList),
    h("div", {}, messages, form, notice)));
  let stopStream = null;
  // The answer being streamed: its element (keyed by the answer's message id) and one span
  // per model request, so a discarded request's text can be removed.
  let streaming = null;

  const newChat = async () => {
    const { chat } = /** @type {CreateChatResponse} */ (await api("POST", "/v1/chats", { title: "Chat " + new Date().toLocaleString() }));
    location.hash = `#/chat/${chat.id}`;
  };
  const listChats = async () => {
    const { items } = /** @type {ChatList} */ (await api("GET", "/v1/chats?limit=100"));
    chatList.replaceChildren(...items.map((item) =>
      h("button" + (item.id === selected ? ".active" : ""), { onclick: () => { location.hash = `#/chat/${item.id}`; } },
        item.title || item.id.slice(0, 8))));
    return items;
  };
  const items = await listChats();
  if (!selected && items.length) selected = items[0].id;
  if (!selected) { messages.append(h("p.empty", {}, "Start a new chat.")); form.hidden = true; return; }

  /** @param {{id: string, role: string, content: string}} message */
  const addMessage = (message) => {
    if (messages.querySelector(`[data-message="${message.id}"]`)) return;
    messages.append(h("div.message." + message.role, { dataset: { message: message.id } }, message.content));
  };
  const { items: history } = /** @type {MessageList} */ (await api("GET", `/v1/chats/${selected}/messages?limit=100`));
  history.forEach(addMessage);
  // Live only: the history above came from the API; the all-chats stream brings what follows.
  stopStream = follow(() => "/v1/turns/ws", (/** @type {ChatFrame} */ frame) => {
    if (frame.kind !== "event" || frame.chatId !== selected) return;
    const { type, payload } = frame;
    if (type === "message.delta") {
      if (!streaming || streaming.id !== payload.messageId) {
        streaming?.node.remove();
        streaming = { id: payload.messageId, node: h("div.message.assistant.streaming", { dataset: { streaming: payload.messageId } }), attempts: new Map() };
        messages.append(streaming.node);
      }
      let span = streaming.attempts.get(payload.attempt);
      if (!span) { span = h("span"); streaming.attempts.set(payload.attempt, span); streaming.node.append(span); }
      span.textContent += visible(payload.delta || "");
    } else if (type === "message.discarded") {
      if (streaming && streaming.id === payload.messageId) { streaming.attempts.get(payload.attempt)?.remove(); streaming.attempts.delete(payload.attempt); }
    } else if (type === "message.created") {
      // The stored answer has the id the deltas named: it replaces the streamed text.
      if (payload.role === "assistant") { streaming?.node.remove(); streaming = null; }
      addMessage({ id: payload.messageId, role: payload.role, content: payload.content });
    } else if (type === "execution.failed") {
      notice.textContent = visible(payload.errorMessage || "The turn failed."); notice.className = "error";
      send.disabled = false;
    } else if (type.startsWith("execution.")) {
      send.disabled = false;
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = input.value.trim();
    if (!content) return;
    send.disabled = true;
    notice.textContent = "";
    try {
      const response = /** @type {PostMessageResponse} */ (await api("POST", `/v1/chats/${selected}/messages`, { content, clientMessageId: crypto.randomUUID() }));
      addMessage(response.message);
      input.value = "";
    } catch (error) {
      notice.textContent = visible(error.message); notice.className = "error";
      send.disabled = false;
    }
  });
  return () => stopStream?.();
}
