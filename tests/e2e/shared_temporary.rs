//! A confined command cannot read other programs' files in the shared temporary folders
//! (`/tmp`, `/var/tmp`, `/dev/shm`), whatever `[sandbox] commands_read_protected` says, while
//! its own private temporary folder and a root that lies under `/tmp` stay readable (checked
//! through the real daemon, whose user home lies under `/tmp` here). Where this
//! kernel has no Landlock, the command is refused.

use std::path::PathBuf;

use serde_json::json;
use souz_e2e::Daemon;

use crate::confinement::approved_command;

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

#[test]
fn a_confined_command_cannot_read_other_programs_files_in_shared_temporary_folders() {
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
    // Its own: the private temporary folder, and the workspace (the user's home, which lies
    // under /tmp here).
    script.push_str(
        "echo private > \"$TMPDIR/mine\" && cat \"$TMPDIR/mine\"; \
         mkdir -p work && echo workspace > work/in-root.txt && cat work/in-root.txt",
    );
    for reads_protected in [false, true] {
        let souz_home = tempfile::tempdir().unwrap();
        std::fs::write(
            souz_home.path().join("config.toml"),
            format!("[sandbox]\ncommands_read_protected = {reads_protected}\n"),
        )
        .unwrap();
        let daemon = Daemon::start_in(souz_home, |_| {});
        // `work` exists before the command: the home holds protected paths, so a command
        // cannot add entries to it directly.
        std::fs::create_dir_all(daemon.user_home().join("work")).unwrap();
        let Some(stdout) = approved_command(&daemon, json!({"command": script})) else {
            return;
        };
        assert!(
            !stdout.contains(&secret),
            "read another program's file (commands_read_protected {reads_protected}): {stdout}"
        );
        assert!(stdout.lines().any(|line| line == "private"), "{stdout}");
        assert!(stdout.lines().any(|line| line == "workspace"), "{stdout}");
    }
    // The files are there and readable for an unconfined process.
    for file in &files {
        assert!(file.folder.path().is_dir());
        assert_eq!(std::fs::read_to_string(&file.path).unwrap(), secret);
    }
}
