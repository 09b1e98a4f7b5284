//! `/v1/skills`: file-backed skills (list, show, install from a folder, a `.zip` or a git URL,
//! validate, enable, disable, remove). Operator only: installing reads a path on the daemon's
//! machine or fetches from the network.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use souz_protocol::{
    ErrorBody, InstalledSkill, SkillDetail, SkillGitSource, SkillList, SkillPath, SkillSummary,
    SkillValidation,
};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

#[allow(
    clippy::too_many_lines,
    reason = "one declaration per route, with its documentation"
)]
pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/skills")
                .summary("Every skill: installed, then a project's `.agents/skills`, `~/.agents/skills`, `~/.claude/skills` (the first of an id wins).")
                .tag("skills")
                .operator()
                .response::<SkillList>(200, "The skills."),
            list,
        )
        .route(
            Operation::post("/v1/skills")
                .summary("Install a skill from a folder or a `.zip` on the daemon's machine.")
                .description(
                    "The bundle must follow the Agent Skills specification, stay within the \
                     loader limits (64 files, 128 KiB each, 512 KiB in all, allowed extensions, \
                     UTF-8, no links) and pass the static rules; a rejected skill is not \
                     installed (400 with the findings). Bundles are stored by their canonical \
                     hash; reinstalling a changed skill keeps the old bundle until removal.",
                )
                .tag("skills")
                .operator()
                .request::<SkillPath>()
                .response::<InstalledSkill>(201, "Installed.")
                .response::<ErrorBody>(400, "Not a valid skill, or rejected."),
            install,
        )
        .route(
            Operation::post("/v1/skills/archive")
                .summary("Install a skill from an uploaded `.zip` (the request body).")
                .description(
                    "The archive holds one skill: `SKILL.md` at its root or in one top-level \
                     folder. Same limits, validation and storage as installing from a path; a \
                     rejected skill is not installed (400 with the findings).",
                )
                .tag("skills")
                .operator()
                .binary_request("application/zip")
                .response::<InstalledSkill>(201, "Installed.")
                .response::<ErrorBody>(400, "Not a valid skill archive, or rejected."),
            install_archive,
        )
        .route(
            Operation::post("/v1/skills/git")
                .summary("Install a skill from a git repository over HTTP(S).")
                .description(
                    "One commit of the repository is fetched shallowly by git through a \
                     loopback egress proxy that reaches the URL's host alone, through the SSRF \
                     policy (`[sandbox] network_allow_hosts` for hosts that are not public), at \
                     most 64 MiB within 180 s; nothing is checked out: the skill's folder is \
                     exported as an archive and read within the loader limits. Same validation \
                     and storage as installing from a path; a rejected skill is not installed \
                     (400 with the findings). A repository with several skills and no folder \
                     given is a 400 naming them.",
                )
                .tag("skills")
                .operator()
                .request::<SkillGitSource>()
                .response::<InstalledSkill>(201, "Installed.")
                .response::<ErrorBody>(
                    400,
                    "A bad URL, ref or folder, a failed fetch, not a valid skill, or rejected.",
                ),
            install_git,
        )
        .route(
            Operation::post("/v1/skills/validate")
                .summary("Validate a skill folder or `.zip` without installing it.")
                .tag("skills")
                .operator()
                .request::<SkillPath>()
                .response::<SkillValidation>(200, "The findings."),
            validate,
        )
        .route(
            Operation::get("/v1/skills/{id}")
                .summary("One skill: its `SKILL.md`, files and validation.")
                .tag("skills")
                .operator()
                .response::<SkillDetail>(200, "The skill.")
                .response::<ErrorBody>(404, "No such skill."),
            show,
        )
        .route(
            Operation::delete("/v1/skills/{id}")
                .summary("Remove an installed skill and all its bundles.")
                .tag("skills")
                .operator()
                .plain_response(204, "Removed.")
                .response::<ErrorBody>(404, "No such installed skill."),
            remove,
        )
        .route(
            Operation::post("/v1/skills/{id}/enable")
                .summary("Let the agents use an installed skill.")
                .tag("skills")
                .operator()
                .response::<SkillSummary>(200, "Enabled.")
                .response::<ErrorBody>(404, "No such installed skill."),
            enable,
        )
        .route(
            Operation::post("/v1/skills/{id}/disable")
                .summary("Hide an installed skill from the agents.")
                .tag("skills")
                .operator()
                .response::<SkillSummary>(200, "Disabled.")
                .response::<ErrorBody>(404, "No such installed skill."),
            disable,
        )
}

async fn list(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<SkillList>, ApiError> {
    Ok(axum::Json(handle.list_skills().await?))
}

async fn install(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<SkillPath>,
) -> Result<(StatusCode, axum::Json<InstalledSkill>), ApiError> {
    let installed = handle.install_skill(&request.path).await?;
    tracing::info!(skill = %installed.id, hash = %installed.hash, "skill installed");
    Ok((StatusCode::CREATED, axum::Json(installed)))
}

async fn install_archive(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, axum::Json<InstalledSkill>), ApiError> {
    let installed = handle.install_skill_archive(&body).await?;
    tracing::info!(skill = %installed.id, hash = %installed.hash, "skill installed from an upload");
    Ok((StatusCode::CREATED, axum::Json(installed)))
}

async fn install_git(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<SkillGitSource>,
) -> Result<(StatusCode, axum::Json<InstalledSkill>), ApiError> {
    let installed = handle.install_skill_git(&request).await?;
    tracing::info!(skill = %installed.id, hash = %installed.hash, "skill installed from git");
    Ok((StatusCode::CREATED, axum::Json(installed)))
}

async fn validate(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<SkillPath>,
) -> Result<axum::Json<SkillValidation>, ApiError> {
    Ok(axum::Json(handle.validate_skill(&request.path)?))
}

async fn show(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<SkillDetail>, ApiError> {
    Ok(axum::Json(handle.show_skill(&id).await?))
}

async fn remove(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    handle.remove_skill(&id).await?;
    tracing::info!(skill = %id, "skill removed");
    Ok(StatusCode::NO_CONTENT)
}

async fn enable(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<SkillSummary>, ApiError> {
    Ok(axum::Json(handle.set_skill_enabled(&id, true).await?))
}

async fn disable(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<SkillSummary>, ApiError> {
    Ok(axum::Json(handle.set_skill_enabled(&id, false).await?))
}
