//! Who asks for a tool call, and (filled in by the approval gate) what the person decides.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who asked for a tool call. Shown to the person deciding ("Claude Code wants to edit …").
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Requester {
    /// One of Souz's own agents, working in a chat.
    Chat {
        /// The chat id.
        chat_id: String,
    },
    /// An MCP client (Claude Code, Claude Desktop, ...).
    Mcp {
        /// `clientInfo.name` from the MCP handshake.
        client_name: String,
        /// `clientInfo.version`.
        client_version: String,
        /// The MCP session id.
        session_id: String,
    },
    /// The `souz` command line.
    Cli,
    /// A script or app calling `POST /v1/tool-calls`.
    Api,
    /// A skill bundle.
    Skill {
        /// The skill id.
        skill_id: String,
    },
}

impl Requester {
    /// A short name for people: "Claude Code", "chat 1f2e…", "the CLI".
    pub fn label(&self) -> String {
        match self {
            Self::Chat { chat_id } => format!("Souz chat {}", short(chat_id)),
            Self::Mcp {
                client_name,
                client_version,
                ..
            } => {
                if client_version.is_empty() {
                    client_name.clone()
                } else {
                    format!("{client_name} {client_version}")
                }
            }
            Self::Cli => "the souz CLI".to_owned(),
            Self::Api => "an API client".to_owned(),
            Self::Skill { skill_id } => format!("skill {skill_id}"),
        }
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
