//! WebM (Matroska) with one Opus audio track, as browsers' `MediaRecorder` writes it: the
//! Segment and every Cluster may have the unknown size (a live recording cannot go back to
//! patch lengths), blocks are SimpleBlocks or Blocks in BlockGroups, laced or not.
//!
//! The walk is flat: elements are read one after another; the few master elements whose
//! children matter (Segment, Tracks, TrackEntry, Cluster, BlockGroup) are stepped into — their
//! size, known or not, is not needed for that — and every other element is stepped over by its
//! size. So an unknown-size Cluster ends where the next Cluster (or anything else) begins, and
//! deep nesting costs nothing. An unknown size on an element that is stepped over is refused.

use super::opus::{OpusHead, OpusStream};
use super::{Pcm, sample_budget};
use crate::speech::SpeechError;

const EBML: u32 = 0x1A45_DFA3;
const SEGMENT: u32 = 0x1853_8067;
const TRACKS: u32 = 0x1654_AE6B;
const TRACK_ENTRY: u32 = 0xAE;
const TRACK_NUMBER: u32 = 0xD7;
const CODEC_ID: u32 = 0x86;
const CODEC_PRIVATE: u32 = 0x63A2;
const CLUSTER: u32 = 0x1F43_B675;
const BLOCK_GROUP: u32 = 0xA0;
const BLOCK: u32 = 0xA1;
const SIMPLE_BLOCK: u32 = 0xA3;

/// The master elements stepped into.
const STEP_INTO: &[u32] = &[SEGMENT, TRACKS, TRACK_ENTRY, CLUSTER, BLOCK_GROUP];

fn malformed(what: &str) -> SpeechError {
    SpeechError::Malformed(format!("WebM: {what}"))
}

/// A variable-length integer at `at`: its value (marker removed unless `keep_marker`), its
/// length, and whether all its value bits are set (the "unknown size").
fn vint(bytes: &[u8], at: usize, keep_marker: bool) -> Result<(u64, usize, bool), SpeechError> {
    let first = *bytes.get(at).ok_or_else(|| malformed("cut off"))?;
    if first == 0 {
        return Err(malformed("a length field is longer than 8 bytes"));
    }
    let length = first.leading_zeros() as usize + 1;
    let raw = bytes
        .get(at..at + length)
        .ok_or_else(|| malformed("cut off"))?;
    // The value bits of the first byte (none for an 8-byte integer).
    let value_bits = 0xFFu8.checked_shr(length as u32).unwrap_or(0);
    let mut value = u64::from(if keep_marker {
        first
    } else {
        first & value_bits
    });
    let mut all_ones = (first | !value_bits) == 0xFF;
    for &byte in &raw[1..] {
        value = (value << 8) | u64::from(byte);
        all_ones &= byte == 0xFF;
    }
    Ok((value, length, all_ones))
}

#[derive(Debug, Default)]
struct Track {
    number: Option<u64>,
    codec: Vec<u8>,
    private: Vec<u8>,
}

/// Decodes a WebM file (already recognised by its EBML header).
pub(crate) fn decode(bytes: &[u8]) -> Result<Pcm, SpeechError> {
    let mut tracks: Vec<Track> = Vec::new();
    let mut audio: Option<(u64, OpusStream)> = None;
    let mut at = 0;
    while at < bytes.len() {
        let (id, id_length, _) = vint(bytes, at, true)?;
        let id = u32::try_from(id).map_err(|_| malformed("an element id is too long"))?;
        let (size, size_length, unknown) = vint(bytes, at + id_length, false)?;
        let start = at + id_length + size_length;
        if STEP_INTO.contains(&id) {
            if id == TRACK_ENTRY {
                tracks.push(Track::default());
            }
            at = start;
            continue;
        }
        if unknown {
            return Err(malformed(
                "an element other than a Segment or Cluster has no size",
            ));
        }
        let size = usize::try_from(size).map_err(|_| malformed("an element is too large"))?;
        let end = start.checked_add(size).filter(|&end| end <= bytes.len());
        let Some(end) = end else {
            // A recording cut off mid-block: what came before it is kept.
            if id == SIMPLE_BLOCK || id == BLOCK {
                break;
            }
            return Err(malformed("an element runs past the end of the file"));
        };
        let body = &bytes[start..end];
        match id {
            EBML => {}
            TRACK_NUMBER => {
                if let Some(track) = tracks.last_mut() {
                    track.number = Some(body.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b)));
                }
            }
            CODEC_ID => {
                if let Some(track) = tracks.last_mut() {
                    track.codec = body.to_vec();
                }
            }
            CODEC_PRIVATE => {
                if let Some(track) = tracks.last_mut() {
                    track.private = body.to_vec();
                }
            }
            SIMPLE_BLOCK | BLOCK => {
                if audio.is_none() {
                    audio = Some(opus_track(&tracks)?);
                }
                if let Some((number, stream)) = audio.as_mut() {
                    block(body, *number, stream)?;
                }
            }
            _ => {}
        }
        at = end;
    }
    match audio {
        Some((_, stream)) => Ok(stream.finish()),
        None if tracks.is_empty() => Err(malformed("no tracks")),
        None => {
            opus_track(&tracks)?;
            Err(malformed("no audio blocks"))
        }
    }
}

/// The Opus track's number and a decoder for it.
fn opus_track(tracks: &[Track]) -> Result<(u64, OpusStream), SpeechError> {
    let Some(track) = tracks.iter().find(|track| track.codec == b"A_OPUS") else {
        let codecs: Vec<String> = tracks
            .iter()
            .map(|track| String::from_utf8_lossy(&track.codec).into_owned())
            .collect();
        return Err(SpeechError::Unsupported(format!(
            "WebM without an Opus track ({})",
            codecs.join(", ")
        )));
    };
    let number = track
        .number
        .ok_or_else(|| malformed("the Opus track has no number"))?;
    let head = OpusHead::parse(&track.private)?;
    Ok((number, OpusStream::new(&head, sample_budget(48_000))?))
}

/// One (Simple)Block: the track, a 16-bit timecode, flags, then the frame, or several frames
/// laced (Xiph, fixed-size or EBML lacing, as muxers such as mkvmerge write them).
fn block(body: &[u8], track: u64, stream: &mut OpusStream) -> Result<(), SpeechError> {
    let (number, length, _) = vint(body, 0, false)?;
    if number != track {
        return Ok(());
    }
    let flags = *body
        .get(length + 2)
        .ok_or_else(|| malformed("a block is cut off"))?;
    let data = &body[length + 3..];
    let lacing = (flags >> 1) & 0x03;
    if lacing == 0 {
        return stream.push(data);
    }
    let count = usize::from(
        *data
            .first()
            .ok_or_else(|| malformed("a laced block is cut off"))?,
    ) + 1;
    let mut at = 1;
    let mut sizes = Vec::with_capacity(count);
    match lacing {
        // Xiph: each size but the last as a run of 255s and a final byte.
        1 => {
            for _ in 1..count {
                let mut size = 0usize;
                loop {
                    let byte = *data.get(at).ok_or_else(|| malformed("a lace is cut off"))?;
                    at += 1;
                    size += usize::from(byte);
                    if byte != 255 {
                        break;
                    }
                }
                sizes.push(size);
            }
        }
        // EBML: the first size, then signed differences.
        3 => {
            let (first, used, _) = vint(data, at, false)?;
            at += used;
            let mut size = i64::try_from(first).map_err(|_| malformed("a lace is too large"))?;
            sizes.push(usize::try_from(size).map_err(|_| malformed("a lace is too large"))?);
            for _ in 2..count {
                let (raw, used, _) = vint(data, at, false)?;
                at += used;
                let bias = (1i64 << (7 * used - 1)) - 1;
                size += i64::try_from(raw).map_err(|_| malformed("a lace is too large"))? - bias;
                sizes.push(usize::try_from(size).map_err(|_| malformed("a negative lace"))?);
            }
        }
        // Fixed: equal sizes.
        _ => {
            let each = data.len().saturating_sub(at) / count;
            sizes.extend(std::iter::repeat_n(each, count - 1));
        }
    }
    for size in sizes {
        let frame = data
            .get(at..at.saturating_add(size))
            .ok_or_else(|| malformed("a lace runs past its block"))?;
        stream.push(frame)?;
        at += size;
    }
    stream.push(data.get(at..).unwrap_or_default())
}
