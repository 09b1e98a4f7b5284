//! The Skills extension's answers from a real runtime: manifests with digests that match the
//! files served, only usable skills, nothing outside a bundle.

use rmcp::model::{ResourceContents, SkillResources, validate_skills};

use super::*;
use crate::testing::TestRuntime;

fn text(result: &ReadResourceResult) -> String {
    match &result.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn usable_skills_are_manifests_whose_files_are_served_as_resources() {
    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let folder = runtime.home().path().join("sources").join("notes");
    std::fs::create_dir_all(folder.join("scripts")).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes.\n---\nRun scripts/new note.sh.\n",
    )
    .unwrap();
    std::fs::write(folder.join("scripts/new note.sh"), "echo new\n").unwrap();
    assert!(list(&handle).await.unwrap().skills.is_empty());
    handle
        .install_skill(folder.to_str().unwrap())
        .await
        .unwrap();

    let listed = list(&handle).await.unwrap().skills;
    validate_skills(&listed).unwrap();
    assert_eq!(listed.len(), 1);
    let skill = &listed[0];
    assert_eq!(skill.uri, "skill://notes/SKILL.md");
    assert_eq!(skill.frontmatter.name, "notes");
    assert_eq!(skill.frontmatter.description, "Take notes.");
    let SkillResources::Files(files) = &skill.resources else {
        panic!("no file list");
    };
    let uris: Vec<&str> = files.iter().map(|file| file.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://notes/SKILL.md",
            "skill://notes/scripts/new%20note.sh"
        ]
    );
    // Every file reads back with the digest and size its manifest gives.
    for file in files {
        let read = read(&handle, &file.uri).await.unwrap().unwrap();
        file.verify(text(&read).as_bytes()).unwrap();
    }
    let script = read(&handle, "skill://notes/scripts/new%20note.sh")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text(&script), "echo new\n");
    assert_eq!(
        get(&handle, "skill://notes/SKILL.md").await.unwrap().skill,
        *skill
    );

    // Nothing but the bundle's own files, by their exact URIs.
    for uri in [
        "skill://notes/../notes/SKILL.md",
        "skill://notes/scripts/new note.sh",
        "skill://notes/agents/souz.toml",
        "skill://other/SKILL.md",
        "skill://notes",
    ] {
        assert!(read(&handle, uri).await.is_err(), "{uri}");
    }
    assert!(read(&handle, "souz://memory/x").await.unwrap().is_none());
    assert!(
        get(&handle, "skill://notes/scripts/new%20note.sh")
            .await
            .is_err()
    );

    // A disabled skill is neither listed nor served.
    handle.set_skill_enabled("notes", false).await.unwrap();
    assert!(list(&handle).await.unwrap().skills.is_empty());
    assert!(read(&handle, "skill://notes/SKILL.md").await.is_err());
    assert!(get(&handle, "skill://notes/SKILL.md").await.is_err());
}
