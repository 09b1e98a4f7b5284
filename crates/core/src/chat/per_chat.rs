//! Per-chat settings (`GET`/`PUT /v1/chats/{chatId}/settings`): the model, the agent, the
//! enabled tools, the core tool groups turned off and whether answers are read aloud, that one
//! chat uses instead of the user's settings (the core tools have no user-wide setting: they are
//! on unless a chat says so). Stored whole (a `PUT` replaces them); each field is validated
//! like the user's own setting, so a stored value was usable when it was saved. A new turn
//! overlays them on the user's settings, and a message's own options overlay both.

use souz_protocol::chat::{ChatSettings, SettingsPatch};

use super::{ChatError, ChatUser, Chats, settings};
use crate::agent::{AgentKind, CoreToolGroup, CoreToolsOff};
use rusqlite::OptionalExtension;

use crate::store::codec::{from_json, now, to_json, to_time};
use crate::store::{CachedStatements, StoreError};

impl Chats {
    /// The chat's own settings.
    pub async fn chat_settings(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<ChatSettings, ChatError> {
        self.require_chat(user, chat_id).await?;
        self.stored_chat_settings(chat_id).await
    }

    /// Replaces the chat's own settings; returns them as stored.
    pub async fn set_chat_settings(
        &self,
        user: &ChatUser,
        chat_id: &str,
        wanted: ChatSettings,
    ) -> Result<ChatSettings, ChatError> {
        self.require_chat(user, chat_id).await?;
        let model = wanted
            .model
            .as_deref()
            .map(str::trim)
            .filter(|model| !model.is_empty())
            .map(str::to_owned);
        if let Some(model) = &model {
            self.require_available_model(
                user,
                model,
                "model must be available to the current user.",
            )
            .await?;
        }
        let agent = match wanted.agent.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(name @ ("graph" | "skills")) => Some(name.to_owned()),
            Some(_) => return Err(ChatError::Invalid("agent must be graph or skills.".into())),
        };
        let tools = SettingsPatch {
            enabled_tools: wanted.enabled_tools,
            ..SettingsPatch::default()
        };
        let enabled_tools = settings::normalize(&tools, &self.defaults().tools)
            .map_err(ChatError::Invalid)?
            .enabled_tools;
        let disabled_core_tools = wanted
            .disabled_core_tools
            .as_deref()
            .map(core_groups)
            .transpose()?;
        let stored = ChatSettings {
            model,
            agent,
            enabled_tools,
            disabled_core_tools,
            // Off is the default, so it is stored as absent.
            spoken_answers: wanted.spoken_answers.filter(|on| *on),
        };
        let json = to_json(&stored)?;
        let chat_id = chat_id.to_owned();
        self.inner
            .store
            .write(move |tx| {
                tx.execute_cached(
                    "INSERT INTO chat_settings (chat_id, settings, updated_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (chat_id) DO UPDATE SET settings = excluded.settings, \
                     updated_at = excluded.updated_at",
                    rusqlite::params![chat_id, json, to_time(now())],
                )
                .map_err(StoreError::from)?;
                Ok::<_, ChatError>(())
            })
            .await?;
        Ok(stored)
    }

    /// The chat's own settings as stored (none: all `null`).
    pub(super) async fn stored_chat_settings(
        &self,
        chat_id: &str,
    ) -> Result<ChatSettings, ChatError> {
        let chat_id = chat_id.to_owned();
        let json: Option<String> = self
            .inner
            .store
            .read(move |c| {
                c.query_row_cached(
                    "SELECT settings FROM chat_settings WHERE chat_id = ?1",
                    [&chat_id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(StoreError::from)
            })
            .await?;
        match json {
            Some(json) => Ok(from_json("chat_settings.settings", &json)?),
            None => Ok(ChatSettings::default()),
        }
    }

    /// The agent the chat's turns run on (`None`: the configured default) and the core tools
    /// they leave out.
    pub(super) async fn chat_agent(&self, chat_id: &str) -> (Option<AgentKind>, CoreToolsOff) {
        match self.stored_chat_settings(chat_id).await {
            Ok(stored) => (
                stored.agent.as_deref().map(AgentKind::parse),
                core_off(&stored),
            ),
            Err(error) => {
                tracing::warn!(%error, %chat_id, "could not read the chat's settings");
                (None, CoreToolsOff::default())
            }
        }
    }
}

/// The core tool groups the chat's turns leave out.
pub(crate) fn core_off(chat: &ChatSettings) -> CoreToolsOff {
    CoreToolsOff::from_names(chat.disabled_core_tools.iter().flatten())
}

/// `disabledCoreTools` trimmed and without repeats; a name that is no group is refused with
/// the names there are.
fn core_groups(names: &[String]) -> Result<Vec<String>, ChatError> {
    let mut cleaned: Vec<String> = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    for name in names {
        let name = name.trim();
        match CoreToolGroup::parse(name) {
            Some(group) if !cleaned.iter().any(|known| known == group.name()) => {
                cleaned.push(group.name().to_owned());
            }
            Some(_) => {}
            None => unknown.push(name),
        }
    }
    if unknown.is_empty() {
        return Ok(cleaned);
    }
    let known: Vec<&str> = CoreToolGroup::ALL
        .iter()
        .map(|group| group.name())
        .collect();
    Err(ChatError::Invalid(format!(
        "disabledCoreTools contains unknown groups: {}; the groups are {}.",
        unknown.join(", "),
        known.join(", ")
    )))
}

/// The chat's settings as a patch over the user's.
pub(super) fn as_patch(chat: &ChatSettings) -> SettingsPatch {
    SettingsPatch {
        default_model: chat.model.clone(),
        enabled_tools: chat.enabled_tools.clone(),
        ..SettingsPatch::default()
    }
}
