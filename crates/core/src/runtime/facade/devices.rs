//! The public client protocol for the adapters (devices on a chat's WebSocket, original §1.9):
//! one frame in, its ack and status out; the public view of a chat's events; a chat's
//! threads. What the frames mean is `chat::devices`.

use souz_protocol::chat::ChatEvent;
use souz_protocol::chat::devices::{ClientFrame, FrameKeys, PublicEvent, ThreadList};

use super::ServiceError;
use crate::chat::devices::Handled;
use crate::chat::{ChatUser, Chats};
use crate::runtime::RuntimeHandle;

impl RuntimeHandle {
    /// Handles one decoded frame a device sent on the socket of `chat_id`.
    pub async fn device_frame(
        &self,
        user: &ChatUser,
        chat_id: &str,
        frame: ClientFrame,
    ) -> Result<Handled, ServiceError> {
        Ok(self.chats().device_frame(user, chat_id, frame).await?)
    }

    /// The rejected ack (`invalid_request`) of a frame of `kind` that broke its contract.
    pub fn device_invalid(chat_id: &str, kind: &str, keys: FrameKeys, message: String) -> Handled {
        Chats::device_invalid(chat_id, kind, keys, message)
    }

    /// A stored chat event as devices see it; `None` when the public filter drops it.
    pub async fn public_event(
        &self,
        event: &ChatEvent,
    ) -> Result<Option<PublicEvent>, ServiceError> {
        Ok(self.chats().public_event(event).await?)
    }

    /// A chat's threads (its executions), newest first.
    pub async fn chat_threads(
        &self,
        user: &ChatUser,
        chat_id: &str,
    ) -> Result<ThreadList, ServiceError> {
        Ok(self.chats().threads(user, chat_id).await?)
    }
}
