//! Reading a skill from a `.zip` within the loader limits.
//!
//! Invariants:
//! - No entry is written anywhere: entries are read into memory and become a
//!   [`Bundle`](super::bundle::Bundle) only if every limit holds.
//! - Zip-slip: an entry whose name is absolute, has `..` or a backslash is refused (never
//!   "sanitized" into another path). Symlink entries are refused.
//! - Size bombs: the declared size is checked before reading, and no entry is read past the
//!   per-file limit plus one byte whatever it declares; the number of entries is capped.
//! - One top-level folder holding everything is stripped (that folder names the skill).

use std::io::{Read, Seek};

use super::bundle::{Budget, Bundle, LoadError, MAX_FILES, check_path};

/// Most entries (files and folders) read from an archive.
const MAX_ENTRIES: usize = MAX_FILES * 4;

/// A skill read from an archive, with the name of the folder it was in (if one).
#[derive(Debug)]
pub(crate) struct ArchivedSkill {
    /// The bundle.
    pub bundle: Bundle,
    /// The one top-level folder, if the archive had one.
    pub folder: Option<String>,
}

fn zip_error(error: impl std::fmt::Display) -> LoadError {
    LoadError::Io {
        path: "archive".to_owned(),
        message: error.to_string(),
    }
}

/// Reads the skill in the zip archive `reader`.
pub(crate) fn read_zip(reader: impl Read + Seek) -> Result<ArchivedSkill, LoadError> {
    let mut archive = zip::ZipArchive::new(reader).map_err(zip_error)?;
    if archive.len() > MAX_ENTRIES {
        return Err(LoadError::TooManyFiles);
    }
    let mut budget = Budget::default();
    let mut files = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(zip_error)?;
        let name = entry.name().map_err(zip_error)?.into_owned();
        let path = name.trim_end_matches('/');
        check_path(path)?;
        if entry.is_symlink() {
            return Err(LoadError::Symlink(name));
        }
        if entry.is_dir() {
            continue;
        }
        if !entry.is_file() {
            return Err(LoadError::SpecialFile(name));
        }
        let claimed = entry.size();
        budget.admit(path, claimed)?;
        let bytes = budget.read(path, claimed, &mut entry)?;
        files.push((path.to_owned(), bytes));
    }
    let folder = common_folder(&files);
    if let Some(folder) = &folder {
        let prefix = format!("{folder}/");
        for (path, _) in &mut files {
            *path = path[prefix.len()..].to_owned();
        }
    }
    Ok(ArchivedSkill {
        bundle: Bundle::from_files(files)?,
        folder,
    })
}

/// The one folder every file is in, if there is one and `SKILL.md` is not at the top.
fn common_folder(files: &[(String, Vec<u8>)]) -> Option<String> {
    let first = files.first()?.0.split_once('/')?.0.to_owned();
    let prefix = format!("{first}/");
    files
        .iter()
        .all(|(path, _)| path.starts_with(&prefix))
        .then_some(first)
}
