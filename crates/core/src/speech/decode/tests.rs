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

/// An EBML element with an 8-byte size (`None`: the unknown size of a live recording).
fn element(id: &[u8], size: Option<usize>, body: &[u8]) -> Vec<u8> {
    let mut out = id.to_vec();
    match size {
        Some(size) => {
            out.push(0x01);
            out.extend_from_slice(&(size as u64).to_be_bytes()[1..]);
        }
        None => out.extend_from_slice(&[0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
    }
    out.extend_from_slice(body);
    out
}

/// The Opus packets of an OGG file muxed the way Chromium's `MediaRecorder` writes WebM: the
/// Segment and every Cluster of unknown size, SimpleBlocks of a few packets each.
fn live_webm(ogg: &[u8]) -> Vec<u8> {
    let packets = ogg::packets(ogg).unwrap();
    let mut out = element(
        &[0x1A, 0x45, 0xDF, 0xA3],
        Some(7),
        &element(&[0x42, 0x82], Some(4), b"webm")[..7],
    );
    out.truncate(4 + 8 + 7);
    out.extend_from_slice(&[
        0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]);
    let mut entry = element(&[0xD7], Some(1), &[1]);
    entry.extend(element(&[0x86], Some(6), b"A_OPUS"));
    entry.extend(element(&[0x63, 0xA2], Some(packets[0].len()), &packets[0]));
    let track = element(&[0xAE], Some(entry.len()), &entry);
    out.extend(element(
        &[0x16, 0x54, 0xAE, 0x6B],
        Some(track.len()),
        &track,
    ));
    for (index, packet) in packets[2..].iter().enumerate() {
        if index % 10 == 0 {
            out.extend_from_slice(&[0x1F, 0x43, 0xB6, 0x75]);
            out.extend_from_slice(&[0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
            out.extend(element(
                &[0xE7],
                Some(2),
                &((index * 20) as u16).to_be_bytes(),
            ));
        }
        let mut block = vec![0x81, 0x00, 0x00, 0x80];
        block.extend_from_slice(packet);
        out.extend(element(&[0xA3], Some(block.len()), &block));
    }
    out
}

/// The same Opus stream decodes to the same samples from OGG (opusenc), from WebM remuxed by
/// mkvmerge, and from a live-shaped WebM with unknown-size Clusters; about as long as the
/// speech that went in.
#[test]
fn ogg_and_webm_of_one_opus_stream_decode_alike() {
    let wav = crate::testing::spoken_wav("Open the window because it is warm.", "en-us");
    let original = decode(&wav).unwrap();
    let (ogg, webm) = crate::testing::opus_files(&wav);
    let from_ogg = decode(&ogg).unwrap();
    let from_webm = decode(&webm).unwrap();
    let from_live = decode(&live_webm(&ogg)).unwrap();
    let length = original.samples().len() as i64;
    for decoded in [&from_ogg, &from_webm, &from_live] {
        // Opus ends on whole 20 ms frames: at most one frame more than went in.
        let extra = decoded.samples().len() as i64 - length;
        assert!((0..=330).contains(&extra), "{extra} samples more");
    }
    assert_eq!(from_live.samples(), from_ogg.samples());
    assert_eq!(from_webm.samples(), from_ogg.samples());
    // A lossy codec, but the same sound: the difference is small next to the signal.
    let energy: f32 = original.samples().iter().map(|s| s * s).sum();
    let noise: f32 = original
        .samples()
        .iter()
        .zip(from_ogg.samples())
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    assert!(noise < energy * 0.1, "noise {noise} against {energy}");
}
