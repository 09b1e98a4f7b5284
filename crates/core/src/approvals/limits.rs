//! Caps on calls waiting for approval: at most `[approvals] max_pending` at once from everyone
//! together and `max_pending_per_requester` from one requester.
//!
//! Invariant: a slot is taken, under the same lock that lists every waiter, before the pending
//! approval is stored, and given back when the approval ends (or could not be stored). So the
//! caps hold under any number of concurrent callers, and a call over a cap is refused before
//! anything about it is stored: the approvals already waiting stay exactly as they were.
//!
//! A requester is a chat, a skill, the CLI, scripts (`api`), or an MCP client by its name. The
//! total cap is what bounds a client that keeps changing its name.

use souz_protocol::Requester;

use super::policy::requester_identity;

/// Which cap a call ran into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PendingCap {
    /// Everyone's waiting calls together.
    #[error(
        "too many calls are waiting for approval ({0}); decide or deny some first, then try again"
    )]
    Total(usize),
    /// This requester's waiting calls.
    #[error(
        "too many calls are waiting for approval ({0}) from {1}; decide or deny some first, \
         then try again"
    )]
    Requester(usize, String),
}

/// The configured caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    /// Everyone together.
    pub total: usize,
    /// One requester.
    pub per_requester: usize,
}

impl PendingLimits {
    /// Whether one more call from `requester` fits, given the requesters of the calls waiting
    /// now.
    pub fn admit<'a>(
        &self,
        requester: &Requester,
        waiting: impl Iterator<Item = &'a str>,
    ) -> Result<(), PendingCap> {
        let key = requester_key(requester);
        let (mut total, mut same) = (0, 0);
        for other in waiting {
            total += 1;
            if other == key {
                same += 1;
            }
        }
        if total >= self.total {
            return Err(PendingCap::Total(total));
        }
        if same >= self.per_requester {
            return Err(PendingCap::Requester(same, requester.label()));
        }
        Ok(())
    }
}

/// The requester whose waiting calls count together: [`requester_identity`]; the ones without
/// a token identity (records from before client tokens) count together as one.
pub(crate) fn requester_key(requester: &Requester) -> String {
    requester_identity(requester).unwrap_or_else(|| "mcp-unidentified".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(name: &str, session: &str) -> Requester {
        Requester::Mcp {
            client_name: name.into(),
            client_version: "1".into(),
            session_id: session.into(),
            token_id: String::new(),
            token_name: String::new(),
        }
    }

    fn mcp_with_token(name: &str, token_id: &str) -> Requester {
        Requester::Mcp {
            client_name: name.into(),
            client_version: "1".into(),
            session_id: format!("session-{name}"),
            token_id: token_id.into(),
            token_name: "claude-code".into(),
        }
    }

    #[test]
    fn a_client_that_renames_itself_is_still_one_requester() {
        let limits = PendingLimits {
            total: 100,
            per_requester: 2,
        };
        let first = requester_key(&mcp_with_token("claude", "tok-1"));
        let second = requester_key(&mcp_with_token("totally-new-name", "tok-1"));
        assert_eq!(first, second);
        let waiting = [first.as_str(), second.as_str()];
        assert!(matches!(
            limits.admit(&mcp_with_token("yet-another", "tok-1"), waiting.into_iter()),
            Err(PendingCap::Requester(2, _))
        ));
        // Another token is another requester, whatever it calls itself.
        assert_eq!(
            limits.admit(&mcp_with_token("claude", "tok-2"), waiting.into_iter()),
            Ok(())
        );
    }

    #[test]
    fn caps_count_everyone_and_each_requester() {
        let limits = PendingLimits {
            total: 3,
            per_requester: 2,
        };
        let claude = requester_key(&mcp("claude", "s1"));
        let waiting = [claude.as_str(), claude.as_str()];
        // A new session of the same client is the same requester.
        assert_eq!(
            limits.admit(&mcp("claude", "s2"), waiting.into_iter()),
            Err(PendingCap::Requester(
                2,
                "unidentified MCP client \"claude 1\"".into()
            ))
        );
        assert_eq!(limits.admit(&Requester::Cli, waiting.into_iter()), Ok(()));
        let full = [claude.as_str(), claude.as_str(), "cli"];
        assert_eq!(
            limits.admit(&Requester::Api, full.into_iter()),
            Err(PendingCap::Total(3))
        );
        let message = PendingCap::Total(3).to_string();
        assert!(
            message.starts_with(
                "too many calls are waiting for approval (3); decide or deny some first"
            )
        );
    }
}
