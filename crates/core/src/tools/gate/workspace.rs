//! Which sandbox a call runs in: the daemon's, or, for a call made in the chat of a user behind
//! the trusted proxy, that user's own ([`Sandbox::for_proxied_user`]).
//!
//! Invariants: in trusted-proxy mode a chat's owner is read from the `chats` table for every
//! call (never taken from the caller); without it nobody but the local user can start a call,
//! so nothing is read; a call in a proxied user's chat never gets the daemon's sandbox, and when that
//! user's folder cannot be prepared the call fails instead. Commands are refused for proxied
//! users: their confinement limits what a command writes to its roots, not everything it
//! reads, so a command could read the operator's or another user's files.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use souz_protocol::{Requester, Risk};
use tokio_util::sync::CancellationToken;

use super::Gate;
use crate::sandbox::Sandbox;
use crate::sandbox::users::UserFolderError;
use crate::store::{Store, StoreError};
use crate::tools::ToolContext;

/// Why a chat's calls have no sandbox. The chat's uploads map the cause to a status once
/// (`Chats::chat_sandbox`); a tool call shows the message to the model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkspaceError {
    /// The chat's owner could not be read (the database failed): Souz's fault.
    #[error("Souz could not tell whose chat this is, so the call did not run.")]
    Owner(#[source] StoreError),
    /// The proxied user's folder cannot be used or made.
    #[error("{0}; the call did not run.")]
    UserFolder(#[source] UserFolderError),
}

impl Gate {
    /// The sandbox the tools of chat `chat_id` run in (the daemon's, or its proxied user's):
    /// where the chat's attachments are read and uploads written.
    pub(crate) async fn chat_sandbox(&self, chat_id: &str) -> Result<Arc<Sandbox>, WorkspaceError> {
        let requester = Requester::Chat {
            chat_id: chat_id.to_owned(),
        };
        let workspace = self
            .inner
            .workspaces
            .for_call(&self.inner.store, &self.sandbox(), &requester)
            .await?;
        Ok(workspace.sandbox)
    }

    /// The context a call from `requester` runs in, or why it may not run at all.
    pub(super) async fn context(
        &self,
        requester: &Requester,
        risk: Risk,
        cancel: &CancellationToken,
    ) -> Result<ToolContext, String> {
        let workspace = self
            .inner
            .workspaces
            .for_call(&self.inner.store, &self.sandbox(), requester)
            .await
            .map_err(|error| error.to_string())?;
        if workspace.proxied_user.is_some() && risk == Risk::Exec {
            return Err(
                "Commands are not available in chats of users behind Souz's trusted proxy: \
                 Souz cannot keep a command from reading files outside your folder."
                    .into(),
            );
        }
        Ok(ToolContext {
            sandbox: workspace.sandbox,
            cancel: cancel.clone(),
            requester: requester.clone(),
            progress: crate::tools::ProgressSink::default(),
            language: self.language(),
            staged: None,
        })
    }
}

/// Where calls run.
#[derive(Default)]
pub(super) struct Workspaces {
    /// `[server] proxy_user_roots` in trusted-proxy mode; `None` without it.
    template: RwLock<Option<String>>,
    /// Each proxied user's sandbox, made on first use.
    users: Mutex<HashMap<String, Arc<Sandbox>>>,
}

/// The sandbox for a call, and whether it is a proxied user's.
pub(super) struct Workspace {
    pub sandbox: Arc<Sandbox>,
    pub proxied_user: Option<String>,
}

impl Workspaces {
    /// Sets trusted-proxy mode and the folder template of proxied users (`None`: the mode is
    /// off), forgetting sandboxes made from another.
    pub(super) fn set_template(&self, template: Option<&str>) {
        *self
            .template
            .write()
            .unwrap_or_else(PoisonError::into_inner) = template.map(|t| t.trim().to_owned());
        self.forget_users();
    }

    /// Forgets the proxied users' sandboxes (made from a daemon sandbox that was replaced).
    pub(super) fn forget_users(&self) {
        self.users
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The sandbox a call from `requester` runs in.
    pub(super) async fn for_call(
        &self,
        store: &Store,
        daemon: &Arc<Sandbox>,
        requester: &Requester,
    ) -> Result<Workspace, WorkspaceError> {
        let proxy_mode = self
            .template
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        let Requester::Chat { chat_id } = requester else {
            return Ok(Workspace {
                sandbox: Arc::clone(daemon),
                proxied_user: None,
            });
        };
        if !proxy_mode {
            return Ok(Workspace {
                sandbox: Arc::clone(daemon),
                proxied_user: None,
            });
        }
        let owner = store.chat_owner(chat_id).await.map_err(|error| {
            tracing::error!(%error, "could not read a chat's owner");
            WorkspaceError::Owner(error)
        })?;
        let user = match owner {
            Some(user) if user != crate::LOCAL_USER => user,
            _ => {
                return Ok(Workspace {
                    sandbox: Arc::clone(daemon),
                    proxied_user: None,
                });
            }
        };
        let sandbox = self.for_user(daemon, &user)?;
        Ok(Workspace {
            sandbox,
            proxied_user: Some(user),
        })
    }

    fn for_user(&self, daemon: &Sandbox, user: &str) -> Result<Arc<Sandbox>, WorkspaceError> {
        if let Some(sandbox) = self
            .users
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(user)
        {
            return Ok(Arc::clone(sandbox));
        }
        let template = self
            .template
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_default();
        let sandbox = Arc::new(
            daemon
                .for_proxied_user(&template, user)
                .map_err(WorkspaceError::UserFolder)?,
        );
        self.users
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(user.to_owned(), Arc::clone(&sandbox));
        Ok(sandbox)
    }
}
