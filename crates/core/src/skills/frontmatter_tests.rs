use super::*;

fn doc(frontmatter: &str) -> String {
    format!("---\n{frontmatter}\n---\n# Body\n\nSteps.\n")
}

fn codes(text: &str, folder: Option<&str>) -> Vec<&'static str> {
    match parse(text, folder) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.into_iter().map(|problem| problem.code).collect(),
    }
}

#[test]
fn a_valid_skill_parses_with_every_field() {
    let text = doc(
        "name: pdf-tools\ndescription: Fill PDF forms.\nlicense: Apache-2.0\n\
         compatibility: needs python3\nallowed-tools: Bash(git:*) Read\n\
         metadata:\n  owner: team\n  level: 3",
    );
    let parsed = parse(&text, Some("pdf-tools")).unwrap();
    assert_eq!(parsed.frontmatter.name, "pdf-tools");
    assert_eq!(parsed.frontmatter.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(parsed.frontmatter.allowed_tools, ["Bash(git:*)", "Read"]);
    assert_eq!(parsed.frontmatter.metadata["level"], "3");
    assert_eq!(parsed.body, "# Body\n\nSteps.");
}

#[test]
fn crlf_is_normalized() {
    let text = "---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n";
    assert_eq!(parse(text, Some("a")).unwrap().body, "body");
}

#[test]
fn name_rules() {
    for (name, folder) in [
        ("Upper", "Upper"),
        ("-lead", "-lead"),
        ("trail-", "trail-"),
        ("dou--ble", "dou--ble"),
        ("under_score", "under_score"),
        ("dot.ted", "dot.ted"),
    ] {
        let text = doc(&format!("name: {name}\ndescription: d"));
        assert_eq!(codes(&text, Some(folder)), ["spec.name"], "{name}");
    }
    let long = "a".repeat(MAX_NAME_CHARS + 1);
    let text = doc(&format!("name: {long}\ndescription: d"));
    assert_eq!(codes(&text, Some(&long)), ["spec.name"]);
    let exact = "a".repeat(MAX_NAME_CHARS);
    let text = doc(&format!("name: {exact}\ndescription: d"));
    assert!(codes(&text, Some(&exact)).is_empty());
    // Unicode letters are letters.
    assert!(codes(&doc("name: навык\ndescription: d"), Some("навык")).is_empty());
}

#[test]
fn the_folder_must_match_the_name() {
    let text = doc("name: alpha\ndescription: d");
    assert_eq!(codes(&text, Some("beta")), ["spec.name_folder"]);
    assert!(codes(&text, None).is_empty());
}

#[test]
fn description_and_compatibility_lengths() {
    let at = "d".repeat(MAX_DESCRIPTION_CHARS);
    assert!(codes(&doc(&format!("name: a\ndescription: {at}")), Some("a")).is_empty());
    let over = "d".repeat(MAX_DESCRIPTION_CHARS + 1);
    assert_eq!(
        codes(&doc(&format!("name: a\ndescription: {over}")), Some("a")),
        ["spec.field_length"]
    );
    let over = "c".repeat(MAX_COMPATIBILITY_CHARS + 1);
    assert_eq!(
        codes(
            &doc(&format!("name: a\ndescription: d\ncompatibility: {over}")),
            Some("a")
        ),
        ["spec.field_length"]
    );
    assert_eq!(
        codes(&doc("name: a\ndescription: \"  \""), Some("a")),
        ["spec.description"]
    );
}

#[test]
fn missing_fields_unknown_fields_and_bad_metadata_are_all_reported() {
    let problems = codes(
        &doc("extra: 1\nmetadata:\n  nested:\n    deep: x"),
        Some("a"),
    );
    assert!(problems.contains(&"spec.unknown_field"));
    assert!(problems.contains(&"spec.name"));
    assert!(problems.contains(&"spec.description"));
    assert!(problems.contains(&"spec.metadata"));
}

#[test]
fn broken_documents() {
    assert_eq!(codes("name: a\n", None), ["spec.no_frontmatter"]);
    assert_eq!(codes("---\nname: a\n", None), ["spec.unclosed_frontmatter"]);
    assert_eq!(codes("---\n[a, b]\n---\n", None), ["spec.yaml"]);
    assert_eq!(codes("---\nname: [\n---\n", None), ["spec.yaml"]);
}

#[test]
fn legacy_fields_move_into_metadata_and_the_strict_check_names_them() {
    let text = doc(
        "name: a\ndescription: d\nauthor: Ann\nversion: 1.2\noauthScopes:\n  - mail.read\n  - mail.send",
    );
    let parsed = parse(&text, Some("a")).unwrap();
    assert_eq!(parsed.frontmatter.metadata["author"], "Ann");
    assert_eq!(parsed.frontmatter.metadata["version"], "1.2");
    assert_eq!(
        parsed.frontmatter.metadata["oauthScopes"],
        "mail.read mail.send"
    );
    let strict = strict_problems(&text, Some("a"));
    assert_eq!(strict.len(), 3);
    assert!(
        strict
            .iter()
            .all(|problem| problem.code == "spec.legacy_field")
    );
}
