// @ts-check
// What an approval would allow, drawn the same way wherever it is decided: the Inbox's card
// (pages.js) and the Chat's approval line (chat.js). The diff of a file change (`diffView`), the
// command line of a command, and the call's arguments, folded when the diff or the command
// already says it. Every text from the daemon is shown through `h()` (as text, never HTML).

import { diffView, h } from "./dom.js";
import { strings } from "./i18n.js";

const t = strings({
  en: { arguments: "Arguments" },
  ru: { arguments: "Аргументы" },
});

/** `value[name]` when `value` (any JSON) is an object, else undefined.
 *  @param {unknown} value @param {string} name @returns {unknown} */
function field(value, name) {
  return value && typeof value === "object" && name in value ? value[name] : undefined;
}

/** @param {import("./types.js").Approval} approval @returns {HTMLElement[]} */
export function approvalDetails(approval) {
  const command = field(approval.arguments, "command");
  const shown = approval.diff ? diffView(approval.diff) : typeof command === "string" ? h("pre.command-line", {}, `$ ${command}`) : null;
  return [
    ...(shown ? [shown] : []),
    h("details", { open: !shown }, h("summary", {}, t("arguments")), h("pre", {}, JSON.stringify(approval.arguments, null, 2))),
  ];
}
