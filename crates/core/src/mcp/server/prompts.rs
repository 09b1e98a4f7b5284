//! Skills as MCP prompts: `prompts/list` offers every usable skill (enabled, loading, approved
//! by validation — what the agents see) as a prompt named by its id, described by its
//! description and taking no arguments; `prompts/get` returns its `SKILL.md` instructions as
//! one user message headed by its name and description. A client hears
//! `notifications/prompts/list_changed` when that list changes (an install, enable, disable,
//! removal, or an approval decision).
//!
//! Invariants: a disabled or rejected skill is neither listed nor served (`prompts/get` answers
//! "no such prompt"); the prompt text is the skill's own, unchanged — it is what the person
//! installed and validation approved. Running a skill's commands stays with the agents and the
//! gate: a prompt only carries instructions.
//!
//! Clients that negotiate the Skills extension (SEP-2640) get the same skills as manifests and
//! files too (`skills_ext`); prompts are what every client speaks.

use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptResult, Prompt, PromptMessage, Role};

use crate::runtime::RuntimeHandle;
use crate::runtime::facade::UsableSkill;

use super::mcp_error;

/// The prompts of the usable skills, sorted by name.
pub(crate) async fn list(handle: &RuntimeHandle) -> Result<Vec<Prompt>, McpError> {
    let skills = handle.usable_skills().await.map_err(mcp_error)?;
    Ok(skills.into_iter().map(prompt).collect())
}

fn prompt(skill: UsableSkill) -> Prompt {
    let description = (!skill.description.trim().is_empty()).then_some(skill.description);
    Prompt::new(skill.id, description, None)
}

/// The prompt `name`: the usable skill of that id with its instructions; `None` when there
/// is no usable skill of that id.
pub(crate) async fn get(
    handle: &RuntimeHandle,
    name: &str,
) -> Result<Option<GetPromptResult>, McpError> {
    let Some(skill) = handle.usable_skill(name).await.map_err(mcp_error)? else {
        return Ok(None);
    };
    let text = format!(
        "Skill `{}`: {}\n\n{}",
        skill.name, skill.description, skill.skill_markdown_body
    );
    Ok(Some(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(skill.description),
    ))
}

/// What the list shows, to tell a change from a non-change.
async fn signature(handle: &RuntimeHandle) -> Option<Vec<UsableSkill>> {
    handle.usable_skills().await.ok()
}

/// What a follower of the prompt list starts from: its subscriptions (taken before the list is
/// read, so no change is missed) and the list as shown.
pub(crate) struct Followed {
    skills: tokio::sync::watch::Receiver<u64>,
    policy: tokio::sync::watch::Receiver<u64>,
    shown: Option<Vec<UsableSkill>>,
}

/// Subscribes to the changes that may change the prompt list, then reads the list.
pub(crate) async fn start(handle: &RuntimeHandle) -> Followed {
    let mut skills = handle.skill_changes();
    skills.mark_unchanged();
    let mut policy = handle.policy_changes();
    policy.mark_unchanged();
    let shown = signature(handle).await;
    Followed {
        skills,
        policy,
        shown,
    }
}

/// Calls `notify` each time the prompt list changes (skills installed, enabled, disabled,
/// removed; approval rules changed), until `stop` completes or `notify` says the client
/// cannot be told any more.
pub(crate) async fn follow<N, Sent>(
    handle: &RuntimeHandle,
    stop: impl Future<Output = ()>,
    notify: N,
) where
    N: FnMut() -> Sent,
    Sent: Future<Output = bool>,
{
    let followed = start(handle).await;
    follow_from(handle, followed, stop, notify).await;
}

/// [`follow`] from a [`start`] already made.
pub(crate) async fn follow_from<N, Sent>(
    handle: &RuntimeHandle,
    followed: Followed,
    stop: impl Future<Output = ()>,
    mut notify: N,
) where
    N: FnMut() -> Sent,
    Sent: Future<Output = bool>,
{
    let Followed {
        mut skills,
        mut policy,
        mut shown,
    } = followed;
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            changed = skills.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            changed = policy.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let now = signature(handle).await;
        if now != shown {
            shown = now;
            if !notify().await {
                return;
            }
        }
    }
}
