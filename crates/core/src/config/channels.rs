//! `[channels]`: the chat apps Souz can be reached through. One today, Telegram
//! (`[channels.telegram]`, see [`TelegramConfig`]); its bot token is a service key of the key
//! store (`souz keys set telegram`), never a value of this file.
//!
//! Invariants: `api_url` is an `http://` or `https://` base URL without the `/bot<token>` part
//! (the token is added by the transport and never written here or in a log).

use serde::{Deserialize, Serialize};

use super::section::{Invalid, config_section};

/// Seconds a `getUpdates` long poll is held open by Telegram at most (the Bot API's own cap is
/// 50).
const MAX_POLL_SECONDS: u64 = 50;
/// The shortest and longest wait between two edits of a streamed answer, in milliseconds.
const EDIT_INTERVAL_MS: std::ops::RangeInclusive<u64> = 50..=60_000;

/// `[channels.telegram]`: the Telegram bot Souz answers through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelegramConfig {
    /// Whether Souz polls the bot for messages (it also needs the `telegram` key).
    pub enabled: bool,
    /// The Bot API's base URL (a self-hosted Bot API server may replace Telegram's).
    pub api_url: String,
    /// Seconds one `getUpdates` long poll waits for news (1 to 50).
    pub poll_seconds: u64,
    /// Milliseconds at least between two edits of an answer streamed into Telegram (50 to
    /// 60,000; Telegram allows about one message a second per chat).
    pub edit_interval_ms: u64,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            api_url: "https://api.telegram.org".to_owned(),
            poll_seconds: 30,
            edit_interval_ms: 1000,
        }
    }
}

config_section! {
    /// Chat apps you reach Souz through.
    #[section = "channels"]
    pub struct ChannelsConfig {
        /// A Telegram bot: link your account with `souz telegram link`, then talk to Souz and
        /// get its answers in Telegram. Store the bot's token (from @BotFather) with
        /// `souz keys set telegram`, then:
        ///
        ///   [channels.telegram]
        ///   enabled = true
        ///   api_url = "https://api.telegram.org"   # or a self-hosted Bot API server
        ///   poll_seconds = 30                      # one long poll's wait, 1 to 50
        ///   edit_interval_ms = 1000                # a streamed answer: one edit a second at most
        ///
        /// Only the linked Telegram account is served; anyone else gets one refusal.
        pub telegram: TelegramConfig = TelegramConfig::default(),
    }
}

impl ChannelsConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        let url = self.telegram.api_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            problems.push(Invalid::new(
                "telegram",
                "api_url must be an http:// or https:// URL",
            ));
        }
        if !(1..=MAX_POLL_SECONDS).contains(&self.telegram.poll_seconds) {
            problems.push(Invalid::new(
                "telegram",
                format!("poll_seconds must be between 1 and {MAX_POLL_SECONDS}"),
            ));
        }
        if !EDIT_INTERVAL_MS.contains(&self.telegram.edit_interval_ms) {
            problems.push(Invalid::new(
                "telegram",
                format!(
                    "edit_interval_ms must be between {} and {}",
                    EDIT_INTERVAL_MS.start(),
                    EDIT_INTERVAL_MS.end()
                ),
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Section;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(ChannelsConfig::default().validate().is_empty());
        assert_eq!(
            ChannelsConfig::default().telegram.api_url,
            "https://api.telegram.org"
        );
        let config = ChannelsConfig {
            telegram: TelegramConfig {
                api_url: "ftp://example.com".into(),
                poll_seconds: 0,
                edit_interval_ms: 10,
                ..TelegramConfig::default()
            },
        };
        let problems = format!("{:?}", config.validate());
        assert!(problems.contains("api_url"), "{problems}");
        assert!(problems.contains("poll_seconds"), "{problems}");
        assert!(problems.contains("edit_interval_ms"), "{problems}");
    }
}
