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

use std::path::Path;

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
}
