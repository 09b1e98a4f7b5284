//! File-backed skills for the adapters: list, show, install (folder, `.zip` or git URL), validate,
//! enable, disable, remove. Paths are the daemon machine's and must be absolute.

use std::path::Path;

use souz_protocol::{
    ErrorCode, FindingSeverity, InstalledSkill, SkillConsent, SkillDetail, SkillFinding,
    SkillGitSource, SkillList, SkillPermissions, SkillSource, SkillSummary, SkillValidation,
};

use super::ServiceError;
use crate::agent::skills::{BundleLookup, BundleSkill, SkillBundles};
use crate::approvals::RequestError;
use crate::runtime::RuntimeHandle;
use crate::skills::SkillError;
use crate::skills::command_tool::{SkillCommandParts, SkillCommandTool};
use crate::skills::git::GitSource;
use crate::skills::manifest::{self, MANIFEST_PATH};
use crate::skills::registry::{Installed, Listed, Source, Verdict};
use crate::skills::rules::{Finding, Severity};

impl From<SkillError> for ServiceError {
    fn from(error: SkillError) -> Self {
        match error {
            SkillError::NotFound(_) | SkillError::NotInstalled(_) => {
                Self::not_found(ErrorCode::NotFound, error.to_string())
            }
            SkillError::Load(_)
            | SkillError::Spec(_)
            | SkillError::Rejected { .. }
            | SkillError::Git(_) => Self::Invalid(error.to_string()),
            SkillError::Tampered(_) => Self::conflict(ErrorCode::Conflict, error.to_string()),
            SkillError::Store(store) => store.into(),
            SkillError::Io(_) => Self::internal(&error),
        }
    }
}

fn source(source: Source) -> SkillSource {
    match source {
        Source::Installed => SkillSource::Installed,
        Source::Project => SkillSource::Project,
        Source::UserAgents => SkillSource::UserAgents,
        Source::UserClaude => SkillSource::UserClaude,
    }
}

fn summary(listed: Listed) -> SkillSummary {
    SkillSummary {
        id: listed.id,
        source: source(listed.source),
        path: listed.path.display().to_string(),
        description: listed.description,
        hash: listed.hash,
        enabled: listed.enabled,
        error: listed.error,
    }
}

fn finding(finding: Finding) -> SkillFinding {
    SkillFinding {
        code: finding.code,
        message: finding.message,
        severity: match finding.severity {
            Severity::Info => FindingSeverity::Info,
            Severity::Warning => FindingSeverity::Warning,
            Severity::Error => FindingSeverity::Error,
        },
        file: finding.file_path,
    }
}

fn validation(id: Option<String>, hash: Option<String>, verdict: Verdict) -> SkillValidation {
    SkillValidation {
        approved: verdict.approved,
        id,
        hash,
        findings: verdict.findings.into_iter().map(finding).collect(),
    }
}

fn absolute(path: &str) -> Result<&Path, ServiceError> {
    let path = Path::new(path);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(ServiceError::Invalid(format!(
            "`{}` is not an absolute path",
            path.display()
        )))
    }
}

impl RuntimeHandle {
    /// Every skill by precedence.
    pub async fn list_skills(&self) -> Result<SkillList, ServiceError> {
        let items = self.skills().list().await?;
        Ok(SkillList {
            items: items.into_iter().map(summary).collect(),
        })
    }

    /// One skill in full, with its (cached) validation.
    pub async fn show_skill(&self, id: &str) -> Result<SkillDetail, ServiceError> {
        let loaded = self.skills().load(id).await?;
        let folder = (loaded.listed.source != Source::Installed).then_some(id);
        let verdict = self.skills().verdict(id, &loaded.bundle, folder).await?;
        let hash = loaded.bundle.hash();
        let front = loaded.markdown.frontmatter;
        Ok(SkillDetail {
            license: front.license,
            compatibility: front.compatibility,
            allowed_tools: front.allowed_tools,
            metadata: front.metadata,
            body: loaded.markdown.body,
            files: loaded.bundle.supporting_files(),
            permissions: loaded
                .bundle
                .files()
                .get(MANIFEST_PATH)
                .and_then(|text| manifest::parse(text).ok())
                .map(|p| SkillPermissions {
                    read: p.read,
                    write: p.write,
                    hosts: p.hosts,
                    programs: p.programs,
                    env: p.env,
                    tools: p.tools,
                    time_limit_seconds: p.time_limit_seconds,
                }),
            validation: validation(Some(id.to_owned()), Some(hash), verdict),
            summary: summary(loaded.listed),
        })
    }

    /// Installs the skill folder or `.zip` at `path` (rejected skills are not installed) and
    /// asks, without waiting, for consent to run its commands (unless this bundle has it).
    pub async fn install_skill(&self, path: &str) -> Result<InstalledSkill, ServiceError> {
        let installed = self.skills().install_path(absolute(path)?).await?;
        self.installed_skill(installed).await
    }

    /// The install's answer, after asking for consent to the installed bundle: one pending
    /// approval showing its manifest, hash and findings (see `skills::command_tool`).
    async fn installed_skill(&self, installed: Installed) -> Result<InstalledSkill, ServiceError> {
        let loaded = self.skills().load(&installed.id).await?;
        let tool = SkillCommandTool::new(SkillCommandParts {
            id: installed.id.clone(),
            bundle: loaded.bundle,
            findings: installed.verdict.findings.clone(),
            approvals: self.approvals().clone(),
        })
        .map_err(|problems| ServiceError::Invalid(problems.join("; ")))?;
        let asked = tool.ask_consent().await.map_err(|error| match error {
            RequestError::TooMany(cap) => ServiceError::Invalid(format!(
                "installed, but its consent could not be asked: {cap}; run one of its commands \
                 to be asked"
            )),
            RequestError::Store(store) => store.into(),
        })?;
        Ok(InstalledSkill {
            validation: validation(
                Some(installed.id.clone()),
                Some(installed.hash.clone()),
                installed.verdict,
            ),
            id: installed.id,
            hash: installed.hash,
            consent: if asked.is_some() {
                SkillConsent::Pending
            } else {
                SkillConsent::Granted
            },
            consent_approval_id: asked,
        })
    }

    /// Installs the skill in the uploaded `.zip` `bytes` (rejected skills are not installed) and
    /// asks for consent like [`Self::install_skill`].
    pub async fn install_skill_archive(
        &self,
        bytes: &[u8],
    ) -> Result<InstalledSkill, ServiceError> {
        let installed = self.skills().install_zip_bytes(bytes).await?;
        self.installed_skill(installed).await
    }

    /// Installs the skill in a git repository (see `skills::git`: fetched through an egress
    /// proxy to the URL's host only, nothing checked out) and asks for consent like
    /// [`Self::install_skill`].
    pub async fn install_skill_git(
        &self,
        request: &SkillGitSource,
    ) -> Result<InstalledSkill, ServiceError> {
        let source = GitSource::parse(
            &request.url,
            request.reference.as_deref(),
            request.folder.as_deref(),
        )
        .map_err(SkillError::from)?;
        let installed = self
            .skills()
            .install_git(&source, &self.gate().sandbox())
            .await?;
        self.installed_skill(installed).await
    }

    /// Validates the skill folder or `.zip` at `path` without installing it.
    pub fn validate_skill(&self, path: &str) -> Result<SkillValidation, ServiceError> {
        let checked = self.skills().validate_path(absolute(path)?);
        let approved = !crate::skills::rules::rejects(&checked.findings);
        Ok(SkillValidation {
            approved,
            id: checked.id,
            hash: checked.hash,
            findings: checked.findings.into_iter().map(finding).collect(),
        })
    }

    /// Enables or disables an installed skill; the skill as listed afterwards.
    pub async fn set_skill_enabled(
        &self,
        id: &str,
        enabled: bool,
    ) -> Result<SkillSummary, ServiceError> {
        self.skills().set_enabled(id, enabled).await?;
        let listed = self.skills().list().await?;
        listed
            .into_iter()
            .find(|skill| skill.id == id)
            .map(summary)
            .ok_or_else(|| {
                ServiceError::not_found(ErrorCode::NotFound, format!("no skill named `{id}`"))
            })
    }

    /// Removes an installed skill and all its bundles.
    pub async fn remove_skill(&self, id: &str) -> Result<(), ServiceError> {
        Ok(self.skills().remove(id).await?)
    }
}

/// A usable skill (enabled, loading, approved by validation) as the MCP server offers it: what
/// the agents' inventory lists.
pub(crate) use crate::agent::skills::InventoryEntry as UsableSkill;

impl RuntimeHandle {
    /// The skills the agents may use (enabled, loading, approved), sorted by id.
    pub(crate) async fn usable_skills(&self) -> Result<Vec<UsableSkill>, ServiceError> {
        let mut skills = SkillBundles::inventory(self.skills(), "")
            .await
            .map_err(|error| ServiceError::internal(&error))?;
        skills.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(skills)
    }

    /// The usable skill `id` with its instructions; `None` when there is no usable skill of
    /// that id (missing, disabled or rejected).
    pub(crate) async fn usable_skill(&self, id: &str) -> Result<Option<BundleSkill>, ServiceError> {
        match SkillBundles::lookup(self.skills(), "", id).await {
            Ok(BundleLookup::Found(skill)) => Ok(Some(skill)),
            Ok(_) => Ok(None),
            Err(error) => Err(ServiceError::internal(&error)),
        }
    }

    /// The description and files (by path) of the usable skill `id`, loaded and validated once
    /// (what [`Self::usable_skill`] offers, as a bundle); `None` when no usable skill has that id.
    pub(crate) async fn usable_skill_files(
        &self,
        id: &str,
    ) -> Result<Option<(String, std::collections::BTreeMap<String, String>)>, ServiceError> {
        let Some(listed) = self.skills().find(id).await? else {
            return Ok(None);
        };
        match self.skills().usable(listed).await {
            Ok(Ok((loaded, _))) => Ok(Some((
                loaded.markdown.frontmatter.description,
                loaded.bundle.files().clone(),
            ))),
            Ok(Err(_)) => Ok(None),
            Err(error) => Err(ServiceError::Internal(error)),
        }
    }

    /// Follows changes of the installed skills (install, enable, disable, remove).
    pub(crate) fn skill_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.skills().changes()
    }
}
