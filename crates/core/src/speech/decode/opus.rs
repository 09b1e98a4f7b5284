//! Opus packets to samples: the `OpusHead` both containers carry (RFC 7845 §5.1) and a stream
//! of packets decoded at 48 kHz by `opus-decoder` (a pure-Rust port of libopus's decoder, RFC
//! 8251 conformance-tested, no `unsafe`: nothing to link, nothing for the build to find on the
//! system), mixed to mono, the encoder's pre-skip dropped.
//!
//! Invariant: a stream never holds more than its sample budget; the packet that would pass it
//! ends decoding with [`SpeechError::TooLong`].

use super::{Pcm, too_long};
use crate::speech::SpeechError;

/// The rate Opus decodes at.
const RATE: u32 = 48_000;
/// The most samples per channel one packet decodes to (120 ms at 48 kHz).
const MAX_FRAME: usize = 5760;

fn malformed(what: &str) -> SpeechError {
    SpeechError::Malformed(format!("Opus: {what}"))
}

/// What the `OpusHead` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpusHead {
    /// 1 or 2.
    pub channels: usize,
    /// Samples (at 48 kHz) to drop from the start.
    pub pre_skip: usize,
}

impl OpusHead {
    /// Reads an `OpusHead` packet (family 0: mono or stereo, one stream).
    pub(crate) fn parse(packet: &[u8]) -> Result<Self, SpeechError> {
        if packet.len() < 19 || !packet.starts_with(b"OpusHead") {
            return Err(malformed("no OpusHead"));
        }
        if packet[8] >> 4 != 0 {
            return Err(SpeechError::Unsupported(format!(
                "Opus header version {}",
                packet[8]
            )));
        }
        let channels = usize::from(packet[9]);
        let pre_skip = usize::from(u16::from_le_bytes([packet[10], packet[11]]));
        let family = packet[18];
        if family != 0 || !(1..=2).contains(&channels) {
            return Err(SpeechError::Unsupported(format!(
                "Opus with {channels} channels (mapping family {family})"
            )));
        }
        Ok(Self { channels, pre_skip })
    }
}

/// Packets in, mono 48 kHz samples out.
pub(crate) struct OpusStream {
    decoder: opus_decoder::OpusDecoder,
    channels: usize,
    skip: usize,
    budget: usize,
    frame: Vec<f32>,
    mono: Vec<f32>,
}

impl OpusStream {
    /// A stream for `head` that holds at most `budget` samples.
    pub(crate) fn new(head: &OpusHead, budget: usize) -> Result<Self, SpeechError> {
        let decoder = opus_decoder::OpusDecoder::new(RATE, head.channels)
            .map_err(|error| malformed(&error.to_string()))?;
        Ok(Self {
            decoder,
            channels: head.channels,
            skip: head.pre_skip,
            budget,
            frame: vec![0.0; MAX_FRAME * head.channels],
            mono: Vec::new(),
        })
    }

    /// Decodes one packet.
    pub(crate) fn push(&mut self, packet: &[u8]) -> Result<(), SpeechError> {
        if packet.is_empty() {
            return Ok(());
        }
        let samples = self
            .decoder
            .decode_float(packet, &mut self.frame, false)
            .map_err(|error| malformed(&error.to_string()))?;
        let frames = samples.min(MAX_FRAME);
        if self.mono.len() + frames > self.budget {
            return Err(too_long(self.mono.len() + frames, RATE));
        }
        let scale = 1.0 / self.channels as f32;
        for frame in self.frame[..frames * self.channels].chunks_exact(self.channels) {
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            self.mono.push(frame.iter().sum::<f32>() * scale);
        }
        Ok(())
    }

    /// The samples decoded.
    pub(crate) fn finish(self) -> Pcm {
        Pcm {
            rate: RATE,
            mono: self.mono,
        }
    }
}
