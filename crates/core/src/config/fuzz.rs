//! Property-based fuzzing of `config.toml` parsing (stable toolchain, `proptest`): any text and
//! any environment override either load or are reported as problems that point into the file,
//! never a panic.
//!
//! The test command runs the default number of cases; `scripts/fuzz.sh` runs many more.

use std::collections::HashMap;
use std::path::Path;

use proptest::prelude::*;

use super::{Config, ENV_OVERRIDES, Location, Problem, SouzPaths};

fn parse(text: &str, env: &HashMap<String, String>) -> Result<Config, Vec<Problem>> {
    let lookup = |name: &str| env.get(name).cloned();
    Config::parse(
        SouzPaths::new("/tmp/souz-fuzz"),
        Path::new("config.toml"),
        text,
        &lookup,
    )
}

/// Every problem names a real place: a line and column inside the text, or a variable.
fn located(text: &str, problems: &[Problem]) -> Result<(), TestCaseError> {
    let lines = text.split('\n').count();
    for problem in problems {
        prop_assert!(!problem.to_string().is_empty());
        if let Location::File { line, column, .. } = &problem.location {
            prop_assert!(*line >= 1 && *line <= lines, "{problem} in {lines} lines");
            prop_assert!(*column >= 1, "{problem}");
        }
    }
    Ok(())
}

/// A TOML value of any kind, extremes included.
fn toml_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(|number| number.to_string()),
        any::<f64>().prop_map(|number| format!("{number:?}")),
        Just("nan".to_owned()),
        Just("-inf".to_owned()),
        any::<bool>().prop_map(|flag| flag.to_string()),
        ".{0,16}".prop_map(|text| format!("{text:?}")),
        "[a-z0-9:/._ -]{0,16}".prop_map(|text| format!("\"{text}\"")),
        Just("1979-05-27T07:32:00Z".to_owned()),
        Just("\"1 GB\"".to_owned()),
        Just("\"~/x\"".to_owned()),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec(("[a-z_]{1,6}", inner), 0..3).prop_map(|pairs| {
                let pairs: Vec<String> = pairs
                    .iter()
                    .map(|(key, value)| format!("{key} = {value}"))
                    .collect();
                format!("{{ {} }}", pairs.join(", "))
            }),
        ]
    })
}

/// `[section]` blocks with real section and key names (and a few unknown ones) set to random
/// values.
fn config_text() -> impl Strategy<Value = String> {
    let mut names: Vec<(String, String)> = Config::sections()
        .iter()
        .flat_map(|section| {
            section
                .keys
                .iter()
                .map(|key| (section.name.to_owned(), key.name.to_owned()))
        })
        .collect();
    names.push(("llm".into(), "no_such_key".into()));
    names.push(("no_such_section".into(), "key".into()));
    prop::collection::vec((prop::sample::select(names), toml_value()), 0..8).prop_map(|settings| {
        settings
            .iter()
            .map(|((section, key), value)| format!("[{section}]\n{key} = {value}\n"))
            .collect::<String>()
    })
}

proptest! {
    #[test]
    fn any_text_loads_or_is_reported_in_place(text in any::<String>()) {
        if let Err(problems) = parse(&text, &HashMap::new()) {
            prop_assert!(!problems.is_empty());
            located(&text, &problems)?;
        }
    }

    #[test]
    fn random_settings_load_or_are_reported_in_place(text in config_text()) {
        if let Err(problems) = parse(&text, &HashMap::new()) {
            prop_assert!(!problems.is_empty());
            located(&text, &problems)?;
        }
    }

    #[test]
    fn the_template_with_random_bytes_replaced_loads_or_is_reported(
        edits in prop::collection::vec((any::<prop::sample::Index>(), ".{0,3}"), 1..6),
    ) {
        let mut text = Config::template();
        for (at, replacement) in &edits {
            let mut offset = at.index(text.len().max(1));
            while !text.is_char_boundary(offset) {
                offset -= 1;
            }
            let mut end = (offset + replacement.len().max(1)).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(offset..end.max(offset), replacement);
        }
        if let Err(problems) = parse(&text, &HashMap::new()) {
            located(&text, &problems)?;
        }
    }

    #[test]
    fn any_environment_override_loads_or_is_reported(
        values in prop::collection::vec((prop::sample::select(ENV_OVERRIDES), prop_oneof![".{0,12}", "[0-9]{1,20}", Just(String::new())]), 1..5),
    ) {
        let env: HashMap<String, String> = values
            .into_iter()
            .filter(|(variable, _)| variable.name != "SOUZ_HOME")
            .map(|(variable, value)| (variable.name.to_owned(), value))
            .collect();
        if let Err(problems) = parse("", &env) {
            prop_assert!(!problems.is_empty());
            located("", &problems)?;
        }
    }
}
