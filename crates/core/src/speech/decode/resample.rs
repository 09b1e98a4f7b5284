//! Sample-rate conversion by windowed sinc (a Blackmann-windowed low-pass at the lower of the
//! two Nyquist frequencies): polyphase with a precomputed table when the ratio reduces to at
//! most [`MAX_PHASES`] phases (48 kHz → 16 kHz is 1, 44.1 kHz → 16 kHz is 160), computed per
//! sample otherwise. Cost is linear in the output length.

/// Zero crossings of the sinc on each side (at the output's rate when downsampling).
const ZERO_CROSSINGS: f64 = 16.0;
/// The most phases a precomputed table has.
const MAX_PHASES: usize = 1024;

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn sinc(x: f64) -> f64 {
    if x.abs() < 1e-9 {
        1.0
    } else {
        let pi_x = std::f64::consts::PI * x;
        pi_x.sin() / pi_x
    }
}

fn blackman(position: f64) -> f64 {
    // position in [-1, 1].
    let x = std::f64::consts::PI * (position + 1.0);
    0.42 - 0.5 * x.cos() + 0.08 * (2.0 * x).cos()
}

/// `input` at `from` Hz, converted to `to` Hz.
pub(crate) fn to_rate(input: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || input.is_empty() || from == 0 || to == 0 {
        return input.to_vec();
    }
    let divisor = gcd(u64::from(from), u64::from(to));
    let step = u64::from(from) / divisor; // input samples per `phases` outputs
    let phases = u64::from(to) / divisor;
    let cutoff = (f64::from(to) / f64::from(from)).min(1.0);
    let half = (ZERO_CROSSINGS / cutoff).ceil() as i64;
    let taps = usize::try_from(2 * half).unwrap_or(0);
    let weights = |fraction: f64| -> Vec<f32> {
        // Taps for input samples center - half + 1 ..= center + half, at distance x from t.
        let mut row: Vec<f64> = (0..taps)
            .map(|i| {
                let k = i as i64 - half + 1;
                let x = fraction - k as f64;
                cutoff * sinc(cutoff * x) * blackman((x / half as f64).clamp(-1.0, 1.0))
            })
            .collect();
        let sum: f64 = row.iter().sum();
        if sum.abs() > 1e-12 {
            row.iter_mut().for_each(|w| *w /= sum);
        }
        row.into_iter().map(|w| w as f32).collect()
    };
    let out_len = (input.len() as u64 * phases / step) as usize;
    let table: Option<Vec<Vec<f32>>> = (phases as usize <= MAX_PHASES).then(|| {
        (0..phases)
            .map(|phase| weights((phase * step % phases) as f64 / phases as f64))
            .collect()
    });
    let len = input.len() as i64;
    let mut out = Vec::with_capacity(out_len);
    for n in 0..out_len as u64 {
        let position = n * step;
        let center = (position / phases) as i64;
        let computed;
        let row = match &table {
            Some(table) => &table[(n % phases) as usize],
            None => {
                computed = weights((position % phases) as f64 / phases as f64);
                &computed
            }
        };
        let first = center - half + 1;
        let mut acc = 0.0f32;
        if first >= 0 && first + taps as i64 <= len {
            let window = &input[first as usize..first as usize + taps];
            for (sample, weight) in window.iter().zip(row) {
                acc += sample * weight;
            }
        } else {
            for (i, weight) in row.iter().enumerate() {
                let k = first + i as i64;
                if (0..len).contains(&k) {
                    acc += input[k as usize] * weight;
                }
            }
        }
        out.push(acc);
    }
    out
}
