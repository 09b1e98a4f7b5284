// @ts-check
// Questions the agents ask (`AskUser`), shown in the Queue next to approvals: who asks (the
// chat), the question, its choices — a button per choice when one is picked, checkboxes when
// several may be — and a text field when an answer in one's own words is accepted. Answering
// posts to `/v1/options/{id}/answer`; the card goes when `option.answered` (or `.cancelled`,
// `.expired`) arrives on the runtime event stream, wherever the answer was given.

import { api } from "./api.js";
import { h, visible } from "./pages.js";

/** @typedef {import("./types.js").Question} Question */

/** The pending questions of the user's chats, oldest first.
 *  @returns {Promise<Question[]>} */
export async function pendingQuestions() {
  const { items } = /** @type {import("./types.js").QuestionList} */ (await api("GET", "/v1/options?limit=500"));
  return items;
}

/** @param {Question} question */
const asker = (question) => question.chatTitle || `Chat ${question.chatId.slice(0, 8)}`;

/** @param {Question} question @param {boolean} focused */
export function questionCard(question, focused) {
  const status = h("span.meta");
  const text = question.freeText
    ? h("input.answer-text", { type: "text", placeholder: question.options.length ? "Or answer in your own words…" : "Your answer…" })
    : null;
  const answer = async (selectedOptionIds) => {
    const freeText = text?.value.trim() || undefined;
    if (!selectedOptionIds.length && !freeText) {
      status.textContent = "Pick a choice or write an answer.";
      status.className = "error";
      return;
    }
    for (const control of card.querySelectorAll("button, input")) control.disabled = true;
    status.textContent = "";
    try {
      await api("POST", `/v1/options/${question.id}/answer`, { selectedOptionIds, freeText });
      status.textContent = "Answered; the agent continues.";
      status.className = "meta";
    } catch (error) {
      status.textContent = visible(error.message);
      status.className = "error";
      for (const control of card.querySelectorAll("button, input")) control.disabled = false;
    }
  };

  const multiple = question.selectionMode === "multiple";
  const choices = multiple
    ? h("div.choices", {}, question.options.map((choice) => h("label.choice", {},
        h("input", { type: "checkbox", value: choice.id }), " ", choice.label)))
    : h("div.row.choices", {}, question.options.map((choice) =>
        h("button.choice", { dataset: { choice: choice.id }, onclick: () => answer([choice.id]) }, choice.label)));
  const checked = () => [...card.querySelectorAll(".choices input:checked")].map((input) => input.value);
  const send = multiple || text
    ? h("button.primary.send-answer", { onclick: () => answer(multiple ? checked() : []) }, "Answer")
    : null;

  const card = h("article.card.question" + (focused ? ".focus" : ""), { dataset: { option: question.id } },
    h("div.row", {},
      h("h2", {}, `${asker(question)} asks`),
      h("span.spacer"),
      h("span.tag", {}, multiple ? "pick any" : question.options.length ? "pick one" : "your words")),
    h("p.question-text", {}, question.title),
    h("p.meta", {}, `asked ${new Date(question.createdAt).toLocaleString()} · `,
      h("a", { href: `#/chat/${question.chatId}` }, "open the chat")),
    question.options.length ? choices : null,
    text || send ? h("div.row", {}, text, send) : null,
    status);
  return card;
}
