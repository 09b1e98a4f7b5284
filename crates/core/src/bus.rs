//! The runtime event bus and what every layer above `store` shares with it: durable, ordered
//! events (`events`), replay-then-live following of a sequenced stream (`follow`, also used by
//! chat event streams), and the pause switch (`pause`).
//!
//! Invariant: this module needs only `store` (and `souz_protocol`); everything from `approvals`
//! up publishes to it and follows it, so it must never import from above.

pub(crate) mod events;
pub(crate) mod follow;
pub(crate) mod pause;

pub(crate) use events::EventBus;
pub use follow::FollowItem;
pub(crate) use pause::PauseSwitch;
