//! Property-based fuzzing of the shell lexer (stable toolchain, `proptest`): any text is read
//! without a panic, and text whose meaning is certain is read exactly.
//!
//! The test command runs the default number of cases; `scripts/fuzz.sh` runs many more.

use proptest::prelude::*;

use super::{is_wrapper, parse, plain_command, prefix_words, starts_with};

/// A word that needs no quoting and is neither a wrapper nor a reserved word.
fn plain_word() -> impl Strategy<Value = String> {
    "[a-z0-9_./-]{1,8}"
}

/// A program name that is not a wrapper (reserved words all start with other letters).
fn program() -> impl Strategy<Value = String> {
    "q[a-z0-9_]{0,7}".prop_filter("not a wrapper", |program| !is_wrapper(program))
}

/// `text` single-quoted for a POSIX shell (`'` becomes `'\''`).
fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

proptest! {
    #[test]
    fn any_line_is_read_without_panic(line in any::<String>()) {
        let parsed = parse(&line);
        prop_assert_eq!(&parsed, &parse(&line));
        let _ = plain_command(&line);
        let words = prefix_words(&line);
        if !words.is_empty() {
            let _ = starts_with(&words, &words);
        }
    }

    #[test]
    fn shell_like_noise_is_read_without_panic(
        line in r#"([a-z ]|[|&;<>()$`'"\\{}*?~=#!]|\$\(|\$\{|<<|>>|&&|\|\||\n|sh -c |sudo |env ){0,60}"#,
    ) {
        let parsed = parse(&line);
        prop_assert_eq!(&parsed, &parse(&line));
        for words in &parsed.commands {
            prop_assert!(!words.is_empty(), "an empty command in {:?}", parsed);
        }
    }

    #[test]
    fn plain_words_are_one_transparent_command(
        program in program(),
        arguments in prop::collection::vec(plain_word(), 0..6),
    ) {
        let mut words = vec![program];
        words.extend(arguments);
        let parsed = parse(&words.join(" "));
        prop_assert!(!parsed.opaque, "{:?}", parsed);
        prop_assert_eq!(&parsed.commands, &vec![words.clone()]);
        prop_assert_eq!(parsed.invocations.len(), 1);
        prop_assert_eq!(&parsed.invocations[0].words, &words);
    }

    #[test]
    fn a_single_quoted_argument_is_one_word_exactly(
        program in program(),
        argument in "[^\\x00-\\x1f\\x7f]{0,24}",
    ) {
        let line = format!("{program} {}", single_quoted(&argument));
        let parsed = parse(&line);
        prop_assert!(!parsed.opaque, "{line:?} read as {:?}", parsed);
        prop_assert_eq!(&parsed.commands, &vec![vec![program, argument]]);
    }

    #[test]
    fn separators_split_commands_in_order(
        commands in prop::collection::vec((program(), prop::collection::vec(plain_word(), 0..3)), 1..5),
        separators in prop::collection::vec(prop::sample::select(vec!["; ", " && ", " || ", " | ", "\n"]), 4),
    ) {
        let mut line = String::new();
        let mut expected = Vec::new();
        for (index, (program, arguments)) in commands.iter().enumerate() {
            if index > 0 {
                line.push_str(separators[index - 1]);
            }
            let mut words = vec![program.clone()];
            words.extend(arguments.iter().cloned());
            line.push_str(&words.join(" "));
            expected.push(words);
        }
        let parsed = parse(&line);
        prop_assert!(!parsed.opaque, "{line:?} read as {:?}", parsed);
        prop_assert_eq!(parsed.commands, expected);
    }
}
