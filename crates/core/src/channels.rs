//! Chat apps Souz is reached through, beside the adapters: today Telegram
//! ([`telegram`], `[channels.telegram]`). A channel is an adapter that calls out: it polls the
//! app, turns what the linked person writes into chat input, and sends the answers back, all
//! through the runtime's facade ([`RuntimeHandle`](crate::RuntimeHandle)).
//!
//! - [`store`]: the channel's rows (offset, link, audit), which the facade reads and writes
//!   (it sits below the runtime in the layer table).
//! - [`tools`]: `ListActiveChannels` and `SendMessageToChannel`, catalog tools that reach the
//!   running channels through a slot (it sits below the runtime too, which builds the catalog).
//! - [`telegram`]: the transport: the Bot API client, long polling, linking, turns, answers.

pub(crate) mod store;
pub mod telegram;
pub(crate) mod tools;
