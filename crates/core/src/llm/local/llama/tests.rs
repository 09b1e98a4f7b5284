//! The handles over llama.cpp with the real small model: tokens and pieces round-trip (the
//! buffers grow when the first guess is short), a grammar refusing a token is an error and
//! not an abort, a grammar llama.cpp cannot parse is refused, a batch keeps to its size; a
//! second generation reuses the KV cache of the prefix it shares with the last one and writes
//! what a fresh context writes.

use tokio_util::sync::CancellationToken;

use super::binding::{Batch, Candidates, Model, Sampler};
use super::{Generation, GenerationStats, LlamaCpp, LoadOptions, LoadedModel, LocalBackend};
use crate::testing::local_llm_model;

fn load() -> std::sync::Arc<dyn LoadedModel> {
    let options = LoadOptions {
        path: local_llm_model(),
        context: 2048,
        threads: 2,
        embeddings: false,
    };
    LlamaCpp.load(&options).expect("load")
}

/// A ChatML prompt: a long system part every turn shares, then `question`.
fn prompt(question: &str) -> String {
    let system = "You are Souz, a careful assistant on the user's own computer. \
                  You can read files, search the web and remember facts. "
        .repeat(3);
    format!(
        "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n\
         <|im_start|>assistant\n"
    )
}

fn generate(model: &dyn LoadedModel, question: &str) -> (String, GenerationStats) {
    let generation = Generation {
        prompt: prompt(question),
        grammar: None,
        max_tokens: 8,
        temperature: 0.0,
        seed: 1,
    };
    let mut text = String::new();
    let stats = model
        .generate(
            &generation,
            &mut |piece| {
                text.push_str(piece);
                true
            },
            &CancellationToken::new(),
        )
        .expect("generate");
    (text, stats)
}

#[test]
fn a_second_generation_reuses_the_shared_prefix_and_writes_what_a_fresh_context_writes() {
    let model = load();
    let (_, first) = generate(&*model, "What is the capital of France?");
    assert_eq!(first.reused_tokens, 0, "nothing kept yet");

    let (kept_text, second) = generate(&*model, "Name three colours.");
    let system_tokens = model.tokenize(&prompt("")).expect("tokenize").len() as u64;
    assert!(
        second.reused_tokens >= system_tokens - 8 && second.reused_tokens < second.prompt_tokens,
        "reused {} of {} (the system part is {system_tokens})",
        second.reused_tokens,
        second.prompt_tokens
    );

    // The same prompt again: everything but its last token comes from the cache.
    let (again_text, again) = generate(&*model, "Name three colours.");
    assert_eq!(again.reused_tokens, again.prompt_tokens - 1);

    // A model loaded afresh writes the same greedy answer.
    let fresh = load();
    let (fresh_text, fresh_stats) = generate(&*fresh, "Name three colours.");
    assert_eq!(fresh_stats.reused_tokens, 0);
    assert!(!fresh_text.is_empty());
    assert_eq!(kept_text, fresh_text);
    assert_eq!(again_text, fresh_text);
}

#[test]
fn tokens_and_pieces_round_trip_even_past_the_first_buffer() {
    let model = Model::load(&local_llm_model()).expect("load");
    let vocab = model.vocab();
    // Emoji are several byte-level tokens each: more tokens than the first guess (half the
    // bytes, plus 8) has room for.
    let text = "🦀🧪🪐🫖🦩🧭🪴🫧".repeat(4);
    let tokens = vocab.tokenize(&text, false, false).expect("tokenize");
    assert!(tokens.len() > text.len() / 2 + 8, "{} tokens", tokens.len());
    let bytes: Vec<u8> = tokens
        .iter()
        .flat_map(|&token| vocab.piece(token))
        .collect();
    assert_eq!(String::from_utf8(bytes).expect("UTF-8"), text);
    assert!(!tokens.iter().any(|&token| vocab.is_end(token)));
}

#[test]
fn a_token_the_grammar_refuses_is_an_error_and_the_allowed_one_is_accepted() {
    let model = Model::load(&local_llm_model()).expect("load");
    let vocab = model.vocab();
    let mut grammar = Sampler::grammar(vocab, r#"root ::= "yes""#).expect("grammar");
    let no = vocab.tokenize("no", false, false).expect("tokenize")[0];
    let mut single = Candidates::single(no);
    grammar.apply(&mut single).expect("apply");
    assert!(!single.first_allowed());
    // llama.cpp throws here; the guard turns it into an error and the process goes on.
    let error = grammar.accept(no).expect_err("refused");
    assert!(error.to_string().contains("does not allow"), "{error}");

    let mut grammar = Sampler::grammar(vocab, r#"root ::= "yes""#).expect("grammar");
    let yes = vocab.tokenize("yes", false, false).expect("tokenize");
    let mut single = Candidates::single(yes[0]);
    grammar.apply(&mut single).expect("apply");
    assert!(single.first_allowed());
    grammar.accept(yes[0]).expect("accepted");
}

#[test]
fn a_grammar_llama_cpp_cannot_parse_is_refused() {
    let model = Model::load(&local_llm_model()).expect("load");
    // The same call takes a grammar llama.cpp can parse.
    Sampler::grammar(model.vocab(), r#"root ::= "a" | "b""#).expect("a valid grammar");
    for rules in ["root ::= (", "root ::= undefined-rule", "not a grammar", ""] {
        assert!(
            Sampler::grammar(model.vocab(), rules).is_err(),
            "{rules:?} was taken"
        );
    }
    assert!(Sampler::grammar(model.vocab(), "root ::= \"a\0b\"").is_err());
}

#[test]
fn a_batch_keeps_to_its_size_and_a_missing_file_is_an_error() {
    let mut batch = Batch::new(2);
    batch.add(1, 0, false).expect("first");
    batch.add(2, 1, true).expect("second");
    assert!(batch.add(3, 2, true).is_err());
    assert_eq!(batch.len(), 2);
    batch.clear();
    batch.add(3, 0, true).expect("after clear");

    let missing = std::env::temp_dir().join("souz-no-such-model.gguf");
    assert!(Model::load(&missing).is_err());
}
