//! Pure mappings between Souz's chat events and approvals and the Agent Client Protocol: which
//! ACP session updates a chat event becomes, how a turn's end becomes a `stopReason`, and how
//! Souz's approval decisions and ACP's permission options translate into each other.
//!
//! Invariants: nothing here does I/O; a tool call is announced (`tool_call`, `pending`) exactly
//! once before any `tool_call_update` about it, whichever Souz event comes first; a permission
//! option the bridge did not offer maps to no decision (the approval stays for the other
//! surfaces), never to an approval.

use std::collections::HashSet;

use super::schema::{
    ContentBlock, ContentChunk, PermissionOption, PermissionOptionKind, SessionUpdate, StopReason,
    ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use souz_protocol::chat::ChatEventBody;
use souz_protocol::chat::events::TurnEndReason;
use souz_protocol::{Approval, ApprovalStatus, DecisionRequest, Verdict};

/// The permission option that approves this one call.
pub const ALLOW_ONCE: &str = "allow_once";
/// The permission option that approves in the approval's suggested scope.
pub const ALLOW_SUGGESTED: &str = "allow_suggested";
/// The permission option that denies the call.
pub const REJECT: &str = "reject";
/// How a decision made from the editor is recorded (`via`).
pub const VIA: &str = "acp";

/// What one turn has told the editor so far.
#[derive(Debug, Default)]
pub struct TurnView {
    /// Tool calls announced with a `tool_call` update.
    announced: HashSet<String>,
    /// Assistant messages whose text was streamed as deltas.
    streamed: HashSet<String>,
}

impl TurnView {
    /// The ACP updates `event` becomes (none for events the editor has no use for).
    pub fn updates(&mut self, event: &ChatEventBody) -> Vec<SessionUpdate> {
        match event {
            ChatEventBody::MessageDelta(delta) if !delta.delta.is_empty() => {
                self.streamed.insert(delta.message_id.clone());
                vec![text_chunk(&delta.delta)]
            }
            // An answer stored without streaming (a provider that does not stream): all at once.
            ChatEventBody::MessageCompleted(message)
                if message.role == "assistant"
                    && !message.content.is_empty()
                    && !self.streamed.contains(&message.message_id) =>
            {
                vec![text_chunk(&message.content)]
            }
            ChatEventBody::ToolCallStarted(started) => {
                let mut updates = self.announce(&started.tool_call_id, &started.name, None);
                updates.push(status_update(
                    &started.tool_call_id,
                    ToolCallStatus::InProgress,
                ));
                updates
            }
            ChatEventBody::ApprovalRequested(requested) => self.announce(
                &requested.tool_call_id,
                &requested.name,
                Some(&requested.summary),
            ),
            ChatEventBody::ApprovalDecided(resolved) | ChatEventBody::ApprovalExpired(resolved) => {
                let mut updates = self.announce(&resolved.tool_call_id, &resolved.name, None);
                let status = if resolved.status == ApprovalStatus::Approved {
                    ToolCallStatus::InProgress
                } else {
                    ToolCallStatus::Failed
                };
                updates.push(status_update(&resolved.tool_call_id, status));
                updates
            }
            ChatEventBody::ToolCallFinished(finished) => {
                let mut updates = self.announce(&finished.tool_call_id, &finished.name, None);
                updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                    tool_call_id: finished.tool_call_id.clone(),
                    fields: ToolCallUpdateFields {
                        status: Some(ToolCallStatus::Completed),
                        raw_output: Some(finished.result_preview.clone()),
                        ..ToolCallUpdateFields::default()
                    },
                }));
                updates
            }
            ChatEventBody::ToolCallFailed(failed) => {
                let mut updates = self.announce(&failed.tool_call_id, &failed.name, None);
                updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                    tool_call_id: failed.tool_call_id.clone(),
                    fields: ToolCallUpdateFields {
                        status: Some(ToolCallStatus::Failed),
                        content: Some(vec![ToolCallContent::Content {
                            content: ContentBlock::text(failed.error.clone()),
                        }]),
                        ..ToolCallUpdateFields::default()
                    },
                }));
                updates
            }
            _ => Vec::new(),
        }
    }

    /// A `tool_call` update (`pending`) the first time `id` is seen, else nothing.
    fn announce(&mut self, id: &str, name: &str, summary: Option<&str>) -> Vec<SessionUpdate> {
        if !self.announced.insert(id.to_owned()) {
            return Vec::new();
        }
        let title = summary.filter(|text| !text.is_empty()).unwrap_or(name);
        vec![SessionUpdate::ToolCall(ToolCall {
            tool_call_id: id.to_owned(),
            title: title.to_owned(),
            name: Some(name.to_owned()),
            kind: tool_kind(name),
            status: ToolCallStatus::Pending,
        })]
    }
}

fn text_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk {
        content: ContentBlock::text(text),
    })
}

fn status_update(id: &str, status: ToolCallStatus) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate {
        tool_call_id: id.to_owned(),
        fields: ToolCallUpdateFields {
            status: Some(status),
            ..ToolCallUpdateFields::default()
        },
    })
}

/// The ACP kind of a Souz tool, by its name (the editor picks an icon by it).
pub fn tool_kind(name: &str) -> ToolKind {
    let name = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|word| name.contains(word));
    if has(&["delete", "remove"]) {
        ToolKind::Delete
    } else if has(&["write", "edit", "newfile", "patch", "replace"]) {
        ToolKind::Edit
    } else if has(&["read", "list", "cat"]) {
        ToolKind::Read
    } else if has(&["search", "grep", "find", "recall"]) {
        ToolKind::Search
    } else if has(&["fetch", "web", "http"]) {
        ToolKind::Fetch
    } else if has(&["command", "exec", "shell", "run"]) {
        ToolKind::Execute
    } else {
        ToolKind::Other
    }
}

/// How a turn that ended with `event` ends for ACP: `None` while it goes on.
pub fn stop_reason(event: &ChatEventBody) -> Option<StopReason> {
    match event {
        ChatEventBody::ExecutionFinished(finished) => Some(match finished.end_reason {
            TurnEndReason::CutOff => StopReason::MaxTokens,
            TurnEndReason::ToolCallLimit | TurnEndReason::RepeatedToolCall => {
                StopReason::MaxTurnRequests
            }
            _ => StopReason::EndTurn,
        }),
        ChatEventBody::ExecutionCancelled(_) => Some(StopReason::Cancelled),
        _ => None,
    }
}

/// The options offered for `approval`: approve once, approve in its suggested scope, deny.
pub fn permission_options(approval: &Approval) -> Vec<PermissionOption> {
    let suggested = if approval.suggested.label.is_empty() {
        "Allow always".to_owned()
    } else {
        format!("Allow: {}", approval.suggested.label)
    };
    let option = |id: &str, name: String, kind| PermissionOption {
        option_id: id.to_owned(),
        name,
        kind,
    };
    vec![
        option(
            ALLOW_ONCE,
            "Allow once".to_owned(),
            PermissionOptionKind::AllowOnce,
        ),
        option(
            ALLOW_SUGGESTED,
            suggested,
            PermissionOptionKind::AllowAlways,
        ),
        option(
            REJECT,
            "Reject".to_owned(),
            PermissionOptionKind::RejectOnce,
        ),
    ]
}

/// The decision the editor's choice `option_id` stands for; `None` for an option not offered.
pub fn decision(approval: &Approval, option_id: &str) -> Option<DecisionRequest> {
    match option_id {
        ALLOW_ONCE => Some(DecisionRequest::once(Verdict::Approve, VIA)),
        REJECT => Some(DecisionRequest::once(Verdict::Deny, VIA)),
        ALLOW_SUGGESTED => Some(DecisionRequest {
            decision: Verdict::Approve,
            scope: approval.suggested.scope,
            minutes: approval.suggested.minutes,
            argument_match: Some(approval.suggested.argument_match.clone()),
            tool_group: approval.suggested.tool_group,
            via: Some(VIA.to_owned()),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
