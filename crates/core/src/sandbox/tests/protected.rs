//! The default protected paths and confinement: commands cannot write them (nor read the
//! secrets), including files that do not exist yet. That reading one asks is the policy's
//! business: `approvals::tests::protected`.

use super::*;

fn home_sandbox() -> (tempfile::TempDir, PathBuf, Sandbox) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let home = dir.path().canonicalize().unwrap();
    let paths = SouzPaths::new(home.join(".souz")).with_user_home(&home);
    let sandbox = Sandbox::new(&SandboxConfig::default(), &paths).unwrap();
    (dir, home, sandbox)
}

#[test]
fn commands_cannot_write_protected_paths_even_before_they_exist() {
    let (_dir, home, sandbox) = home_sandbox();
    for folder in [".config/app", ".config/systemd", ".local/bin", "projects"] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
    }
    std::fs::write(home.join(".gitconfig"), "[user]\n").unwrap();
    std::fs::write(home.join(".local/bin/tool"), "#!/bin/sh\n").unwrap();
    // The command's private temporary folder lies outside the home, as in real runs.
    let temporary = tempfile::tempdir().unwrap();
    let writable = confinement::writable_paths(&sandbox, temporary.path());
    let writable_through = |relative: &str| {
        let path = home.join(relative);
        writable
            .iter()
            .find(|granted| path.starts_with(granted))
            .cloned()
    };
    // Existing or not, nothing granted contains these.
    for relative in [
        ".gitconfig",
        ".git-credentials",
        ".config/git/config",
        ".config/autostart/x.desktop",
        ".config/systemd/user/x.service",
        ".local/bin/tool",
        ".local/bin/git",
        "bin/git",
        ".claude.json",
        ".npmrc",
        // Code that runs later, by class (issue 39): none of these folders exists here.
        ".config/Claude/claude_desktop_config.json",
        ".bashrc.d/x.sh",
        ".bash_aliases",
        ".local/lib/python3.11/site-packages/x.pth",
        ".config/Code/User/tasks.json",
        ".vscode/extensions/x/package.json",
        ".local/share/nvim/site/plugin/x.lua",
        ".config/wezterm/wezterm.lua",
        ".wezterm.lua",
        ".oh-my-zsh/custom/x.zsh",
        ".npm-global/bin/x",
        ".config/i3/config",
        ".local/share/gnome-shell/extensions/x/extension.js",
    ] {
        assert_eq!(writable_through(relative), None, "{relative}");
    }
    for relative in ["projects/a.rs", ".config/app/x"] {
        assert!(
            writable_through(relative).is_some(),
            "{relative}: {writable:?}"
        );
    }
    // Commands read code configuration (git needs its config, programs in ~/.local/bin run),
    // not secrets.
    if let Some(readable) = confinement::readable_paths(&sandbox, temporary.path()) {
        let readable_through = |relative: &str| {
            readable
                .iter()
                .any(|granted| home.join(relative).starts_with(granted))
        };
        assert!(readable_through(".gitconfig"), "{readable:?}");
        assert!(readable_through(".local/bin/tool"), "{readable:?}");
        assert!(!readable_through(".git-credentials"));
        assert!(!readable_through(".npmrc"));
    }
}
