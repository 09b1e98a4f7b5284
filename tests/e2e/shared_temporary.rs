//! A confined command cannot read other programs' files in the shared temporary folders
//! (`/tmp`, `/var/tmp`, `/dev/shm`), whatever `[sandbox] commands_read_protected` says, while
//! its own private temporary folder and a root that lies under `/tmp` stay readable. Where this
//! kernel has no Landlock, the command is refused.

use std::path::PathBuf;

use souz_core::sandbox::CommandRequest;

use crate::confinement::confined_in;

/// A file another program left in `folder`, readable by everyone.
struct OtherProgramsFile {
    folder: tempfile::TempDir,
    path: PathBuf,
}

fn other_programs_file(folder: &str, content: &str) -> OtherProgramsFile {
    let folder = tempfile::Builder::new()
        .prefix("souz-e2e-other-")
        .tempdir_in(folder)
        .unwrap();
    let path = folder.path().join("left-behind.txt");
    std::fs::write(&path, content).unwrap();
    OtherProgramsFile { folder, path }
}

#[tokio::test]
async fn a_confined_command_cannot_read_other_programs_files_in_shared_temporary_folders() {
    let secret = format!("other-program-secret-{}", std::process::id());
    let files: Vec<OtherProgramsFile> = ["/tmp", "/var/tmp", "/dev/shm"]
        .into_iter()
        .filter(|folder| std::path::Path::new(folder).is_dir())
        .map(|folder| other_programs_file(folder, &secret))
        .collect();
    let mut script = String::new();
    for file in &files {
        script.push_str(&format!("cat '{}'; ", file.path.display()));
    }
    // Its own: the private temporary folder, and the workspace (here a home under /tmp).
    script.push_str(
        "echo private > \"$TMPDIR/mine\" && cat \"$TMPDIR/mine\"; \
         echo workspace > in-root.txt && cat in-root.txt",
    );
    for reads_protected in [false, true] {
        let fixture = confined_in(std::path::Path::new("/tmp"), |config| {
            config.commands_read_protected = reads_protected;
        });
        let Some(outcome) = fixture.run(CommandRequest::shell(&script)).await else {
            return;
        };
        let stdout = &outcome.stdout.text;
        assert!(
            !stdout.contains(&secret),
            "read another program's file (commands_read_protected {reads_protected}): {outcome:?}"
        );
        assert!(stdout.lines().any(|line| line == "private"), "{outcome:?}");
        assert!(
            stdout.lines().any(|line| line == "workspace"),
            "{outcome:?}"
        );
    }
    // The files are there and readable for an unconfined process.
    for file in &files {
        assert!(file.folder.path().is_dir());
        assert_eq!(std::fs::read_to_string(&file.path).unwrap(), secret);
    }
}
