//! Path resolution: from a path a model or a person wrote to the absolute path Souz would
//! really touch.
//!
//! The steps, in order: trim; strip one pair of surrounding quotes or backticks; refuse
//! characters that could disguise a path (controls, bidirectional controls, invisible
//! characters, look-alikes of `.`, `/`, `\` and `~`); turn a `file://` URL into its path; expand
//! `~`, `~/…`, `$HOME` and `${HOME}` (never `~otheruser`); make relative paths relative to the
//! user's home; remove `.` and `..` lexically; then walk the path component by component on the
//! real filesystem, following every symbolic link (also dangling ones and links found inside
//! link targets) until the first component that does not exist.
//!
//! Invariants:
//! - The result of [`resolve_real`] is absolute, has no `.`/`..`, and every component that
//!   exists is not a symbolic link: it is the location the kernel would reach (modulo races
//!   with other processes changing the filesystem between resolution and use).
//! - Symbolic-link loops end with an error after [`MAX_SYMLINK_HOPS`] links, like the kernel.
//! - Protected-path comparison ([`FoldedPath`]) folds Unicode normalization always and letter
//!   case on platforms whose default filesystem ignores case, so `~/.SSH` is `~/.ssh` on macOS.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// Symbolic links followed while resolving one path before giving up (Linux's `MAXSYMLINKS`).
pub(crate) const MAX_SYMLINK_HOPS: usize = 40;

/// Whether letter case is ignored when matching protected paths on this platform: macOS
/// (APFS and HFS+ by default) and Windows treat `~/.SSH` and `~/.ssh` as the same folder.
pub(crate) const CASE_INSENSITIVE_FILESYSTEM: bool =
    cfg!(any(target_os = "macos", target_os = "windows"));

/// Why a path could not be turned into an absolute candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputError(pub String);

/// Why the filesystem walk failed.
#[derive(Debug)]
pub(crate) enum WalkError {
    /// Too many symbolic links (a loop).
    Loop,
    /// A component that should be a folder is something else.
    NotAFolder(PathBuf),
    /// The filesystem refused to answer.
    Io(PathBuf, io::Error),
}

/// What kind of character disguises a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disguise {
    /// Renders as nothing.
    Invisible,
    /// Reorders how text around it is displayed.
    Bidirectional,
    /// Looks like a character with meaning in paths.
    LookAlike(&'static str),
}

/// Characters refused anywhere in a path, with their Unicode names. Ordinary spaces and the
/// no-break spaces macOS puts into screenshot names (U+00A0, U+202F) are allowed.
const DISGUISING_CHARACTERS: &[(char, &str, Disguise)] = &[
    ('\u{00AD}', "SOFT HYPHEN", Disguise::Invisible),
    ('\u{034F}', "COMBINING GRAPHEME JOINER", Disguise::Invisible),
    ('\u{180E}', "MONGOLIAN VOWEL SEPARATOR", Disguise::Invisible),
    ('\u{200B}', "ZERO WIDTH SPACE", Disguise::Invisible),
    ('\u{200C}', "ZERO WIDTH NON-JOINER", Disguise::Invisible),
    ('\u{200D}', "ZERO WIDTH JOINER", Disguise::Invisible),
    ('\u{2028}', "LINE SEPARATOR", Disguise::Invisible),
    ('\u{2029}', "PARAGRAPH SEPARATOR", Disguise::Invisible),
    ('\u{2060}', "WORD JOINER", Disguise::Invisible),
    ('\u{2061}', "FUNCTION APPLICATION", Disguise::Invisible),
    ('\u{2062}', "INVISIBLE TIMES", Disguise::Invisible),
    ('\u{2063}', "INVISIBLE SEPARATOR", Disguise::Invisible),
    ('\u{2064}', "INVISIBLE PLUS", Disguise::Invisible),
    ('\u{FEFF}', "ZERO WIDTH NO-BREAK SPACE", Disguise::Invisible),
    ('\u{061C}', "ARABIC LETTER MARK", Disguise::Bidirectional),
    ('\u{200E}', "LEFT-TO-RIGHT MARK", Disguise::Bidirectional),
    ('\u{200F}', "RIGHT-TO-LEFT MARK", Disguise::Bidirectional),
    (
        '\u{202A}',
        "LEFT-TO-RIGHT EMBEDDING",
        Disguise::Bidirectional,
    ),
    (
        '\u{202B}',
        "RIGHT-TO-LEFT EMBEDDING",
        Disguise::Bidirectional,
    ),
    (
        '\u{202C}',
        "POP DIRECTIONAL FORMATTING",
        Disguise::Bidirectional,
    ),
    (
        '\u{202D}',
        "LEFT-TO-RIGHT OVERRIDE",
        Disguise::Bidirectional,
    ),
    (
        '\u{202E}',
        "RIGHT-TO-LEFT OVERRIDE",
        Disguise::Bidirectional,
    ),
    ('\u{2066}', "LEFT-TO-RIGHT ISOLATE", Disguise::Bidirectional),
    ('\u{2067}', "RIGHT-TO-LEFT ISOLATE", Disguise::Bidirectional),
    ('\u{2068}', "FIRST STRONG ISOLATE", Disguise::Bidirectional),
    (
        '\u{2069}',
        "POP DIRECTIONAL ISOLATE",
        Disguise::Bidirectional,
    ),
    ('\u{2024}', "ONE DOT LEADER", Disguise::LookAlike(".")),
    ('\u{2025}', "TWO DOT LEADER", Disguise::LookAlike("..")),
    ('\u{FE52}', "SMALL FULL STOP", Disguise::LookAlike(".")),
    ('\u{FF0E}', "FULLWIDTH FULL STOP", Disguise::LookAlike(".")),
    ('\u{2044}', "FRACTION SLASH", Disguise::LookAlike("/")),
    ('\u{2215}', "DIVISION SLASH", Disguise::LookAlike("/")),
    (
        '\u{2571}',
        "BOX DRAWINGS LIGHT DIAGONAL",
        Disguise::LookAlike("/"),
    ),
    ('\u{29F8}', "BIG SOLIDUS", Disguise::LookAlike("/")),
    ('\u{FF0F}', "FULLWIDTH SOLIDUS", Disguise::LookAlike("/")),
    ('\u{2216}', "SET MINUS", Disguise::LookAlike("\\")),
    ('\u{29F9}', "BIG REVERSE SOLIDUS", Disguise::LookAlike("\\")),
    (
        '\u{FE68}',
        "SMALL REVERSE SOLIDUS",
        Disguise::LookAlike("\\"),
    ),
    (
        '\u{FF3C}',
        "FULLWIDTH REVERSE SOLIDUS",
        Disguise::LookAlike("\\"),
    ),
    ('\u{223C}', "TILDE OPERATOR", Disguise::LookAlike("~")),
    ('\u{FF5E}', "FULLWIDTH TILDE", Disguise::LookAlike("~")),
];

/// Refuses characters that could make a path look like something it is not.
pub(crate) fn screen_characters(text: &str) -> Result<(), InputError> {
    for character in text.chars() {
        if character == '\0' {
            return Err(InputError("it contains a NUL character".to_owned()));
        }
        if character.is_control() {
            return Err(InputError(format!(
                "it contains the control character U+{:04X}",
                u32::from(character)
            )));
        }
        if let Some((_, name, kind)) = DISGUISING_CHARACTERS
            .iter()
            .find(|(known, _, _)| *known == character)
        {
            let code = u32::from(character);
            let what = match kind {
                Disguise::Invisible => {
                    "an invisible character that can hide what the path really is".to_owned()
                }
                Disguise::Bidirectional => {
                    "a bidirectional control that can reorder how the path is displayed".to_owned()
                }
                Disguise::LookAlike(imitated) => {
                    format!("a look-alike of `{imitated}` that is not a path separator or dot")
                }
            };
            return Err(InputError(format!(
                "it contains U+{code:04X} {name}, {what}; write the path with plain characters"
            )));
        }
    }
    Ok(())
}

/// Turns what a model or a person wrote into an absolute, lexically normalized path, without
/// touching the filesystem.
pub(crate) fn absolute_input(raw: &str, home: &Path) -> Result<PathBuf, InputError> {
    let trimmed = raw.trim();
    let unquoted = strip_quotes(trimmed).trim();
    if unquoted.is_empty() {
        return Err(InputError("it is empty".to_owned()));
    }
    screen_characters(unquoted)?;
    let from_url;
    let text = if has_file_scheme(unquoted) {
        from_url = file_url_path(unquoted)?;
        from_url.as_str()
    } else {
        unquoted
    };
    let expanded = expand_home_variables(text, home)?;
    let absolute = if expanded.is_absolute() {
        expanded
    } else {
        home.join(expanded)
    };
    Ok(normalize_lexically(&absolute))
}

/// Strips one pair of matching surrounding quotes or backticks (models often quote paths).
fn strip_quotes(text: &str) -> &str {
    const PAIRS: &[(char, char)] = &[
        ('"', '"'),
        ('\'', '\''),
        ('`', '`'),
        ('\u{201C}', '\u{201D}'),
        ('\u{2018}', '\u{2019}'),
    ];
    for (open, close) in PAIRS {
        if let Some(inner) = text
            .strip_prefix(*open)
            .and_then(|rest| rest.strip_suffix(*close))
        {
            return inner;
        }
    }
    text
}

fn has_file_scheme(text: &str) -> bool {
    text.get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file://"))
}

/// The local path a `file://` URL names, percent-decoded and screened again (decoding can
/// produce characters the raw text did not show).
fn file_url_path(text: &str) -> Result<String, InputError> {
    let not_local =
        || InputError("a file:// URL must name an absolute path on this computer".to_owned());
    let url = reqwest::Url::parse(text).map_err(|_| not_local())?;
    let path = url.to_file_path().map_err(|()| not_local())?;
    let path = path
        .into_os_string()
        .into_string()
        .map_err(|_| InputError("the file:// URL does not decode to UTF-8".to_owned()))?;
    screen_characters(&path)?;
    Ok(path)
}

/// Expands a leading `~`, `~/`, `$HOME` or `${HOME}`; refuses `~name`.
fn expand_home_variables(text: &str, home: &Path) -> Result<PathBuf, InputError> {
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = text.strip_prefix(prefix) {
            if rest.is_empty() {
                return Ok(home.to_path_buf());
            }
            if let Some(rest) = rest.strip_prefix('/') {
                return Ok(home.join(rest.trim_start_matches('/')));
            }
            if prefix == "~" {
                return Err(InputError(
                    "`~name` (another account's home folder) is not supported; use `~/` for your own home"
                        .to_owned(),
                ));
            }
        }
    }
    Ok(PathBuf::from(text))
}

/// Expands a leading `~` (or `~/`) to `home`; anything else is returned as it is. Used for
/// paths from the configuration, which are trusted text.
pub fn expand_home(raw: &str, home: &Path) -> PathBuf {
    if raw == "~" {
        home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(raw)
    }
}

/// Removes `.` and resolves `..` without touching the filesystem (never above the root).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Walks an absolute path on the real filesystem, following every symbolic link, and returns
/// the real location plus whether all of it exists. Components after the first missing one are
/// taken literally (they will be created there).
pub(crate) fn resolve_real(path: &Path) -> Result<(PathBuf, bool), WalkError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut resolved = PathBuf::from("/");
    push_components(&mut pending, path);
    let mut hops = 0;
    let mut exists = true;
    while let Some(part) = pending.pop_front() {
        if part == OsStr::new("..") {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&part);
        if !exists {
            resolved = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(WalkError::Loop);
                }
                let target = std::fs::read_link(&candidate)
                    .map_err(|error| WalkError::Io(candidate.clone(), error))?;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                // The link's own components come first, then what followed the link.
                let mut target_parts = VecDeque::new();
                push_components(&mut target_parts, &target);
                while let Some(target_part) = target_parts.pop_back() {
                    pending.push_front(target_part);
                }
            }
            Ok(metadata) => {
                if !metadata.is_dir() && !pending.is_empty() {
                    return Err(WalkError::NotAFolder(candidate));
                }
                resolved = candidate;
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                exists = false;
                resolved = candidate;
            }
            Err(error) => return Err(WalkError::Io(candidate, error)),
        }
    }
    Ok((resolved, exists))
}

/// Appends the normal and `..` components of `path` (roots and `.` are dropped).
fn push_components(into: &mut VecDeque<OsString>, path: &Path) {
    for component in path.components() {
        match component {
            Component::Normal(part) => into.push_back(part.to_os_string()),
            Component::ParentDir => into.push_back(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}

/// A path reduced to a form for comparing protected paths: each component in Unicode NFC and,
/// where the filesystem ignores case, lower case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoldedPath(Vec<String>);

impl FoldedPath {
    /// Folds `path` (absolute, normalized).
    pub(crate) fn new(path: &Path, case_insensitive: bool) -> Self {
        Self(
            path.components()
                .filter_map(|component| match component {
                    Component::Normal(part) => Some(fold_component(part, case_insensitive)),
                    _ => None,
                })
                .collect(),
        )
    }

    /// Whether `self` is `ancestor` or inside it.
    pub(crate) fn starts_with(&self, ancestor: &FoldedPath) -> bool {
        self.0.starts_with(&ancestor.0)
    }

    /// Whether `self` is strictly inside `ancestor`.
    pub(crate) fn strictly_inside(&self, ancestor: &FoldedPath) -> bool {
        self.0.len() > ancestor.0.len() && self.starts_with(ancestor)
    }
}

fn fold_component(part: &OsStr, case_insensitive: bool) -> String {
    let text = part.to_string_lossy();
    let normalized: String = text.nfc().collect();
    if case_insensitive {
        // Lower-casing after NFC and normalizing again keeps composed characters composed.
        normalized.to_lowercase().nfc().collect()
    } else {
        normalized
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
