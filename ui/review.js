// @ts-check
// Review mode (issue 45): the switch that turns it on for a chat or an MCP client, and the
// review panel — a review's staged changes, each with its diff (the Queue's diff renderer),
// whether it conflicts and why (the file changed on disk since it was staged, or an earlier
// staged change to the same file was discarded or not applied), and Apply / Discard per
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
    conflict_earlier: "staged on top of another change to this file that was discarded or not applied in order; it does not fit the file as it is",
    apply: "Apply",
    discard: "Discard",
    apply_all: "Apply all",
    discard_all: "Discard all",
    apply_anyway: "Apply anyway",
    applied: "applied",
    discarded: "discarded",
    failed: "failed",
    applying: "applying…",
    conflicts_left: "{n} not applied because they conflict: check them, then Apply anyway (each is planned again against the file as it is now).",
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
    conflict_earlier: "отложено поверх другого изменения этого файла, которое отклонено или применено не по порядку; к файлу в нынешнем виде оно не подходит",
    apply: "Применить",
    discard: "Отклонить",
    apply_all: "Применить все",
    discard_all: "Отклонить все",
    apply_anyway: "Всё равно применить",
    applied: "применено",
    discarded: "отклонено",
    failed: "ошибка",
    applying: "применяется…",
    conflicts_left: "Не применено изменений: {n} — они конфликтуют. Проверьте их и нажмите «Всё равно применить» (каждое будет заново построено по файлу в нынешнем виде).",
    closed: "По всем изменениям принято решение.",
  },
});

/** @typedef {import("./types.js").Review} Review */
/** @typedef {import("./types.js").ReviewList} ReviewList */
/** @typedef {import("./types.js").ReviewModes} ReviewModes */
/** @typedef {import("./types.js").ReviewOutcome} ReviewOutcome */
/** @typedef {import("./types.js").StagedChange} StagedChange */
/** @typedef {import("./types.js").ConflictReason} ConflictReason */

/** What a conflict of `reason` is, for the person. @param {ConflictReason} reason */
function conflictText(reason) {
  return reason === "earlier_change" ? t("conflict_earlier") : t("conflict");
}

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
      render(outcome.review, new Map(outcome.conflictReasons.map((conflict) => [conflict.changeId, conflict.reason])));
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
  /** @param {Review} current
   *  @param {Map<number, ConflictReason>} refused why changes just asked to be applied were not */
  const render = (current, refused = new Map()) => {
    const undecided = current.items.filter((change) => !change.decision);
    const conflicted = undecided.some((change) => change.conflict || refused.has(change.id));
    const title = current.chatId
      ? t("review_of_chat", { n: current.changes })
      : t("review_of_client", { client: current.client, n: current.changes });
    panel.replaceChildren(
      h("h2", {}, title),
      ...current.items.map((change) => changeView(change, decide, refused.get(change.id))),
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

/** One staged change; `refused`: why applying it just now was refused, if it was.
 *  @param {StagedChange} change @param {(body: object) => void} decide
 *  @param {ConflictReason} [refused] */
function changeView(change, decide, refused) {
  const decision = change.decision
    ? h("span.tag.decision." + change.decision, {}, t(change.decision))
    : null;
  const reason = change.decision ? null : change.conflictReason ?? refused ?? null;
  const conflicted = change.paths.filter((path) => path.changed).map((path) => path.path);
  const where = (conflicted.length ? conflicted : change.paths.map((path) => path.path)).join(", ");
  return h("section.staged-change" + (reason ? ".conflict" : ""), { dataset: { change: String(change.id), conflict: reason ?? "" } },
    h("div.row", {},
      h("strong", {}, change.summary),
      h("span.spacer"),
      h("span.tag", {}, change.tool),
      decision),
    reason ? h("p.error.conflict-note", {}, "⚠ " + conflictText(reason) + ": " + where) : null,
    change.diff ? diffView(change.diff) : null,
    change.result && change.decision === "failed" ? h("p.error", {}, visible(change.result)) : null,
    change.decision
      ? null
      : h("div.row", {},
        h("button.review-apply", { onclick: () => decide({ decisions: [{ changeId: change.id, action: "apply" }] }) }, t("apply")),
        h("button.danger.review-discard", { onclick: () => decide({ decisions: [{ changeId: change.id, action: "discard" }] }) }, t("discard"))));
}
