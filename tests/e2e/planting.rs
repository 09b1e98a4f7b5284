//! A confined command cannot plant code that runs later: in git repositories (hooks,
//! configuration, pointers to other git folders; found in the roots and around the working
//! folder), Python's user site-packages, Claude Desktop's configuration, editors', terminals'
//! and window managers' configuration, sourced shell folders, shell frameworks and npm's user
//! bin folder — also where the folder that would hold the plant does not exist yet. Checked
//! through the real daemon (built before this branch, it let 19 of these 21 plants through).
//! The rest of the workspace stays writable. Where this kernel has no Landlock, the command is
//! refused.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use souz_e2e::Daemon;

use crate::confinement::approved_command;

fn git(folder: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", folder)
        .output()
        .unwrap_or_else(|error| panic!("git {args:?}: {error}"));
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

/// Places relative to the home, each a file a command would plant.
const PLANTS: &[&str] = &[
    // Repositories: a normal one (hooks present), one without a hooks folder, a linked
    // worktree's pointer file and per-worktree configuration, a bare repository, and one
    // deeper than the discovery walks, found because the command works inside it.
    "work/app/.git/hooks/pre-commit",
    "work/app/.git/config",
    "work/nohooks/.git/hooks/post-checkout",
    "work/linked/.git",
    "work/app/.git/worktrees/linked/config.worktree",
    "work/remote.git/hooks/post-receive",
    "work/a/b/c/d/deep/.git/hooks/pre-commit",
    "work/a/b/c/d/deep/.git/config",
    // Python runs every `.pth` file of the user site-packages at start.
    ".local/lib/python3.11/site-packages/planted.pth",
    // Claude Desktop starts the MCP servers its configuration lists.
    ".config/Claude/claude_desktop_config.json",
    // Editors and terminals.
    ".config/Code/User/tasks.json",
    ".vscode/extensions/planted/package.json",
    ".config/nvim/init.lua",
    ".local/share/nvim/site/plugin/planted.lua",
    ".config/wezterm/wezterm.lua",
    ".wezterm.lua",
    // Shells source these.
    ".bashrc.d/planted.sh",
    ".oh-my-zsh/custom/planted.zsh",
    // npm's user-level global bin folder is on PATH.
    ".npm-global/bin/planted",
    // Window managers and desktop shells.
    ".config/i3/config",
    ".local/share/gnome-shell/extensions/planted@souz.test/extension.js",
];

#[test]
fn a_confined_command_cannot_plant_code_that_runs_later() {
    // The real daemon with its default configuration: the user's home is the root.
    let daemon = Daemon::start();
    let home = &daemon.user_home().canonicalize().unwrap();
    let work = home.join("work");
    for repository in ["app", "nohooks", "a/b/c/d/deep"] {
        std::fs::create_dir_all(work.join(repository)).unwrap();
        git(&work.join(repository), &["init", "-q"]);
    }
    std::fs::remove_dir_all(work.join("nohooks/.git/hooks")).unwrap();
    std::fs::create_dir_all(work.join("a/b/c/d/deep/src")).unwrap();
    // A repository's top folder cannot gain entries (see docs/security.md): `src` exists.
    std::fs::create_dir_all(work.join("app/src")).unwrap();
    std::fs::write(work.join("app/README.md"), "original\n").unwrap();
    git(&work.join("app"), &["add", "README.md"]);
    git(
        &work.join("app"),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "first",
        ],
    );
    git(&work.join("app"), &["worktree", "add", "-q", "../linked"]);
    git(&work, &["init", "-q", "--bare", "remote.git"]);
    // Most folders exist (granted until now, as entries of folders holding other protected
    // paths); `~/.local/lib/python3.11` and `~/.local/share/gnome-shell/extensions` do not,
    // and their existing parents must not gain them.
    for folder in [
        ".config/Claude",
        ".config/Code/User",
        ".vscode/extensions",
        ".config/nvim",
        ".local/share/nvim/site/plugin",
        ".config/wezterm",
        ".bashrc.d",
        ".oh-my-zsh/custom",
        ".npm-global/bin",
        ".config/i3",
        ".local/lib",
        ".local/share/gnome-shell",
    ] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
    }
    let before: Vec<Option<Vec<u8>>> = PLANTS
        .iter()
        .map(|relative| std::fs::read(home.join(relative)).ok())
        .collect();

    let mut script = String::new();
    for relative in PLANTS {
        let path = home.join(relative);
        script.push_str(&format!(
            "mkdir -p '{parent}' 2>/dev/null; echo planted >> '{path}' 2>/dev/null && echo 'planted {relative}'; ",
            parent = path.parent().unwrap().display(),
            path = path.display(),
        ));
    }
    // The workspace itself stays usable: new and existing files, and git reads its config.
    script.push_str(&format!(
        "echo ok > {app}/src/new.rs && echo wrote-new; \
         echo changed >> {app}/README.md && echo wrote-existing; \
         git -C {app} status --short >/dev/null && echo git-status-ok",
        app = work.join("app").display()
    ));
    // The deep repository is found through the working folder only.
    let cwd = work.join("a/b/c/d/deep/src");
    let Some(stdout) = approved_command(
        &daemon,
        json!({"command": script, "cwd": cwd.display().to_string()}),
    ) else {
        return;
    };
    for (relative, before) in PLANTS.iter().zip(&before) {
        assert!(
            !stdout
                .lines()
                .any(|line| line == format!("planted {relative}")),
            "{relative} was planted: {stdout}"
        );
        assert_eq!(
            &std::fs::read(home.join(relative)).ok(),
            before,
            "{relative} changed"
        );
    }
    for line in ["wrote-new", "wrote-existing", "git-status-ok"] {
        assert!(stdout.lines().any(|seen| seen == line), "{line}: {stdout}");
    }
}
