//! Skills as MCP prompts, with the official Python SDK as the client: an enabled skill is a
//! prompt whose text is its instructions, a disabled one is neither listed nor served, and
//! installing a skill tells the session `notifications/prompts/list_changed`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use souz_e2e::{Daemon, clients};

fn skill(root: &Path, name: &str, description: &str, body: &str) -> PathBuf {
    let folder = root.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
    .unwrap();
    folder
}

#[test]
fn the_python_sdk_sees_skills_as_prompts() {
    let python = clients().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh, which installs the MCP test clients",
        python.display()
    );
    let daemon = Daemon::start();
    let sources = tempfile::tempdir().unwrap();
    for (name, description) in [("notes", "Take notes in ~/notes."), ("dormant", "Sleeps.")] {
        let folder = skill(
            sources.path(),
            name,
            description,
            "Write each note as a Markdown file.",
        );
        let installed = daemon.post("/v1/skills", &json!({"path": folder}));
        assert_eq!(installed.status, 201, "{}", installed.body);
    }
    let disabled = daemon.post("/v1/skills/dormant/disable", &json!({}));
    assert_eq!(disabled.status, 200, "{}", disabled.body);
    let later = skill(
        sources.path(),
        "pdf-forms",
        "Fills PDF forms.",
        "Read the form first.",
    );

    let output = Command::new(python)
        .arg(clients().join("python/prompts.py"))
        .arg(format!("http://{}", daemon.address))
        .arg(&daemon.token)
        .arg(&later)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for check in [
        "prompts-list",
        "prompts-get",
        "prompts-get-disabled",
        "prompts-list-changed",
    ] {
        assert!(
            stdout.lines().any(|line| line == format!("ok {check}")),
            "{check} did not run:\n{stdout}"
        );
    }
}
