// The web UI's modules import in one direction: `LAYERS` below places every `ui/*.js`, bottom to
// top, and a module imports only modules of lower layers (never its own layer or one above), so
// there is no cycle. Each import statement of `ui/*.js` is read as text (comments blanked out, so
// JSDoc `import("./types.js")` types do not count); one that points up or sideways, a module the
// table does not place, or a placed module that does not exist fails with `file:line`. Every
// module must also be embedded in the binary (`FILES` of the gateway's `/app` route), or the
// browser gets a 404 for it. No browser and no daemon needed: `node --test layers.test.mjs`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ui = join(root, "ui");

/** The layers of `ui/`, bottom to top; docs/architecture.md draws the same table. */
export const LAYERS = [
  // Typedefs generated from the OpenAPI document; the strings of each language.
  ["types.js", "i18n.js"],
  // The daemon's API (requests, streams, the error sentences); building elements and showing
  // text (`h`, `visible`); the runtime event listeners that app.js feeds; the settings' field
  // docs in Russian; the providers' names as people know them.
  ["api.js", "config-docs.js", "dom.js", "events.js", "providers.js"],
  // Pieces pages share: what an approval would allow (Inbox and Chat), Markdown into DOM nodes,
  // the agents' questions; the Telegram card and page of Connections; undo of file changes;
  // review mode (its switch and the review panel); push-to-talk and spoken answers.
  ["approval.js", "markdown.js", "questions.js", "review.js", "telegram.js", "undo.js", "voice.js"],
  // Settings: a page whose problem list, restart button and keyed providers others reuse; the
  // schedule form, which the Schedules page opens; the Chat's tool lines (on approval.js and
  // undo.js).
  ["schedule-form.js", "settings.js", "tool-lines.js"],
  // The pages.
  ["chat.js", "connect.js", "history.js", "memory.js", "models.js", "pages.js", "recovery.js", "schedules.js", "servers.js", "setup.js", "skills.js"],
  // The router, the event stream, the login.
  ["app.js"],
];

/** `text` with comments replaced by spaces (newlines kept, so offsets and lines stay put).
 *  Strings, template literals and regular expressions are skipped as they are found. */
export function withoutComments(text) {
  let out = "";
  let index = 0;
  /** The last significant character written, to tell a regular expression from a division. */
  let last = "";
  const blank = (part) => part.replace(/[^\n]/g, " ");
  while (index < text.length) {
    const char = text[index];
    const next = text[index + 1];
    if (char === "/" && next === "*") {
      const end = text.indexOf("*/", index + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += blank(text.slice(index, stop));
      index = stop;
    } else if (char === "/" && next === "/") {
      const end = text.indexOf("\n", index);
      const stop = end < 0 ? text.length : end;
      out += blank(text.slice(index, stop));
      index = stop;
    } else if (char === '"' || char === "'" || char === "`" || (char === "/" && (last === "" || "(,=:[!&|?{};+-*%<>~^".includes(last)))) {
      let stop = index + 1;
      let inClass = false;
      while (stop < text.length) {
        const inner = text[stop];
        if (inner === "\\") { stop += 2; continue; }
        if (char === "/" && inner === "[") inClass = true;
        else if (char === "/" && inner === "]") inClass = false;
        else if (inner === char && !inClass) break;
        else if (char !== "`" && inner === "\n") break;
        stop += 1;
      }
      out += text.slice(index, stop + 1);
      index = stop + 1;
      last = char;
    } else {
      out += char;
      if (!/\s/.test(char)) last = char;
      index += 1;
    }
  }
  return out;
}

/** The modules `text` imports: static `import … from`, `export … from`, bare `import "…"` and
 *  dynamic `import("…")`, each with its 1-based line. */
export function importsOf(text) {
  const code = withoutComments(text);
  const found = [];
  const patterns = [
    /(?:^|[;\n])\s*(?:import|export)\s[^;"'`]*?\bfrom\s*(["'])([^"']+)\1/g,
    /(?:^|[;\n])\s*import\s*(["'])([^"']+)\1/g,
    /\bimport\s*\(\s*(["'])([^"']+)\1\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of code.matchAll(pattern)) {
      const at = match.index + match[0].indexOf(match[1] + match[2]);
      found.push({ target: match[2], line: code.slice(0, at).split("\n").length });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

/** Every problem of the modules in `files` (name → text) against `layers`, as `ui/file:line: …`. */
export function layeringProblems(files, layers) {
  const layerOf = new Map();
  const problems = [];
  layers.forEach((modules, layer) => {
    for (const module of modules) {
      if (layerOf.has(module)) problems.push(`ui/${module}: placed twice in LAYERS`);
      layerOf.set(module, layer);
    }
  });
  for (const module of layerOf.keys()) {
    if (!files.has(module)) problems.push(`ui/${module}: in LAYERS but there is no such file`);
  }
  for (const [module, text] of files) {
    const layer = layerOf.get(module);
    if (layer === undefined) {
      problems.push(`ui/${module}:1: not placed in LAYERS (tests/ui/layers.test.mjs): put it in the layer it belongs to`);
      continue;
    }
    for (const { target, line } of importsOf(text)) {
      const name = target.startsWith("./") ? target.slice(2) : null;
      if (name === null || name.includes("/")) {
        problems.push(`ui/${module}:${line}: imports "${target}": ui modules import only each other ("./name.js")`);
        continue;
      }
      const targetLayer = layerOf.get(name);
      if (targetLayer === undefined) problems.push(`ui/${module}:${line}: imports ${name}, which LAYERS does not place`);
      else if (targetLayer === layer) problems.push(`ui/${module}:${line}: imports ${name} of its own layer (${layer}); move the shared piece down`);
      else if (targetLayer > layer) problems.push(`ui/${module}:${line}: imports ${name}, which sits above it (layer ${targetLayer} > ${layer})`);
    }
  }
  return problems;
}

/** The UI's modules as they are on disk: name → text. */
function uiModules() {
  return new Map(readdirSync(ui).filter((name) => name.endsWith(".js")).sort().map((name) => [name, readFileSync(join(ui, name), "utf8")]));
}

test("ui modules import only modules of lower layers", () => {
  assert.deepEqual(layeringProblems(uiModules(), LAYERS), []);
});

test("every ui module is embedded in the binary", () => {
  const served = readFileSync(join(root, "crates/core/src/gateway/routes/app.rs"), "utf8");
  const missing = [...uiModules().keys()].filter((name) => name !== "types.js" && !served.includes(`include_bytes!("../../../../../ui/${name}")`));
  assert.deepEqual(missing, [], "add each to FILES in crates/core/src/gateway/routes/app.rs");
});

test("the checker sees upward, sideways and unplaced imports, and skips comments", () => {
  const files = new Map([
    ["low.js", '// import { x } from "./high.js";\n/** @type {import("./high.js").T} */\nconst url = "https://x/*";\nimport { y } from "./high.js";\n'],
    ["mid.js", 'import {\n  a,\n} from "./low.js";\nexport { b } from "./side.js";\n'],
    ["side.js", 'const m = await import("./stray.js");\n'],
    ["high.js", 'import "./low.js";\n'],
    ["stray.js", ""],
  ]);
  assert.deepEqual(layeringProblems(files, [["low.js"], ["mid.js", "side.js"], ["high.js"]]), [
    "ui/low.js:4: imports high.js, which sits above it (layer 2 > 0)",
    "ui/mid.js:4: imports side.js of its own layer (1); move the shared piece down",
    "ui/side.js:1: imports stray.js, which LAYERS does not place",
    "ui/stray.js:1: not placed in LAYERS (tests/ui/layers.test.mjs): put it in the layer it belongs to",
  ]);
});
