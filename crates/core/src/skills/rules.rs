//! Validation of a bundle, fail-closed: the specification and structural checks, then the
//! original's static rules over every file (§5.5). Any ERROR finding rejects the bundle.
//!
//! Invariants:
//! - [`POLICY_VERSION`] names this rule set; a verdict cached under another version is not
//!   reused, so changing a rule means bumping it.
//! - Every rule is case-insensitive and reports the file and the line it matched on.

use std::sync::LazyLock;

use regex::Regex;

use super::bundle::{Bundle, SKILL_MD};
use super::{frontmatter, manifest};

/// The version of the rules below.
pub(crate) const POLICY_VERSION: &str = "skills-policy/v1";

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    /// For information.
    Info,
    /// Worth a look; does not reject.
    Warning,
    /// Rejects the bundle.
    Error,
}

/// One thing validation found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Finding {
    /// Stable code (`struct.*`, `spec.*`, `static.*`).
    pub code: String,
    /// For people.
    pub message: String,
    /// How serious.
    pub severity: Severity,
    /// The file, if about one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub file_path: Option<String>,
}

impl Finding {
    pub(crate) fn error(code: &str, message: impl Into<String>, file_path: Option<&str>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
            severity: Severity::Error,
            file_path: file_path.map(str::to_owned),
        }
    }
}

/// Whether `findings` reject.
pub(crate) fn rejects(findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|finding| finding.severity == Severity::Error)
}

/// A static rule: its code, what it means, its pattern.
struct Rule {
    code: &'static str,
    meaning: &'static str,
    pattern: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        code: "static.prompt_injection",
        meaning: "asks the model to ignore its instructions",
        pattern: r"ignore\b.{0,80}\b(previous|prior|system|developer)\b.{0,40}\binstructions?",
    },
    Rule {
        code: "static.credential_exfiltration",
        meaning: "sends credentials somewhere",
        pattern: r"(api[ _-]?key|token|secret|password).{0,80}(send|upload|exfiltrat|post\b|curl|wget)",
    },
    Rule {
        code: "static.private_key_reference",
        meaning: "refers to private keys or SSH files",
        pattern: r"(\.ssh\b|id_rsa|id_ed25519|known_hosts)",
    },
    Rule {
        code: "static.env_dump",
        meaning: "dumps the environment",
        pattern: r"(\bprintenv\b|(^|[\s;|&(`])env\s*($|[|;&>)`])|/proc/self/environ|System\.getenv|process\.env\b|os\.environ\b)",
    },
    Rule {
        code: "static.destructive_command",
        meaning: "runs a destructive command",
        pattern: r"(\brm\s+-(rf|fr|r\s+-f|f\s+-r)\b|chmod\s+-R\s+777|\bmkfs(\.\w+)?\b|\bdd\b[^\n]*\bof=/dev/)",
    },
    Rule {
        code: "static.network_exfiltration",
        meaning: "uploads data over the network",
        pattern: r"\b(curl|wget)\b[^\n]*(\s--data(-binary|-raw|-urlencode)?\b|\s--upload-file\b|\s-T\s|\s-F\s|\s--form\b|\s-d\s|-X\s*(PUT|POST)\b|--post-(data|file)\b)",
    },
    Rule {
        code: "static.shell_obfuscation",
        meaning: "pipes decoded or generated code into a shell",
        pattern: r"(base64\s+(-d|--decode)|openssl\s+enc|python3?\s+-c|xxd\s+-r)[^\n]*\|\s*(sh|bash|zsh)\b",
    },
];

static COMPILED: LazyLock<Vec<(&'static Rule, Regex)>> = LazyLock::new(|| {
    RULES
        .iter()
        .filter_map(|rule| {
            regex::RegexBuilder::new(rule.pattern)
                .case_insensitive(true)
                .multi_line(true)
                .build()
                .ok()
                .map(|regex| (rule, regex))
        })
        .collect()
});

/// The static rules' findings over every file.
pub(crate) fn static_findings(bundle: &Bundle) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (path, text) in bundle.files() {
        for (rule, regex) in COMPILED.iter() {
            if let Some(found) = regex.find(text) {
                let line = text[..found.start()].matches('\n').count() + 1;
                findings.push(Finding::error(
                    rule.code,
                    format!(
                        "{path}:{line} {}: `{}`",
                        rule.meaning,
                        found.as_str().chars().take(120).collect::<String>()
                    ),
                    Some(path),
                ));
            }
        }
    }
    findings
}

/// Every finding for `bundle` in a folder named `folder`: specification problems (legacy fields
/// are information: an import moves them), manifest problems, then the static rules.
pub(crate) fn validate(bundle: &Bundle, folder: Option<&str>) -> Vec<Finding> {
    let mut findings: Vec<Finding> = match frontmatter::parse(bundle.skill_md(), folder) {
        Ok(parsed) => parsed
            .frontmatter
            .legacy_fields
            .iter()
            .map(|field| Finding {
                code: "spec.legacy_field".to_owned(),
                message: format!("field `{field}` was moved into metadata"),
                severity: Severity::Info,
                file_path: Some(SKILL_MD.to_owned()),
            })
            .collect(),
        Err(problems) => problems
            .into_iter()
            .map(|problem| Finding::error(problem.code, problem.message, Some(SKILL_MD)))
            .collect(),
    };
    if let Some(text) = bundle.files().get(manifest::MANIFEST_PATH)
        && let Err(problems) = manifest::parse(text)
    {
        findings.extend(problems.into_iter().map(|problem| {
            Finding::error("manifest.invalid", problem, Some(manifest::MANIFEST_PATH))
        }));
    }
    findings.extend(static_findings(bundle));
    findings
}

/// The number of static rules that compiled (all of them; a test checks).
#[cfg(test)]
pub(crate) fn compiled_rules() -> usize {
    COMPILED.len()
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
