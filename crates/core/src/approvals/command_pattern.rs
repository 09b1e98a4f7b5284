//! What an allow rule or grant for commands matches: the same program file, no environment it
//! did not name, and its leading words.
//!
//! Invariants:
//! - A command line matches a pattern only when the shell reader vouches for it (not opaque)
//!   and *every* simple command in it matches; a statement that only assigns variables never
//!   matches (`HOME=/tmp/x; git status` changes what `git` reads).
//! - Every `NAME=value` assignment in front of the command must be listed in the pattern, with
//!   the same value. Wrappers (`env`, `sudo`, `nice`, `sh -c`, ...) are not looked through: the
//!   program of `env A=b git status` is `env`, so a pattern for `git` does not match it.
//! - The program matches when both have the same file name and resolve to the same absolute
//!   file, symlinks resolved (multi-call programs act on their name): a bare
//!   name is looked up in the `PATH` the command will have (the runner's, or the one the
//!   command assigns when the pattern lists that assignment), a relative path against the
//!   command's working folder. Anything that does not resolve does not match. Shell builtins
//!   (`cd`, `echo`, ...) match only the same bare name, which the shell runs itself.
//! - Finding files is the only effect, and it goes through [`ProgramLookup`], so the policy
//!   stays a pure function of its inputs in tests.

use std::ffi::OsString;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use crate::shell::{self, CommandLine, Invocation};

/// How program names become files: the `PATH` commands get and the filesystem.
pub trait ProgramLookup: Debug + Send + Sync {
    /// The `PATH` the command runner gives commands.
    fn search_path(&self) -> String;
    /// The canonical (absolute, symlink-free) path of `path` when it is an executable file.
    fn executable(&self, path: &Path) -> Option<PathBuf>;
}

/// The real lookup: this machine's filesystem and the `PATH` the runner gives commands.
#[derive(Debug, Clone)]
pub(crate) struct SystemPrograms {
    search_path: String,
}

impl SystemPrograms {
    /// The lookup for commands started by this process (the `PATH` they inherit, or the
    /// runner's fallback).
    pub(crate) fn for_commands() -> Self {
        Self::with_search_path(crate::sandbox::environment::command_search_path(
            crate::config::env::process_environment_os(),
        ))
    }

    /// A lookup with the given `PATH`.
    pub(crate) fn with_search_path(search_path: impl Into<OsString>) -> Self {
        Self {
            search_path: search_path.into().to_string_lossy().into_owned(),
        }
    }
}

impl ProgramLookup for SystemPrograms {
    fn search_path(&self) -> String {
        self.search_path.clone()
    }

    fn executable(&self, path: &Path) -> Option<PathBuf> {
        let metadata = std::fs::metadata(path).ok()?;
        if !metadata.is_file() || !is_executable(&metadata) {
            return None;
        }
        std::fs::canonicalize(path).ok()
    }
}

#[cfg(unix)]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_metadata: &std::fs::Metadata) -> bool {
    true
}

/// Builtins the shell runs itself whatever `PATH` says (harmless ones only; `eval`, `source`,
/// `exec`, `command` and friends are wrappers and never match by name).
const SHELL_BUILTINS: &[&str] = &[
    "cd", "echo", "printf", "pwd", "true", "false", "test", "[", ":",
];

/// A rule's or grant's command, compiled for allow matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandPattern {
    assignments: Vec<(String, String)>,
    program: String,
    arguments: Vec<String>,
}

impl CommandPattern {
    /// Compiles `text` (`git status`, `RUST_LOG=debug cargo test`, `./scripts/test.sh`).
    /// `None` when it is not one plain simple command.
    pub(crate) fn new(text: &str) -> Option<Self> {
        let invocation = shell::plain_command(text)?;
        let (program, arguments) = invocation.words.split_first()?;
        Some(Self {
            assignments: invocation.assignments.clone(),
            program: program.clone(),
            arguments: arguments.to_vec(),
        })
    }

    /// Whether every command of `line`, run in `cwd`, is this pattern's program with its
    /// leading arguments and no unlisted assignments.
    pub(crate) fn allows(
        &self,
        line: &CommandLine,
        cwd: &Path,
        lookup: &dyn ProgramLookup,
    ) -> bool {
        !line.opaque
            && !line.invocations.is_empty()
            && line
                .invocations
                .iter()
                .all(|invocation| self.allows_one(invocation, cwd, lookup))
    }

    fn allows_one(&self, invocation: &Invocation, cwd: &Path, lookup: &dyn ProgramLookup) -> bool {
        let Some((program, arguments)) = invocation.words.split_first() else {
            return false;
        };
        let listed = invocation
            .assignments
            .iter()
            .all(|assignment| self.assignments.contains(assignment));
        let arguments_match = arguments.len() >= self.arguments.len()
            && arguments.iter().zip(&self.arguments).all(|(a, b)| a == b);
        if !listed || !arguments_match || !shell::plain_program(program) {
            return false;
        }
        if SHELL_BUILTINS.contains(&self.program.as_str()) {
            return *program == self.program;
        }
        let search_path = invocation
            .assignments
            .iter()
            .rev()
            .find(|(name, _)| name == "PATH")
            .map_or_else(|| lookup.search_path(), |(_, value)| value.clone());
        // Multi-call programs (busybox, git's `git-*` links) act on the name they are started
        // by: the same file under another name is another program.
        if file_name(program) != file_name(&self.program) {
            return false;
        }
        let wanted = resolve(&self.program, cwd, &search_path, lookup);
        let found = resolve(program, cwd, &search_path, lookup);
        wanted.is_some() && wanted == found
    }
}

fn file_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// The file the shell runs for `program` in `cwd` with `PATH` = `search_path`.
pub(crate) fn resolve(
    program: &str,
    cwd: &Path,
    search_path: &str,
    lookup: &dyn ProgramLookup,
) -> Option<PathBuf> {
    if program.contains('/') {
        return lookup.executable(&cwd.join(program));
    }
    search_path.split(':').find_map(|folder| {
        // An empty entry means the working folder, as in the shell.
        let folder = if folder.is_empty() { "." } else { folder };
        lookup.executable(&cwd.join(folder).join(program))
    })
}

/// A lookup over a fixed set of files, for tests.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct FakePrograms {
    /// The runner's `PATH`.
    pub search_path: String,
    /// Executable files by path, each with its canonical path (a symlink maps to its target).
    pub files: std::collections::BTreeMap<PathBuf, PathBuf>,
}

#[cfg(test)]
impl ProgramLookup for FakePrograms {
    fn search_path(&self) -> String {
        self.search_path.clone()
    }

    fn executable(&self, path: &Path) -> Option<PathBuf> {
        let normal = crate::sandbox::normalize_lexically(path);
        self.files.get(&normal).cloned()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn lookup() -> FakePrograms {
        let mut files = BTreeMap::new();
        for (path, real) in [
            ("/usr/bin/git", "/usr/bin/git"),
            ("/bin/git", "/usr/bin/git"),
            ("/usr/local/bin/cargo", "/home/u/.cargo/bin/cargo"),
            ("/tmp/x/git", "/tmp/x/git"),
            ("/home/u/p/git", "/home/u/p/git"),
        ] {
            files.insert(PathBuf::from(path), PathBuf::from(real));
        }
        FakePrograms {
            search_path: "/usr/local/bin:/usr/bin:/bin".into(),
            files,
        }
    }

    #[test]
    fn resolution_follows_path_order_folders_and_symlinks() {
        let fake = lookup();
        let cwd = Path::new("/home/u/p");
        let path = fake.search_path();
        assert_eq!(
            resolve("git", cwd, &path, &fake),
            Some(PathBuf::from("/usr/bin/git"))
        );
        assert_eq!(
            resolve("/bin/git", cwd, &path, &fake),
            Some(PathBuf::from("/usr/bin/git"))
        );
        assert_eq!(
            resolve("./git", cwd, &path, &fake),
            Some(PathBuf::from("/home/u/p/git"))
        );
        assert_eq!(
            resolve("../p/git", cwd, &path, &fake),
            Some(PathBuf::from("/home/u/p/git"))
        );
        assert_eq!(
            resolve("git", cwd, "/tmp/x:/usr/bin", &fake),
            Some(PathBuf::from("/tmp/x/git"))
        );
        assert_eq!(
            resolve("git", cwd, ":/usr/bin", &fake),
            Some(PathBuf::from("/home/u/p/git")),
            "an empty PATH entry is the working folder"
        );
        assert_eq!(resolve("nope", cwd, &path, &fake), None);
    }

    #[test]
    fn patterns_compile_from_one_plain_command() {
        assert!(CommandPattern::new("git status").is_some());
        assert!(CommandPattern::new("RUST_LOG=debug cargo test").is_some());
        assert!(CommandPattern::new("git status; rm x").is_none());
        assert!(CommandPattern::new("$(x) status").is_none());
        assert!(CommandPattern::new("~/bin/tool").is_none());
        assert!(CommandPattern::new("").is_none());
    }

    #[test]
    fn the_real_lookup_finds_an_executable_through_a_symlink() {
        let folder = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let real = folder.path().join("tool");
        std::fs::write(&real, "#!/bin/sh\n").unwrap_or_else(|error| panic!("{error}"));
        let lookup = SystemPrograms::with_search_path(folder.path());
        assert_eq!(lookup.executable(&real), None, "not executable yet");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|error| panic!("{error}"));
            let link = folder.path().join("link");
            std::os::unix::fs::symlink(&real, &link).unwrap_or_else(|error| panic!("{error}"));
            let canonical = std::fs::canonicalize(&real).ok();
            assert_eq!(lookup.executable(&link), canonical);
            assert_eq!(
                resolve("tool", Path::new("/"), &lookup.search_path(), &lookup),
                canonical
            );
        }
    }
}
