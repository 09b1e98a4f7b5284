// @ts-check
// Questions the agents ask (`AskUser`), shown in the Queue next to approvals: who asks (the
// chat), the question, its choices — a button per choice when one is picked, checkboxes when
// several may be — and a text field when an answer in one's own words is accepted. Answering
// posts to `/v1/options/{id}/answer`; the card goes when `option.answered` (or `.cancelled`,
// `.expired`) arrives on the runtime event stream, wherever the answer was given.

import { api } from "./api.js";
import { h, visible } from "./dom.js";
import { strings } from "./i18n.js";

const t = strings({
  en: {
    chat_n: "Chat {id}",
    own_words: "Or answer in your own words…",
    your_answer: "Your answer…",
    pick_or_write: "Pick a choice or write an answer.",
    answered: "Answered; the agent continues.",
    answer: "Answer",
    asks: "{who} asks",
    pick_any: "pick any",
    pick_one: "pick one",
    your_words: "your words",
    asked_at: "asked {at} · ",
    open_chat: "open the chat",
  },
  ru: {
    chat_n: "Чат {id}",
    own_words: "Или ответьте своими словами…",
    your_answer: "Ваш ответ…",
    pick_or_write: "Выберите вариант или напишите ответ.",
    answered: "Ответ отправлен; агент продолжает.",
    answer: "Ответить",
    asks: "{who} спрашивает",
    pick_any: "несколько вариантов",
    pick_one: "один вариант",
    your_words: "своими словами",
    asked_at: "спрошено {at} · ",
    open_chat: "открыть чат",
  },
});

/** @typedef {import("./types.js").Question} Question */

/** The pending questions of the user's chats, oldest first.
 *  @returns {Promise<Question[]>} */
export async function pendingQuestions() {
  const { items } = /** @type {import("./types.js").QuestionList} */ (await api("GET", "/v1/options?limit=500"));
  return items;
}

/** @param {Question} question */
const asker = (question) => question.chatTitle || t("chat_n", { id: question.chatId.slice(0, 8) });

/** @param {Question} question @param {boolean} focused */
export function questionCard(question, focused) {
  const status = h("span.meta");
  const text = question.freeText
    ? h("input.answer-text", { type: "text", placeholder: question.options.length ? t("own_words") : t("your_answer") })
    : null;
  const answer = async (selectedOptionIds) => {
    const freeText = text?.value.trim() || undefined;
    if (!selectedOptionIds.length && !freeText) {
      status.textContent = t("pick_or_write");
      status.className = "error";
      return;
    }
    for (const control of card.querySelectorAll("button, input")) control.disabled = true;
    status.textContent = "";
    try {
      await api("POST", `/v1/options/${question.id}/answer`, { selectedOptionIds, freeText });
      status.textContent = t("answered");
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
    ? h("button.primary.send-answer", { onclick: () => answer(multiple ? checked() : []) }, t("answer"))
    : null;

  const card = h("article.card.question" + (focused ? ".focus" : ""), { dataset: { option: question.id } },
    h("div.row", {},
      h("h2", {}, t("asks", { who: asker(question) })),
      h("span.spacer"),
      h("span.tag", {}, multiple ? t("pick_any") : question.options.length ? t("pick_one") : t("your_words"))),
    h("p.question-text", {}, question.title),
    h("p.meta", {}, t("asked_at", { at: new Date(question.createdAt).toLocaleString() }),
      h("a", { href: `#/chat/${question.chatId}` }, t("open_chat"))),
    question.options.length ? choices : null,
    text || send ? h("div.row", {}, text, send) : null,
    status);
  return card;
}
