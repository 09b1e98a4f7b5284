//! Prints, as one JSON object `{file: text}`, the readable text Souz extracts from each HTML
//! file named on the command line (the extractor of `WebPageText` and the research tools).
//! `scripts/extraction_agreement.py` compares it with trafilatura's.
//!
//! `cargo run -q -p souz-core --features test-support --example extract_text -- PAGE.html...`

#![allow(clippy::print_stdout, clippy::print_stderr)] // a command-line tool

use std::collections::BTreeMap;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut texts = BTreeMap::new();
    for path in std::env::args().skip(1) {
        let html = match std::fs::read_to_string(&path) {
            Ok(html) => html,
            Err(error) => {
                eprintln!("{path}: {error}");
                return ExitCode::FAILURE;
            }
        };
        let name = std::path::Path::new(&path)
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or(path.clone());
        let (_, text) =
            souz_core::testing::web::readable_text(&html, &format!("https://pages.example/{name}"));
        texts.insert(name, text);
    }
    match serde_json::to_string(&texts) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}
