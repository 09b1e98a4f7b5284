//! Spec agreement with `skills-ref` (the specification's reference validator, installed by
//! `scripts/clients.sh` into `tests/clients/.venv`): over a fixture set of valid and invalid
//! skills, Souz's strict check accepts exactly the skills the oracle accepts.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::bundle::Bundle;
use super::frontmatter::strict_problems;

fn oracle() -> PathBuf {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients/.venv/bin/agentskills");
    assert!(
        path.is_file(),
        "{} is missing: run `source scripts/clients.sh && souz_install_clients` (scripts/test.sh does)",
        path.display()
    );
    path
}

/// (folder, SKILL.md) pairs; `None` leaves SKILL.md out.
fn fixtures() -> Vec<(String, Option<String>)> {
    let doc = |frontmatter: &str| Some(format!("---\n{frontmatter}\n---\n# Steps\n\nDo it.\n"));
    let long = |n: usize| "x".repeat(n);
    vec![
        (
            "minimal".into(),
            doc("name: minimal\ndescription: Does a thing."),
        ),
        (
            "full".into(),
            doc(
                "name: full\ndescription: All fields.\nlicense: MIT\ncompatibility: python3\nallowed-tools: Bash Read\nmetadata:\n  owner: team\n  tier: gold",
            ),
        ),
        ("digits-1".into(), doc("name: digits-1\ndescription: d")),
        (
            "навык".into(),
            doc("name: навык\ndescription: Unicode letters."),
        ),
        (
            "quoted".into(),
            doc("name: \"quoted\"\ndescription: 'Quoted: yes'"),
        ),
        (
            "folded".into(),
            doc("name: folded\ndescription: >\n  Spans\n  lines."),
        ),
        (
            long(64),
            doc(&format!("name: {}\ndescription: d", long(64))),
        ),
        (
            long(65),
            doc(&format!("name: {}\ndescription: d", long(65))),
        ),
        (
            "desc-max".into(),
            doc(&format!("name: desc-max\ndescription: {}", long(1024))),
        ),
        (
            "desc-over".into(),
            doc(&format!("name: desc-over\ndescription: {}", long(1025))),
        ),
        (
            "compat-max".into(),
            doc(&format!(
                "name: compat-max\ndescription: d\ncompatibility: {}",
                long(500)
            )),
        ),
        (
            "compat-over".into(),
            doc(&format!(
                "name: compat-over\ndescription: d\ncompatibility: {}",
                long(501)
            )),
        ),
        ("Upper".into(), doc("name: Upper\ndescription: d")),
        ("-lead".into(), doc("name: -lead\ndescription: d")),
        ("trail-".into(), doc("name: trail-\ndescription: d")),
        ("dou--ble".into(), doc("name: dou--ble\ndescription: d")),
        (
            "under_score".into(),
            doc("name: under_score\ndescription: d"),
        ),
        ("mismatch".into(), doc("name: other-name\ndescription: d")),
        ("no-name".into(), doc("description: d")),
        ("no-description".into(), doc("name: no-description")),
        (
            "empty-description".into(),
            doc("name: empty-description\ndescription: \"\""),
        ),
        (
            "unknown-field".into(),
            doc("name: unknown-field\ndescription: d\nhomepage: x"),
        ),
        (
            "legacy-author".into(),
            doc("name: legacy-author\ndescription: d\nauthor: Ann"),
        ),
        ("no-frontmatter".into(), Some("# Just markdown\n".into())),
        (
            "unclosed".into(),
            Some("---\nname: unclosed\ndescription: d\n".into()),
        ),
        (
            "not-a-map".into(),
            Some("---\n- a\n- b\n---\nbody\n".into()),
        ),
        ("missing-file".into(), None),
    ]
}

#[test]
fn souz_agrees_with_skills_ref_on_every_fixture() {
    let oracle = oracle();
    let temp = tempfile::tempdir().unwrap();
    let mut disagreements = Vec::new();
    let fixtures = fixtures();
    for (folder, skill_md) in &fixtures {
        let dir = temp.path().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(text) = skill_md {
            std::fs::write(dir.join("SKILL.md"), text).unwrap();
        }
        let output = Command::new(&oracle)
            .arg("validate")
            .arg(&dir)
            .output()
            .unwrap();
        let theirs = output.status.success();
        let ours = match Bundle::read_folder(&dir) {
            Ok(bundle) => strict_problems(bundle.skill_md(), Some(folder)).is_empty(),
            Err(_) => false,
        };
        if theirs != ours {
            disagreements.push(format!(
                "{folder}: skills-ref {} ({}), Souz {}",
                if theirs { "accepts" } else { "rejects" },
                String::from_utf8_lossy(&output.stdout).trim(),
                if ours { "accepts" } else { "rejects" },
            ));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    // The set covers both verdicts.
    assert!(fixtures.len() > 20);
}
