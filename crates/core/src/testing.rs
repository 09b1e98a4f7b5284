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
mod home;
mod internals;
pub mod probes;
mod runtime;

#[cfg(test)]
mod tests;

pub use gate::TestGate;
pub use home::{TestHome, tool_context};
pub use internals::RuntimeInternals;
pub use runtime::{FAKE_OPENAI_KEY, TestRuntime, TestRuntimeBuilder, environment};
