//! Whisper's mel filter bank, computed instead of shipped: the triangular filters of librosa's
//! `filters.mel(sr=16000, n_fft=400, n_mels=N)` (Slaney's mel scale, Slaney area
//! normalisation), which is what OpenAI's `mel_filters.npz` holds. Laid out as candle's
//! `pcm_to_mel` reads it: `n_mels` rows of `N_FFT / 2 + 1` weights.

/// Samples per FFT window (25 ms at 16 kHz).
pub(crate) const N_FFT: usize = 400;
const SAMPLE_RATE: f64 = 16_000.0;

/// Hertz to mels on Slaney's scale (linear below 1 kHz, logarithmic above).
fn hz_to_mel(hz: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let log_step = (6.4f64).ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / log_step
    } else {
        hz / f_sp
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let log_step = (6.4f64).ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (log_step * (mel - min_log_mel)).exp()
    } else {
        f_sp * mel
    }
}

/// The filter bank for `n_mels` bands, row-major.
pub(crate) fn filters(n_mels: usize) -> Vec<f32> {
    let bins = N_FFT / 2 + 1;
    let fft_freqs: Vec<f64> = (0..bins)
        .map(|i| i as f64 * SAMPLE_RATE / N_FFT as f64)
        .collect();
    let max_mel = hz_to_mel(SAMPLE_RATE / 2.0);
    let mel_freqs: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(max_mel * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut weights = vec![0f32; n_mels * bins];
    for band in 0..n_mels {
        let (lower, center, upper) = (mel_freqs[band], mel_freqs[band + 1], mel_freqs[band + 2]);
        let norm = 2.0 / (upper - lower);
        for (bin, &freq) in fft_freqs.iter().enumerate() {
            let rising = (freq - lower) / (center - lower);
            let falling = (upper - freq) / (upper - center);
            let weight = rising.min(falling).max(0.0) * norm;
            weights[band * bins + bin] = weight as f32;
        }
    }
    weights
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bank_matches_whispers_shape_and_known_values() {
        let bank = filters(80);
        assert_eq!(bank.len(), 80 * 201);
        // Every band has weight somewhere, and the DC bin none.
        for band in 0..80 {
            let row = &bank[band * 201..(band + 1) * 201];
            assert!(row.iter().any(|w| *w > 0.0), "band {band} is empty");
            assert_eq!(row[0], 0.0);
        }
        // Weights [0, 1] and [1, 2], computed apart from this code with librosa's formulas
        // (`filters.mel`, htk=False, norm="slaney") in plain Python.
        assert!((bank[1] - 0.024_862_594).abs() < 1e-6, "{}", bank[1]);
        assert!(
            (bank[201 + 2] - 0.022_871_772).abs() < 1e-6,
            "{}",
            bank[203]
        );
    }
}
