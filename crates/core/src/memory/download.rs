//! Fetching a model's files into the Souz home (the memory model's, a local LLM's, a speech
//! model's): through the SSRF-safe web client, resumable (an interrupted file continues with an
//! HTTP `Range` request from what its `.part` file holds), and verified against its pinned
//! digest ([`FileDigest`]: a SHA-256, or a small file's git blob id as a model hub lists it)
//! before it takes its name.
//!
//! Invariants: a file under its final name is complete and matched its digest when it was
//! written (nothing else renames `.part` files); a mismatch removes the `.part` file, so the
//! next attempt starts afresh instead of resuming garbage; a git blob is never written past
//! its listed size (the size is part of its id); progress is reported at most every
//! [`PROGRESS_STEP`] bytes per file (and at its end).

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::llm::local::hub::{HubDigest, git_blob_hasher};
use crate::sandbox::net::{WebClient, WebError};
use crate::sandbox::{DaemonFileError, DaemonFolder};

/// Bytes between two progress reports of one file.
pub(crate) const PROGRESS_STEP: u64 = 4 << 20;

/// What a downloaded file must hash to. Every variant names at least one digest, so nothing
/// is fetched that could not be verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileDigest<'a> {
    /// Its SHA-256, lowercase hex (pinned in the code, or a hub's LFS object id).
    Sha256(&'a str),
    /// A small file as a model hub keeps it in git: its blob id (lowercase hex, see
    /// [`crate::llm::local::hub::git_blob_id`]), and a SHA-256 pinned besides when one is known
    /// (both must match). Its `bytes` is exact: more is refused.
    GitBlob {
        /// The git blob id.
        id: &'a str,
        /// A SHA-256 pinned in the code, when known.
        sha256: Option<&'a str>,
    },
}

impl<'a> FileDigest<'a> {
    /// What a model hub's listing says, with the SHA-256 a catalog pins besides (for a git
    /// blob; an LFS file's listed SHA-256 was compared with it by [`hub::agree`]).
    ///
    /// [`hub::agree`]: crate::llm::local::hub::agree
    pub fn listed(digest: &'a HubDigest, pinned_sha256: Option<&'a str>) -> Self {
        match digest {
            HubDigest::Sha256(sha256) => Self::Sha256(sha256),
            HubDigest::GitBlob(id) => Self::GitBlob {
                id,
                sha256: pinned_sha256,
            },
        }
    }

    /// The SHA-256 it names, if any.
    pub fn sha256(&self) -> Option<&'a str> {
        match *self {
            Self::Sha256(sha256) => Some(sha256),
            Self::GitBlob { sha256, .. } => sha256,
        }
    }

    /// The exact size a git blob must not exceed.
    fn exact_size(&self, bytes: u64) -> Option<u64> {
        matches!(self, Self::GitBlob { .. }).then_some(bytes)
    }
}

/// One file of a model, pinned (in the code, or by a model hub's metadata at a pinned commit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFile<'a> {
    /// The file's name in the model's folder.
    pub name: &'a str,
    /// Where it is downloaded from.
    pub url: &'a str,
    /// What it must hash to.
    pub digest: FileDigest<'a>,
    /// Its size in bytes (for progress before the server says; exact for a git blob).
    pub bytes: u64,
}

/// Why a download failed.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The request failed or was refused.
    #[error(transparent)]
    Web(#[from] WebError),
    /// The file arrived but is not the pinned one (the partial file was removed).
    #[error("{name} does not match its checksum (expected {expected}, got {actual}); removed")]
    Checksum {
        /// The file.
        name: String,
        /// The pinned digest (`SHA-256 …` or `git blob …`).
        expected: String,
        /// What arrived.
        actual: String,
    },
    /// The server sent more than a git blob's listed size (the partial file was removed).
    #[error("{name} is longer than the {bytes} bytes it is listed with; removed")]
    Oversized {
        /// The file.
        name: String,
        /// Its listed size.
        bytes: u64,
    },
    /// The model hub could not say which file to fetch and its SHA-256.
    #[error(transparent)]
    Hub(#[from] crate::llm::local::hub::HubError),
    /// Another download of the same model is running.
    #[error("the model is being downloaded already")]
    Busy,
    /// Reading or writing the model folder failed.
    #[error("model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DownloadError + '_ {
    move |source| DownloadError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Progress of one file: bytes of it on disk so far and its expected size.
pub(crate) type Progress<'a> = &'a (dyn Fn(&ModelFile<'_>, u64) + Send + Sync);

/// The SHA-256 of a file, lowercase hex (read in a blocking task).
#[cfg(test)]
pub(crate) async fn sha256_file(path: &Path) -> Result<String, DownloadError> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    let hashes = hashes_of(file, path, true, false).await?;
    Ok(hashes.sha256.unwrap_or_default())
}

/// The model folder `dir`, created where missing: its parent (in the Souz home, created by
/// path) is trusted,
/// and `dir` itself must not be a link ([`DaemonFolder`]); files in it are used by name
/// inside that handle, so a link planted at a `.part` or model file is never followed.
fn model_folder(dir: &Path) -> Result<DaemonFolder, DownloadError> {
    let (anchor, relative) = match (dir.parent(), dir.file_name()) {
        (Some(parent), Some(name)) => (parent, Path::new(name)),
        _ => (dir, Path::new("")),
    };
    std::fs::create_dir_all(anchor).map_err(io(anchor))?;
    DaemonFolder::create(anchor, relative, 0o700).map_err(refused)
}

/// The model folder `relative` beneath the trusted folder `anchor` (the Souz home), each
/// missing folder on the way created `0700` inside its parent's handle, no link followed.
pub(crate) fn model_folder_beneath(
    anchor: &Path,
    relative: &Path,
) -> Result<DaemonFolder, DownloadError> {
    DaemonFolder::create(anchor, relative, 0o700).map_err(refused)
}

/// A refusal or failure of a model folder operation.
fn refused(error: DaemonFileError) -> DownloadError {
    DownloadError::Io {
        path: error.path().to_owned(),
        source: error.into_io(),
    }
}

/// What a file hashes to: the digests asked for, lowercase hex.
#[derive(Debug, Default)]
struct Hashes {
    sha256: Option<String>,
    git_blob: Option<String>,
}

/// The SHA-256 and/or git blob id of the opened `file` (at `path`, for errors), read once in a
/// blocking task.
async fn hashes_of(
    file: std::fs::File,
    path: &Path,
    sha256: bool,
    git_blob: bool,
) -> Result<Hashes, DownloadError> {
    tokio::task::spawn_blocking(move || -> std::io::Result<Hashes> {
        use sha1::Digest as _;
        use std::io::Read;
        let mut file = file;
        let size = file.metadata()?.len();
        let mut sha256_hasher = sha256.then(Sha256::new);
        let mut blob_hasher = git_blob.then(|| git_blob_hasher(size));
        let mut buffer = vec![0_u8; 1 << 16];
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            let chunk = buffer.get(..read).unwrap_or_default();
            if let Some(hasher) = &mut sha256_hasher {
                hasher.update(chunk);
            }
            if let Some(hasher) = &mut blob_hasher {
                hasher.update(chunk);
            }
        }
        Ok(Hashes {
            sha256: sha256_hasher.map(|hasher| hex::encode(hasher.finalize())),
            git_blob: blob_hasher.map(|hasher| hex::encode(hasher.finalize())),
        })
    })
    .await
    .map_err(|error| DownloadError::Io {
        path: path.to_owned(),
        source: std::io::Error::other(error.to_string()),
    })?
    .map_err(io(path))
}

/// Checks the `written` file (at `path`) against `digest`: `Some((expected, actual))` when it
/// is not the pinned file.
async fn mismatch(
    written: std::fs::File,
    path: &Path,
    digest: FileDigest<'_>,
) -> Result<Option<(String, String)>, DownloadError> {
    let blob_id = match digest {
        FileDigest::GitBlob { id, .. } => Some(id),
        FileDigest::Sha256(_) => None,
    };
    let pinned_sha256 = digest.sha256();
    let hashes = hashes_of(written, path, pinned_sha256.is_some(), blob_id.is_some()).await?;
    if let (Some(expected), Some(actual)) = (blob_id, hashes.git_blob)
        && expected != actual
    {
        return Ok(Some((
            format!("git blob {expected}"),
            format!("git blob {actual}"),
        )));
    }
    if let (Some(expected), Some(actual)) = (pinned_sha256, hashes.sha256)
        && expected != actual
    {
        return Ok(Some((expected.to_owned(), actual)));
    }
    Ok(None)
}

/// [`fetch_file_from`] its own URL (the tests').
#[cfg(test)]
pub(crate) async fn fetch_file(
    client: &WebClient,
    dir: &Path,
    file: &ModelFile<'_>,
    progress: Progress<'_>,
    cancel: &CancellationToken,
) -> Result<(), DownloadError> {
    let at = Source {
        file,
        url: file.url,
    };
    fetch_file_from(client, dir, at, progress, cancel).await
}

/// A model file and where to fetch it (its pinned URL or a mirror's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    /// The file (name, checksum, size).
    pub file: &'a ModelFile<'a>,
    /// Where it is fetched from.
    pub url: &'a str,
}

/// Fetches `source.file` from `source.url` into `dir` unless it is there already; resumes a
/// `.part` file left by an interrupted attempt.
pub(crate) async fn fetch_file_from(
    client: &WebClient,
    dir: &Path,
    source: Source<'_>,
    progress: Progress<'_>,
    cancel: &CancellationToken,
) -> Result<(), DownloadError> {
    let folder = model_folder(dir)?;
    fetch_into(client, &folder, source, progress, cancel).await
}

/// [`fetch_file_from`] into a model folder the caller opened (beneath a trusted folder's
/// handle, as [`DaemonFolder::create`] does).
pub(crate) async fn fetch_into(
    client: &WebClient,
    folder: &DaemonFolder,
    source: Source<'_>,
    progress: Progress<'_>,
    cancel: &CancellationToken,
) -> Result<(), DownloadError> {
    let (file, url) = (source.file, source.url);
    if folder.existing(file.name).map_err(refused)?.is_some() {
        progress(file, file.bytes);
        return Ok(());
    }
    let part_name = format!("{}.part", file.name);
    let part = folder.path().join(&part_name);
    let have = folder
        .existing(&part_name)
        .map_err(refused)?
        .map_or(0, |stat| u64::try_from(stat.st_size).unwrap_or(0));
    let mut request = client.request(reqwest::Method::GET, url)?;
    if have > 0 {
        request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let mut response = client.send(request, cancel).await?;
    let status = response.status().as_u16();
    let resumed = status == 206 && have > 0;
    if !(200..300).contains(&status) {
        // 416: the part file is longer than the file; start again next time.
        if status == 416 {
            let _ = folder.remove_file(&part_name);
        }
        return Err(WebError::Status {
            url: url.to_owned(),
            status,
        }
        .into());
    }
    let output = folder
        .open_for_writing(&part_name, resumed, 0o600)
        .map_err(refused)?;
    let mut output = tokio::fs::File::from_std(output);
    let mut written = if resumed { have } else { 0 };
    let mut reported = written;
    let limit = file.digest.exact_size(file.bytes);
    progress(file, written);
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk.map_err(|error| WebError::Network {
                url: url.to_owned(),
                reason: error.to_string(),
            })?,
            () = cancel.cancelled() => return Err(WebError::Cancelled.into()),
        };
        let Some(chunk) = chunk else { break };
        written += chunk.len() as u64;
        if let Some(bytes) = limit
            && written > bytes
        {
            drop(output);
            let _ = folder.remove_file(&part_name);
            return Err(DownloadError::Oversized {
                name: file.name.to_owned(),
                bytes,
            });
        }
        output.write_all(&chunk).await.map_err(io(&part))?;
        if written - reported >= PROGRESS_STEP {
            reported = written;
            progress(file, written);
        }
    }
    output.flush().await.map_err(io(&part))?;
    drop(output);
    let written_file = folder
        .open_file(&part_name)
        .map_err(refused)?
        .ok_or_else(|| io(&part)(std::io::ErrorKind::NotFound.into()))?;
    if let Some((expected, actual)) = mismatch(written_file, &part, file.digest).await? {
        let _ = folder.remove_file(&part_name);
        return Err(DownloadError::Checksum {
            name: file.name.to_owned(),
            expected,
            actual,
        });
    }
    folder
        .rename(&part_name, file.name, false)
        .map_err(refused)?;
    progress(file, written);
    Ok(())
}
