//! Whose approvals and audit rows a reader sees and decides.
//!
//! Every approval and every audit row has exactly one owner. A call made in a user's chat
//! (requester `chat`, a chat stored for that user) belongs to that user; every other call (MCP
//! clients, the CLI, scripts, skills, agent turns outside any stored chat) belongs to the
//! daemon's operator. Without trusted-proxy mode the local user is both, and sees everything.
//!
//! Deciding follows the trusted-proxy rule (`[server] proxy_users_decide`): by default the
//! operator decides every approval, users' chats' included, so the operator sees those too and
//! a user sees their own but cannot decide them; with the opt-in each side decides its own.
//!
//! The owner of a chat is read from the chat domain's `chats` table (`id` → `user_id`) inside
//! the same query, so a page is filtered before its limit applies and a foreign row is never
//! loaded at all.

/// Who is reading (or deciding).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Audience {
    /// Everything: the local user of a daemon without trusted-proxy mode.
    #[default]
    Everyone,
    /// The operator of a multi-user daemon: calls that no user's chat made.
    Operator,
    /// One user (named by the trusted proxy): calls made in that user's chats.
    User(String),
}

impl Audience {
    /// Whether this audience sees every row.
    pub fn sees_everything(&self) -> bool {
        matches!(self, Self::Everyone)
    }

    /// The owner whose rows this audience sees (`None`: the operator's, or everyone's when
    /// [`Audience::sees_everything`]).
    pub fn owner(&self) -> Option<&str> {
        match self {
            Self::User(user) => Some(user),
            Self::Everyone | Self::Operator => None,
        }
    }

    /// Whose approvals this audience sees, given whether proxied users decide their own: the
    /// operator sees users' ones too when it is the one deciding them.
    pub fn seeing(&self, users_decide: bool) -> Self {
        match self {
            Self::Operator if !users_decide => Self::Everyone,
            other => other.clone(),
        }
    }

    /// Why this audience may not decide the approvals it sees, if it may not: a proxied user
    /// decides nothing unless `users_decide`.
    pub fn decision_refusal(&self, users_decide: bool) -> Option<String> {
        (matches!(self, Self::User(_)) && !users_decide).then(|| {
            "tool calls in this chat are approved by the daemon's operator; users behind the \
             trusted proxy cannot decide them (the operator can let them with [server] \
             proxy_users_decide = true)"
                .to_owned()
        })
    }

    /// A SQL condition on a table's `requester` column that holds for the rows this audience
    /// sees. `all` and `owner` are the numbers of the parameters to bind to
    /// [`Audience::sees_everything`] and [`Audience::owner`].
    pub(crate) fn condition(all: usize, owner: usize) -> String {
        format!(
            "(?{all} OR (CASE WHEN json_extract(requester, '$.kind') = 'chat' THEN \
             (SELECT chats.user_id FROM chats WHERE chats.id = json_extract(requester, '$.chat_id')) \
             END) IS ?{owner})"
        )
    }
}
