//! Ogg pages (RFC 3533) carrying one Opus stream (RFC 7845): packets are reassembled from the
//! pages' lacing, the first is the `OpusHead` (channels, pre-skip), the second the `OpusTags`,
//! the rest audio. Only the first logical stream is read; page checksums are not checked (a
//! damaged packet decodes to noise or fails the Opus decoder, both bounded).

use std::borrow::Cow;

use super::opus::{OpusHead, OpusStream};
use super::{Pcm, sample_budget};
use crate::speech::SpeechError;

fn malformed(what: &str) -> SpeechError {
    SpeechError::Malformed(format!("OGG: {what}"))
}

/// The packets of the first logical stream, in order (borrowed from the file, or joined when
/// one spans several lacing values or pages).
pub(crate) fn packets(bytes: &[u8]) -> Result<Vec<Cow<'_, [u8]>>, SpeechError> {
    let mut packets = Vec::new();
    let mut pending: Vec<&[u8]> = Vec::new();
    let mut serial = None;
    let mut at = 0;
    while at + 27 <= bytes.len() {
        if &bytes[at..at + 4] != b"OggS" {
            return Err(malformed("a page does not start with OggS"));
        }
        let page_serial = &bytes[at + 14..at + 18];
        let segments = usize::from(bytes[at + 26]);
        let table_end = at + 27 + segments;
        let table = bytes
            .get(at + 27..table_end)
            .ok_or_else(|| malformed("a page's segment table is cut off"))?;
        let body_len: usize = table.iter().map(|&lace| usize::from(lace)).sum();
        let body = bytes
            .get(table_end..table_end + body_len)
            .ok_or_else(|| malformed("a page is cut off"))?;
        at = table_end + body_len;
        match serial {
            None => serial = Some(page_serial),
            Some(first) if first != page_serial => continue,
            Some(_) => {}
        }
        let mut offset = 0;
        for &lace in table {
            let lace = usize::from(lace);
            pending.push(&body[offset..offset + lace]);
            offset += lace;
            if lace < 255 {
                packets.push(match pending.as_slice() {
                    [single] => Cow::Borrowed(*single),
                    parts => Cow::Owned(parts.concat()),
                });
                pending.clear();
            }
        }
    }
    Ok(packets)
}

/// Decodes an Ogg/Opus file (already recognised by its first page).
pub(crate) fn decode(bytes: &[u8]) -> Result<Pcm, SpeechError> {
    let packets = packets(bytes)?;
    let mut iter = packets.into_iter();
    let head = iter.next().ok_or_else(|| malformed("no packets"))?;
    if head.starts_with(b"OpusHead") {
        let head = OpusHead::parse(&head)?;
        // The comment header.
        iter.next();
        let mut stream = OpusStream::new(&head, sample_budget(48_000))?;
        for packet in iter {
            stream.push(&packet)?;
        }
        Ok(stream.finish())
    } else if head.get(1..7) == Some(b"vorbis") {
        Err(SpeechError::Unsupported("OGG/Vorbis".to_owned()))
    } else {
        Err(SpeechError::Unsupported(
            "an OGG stream that is not Opus".to_owned(),
        ))
    }
}
