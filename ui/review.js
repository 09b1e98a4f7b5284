// @ts-check
// Review mode (issue 45): the switch that turns it on for a chat or an MCP client, and the
// review panel — a review's staged changes, each with its diff (the Queue's diff renderer),
// whether the file changed on disk since it was staged (a conflict), and Apply / Discard per
// change or for all. Shown at the end of a turn in Chat and with the pending approvals in the
// Queue; the daemon applies through the same tools and records each write in the history.

import { api } from "./api.js";
import { diffView, h, visible } from "./dom.js";
import { strings } from "./i18n.js";

export const t = strings({
  en: {
    review_mode: "Review file changes before they are written",
    review_mode_title: "Writes are staged; at the end of the turn you apply or discard each one.",
    review_mode_client: "Review",
    pending_reviews: "Changes waiting for review",
    review_of_chat: "Review of a chat turn ({n} changes)",
    review_of_client: "Changes staged by {client} ({n})",
    conflict: "changed on disk since it was staged",
    apply: "Apply",
    discard: "Discard",
    apply_all: "Apply all",
    discard_all: "Discard all",
    apply_anyway: "Apply anyway",
    applied: "applied",
    discarded: "discarded",
    failed: "failed",
    applying: "applying…",
    conflicts_left: "{n} changed on disk since staged and were not applied: check them, then Apply anyway.",
    closed: "All changes are decided.",
  },
  ru: {
    review_mode: "Проверять изменения файлов до записи",
    review_mode_title: "Записи откладываются; в конце хода вы применяете или отклоняете каждую.",
    review_mode_client: "Проверка",
    pending_reviews: "Изменения ждут проверки",
    review_of_chat: "Проверка хода чата (изменений: {n})",
    review_of_client: "Изменения от {client} (изменений: {n})",
    conflict: "файл изменился на диске после того, как изменение было отложено",
    apply: "Применить",
    discard: "Отклонить",
    apply_all: "Применить все",
    discard_all: "Отклонить все",
    apply_anyway: "Всё равно применить",
    applied: "применено",
    discarded: "отклонено",
    failed: "ошибка",
    applying: "применяется…",
    conflicts_left: "Не применено изменений: {n} — файлы изменились на диске после откладывания. Проверьте их и нажмите «Всё равно применить».",
    closed: "По всем изменениям принято решение.",
  },
});

/** @typedef {import("./types.js").Review} Review */
/** @typedef {import("./types.js").ReviewList} ReviewList */
/** @typedef {import("./types.js").ReviewModes} ReviewModes */
/** @typedef {import("./types.js").ReviewOutcome} ReviewOutcome */
/** @typedef {import("./types.js").StagedChange} StagedChange */

/** A switch for review mode of one chat (`{chatId}`) or one client (`{client}`).
 *  @param {{chatId?: string, client?: string}} who @param {string} label
 *  @param {(text: string, error?: boolean) => void} say */
export function reviewModeSwitch(who, label, say) {
  const input = h("input", { type: "checkbox", dataset: { reviewMode: who.chatId ?? who.client ?? "" } });
  const box = h("label.check.review-mode", { title: t("review_mode_title") }, input, " ", label);
  let touched = false;
  api("GET", "/v1/review-mode").then((/** @type {ReviewModes} */ modes) => {
    // A click that came first wins: its PUT is what the daemon holds.
    if (!touched) input.checked = who.chatId ? modes.chats.includes(who.chatId) : modes.clients.includes(who.client ?? "");
  }).catch((error) => say(error.message, true));
  input.addEventListener("change", async () => {
    touched = true;
    try {
      await api("PUT", "/v1/review-mode", { ...who, on: input.checked });
    } catch (error) {
      input.checked = !input.checked;
      say(error.message, true);
    }
  });
  return box;
}

/** The open reviews, each with its changes. @returns {Promise<Review[]>} */
export async function pendingReviews() {
  const { items } = /** @type {ReviewList} */ (await api("GET", "/v1/reviews"));
  return Promise.all(items.map((item) => /** @type {Promise<Review>} */ (api("GET", `/v1/reviews/${item.id}`))));
}

/** The panel of `review`: its changes with their diffs and decisions, and Apply / Discard.
 *  @param {Review} review */
export function reviewPanel(review) {
  const panel = h("article.card.review", { dataset: { review: String(review.id) } });
  const status = h("p.meta.review-status");
  /** @param {object} body */
  const decide = async (body) => {
    for (const button of panel.querySelectorAll("button")) button.disabled = true;
    try {
      const outcome = /** @type {ReviewOutcome} */ (await api("POST", `/v1/reviews/${review.id}/decisions`, body));
      render(outcome.review);
      status.className = "meta review-status";
      status.textContent = outcome.conflicts.length
        ? t("conflicts_left", { n: outcome.conflicts.length })
        : outcome.review.status === "closed" ? t("closed") : "";
    } catch (error) {
      status.className = "error review-status";
      status.textContent = visible(error.message);
      for (const button of panel.querySelectorAll("button")) button.disabled = false;
    }
  };
  /** @param {Review} current */
  const render = (current) => {
    const undecided = current.items.filter((change) => !change.decision);
    const conflicted = undecided.some((change) => change.conflict);
    const title = current.chatId
      ? t("review_of_chat", { n: current.changes })
      : t("review_of_client", { client: current.client, n: current.changes });
    panel.replaceChildren(
      h("h2", {}, title),
      ...current.items.map((change) => changeView(change, decide)),
      undecided.length
        ? h("div.row", {},
          h("button.primary.review-apply-all", { onclick: () => decide({ all: "apply" }) }, t("apply_all")),
          conflicted ? h("button.review-force", { onclick: () => decide({ all: "apply", force: true }) }, t("apply_anyway")) : null,
          h("span.spacer"),
          h("button.danger.review-discard-all", { onclick: () => decide({ all: "discard" }) }, t("discard_all")))
        : null,
      status);
  };
  render(review);
  return panel;
}

/** One staged change. @param {StagedChange} change @param {(body: object) => void} decide */
function changeView(change, decide) {
  const decision = change.decision
    ? h("span.tag.decision." + change.decision, {}, t(change.decision))
    : null;
  return h("section.staged-change" + (change.conflict ? ".conflict" : ""), { dataset: { change: String(change.id) } },
    h("div.row", {},
      h("strong", {}, change.summary),
      h("span.spacer"),
      h("span.tag", {}, change.tool),
      decision),
    change.conflict ? h("p.error.conflict-note", {}, "⚠ " + t("conflict") + ": " + change.paths.filter((path) => path.changed).map((path) => path.path).join(", ")) : null,
    change.diff ? diffView(change.diff) : null,
    change.result && change.decision === "failed" ? h("p.error", {}, visible(change.result)) : null,
    change.decision
      ? null
      : h("div.row", {},
        h("button.review-apply", { onclick: () => decide({ decisions: [{ changeId: change.id, action: "apply" }] }) }, t("apply")),
        h("button.danger.review-discard", { onclick: () => decide({ decisions: [{ changeId: change.id, action: "discard" }] }) }, t("discard"))));
}
