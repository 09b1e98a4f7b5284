//! The default protected paths, as data: credentials, and configuration that makes programs
//! run code, on Linux and macOS.
//!
//! Two tiers, both protected (file tools ask before reading or writing them; commands never
//! write them):
//! - [`SECRETS`]: credentials and private data. Commands cannot read them either (unless
//!   `[sandbox] commands_read_protected`).
//! - [`CODE_CONFIG`]: configuration programs read on every run (git's config, user `bin`
//!   folders, autostart entries, editors' and shells' startup files). Commands may read them,
//!   so `git status` still finds `~/.gitconfig` and programs in `~/.local/bin` still run, but
//!   cannot change them, so an approved command cannot plant a hook, a shim or a login item.
//!
//! Entries may name files or folders that do not exist yet: they are protected by path.
//! Git metadata that runs code (hooks, configuration) lives in every repository, not at one
//! path: `sandbox::repositories` protects it by class.

/// Credentials and private data on every system: commands can neither read nor write them.
const COMMON_SECRETS: &[&str] = &[
    // SSH, GnuPG, password stores.
    "~/.ssh",
    "~/.gnupg",
    "~/.password-store",
    "~/.pki",
    // Network and git credentials.
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.config/gh",
    "~/.config/glab-cli",
    "~/.config/hub",
    // Cloud and infrastructure command-line tools.
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/doctl",
    "~/.config/hcloud",
    "~/.oci",
    "~/.kube",
    "~/.docker",
    "~/.config/containers/auth.json",
    "~/.terraform.d",
    "~/.pulumi",
    "~/.vault-token",
    "~/.boto",
    "~/.s3cfg",
    "~/.config/rclone",
    "~/.databrickscfg",
    "~/.fly",
    "~/.config/op",
    // Package managers' tokens.
    "~/.npmrc",
    "~/.yarnrc",
    "~/.yarnrc.yml",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.m2/settings.xml",
    "~/.m2/settings-security.xml",
    "~/.gradle/gradle.properties",
    "~/.nuget/NuGet",
    "~/.config/NuGet",
    "~/.composer/auth.json",
    "~/.config/composer/auth.json",
    // Coding agents' own credentials and settings.
    "~/.claude",
    "~/.claude.json",
    "~/.codex",
    "~/.gemini",
    "~/.cursor",
    "~/.config/github-copilot",
    // Histories (they hold typed secrets).
    "~/.bash_history",
    "~/.zsh_history",
    "~/.python_history",
    "~/.node_repl_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.local/share/fish",
    // Shells' startup files (commands run with `-c` do not read these).
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bash_logout",
    "~/.profile",
    "~/.login",
    "~/.cshrc",
    "~/.tcshrc",
    "~/.kshrc",
    "~/.zshrc",
    "~/.zprofile",
    "~/.zshenv",
    "~/.zlogin",
    "~/.zlogout",
    // Folders and files the default startup files source (Fedora's `.bashrc` reads every file
    // in `~/.bashrc.d`, Debian's reads `~/.bash_aliases`).
    "~/.bashrc.d",
    "~/.bash_aliases",
    // macOS keeps keychains, LaunchAgents, browser profiles and app data here.
    "~/Library",
];

/// Credentials and private data that live elsewhere on Linux (and the BSDs).
#[cfg(not(target_os = "macos"))]
const PLATFORM_SECRETS: &[&str] = &[
    // Claude Desktop: the MCP servers it starts, with their keys.
    "~/.config/Claude",
    "~/.local/share/keyrings",
    "~/.local/share/kwalletd",
    // Browser profiles (cookies, saved passwords).
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/google-chrome-beta",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/.config/vivaldi",
    "~/.config/opera",
    "~/snap/firefox",
    "~/snap/chromium",
    "~/.var/app/org.mozilla.firefox",
    "~/.var/app/com.google.Chrome",
    "~/.var/app/org.chromium.Chromium",
    "~/.var/app/com.brave.Browser",
];

/// Credentials and private data that live elsewhere on macOS (the rest is under `~/Library`).
#[cfg(target_os = "macos")]
const PLATFORM_SECRETS: &[&str] = &["~/.mozilla"];

/// Configuration that runs code, on every system: commands may read it, not write it.
const COMMON_CODE_CONFIG: &[&str] = &[
    // Git runs hooks, filters, `core.fsmonitor` and aliases from its configuration.
    "~/.gitconfig",
    "~/.config/git",
    // Toolchains' configuration can name wrappers and helpers they run.
    "~/.cargo/config",
    "~/.cargo/config.toml",
    "~/.config/pip",
    "~/.pip",
    "~/.condarc",
    "~/.gradle/init.gradle",
    "~/.gradle/init.d",
    "~/.config/direnv",
    "~/.local/share/direnv",
    "~/.ipython",
    "~/.Rprofile",
    // User `bin` folders (on `PATH` before the system's: a shim there runs instead).
    "~/.local/bin",
    "~/bin",
    // Shells, readline, terminal multiplexers and editors read these when they start.
    "~/.config/fish",
    "~/.config/powershell",
    "~/.inputrc",
    "~/.tmux.conf",
    "~/.config/tmux",
    "~/.screenrc",
    "~/.vimrc",
    "~/.vim",
    "~/.config/nvim",
    "~/.emacs",
    "~/.emacs.d",
    "~/.config/emacs",
    // Editors' plugins, extensions and tasks (Neovim loads everything under its data folder's
    // `site/plugin`; VS Code and its forks run extensions and tasks).
    "~/.config/vim",
    "~/.local/share/nvim",
    "~/.vscode",
    "~/.vscode-oss",
    "~/.vscode-server",
    "~/.config/Code",
    "~/.config/Code - OSS",
    "~/.config/VSCodium",
    "~/.config/Cursor",
    "~/.config/zed",
    "~/.config/helix",
    // Terminals and prompts that start a shell or run commands from their configuration.
    "~/.config/wezterm",
    "~/.wezterm.lua",
    "~/.config/kitty",
    "~/.config/alacritty",
    "~/.alacritty.toml",
    "~/.alacritty.yml",
    "~/.config/ghostty",
    "~/.config/zellij",
    "~/.config/starship.toml",
    // Shell frameworks: their code and the custom folder run in every interactive zsh.
    "~/.oh-my-zsh",
    // npm's user-level global prefixes (their `bin` is on `PATH`).
    "~/.npm-global",
    "~/.npm-packages",
];

/// Configuration that runs code at login or start on Linux desktops and sessions.
#[cfg(not(target_os = "macos"))]
const PLATFORM_CODE_CONFIG: &[&str] = &[
    "~/.config/autostart",
    "~/.config/autostart-scripts",
    "~/.config/plasma-workspace/env",
    "~/.config/systemd/user",
    "~/.config/environment.d",
    "~/.local/share/applications",
    "~/.local/share/systemd/user",
    "~/.pam_environment",
    "~/.xprofile",
    "~/.xinitrc",
    "~/.xsession",
    "~/.xsessionrc",
    "~/.xserverrc",
    "~/.config/plasma-workspace/shutdown",
    // Python's user site-packages (`~/.local/lib/pythonX.Y/site-packages`): a `.pth` file
    // there runs at every start of Python.
    "~/.local/lib",
    // Window managers and desktop shells run commands and extensions from these.
    "~/.config/i3",
    "~/.i3",
    "~/.config/sway",
    "~/.config/hypr",
    "~/.config/openbox",
    "~/.config/awesome",
    "~/.config/bspwm",
    "~/.config/sxhkd",
    "~/.local/share/gnome-shell/extensions",
    "~/.local/share/plasma",
];

/// Configuration that runs code at login on macOS (LaunchAgents are under `~/Library`).
#[cfg(target_os = "macos")]
const PLATFORM_CODE_CONFIG: &[&str] = &[
    "~/.hammerspoon",
    "~/.config/karabiner",
    "~/.config/skhd",
    "~/.skhdrc",
    "~/.config/yabai",
    "~/.yabairc",
];

/// Credentials and private data (see the module docs).
pub(crate) fn secrets() -> Vec<String> {
    COMMON_SECRETS
        .iter()
        .chain(PLATFORM_SECRETS)
        .map(|path| (*path).to_owned())
        .collect()
}

/// Configuration that runs code (see the module docs).
pub(crate) fn code_config() -> Vec<String> {
    COMMON_CODE_CONFIG
        .iter()
        .chain(PLATFORM_CODE_CONFIG)
        .map(|path| (*path).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiers_do_not_overlap_and_name_home_paths() {
        let secrets = secrets();
        let code = code_config();
        for path in secrets.iter().chain(&code) {
            assert!(path.starts_with("~/"), "{path}");
            assert!(!path.ends_with('/'), "{path}");
        }
        for path in &code {
            assert!(!secrets.contains(path), "{path} is in both tiers");
        }
        let mut all: Vec<&String> = secrets.iter().chain(&code).collect();
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), count, "no entry twice");
    }
}
