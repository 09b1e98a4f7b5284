//! The file a reader reads, opened once and checked on the handle.
//!
//! Invariants: the caller opens the file (the daemon opens it beneath the path's root following
//! no symlink at any level, so a folder swapped for a link after the check fails the open,
//! without waiting on a FIFO), and the "is it a regular file, how big is it" checks are made
//! on the opened handle, so a file swapped for a link, a pipe or a device after the plan
//! looked at it is refused, never read.
//! Every reader (format detection, PDF, ZIP packages, calamine, CSV) reads through this handle
//! instead of opening the path again. (The file tools follow the same rule.)

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::{DOCUMENT_BYTE_LIMIT, DocumentError, io_error};

/// A regular file opened for reading.
#[derive(Debug)]
pub struct SourceFile {
    file: File,
    path: PathBuf,
    size: u64,
}

impl SourceFile {
    /// Takes a file already opened (at `path`) if it is a regular file.
    pub fn from_file(file: File, path: &Path) -> Result<Self, DocumentError> {
        let metadata = file.metadata().map_err(io_error)?;
        if !metadata.is_file() {
            return Err(DocumentError::Unsupported(
                "this is not a regular file (a pipe, device or link), so it is not read".into(),
            ));
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
            size: metadata.len(),
        })
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size in bytes when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether its name ends in `.extension` (any case).
    pub fn has_extension(&self, extension: &str) -> bool {
        self.path
            .extension()
            .is_some_and(|found| found.eq_ignore_ascii_case(extension))
    }

    /// A buffered reader from the start of the file. Readers share the handle's position, so
    /// use one at a time.
    pub fn reader(&self) -> Result<BufReader<File>, DocumentError> {
        let mut file = self.file.try_clone().map_err(io_error)?;
        file.seek(SeekFrom::Start(0)).map_err(io_error)?;
        Ok(BufReader::new(file))
    }

    /// At most `limit` bytes from the start; also says whether that was the whole file.
    pub fn prefix(&self, limit: usize) -> Result<(Vec<u8>, bool), DocumentError> {
        let mut bytes = Vec::new();
        self.reader()?
            .take(limit as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        let complete = bytes.len() <= limit;
        bytes.truncate(limit);
        Ok((bytes, complete))
    }

    /// The whole file, refused past `limit` bytes (checked on the handle and while reading, as
    /// the file may grow).
    pub fn bytes(&self, limit: u64) -> Result<Vec<u8>, DocumentError> {
        self.check_size(limit)?;
        let mut bytes = Vec::with_capacity(usize::try_from(self.size).unwrap_or(0));
        self.reader()?
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64, limit));
        }
        Ok(bytes)
    }

    /// Refuses a file over `limit` bytes.
    pub fn check_size(&self, limit: u64) -> Result<(), DocumentError> {
        if self.size > limit {
            Err(too_large(self.size, limit))
        } else {
            Ok(())
        }
    }

    /// Refuses a file over [`DOCUMENT_BYTE_LIMIT`].
    pub fn check_document_size(&self) -> Result<(), DocumentError> {
        self.check_size(DOCUMENT_BYTE_LIMIT)
    }
}

fn too_large(size: u64, limit: u64) -> DocumentError {
    DocumentError::TooLarge(format!(
        "it has {} MiB; the limit is {} MiB",
        size >> 20,
        limit >> 20
    ))
}
