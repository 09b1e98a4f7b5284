//! Speech to text in process on this machine's CPU: the test Whisper model (tiny.en, see
//! `souz_core::testing::whisper_model_dir`) on about 10 s of espeak-ng English (two sentences
//! with a pause), through the service's decode and the model: load time, the real-time factor
//! (transcription time over audio length; the aim is under 0.5), the word error rate,
//! and the process's resident memory before loading, loaded, and after unloading.
//!
//! `cargo bench --profile dev --workspace --bench speech` (candle and gemm are optimised in the
//! dev profile; this shared machine builds no release profile). Prints its figures.

#![allow(clippy::expect_used, clippy::print_stdout)] // a benchmark may stop loudly

use std::time::Instant;

use souz_core::speech::decode::decode;
use souz_core::speech::whisper::WhisperModel;
use souz_core::testing::{spoken_wav, whisper_model_dir, word_error_rate};
use tokio_util::sync::CancellationToken;

/// Resident memory of this process in MiB (Linux; 0 elsewhere).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

const FIRST: &str = "Please send the report to my manager before five o'clock.";
const SECOND: &str = "The train to London leaves from platform number nine.";

fn main() {
    // As `souz serve` does: freed large blocks go back to the system.
    souz_core::host::return_large_blocks();
    let mut samples = decode(&spoken_wav(FIRST, "en-us"))
        .expect("decoded")
        .samples()
        .to_vec();
    samples.resize(samples.len() + 16_000 * 2, 0.0);
    samples.extend_from_slice(
        decode(&spoken_wav(SECOND, "en-us"))
            .expect("decoded")
            .samples(),
    );
    let audio_s = samples.len() as f64 / 16_000.0;
    let said = format!("{FIRST} {SECOND}");

    let before = rss_mib();
    let started = Instant::now();
    let mut model = WhisperModel::load(&whisper_model_dir()).expect("the test model loads");
    let load = started.elapsed();
    let loaded = rss_mib();
    let cancel = CancellationToken::new();
    // One warm-up, then three measured runs.
    model.transcribe(&samples, "en", &cancel).expect("heard");
    let mut times = Vec::new();
    let mut heard = String::new();
    for _ in 0..3 {
        let started = Instant::now();
        heard = model.transcribe(&samples, "en", &cancel).expect("heard");
        times.push(started.elapsed().as_secs_f64());
    }
    let peak = rss_mib();
    drop(model);
    let unloaded = rss_mib();
    times.sort_by(f64::total_cmp);
    println!(
        "speech: Whisper tiny.en on {audio_s:.1} s of espeak-ng English, {} threads",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!("  load {:.0} ms", load.as_secs_f64() * 1000.0);
    println!(
        "  transcribe: median {:.2} s (min {:.2}, max {:.2}); real-time factor {:.2} (aim < 0.5)",
        times[1],
        times[0],
        times[2],
        times[1] / audio_s
    );
    println!(
        "  WER {:.1}%  heard: {heard}",
        word_error_rate(&said, &heard) * 100.0
    );
    println!(
        "  RSS: before {before:.1} MiB, loaded {loaded:.1}, after transcribing {peak:.1}, unloaded {unloaded:.1}"
    );
}
