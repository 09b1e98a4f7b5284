//! Fetching a local embedding model's files into the Souz home: through the SSRF-safe web
//! client, resumable (an interrupted file continues with an HTTP `Range` request from what
//! its `.part` file holds), and verified against the pinned SHA-256 before it takes its name.
//!
//! Invariants: a file under its final name is complete and matched its checksum when it was
//! written (nothing else renames `.part` files); a checksum mismatch removes the `.part` file,
//! so the next attempt starts afresh instead of resuming garbage; progress is reported at most
//! every [`PROGRESS_STEP`] bytes per file (and at its end).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::sandbox::net::{WebClient, WebError};
use crate::sandbox::{DaemonFileError, DaemonFolder};

/// Bytes between two progress reports of one file.
pub(crate) const PROGRESS_STEP: u64 = 4 << 20;

/// One file of a model, pinned (in the code, or by a model hub's metadata at a pinned commit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFile<'a> {
    /// The file's name in the model's folder.
    pub name: &'a str,
    /// Where it is downloaded from.
    pub url: &'a str,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'a str,
    /// Its size in bytes (for progress before the server says).
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
        /// The pinned SHA-256.
        expected: String,
        /// What arrived.
        actual: String,
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
    sha256_of(file, path).await
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

/// A refusal or failure of a model folder operation.
fn refused(error: DaemonFileError) -> DownloadError {
    DownloadError::Io {
        path: error.path().to_owned(),
        source: error.into_io(),
    }
}

/// The SHA-256 of the opened `file` (at `path`, for errors), read in a blocking task.
async fn sha256_of(file: std::fs::File, path: &Path) -> Result<String, DownloadError> {
    tokio::task::spawn_blocking(move || -> std::io::Result<String> {
        use std::io::Read;
        let mut file = file;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0_u8; 1 << 16];
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            hasher.update(buffer.get(..read).unwrap_or_default());
        }
        Ok(hex::encode(hasher.finalize()))
    })
    .await
    .map_err(|error| DownloadError::Io {
        path: path.to_owned(),
        source: std::io::Error::other(error.to_string()),
    })?
    .map_err(io(path))
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
    let (file, url) = (source.file, source.url);
    let folder = model_folder(dir)?;
    if folder.existing(file.name).map_err(refused)?.is_some() {
        progress(file, file.bytes);
        return Ok(());
    }
    let part_name = format!("{}.part", file.name);
    let part = dir.join(&part_name);
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
        output.write_all(&chunk).await.map_err(io(&part))?;
        written += chunk.len() as u64;
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
    let actual = sha256_of(written_file, &part).await?;
    if actual != file.sha256 {
        let _ = folder.remove_file(&part_name);
        return Err(DownloadError::Checksum {
            name: file.name.to_owned(),
            expected: file.sha256.to_owned(),
            actual,
        });
    }
    folder
        .rename(&part_name, file.name, false)
        .map_err(refused)?;
    progress(file, written);
    Ok(())
}
