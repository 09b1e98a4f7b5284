//! A sandbox narrowed to one skill's manifest: the commands of a file-backed skill run with the
//! same runner and OS confinement as `RunCommand`, but may write only inside the skill's own
//! (staged) bundle folder and the folders its manifest lists, never reach an allowlisted UNIX
//! socket, and use the network only when the caller grants it.
//!
//! Invariants:
//! - A manifest cannot widen what the operator allows: each folder it lists must resolve (as
//!   for writing) inside a workspace root, must not be protected, and must be an existing folder.
//! - The narrowed sandbox keeps every protected path and read rule of the original.
//! - `[sandbox] unix_socket_allow` and `[sandbox] command_network` do not apply to skills.
//! - A skill's network is its egress proxy's port only ([`Sandbox::with_egress_port`]), where
//!   the confinement can limit TCP by port ([`Sandbox::limits_tcp_ports`]).

use std::path::Path;
use std::sync::Arc;

use super::egress::{EgressProxy, EgressRules};
use super::net::{NetworkPolicy, SystemLookup};
use super::{Access, Sandbox, SandboxError};

impl Sandbox {
    /// This sandbox narrowed to a skill: the roots become `bundle` (the folder the skill's
    /// files were staged in, already real) and the folders `write` (as a manifest writes them,
    /// `~` allowed).
    pub fn for_skill(&self, bundle: &Path, write: &[String]) -> Result<Sandbox, SandboxError> {
        let bundle = bundle
            .canonicalize()
            .map_err(|error| SandboxError::Io(format!("{}: {error}", bundle.display())))?;
        let mut roots = vec![bundle];
        for raw in write {
            let resolved = self.resolve(raw, Access::Write)?;
            if resolved.protected {
                return Err(SandboxError::InvalidPath {
                    path: raw.clone(),
                    reason: "it is a protected path; a skill may not write there".to_owned(),
                });
            }
            if !resolved.path.is_dir() {
                return Err(SandboxError::InvalidPath {
                    path: raw.clone(),
                    reason: "it is not an existing folder".to_owned(),
                });
            }
            if !roots.contains(&resolved.path) {
                roots.push(resolved.path);
            }
        }
        let mut scoped = self.clone();
        scoped.roots = roots;
        scoped.config.unix_socket_allow.clear();
        scoped.config.command_network = false;
        Ok(scoped)
    }

    /// This sandbox with TCP `connect` allowed to `port` only (the egress proxy of one
    /// command), where the confinement can limit TCP by port.
    pub(crate) fn with_egress_port(mut self, port: u16) -> Sandbox {
        self.egress_port = Some(port);
        self
    }

    /// The egress proxy port commands may connect to, if any.
    pub(crate) fn egress_port(&self) -> Option<u16> {
        self.egress_port
    }

    /// Whether this machine's confinement can limit a command's TCP connections to one port
    /// (Landlock with ABI 4 or later, Seatbelt).
    pub fn limits_tcp_ports(&self) -> bool {
        self.confinement.limits_tcp_ports()
    }

    /// A fresh egress proxy to `hosts` (as a manifest lists them) through this sandbox's SSRF
    /// policy, and this sandbox with TCP `connect` allowed to the proxy's port only. Commands
    /// need [`EgressProxy::environment`] to use it; the proxy stops when dropped. Refused where
    /// the confinement cannot limit TCP by port.
    pub async fn with_egress(
        &self,
        hosts: &[String],
    ) -> Result<(Sandbox, EgressProxy), SandboxError> {
        if !self.limits_tcp_ports() {
            return Err(SandboxError::Io(
                "this system cannot limit a command's network to one port".to_owned(),
            ));
        }
        let proxy = self.egress_proxy(hosts, None).await?;
        let narrowed = self.clone().with_egress_port(proxy.port());
        Ok((narrowed, proxy))
    }

    /// A fresh egress proxy to `hosts` (`name` or `name:port`, as a manifest lists them)
    /// through this sandbox's SSRF policy (`[sandbox] network_allow_hosts`), passing at most
    /// `limit` bytes from upstream if given; it stops when dropped.
    pub(crate) async fn egress_proxy(
        &self,
        hosts: &[String],
        limit: Option<u64>,
    ) -> Result<EgressProxy, SandboxError> {
        let policy = NetworkPolicy::new(&self.config.network_allow_hosts).map_err(|reason| {
            SandboxError::Io(format!("[sandbox] network_allow_hosts: {reason}"))
        })?;
        EgressProxy::start(EgressRules {
            hosts: hosts.to_vec(),
            policy: Arc::new(policy),
            lookup: Arc::new(SystemLookup),
            limit,
        })
        .await
        .map_err(|error| SandboxError::Io(format!("cannot start the egress proxy: {error}")))
    }
}
