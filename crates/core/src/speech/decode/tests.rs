//! Decoding: every container, the bounds, hostile input.

use super::*;

fn wav(rate: u32, channels: u16, bits: u16, frames: usize) -> Vec<u8> {
    let width = usize::from(bits / 8);
    let data = frames * width * usize::from(channels);
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&((36 + data) as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * u32::from(channels) * u32::from(bits / 8)).to_le_bytes());
    out.extend_from_slice(&(channels * bits / 8).to_le_bytes());
    out.extend_from_slice(&bits.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data as u32).to_le_bytes());
    out.resize(out.len() + data, 0);
    out
}

#[test]
fn wav_at_any_rate_and_width_comes_out_at_16_khz_mono() {
    for (rate, channels, bits) in [
        (48_000, 2, 16),
        (22_050, 1, 16),
        (44_100, 1, 24),
        (8_000, 1, 8),
    ] {
        let audio = decode(&wav(rate, channels, bits, rate as usize)).unwrap();
        let expected = 16_000;
        assert!(
            (audio.samples().len() as i64 - expected).abs() <= 2,
            "{rate} Hz: {}",
            audio.samples().len()
        );
    }
}

#[test]
fn a_sine_keeps_its_pitch_and_level_through_resampling() {
    let rate = 44_100;
    let input: Vec<f32> = (0..rate)
        .map(|i| (i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 0.5)
        .collect();
    let out = resample::to_rate(&input, rate as u32, 16_000);
    assert_eq!(out.len(), 16_000);
    // Compare with the ideal sine at 16 kHz away from the edges.
    let worst = out[200..15_800]
        .iter()
        .enumerate()
        .map(|(i, sample)| {
            let t = (i + 200) as f32 / 16_000.0;
            (sample - (t * 440.0 * std::f32::consts::TAU).sin() * 0.5).abs()
        })
        .fold(0.0f32, f32::max);
    assert!(worst < 0.01, "{worst}");
}

#[test]
fn too_long_too_large_empty_and_unknown_are_refused() {
    assert_eq!(decode(&[]), Err(SpeechError::Empty));
    let long = wav(8_000, 1, 8, 8_000 * 121);
    assert!(matches!(
        decode(&long),
        Err(SpeechError::TooLong { limit: 120, .. })
    ));
    let large = vec![0u8; MAX_UPLOAD_BYTES + 1];
    assert!(matches!(decode(&large), Err(SpeechError::TooLarge { .. })));
    assert!(matches!(
        decode(b"ID3\x03mp3 data"),
        Err(SpeechError::Unsupported(_))
    ));
    // A data chunk that claims more than there is reads what there is.
    let mut cut = wav(16_000, 1, 16, 1600);
    cut.truncate(44 + 800);
    assert_eq!(decode(&cut).unwrap().samples().len(), 400);
    // A header that lies about the data size cannot make decoding allocate for it.
    let mut lying = wav(16_000, 1, 16, 10);
    lying[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(decode(&lying).unwrap().samples().len(), 10);
}

#[test]
fn hostile_containers_fail_cleanly() {
    // An Ogg page whose table claims more than the file.
    let mut ogg = b"OggS\0\x02".to_vec();
    ogg.resize(26, 0);
    ogg.push(3);
    ogg.extend_from_slice(&[255, 255, 255]);
    assert!(matches!(decode(&ogg), Err(SpeechError::Malformed(_))));
    // A WebM header, then an element whose size runs past the end.
    let mut webm = vec![0x1A, 0x45, 0xDF, 0xA3, 0x80];
    webm.extend_from_slice(&[
        0x16, 0x54, 0xAE, 0x6B, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]);
    assert!(decode(&webm).is_err());
    // Deep nesting of unknown-size Segments costs nothing and ends cleanly.
    let mut deep = vec![0x1A, 0x45, 0xDF, 0xA3, 0x80];
    for _ in 0..100_000 {
        deep.extend_from_slice(&[0x18, 0x53, 0x80, 0x67, 0xFF]);
    }
    assert!(matches!(decode(&deep), Err(SpeechError::Malformed(_))));
    // Random bytes after each magic never panic.
    let mut seed = 7u64;
    for magic in [&b"OggS"[..], &[0x1A, 0x45, 0xDF, 0xA3], b"RIFF\0\0\0\0WAVE"] {
        for _ in 0..200 {
            let mut bytes = magic.to_vec();
            for _ in 0..300 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                bytes.push((seed >> 33) as u8);
            }
            let _ = decode(&bytes);
        }
    }
}
