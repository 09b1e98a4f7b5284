//! Installing a skill from a git repository over HTTP(S): where it is (a clone URL or a forge's
//! "tree" page, a ref, a folder) and fetching it.
//!
//! Invariants:
//! - Only `http` and `https` URLs without credentials; a ref and a folder are checked before
//!   git sees them (no option injection, no `..`, no absolute folder).
//! - git reaches the network only through a fresh egress proxy (`sandbox::egress`) that lets it
//!   reach the URL's host and port alone, through the sandbox's SSRF policy (`[sandbox]
//!   network_allow_hosts` for anything not public), at most [`MAX_FETCH_BYTES`]; a redirect to
//!   another host is refused there.
//! - git runs with a cleared environment, without system or global configuration, hooks,
//!   prompts, credentials or submodules, and never checks anything out: one commit is fetched
//!   shallowly into a private bare repository, and the skill's folder is exported with `git
//!   archive` as a zip that `archive::read_zip` reads in memory within the loader limits (links,
//!   `..`, size bombs refused). The repository is removed afterwards in every case.
//! - The whole fetch has a time limit ([`FETCH_TIMEOUT`]).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::archive::{ArchivedSkill, read_zip};
use super::bundle::MAX_BUNDLE_BYTES;
use crate::sandbox::Sandbox;
use crate::sandbox::egress::EgressProxy;
use crate::sandbox::environment::command_search_path;

/// Most bytes a fetch may download.
pub(crate) const MAX_FETCH_BYTES: u64 = 64 * 1024 * 1024;
/// Longest a fetch may take, from the first request to the exported folder.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(180);
/// Most bytes of git's output read (a listing of the repository's files, an archive).
const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;
/// Most skill folders named when a repository holds several.
const NAMED_FOLDERS: usize = 12;

/// Where a skill is in a git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitSource {
    /// The repository's clone URL.
    pub url: reqwest::Url,
    /// A branch, tag or commit (`None`: the default branch).
    pub reference: Option<String>,
    /// The skill's folder in the repository (`None`: the top, or the one skill it holds).
    pub folder: Option<String>,
}

/// Why a skill could not be fetched.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    /// The URL, ref or folder cannot be used.
    #[error("{0}")]
    Source(String),
    /// The fetch or export failed (git's own words).
    #[error("{0}")]
    Fetch(String),
    /// The exported folder breaks a loader limit.
    #[error("{0}")]
    Load(#[from] super::bundle::LoadError),
}

impl GitSource {
    /// The source `url` (a clone URL, or a GitHub/GitLab/Gitea page of a folder:
    /// `…/owner/repo/tree/<ref>/<folder>`, `…/-/tree/…`, `…/src/branch/…`), with `reference`
    /// and `folder` overriding what the URL says.
    pub(crate) fn parse(
        url: &str,
        reference: Option<&str>,
        folder: Option<&str>,
    ) -> Result<Self, GitError> {
        let bad =
            |why: &str| GitError::Source(format!("`{}` cannot be installed: {why}", url.trim()));
        let mut parsed = reqwest::Url::parse(url.trim())
            .map_err(|_| bad("give the repository's http(s) URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(bad("only http and https git URLs are supported"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad("a URL may not carry credentials"));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(bad("the URL has no host"));
        }
        parsed.set_fragment(None);
        let (repository, page_ref, page_folder) = split_tree_page(&parsed);
        let reference = reference
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
            .or(page_ref);
        if let Some(reference) = &reference {
            check_reference(reference).map_err(|why| bad(&why))?;
        }
        let folder = folder
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
            .or(page_folder)
            .map(|folder| folder.trim_matches('/').to_owned())
            .filter(|folder| !folder.is_empty());
        if let Some(folder) = &folder {
            check_folder(folder).map_err(|why| bad(&why))?;
        }
        Ok(Self {
            url: repository,
            reference,
            folder,
        })
    }

    /// The host git connects to (an IPv6 literal without brackets) and its port.
    fn destination(&self) -> (String, u16) {
        let host = self
            .url
            .host_str()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        (host, self.url.port_or_known_default().unwrap_or(443))
    }

    /// The egress proxy's one allowed destination, `host:port`.
    fn host_entry(&self) -> String {
        let (host, port) = self.destination();
        format!("{host}:{port}")
    }

    /// How an install from here is recorded: the URL, the commit and the folder.
    pub(crate) fn origin(&self, commit: &str) -> String {
        let mut origin = format!("{}@{}", self.url, commit);
        if let Some(folder) = &self.folder {
            origin.push(':');
            origin.push_str(folder);
        }
        origin
    }
}

/// The repository URL of a forge page showing a folder, with the ref and folder it shows;
/// other URLs as they are.
fn split_tree_page(url: &reqwest::Url) -> (reqwest::Url, Option<String>, Option<String>) {
    let segments: Vec<&str> = url
        .path_segments()
        .map(Iterator::collect)
        .unwrap_or_default();
    let marker = segments.iter().enumerate().find_map(|(index, segment)| {
        let after = segments.get(index + 1).copied();
        match (*segment, after) {
            // GitHub `tree`/`blob`, GitLab `-/tree`; Gitea/Forgejo `src/branch|tag|commit`.
            ("tree" | "blob", _) if index >= 2 => Some((index, index + 1)),
            ("src", Some("branch" | "tag" | "commit")) if index >= 2 => Some((index, index + 2)),
            _ => None,
        }
    });
    let Some((cut, reference_at)) = marker else {
        return (url.clone(), None, None);
    };
    let Some(reference) = segments.get(reference_at).filter(|text| !text.is_empty()) else {
        return (url.clone(), None, None);
    };
    let mut owner_repo: Vec<&str> = segments[..cut].to_vec();
    if owner_repo.last() == Some(&"-") {
        owner_repo.pop();
    }
    let mut folder = segments[reference_at + 1..].join("/");
    // A `blob` page shows a file: its folder is the skill's (a `SKILL.md` page, typically).
    if segments[cut] == "blob" {
        folder = folder
            .rsplit_once('/')
            .map(|(parent, _)| parent.to_owned())
            .unwrap_or_default();
    }
    let mut repository = url.clone();
    repository.set_path(&owner_repo.join("/"));
    repository.set_query(None);
    let decoded = |text: &str| percent_decode(text).filter(|text| !text.is_empty());
    (repository, decoded(reference), decoded(&folder))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A ref git will take as a name, never as an option or a revision expression.
fn check_reference(reference: &str) -> Result<(), String> {
    let fits = reference.len() <= 200
        && !reference.starts_with(['-', '/', '.'])
        && !reference.ends_with(['/', '.'])
        && !reference.contains("..")
        && !reference.contains("//")
        && !reference.contains("@{")
        && !reference.ends_with(".lock")
        && reference
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '+'));
    if fits {
        Ok(())
    } else {
        Err(format!("`{reference}` is not a branch, tag or commit name"))
    }
}

/// A folder inside the repository: relative, no `..`, no odd characters.
fn check_folder(folder: &str) -> Result<(), String> {
    let fits = folder.len() <= 400
        && !folder.starts_with('-')
        && folder
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !folder
            .chars()
            .any(|c| c.is_control() || c == '\\' || c == ':');
    if fits {
        Ok(())
    } else {
        Err(format!("`{folder}` is not a folder inside the repository"))
    }
}

/// A skill fetched from a repository: the bundle, the folder it was in, and the commit.
#[derive(Debug)]
pub(crate) struct Fetched {
    /// The skill (its folder name is the archive's top folder).
    pub archived: ArchivedSkill,
    /// The folder it came from (`None`: the top of the repository).
    pub folder: Option<String>,
    /// The commit it came from.
    pub commit: String,
}

/// Fetches the skill `source` names through an egress proxy of `sandbox`.
pub(crate) async fn fetch(source: &GitSource, sandbox: &Sandbox) -> Result<Fetched, GitError> {
    let proxy = sandbox
        .egress_proxy(&[source.host_entry()], Some(MAX_FETCH_BYTES))
        .await
        .map_err(|error| GitError::Fetch(error.to_string()))?;
    // The proxy's own check first, so a refusal says why (git shows only "403").
    let (host, port) = source.destination();
    proxy.check(&host, port).await.map_err(|why| {
        GitError::Source(format!("Souz will not fetch from {}: {why}", source.url))
    })?;
    let work = tempfile::Builder::new()
        .prefix("souz-skill-git-")
        .tempdir()
        .map_err(|error| GitError::Fetch(format!("cannot make a temporary folder: {error}")))?;
    let fetched = tokio::time::timeout(FETCH_TIMEOUT, fetch_into(source, &proxy, work.path()))
        .await
        .map_err(|_| {
            GitError::Fetch(format!(
                "fetching {} took longer than {} seconds",
                source.url,
                FETCH_TIMEOUT.as_secs()
            ))
        })?;
    drop(work);
    fetched
}

async fn fetch_into(
    source: &GitSource,
    proxy: &EgressProxy,
    work: &Path,
) -> Result<Fetched, GitError> {
    let home = work.join("home");
    let repository = work.join("repository.git");
    std::fs::create_dir(&home).map_err(|error| GitError::Fetch(error.to_string()))?;
    let git = Git {
        proxy,
        home: &home,
        repository: &repository,
    };
    git.run(
        &["init", "--quiet", "--bare", "--"],
        Some(&repository),
        "init",
    )
    .await?;
    let wanted = source.reference.as_deref().unwrap_or("HEAD");
    let url = source.url.as_str();
    git.run(
        &[
            "fetch",
            "--quiet",
            "--depth=1",
            "--no-tags",
            "--no-recurse-submodules",
            "--no-write-fetch-head",
            "--",
            url,
            &format!("+{wanted}:refs/souz/skill"),
        ],
        None,
        "fetch",
    )
    .await
    .or_else(|error| fetch_head_hint(error, source))?;
    let commit = git
        .run(
            &["rev-parse", "--verify", "refs/souz/skill^{commit}"],
            None,
            "read",
        )
        .await?;
    let commit = String::from_utf8_lossy(&commit).trim().to_owned();
    let folder = match &source.folder {
        Some(folder) => Some(folder.clone()),
        None => find_skill_folder(&git).await?,
    };
    let tree = match &folder {
        Some(folder) => format!("refs/souz/skill:{folder}"),
        None => "refs/souz/skill^{tree}".to_owned(),
    };
    let is_tree = git
        .run(&["cat-file", "-t", &tree], None, "read")
        .await
        .is_ok_and(|kind| kind.trim_ascii() == b"tree");
    if !is_tree {
        return Err(GitError::Source(format!(
            "{} has no folder `{}` at {}",
            source.url,
            folder.as_deref().unwrap_or("/"),
            source.reference.as_deref().unwrap_or("its default branch")
        )));
    }
    // The skill's folder name is the archive's top folder; at the top of the repository the
    // name is not checked against a folder (the repository's name is not the skill's).
    let prefix = folder
        .as_deref()
        .and_then(|folder| folder.rsplit('/').next())
        .map(|name| format!("--prefix={name}/"));
    let mut args = vec!["archive", "--format=zip"];
    if let Some(prefix) = &prefix {
        args.push(prefix);
    }
    args.push(tree.as_str());
    let zip = git.run(&args, None, "export").await?;
    let archived = read_zip(std::io::Cursor::new(zip))?;
    Ok(Fetched {
        archived,
        folder,
        commit,
    })
}

/// A failed fetch of the default branch when the server has none: say so plainly.
fn fetch_head_hint<T>(error: GitError, source: &GitSource) -> Result<T, GitError> {
    match error {
        GitError::Fetch(message) if source.reference.is_none() && message.contains("HEAD") => {
            Err(GitError::Fetch(format!(
                "{message} (the repository has no default branch: name a branch or tag)"
            )))
        }
        other => Err(other),
    }
}

/// The folder of the one skill in the fetched tree: the top if it has `SKILL.md`, else the
/// only folder that has one; several or none are an error that names them.
async fn find_skill_folder(git: &Git<'_>) -> Result<Option<String>, GitError> {
    let listing = git
        .run(
            &["ls-tree", "-r", "-z", "--name-only", "refs/souz/skill"],
            None,
            "list",
        )
        .await?;
    let mut folders: Vec<String> = listing
        .split(|byte| *byte == 0)
        .filter_map(|path| std::str::from_utf8(path).ok())
        .filter_map(|path| match path.rsplit_once('/') {
            Some((folder, "SKILL.md")) => Some(Some(folder.to_owned())),
            None if path == "SKILL.md" => Some(None),
            _ => None,
        })
        .map(|folder| folder.unwrap_or_default())
        .collect();
    if folders.iter().any(String::is_empty) {
        return Ok(None);
    }
    folders.sort();
    match folders.as_slice() {
        [] => Err(GitError::Source(
            "the repository has no SKILL.md: it holds no skill".to_owned(),
        )),
        [one] => Ok(Some(one.clone())),
        many => {
            let named: Vec<&str> = many
                .iter()
                .take(NAMED_FOLDERS)
                .map(String::as_str)
                .collect();
            let more = many.len().saturating_sub(NAMED_FOLDERS);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            Err(GitError::Source(format!(
                "the repository holds {} skills ({}{more}): name the folder to install",
                many.len(),
                named.join(", ")
            )))
        }
    }
}

/// git, run for one fetch.
struct Git<'a> {
    proxy: &'a EgressProxy,
    home: &'a Path,
    repository: &'a Path,
}

impl Git<'_> {
    /// Runs `git <args>` (in the repository, or with `extra` appended for `init`); its standard
    /// output, or git's message for `step`.
    async fn run(
        &self,
        args: &[&str],
        extra: Option<&Path>,
        step: &str,
    ) -> Result<Vec<u8>, GitError> {
        let mut command = Command::new("git");
        command
            .env_clear()
            .env(
                "PATH",
                command_search_path(crate::config::env::process_environment_os()),
            )
            .env("HOME", self.home)
            .env("XDG_CONFIG_HOME", self.home)
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ALLOW_PROTOCOL", "http:https")
            .env("GIT_LFS_SKIP_SMUDGE", "1")
            .envs(self.proxy.environment())
            .args([
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "credential.helper=",
                "-c",
                "http.followRedirects=initial",
                "-c",
                "protocol.version=2",
            ]);
        match extra {
            Some(path) => {
                command.args(args).arg(path);
            }
            None => {
                command.arg("--git-dir").arg(self.repository).args(args);
            }
        }
        command
            .current_dir(self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|error| {
            GitError::Fetch(format!(
                "cannot run git ({error}); installing from a URL needs git on the PATH"
            ))
        })?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(GitError::Fetch("git's output is not readable".to_owned()));
        };
        // Standard error is drained on its own (keeping its end) so git never blocks on it.
        #[allow(
            clippy::disallowed_methods,
            reason = "drains git's stderr for this call only: awaited after git exits, aborted on failure"
        )]
        let messages = tokio::spawn(drain_tail(stderr));
        let mut out = Vec::new();
        let read = stdout
            .take((MAX_OUTPUT_BYTES + 1) as u64)
            .read_to_end(&mut out)
            .await;
        if out.len() > MAX_OUTPUT_BYTES {
            let _ = child.kill().await;
            messages.abort();
            return Err(GitError::Fetch(format!(
                "the {step} is larger than Souz reads ({} MiB; a skill is {} KiB at most)",
                MAX_OUTPUT_BYTES >> 20,
                MAX_BUNDLE_BYTES >> 10
            )));
        }
        read.map_err(|error| GitError::Fetch(error.to_string()))?;
        let status = child
            .wait()
            .await
            .map_err(|error| GitError::Fetch(error.to_string()))?;
        let err = messages.await.unwrap_or_default();
        if status.success() {
            Ok(out)
        } else {
            Err(GitError::Fetch(format!(
                "git {step} failed: {}",
                last_lines(&String::from_utf8_lossy(&err))
            )))
        }
    }
}

/// Everything `stream` says, of which the last 16 KiB are kept.
async fn drain_tail(mut stream: impl tokio::io::AsyncRead + Unpin) -> Vec<u8> {
    const KEEP: usize = 16 * 1024;
    let mut kept = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(read) = stream.read(&mut chunk).await {
        if read == 0 {
            break;
        }
        kept.extend_from_slice(&chunk[..read]);
        if kept.len() > 2 * KEEP {
            kept.drain(..kept.len() - KEEP);
        }
    }
    kept
}

/// The last few non-empty lines of git's message, on one line.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let start = lines.len().saturating_sub(3);
    let message = lines[start..].join(" ");
    if message.is_empty() {
        "no message".to_owned()
    } else {
        message
    }
}

#[cfg(test)]
mod tests;
