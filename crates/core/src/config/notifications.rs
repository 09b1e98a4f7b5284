//! `[notifications]`: which native notifications the menu-bar app posts.

use super::section::{Invalid, config_section};

config_section! {
    /// Native notifications posted by the menu-bar app (the daemon itself posts none).
    #[section = "notifications"]
    pub struct NotificationsConfig {
        /// Notify when a tool call waits for your approval, with Approve and Deny buttons.
        pub approval_requested: bool = true,
        /// Notify when an agent asks you a question (its turn waits for the answer).
        pub question_asked: bool = true,
        /// Notify when an approval expired unanswered (which denied the call).
        pub approval_expired: bool = true,
        /// Notify when an agent turn finishes, fails or is cancelled.
        pub turn_finished: bool = true,
    }
}

impl NotificationsConfig {
    fn check(&self) -> Vec<Invalid> {
        Vec::new()
    }
}
