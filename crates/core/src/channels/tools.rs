//! Cross-channel messaging as catalog tools (the original's `ListActiveChannels` and
//! `SendMessageToChannel`): an agent, or an MCP client, lists the chat apps the person is
//! reached through and sends one of them a message. Every call passes the approval gate.
//!
//! The catalog is built before any channel runs (a channel is an adapter over the runtime), so
//! the tools reach the channels through a [`ChannelTools`] slot a channel fills when it starts
//! ([`Messenger`]: a trait, because the channels sit above the runtime that builds the
//! catalog). Until one did, a call fails with a message saying how to set a channel up.
//!
//! Invariants:
//! - `ListActiveChannels` is read-only; `SendMessageToChannel` is a network call (risk
//!   `network`, so it asks by default): sending is a side effect nobody can take back. Its
//!   plan names the channel and the text, checked (blank, too long, no such channel) before
//!   anyone is asked.
//! - The channels are the operator's (the linked Telegram account is the person at this
//!   machine): a call from a chat of another user (trusted-proxy mode) sees none and sends
//!   nothing.
//! - What the channel answers is data from outside: a send's result says only whether it was
//!   delivered.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use souz_protocol::{Requester, Risk, ToolCategory};

use crate::store::Store;
use crate::tools::{
    DynTool, Language, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, erase, localized,
};

/// The longest text sent in one call, in characters (split into messages by the channel).
pub(crate) const MAX_TEXT_CHARS: usize = 16_000;
/// The text shown in the approval's summary, in characters.
const SHOWN_TEXT: usize = 120;

/// A chat app the person is reached through, as the tools list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ActiveChannel {
    /// The app: `telegram`.
    pub channel_type: String,
    /// Which conversation of it (for Telegram, the linked account's chat id).
    pub channel_id: String,
    /// For people: `Telegram @name`.
    pub label: String,
}

/// Why a channel could not take a message, in words for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ChannelError {
    /// No such channel is active (none linked, or another id).
    #[error("{0}")]
    NotFound(String),
    /// The app refused or could not be reached.
    #[error("{0}")]
    NotDelivered(String),
    /// Souz itself failed (its database).
    #[error("{0}")]
    Internal(String),
}

/// What a running channel offers the tools.
pub(crate) trait Messenger: Send + Sync {
    /// The active channels (a linked account); empty when none is linked.
    fn channels(&self) -> BoxFuture<'_, Result<Vec<ActiveChannel>, ChannelError>>;

    /// Sends `text` to `channel`; how many messages it took.
    fn send<'a>(
        &'a self,
        channel: &'a ActiveChannel,
        text: &'a str,
    ) -> BoxFuture<'a, Result<usize, ChannelError>>;
}

/// The slot the channel tools read the running channels from; cheap to clone (one slot
/// shared).
#[derive(Clone)]
pub(crate) struct ChannelTools {
    messenger: Arc<OnceLock<Arc<dyn Messenger>>>,
    /// The database: a chat's owner is read from its `chats` row.
    store: Store,
    /// Bumped when a key a channel starts from (the Telegram bot token) is set or removed, so
    /// the running channel applies it without a restart.
    keys: Arc<tokio::sync::watch::Sender<u64>>,
}

impl ChannelTools {
    /// An empty slot over `store`.
    pub(crate) fn new(store: Store) -> Self {
        Self {
            messenger: Arc::default(),
            store,
            keys: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }

    /// Says that a channel's key was set or removed.
    pub(crate) fn keys_changed(&self) {
        self.keys
            .send_modify(|revision| *revision = revision.wrapping_add(1));
    }

    /// Follows [`ChannelTools::keys_changed`].
    pub(crate) fn key_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.keys.subscribe()
    }

    /// The two tools over this slot, for the catalog.
    pub(crate) fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![
            erase(ListActiveChannels(self.clone())),
            erase(SendMessageToChannel(self.clone())),
        ]
    }

    /// Fills the slot (once; a second call changes nothing).
    pub(crate) fn bind(&self, messenger: Arc<dyn Messenger>) {
        if self.messenger.set(messenger).is_err() {
            tracing::warn!("the channel tools were bound twice; the first binding stays");
        }
    }

    /// The active channels `requester` may use: none for a chat of another user than the
    /// operator; an error when no channel runs or none is linked.
    async fn channels(
        &self,
        requester: &Requester,
        language: Language,
    ) -> Result<(&dyn Messenger, Vec<ActiveChannel>), ToolError> {
        let none = || ToolError::Failed(no_channel(language));
        let messenger = self.messenger.get().ok_or_else(none)?;
        if let Requester::Chat { chat_id } = requester {
            let owner = self
                .store
                .chat_owner(chat_id)
                .await
                .map_err(|error| ToolError::Internal(error.to_string()))?;
            if owner.is_some_and(|owner| owner != crate::LOCAL_USER) {
                return Err(none());
            }
        }
        let channels = messenger.channels().await.map_err(tool_error)?;
        if channels.is_empty() {
            return Err(none());
        }
        Ok((messenger.as_ref(), channels))
    }
}

/// Why there is nothing to list or send to, and what the person can do.
fn no_channel(language: Language) -> String {
    localized!(
        language,
        "No messaging channel is linked. The person can link a Telegram account: enable \
         [channels.telegram], set the bot token (souz keys set telegram), then run `souz \
         telegram link` (or use the button in Settings) and send the code to the bot.",
        "Ни один канал сообщений не привязан. Человек может привязать Telegram: включить \
         [channels.telegram], задать токен бота (souz keys set telegram), затем выполнить \
         `souz telegram link` (или нажать кнопку в настройках) и отправить код боту."
    )
}

fn tool_error(error: ChannelError) -> ToolError {
    match error {
        ChannelError::NotFound(message) => ToolError::InvalidArguments(message),
        ChannelError::NotDelivered(message) => ToolError::Failed(message),
        ChannelError::Internal(message) => ToolError::Internal(message),
    }
}

/// What `ListActiveChannels` returns.
#[derive(Debug, Serialize)]
struct ChannelList {
    channels: Vec<ActiveChannel>,
}

/// Arguments of `ListActiveChannels` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListArgs {}

struct ListActiveChannels(ChannelTools);

impl Tool for ListActiveChannels {
    type Args = ListArgs;
    type Prepared = ();

    fn name(&self) -> &'static str {
        "ListActiveChannels"
    }

    fn description(&self) -> &'static str {
        "List the messaging channels the person is reached through (a linked Telegram \
         account): channelType, channelId and a label for each, to use with \
         SendMessageToChannel."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    async fn plan(&self, _: &ListArgs, ctx: &ToolContext) -> Result<Planned<()>, ToolError> {
        Ok(Plan::new(localized!(
            ctx.language,
            "List messaging channels",
            "Показать каналы сообщений"
        ))
        .ready())
    }

    async fn run(&self, _: ListArgs, (): (), ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (_, channels) = self.0.channels(&ctx.requester, ctx.language).await?;
        Ok(ToolOutput::json(ChannelList { channels }))
    }
}

/// Arguments of `SendMessageToChannel`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SendArgs {
    /// The channel's type, from ListActiveChannels (`telegram`).
    pub channel_type: String,
    /// The channel's id, from ListActiveChannels.
    pub channel_id: String,
    /// The message (plain text; long texts are split into several messages).
    pub text: String,
}

/// What `SendMessageToChannel` returns.
#[derive(Debug, Serialize)]
struct Sent {
    success: bool,
    detail: String,
}

struct SendMessageToChannel(ChannelTools);

impl Tool for SendMessageToChannel {
    type Args = SendArgs;
    type Prepared = ActiveChannel;

    fn name(&self) -> &'static str {
        "SendMessageToChannel"
    }

    fn description(&self) -> &'static str {
        "Send a text message to one of the person's messaging channels (from \
         ListActiveChannels), e.g. their linked Telegram account. The person approves each \
         message before it is sent."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Souz
    }

    fn risk(&self) -> Risk {
        Risk::Network
    }

    async fn plan(
        &self,
        args: &SendArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<ActiveChannel>, ToolError> {
        let (channel_type, channel_id) = (args.channel_type.trim(), args.channel_id.trim());
        if channel_type.is_empty() || channel_id.is_empty() {
            return Err(ToolError::InvalidArguments(
                "channelType and channelId are required (see ListActiveChannels)".to_owned(),
            ));
        }
        let text = args.text.trim();
        if text.is_empty() {
            return Err(ToolError::InvalidArguments("the text is blank".to_owned()));
        }
        let length = text.chars().count();
        if length > MAX_TEXT_CHARS {
            return Err(ToolError::InvalidArguments(format!(
                "the text has {length} characters; at most {MAX_TEXT_CHARS} are sent at once"
            )));
        }
        let (_, channels) = self.0.channels(&ctx.requester, ctx.language).await?;
        let channel = channels
            .into_iter()
            .find(|channel| {
                channel.channel_type.eq_ignore_ascii_case(channel_type)
                    && channel.channel_id == channel_id
            })
            .ok_or_else(|| {
                ToolError::InvalidArguments(format!(
                    "no active channel {channel_type}/{channel_id}; ListActiveChannels lists them"
                ))
            })?;
        let summary = localized!(
            ctx.language,
            "Send a message to {}: \"{}\"",
            "Отправить сообщение в {}: «{}»",
            channel.label,
            crate::redact::one_line(text, SHOWN_TEXT)
        );
        Ok(Plan::new(summary).with(channel))
    }

    async fn run(
        &self,
        args: SendArgs,
        channel: ActiveChannel,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let (messenger, channels) = self.0.channels(&ctx.requester, ctx.language).await?;
        // Approved for this channel: it must still be the linked one.
        if !channels.contains(&channel) {
            return Err(ToolError::Conflict(format!(
                "{} is no longer linked; nothing was sent",
                channel.label
            )));
        }
        let messages = messenger
            .send(&channel, args.text.trim())
            .await
            .map_err(tool_error)?;
        Ok(ToolOutput::json(Sent {
            success: true,
            detail: format!("delivered to {} in {messages} message(s)", channel.label),
        }))
    }
}
