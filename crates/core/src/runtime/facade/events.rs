//! Runtime events for the adapters: the daemon's durable event stream, replayed from a
//! sequence number and then followed live.

use futures::Stream;
use souz_protocol::EventEnvelope;

use super::ServiceError;
use crate::bus::FollowItem;
use crate::runtime::RuntimeHandle;

impl RuntimeHandle {
    /// The sequence number of the latest stored event (0 when there is none).
    pub async fn last_event_seq(&self) -> Result<i64, ServiceError> {
        Ok(self.events().last_seq().await?)
    }

    /// Stored events after `after_seq`, then `Live`, then events as they are stored.
    pub fn follow_events(
        &self,
        after_seq: i64,
    ) -> impl Stream<Item = FollowItem<EventEnvelope>> + Send + 'static {
        self.events().follow(after_seq)
    }
}
