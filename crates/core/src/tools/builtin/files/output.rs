//! New files that other tools produce (a research report, a generated image): planned like
//! `NewFile` (inside the roots, must not exist, a folder ancestor) and written atomically after
//! the gate allowed the plan, re-resolved first so a path that moved since is refused.

use std::io;
use std::path::Path;

use super::{atomic, target};
use crate::sandbox::{Access, ResolvedPath, Sandbox};
use crate::tools::ToolError;

/// Resolves `raw` for a new file written later by the same call.
pub(crate) fn plan_new_output(sandbox: &Sandbox, raw: &str) -> Result<ResolvedPath, ToolError> {
    let resolved = sandbox.resolve(raw, Access::Write)?;
    if target::Kind::of(&resolved.path).is_ok() {
        return Err(ToolError::InvalidArguments(format!(
            "`{}` already exists; choose another path",
            sandbox.display(&resolved.path)
        )));
    }
    target::require_folder_ancestor(sandbox, &resolved.path)?;
    Ok(resolved)
}

/// Writes `content` to the new file planned at `planned` (from `raw`), creating its parent
/// folders. Returns the path as people see it.
pub(crate) fn write_new_output(
    sandbox: &Sandbox,
    raw: &str,
    planned: &Path,
    content: &[u8],
) -> Result<String, ToolError> {
    let resolved = target::recheck(sandbox, raw, Access::Write, planned)?;
    let shown = sandbox.display(&resolved.path);
    let appeared = || {
        ToolError::Conflict(format!(
            "`{shown}` was created by someone else after the call was planned; nothing was written"
        ))
    };
    if resolved.exists {
        return Err(appeared());
    }
    target::create_parent_folders(sandbox, &resolved.path, &shown)?;
    match atomic::write_new(&sandbox.beneath(), &resolved.path, content) {
        Ok(()) => Ok(shown),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Err(appeared()),
        Err(error) => Err(target::io_failure("write", &shown, &error)),
    }
}
