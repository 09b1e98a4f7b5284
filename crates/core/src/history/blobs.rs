//! The kept contents: one file per distinct content, named by its SHA-256 (so equal contents
//! are kept once), compressed with deflate when that makes it smaller, in
//! `<Souz home>/history/blobs/<first two hex digits>/<hash>`, every folder 0700 and every file
//! 0600.
//!
//! Invariants:
//! - Reached only beneath the Souz home's handle, never through a link ([`DaemonFolder`]).
//! - A blob appears whole or not at all: it is written to a fresh temporary name and renamed
//!   into place without replacing; an existing blob of the same hash is left as it is.
//! - Reading checks the content against its name: a damaged blob is an error, never restored.
//! - Not synced to disk one by one: a blob is as durable as the database row that names it
//!   (SQLite runs with `synchronous = NORMAL`): it survives the process being killed, and
//!   [`super::reconcile`] removes blobs no row names.
//!
//! Format: one byte (0 stored as is, 1 deflate), then the data.

use std::io::{Read, Write};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use sha2::{Digest, Sha256};

use super::HistoryError;
use crate::sandbox::beneath::daemon_file::DaemonFolder;
use crate::sandbox::beneath::rename_between;
use crate::sandbox::beneath::walk::staging_name;

const RAW: u8 = 0;
const DEFLATE: u8 = 1;

/// Contents below this size are kept as they are (compression would not pay).
const COMPRESS_FROM: usize = 512;

/// The blob folder.
pub(crate) struct Blobs {
    folder: DaemonFolder,
}

/// The hex SHA-256 of `content`.
pub(crate) fn hash_of(content: &[u8]) -> String {
    hex::encode(Sha256::digest(content))
}

impl Blobs {
    /// Opens (creating, 0700) `history/blobs` in `souz_home`.
    pub(crate) fn open(souz_home: &Path) -> Result<Self, HistoryError> {
        let relative = Path::new(super::FOLDER).join("blobs");
        let folder = DaemonFolder::create(souz_home, &relative, 0o700)?;
        // Created earlier with other bits (by hand, an older build): owner-only all the same.
        let _ = rustix::fs::fchmod(&folder, Mode::from_bits_truncate(0o700));
        Ok(Self { folder })
    }

    /// Keeps `content` under `hash` (its SHA-256) unless it is kept already; returns the bytes
    /// it takes on disk.
    pub(crate) fn put(&self, hash: &str, content: &[u8]) -> Result<u64, HistoryError> {
        let shard = self
            .shard(hash, true)?
            .ok_or_else(|| HistoryError::Files("cannot create a blob folder".into()))?;
        if let Some(existing) = shard.existing(hash)? {
            return Ok(u64::try_from(existing.st_size).unwrap_or(0));
        }
        let encoded = encode(content);
        let temporary = staging_name(std::ffi::OsStr::new(hash));
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&shard, &temporary, flags, Mode::from_bits_truncate(0o600))
            .map_err(|errno| files("create a blob", &errno.into()))?;
        let mut file = std::fs::File::from(fd);
        let written = file.write_all(&encoded).and_then(|()| {
            rename_between(
                (std::os::fd::AsFd::as_fd(&shard), temporary.as_os_str()),
                (std::os::fd::AsFd::as_fd(&shard), std::ffi::OsStr::new(hash)),
                true,
            )
        });
        match written {
            Ok(()) => Ok(encoded.len() as u64),
            Err(error) => {
                let _ = rustix::fs::unlinkat(&shard, &temporary, AtFlags::empty());
                if error.kind() == std::io::ErrorKind::AlreadyExists {
                    Ok(encoded.len() as u64)
                } else {
                    Err(files("write a blob", &error))
                }
            }
        }
    }

    /// The content kept under `hash`, checked against it; at most `limit` bytes.
    pub(crate) fn get(&self, hash: &str, limit: u64) -> Result<Vec<u8>, HistoryError> {
        let missing = || HistoryError::Blob(hash.to_owned());
        let shard = self.shard(hash, false)?.ok_or_else(missing)?;
        let encoded = shard
            .read(hash, limit.saturating_add(1))?
            .ok_or_else(missing)?;
        let content = decode(&encoded, limit).ok_or_else(missing)?;
        if hash_of(&content) != hash {
            return Err(missing());
        }
        Ok(content)
    }

    /// Whether a blob is kept under `hash`.
    #[cfg(test)]
    pub(crate) fn has(&self, hash: &str) -> Result<bool, HistoryError> {
        match self.shard(hash, false)? {
            Some(shard) => Ok(shard.existing(hash)?.is_some()),
            None => Ok(false),
        }
    }

    /// Removes the blob `hash` (no error when it is gone already).
    pub(crate) fn remove(&self, hash: &str) -> Result<(), HistoryError> {
        if let Some(shard) = self.shard(hash, false)? {
            shard.remove_file(hash)?;
        }
        Ok(())
    }

    /// Every kept hash (with temporary files left by a killed process removed on the way).
    pub(crate) fn all(&self) -> Result<Vec<String>, HistoryError> {
        let mut hashes = Vec::new();
        let shards = crate::sandbox::beneath::read_entries(std::os::fd::AsFd::as_fd(&self.folder))
            .map_err(|error| files("list the blobs", &error))?;
        for shard in shards {
            let Some(name) = shard.name.to_str().filter(|name| is_shard(name)) else {
                continue;
            };
            let Some(folder) = self.folder.child(name, None)? else {
                continue;
            };
            let entries = crate::sandbox::beneath::read_entries(std::os::fd::AsFd::as_fd(&folder))
                .map_err(|error| files("list the blobs", &error))?;
            for entry in entries {
                match entry.name.to_str() {
                    Some(hash) if is_hash(hash) && hash.starts_with(name) => {
                        hashes.push(hash.to_owned());
                    }
                    _ => {
                        let _ = folder.remove_file(&entry.name);
                    }
                }
            }
        }
        Ok(hashes)
    }

    fn shard(&self, hash: &str, create: bool) -> Result<Option<DaemonFolder>, HistoryError> {
        if !is_hash(hash) {
            return Err(HistoryError::Blob(hash.to_owned()));
        }
        Ok(self.folder.child(&hash[..2], create.then_some(0o700))?)
    }
}

fn is_hash(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

fn is_shard(name: &str) -> bool {
    name.len() == 2
        && name
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

fn files(what: &str, error: &std::io::Error) -> HistoryError {
    HistoryError::Files(format!("cannot {what}: {error}"))
}

/// The stored form of `content`: deflated when that is smaller.
fn encode(content: &[u8]) -> Vec<u8> {
    if content.len() >= COMPRESS_FROM {
        let mut encoder = flate2::write::DeflateEncoder::new(
            Vec::with_capacity(content.len() / 2 + 1),
            flate2::Compression::fast(),
        );
        encoder.get_mut().push(DEFLATE);
        if encoder.write_all(content).is_ok()
            && let Ok(compressed) = encoder.finish()
            && compressed.len() < content.len() + 1
        {
            return compressed;
        }
    }
    let mut raw = Vec::with_capacity(content.len() + 1);
    raw.push(RAW);
    raw.extend_from_slice(content);
    raw
}

/// The content of a stored form; `None` when it is not one, or holds more than `limit` bytes.
fn decode(encoded: &[u8], limit: u64) -> Option<Vec<u8>> {
    let (&method, data) = encoded.split_first()?;
    match method {
        RAW => (data.len() as u64 <= limit).then(|| data.to_vec()),
        DEFLATE => {
            let mut content = Vec::new();
            flate2::read::DeflateDecoder::new(data)
                .take(limit.saturating_add(1))
                .read_to_end(&mut content)
                .ok()?;
            (content.len() as u64 <= limit).then_some(content)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_round_trip_once_each_and_damage_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(home.path()).unwrap();
        let text = "line of text\n".repeat(1000);
        let hash = hash_of(text.as_bytes());
        let stored = blobs.put(&hash, text.as_bytes()).unwrap();
        assert!(
            stored < text.len() as u64 / 4,
            "text is compressed: {stored}"
        );
        assert_eq!(
            blobs.put(&hash, text.as_bytes()).unwrap(),
            stored,
            "kept once"
        );
        assert_eq!(blobs.get(&hash, 1 << 20).unwrap(), text.as_bytes());
        let binary: Vec<u8> = (0..4096u64)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let binary_hash = hash_of(&binary);
        blobs.put(&binary_hash, &binary).unwrap();
        assert_eq!(blobs.get(&binary_hash, 1 << 20).unwrap(), binary);
        assert!(blobs.get(&hash, 10).is_err(), "over the limit");
        let mut all = blobs.all().unwrap();
        all.sort();
        let mut expected = vec![hash.clone(), binary_hash.clone()];
        expected.sort();
        assert_eq!(all, expected);
        // A blob whose bytes were changed is refused, not returned.
        let path = home
            .path()
            .join("history/blobs")
            .join(&binary_hash[..2])
            .join(&binary_hash);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert!(blobs.get(&binary_hash, 1 << 20).is_err());
        blobs.remove(&binary_hash).unwrap();
        assert!(!blobs.has(&binary_hash).unwrap());
        assert!(blobs.get(&"0".repeat(3), 10).is_err(), "not a hash");
    }

    #[cfg(unix)]
    #[test]
    fn folders_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let blobs = Blobs::open(home.path()).unwrap();
        let hash = hash_of(b"x");
        blobs.put(&hash, b"x").unwrap();
        for folder in ["history", "history/blobs"] {
            let mode = std::fs::metadata(home.path().join(folder))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{folder}: {mode:o}");
        }
        let shard = home.path().join("history/blobs").join(&hash[..2]);
        assert_eq!(
            std::fs::metadata(&shard).unwrap().permissions().mode() & 0o077,
            0
        );
        let file = shard.join(&hash);
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o077,
            0
        );
    }
}
