// @ts-check
// A chat's tool lines: one line per tool call of the agent, among the messages, with how it
// went (running, ran, failed, waiting for approval, approved or denied and where), Approve/Deny
// while its approval waits (above the diff or command it would allow, drawn by approval.js as
// the Inbox draws it), and Undo once its call changed files (undo.js). Live lines follow the
// chat's events as they come; when a chat is opened, the lines of its earlier turns are rebuilt
// from its stored events (`GET /v1/chats/{id}/events`, the same events) and put back where they
// were among the messages shown. Every text from the daemon is shown through `h()`/`visible()`.
//
// Invariants: a line is keyed by the model's call id (`toolCallId`), so an event seen twice (the
// replay, then the live stream) updates one line; an approval's outcome stays on its line after
// the call's result replaces the line's text.

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { h, preview, visible } from "./dom.js";
import { approvalDetails } from "./approval.js";
import { t as undoText, undoableChanges, undoButton } from "./undo.js";

/** @typedef {import("./types.js").ChatEvent} ChatEvent */
/** @typedef {import("./types.js").HistoryChange} HistoryChange */
/** @typedef {import("./types.js").Approval} Approval */

const t = strings({
  en: {
    approve: "Approve",
    deny: "Deny",
    waiting: "waiting for your approval",
    what_it_does: "What it would do",
    approved: "approved",
    denied: "denied",
    expired: "no answer",
    via_ui: "in Souz",
    via_cli: "in the terminal",
    via_tray: "from the menu bar",
    via_notification: "from a notification",
    via_telegram: "in Telegram",
    via_acp: "in the editor",
    via_api: "through the API",
    via_other: "via {via}",
  },
  ru: {
    approve: "Разрешить",
    deny: "Запретить",
    waiting: "ждёт вашего разрешения",
    what_it_does: "Что будет сделано",
    approved: "разрешено",
    denied: "запрещено",
    expired: "нет ответа",
    via_ui: "в Souz",
    via_cli: "в терминале",
    via_tray: "из строки меню",
    via_notification: "из уведомления",
    via_telegram: "в Telegram",
    via_acp: "в редакторе",
    via_api: "через API",
    via_other: "через {via}",
  },
});

/** Where an approval was decided, in words ("in Telegram"); an unknown surface by its name.
 *  @param {string} via */
const where = (via) => {
  const key = `via_${via}`;
  return t(key) === key ? t("via_other", { via }) : t(key);
};

/** One line: its parts, the model's call id it is keyed by, and the gate's id once known (from
 *  its approval or its end), which undo names.
 *  @typedef {{key: string, line: HTMLElement, text: HTMLElement, verdict: HTMLElement, actions: HTMLElement,
 *    undo: HTMLElement, panel: HTMLElement, label: string, summary?: string, callId?: string,
 *    detail?: HTMLDetailsElement | null}} Line */

/** The stored events of a chat a replay reads at once (the route's most). */
const REPLAY_PAGE = 1000;

/**
 * The tool lines of the chat page showing `chatId` in `messages`.
 * @param {{chatId: string, messages: HTMLElement, before: () => Node | null,
 *   attempt: (step: () => Promise<void>) => Promise<void>}} page
 *   `before()`: the node a new live line goes before (the answer being streamed), else the end.
 */
export function toolLines({ chatId, messages, before, attempt }) {
  /** @type {Map<string, Line>} */
  const calls = new Map();
  /** The line of each approval asked in this chat, by approval id. @type {Map<string, Line>} */
  const approvals = new Map();

  /** The line keyed `key`, made (and put among the messages when `place`) on first use.
   *  @param {string} key @param {string | undefined} name @param {boolean} [place] */
  const callLine = (key, name, place = true) => {
    let call = calls.get(key);
    if (!call) {
      const text = h("span.text");
      const verdict = h("span.verdict");
      const actions = h("span.actions");
      const undo = h("span.undo-actions");
      const panel = h("div.undo-panel");
      call = { key, line: h("div.tool-call", { dataset: { toolCall: key } }, text, verdict, actions, undo, panel), text, verdict, actions, undo, panel, label: name || "tool" };
      calls.set(key, call);
      if (place) messages.insertBefore(call.line, before());
    }
    return call;
  };
  /** @param {Line} call @param {string} kind @param {string} text */
  const showCall = (call, kind, text) => {
    call.line.className = "tool-call " + kind;
    call.line.dataset.state = kind;
    call.text.textContent = visible(text);
  };
  /** The gate's id for a line's call, as its end names it (exact: a guess made from the history
   *  event while it ran gives way, and an Undo offered for the guess goes with it).
   *  @param {Line} call @param {string | null | undefined} callId */
  const knowGateCall = (call, callId) => {
    if (!callId || call.callId === callId) return;
    if (call.callId) call.undo.replaceChildren();
    call.callId = callId;
  };
  /** Undo on a line whose call has changes that can still be undone (none: no button). The
   *  changes are asked for, unless `known` (the turn's, read once for its lines) has them.
   *  @param {Line} call @param {HistoryChange[]} [known] */
  const offerUndo = async (call, known) => {
    const callId = call.callId;
    if (!callId) return;
    let undoable;
    try {
      undoable = known
        ? known.some((change) => change.callId === callId && change.status === "done")
        : (await undoableChanges(callId)).length > 0;
    } catch (error) { console.warn(error); return; }
    if (!undoable) { call.undo.replaceChildren(); return; }
    if (call.undo.querySelector("button")) return;
    call.undo.replaceChildren(undoButton({
      label: undoText("undo"), title: undoText("undo_title"), selection: { type: "call", call_id: callId },
      panel: call.panel, dataset: { undoCall: callId }, done: () => call.undo.replaceChildren(),
    }));
  };

  /** @param {Line} call @param {string} approvalId @param {"approve" | "deny"} decision */
  const decide = (call, approvalId, decision) => attempt(async () => {
    for (const button of call.actions.querySelectorAll("button")) button.disabled = true;
    try {
      await api("POST", `/v1/approvals/${approvalId}/decision`, { decision, scope: "once", via: "ui" });
    } catch (error) {
      for (const button of call.actions.querySelectorAll("button")) button.disabled = false;
      throw error;
    }
  });
  /** Under an approval's line, what it would allow (the diff, the command), as the Inbox shows
   *  it; folded once the approval is decided. @param {Line} call @param {string} approvalId */
  const showApprovalDetails = async (call, approvalId) => {
    if (call.detail) return;
    const detail = /** @type {HTMLDetailsElement} */ (h("details.approval-detail", { open: true, dataset: { approvalDetail: approvalId } }, h("summary", {}, t("what_it_does"))));
    call.detail = detail;
    call.line.append(detail);
    try {
      const approval = /** @type {Approval} */ (await api("GET", `/v1/approvals/${approvalId}`));
      detail.append(...approvalDetails(approval));
    } catch (error) { detail.remove(); call.detail = null; console.warn(error); }
  };
  /** A line waiting for its approval, with Approve and Deny.
   *  @param {string} approvalId @param {string} key @param {string} name @param {string} summary @param {string} callId */
  const waitForApproval = (approvalId, key, name, summary, callId) => {
    const call = asked(approvalId, key, name, summary, callId, true);
    call.actions.replaceChildren(
      h("button.primary", { type: "button", dataset: { approve: approvalId }, onclick: () => decide(call, approvalId, "approve") }, t("approve")),
      h("button.danger", { type: "button", dataset: { deny: approvalId }, onclick: () => decide(call, approvalId, "deny") }, t("deny")));
    showApprovalDetails(call, approvalId);
  };
  /** The line of an approval asked for. @param {string} approvalId @param {string} key @param {string} name
   *  @param {string} summary @param {string} callId @param {boolean} place */
  const asked = (approvalId, key, name, summary, callId, place) => {
    const call = callLine(key, name, place);
    call.callId = callId;
    call.summary = summary;
    approvals.set(approvalId, call);
    showCall(call, "waiting", `⏸ ${call.label}: ${summary} (${t("waiting")})`);
    return call;
  };
  /** An approval's outcome on its line, kept there when the call's end replaces its text.
   *  @param {Line} call @param {"approved" | "denied" | "expired"} outcome @param {string | null | undefined} via */
  const resolved = (call, outcome, via) => {
    call.actions.replaceChildren();
    if (call.detail) call.detail.open = false;
    const approved = outcome === "approved";
    call.line.dataset.approval = outcome;
    call.verdict.textContent = ` · ${t(outcome)}${via ? " " + where(via) : ""}`;
    showCall(call, approved ? "running" : "failed", `${approved ? "▶" : "✗"} ${call.label}${call.summary ? ": " + call.summary : ""}`);
  };

  /** Draws one tool or approval event on its line; false for any other event. Replayed
   *  (`place` false) a new line is not put among the messages: the replay places it.
   *  @param {ChatEvent} event @param {boolean} [place] @returns {Line | null} */
  const draw = (event, place = true) => {
    switch (event.type) {
      case "tool.call.started": {
        const { payload } = event;
        const call = callLine(payload.toolCallId, payload.name, place);
        const shown = /** @type {unknown} */ (payload.argumentsPreview);
        const args = shown && typeof shown === "object" && "arguments" in shown ? shown.arguments : shown;
        showCall(call, "running", `▶ ${call.label} ${preview(args)}`);
        return call;
      }
      case "tool.call.finished": {
        const { payload } = event;
        const call = callLine(payload.toolCallId, payload.name, place);
        showCall(call, "finished", `✓ ${call.label} (${payload.durationMs ?? "?"} ms) ${preview(payload.resultPreview)}`);
        knowGateCall(call, payload.callId);
        return call;
      }
      case "tool.call.failed": {
        // A call that failed may still have changed files (a command that wrote, then failed).
        const { payload } = event;
        const call = callLine(payload.toolCallId, payload.name, place);
        showCall(call, "failed", `✗ ${call.label} (${payload.durationMs ?? "?"} ms): ${payload.error || ""}`);
        knowGateCall(call, payload.callId);
        return call;
      }
      case "approval.requested": {
        const { payload } = event;
        return asked(payload.approvalId, payload.toolCallId || payload.approvalId, payload.name, payload.summary || "", payload.callId, place);
      }
      case "approval.decided":
      case "approval.expired": {
        const { payload } = event;
        const call = approvals.get(payload.approvalId) ?? callLine(payload.toolCallId || payload.approvalId, payload.name, place);
        const outcome = event.type === "approval.expired" ? "expired" : payload.status === "approved" ? "approved" : "denied";
        resolved(call, outcome, event.type === "approval.expired" ? null : payload.via);
        return call;
      }
      default:
        return null;
    }
  };

  return {
    /** A live event: its line drawn (Approve/Deny when it asks, Undo once it ends).
     *  @param {ChatEvent} event */
    live(event) {
      if (event.type === "approval.requested") {
        const { payload } = event;
        waitForApproval(payload.approvalId, payload.toolCallId || payload.approvalId, payload.name, payload.summary || "", payload.callId);
        return;
      }
      const call = draw(event);
      if (call && (event.type === "tool.call.finished" || event.type === "tool.call.failed")) offerUndo(call);
    },

    /** The lines of the turns whose messages are shown (`shown`, in order), rebuilt from the
     *  chat's stored events and each put before the message that followed it. Reads the events
     *  from the start up to the last message shown (one page for most chats); lines after it
     *  are kept only when `complete` (no message follows: a turn still running, or one that
     *  ended without an answer). `changesOf(executionId)` gives a turn's recorded changes, for
     *  the lines' Undo. Resolves to the approvals still waiting by their line (`pending` below).
     *  @param {{id: string}[]} shown @param {boolean} complete
     *  @param {(executionId: string) => Promise<HistoryChange[]>} changesOf */
    async replay(shown, complete, changesOf) {
      const ids = new Set(shown.map((message) => message.id));
      let seen = 0;
      /** Lines drawn since the last message shown, in order. @type {Line[]} */
      let waiting = [];
      /** The lines drawn of each turn, for its Undo. @type {Map<string, Set<Line>>} */
      const turns = new Map();
      const place = (/** @type {Node | null} */ anchor) => {
        for (const call of waiting) messages.insertBefore(call.line, anchor);
        waiting = [];
      };
      let after = 0;
      for (let done = false; !done;) {
        const { items } = /** @type {import("./types.js").ChatEventList} */ (await api("GET", `/v1/chats/${chatId}/events?afterSeq=${after}&limit=${REPLAY_PAGE}`));
        for (const event of items) {
          after = event.seq ?? after;
          if (event.type === "message.created") {
            if (!ids.has(event.payload.messageId)) {
              // Past the last message shown: the rest belongs to messages not shown.
              if (seen === ids.size) { done = true; break; }
              continue;
            }
            seen += 1;
            place(messages.querySelector(`[data-message="${CSS.escape(event.payload.messageId)}"]`));
            continue;
          }
          const fresh = !calls.has(toolKey(event));
          const call = draw(event, false);
          if (!call) continue;
          if (fresh) waiting.push(call);
          if (event.executionId) (turns.get(event.executionId) ?? turns.set(event.executionId, new Set()).get(event.executionId))?.add(call);
        }
        if (items.length < REPLAY_PAGE) done = true;
      }
      if (complete) place(null);
      else for (const call of waiting) { calls.delete(call.key); for (const [id, line] of approvals) if (line === call) approvals.delete(id); }
      await Promise.all([...turns].map(async ([executionId, lines]) => {
        const undoable = [...lines].filter((call) => call.callId && call.line.isConnected);
        if (!undoable.length) return;
        let changes;
        try { changes = await changesOf(executionId); } catch (error) { console.warn(error); return; }
        for (const call of undoable) offerUndo(call, changes);
      }));
    },

    /** The chat's approvals still waiting (asked before the page opened): Approve and Deny on
     *  their line (a replayed one, or a new one at the end); a replayed approval no longer
     *  waiting and never decided says so.
     *  @param {Approval[]} waitingNow */
    pending(waitingNow) {
      const open = new Set(waitingNow.map((approval) => approval.id));
      for (const [approvalId, call] of approvals) {
        if (!open.has(approvalId) && call.line.dataset.state === "waiting") resolved(call, "expired", null);
      }
      for (const approval of waitingNow) {
        const known = approvals.get(approval.id);
        waitForApproval(approval.id, known?.key ?? `approval-${approval.id}`, approval.tool, approval.summary, approval.call_id);
      }
    },

    /** A change recorded for this chat names the gate's call: a line knows that id from its
     *  approval or its end (`tool.call.*` carry it); while a call that did not ask still runs,
     *  it is the one line still running (a turn's calls run one after another), until its end
     *  says. @param {string} callId */
    changeRecorded(callId) {
      let call = [...calls.values()].find((line) => line.callId === callId);
      if (!call) {
        const running = [...calls.values()].filter((line) => !line.callId && line.line.classList.contains("running"));
        if (running.length === 1) { call = running[0]; call.callId = callId; }
      }
      if (call) offerUndo(call);
    },

    /** After any undo: each line's Undo asked again. */
    undone() {
      for (const call of calls.values()) if (call.undo.querySelector("button")) offerUndo(call);
    },
  };
}

/** The line key a tool or approval event names (the model's call id, else the approval's).
 *  @param {ChatEvent} event */
function toolKey(event) {
  const payload = /** @type {{toolCallId?: string, approvalId?: string}} */ (event.payload);
  return payload.toolCallId || payload.approvalId || "";
}
