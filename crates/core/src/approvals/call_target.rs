//! What a tool call will touch, as the approval policy sees it: a [`CallTarget`] per path,
//! command, URL or network use, computed by the tool's plan before anyone is asked.
//!
//! It lives next to the policy that matches rules and grants against it, so `approvals` needs
//! nothing from `tools` (which sits above it).

use std::path::PathBuf;

use crate::sandbox::Access;

/// Something a call will touch; the policy matches rules against these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallTarget {
    /// A file or folder.
    Path {
        /// Resolved absolute path.
        path: PathBuf,
        /// How it is used.
        access: Access,
        /// Whether it is protected (the policy then always asks).
        protected: bool,
    },
    /// A program run.
    Command {
        /// The command line as the person would read it.
        command: String,
        /// Working directory.
        cwd: PathBuf,
    },
    /// The call runs a program outside OS confinement (the machine cannot confine commands
    /// and `[sandbox] allow_unconfined_commands` is on): the policy always asks.
    Unconfined {
        /// Why nothing confines it, in words.
        reason: String,
    },
    /// What the call runs changed since the person trusted it (an external MCP tool whose
    /// description or schema changed): the policy always asks, and the approval carries the
    /// change as its diff.
    Untrusted {
        /// What changed, in words.
        reason: String,
    },
    /// A program that may use the network (TCP): the policy applies `[approvals] network`
    /// (ask by default) besides what rules and grants say about the command.
    Network,
    /// A device of the person's: a client tool runs there (the device that submitted the
    /// turn, by its `deviceId`).
    Device {
        /// The device's id, as it named itself.
        device_id: String,
    },
    /// A URL fetched.
    Url {
        /// The full URL.
        url: String,
        /// Its host (lower case), for domain rules.
        host: String,
    },
}

/// Whether a call only writes files: at least one target, and every one a write to an
/// unprotected path (no delete or move, command, URL or network use). What a file-writes
/// group grant may cover ([`souz_protocol::ToolGroup::FileWrites`]).
pub(crate) fn only_writes(targets: &[CallTarget]) -> bool {
    !targets.is_empty()
        && targets.iter().all(|target| {
            matches!(
                target,
                CallTarget::Path {
                    access: Access::Write,
                    protected: false,
                    ..
                }
            )
        })
}
