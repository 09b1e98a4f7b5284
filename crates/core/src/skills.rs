//! File-backed skills: `SKILL.md` bundles in the open Agent Skills format.
//!
//! - [`frontmatter`]: the specification's rules for `SKILL.md`.
//! - [`bundle`]: the loader limits and the canonical hash.
//! - [`archive`]: reading a `.zip` within the same limits.
//! - [`git`]: fetching a skill from a git repository over HTTP(S), through an egress proxy.
//! - [`manifest`]: the permissions sidecar `agents/souz.toml`.
//! - [`rules`]: validation (specification, structure, static rules) and its findings.
//! - [`review`]: the optional model review after the rules, with the original's JSON contract.
//! - [`registry`]: installed and imported skills, precedence, the verdict cache.
//! - [`run`]: one command of a skill, confined to its manifest.
//! - [`command_tool`]: that command as a gate call, with consent per (skill, bundle hash).
//! - [`coverage`]: which commands that consent covers (the bundle's files, listed programs).
//!
//! Invariants: nothing here follows a symlink out of a bundle or writes into an import folder;
//! a bundle that fails any check is not installed (fail-closed); a validation that could not
//! complete rejects and is not cached.

pub(crate) mod archive;
pub(crate) mod bundle;
pub(crate) mod command_tool;
pub(crate) mod coverage;
pub(crate) mod frontmatter;
pub(crate) mod git;
pub(crate) mod manifest;
pub(crate) mod registry;
pub(crate) mod review;
pub(crate) mod rules;
pub(crate) mod run;

use bundle::LoadError;
use frontmatter::SpecProblem;
use rules::Finding;

use crate::store::StoreError;

/// Why a skill operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SkillError {
    /// The bundle breaks a loader limit.
    #[error("{0}")]
    Load(#[from] LoadError),
    /// `SKILL.md` breaks the specification.
    #[error("SKILL.md does not follow the Agent Skills specification: {}", join(.0))]
    Spec(Vec<SpecProblem>),
    /// Validation rejected it.
    #[error("skill `{id}` was rejected: {}", findings.iter().filter(|f| f.severity == rules::Severity::Error).map(|f| f.message.as_str()).collect::<Vec<_>>().join("; "))]
    Rejected {
        /// The skill.
        id: String,
        /// Everything found.
        findings: Vec<Finding>,
    },
    /// No such skill.
    #[error("no skill named `{0}`")]
    NotFound(String),
    /// No such installed skill.
    #[error("no installed skill named `{0}`")]
    NotInstalled(String),
    /// An installed bundle no longer matches its hash.
    #[error("the installed files of skill `{0}` were changed; reinstall it")]
    Tampered(String),
    /// A git repository could not give the skill (bad URL, ref or folder; the fetch failed).
    #[error("{0}")]
    Git(String),
    /// Reading or writing failed.
    #[error("{0}")]
    Io(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn join(problems: &[SpecProblem]) -> String {
    problems
        .iter()
        .map(|problem| problem.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod oracle_tests;

impl From<git::GitError> for SkillError {
    fn from(error: git::GitError) -> Self {
        match error {
            git::GitError::Load(load) => Self::Load(load),
            other => Self::Git(other.to_string()),
        }
    }
}
