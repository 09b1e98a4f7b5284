// @ts-check
// Undo of recorded file changes, shared by the History page, the Chat's tool lines and the Audit
// rows: `POST /v1/history/undo` for a change, a call or a whole turn. When a file changed since
// Souz wrote it the daemon undoes nothing and lists each such path; this shows its three
// versions (what was before, what Souz wrote, what is there now) as diffs, with "Keep current"
// (nothing happens) and "Restore anyway" (the same selection again with `force`). Also says, in
// words, what a change did to each of its paths.

import { api } from "./api.js";
import { diffView, h, size, visible } from "./dom.js";
import { strings } from "./i18n.js";

/** @typedef {import("./types.js").ChangedPath} ChangedPath */
/** @typedef {import("./types.js").HistoryChange} HistoryChange */
/** @typedef {import("./types.js").HistoryList} HistoryList */
/** @typedef {import("./types.js").PathSnapshot} PathSnapshot */
/** @typedef {import("./types.js").UndoConflict} UndoConflict */
/** @typedef {import("./types.js").UndoReport} UndoReport */
/** @typedef {import("./types.js").UndoSelection} UndoSelection */

export const t = strings({
  en: {
    undo: "Undo",
    undo_title: "Put the files back as they were before this change",
    undo_turn: "Undo this turn",
    undo_turn_title: "Put back every file this chat turn changed",
    undoing: "Undoing…",
    undone_n: "Undone: {n} change(s).",
    nothing_undone: "Nothing was undone.",
    undone: "undone",
    conflicts: "These files changed since Souz wrote them, so nothing was undone. Compare, then keep them as they are or restore anyway.",
    souz_wrote: "What Souz wrote (against what was before)",
    now_there: "What is there now (against what Souz wrote)",
    before_was: "What was before: {what}",
    versions: "Before: {before} · Souz wrote: {wrote} · now: {now}",
    keep_current: "Keep current",
    restore_anyway: "Restore anyway",
    kept_current: "Kept as it is now; nothing was undone.",
    no_diff: "(not text, or not kept: no diff to show)",
    kind_absent: "nothing",
    kind_file: "a file of {size}",
    kind_folder: "a folder",
    kind_symlink: "a symbolic link",
    kind_other: "something that is not a file",
    created: "created",
    edited: "edited",
    deleted: "deleted",
    moved_away: "moved away",
    moved_here: "moved here",
    folder_created: "folder created on the way",
    not_restorable: "not restorable",
    pending: "not confirmed yet",
  },
  ru: {
    undo: "Отменить",
    undo_title: "Вернуть файлы в то состояние, что было до этого изменения",
    undo_turn: "Отменить весь ход",
    undo_turn_title: "Вернуть все файлы, которые изменил этот ход чата",
    undoing: "Отменяю…",
    undone_n: "Отменено изменений: {n}.",
    nothing_undone: "Ничего не отменено.",
    undone: "отменено",
    conflicts: "Эти файлы изменились после того, как Souz их записал, поэтому ничего не отменено. Сравните и оставьте их как есть или всё равно восстановите.",
    souz_wrote: "Что записал Souz (по сравнению с тем, что было)",
    now_there: "Что там сейчас (по сравнению с тем, что записал Souz)",
    before_was: "Что было до изменения: {what}",
    versions: "Было: {before} · Souz записал: {wrote} · сейчас: {now}",
    keep_current: "Оставить как есть",
    restore_anyway: "Всё равно восстановить",
    kept_current: "Оставлено как есть; ничего не отменено.",
    no_diff: "(не текст или содержимое не сохранено: сравнить нельзя)",
    kind_absent: "ничего",
    kind_file: "файл размером {size}",
    kind_folder: "папка",
    kind_symlink: "символическая ссылка",
    kind_other: "не файл",
    created: "создан",
    edited: "изменён",
    deleted: "удалён",
    moved_away: "перемещён отсюда",
    moved_here: "перемещён сюда",
    folder_created: "папка создана по пути",
    not_restorable: "нельзя восстановить",
    pending: "ещё не подтверждено",
  },
});

/** A path's content at one moment, in words. @param {PathSnapshot | null | undefined} snapshot */
export function snapshotWords(snapshot) {
  if (!snapshot) return t("pending");
  if (snapshot.kind === "file") return t("kind_file", { size: size(snapshot.size ?? 0) });
  return t("kind_" + snapshot.kind);
}

/** What a change did to one of its paths: `created`, `edited`, `deleted`, `moved_away`,
 *  `moved_here` or `folder_created` (a key of `t`). A move is a path that went and another of
 *  the same change that came with the same content.
 *  @param {HistoryChange} change @param {ChangedPath} path */
export function pathEffect(change, path) {
  if (path.createdParent) return "folder_created";
  const before = path.before.kind !== "absent";
  const after = !!path.after && path.after.kind !== "absent";
  const others = change.paths.filter((other) => other !== path);
  if (before && !after) {
    const arrived = others.some((other) => other.before.kind === "absent" && other.after && other.after.kind !== "absent"
      && (change.tool === "MoveFile" || (other.after.sha256 && other.after.sha256 === path.before.sha256)));
    return arrived ? "moved_away" : "deleted";
  }
  if (!before && after) {
    const left = others.some((other) => other.before.kind !== "absent" && other.after?.kind === "absent"
      && (change.tool === "MoveFile" || (other.before.sha256 && other.before.sha256 === path.after?.sha256)));
    return left ? "moved_here" : "created";
  }
  return "edited";
}

/** Whether undo can bring the path back as it was: a file that was there must have had its
 *  content kept (a created path is simply removed). @param {ChangedPath} path */
export const restorable = (path) => path.before.kind !== "file" || path.before.kept;

/** The call's recorded changes that undo can still take back (`GET /v1/history?call_id=`).
 *  @param {string} callId @returns {Promise<HistoryChange[]>} */
export async function undoableChanges(callId) {
  const { changes } = /** @type {HistoryList} */ (await api("GET", `/v1/history?call_id=${encodeURIComponent(callId)}&limit=20`));
  return changes.filter((change) => change.status === "done");
}

/** A button that undoes `selection` and shows what happened in `panel` (the conflicts, when
 *  files changed since); `done` runs once something was undone.
 *  @param {{label: string, title: string, selection: UndoSelection, panel: HTMLElement, done?: () => void, dataset?: Record<string, string>}} options */
export function undoButton({ label, title, selection, panel, done = () => {}, dataset = {} }) {
  const button = h("button.undo", { type: "button", title, dataset }, label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    const finished = await runUndo(selection, panel, done);
    button.disabled = finished;
  });
  return button;
}

/** Undoes `selection` (with `force`: also where files changed since) and shows the outcome in
 *  `panel`. Resolves to whether something was undone.
 *  @param {UndoSelection} selection @param {HTMLElement} panel @param {() => void} done
 *  @param {boolean} [force] @returns {Promise<boolean>} */
export async function runUndo(selection, panel, done, force = false) {
  panel.className = "undo-panel meta";
  panel.replaceChildren(t("undoing"));
  /** @type {UndoReport} */
  let report;
  try {
    report = /** @type {UndoReport} */ (await api("POST", "/v1/history/undo", { selection, force }));
  } catch (error) {
    panel.className = "undo-panel error";
    panel.replaceChildren(visible(error.message));
    return false;
  }
  // Forced, the report still names the paths it overrode: what counts is what was undone.
  if (report.conflicts.length && !report.undone.length) {
    showConflicts(report.conflicts, selection, panel, done);
    return false;
  }
  panel.className = "undo-panel meta";
  panel.replaceChildren(h("span.undone", {}, report.undone.length ? t("undone_n", { n: report.undone.length }) : t("nothing_undone")),
    ...report.notes.map((note) => h("div.note", {}, note)));
  if (report.undone.length) done();
  return report.undone.length > 0;
}

/** Shows in `panel` the paths of `selection` that changed since Souz wrote them, with "Keep
 *  current" and "Restore anyway" (the undo again with `force`).
 *  @param {UndoConflict[]} conflicts @param {UndoSelection} selection @param {HTMLElement} panel
 *  @param {() => void} done */
export function showConflicts(conflicts, selection, panel, done) {
  panel.className = "undo-panel conflicts";
  panel.replaceChildren(conflictView(conflicts, {
    keep: () => { panel.className = "undo-panel meta"; panel.replaceChildren(t("kept_current")); },
    restore: () => runUndo(selection, panel, done, true),
  }));
}

/** The three-way view of each path that changed since Souz wrote it, and the two choices.
 *  @param {UndoConflict[]} conflicts @param {{keep: () => void, restore: () => void}} choices */
function conflictView(conflicts, { keep, restore }) {
  const box = h("div.conflict-list", {}, h("p", {}, t("conflicts")));
  for (const conflict of conflicts) {
    box.append(h("div.conflict", { dataset: { conflictPath: conflict.path, change: String(conflict.changeId) } },
      h("h3", {}, conflict.path),
      h("p.meta", {}, t("versions", { before: snapshotWords(conflict.before), wrote: snapshotWords(conflict.wrote), now: snapshotWords(conflict.now) })),
      h("h4", {}, t("souz_wrote")),
      conflict.souzDiff ? h("div.souz-diff", {}, diffView(conflict.souzDiff)) : h("p.meta", {}, t("no_diff")),
      h("h4", {}, t("now_there")),
      conflict.sinceDiff ? h("div.since-diff", {}, diffView(conflict.sinceDiff)) : h("p.meta", {}, t("no_diff")),
      h("p.meta.before", {}, t("before_was", { what: snapshotWords(conflict.before) }))));
  }
  box.append(h("div.row", {},
    h("button.keep-current", { type: "button", onclick: keep }, t("keep_current")),
    h("button.danger.restore-anyway", { type: "button", onclick: restore }, t("restore_anyway"))));
  return box;
}
