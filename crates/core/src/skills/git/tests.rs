//! Fetching skills from a real git smart-HTTP server (`git http-backend` behind a loopback
//! HTTP server), through the egress proxy and the SSRF policy.

use std::path::{Path, PathBuf};

use super::*;
use crate::config::SandboxConfig;
use crate::config::SouzPaths;
use crate::store::{Store, StoreError};
use crate::testing::git_server::{GitServer, commit, git, publish, skill_md};

/// A sandbox whose SSRF policy allows `allow` (loopback, for the test server).
fn sandbox(home: &Path, allow: &[&str]) -> Sandbox {
    let config = SandboxConfig {
        network_allow_hosts: allow.iter().map(|host| (*host).to_owned()).collect(),
        ..SandboxConfig::default()
    };
    Sandbox::new(
        &config,
        &SouzPaths::new(home.join(".souz")).with_user_home(home),
    )
    .unwrap()
}

struct Fixture {
    temp: tempfile::TempDir,
    server: GitServer,
    sandbox: Sandbox,
}

impl Fixture {
    async fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let served = temp.path().join("served");
        std::fs::create_dir_all(&served).unwrap();
        let server = GitServer::start(&served).await;
        let sandbox = sandbox(temp.path(), &["127.0.0.1"]);
        Self {
            temp,
            server,
            sandbox,
        }
    }

    fn work(&self, name: &str) -> PathBuf {
        self.temp.path().join("work").join(name)
    }

    fn publish(&self, name: &str) {
        publish(&self.work(name), &self.temp.path().join("served"), name);
    }

    fn url(&self, repository: &str) -> String {
        format!("{}/{repository}.git", self.server.base)
    }

    async fn fetch(
        &self,
        url: &str,
        reference: Option<&str>,
        folder: Option<&str>,
    ) -> Result<Fetched, GitError> {
        let source = GitSource::parse(url, reference, folder)?;
        fetch(&source, &self.sandbox).await
    }
}

fn file(fetched: &Fetched, path: &str) -> String {
    fetched.archived.bundle.files().get(path).unwrap().clone()
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one table of accepted and refused sources"
)]
fn urls_refs_and_folders_are_read_and_checked() {
    let plain = GitSource::parse("https://example.com/o/skills.git", None, None).unwrap();
    assert_eq!(plain.url.as_str(), "https://example.com/o/skills.git");
    assert_eq!((&plain.reference, &plain.folder), (&None, &None));
    assert_eq!(plain.host_entry(), "example.com:443");
    let v6 = GitSource::parse("http://[::1]:8080/r.git", None, None).unwrap();
    assert_eq!(v6.host_entry(), "::1:8080");
    let page = GitSource::parse(
        "https://github.com/anthropics/skills/tree/main/document-skills/pdf",
        None,
        None,
    )
    .unwrap();
    assert_eq!(page.url.as_str(), "https://github.com/anthropics/skills");
    assert_eq!(page.reference.as_deref(), Some("main"));
    assert_eq!(page.folder.as_deref(), Some("document-skills/pdf"));
    let file_page = GitSource::parse(
        "https://github.com/o/r/blob/v2/skills/notes/SKILL.md",
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        (file_page.reference.as_deref(), file_page.folder.as_deref()),
        (Some("v2"), Some("skills/notes"))
    );
    let gitlab =
        GitSource::parse("https://gitlab.com/g/sub/r/-/tree/dev/a%20b", None, None).unwrap();
    assert_eq!(gitlab.url.as_str(), "https://gitlab.com/g/sub/r");
    assert_eq!(
        (gitlab.reference.as_deref(), gitlab.folder.as_deref()),
        (Some("dev"), Some("a b"))
    );
    let gitea =
        GitSource::parse("http://git.lan:3000/o/r/src/branch/main/notes", None, None).unwrap();
    assert_eq!(gitea.url.as_str(), "http://git.lan:3000/o/r");
    assert_eq!(gitea.host_entry(), "git.lan:3000");
    assert_eq!(gitea.folder.as_deref(), Some("notes"));
    // What the caller gives wins over the page.
    let given = GitSource::parse(
        "https://github.com/o/r/tree/main/a",
        Some("v1.2"),
        Some("/b/c/"),
    )
    .unwrap();
    assert_eq!(
        (given.reference.as_deref(), given.folder.as_deref()),
        (Some("v1.2"), Some("b/c"))
    );
    assert_eq!(given.origin("abc123"), "https://github.com/o/r@abc123:b/c");

    for (url, reference, folder, why) in [
        ("git@github.com:o/r.git", None, None, "http(s) URL"),
        (
            "ssh://github.com/o/r.git",
            None,
            None,
            "only http and https",
        ),
        ("file:///etc", None, None, "only http and https"),
        (
            "https://me:secret@example.com/r.git",
            None,
            None,
            "credentials",
        ),
        (
            "https://example.com/r.git",
            Some("--upload-pack=touch /tmp/x"),
            None,
            "not a branch",
        ),
        (
            "https://example.com/r.git",
            Some("main..dev"),
            None,
            "not a branch",
        ),
        (
            "https://example.com/r.git",
            Some("HEAD@{1}"),
            None,
            "not a branch",
        ),
        (
            "https://example.com/r.git",
            None,
            Some("../outside"),
            "not a folder",
        ),
        (
            "https://example.com/r.git",
            None,
            Some("a/./b"),
            "not a folder",
        ),
        (
            "https://example.com/r.git",
            None,
            Some("-x"),
            "not a folder",
        ),
        (
            "https://example.com/r.git",
            None,
            Some("a:b"),
            "not a folder",
        ),
    ] {
        let error = GitSource::parse(url, reference, folder).unwrap_err();
        assert!(
            matches!(error, GitError::Source(_)) && error.to_string().contains(why),
            "{url} {reference:?} {folder:?}: {error}"
        );
    }
}

#[tokio::test]
async fn a_skill_is_fetched_by_folder_ref_or_on_its_own_and_nothing_else_is_read() {
    let f = Fixture::new().await;
    let work = f.work("notes");
    commit(
        &work,
        &[
            ("README.md", "A repository with one skill.\n"),
            (
                "skills/notes/SKILL.md",
                &skill_md("notes", "First version."),
            ),
            ("skills/notes/scripts/run.sh", "echo one\n"),
        ],
        "first",
    );
    git(&work, &["tag", "v1"]);
    commit(
        &work,
        &[(
            "skills/notes/SKILL.md",
            &skill_md("notes", "Second version."),
        )],
        "second",
    );
    f.publish("notes");

    // The only folder with a SKILL.md is found; the default branch is the newest.
    let newest = f.fetch(&f.url("notes"), None, None).await.unwrap();
    assert_eq!(newest.folder.as_deref(), Some("skills/notes"));
    assert_eq!(newest.archived.folder.as_deref(), Some("notes"));
    assert!(file(&newest, "SKILL.md").contains("Second version."));
    assert_eq!(file(&newest, "scripts/run.sh"), "echo one\n");
    assert!(newest.archived.bundle.files().get("README.md").is_none());
    assert_eq!(newest.commit.len(), 40, "{}", newest.commit);

    // A tag; the folder named explicitly.
    let tagged = f
        .fetch(&f.url("notes"), Some("v1"), Some("skills/notes"))
        .await
        .unwrap();
    assert!(file(&tagged, "SKILL.md").contains("First version."));
    assert_ne!(tagged.commit, newest.commit);
    assert_ne!(tagged.archived.bundle.hash(), newest.archived.bundle.hash());

    // A forge's page of the folder at the tag says the same (served as `o/notes`, as forges
    // serve a repository without `.git` too).
    let owned = f.temp.path().join("served/o");
    std::fs::create_dir_all(&owned).unwrap();
    git(
        &owned,
        &[
            "clone",
            "--quiet",
            "--bare",
            work.to_str().unwrap(),
            "notes",
        ],
    );
    let page = format!("{}/o/notes/tree/v1/skills/notes", f.server.base);
    let from_page = f.fetch(&page, None, None).await.unwrap();
    assert_eq!(from_page.commit, tagged.commit);
    assert_eq!(
        from_page.archived.bundle.hash(),
        tagged.archived.bundle.hash()
    );

    // Only the smart-HTTP endpoints of that repository were asked for.
    let requests = f.server.requests.lock().unwrap().clone();
    assert!(!requests.is_empty());
    for path in &requests {
        let endpoint = path
            .trim_start_matches("/o")
            .trim_start_matches("/notes.git")
            .trim_start_matches("/notes");
        assert!(
            endpoint == "/info/refs" || endpoint == "/git-upload-pack",
            "{path}"
        );
    }
}

#[tokio::test]
async fn what_cannot_be_installed_says_why() {
    let f = Fixture::new().await;
    let many = f.work("many");
    commit(
        &many,
        &[
            ("alpha/SKILL.md", &skill_md("alpha", "A.")),
            ("beta/SKILL.md", &skill_md("beta", "B.")),
        ],
        "two skills",
    );
    f.publish("many");
    let none = f.work("none");
    commit(&none, &[("README.md", "Nothing here.\n")], "no skill");
    f.publish("none");
    let linked = f.work("linked");
    commit(
        &linked,
        &[("SKILL.md", &skill_md("linked", "Links."))],
        "skill",
    );
    std::os::unix::fs::symlink("/etc/passwd", linked.join("passwd.md")).unwrap();
    git(&linked, &["add", "--all"]);
    git(&linked, &["commit", "--quiet", "-m", "a link"]);
    f.publish("linked");

    let cases: [(String, Option<&str>, Option<&str>, &str); 6] = [
        (f.url("many"), None, None, "holds 2 skills (alpha, beta)"),
        (f.url("many"), None, Some("gamma"), "has no folder `gamma`"),
        (f.url("none"), None, None, "has no SKILL.md"),
        (
            f.url("many"),
            Some("no-such-branch"),
            None,
            "git fetch failed",
        ),
        (f.url("missing"), None, None, "git fetch failed"),
        (f.url("linked"), None, None, "passwd.md"),
    ];
    for (url, reference, folder, why) in cases {
        let error = f.fetch(&url, reference, folder).await.unwrap_err();
        assert!(
            error.to_string().contains(why),
            "{url} {reference:?}: {error}"
        );
    }
    // Naming one of several works.
    let beta = f.fetch(&f.url("many"), None, Some("beta")).await.unwrap();
    assert_eq!(beta.archived.folder.as_deref(), Some("beta"));
}

#[tokio::test]
async fn the_ssrf_policy_decides_what_git_may_reach() {
    let f = Fixture::new().await;
    commit(
        &f.work("notes"),
        &[("SKILL.md", &skill_md("notes", "N."))],
        "one",
    );
    f.publish("notes");
    // Loopback is not public: without `network_allow_hosts` the proxy refuses it and git never
    // reaches the server.
    let strict = sandbox(f.temp.path(), &[]);
    let source = GitSource::parse(&f.url("notes"), None, None).unwrap();
    let error = fetch(&source, &strict).await.unwrap_err();
    assert!(error.to_string().contains("network_allow_hosts"), "{error}");
    assert!(f.server.requests.lock().unwrap().is_empty());
    // Allowed, it works.
    let fetched = fetch(&source, &f.sandbox).await.unwrap();
    assert!(file(&fetched, "SKILL.md").contains("N."));
}

#[tokio::test]
async fn an_install_records_where_it_came_from_and_an_upgrade_keeps_the_old_bundle() {
    let f = Fixture::new().await;
    let work = f.work("notes");
    commit(
        &work,
        &[("notes/SKILL.md", &skill_md("notes", "One."))],
        "one",
    );
    git(&work, &["tag", "v1"]);
    commit(
        &work,
        &[("notes/SKILL.md", &skill_md("notes", "Two."))],
        "two",
    );
    f.publish("notes");
    let souz = f.temp.path().join("souz");
    std::fs::create_dir_all(&souz).unwrap();
    let store = Store::open(souz.join("souz.db")).await.unwrap();
    let registry = crate::skills::registry::Registry::new(
        &souz,
        &f.temp.path().join("home"),
        &[],
        store.clone(),
    );

    let old = GitSource::parse(&f.url("notes"), Some("v1"), None).unwrap();
    let first = registry.install_git(&old, &f.sandbox).await.unwrap();
    let new = GitSource::parse(&f.url("notes"), None, None).unwrap();
    let second = registry.install_git(&new, &f.sandbox).await.unwrap();
    assert_eq!((first.id.as_str(), second.id.as_str()), ("notes", "notes"));
    assert_ne!(first.hash, second.hash);
    assert!(registry.bundle_dir("notes", &first.hash).is_dir());
    assert!(registry.bundle_dir("notes", &second.hash).is_dir());
    let loaded = registry.load("notes").await.unwrap();
    assert!(loaded.bundle.skill_md().contains("Two."));
    let origin: String = store
        .read(|c| {
            c.query_row("SELECT origin FROM skills WHERE id = 'notes'", [], |row| {
                row.get(0)
            })
            .map_err(StoreError::from)
        })
        .await
        .unwrap();
    assert!(
        origin.starts_with(&format!("{}@", f.url("notes"))) && origin.ends_with(":notes"),
        "{origin}"
    );
}
