//! Running one command of a file-backed skill (`RunSkillCommand`'s arguments, the original's
//! `SkillCommandExecutor`): runtime `BASH|PYTHON|NODE|PROCESS`, a script or script path inside
//! the bundle, arguments, a working folder inside the bundle, environment, stdin and a time
//! limit, run by the sandbox's command runner narrowed to the skill's manifest.
//!
//! Invariants:
//! - The bundle's files are staged in a fresh private folder; script paths and the working
//!   folder must be relative and stay inside it (`..` and absolute paths are refused).
//! - Writes go only to the staged bundle, the manifest's `write` folders (each inside a
//!   workspace root, never protected) and the command's private temporary folder.
//! - Without `hosts` a command has no network. With them it gets a loopback egress proxy of
//!   its own (`sandbox::egress`) that reaches only those hosts (through the SSRF policy), the
//!   proxy variables in its environment, and TCP `connect` to the proxy's port only; where the
//!   confinement cannot limit TCP by port, such a skill is refused (never all-or-nothing).
//! - The environment is the runner's scrubbed one, the manifest's `env` variables taken from
//!   the daemon, `SOUZ_SKILL_ID`/`SOUZ_SKILL_ROOT`, then the caller's additions.
//! - The time limit is the caller's (default 60 s), clamped to the manifest's limit.
//! - Whether the bundle's consent covers the program is not decided here but by `coverage`
//!   (an unlisted program asks in the gate, showing this exact command).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::bundle::Bundle;
use super::manifest::Permissions;
use crate::sandbox::{
    CommandError, CommandOutcome, CommandProgram, CommandRequest, DaemonFolder, Sandbox,
};

/// What interprets the command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum Runtime {
    /// `bash`.
    #[default]
    Bash,
    /// `python3`.
    Python,
    /// `node`.
    Node,
    /// `command[0]` itself, which the manifest must list in `programs`.
    Process,
}

impl Runtime {
    /// The interpreter and its inline-script flag; `None` for `PROCESS`.
    pub(super) fn interpreter(self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::Bash => Some(("bash", "-c")),
            Self::Python => Some(("python3", "-c")),
            Self::Node => Some(("node", "-e")),
            Self::Process => None,
        }
    }
}

/// The `arguments` of `RunSkillCommand` for a file-backed skill.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SkillCommandArgs {
    #[serde(default)]
    pub runtime: Runtime,
    /// `PROCESS`: the program and its first arguments.
    #[serde(default)]
    pub command: Vec<String>,
    /// Inline script text.
    pub script: Option<String>,
    /// A script file of the bundle (relative to its root).
    pub script_path: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Relative to the bundle root; default the root.
    pub working_directory: Option<String>,
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    pub stdin: Option<String>,
    pub timeout_millis: Option<u64>,
}

/// Why a skill command did not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    #[error("{0}")]
    Invalid(String),
    #[error(
        "this skill lists hosts in agents/souz.toml, but this system cannot limit a command's \
         network to its egress proxy (that needs Landlock ABI 4, Linux 6.7+, or Seatbelt), so \
         Souz refuses to run it rather than give it the whole network"
    )]
    HostsNotEnforceable,
    #[error("cannot start the skill's egress proxy: {0}")]
    Proxy(String),
    #[error("{0}")]
    Command(#[from] CommandError),
    #[error("cannot stage the skill's files: {0}")]
    Stage(String),
}

/// A path inside the bundle: relative, no `..`.
pub(super) fn inside_bundle(raw: &str, what: &str) -> Result<PathBuf, RunError> {
    let path = Path::new(raw.trim());
    let clean = path
        .components()
        .all(|part| matches!(part, Component::Normal(_) | Component::CurDir));
    if raw.trim().is_empty() || !clean || raw.contains('\0') {
        return Err(RunError::Invalid(format!(
            "{what} `{raw}` must be a relative path inside the skill's folder"
        )));
    }
    Ok(path.to_path_buf())
}

/// The program and arguments the request runs.
fn argv(args: &SkillCommandArgs) -> Result<Vec<String>, RunError> {
    let mut argv = match (args.runtime.interpreter(), &args.script_path, &args.script) {
        (Some((program, _)), Some(path), _) => {
            let path = inside_bundle(path, "scriptPath")?;
            vec![program.to_owned(), path.display().to_string()]
        }
        (Some((program, flag)), None, Some(script)) => {
            vec![program.to_owned(), flag.to_owned(), script.clone()]
        }
        (Some(_), None, None) if !args.command.is_empty() => args.command.clone(),
        (Some(_), None, None) => {
            return Err(RunError::Invalid(
                "give `scriptPath`, `script` or `command`".to_owned(),
            ));
        }
        // Whether consent covers the program (listed, or a file of the bundle) is the gate's
        // question (`coverage`): anything else asks, showing this exact command.
        (None, _, _) if !args.command.is_empty() => args.command.clone(),
        (None, _, _) => return Err(RunError::Invalid("PROCESS needs `command`".to_owned())),
    };
    argv.extend(args.args.iter().cloned());
    Ok(argv)
}

/// The request for `args` of skill `skill_id` staged at `root`; `daemon_env` looks up the
/// manifest's variables.
pub(crate) fn request(
    skill_id: &str,
    root: &Path,
    permissions: &Permissions,
    args: &SkillCommandArgs,
    daemon_env: impl Fn(&str) -> Option<String>,
) -> Result<CommandRequest, RunError> {
    let argv = argv(args)?;
    let cwd = match &args.working_directory {
        Some(raw) => root.join(inside_bundle(raw, "workingDirectory")?),
        None => root.to_path_buf(),
    };
    let mut env: Vec<(String, String)> = permissions
        .env
        .iter()
        .filter_map(|name| daemon_env(name).map(|value| (name.clone(), value)))
        .collect();
    env.push(("SOUZ_SKILL_ID".to_owned(), skill_id.to_owned()));
    env.push(("SOUZ_SKILL_ROOT".to_owned(), root.display().to_string()));
    env.extend(args.environment.clone());
    let limit = Duration::from_secs(permissions.time_limit_seconds);
    let timeout = args
        .timeout_millis
        .map_or(limit, |millis| {
            Duration::from_millis(millis).max(Duration::from_secs(1))
        })
        .min(limit);
    Ok(CommandRequest {
        program: CommandProgram::Argv(argv),
        cwd: Some(cwd.display().to_string()),
        timeout: Some(timeout),
        env,
        stdin: args.stdin.clone().map(String::into_bytes),
        network: false,
    })
}

/// Writes the bundle's files into a fresh private folder. The folder's name is random but it
/// lies in the shared temporary folder: each file is created new (`O_EXCL | O_NOFOLLOW`) beneath
/// a handle on it, so nothing planted there is written through.
pub(crate) fn stage(bundle: &Bundle) -> Result<tempfile::TempDir, RunError> {
    use std::os::unix::fs::PermissionsExt;
    let problem = |error: String| RunError::Stage(error);
    let folder = tempfile::Builder::new()
        .prefix("souz-skill-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|error| problem(error.to_string()))?;
    for (path, text) in bundle.files() {
        let relative: PathBuf = inside_bundle(path, "bundle file")?
            .components()
            .filter(|part| matches!(part, Component::Normal(_)))
            .collect();
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            continue;
        };
        let created = DaemonFolder::create(folder.path(), parent, 0o700)
            .and_then(|parent| parent.create_new(name, text.as_bytes(), 0o700))
            .map_err(|error| problem(error.to_string()))?;
        if !created {
            return Err(problem(format!(
                "{} appeared in the staging folder before Souz wrote it",
                relative.display()
            )));
        }
    }
    Ok(folder)
}

/// The skill a command belongs to.
pub(crate) struct SkillFiles<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its files.
    pub bundle: &'a Bundle,
    /// Its manifest.
    pub permissions: &'a Permissions,
}

/// Stages the skill's bundle and runs one command of it, confined to its manifest.
pub(crate) async fn run(
    sandbox: &Sandbox,
    skill: SkillFiles<'_>,
    args: &SkillCommandArgs,
    cancel: &CancellationToken,
) -> Result<CommandOutcome, RunError> {
    let staged = stage(skill.bundle)?;
    let root = staged
        .path()
        .canonicalize()
        .map_err(|error| RunError::Stage(error.to_string()))?;
    let mut request = request(skill.id, &root, skill.permissions, args, |name| {
        crate::config::env::configured_variable(name)
    })?;
    let mut scoped = sandbox
        .for_skill(&root, &skill.permissions.write)
        .map_err(CommandError::from)?;
    // Kept until the command ends: dropping it stops the proxy.
    let mut proxy = None;
    if !skill.permissions.hosts.is_empty() {
        if !scoped.limits_tcp_ports() {
            return Err(RunError::HostsNotEnforceable);
        }
        let (narrowed, started) = scoped
            .with_egress(&skill.permissions.hosts)
            .await
            .map_err(|error| RunError::Proxy(error.to_string()))?;
        scoped = narrowed;
        request.env.extend(started.environment());
        proxy = Some(started);
    }
    let outcome = scoped.run_command(request, cancel).await;
    drop(proxy);
    Ok(outcome?)
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
