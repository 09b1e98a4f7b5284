//! RIFF/WAVE: the `fmt ` and `data` chunks, PCM integer (8, 16, 24, 32 bits) and IEEE float
//! (32, 64 bits) samples, `WAVE_FORMAT_EXTENSIBLE` with either subformat. Channels are mixed to
//! mono as they are read. A `data` chunk whose size overruns the file (a recorder that never
//! patched it) is read to the end of the file.

use super::{Pcm, sample_budget, too_long};
use crate::speech::SpeechError;

const PCM: u16 = 1;
const FLOAT: u16 = 3;
const EXTENSIBLE: u16 = 0xFFFE;
/// The most channels accepted.
const MAX_CHANNELS: usize = 8;

struct Format {
    tag: u16,
    channels: usize,
    rate: u32,
    bits: u16,
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn malformed(what: &str) -> SpeechError {
    SpeechError::Malformed(format!("WAV: {what}"))
}

fn format_of(body: &[u8]) -> Result<Format, SpeechError> {
    let field = |at| u16_at(body, at).ok_or_else(|| malformed("the fmt chunk is too short"));
    let mut tag = field(0)?;
    let channels = usize::from(field(2)?);
    let rate = u32_at(body, 4).ok_or_else(|| malformed("the fmt chunk is too short"))?;
    let bits = field(14)?;
    if tag == EXTENSIBLE {
        // The subformat GUID's first two bytes are the format tag.
        tag = field(24)?;
    }
    if channels == 0 || channels > MAX_CHANNELS {
        return Err(SpeechError::Unsupported(format!(
            "WAV with {channels} channels"
        )));
    }
    if !(1_000..=384_000).contains(&rate) {
        return Err(SpeechError::Unsupported(format!("WAV at {rate} Hz")));
    }
    let supported = matches!((tag, bits), (PCM, 8 | 16 | 24 | 32) | (FLOAT, 32 | 64));
    if !supported {
        return Err(SpeechError::Unsupported(format!(
            "WAV format {tag} with {bits}-bit samples"
        )));
    }
    Ok(Format {
        tag,
        channels,
        rate,
        bits,
    })
}

fn sample(format: &Format, bytes: &[u8]) -> f32 {
    match (format.tag, format.bits) {
        (PCM, 8) => (f32::from(bytes[0]) - 128.0) / 128.0,
        (PCM, 16) => f32::from(i16::from_le_bytes([bytes[0], bytes[1]])) / 32768.0,
        (PCM, 24) => {
            let value = i32::from_le_bytes([0, bytes[0], bytes[1], bytes[2]]) >> 8;
            value as f32 / 8_388_608.0
        }
        (PCM, 32) => {
            i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as f32 / 2_147_483_648.0
        }
        (FLOAT, 32) => {
            let value = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if value.is_finite() {
                value.clamp(-1.0, 1.0)
            } else {
                0.0
            }
        }
        (FLOAT, 64) => {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(&bytes[..8]);
            let value = f64::from_le_bytes(raw);
            if value.is_finite() {
                value.clamp(-1.0, 1.0) as f32
            } else {
                0.0
            }
        }
        _ => 0.0,
    }
}

/// Decodes a WAV file (already recognised by its header).
pub(crate) fn decode(bytes: &[u8]) -> Result<Pcm, SpeechError> {
    let mut at = 12;
    let mut format = None;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32_at(bytes, at + 4).map_or(0, |size| size as usize);
        let start = at + 8;
        let end = start.saturating_add(size).min(bytes.len());
        let body = &bytes[start..end];
        match id {
            b"fmt " => format = Some(format_of(body)?),
            b"data" => {
                let format = format
                    .as_ref()
                    .ok_or_else(|| malformed("the data chunk comes before fmt"))?;
                return samples(format, body);
            }
            _ => {}
        }
        // Chunks are padded to an even size.
        at = start.saturating_add(size).saturating_add(size & 1);
    }
    Err(malformed("no data chunk"))
}

fn samples(format: &Format, data: &[u8]) -> Result<Pcm, SpeechError> {
    let width = usize::from(format.bits / 8);
    let frame = width * format.channels;
    let frames = data.len() / frame;
    let budget = sample_budget(format.rate);
    if frames > budget {
        return Err(too_long(frames, format.rate));
    }
    let mut mono = Vec::with_capacity(frames);
    let scale = 1.0 / format.channels as f32;
    for chunk in data.chunks_exact(frame) {
        let sum: f32 = chunk
            .chunks_exact(width)
            .map(|bytes| sample(format, bytes))
            .sum();
        mono.push(sum * scale);
    }
    Ok(Pcm {
        rate: format.rate,
        mono,
    })
}
