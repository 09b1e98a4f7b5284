//! What a photo or a document from the linked account becomes: a file in its Souz chat's
//! upload folder, attached to the message its caption makes (the chat's own attachment
//! mechanism: `upload_attachment`, then the path in the input's `attachments`). Voice, video,
//! audio, stickers and animations are refused with a reply saying what Souz takes.
//!
//! Invariants:
//! - Everything here comes from Telegram and is untrusted: the announced sizes, the file name
//!   (made a plain name before it is used), the file path `getFile` names, the bytes.
//! - A file over the chat's caps (an upload's `[server] body_limit`; images also the image
//!   cap of attachments) is refused with a reply and nothing is stored: an announced size is
//!   checked before the download, the download is cut off at the cap whatever was announced,
//!   and it is time-limited ([`DOWNLOAD_TIME`]).
//! - Errors and logs never carry the file URL (it holds the token).
//! - A download runs on a task of its own (`inbound` starts it), at most
//!   [`MAX_DOWNLOADS`] at once and stopped with the channel, so a slow `getFile` or download
//!   never holds up the updates after it.

use std::time::Duration;

use frankenstein::types::{Document, Message, PhotoSize};
use souz_protocol::language::Language;

use super::Channel;
use super::api::{Download, DownloadError, RemoteFile};
use crate::runtime::facade::ChatUser;

/// The longest a download may take.
pub(crate) const DOWNLOAD_TIME: Duration = Duration::from_secs(60);
/// Downloads running at once; more wait for a turn.
pub(crate) const MAX_DOWNLOADS: usize = 2;
/// The longest file name kept, in characters.
const MAX_NAME_CHARS: usize = 120;

/// The file a message carries, as Souz sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Media<'a> {
    /// None: a text message.
    None,
    /// A photo, in the sizes Telegram made of it (smallest first).
    Photo(&'a [PhotoSize]),
    /// A file sent as a document.
    Document(&'a Document),
    /// A kind Souz does not take (what it is, in words).
    Unsupported(&'static str),
}

impl<'a> Media<'a> {
    /// The file of `message`.
    pub(crate) fn of(message: &'a Message) -> Self {
        // An animation also carries a `document` (for old clients): it is refused as what it is.
        let unsupported = [
            (message.animation.is_some(), "an animation"),
            (message.voice.is_some(), "a voice message"),
            (message.video_note.is_some(), "a video message"),
            (message.video.is_some(), "a video"),
            (message.audio.is_some(), "an audio file"),
            (message.sticker.is_some(), "a sticker"),
        ];
        if let Some((_, what)) = unsupported.iter().find(|(present, _)| *present) {
            return Self::Unsupported(what);
        }
        match (&message.photo, &message.document) {
            (Some(sizes), _) if !sizes.is_empty() => Self::Photo(sizes),
            (_, Some(document)) => Self::Document(document),
            _ => Self::None,
        }
    }
}

/// Why a file is not taken: what the bot answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// A kind Souz does not take.
    #[error(
        "Souz takes text, photos and documents; it cannot take {0}. Send it as a file instead."
    )]
    Unsupported(&'static str),
    /// Over the cap.
    #[error("That file is too large: Souz takes files of at most {0}.")]
    TooLarge(String),
    /// The download failed.
    #[error("Souz could not fetch that file from Telegram; please send it again.")]
    NotFetched,
    /// The chat would not keep it.
    #[error("Souz could not keep that file: {0}")]
    NotSaved(String),
}

impl Refusal {
    /// What the bot answers, in `language` (the English text is also what logs show).
    pub(crate) fn text(&self, language: Language) -> String {
        let Language::Ru = language else {
            return self.to_string();
        };
        match self {
            Self::Unsupported(what) => format!(
                "Souz принимает текст, фотографии и документы; {} он не примет. Отправьте это \
                 файлом.",
                russian_kind(what)
            ),
            Self::TooLarge(limit) => {
                format!("Файл слишком большой: Souz принимает файлы не больше {limit}.")
            }
            Self::NotFetched => {
                "Souz не смог получить этот файл из Telegram; отправьте его ещё раз.".to_owned()
            }
            Self::NotSaved(reason) => format!("Souz не смог сохранить этот файл: {reason}"),
        }
    }
}

/// The Russian for a kind [`Media::of`] names.
fn russian_kind(what: &str) -> &'static str {
    match what {
        "an animation" => "анимацию",
        "a voice message" => "голосовое сообщение",
        "a video message" => "видеосообщение",
        "a video" => "видео",
        "an audio file" => "аудиофайл",
        "a sticker" => "стикер",
        _ => "такое сообщение",
    }
}

/// The most bytes taken of `media`: what the chat takes of an upload of its name (a photo is
/// a JPEG).
pub(crate) fn limit(channel: &Channel, media: Media<'_>) -> u64 {
    let name = match media {
        Media::Photo(_) => "photo.jpg",
        Media::Document(document) => document.file_name.as_deref().unwrap_or_default(),
        Media::None | Media::Unsupported(_) => "",
    };
    channel.handle.upload_limit(name)
}

/// `bytes` for people: "64 KiB", "10.0 MiB".
fn shown(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// Refuses `media` before anything is fetched: a kind Souz does not take, or a size
/// announced over `limit`.
pub(crate) fn check(media: Media<'_>, limit: u64) -> Result<(), Refusal> {
    let too_large = || Refusal::TooLarge(shown(limit));
    match media {
        Media::None => Ok(()),
        Media::Unsupported(what) => Err(Refusal::Unsupported(what)),
        Media::Photo(sizes) => chosen_size(sizes, limit).map(|_| ()).ok_or_else(too_large),
        Media::Document(document) => match document.file_size {
            Some(size) if size > limit => Err(too_large()),
            _ => Ok(()),
        },
    }
}

/// The largest size of a photo within `limit` (a size Telegram does not announce counts as
/// within: the download is bounded anyway).
fn chosen_size(sizes: &[PhotoSize], limit: u64) -> Option<&PhotoSize> {
    sizes
        .iter()
        .filter(|size| size.file_size.is_none_or(|bytes| bytes <= limit))
        .max_by_key(|size| (size.file_size.unwrap_or(0), u64::from(size.width)))
}

/// The file of a message to fetch, owned, so its download can run apart from the poll.
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    /// Telegram's id of the file (of the size chosen).
    pub file_id: String,
    /// The plain name it is kept as.
    pub name: String,
    /// The most bytes taken.
    pub limit: u64,
}

/// What to fetch of `media` (within `limit`); `None` for a text message.
pub(crate) fn wanted(
    media: Media<'_>,
    limit: u64,
    update_id: u32,
) -> Result<Option<Wanted>, Refusal> {
    let (file_id, name) = match media {
        Media::None => return Ok(None),
        Media::Unsupported(what) => return Err(Refusal::Unsupported(what)),
        Media::Photo(sizes) => {
            let size = chosen_size(sizes, limit).ok_or_else(|| Refusal::TooLarge(shown(limit)))?;
            (
                size.file_id.clone(),
                format!("telegram-photo-{update_id}.jpg"),
            )
        }
        Media::Document(document) => (
            document.file_id.clone(),
            plain_name(document.file_name.as_deref())
                .unwrap_or_else(|| format!("telegram-file-{update_id}")),
        ),
    };
    Ok(Some(Wanted {
        file_id,
        name,
        limit,
    }))
}

/// Fetches `wanted` and keeps it in `chat_id`'s upload folder; the path to attach.
pub(crate) async fn fetch(
    channel: &Channel,
    chat_id: &str,
    wanted: &Wanted,
) -> Result<String, Refusal> {
    let bytes = download(channel, &wanted.file_id, wanted.limit).await?;
    let user = ChatUser(crate::LOCAL_USER.to_owned());
    let attachment = channel
        .handle
        .upload_attachment(&user, chat_id, &wanted.name, bytes.into())
        .await
        .map_err(|error| Refusal::NotSaved(error.to_string()))?;
    Ok(attachment.path)
}

/// `getFile`, then the bounded download.
async fn download(channel: &Channel, file_id: &str, limit: u64) -> Result<Vec<u8>, Refusal> {
    let bounds = Download {
        limit,
        time: DOWNLOAD_TIME,
    };
    let fetched = async {
        let file: RemoteFile = channel.api.file(file_id).await?;
        channel.api.download(&file, bounds).await
    };
    match fetched.await {
        Ok(bytes) => Ok(bytes),
        Err(DownloadError::TooLarge { limit }) => {
            tracing::info!(limit, "telegram: a file over the cap was refused");
            Err(Refusal::TooLarge(shown(limit)))
        }
        Err(error) => {
            tracing::warn!(%error, "telegram: a file could not be fetched");
            Err(Refusal::NotFetched)
        }
    }
}

/// `raw` as a plain file name: one component, no control characters, not hidden, at most
/// [`MAX_NAME_CHARS`] characters (the extension kept); `None` when nothing is left.
pub(crate) fn plain_name(raw: Option<&str>) -> Option<String> {
    let cleaned: String = raw?
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '/' | '\\' | '\0') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let name = cleaned.trim().trim_start_matches('.').trim();
    if name.is_empty() {
        return None;
    }
    if name.chars().count() <= MAX_NAME_CHARS {
        return Some(name.to_owned());
    }
    let (stem, extension) = match name.rsplit_once('.') {
        Some((stem, extension)) if extension.chars().count() <= 10 => (stem, Some(extension)),
        _ => (name, None),
    };
    let room = MAX_NAME_CHARS - extension.map_or(0, |extension| extension.chars().count() + 1);
    let mut short: String = stem.chars().take(room).collect();
    if let Some(extension) = extension {
        short.push('.');
        short.push_str(extension);
    }
    Some(short)
}

#[cfg(test)]
mod tests {
    use super::plain_name;

    #[test]
    fn names_from_telegram_become_plain_file_names() {
        assert_eq!(
            plain_name(Some("report.pdf")).as_deref(),
            Some("report.pdf")
        );
        assert_eq!(
            plain_name(Some("../../etc/passwd")).as_deref(),
            Some("_.._etc_passwd")
        );
        assert_eq!(plain_name(Some(".bashrc")).as_deref(), Some("bashrc"));
        assert_eq!(plain_name(Some("a\nb\u{0}c")).as_deref(), Some("a_b_c"));
        assert_eq!(plain_name(Some("  ...  ")), None);
        assert_eq!(plain_name(None), None);
        let long = format!("{}.pdf", "x".repeat(300));
        let short = plain_name(Some(&long)).unwrap();
        assert_eq!(short.chars().count(), 120);
        assert!(short.ends_with("xx.pdf"));
    }
}
