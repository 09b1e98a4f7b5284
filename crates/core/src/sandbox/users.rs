//! Trusted-proxy mode: the sandbox of each user behind the proxy.
//!
//! A proxied user's tools work in that user's own folder, made from `[server]
//! proxy_user_roots` (a template such as `/srv/souz/users/{user}`): it is their only root and
//! their `~`, so nothing of the operator's (whose roots are the daemon's) or of another user's
//! is reachable through their file tools. Without a template they get no root at all, so every
//! tool that touches a file is refused.
//!
//! Invariants: the user id becomes exactly one path component (no `/`, `\`, NUL or control
//! characters, not `.` or `..`), so it cannot name a folder outside the template's parent; the
//! folder is created owner-only (0700) on first use and must be a real folder, not a symlink.

use std::path::{Path, PathBuf};

use super::Sandbox;
use crate::config::server::USER_PLACEHOLDER;

/// Longest user id usable as a folder name (bytes).
const MAX_FOLDER_NAME: usize = 255;

/// Why a proxied user has no folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserFolderError {
    /// The user id cannot be one folder name.
    #[error(
        "the user id `{0}` cannot name a folder (it must not contain `/`, `\\`, control characters, or be `.` or `..`)"
    )]
    UnusableId(String),
    /// The folder could not be made.
    #[error("could not prepare the user's folder {path}: {reason}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The folder of `user` from `template` (not created).
pub(crate) fn user_folder(template: &str, user: &str) -> Result<PathBuf, UserFolderError> {
    let unusable = user.is_empty()
        || user == "."
        || user == ".."
        || user.len() > MAX_FOLDER_NAME
        || user.contains(['/', '\\', '\0'])
        || user.chars().any(char::is_control);
    if unusable {
        return Err(UserFolderError::UnusableId(user.to_owned()));
    }
    Ok(PathBuf::from(
        template.trim().replace(USER_PLACEHOLDER, user),
    ))
}

impl Sandbox {
    /// This sandbox for a user behind the trusted proxy: the same protections and command
    /// settings, but its only root and home are the user's folder from `template` (created
    /// 0700 if missing), or no root at all when `template` is empty.
    pub fn for_proxied_user(&self, template: &str, user: &str) -> Result<Self, UserFolderError> {
        let mut sandbox = self.clone();
        if template.trim().is_empty() {
            sandbox.roots = Vec::new();
            // A home no tool can reach: `~` resolves outside every root and is refused.
            sandbox.user_home = PathBuf::from("/nonexistent/souz-proxied-user");
            return Ok(sandbox);
        }
        let folder = user_folder(template, user)?;
        let real = prepare(&folder).map_err(|reason| UserFolderError::Folder {
            path: folder.clone(),
            reason,
        })?;
        sandbox.roots = vec![real.clone()];
        // Deleted files go to the user's own Trash, inside their folder, never the operator's.
        sandbox.trash_folder = Some(real.join(".local/share/Trash"));
        sandbox.user_home = real;
        Ok(sandbox)
    }
}

/// Creates `folder` (and its parents) owner-only if missing; refuses a symlink or a file.
fn prepare(folder: &Path) -> Result<PathBuf, String> {
    match std::fs::symlink_metadata(folder) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err("it is a symbolic link".into());
        }
        Ok(metadata) if !metadata.is_dir() => return Err("it is not a folder".into()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(folder).map_err(|error| error.to_string())?;
        }
        Err(error) => return Err(error.to_string()),
    }
    folder.canonicalize().map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_id_is_exactly_one_folder_name() {
        let template = "/srv/souz/users/{user}";
        assert_eq!(
            user_folder(template, "alice@example.com"),
            Ok(PathBuf::from("/srv/souz/users/alice@example.com"))
        );
        for bad in ["", ".", "..", "a/b", "../x", "a\\b", "a\0b", "a\nb"] {
            assert!(
                matches!(
                    user_folder(template, bad),
                    Err(UserFolderError::UnusableId(_))
                ),
                "{bad:?}"
            );
        }
        assert!(user_folder(template, &"x".repeat(256)).is_err());
    }

    #[test]
    fn a_proxied_users_sandbox_has_only_their_folder_or_nothing() {
        use crate::config::{SandboxConfig, SouzPaths};
        use crate::sandbox::Access;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        std::fs::write(home.join("operator.txt"), "x").unwrap();
        let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
        let daemon = Sandbox::new(&SandboxConfig::default(), &paths).unwrap();
        assert!(daemon.resolve("~/operator.txt", Access::Read).is_ok());

        let template = format!("{}/users/{{user}}", home.display());
        let alice = daemon.for_proxied_user(&template, "alice").unwrap();
        assert_eq!(alice.roots(), [home.join("users/alice")]);
        assert!(alice.resolve("~/notes.txt", Access::Write).is_ok());
        for outside in ["~/../../operator.txt", "../bob/x", "/etc/hostname"] {
            assert!(alice.resolve(outside, Access::Read).is_err(), "{outside}");
        }
        let operator_file = home.join("operator.txt").display().to_string();
        assert!(alice.resolve(&operator_file, Access::Read).is_err());
        // What alice deletes goes to a Trash inside her folder.
        assert_eq!(
            alice.trash_folder(),
            Some(home.join("users/alice/.local/share/Trash").as_path())
        );

        // No template: no folder at all, so nothing that touches a file can run.
        let nobody = daemon.for_proxied_user("", "alice").unwrap();
        assert!(nobody.roots().is_empty());
        for path in ["~/notes.txt", "notes.txt", operator_file.as_str()] {
            assert!(nobody.resolve(path, Access::Read).is_err(), "{path}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_folder_is_created_owner_only_and_a_symlink_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("users/alice");
        let real = prepare(&folder).unwrap();
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::os::unix::fs::symlink(dir.path(), dir.path().join("users/bob")).unwrap();
        assert_eq!(
            prepare(&dir.path().join("users/bob")),
            Err("it is a symbolic link".to_owned())
        );
    }
}
