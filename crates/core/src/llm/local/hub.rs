//! Model files pinned by a model hub's own metadata (the Hugging Face Hub's API, or a mirror
//! that speaks it, such as `hf-mirror.com`): a profile names a repository, a **commit** and a
//! path ([`HubPin`]); the hub is asked for that commit's file list
//! (`GET <hub>/api/models/<repo>/tree/<commit>[/<folder>]`, paged by `Link: <…>; rel="next"`),
//! which gives the file's digest and size, and the file is fetched from
//! `<hub>/<repo>/resolve/<commit>/<path>` (the hub redirects to its CDN; the SSRF-safe client
//! checks every hop) and verified against that digest by the downloader before it takes its
//! name.
//!
//! Which digest: a large file is stored in LFS, and its tree entry is an LFS pointer carrying
//! the SHA-256 of the content ([`HubDigest::Sha256`]). A small file (a model's `config.json`,
//! `tokenizer.json`) is a plain git blob: the hub lists only its git object id, the SHA-1 of
//! `blob <size>\0` followed by the content ([`HubDigest::GitBlob`], [`git_blob_id`]).
//!
//! Why a commit is enough of a pin: a commit names its tree, and the tree names each entry by
//! its git object id — the blob itself for a small file, the LFS pointer (with the SHA-256
//! inside it) for a large one — so what a commit lists cannot change after the pin was
//! written, while a branch (`main`) could move under it. That chain is SHA-1 all the way down
//! (commit, tree, pointer blob), so checking a small file by its blob's SHA-1 is exactly as
//! strong as the commit pin itself: forging the blob would take the same SHA-1 collision as
//! forging the pointer that carries an LFS file's SHA-256. Where a catalog knows a file's
//! SHA-256 independently, it pins that too and the hub's answer must agree ([`agree`]).
//!
//! Invariants: only a 40-hex commit is ever asked for ([`HubPin::check`]); a listing is read
//! bounded (each page at most the client's body limit, at most [`MAX_PAGES`] pages, next pages
//! only on the hub's own origin); nothing is accepted without a digest to verify against: an
//! LFS entry needs a 64-hex SHA-256, a plain entry a 40-hex blob id, its size, and at most
//! [`MAX_GIT_BLOB_BYTES`] (a plain entry larger than that is refused: the hub stores large
//! files in LFS, and the downloader holds a blob to exactly its listed size).

use reqwest::Url;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::sandbox::net::{WebClient, WebError};

/// Pages of a folder's listing read before giving up.
pub(crate) const MAX_PAGES: usize = 20;

/// The largest file accepted as a plain git blob (verified by its blob id). The Hugging Face
/// Hub keeps files over 10 MB in LFS, so a real config or tokenizer is far below this.
pub const MAX_GIT_BLOB_BYTES: u64 = 16 << 20;

/// Where a profile's file lives on the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubPin {
    /// `owner/name`.
    pub repo: &'static str,
    /// A commit (40 lowercase hex digits), never a branch or tag.
    pub revision: &'static str,
    /// The file's path in the repository.
    pub path: &'static str,
}

/// What the hub's listing says a file's content hashes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubDigest {
    /// A large (LFS) file: the SHA-256 of its content (the LFS object id), lowercase hex.
    Sha256(String),
    /// A small file kept in git: its blob id ([`git_blob_id`]), lowercase hex.
    GitBlob(String),
}

/// The file a pin resolves to, as the hub lists it at that commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    /// What its content must hash to.
    pub digest: HubDigest,
    /// Its size in bytes.
    pub bytes: u64,
    /// Where it is downloaded from.
    pub url: String,
}

/// Why a pin could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// The pin itself is malformed (a code error, caught by the profiles' test).
    #[error("the model pin {0} is not a repository, a 40-hex commit and a path")]
    BadPin(String),
    /// `[llm] local_model_hub` is not an http(s) URL.
    #[error("the model hub `{0}` is not an http:// or https:// URL")]
    BadHub(String),
    /// The hub has no such repository or commit.
    #[error("the model hub has no commit {revision} of {repo}")]
    NotFound {
        /// The repository.
        repo: String,
        /// The commit.
        revision: String,
    },
    /// The commit has no such file.
    #[error("{repo} at {revision} has no file {path}")]
    FileMissing {
        /// The repository.
        repo: String,
        /// The commit.
        revision: String,
        /// The path asked for.
        path: String,
    },
    /// The file is there but the hub gives no digest Souz can check.
    #[error(
        "the model hub lists {path} without a digest to check it by (an LFS SHA-256, or a git \
         blob id and size); refused"
    )]
    NoDigest {
        /// The path.
        path: String,
    },
    /// A file kept in git (not LFS) is larger than Souz accepts by its blob id.
    #[error(
        "{path} is kept in git rather than LFS and is {bytes} bytes, more than the {limit} \
         bytes Souz verifies by a git blob id; refused",
        limit = MAX_GIT_BLOB_BYTES
    )]
    TooLargeForGit {
        /// The path.
        path: String,
        /// Its listed size.
        bytes: u64,
    },
    /// The hub's listing disagrees with what the catalog pins of the file.
    #[error("the model hub lists {path} with {listed}, but Souz pins {pinned}; refused")]
    PinMismatch {
        /// The path.
        path: String,
        /// What Souz pins (a SHA-256 or a size).
        pinned: String,
        /// What the hub lists.
        listed: String,
    },
    /// The listing is not what the hub's API answers.
    #[error("the model hub's file list is not readable: {0}")]
    Listing(String),
    /// The listing went on for more than [`MAX_PAGES`] pages, or its next page is elsewhere.
    #[error("the model hub's file list {0}")]
    Paging(&'static str),
    /// The request failed, was refused, or answered an error status.
    #[error(transparent)]
    Web(#[from] WebError),
}

/// One entry of a tree listing (the fields Souz reads; others are ignored).
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    /// The git object id (for a plain file, its blob id).
    #[serde(default)]
    oid: Option<String>,
    /// The size of the content.
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    lfs: Option<Lfs>,
}

#[derive(Debug, Deserialize)]
struct Lfs {
    oid: String,
    size: u64,
}

/// Whether `text` is `digits` lowercase hex digits.
fn is_lower_hex(text: &str, digits: usize) -> bool {
    text.len() == digits
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_commit(revision: &str) -> bool {
    is_lower_hex(revision, 40)
}

/// The hasher of a git blob of `size` bytes: SHA-1 fed `blob <size>\0`; the content follows.
pub(crate) fn git_blob_hasher(size: u64) -> sha1::Sha1 {
    use sha1::Digest as _;
    let mut hasher = sha1::Sha1::new();
    hasher.update(format!("blob {size}\0").as_bytes());
    hasher
}

/// The git blob id of `content` (what `git hash-object` prints), lowercase hex.
pub fn git_blob_id(content: &[u8]) -> String {
    use sha1::Digest as _;
    let mut hasher = git_blob_hasher(content.len() as u64);
    hasher.update(content);
    hex::encode(hasher.finalize())
}

fn is_name(part: &str) -> bool {
    !part.is_empty()
        && part != "."
        && part != ".."
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl HubPin {
    /// Refuses a pin that is not `owner/name`, a 40-hex commit and a relative path of plain
    /// names (nothing that could reshape the URLs built from it).
    pub fn check(&self) -> Result<(), HubError> {
        let repo_ok = self
            .repo
            .split_once('/')
            .is_some_and(|(owner, name)| is_name(owner) && is_name(name));
        let path_ok = self.path.split('/').all(is_name);
        if repo_ok && path_ok && is_commit(self.revision) {
            Ok(())
        } else {
            Err(HubError::BadPin(format!(
                "{}@{}:{}",
                self.repo, self.revision, self.path
            )))
        }
    }

    /// The file's name (the path's last part).
    pub fn file_name(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }

    fn folder(&self) -> Option<&'static str> {
        self.path.rsplit_once('/').map(|(folder, _)| folder)
    }

    /// The listing of the pin's folder at its commit, under `hub`.
    fn tree_url(&self, hub: &str) -> String {
        let mut url = format!("{hub}/api/models/{}/tree/{}", self.repo, self.revision);
        if let Some(folder) = self.folder() {
            url.push('/');
            url.push_str(folder);
        }
        url
    }

    /// The file's page at its commit, under `hub` (for people: it shows the SHA-256).
    pub fn page_url(&self, hub: &str) -> String {
        let hub = hub.trim().trim_end_matches('/');
        format!("{hub}/{}/blob/{}/{}", self.repo, self.revision, self.path)
    }

    /// Where the file is downloaded from, under `hub`.
    pub fn resolve_url(&self, hub: &str) -> String {
        format!(
            "{hub}/{}/resolve/{}/{}",
            self.repo, self.revision, self.path
        )
    }
}

/// `hub` without its trailing slashes, checked to be an http(s) URL.
fn hub_base(hub: &str) -> Result<String, HubError> {
    let base = hub.trim().trim_end_matches('/');
    let parsed = Url::parse(base).map_err(|_| HubError::BadHub(hub.to_owned()))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(HubError::BadHub(hub.to_owned()));
    }
    Ok(base.to_owned())
}

/// The `rel="next"` target of a `Link` header, if any.
fn next_link(header: &str) -> Option<&str> {
    header.split(',').find_map(|link| {
        let (target, params) = link.split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .any(|param| {
                let param = param.trim();
                param == "rel=\"next\"" || param == "rel=next"
            })
            .then_some(target)
    })
}

/// Asks `hub` for `pin`'s file at its commit: its SHA-256, size and download URL.
pub async fn resolve(
    client: &WebClient,
    hub: &str,
    pin: &HubPin,
    cancel: &CancellationToken,
) -> Result<HubFile, HubError> {
    pin.check()?;
    let base = hub_base(hub)?;
    let origin = Url::parse(&base)
        .map_err(|_| HubError::BadHub(hub.to_owned()))?
        .origin();
    let mut page_url = pin.tree_url(&base);
    for _ in 0..MAX_PAGES {
        let request = client
            .request(reqwest::Method::GET, &page_url)?
            .header(reqwest::header::ACCEPT, "application/json");
        let response = client.send(request, cancel).await?;
        let status = response.status().as_u16();
        if status == 404 {
            return Err(HubError::NotFound {
                repo: pin.repo.to_owned(),
                revision: pin.revision.to_owned(),
            });
        }
        if !(200..300).contains(&status) {
            return Err(WebError::Status {
                url: page_url,
                status,
            }
            .into());
        }
        let next = response
            .headers()
            .get(reqwest::header::LINK)
            .and_then(|value| value.to_str().ok())
            .and_then(next_link)
            .map(str::to_owned);
        let body = client.read_body(response, cancel).await?;
        let entries: Vec<Entry> =
            serde_json::from_slice(&body).map_err(|error| HubError::Listing(error.to_string()))?;
        if let Some(entry) = entries.into_iter().find(|entry| entry.path == pin.path) {
            return file_of(entry, pin, &base);
        }
        let Some(next) = next else {
            return Err(HubError::FileMissing {
                repo: pin.repo.to_owned(),
                revision: pin.revision.to_owned(),
                path: pin.path.to_owned(),
            });
        };
        let next = Url::parse(&page_url)
            .and_then(|here| here.join(&next))
            .map_err(|_| HubError::Paging("names a next page that is not a URL"))?;
        if next.origin() != origin {
            return Err(HubError::Paging("sends its next page to another site"));
        }
        page_url = next.to_string();
    }
    Err(HubError::Paging("goes on for more pages than Souz reads"))
}

fn file_of(entry: Entry, pin: &HubPin, base: &str) -> Result<HubFile, HubError> {
    let path = || pin.path.to_owned();
    if entry.kind != "file" {
        return Err(HubError::FileMissing {
            repo: pin.repo.to_owned(),
            revision: pin.revision.to_owned(),
            path: path(),
        });
    }
    let (digest, bytes) = match entry.lfs {
        Some(lfs) => {
            let digest = lfs.oid.to_ascii_lowercase();
            if !is_lower_hex(&digest, 64) {
                return Err(HubError::NoDigest { path: path() });
            }
            (HubDigest::Sha256(digest), lfs.size)
        }
        None => {
            let (Some(oid), Some(bytes)) = (entry.oid, entry.size) else {
                return Err(HubError::NoDigest { path: path() });
            };
            if bytes > MAX_GIT_BLOB_BYTES {
                return Err(HubError::TooLargeForGit {
                    path: path(),
                    bytes,
                });
            }
            let oid = oid.to_ascii_lowercase();
            if !is_lower_hex(&oid, 40) {
                return Err(HubError::NoDigest { path: path() });
            }
            (HubDigest::GitBlob(oid), bytes)
        }
    };
    Ok(HubFile {
        digest,
        bytes,
        url: pin.resolve_url(base),
    })
}

/// Checks the hub's answer for `path` against what a catalog pins of it besides the commit: its
/// SHA-256 (compared here when the hub lists one; a git blob's content is checked against it
/// after the download) and its size.
pub fn agree(
    file: &HubFile,
    path: &str,
    sha256: Option<&str>,
    bytes: Option<u64>,
) -> Result<(), HubError> {
    let mismatch = |pinned: String, listed: String| HubError::PinMismatch {
        path: path.to_owned(),
        pinned,
        listed,
    };
    if let Some(pinned) = bytes
        && pinned != file.bytes
    {
        return Err(mismatch(
            format!("{pinned} bytes"),
            format!("{} bytes", file.bytes),
        ));
    }
    if let (Some(pinned), HubDigest::Sha256(listed)) = (sha256, &file.digest)
        && pinned != listed
    {
        return Err(mismatch(
            format!("SHA-256 {pinned}"),
            format!("SHA-256 {listed}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
