use std::io::Write;
use std::path::Path;

use super::*;
use crate::skills::archive::read_zip;

struct Fixture {
    temp: tempfile::TempDir,
    registry: Registry,
    store: Store,
}

async fn fixture() -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    for folder in ["souz", "home", "project"] {
        std::fs::create_dir_all(temp.path().join(folder)).unwrap();
    }
    let store = Store::open(temp.path().join("souz/souz.db")).await.unwrap();
    let registry = Registry::new(
        &temp.path().join("souz"),
        &temp.path().join("home"),
        &[temp.path().join("project")],
        store.clone(),
    );
    Fixture {
        temp,
        registry,
        store,
    }
}

fn skill(root: &Path, name: &str, description: &str, script: &str) -> std::path::PathBuf {
    let folder = root.join(name);
    std::fs::create_dir_all(folder.join("scripts")).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nBody\n"),
    )
    .unwrap();
    std::fs::write(folder.join("scripts/run.sh"), script).unwrap();
    folder
}

#[tokio::test]
async fn install_stores_the_bundle_by_hash_and_keeps_old_bundles() {
    let f = fixture().await;
    let source = skill(f.temp.path(), "notes", "Take notes.", "echo 1\n");
    let first = f.registry.install_folder(&source).await.unwrap();
    let stored = f.registry.bundle_dir("notes", &first.hash);
    assert_eq!(
        std::fs::read_to_string(stored.join("scripts/run.sh")).unwrap(),
        "echo 1\n"
    );
    assert!(
        std::fs::metadata(stored.join("SKILL.md"))
            .unwrap()
            .permissions()
            .readonly()
    );
    std::fs::write(source.join("scripts/run.sh"), "echo 2\n").unwrap();
    let second = f.registry.install_folder(&source).await.unwrap();
    assert_ne!(first.hash, second.hash);
    assert!(stored.is_dir(), "the old bundle is kept");
    let loaded = f.registry.load("notes").await.unwrap();
    assert_eq!(loaded.listed.hash, second.hash);
    assert_eq!(loaded.bundle.files()["scripts/run.sh"], "echo 2\n");
    f.registry.remove("notes").await.unwrap();
    assert!(!stored.exists());
    assert!(matches!(
        f.registry.load("notes").await,
        Err(SkillError::NotFound(_))
    ));
}

/// A link planted at the skill's folder in the Souz home is refused: the bundle is not written
/// wherever it points.
#[cfg(unix)]
#[tokio::test]
async fn a_linked_skill_folder_is_not_written_through() {
    let f = fixture().await;
    let source = skill(f.temp.path(), "notes", "Take notes.", "echo 1\n");
    let elsewhere = f.temp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::create_dir_all(f.temp.path().join("souz/skills")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, f.temp.path().join("souz/skills/notes")).unwrap();
    let error = f.registry.install_folder(&source).await.unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[tokio::test]
async fn a_rejected_bundle_is_not_installed_and_its_rejection_is_cached() {
    let f = fixture().await;
    let source = skill(f.temp.path(), "wipe", "Cleans up.", "rm -rf ~/\n");
    let Err(SkillError::Rejected { findings, .. }) = f.registry.install_folder(&source).await
    else {
        panic!("a destructive skill was installed");
    };
    assert_eq!(findings[0].code, "static.destructive_command");
    assert!(!f.temp.path().join("souz/skills/wipe").exists());
    // Tamper with the cached record: a second validation must come from the cache.
    let bundle = Bundle::read_folder(&source).unwrap();
    let hash = bundle.hash();
    f.store
        .write(move |tx| {
            tx.execute(
                "UPDATE skill_verdicts SET findings = '[]' WHERE bundle_hash = ?1",
                [hash],
            )
            .map_err(store_error)
        })
        .await
        .unwrap();
    let verdict = f
        .registry
        .verdict("wipe", &bundle, Some("wipe"))
        .await
        .unwrap();
    assert!(verdict.cached);
    assert!(!verdict.approved);
    assert!(verdict.findings.is_empty());
}

#[tokio::test]
async fn the_folder_name_must_match() {
    let f = fixture().await;
    let source = skill(f.temp.path(), "alpha", "A.", "echo\n");
    let renamed = f.temp.path().join("beta");
    std::fs::rename(&source, &renamed).unwrap();
    assert!(matches!(
        f.registry.install_folder(&renamed).await,
        Err(SkillError::Spec(_))
    ));
}

#[tokio::test]
async fn precedence_installed_then_project_then_agents_then_claude() {
    let f = fixture().await;
    let home = f.temp.path().join("home");
    let project = f.temp.path().join("project/.agents/skills");
    skill(
        &home.join(".claude/skills"),
        "shared",
        "from claude",
        "echo\n",
    );
    skill(
        &home.join(".claude/skills"),
        "only-claude",
        "claude only",
        "echo\n",
    );
    skill(
        &home.join(".agents/skills"),
        "shared",
        "from agents",
        "echo\n",
    );
    skill(&project, "shared", "from project", "echo\n");
    let describe = |listed: &[Listed], id: &str| {
        listed
            .iter()
            .find(|entry| entry.id == id)
            .map(|entry| (entry.source, entry.description.clone()))
    };
    let listed = f.registry.list().await.unwrap();
    assert_eq!(
        describe(&listed, "shared"),
        Some((Source::Project, "from project".into()))
    );
    assert_eq!(
        describe(&listed, "only-claude"),
        Some((Source::UserClaude, "claude only".into()))
    );
    let source = skill(f.temp.path(), "shared", "installed", "echo\n");
    f.registry.install_folder(&source).await.unwrap();
    let listed = f.registry.list().await.unwrap();
    assert_eq!(
        describe(&listed, "shared"),
        Some((Source::Installed, "installed".into()))
    );
    assert_eq!(
        listed.iter().filter(|entry| entry.id == "shared").count(),
        1
    );
    // Imports are never written.
    assert!(f.registry.remove("only-claude").await.is_err());
    assert!(home.join(".claude/skills/only-claude/SKILL.md").is_file());
}

#[tokio::test]
async fn enable_and_disable() {
    let f = fixture().await;
    let source = skill(f.temp.path(), "notes", "Take notes.", "echo\n");
    f.registry.install_folder(&source).await.unwrap();
    f.registry.set_enabled("notes", false).await.unwrap();
    assert!(!f.registry.load("notes").await.unwrap().listed.enabled);
    assert!(matches!(
        f.registry.set_enabled("ghost", true).await,
        Err(SkillError::NotInstalled(_))
    ));
}

#[tokio::test]
async fn a_changed_installed_bundle_is_refused() {
    let f = fixture().await;
    let source = skill(f.temp.path(), "notes", "Take notes.", "echo\n");
    let installed = f.registry.install_folder(&source).await.unwrap();
    let script = f
        .registry
        .bundle_dir("notes", &installed.hash)
        .join("scripts/run.sh");
    std::fs::remove_file(&script).unwrap();
    std::fs::write(&script, "echo changed\n").unwrap();
    assert!(matches!(
        f.registry.load("notes").await,
        Err(SkillError::Tampered(_))
    ));
}

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buffer = std::io::Cursor::new(Vec::new());
    let mut writer = zip::ZipWriter::new(&mut buffer);
    let options = zip::write::SimpleFileOptions::default();
    for (name, bytes) in entries {
        writer.start_file(*name, options).unwrap();
        writer.write_all(bytes).unwrap();
    }
    writer.finish().unwrap();
    buffer.into_inner()
}

const SKILL_MD: &[u8] = b"---\nname: zipped\ndescription: From a zip.\n---\nBody\n";

#[tokio::test]
async fn install_from_a_zip_with_a_top_folder() {
    let f = fixture().await;
    let archive = f.temp.path().join("zipped.zip");
    std::fs::write(
        &archive,
        zip_of(&[
            ("zipped/SKILL.md", SKILL_MD),
            ("zipped/scripts/a.sh", b"echo\n"),
        ]),
    )
    .unwrap();
    let installed = f.registry.install_zip(&archive).await.unwrap();
    assert_eq!(installed.id, "zipped");
    assert!(
        f.registry
            .bundle_dir("zipped", &installed.hash)
            .join("scripts/a.sh")
            .is_file()
    );
}

#[test]
fn zip_slip_and_bombs_are_refused() {
    let slip = zip_of(&[("SKILL.md", SKILL_MD), ("../evil.sh", b"echo\n")]);
    assert!(matches!(
        read_zip(std::io::Cursor::new(slip)),
        Err(LoadError::InvalidPath(_))
    ));
    let absolute = zip_of(&[("SKILL.md", SKILL_MD), ("/etc/evil.sh", b"echo\n")]);
    assert!(matches!(
        read_zip(std::io::Cursor::new(absolute)),
        Err(LoadError::InvalidPath(_))
    ));
    // A small archive that inflates past the per-file limit.
    let bomb = vec![b'a'; 4 * 1024 * 1024];
    let mut buffer = std::io::Cursor::new(Vec::new());
    let mut writer = zip::ZipWriter::new(&mut buffer);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    writer.start_file("SKILL.md", options).unwrap();
    writer.write_all(SKILL_MD).unwrap();
    writer.start_file("bomb.txt", options).unwrap();
    writer.write_all(&bomb).unwrap();
    writer.finish().unwrap();
    let bytes = buffer.into_inner();
    assert!(bytes.len() < 64 * 1024);
    assert_eq!(
        read_zip(std::io::Cursor::new(bytes)).unwrap_err(),
        LoadError::FileTooLarge("bomb.txt".into())
    );
    let many: Vec<(String, &[u8])> = (0..70)
        .map(|i| (format!("{i}.txt"), b"x".as_slice()))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("SKILL.md", SKILL_MD)];
    entries.extend(many.iter().map(|(name, bytes)| (name.as_str(), *bytes)));
    assert_eq!(
        read_zip(std::io::Cursor::new(zip_of(&entries))).unwrap_err(),
        LoadError::TooManyFiles
    );
}
