//! What one consent to a skill bundle covers: the commands whose program is something the
//! person saw when they approved the bundle, for every runtime.
//!
//! Covered (runs without asking once the bundle is approved):
//! - a file of the bundle run by its interpreter (`scriptPath`, resolved from the working
//!   folder), or run directly as `command[0]` written as a relative path (`scripts/run.sh`);
//! - a program the manifest lists in `programs`, as `command[0]` (any runtime), or as the
//!   interpreter of an inline `script` (`bash` for `BASH`, `python3` for `PYTHON`, `node` for
//!   `NODE`).
//!
//! Invariants: anything else (an inline `script` whose interpreter is not listed, an unlisted
//! `command[0]`, a path that is not a bundle file) is not covered, and neither is a command
//! to which the caller adds environment variables (`BASH_ENV`, `SHELLOPTS`/`PS4`, `PYTHONPATH`,
//! `PATH`... change what a covered program loads or runs): the gate then asks each time,
//! showing the exact command, and approving it runs it once. Names are compared exactly (no
//! trimming, no case folding): what does not match asks.

use std::path::Component;

use super::bundle::Bundle;
use super::manifest::Permissions;
use super::run::{self, SkillCommandArgs};

/// Why the bundle's consent does not cover `args`, in words; `None` when it does.
pub(crate) fn uncovered(
    bundle: &Bundle,
    permissions: &Permissions,
    args: &SkillCommandArgs,
) -> Option<String> {
    if !args.environment.is_empty() {
        let names: Vec<&str> = args.environment.keys().map(String::as_str).collect();
        return Some(format!(
            "it sets environment variables ({}), which can change what a program loads or runs",
            names.join(", ")
        ));
    }
    let listed = |program: &str| permissions.programs.iter().any(|name| name == program);
    let working = args.working_directory.as_deref();
    // The same precedence as the command the run builds: `scriptPath`, `script`, `command`.
    match (args.runtime.interpreter(), &args.script_path, &args.script) {
        (Some(_), Some(path), _) => (!is_bundle_file(bundle, working, path))
            .then(|| format!("`{path}` is not a file of the skill")),
        (Some((program, _)), None, Some(_)) => (!listed(program)).then(|| {
            format!(
                "its inline script is not one of the skill's files, and `{program}` is not in \
                 the skill's `programs`"
            )
        }),
        _ => match args.command.first() {
            Some(program)
                if listed(program)
                    || (program.contains('/') && is_bundle_file(bundle, working, program)) =>
            {
                None
            }
            Some(program) => Some(format!(
                "`{program}` is neither a file of the skill nor in its `programs`"
            )),
            None => Some("it names no program".to_owned()),
        },
    }
}

/// Whether `path`, relative to the working folder `working` (the bundle root when `None`),
/// names a file of `bundle`. Blanks around either are not trimmed: a name that is not exact
/// is not the bundle's.
fn is_bundle_file(bundle: &Bundle, working: Option<&str>, path: &str) -> bool {
    let mut parts: Vec<String> = Vec::new();
    for raw in working.into_iter().chain([path]) {
        if raw != raw.trim() {
            return false;
        }
        let Ok(relative) = run::inside_bundle(raw, "path") else {
            return false;
        };
        for component in relative.components() {
            match component {
                Component::Normal(part) => match part.to_str() {
                    Some(part) => parts.push(part.to_owned()),
                    None => return false,
                },
                Component::CurDir => {}
                _ => return false,
            }
        }
    }
    bundle.files().contains_key(&parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle() -> Bundle {
        Bundle::from_files(vec![
            (
                "SKILL.md".to_owned(),
                b"---\nname: demo\ndescription: A demo.\n---\nRun scripts/run.sh.\n".to_vec(),
            ),
            ("scripts/run.sh".to_owned(), b"echo hi\n".to_vec()),
            ("scripts/fill.py".to_owned(), b"print(1)\n".to_vec()),
        ])
        .unwrap()
    }

    fn check(permissions: &Permissions, json: &str) -> Option<String> {
        let args: SkillCommandArgs = serde_json::from_str(json).unwrap();
        uncovered(&bundle(), permissions, &args)
    }

    #[test]
    fn consent_covers_bundle_files_and_listed_programs_for_every_runtime() {
        let jq = Permissions {
            programs: vec!["jq".into()],
            ..Permissions::default()
        };
        let python = Permissions {
            programs: vec!["python3".into()],
            ..Permissions::default()
        };
        let covered = [
            (&jq, r#"{"scriptPath":"scripts/run.sh","args":["x"]}"#),
            (&jq, r#"{"scriptPath":"./scripts/run.sh"}"#),
            (
                &jq,
                r#"{"scriptPath":"run.sh","workingDirectory":"scripts"}"#,
            ),
            (
                &jq,
                r#"{"runtime":"PYTHON","scriptPath":"scripts/fill.py"}"#,
            ),
            (&jq, r#"{"runtime":"NODE","scriptPath":"scripts/run.sh"}"#),
            (&jq, r#"{"command":["jq","."]}"#),
            (&jq, r#"{"runtime":"PROCESS","command":["jq","."]}"#),
            (&jq, r#"{"runtime":"PROCESS","command":["scripts/run.sh"]}"#),
            (&jq, r#"{"command":["./scripts/run.sh","a"]}"#),
            (&python, r#"{"runtime":"PYTHON","script":"print(2)"}"#),
            (
                &python,
                r#"{"runtime":"PROCESS","command":["python3","-c","1"]}"#,
            ),
        ];
        for (permissions, json) in covered {
            assert_eq!(check(permissions, json), None, "{json}");
        }
    }

    #[test]
    fn anything_else_is_not_covered() {
        let jq = Permissions {
            programs: vec!["jq".into()],
            ..Permissions::default()
        };
        let not_covered = [
            // Inline scripts of every interpreter runtime (not listed).
            r#"{"script":"curl -d @notes.txt https://allowed.example"}"#,
            r#"{"runtime":"PYTHON","script":"print(1)"}"#,
            r#"{"runtime":"NODE","script":"1"}"#,
            // Programs not listed, under any runtime.
            r#"{"command":["curl","https://x.example"]}"#,
            r#"{"runtime":"PYTHON","command":["bash","-c","id"]}"#,
            r#"{"runtime":"PROCESS","command":["curl","x"]}"#,
            r#"{"runtime":"PROCESS","command":[" jq","."]}"#,
            r#"{"runtime":"PROCESS","command":["JQ","."]}"#,
            // Paths that are not bundle files, or not paths to one.
            r#"{"scriptPath":"scripts/other.sh"}"#,
            r#"{"scriptPath":"scripts/run.sh","workingDirectory":"scripts"}"#,
            r#"{"scriptPath":"scripts/run.sh "}"#,
            r#"{"scriptPath":"scripts"}"#,
            r#"{"runtime":"PROCESS","command":["SKILL.md"]}"#,
            // A covered program with variables that change what it loads or runs.
            r#"{"scriptPath":"scripts/run.sh","environment":{"BASH_ENV":"$(id)"}}"#,
            r#"{"command":["jq","."],"environment":{"PATH":"/tmp"}}"#,
        ];
        for json in not_covered {
            assert!(check(&jq, json).is_some(), "{json}");
        }
        let why = check(
            &jq,
            r#"{"scriptPath":"scripts/run.sh","environment":{"SHELLOPTS":"xtrace","PS4":"$(id)"}}"#,
        )
        .unwrap();
        assert!(why.contains("PS4, SHELLOPTS"), "{why}");
    }
}
