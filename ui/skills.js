// @ts-check
// Skills: every skill the daemon sees (installed, then a project's, ~/.agents and ~/.claude
// imports; the first of an id wins) with its source, hash and state; one skill's manifest,
// validation findings and files on demand; enable, disable and remove for installed skills;
// install or validate from a folder or .zip path on the daemon's machine, from an uploaded .zip,
// or from a git repository (its URL or a forge's page of the folder, a ref, a folder).
// Everything the daemon says (descriptions, findings, errors) is shown as text.

import { api } from "./api.js";
import { strings } from "./i18n.js";
import { h, visible } from "./dom.js";

/** @typedef {import("./types.js").SkillList} SkillList */
/** @typedef {import("./types.js").SkillSummary} SkillSummary */
/** @typedef {import("./types.js").SkillDetail} SkillDetail */
/** @typedef {import("./types.js").SkillValidation} SkillValidation */
/** @typedef {import("./types.js").SkillFinding} SkillFinding */
/** @typedef {import("./types.js").InstalledSkill} InstalledSkill */
/** @typedef {import("./types.js").SkillGitSource} SkillGitSource */

const t = strings({
  en: {
    title: "Skills",
    intro: "Skills are folders with a SKILL.md. The agents see the enabled, approved ones by name and description and read their instructions when they use one; Claude sees them as prompts on /mcp.",
    install_title: "Install a skill",
    path_placeholder: "/absolute/path/to/skill-folder or skill.zip (on the daemon's machine)",
    install: "Install",
    validate: "Validate only",
    upload_label: "or upload a .zip:",
    upload: "Upload and install",
    url_placeholder: "git repository or its folder page: https://github.com/owner/repo/tree/main/skills/name",
    ref_placeholder: "branch, tag or commit (optional)",
    folder_placeholder: "folder in the repository (optional)",
    install_url: "Install from git",
    need_path: "Enter a path first.",
    need_file: "Choose a .zip file first.",
    need_url: "Enter a URL first.",
    installed: "Installed {id} ({hash}).",
    approved: "{id}: passes validation.",
    not_approved: "{id}: rejected by validation.",
    removed: "Removed {id}.",
    enabled: "Enabled {id}.",
    disabled: "Disabled {id}.",
    col_skill: "Skill",
    col_source: "Source",
    col_hash: "Hash",
    col_state: "State",
    none: "No skills yet. Install one above, or put one in ~/.agents/skills.",
    state_enabled: "enabled",
    state_disabled: "disabled",
    state_broken: "cannot load",
    details: "Details",
    hide: "Hide",
    enable: "Enable",
    disable: "Disable",
    remove: "Remove",
    confirm_remove: "Remove {id} and all its stored bundles?",
    src_installed: "installed",
    src_project: "project",
    src_user_agents: "~/.agents/skills",
    src_user_claude: "~/.claude/skills",
    manifest: "Permissions manifest (agents/souz.toml)",
    no_manifest: "No manifest: the skill's commands get no extra folders, hosts or programs.",
    m_read: "Read",
    m_write: "Write",
    m_hosts: "Hosts",
    m_programs: "Programs",
    m_env: "Environment",
    m_tools: "Tools",
    m_time: "Time limit",
    seconds: "{n} s",
    nothing: "nothing",
    findings: "Validation findings",
    no_findings: "No findings.",
    verdict_ok: "Approved by validation.",
    verdict_bad: "Rejected by validation.",
    files: "Files",
    no_files: "SKILL.md only.",
    instructions: "Instructions (SKILL.md body)",
    path: "Folder",
  },
  ru: {
    title: "Навыки",
    intro: "Навык — это папка с SKILL.md. Агенты видят включённые и одобренные навыки по имени и описанию и читают инструкции, когда используют навык; Claude видит их как промпты на /mcp.",
    install_title: "Установить навык",
    path_placeholder: "/абсолютный/путь/к/папке-навыка или skill.zip (на машине демона)",
    install: "Установить",
    validate: "Только проверить",
    upload_label: "или загрузите .zip:",
    upload: "Загрузить и установить",
    url_placeholder: "git-репозиторий или страница папки: https://github.com/owner/repo/tree/main/skills/name",
    ref_placeholder: "ветка, тег или коммит (необязательно)",
    folder_placeholder: "папка в репозитории (необязательно)",
    install_url: "Установить из git",
    need_path: "Сначала укажите путь.",
    need_file: "Сначала выберите .zip-файл.",
    need_url: "Сначала укажите URL.",
    installed: "Установлен {id} ({hash}).",
    approved: "{id}: проверка пройдена.",
    not_approved: "{id}: отклонён проверкой.",
    removed: "{id} удалён.",
    enabled: "{id} включён.",
    disabled: "{id} выключен.",
    col_skill: "Навык",
    col_source: "Источник",
    col_hash: "Хеш",
    col_state: "Состояние",
    none: "Навыков пока нет. Установите навык выше или положите его в ~/.agents/skills.",
    state_enabled: "включён",
    state_disabled: "выключен",
    state_broken: "не загружается",
    details: "Подробнее",
    hide: "Скрыть",
    enable: "Включить",
    disable: "Выключить",
    remove: "Удалить",
    confirm_remove: "Удалить {id} и все его сохранённые версии?",
    src_installed: "установлен",
    src_project: "проект",
    src_user_agents: "~/.agents/skills",
    src_user_claude: "~/.claude/skills",
    manifest: "Манифест разрешений (agents/souz.toml)",
    no_manifest: "Манифеста нет: командам навыка не открыты дополнительные папки, хосты и программы.",
    m_read: "Чтение",
    m_write: "Запись",
    m_hosts: "Хосты",
    m_programs: "Программы",
    m_env: "Переменные окружения",
    m_tools: "Инструменты",
    m_time: "Лимит времени",
    seconds: "{n} с",
    nothing: "ничего",
    findings: "Замечания проверки",
    no_findings: "Замечаний нет.",
    verdict_ok: "Одобрен проверкой.",
    verdict_bad: "Отклонён проверкой.",
    files: "Файлы",
    no_files: "Только SKILL.md.",
    instructions: "Инструкции (тело SKILL.md)",
    path: "Папка",
  },
});

/** @param {SkillSummary["source"]} source */
function sourceLabel(source) {
  return t("src_" + source);
}

/** @param {SkillFinding[]} findings */
function findingList(findings) {
  if (!findings.length) return h("p.meta", {}, t("no_findings"));
  return h("ul.findings", {}, findings.map((finding) => h("li", { dataset: { code: finding.code } },
    h("span.tag." + finding.severity, {}, finding.severity), " ", h("code", {}, finding.code), " ",
    finding.message, finding.file ? h("span.meta", {}, ` (${finding.file})`) : null)));
}

/** @param {SkillValidation} validation @param {string} id */
function validationCard(validation, id) {
  return h("div.card#skill-result", {},
    h("strong." + (validation.approved ? "ok" : "error"), {}, t(validation.approved ? "approved" : "not_approved", { id: id || "?" })),
    validation.hash ? h("div.meta", {}, validation.hash) : null,
    findingList(validation.findings));
}

/** @param {SkillDetail} detail */
function detailView(detail) {
  const permissions = detail.permissions;
  const list = (/** @type {string[]} */ values) => (values.length ? values.join(", ") : t("nothing"));
  const manifest = permissions
    ? h("table.manifest", {},
      [["m_read", list(permissions.read)], ["m_write", list(permissions.write)], ["m_hosts", list(permissions.hosts)],
        ["m_programs", list(permissions.programs)], ["m_env", list(permissions.env)], ["m_tools", list(permissions.tools)],
        ["m_time", t("seconds", { n: permissions.time_limit_seconds })]]
        .map(([key, value]) => h("tr", {}, h("th", {}, t(key)), h("td", {}, value))))
    : h("p.meta", {}, t("no_manifest"));
  return h("div.card.skill-detail", { dataset: { skill: detail.summary.id } },
    h("div.meta", {}, `${t("path")}: ${detail.summary.path}`),
    h("div.meta", {}, `${t("col_hash")}: ${detail.validation.hash ?? detail.summary.hash}`),
    h("h3", {}, t("manifest")), manifest,
    h("h3", {}, t("findings")),
    h("p." + (detail.validation.approved ? "ok" : "error"), {}, t(detail.validation.approved ? "verdict_ok" : "verdict_bad")),
    findingList(detail.validation.findings),
    h("h3", {}, t("files")),
    detail.files.length ? h("ul", {}, detail.files.map((file) => h("li", {}, h("code", {}, file)))) : h("p.meta", {}, t("no_files")),
    h("h3", {}, t("instructions")), h("pre.skill-body", {}, detail.body));
}

export async function skillsPage(main) {
  const note = h("div#skill-note");
  const body = h("tbody#skills");
  /** @type {Set<string>} */
  const open = new Set();

  /** Runs `step`; what it returns (a node or text) replaces the note; a failure shows the
   *  daemon's message. The list is shown again either way.
   *  @param {() => Promise<Node | string | null>} step */
  const act = async (step) => {
    try {
      const said = await step();
      note.replaceChildren(...(said === null ? [] : [typeof said === "string" ? h("p.ok", {}, said) : said]));
    } catch (error) {
      note.replaceChildren(h("p.error", {}, visible(error instanceof Error ? error.message : String(error))));
    }
    await render();
  };

  const pathInput = /** @type {HTMLInputElement} */ (h("input#skill-path", { placeholder: t("path_placeholder"), size: 60 }));
  const urlInput = /** @type {HTMLInputElement} */ (h("input#skill-url", { placeholder: t("url_placeholder"), size: 60 }));
  const refInput = /** @type {HTMLInputElement} */ (h("input#skill-ref", { placeholder: t("ref_placeholder"), size: 24 }));
  const folderInput = /** @type {HTMLInputElement} */ (h("input#skill-folder", { placeholder: t("folder_placeholder"), size: 30 }));
  const fileInput = /** @type {HTMLInputElement} */ (h("input#skill-zip", { type: "file", accept: ".zip,application/zip" }));
  /** @param {InstalledSkill} installed */
  const installedCard = (installed) => h("div", {}, h("p.ok", {}, t("installed", { id: installed.id, hash: installed.hash.slice(0, 12) })),
    installed.validation.findings.length ? findingList(installed.validation.findings) : null);
  const installPath = () => act(async () => {
    const path = pathInput.value.trim();
    if (!path) throw new Error(t("need_path"));
    return installedCard(/** @type {InstalledSkill} */ (await api("POST", "/v1/skills", { path })));
  });
  const validatePath = () => act(async () => {
    const path = pathInput.value.trim();
    if (!path) throw new Error(t("need_path"));
    const validation = /** @type {SkillValidation} */ (await api("POST", "/v1/skills/validate", { path }));
    return validationCard(validation, validation.id ?? path);
  });
  const installUrl = () => act(async () => {
    const url = urlInput.value.trim();
    if (!url) throw new Error(t("need_url"));
    /** @type {SkillGitSource} */
    const source = { url };
    const reference = refInput.value.trim();
    const folder = folderInput.value.trim();
    if (reference) source.ref = reference;
    if (folder) source.folder = folder;
    return installedCard(/** @type {InstalledSkill} */ (await api("POST", "/v1/skills/git", source)));
  });
  const upload = () => act(async () => {
    const file = fileInput.files?.[0];
    if (!file) throw new Error(t("need_file"));
    return installedCard(/** @type {InstalledSkill} */ (await api("POST", "/v1/skills/archive", new Blob([file], { type: "application/zip" }))));
  });

  main.append(h("h1", {}, t("title")), h("p.meta", {}, t("intro")),
    h("div.card#skill-install", {}, h("h2", {}, t("install_title")),
      h("div.row", {}, pathInput, h("button.primary#skill-install-path", { onclick: installPath }, t("install")),
        h("button#skill-validate", { onclick: validatePath }, t("validate"))),
      h("div.row", {}, h("span.meta", {}, t("upload_label")), fileInput, h("button#skill-upload", { onclick: upload }, t("upload"))),
      h("div.row", {}, urlInput),
      h("div.row", {}, refInput, folderInput, h("button#skill-install-url", { onclick: installUrl }, t("install_url")))),
    note,
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, t("col_skill")), h("th", {}, t("col_source")), h("th", {}, t("col_hash")),
      h("th", {}, t("col_state")), h("th"))), body));

  /** @param {SkillSummary} skill */
  const row = async (skill) => {
    const installed = skill.source === "installed";
    const state = skill.error ? t("state_broken") : t(skill.enabled ? "state_enabled" : "state_disabled");
    const toggle = () => act(async () => {
      await api("POST", `/v1/skills/${encodeURIComponent(skill.id)}/${skill.enabled ? "disable" : "enable"}`);
      return t(skill.enabled ? "disabled" : "enabled", { id: skill.id });
    });
    const remove = () => {
      if (!confirm(t("confirm_remove", { id: skill.id }))) return;
      open.delete(skill.id);
      act(async () => {
        await api("DELETE", `/v1/skills/${encodeURIComponent(skill.id)}`);
        return t("removed", { id: skill.id });
      });
    };
    const details = () => {
      if (open.has(skill.id)) open.delete(skill.id); else open.add(skill.id);
      render();
    };
    const rows = [h("tr.skill", { dataset: { skill: skill.id, enabled: String(skill.enabled) } },
      h("td", {}, h("strong", {}, skill.id), h("div.meta", {}, skill.description), skill.error ? h("div.error", {}, skill.error) : null),
      h("td", {}, sourceLabel(skill.source)),
      h("td", {}, h("code", { title: skill.hash }, skill.hash.slice(0, 12))),
      h("td.state", {}, state),
      h("td", {}, h("div.row", {},
        h("button.details", { onclick: details }, t(open.has(skill.id) ? "hide" : "details")),
        installed ? h("button.toggle", { onclick: toggle }, t(skill.enabled ? "disable" : "enable")) : null,
        installed ? h("button.danger.remove", { onclick: remove }, t("remove")) : null)))];
    if (open.has(skill.id)) {
      let detail;
      try {
        detail = detailView(/** @type {SkillDetail} */ (await api("GET", `/v1/skills/${encodeURIComponent(skill.id)}`)));
      } catch (error) {
        detail = h("p.error", {}, error instanceof Error ? error.message : String(error));
      }
      rows.push(h("tr.detail", {}, h("td", { colSpan: 5 }, detail)));
    }
    return rows;
  };

  const render = async () => {
    const { items } = /** @type {SkillList} */ (await api("GET", "/v1/skills"));
    const rows = await Promise.all(items.map(row));
    body.replaceChildren(...rows.flat());
    if (!items.length) body.append(h("tr", {}, h("td.empty", { colSpan: 5 }, t("none"))));
  };
  await render();
}

