//! Where skills live, and which one a name means.
//!
//! - Installed: `SOUZ_HOME/skills/<id>/<hash>/`, one folder per bundle hash, files read-only;
//!   the `skills` table says which hash is current and whether the skill is enabled. An
//!   upgrade adds a folder and keeps the old ones until the skill is removed.
//! - Imported, read-only, never written: a project's `.agents/skills`, then `~/.agents/skills`,
//!   then `~/.claude/skills`.
//!
//! Precedence (first wins for a name): installed, project, `~/.agents/skills`,
//! `~/.claude/skills`. A name is shadowed, never merged.
//!
//! Invariants:
//! - A stored bundle folder is named by the canonical hash of its files and is never changed
//!   once written (written into a temporary folder, then renamed; an existing one is kept).
//! - Skill ids are spec names (lowercase letters, digits, hyphens), so an id is always one safe
//!   path segment.
//! - Verdicts are cached by (skill, hash, policy version); only a completed validation is cached.

use std::path::{Path, PathBuf};

use rusqlite::OptionalExtension;

use super::SkillError;
use super::archive::{ArchivedSkill, read_zip};
use super::bundle::{Bundle, LoadError};
use super::frontmatter::{self, SkillMarkdown};
use super::git::{self, GitSource};
use super::review::{self, Review};
use super::rules::{self, Finding};
use crate::sandbox::{DaemonFileError, DaemonFolder, Sandbox};
use crate::store::{Store, StoreError};

/// Where a skill comes from, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Source {
    /// Installed into the Souz home.
    Installed,
    /// A project's `.agents/skills`.
    Project,
    /// `~/.agents/skills`.
    UserAgents,
    /// `~/.claude/skills`.
    UserClaude,
}

/// A read-only import folder.
#[derive(Debug, Clone)]
pub(crate) struct ImportRoot {
    /// Which kind.
    pub source: Source,
    /// The folder holding one folder per skill.
    pub path: PathBuf,
}

/// A skill as listed.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listed {
    /// Its id (the spec name).
    pub id: String,
    /// Where it comes from.
    pub source: Source,
    /// Its folder.
    pub path: PathBuf,
    /// Its description (empty if it could not be read).
    pub description: String,
    /// Its current bundle hash (empty if it could not be read).
    pub hash: String,
    /// Whether it is enabled (imported skills are enabled).
    pub enabled: bool,
    /// Why it cannot be loaded, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The outcome of a validation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Verdict {
    /// No ERROR finding.
    pub approved: bool,
    /// What was found.
    pub findings: Vec<Finding>,
    /// Whether this came from the cache.
    pub cached: bool,
}

/// A loaded skill: its bundle, parsed `SKILL.md` and folder.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// The listing entry.
    pub listed: Listed,
    /// Its files.
    pub bundle: Bundle,
    /// Its `SKILL.md`.
    pub markdown: SkillMarkdown,
}

/// The skill stores of one Souz home.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    installed: PathBuf,
    imports: Vec<ImportRoot>,
    store: Store,
    /// Counts installs, enable/disable and removals (import folders are not watched).
    changes: std::sync::Arc<tokio::sync::watch::Sender<u64>>,
    /// The model review after the rules, if `[skills] review` is on.
    review: Option<Review>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339()
}

fn store_error(error: rusqlite::Error) -> SkillError {
    SkillError::Store(StoreError::from(error))
}

impl Registry {
    /// The stores under `souz_home`, importing from the folders of `projects` (in order) and
    /// `user_home`.
    pub(crate) fn new(
        souz_home: &Path,
        user_home: &Path,
        projects: &[PathBuf],
        store: Store,
    ) -> Self {
        let mut imports: Vec<ImportRoot> = projects
            .iter()
            .map(|project| ImportRoot {
                source: Source::Project,
                path: project.join(".agents").join("skills"),
            })
            .collect();
        imports.push(ImportRoot {
            source: Source::UserAgents,
            path: user_home.join(".agents").join("skills"),
        });
        imports.push(ImportRoot {
            source: Source::UserClaude,
            path: user_home.join(".claude").join("skills"),
        });
        Self {
            installed: souz_home.join("skills"),
            imports,
            store,
            changes: std::sync::Arc::new(tokio::sync::watch::channel(0).0),
            review: None,
        }
    }

    /// This registry with a model reviewing every bundle the rules approve (see
    /// `skills::review`).
    pub(crate) fn with_review(mut self, review: Review) -> Self {
        self.review = Some(review);
        self
    }

    /// Follows changes of the installed skills (an install, enable, disable or removal); the
    /// value is a counter, only its changing means something.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// The folder of the installed bundle `hash` of `id`.
    pub(crate) fn bundle_dir(&self, id: &str, hash: &str) -> PathBuf {
        self.installed.join(id).join(hash)
    }

    /// Installs the skill in the folder `path`: validates it, stores the bundle and makes it
    /// current. A rejected bundle is not installed.
    pub(crate) async fn install_folder(&self, path: &Path) -> Result<Installed, SkillError> {
        let folder = path
            .file_name()
            .and_then(|name| name.to_str())
            .map(str::to_owned);
        let bundle = Bundle::read_folder(path)?;
        self.install(bundle, folder.as_deref(), &path.display().to_string())
            .await
    }

    /// Installs the skill in the zip archive `path`.
    pub(crate) async fn install_zip(&self, path: &Path) -> Result<Installed, SkillError> {
        let file = std::fs::File::open(path).map_err(|error| SkillError::Io(error.to_string()))?;
        let archived = read_zip(std::io::BufReader::new(file))?;
        self.install_archived(archived, &path.display().to_string())
            .await
    }

    /// Installs the skill in a zip archive held in memory (an upload).
    pub(crate) async fn install_zip_bytes(&self, bytes: &[u8]) -> Result<Installed, SkillError> {
        let archived = read_zip(std::io::Cursor::new(bytes))?;
        self.install_archived(archived, "upload").await
    }

    /// Installs the skill `source` names in a git repository, fetched through an egress proxy of
    /// `sandbox` (see `skills::git`); recorded with its URL, commit and folder.
    pub(crate) async fn install_git(
        &self,
        source: &GitSource,
        sandbox: &Sandbox,
    ) -> Result<Installed, SkillError> {
        let fetched = git::fetch(source, sandbox).await?;
        let origin = GitSource {
            folder: fetched.folder,
            ..source.clone()
        }
        .origin(&fetched.commit);
        self.install_archived(fetched.archived, &origin).await
    }

    /// Installs a skill read from an archive; `origin` says where it came from.
    async fn install_archived(
        &self,
        archived: ArchivedSkill,
        origin: &str,
    ) -> Result<Installed, SkillError> {
        self.install(archived.bundle, archived.folder.as_deref(), origin)
            .await
    }

    /// Installs a folder, or a `.zip` when `path` names a file.
    pub(crate) async fn install_path(&self, path: &Path) -> Result<Installed, SkillError> {
        if path.is_file() {
            self.install_zip(path).await
        } else {
            self.install_folder(path).await
        }
    }

    /// Validates the folder or `.zip` at `path` without installing or caching it: its id
    /// (when `SKILL.md` parses), hash (when it loads) and findings (a loader refusal is one).
    pub(crate) fn validate_path(&self, path: &Path) -> Checked {
        let loaded = if path.is_file() {
            std::fs::File::open(path)
                .map_err(|error| LoadError::Io {
                    path: path.display().to_string(),
                    message: error.to_string(),
                })
                .and_then(|file| read_zip(std::io::BufReader::new(file)))
                .map(|archived| (archived.bundle, archived.folder))
        } else {
            let folder = path
                .file_name()
                .and_then(|name| name.to_str())
                .map(str::to_owned);
            Bundle::read_folder(path).map(|bundle| (bundle, folder))
        };
        match loaded {
            Ok((bundle, folder)) => Checked {
                id: frontmatter::parse(bundle.skill_md(), None)
                    .ok()
                    .map(|parsed| parsed.frontmatter.name),
                hash: Some(bundle.hash()),
                findings: rules::validate(&bundle, folder.as_deref()),
            },
            Err(error) => Checked {
                id: None,
                hash: None,
                findings: vec![Finding::error(error.code(), error.to_string(), None)],
            },
        }
    }

    async fn install(
        &self,
        bundle: Bundle,
        folder: Option<&str>,
        origin: &str,
    ) -> Result<Installed, SkillError> {
        let markdown = frontmatter::parse(bundle.skill_md(), folder).map_err(SkillError::Spec)?;
        let id = markdown.frontmatter.name.clone();
        let hash = bundle.hash();
        let verdict = self.verdict(&id, &bundle, folder).await?;
        if !verdict.approved {
            return Err(SkillError::Rejected {
                id,
                findings: verdict.findings,
            });
        }
        self.write_bundle(&id, &hash, &bundle)?;
        let (row_id, row_hash, origin) = (id.clone(), hash.clone(), origin.to_owned());
        self.store
            .write(move |tx| {
                tx.execute(
                    "INSERT INTO skills (id, hash, enabled, origin, installed_at)
                     VALUES (?1, ?2, 1, ?3, ?4)
                     ON CONFLICT (id) DO UPDATE SET hash = excluded.hash,
                         origin = excluded.origin, installed_at = excluded.installed_at",
                    rusqlite::params![row_id, row_hash, origin, now()],
                )
                .map_err(store_error)
            })
            .await?;
        self.changed();
        Ok(Installed { id, hash, verdict })
    }

    /// Writes `bundle` to `skills/<id>/<hash>` in the Souz home: staged in a fresh hidden
    /// folder, each file created new and read-only, then renamed into place. Every folder and
    /// file is opened beneath the Souz home's handle ([`DaemonFolder`]): no link is followed.
    fn write_bundle(&self, id: &str, hash: &str, bundle: &Bundle) -> Result<(), SkillError> {
        let io = |error: DaemonFileError| SkillError::Io(error.to_string());
        let (home, skills) = match (self.installed.parent(), self.installed.file_name()) {
            (Some(home), Some(skills)) => (home, Path::new(skills).join(id)),
            _ => (self.installed.as_path(), PathBuf::from(id)),
        };
        // The Souz home is the trusted anchor: made by path when missing (as at start).
        crate::config::paths::create_private_dir(home).map_err(|error| {
            SkillError::Io(format!("cannot create {}: {error}", home.display()))
        })?;
        let parent = DaemonFolder::create(home, &skills, 0o700).map_err(io)?;
        if parent.child(hash, None).map_err(io)?.is_some() {
            return Ok(());
        }
        let incoming = format!(".incoming-{}", uuid::Uuid::new_v4().simple());
        let staged = (|| {
            let staging = created(&parent, &incoming)?;
            for (path, text) in bundle.files() {
                let path = Path::new(path);
                let mut folder = None;
                for name in path.parent().into_iter().flat_map(Path::iter) {
                    let next = created(folder.as_ref().unwrap_or(&staging), name)?;
                    folder = Some(next);
                }
                let name = path.file_name().unwrap_or_default();
                let folder = folder.as_ref().unwrap_or(&staging);
                if !folder.create_new(name, text.as_bytes(), 0o444)? {
                    return Err(DaemonFileError::NotRegular(folder.path().join(name)));
                }
            }
            parent.rename(&incoming, hash, true)
        })();
        if let Err(error) = staged {
            let _ = parent.remove_tree(&incoming);
            if parent.child(hash, None).ok().flatten().is_none() {
                return Err(io(error));
            }
        }
        Ok(())
    }

    /// Validates `bundle` of skill `id` (a folder named `folder`), through the verdict cache.
    pub(crate) async fn verdict(
        &self,
        id: &str,
        bundle: &Bundle,
        folder: Option<&str>,
    ) -> Result<Verdict, SkillError> {
        let hash = bundle.hash();
        let reviewer = self.review.as_ref().map(|review| review.reviewer.name());
        let policy = review::policy_version(reviewer.as_deref());
        if let Some(cached) = self.cached(id, &hash, &policy).await? {
            return Ok(cached);
        }
        let mut findings = rules::validate(bundle, folder);
        if let Some(review) = &self.review
            && !rules::rejects(&findings)
        {
            match review
                .reviewer
                .review(&review::prompt(bundle, &findings))
                .await
            {
                Ok(answer) => findings.extend(review::findings(&answer, review.min_confidence)),
                Err(why) => {
                    // A review that could not be done rejects, and is not cached.
                    findings.push(review::failed(&why));
                    return Ok(Verdict {
                        approved: false,
                        findings,
                        cached: false,
                    });
                }
            }
        }
        let verdict = Verdict {
            approved: !rules::rejects(&findings),
            findings,
            cached: false,
        };
        let json = serde_json::to_string(&verdict.findings)
            .map_err(|error| SkillError::Io(error.to_string()))?;
        let (id, approved) = (id.to_owned(), verdict.approved);
        self.store
            .write(move |tx| {
                tx.execute(
                    "INSERT OR REPLACE INTO skill_verdicts
                         (skill_id, bundle_hash, policy_version, approved, findings, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    rusqlite::params![id, hash, policy, approved, json, now()],
                )
                .map_err(store_error)
            })
            .await?;
        Ok(verdict)
    }

    async fn cached(
        &self,
        id: &str,
        hash: &str,
        policy: &str,
    ) -> Result<Option<Verdict>, SkillError> {
        let (id, hash, policy) = (id.to_owned(), hash.to_owned(), policy.to_owned());
        let row: Option<(bool, String)> = self
            .store
            .read(move |connection| {
                connection
                    .query_row(
                        "SELECT approved, findings FROM skill_verdicts
                         WHERE skill_id = ?1 AND bundle_hash = ?2 AND policy_version = ?3",
                        rusqlite::params![id, hash, policy],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                    .map_err(store_error)
            })
            .await?;
        Ok(row.map(|(approved, findings)| Verdict {
            approved,
            // A record that does not parse still rejects if it rejected.
            findings: serde_json::from_str(&findings).unwrap_or_default(),
            cached: true,
        }))
    }

    /// Every skill by precedence (shadowed names left out), sorted by id.
    pub(crate) async fn list(&self) -> Result<Vec<Listed>, SkillError> {
        let mut listed: std::collections::BTreeMap<String, Listed> = Default::default();
        for entry in self.installed_rows().await? {
            listed.entry(entry.id.clone()).or_insert(entry);
        }
        for root in &self.imports {
            for entry in import_entries(root) {
                listed.entry(entry.id.clone()).or_insert(entry);
            }
        }
        Ok(listed.into_values().collect())
    }

    async fn installed_rows(&self) -> Result<Vec<Listed>, SkillError> {
        let rows: Vec<(String, String, bool)> = self
            .store
            .read(|connection| {
                let mut statement = connection
                    .prepare("SELECT id, hash, enabled FROM skills ORDER BY id")
                    .map_err(store_error)?;
                let rows = statement
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                    .map_err(store_error)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(store_error)
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, hash, enabled)| {
                let path = self.bundle_dir(&id, &hash);
                let mut entry = Listed {
                    id,
                    source: Source::Installed,
                    path,
                    description: String::new(),
                    hash,
                    enabled,
                    error: None,
                };
                describe(&mut entry, None);
                entry
            })
            .collect())
    }

    /// The skill `id` by precedence, as listed (`None` when there is none).
    pub(crate) async fn find(&self, id: &str) -> Result<Option<Listed>, SkillError> {
        Ok(self.list().await?.into_iter().find(|entry| entry.id == id))
    }

    /// The skill `id` by precedence, loaded and parsed.
    pub(crate) async fn load(&self, id: &str) -> Result<Loaded, SkillError> {
        let listed = self
            .find(id)
            .await?
            .ok_or_else(|| SkillError::NotFound(id.to_owned()))?;
        Self::open(listed)
    }

    /// The listed skill `listed`, loaded and parsed (installed bundles checked against their
    /// hash).
    pub(crate) fn open(listed: Listed) -> Result<Loaded, SkillError> {
        let id = listed.id.as_str();
        let bundle = Bundle::read_folder(&listed.path)?;
        // Installed bundles live in a folder named by hash; the id is the name checked.
        let folder = (listed.source != Source::Installed).then_some(id);
        let markdown = frontmatter::parse(bundle.skill_md(), folder).map_err(SkillError::Spec)?;
        if listed.source == Source::Installed && bundle.hash() != listed.hash {
            return Err(SkillError::Tampered(id.to_owned()));
        }
        Ok(Loaded {
            listed,
            bundle,
            markdown,
        })
    }

    /// Enables or disables the installed skill `id`.
    pub(crate) async fn set_enabled(&self, id: &str, enabled: bool) -> Result<(), SkillError> {
        let row = id.to_owned();
        let changed = self
            .store
            .write(move |tx| {
                tx.execute(
                    "UPDATE skills SET enabled = ?2 WHERE id = ?1",
                    rusqlite::params![row, enabled],
                )
                .map_err(store_error)
            })
            .await?;
        if changed == 0 {
            return Err(SkillError::NotInstalled(id.to_owned()));
        }
        self.changed();
        Ok(())
    }

    /// Removes the installed skill `id` with all its bundles.
    pub(crate) async fn remove(&self, id: &str) -> Result<(), SkillError> {
        if !is_id(id) {
            return Err(SkillError::NotInstalled(id.to_owned()));
        }
        let row = id.to_owned();
        let changed = self
            .store
            .write(move |tx| {
                tx.execute("DELETE FROM skills WHERE id = ?1", [row])
                    .map_err(store_error)
            })
            .await?;
        if changed == 0 {
            return Err(SkillError::NotInstalled(id.to_owned()));
        }
        self.changed();
        let folder = self.installed.join(id);
        if folder.exists() {
            make_writable(&folder);
            std::fs::remove_dir_all(&folder).map_err(|error| SkillError::Io(error.to_string()))?;
        }
        Ok(())
    }
}

/// A validation without installing.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// The skill's name, if `SKILL.md` parsed.
    pub id: Option<String>,
    /// The bundle hash, if it loaded.
    pub hash: Option<String>,
    /// What was found.
    pub findings: Vec<Finding>,
}

/// A skill that was installed.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Installed {
    /// Its id.
    pub id: String,
    /// Its bundle hash.
    pub hash: String,
    /// Its validation.
    pub verdict: Verdict,
}

/// Whether `id` is a spec name (and so one safe path segment).
pub(crate) fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && id.chars().all(|c| c.is_alphanumeric() || c == '-')
        && !id.starts_with('-')
}

/// Fills in the description and hash of `entry` from its folder.
fn describe(entry: &mut Listed, folder: Option<&str>) {
    match Bundle::read_folder(&entry.path) {
        Ok(bundle) => {
            if entry.hash.is_empty() {
                entry.hash = bundle.hash();
            }
            match frontmatter::parse(bundle.skill_md(), folder) {
                Ok(parsed) => entry.description = parsed.frontmatter.description,
                Err(problems) => {
                    entry.error = problems.first().map(|problem| problem.message.clone());
                }
            }
        }
        Err(error) => entry.error = Some(error.to_string()),
    }
}

/// The skills of an import root (folders with a `SKILL.md`; symlinked folders are skipped).
fn import_entries(root: &ImportRoot) -> Vec<Listed> {
    let Ok(entries) = std::fs::read_dir(&root.path) else {
        return Vec::new();
    };
    let mut listed = Vec::new();
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !kind.is_dir() || !is_id(&name) || !entry.path().join("SKILL.md").is_file() {
            continue;
        }
        let mut skill = Listed {
            id: name.clone(),
            source: root.source,
            path: entry.path(),
            description: String::new(),
            hash: String::new(),
            enabled: true,
            error: None,
        };
        describe(&mut skill, Some(&name));
        listed.push(skill);
    }
    listed
}

/// The new folder `name` inside `folder` (0700), never through a link.
fn created(
    folder: &DaemonFolder,
    name: impl AsRef<std::ffi::OsStr>,
) -> Result<DaemonFolder, DaemonFileError> {
    let name = name.as_ref();
    folder
        .child(name, Some(0o700))?
        .ok_or_else(|| DaemonFileError::Io {
            action: "create the folder",
            path: folder.path().join(name),
            source: std::io::ErrorKind::NotFound.into(),
        })
}

/// Lets the owner delete what is under `folder` (read-only files in writable folders can be
/// removed on Unix; elsewhere the flag must go first).
fn make_writable(folder: &Path) {
    #[cfg(not(unix))]
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            make_writable(&path);
        } else if let Ok(metadata) = std::fs::metadata(&path) {
            let mut permissions = metadata.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            permissions.set_readonly(false);
            let _ = std::fs::set_permissions(&path, permissions);
        }
    }
    #[cfg(unix)]
    let _ = folder;
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
