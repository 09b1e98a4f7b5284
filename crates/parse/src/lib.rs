//! Souz's parsers of untrusted input: documents, spreadsheets and web pages.
//!
//! Everything here reads bytes someone else wrote (a file the model was pointed at, a page a
//! server sent) and turns them into text or cells, within bounds that hold whatever the input:
//! depth (nothing recurses on the input's nesting without a bound), size (decompression and
//! expansion are measured before they happen), time (work checks a [`worker::Stop`] between
//! units and runs on a [`worker`] that gives up at a time limit) and memory.
//!
//! The crate knows nothing of the daemon: no store, no sandbox, no gate. A reader gets an
//! already opened file handle ([`documents::source::SourceFile`]) or a page's bytes, and the
//! daemon maps this crate's errors to its own. Being its own crate also lets the test suite run
//! the adversarial corpus (the tests here) in the optimised build people run, where stack
//! frames are laid out differently, without optimising the whole daemon for it.

pub mod documents;
pub mod html;
pub mod numbers;
#[cfg(any(test, feature = "fixtures"))]
pub mod testing;
pub mod worker;
