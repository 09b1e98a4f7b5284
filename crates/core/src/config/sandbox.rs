//! `[sandbox]`: what tools may touch.

use super::byte_size::ByteSize;
use super::section::{Invalid, config_section};

config_section! {
    /// What tools may touch: workspace roots, protected paths, command limits, and network
    /// exceptions. Paths may start with `~` (your home).
    #[section = "sandbox"]
    pub struct SandboxConfig {
        /// Folders tools may read and write. Paths are checked after resolving symlinks and `..`,
        /// so nothing outside these folders can be reached through them.
        pub roots: Vec<String> = vec!["~".to_owned()],
        /// Paths no tool touches without asking you, even when a rule or grant would allow the
        /// call: credentials and private data (the default lists SSH and GnuPG keys, cloud and
        /// package-manager tokens, git credentials, coding agents' settings, browser profiles,
        /// histories, shell startup files). The Souz home itself is always protected. Listings
        /// and searches skip them, and commands can neither read nor write them where the
        /// system confines commands (see /health).
        pub protected: Vec<String> = super::protected::secrets(),
        /// Paths protected like `protected` (tools ask before reading or writing them, commands
        /// cannot write them) that commands may still read: configuration that makes programs
        /// run code and that they read on every run (the default lists git's configuration,
        /// `~/.local/bin` and `~/bin`, autostart and user service folders, editors',
        /// terminals' and window managers' configuration, Python's user site-packages). Git
        /// hooks and configuration inside every repository in the roots are protected the same
        /// way without being listed. An approved command can run `git status`, but cannot plant
        /// a git hook, a program shim or a login item.
        pub protected_readable: Vec<String> = super::protected::code_config(),
        /// Whether commands may read files inside protected paths. Off (the default): where the
        /// system confines commands (see /health), a command cannot open a file inside a
        /// protected path, so even an approved command cannot read your SSH keys, shell
        /// history or the Souz token (it can still see their names). Turn it on only if a
        /// command you trust needs them.
        pub commands_read_protected: bool = false,
        /// Default time limit of a RunCommand call, in seconds.
        pub command_timeout_seconds: u64 = 60,
        /// Largest time limit a RunCommand call may ask for, in seconds.
        pub command_max_timeout_seconds: u64 = 600,
        /// Output kept per stream (stdout and stderr) of a command; the rest is cut off.
        pub command_output_limit: ByteSize = ByteSize(64 << 10),
        /// Hosts network tools may reach although they are loopback, private or link-local
        /// (e.g. "intranet.example" or "127.0.0.1:8080"). Everything else of that kind is refused.
        pub network_allow_hosts: Vec<String> = Vec::new(),
        /// Whether commands may run when this machine cannot confine them (an old kernel, or
        /// Landlock missing from the kernel's LSM list; see /health). Off (the default):
        /// RunCommand is refused there. On: such commands run unconfined, and every one of
        /// them asks you first, saying "unconfined" (rules and grants never allow it alone).
        pub allow_unconfined_commands: bool = false,
        /// UNIX sockets confined commands may connect to (e.g. "/run/user/1000/bus" for the
        /// user's D-Bus). Empty (the default): none, so a command cannot ask a tmux or screen
        /// server, the Docker daemon, D-Bus or `systemd-run --user` to act for it. Where the
        /// kernel cannot tell socket paths apart (Linux before 7.1, see /health), any entry
        /// here lets commands connect to every path-named UNIX socket.
        pub unix_socket_allow: Vec<String> = Vec::new(),
        /// Whether every confined command may use the network (TCP) without asking for it.
        /// Off (the default): a RunCommand call gets the network only when it asks for it
        /// (`network: true`), and such a call is a network call the approval policy asks
        /// about ([approvals] network); other commands cannot connect or listen over TCP where
        /// the system confines commands (see /health).
        pub command_network: bool = false,
    }
}

impl SandboxConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if self.roots.is_empty() {
            problems.push(Invalid::new("roots", "needs at least one folder"));
        }
        for root in &self.roots {
            if root.trim().is_empty() {
                problems.push(Invalid::new("roots", "contains an empty path"));
            }
        }
        if self.command_timeout_seconds == 0 {
            problems.push(Invalid::new(
                "command_timeout_seconds",
                "must be at least 1",
            ));
        }
        if self.command_max_timeout_seconds < self.command_timeout_seconds {
            problems.push(Invalid::new(
                "command_max_timeout_seconds",
                "must be at least command_timeout_seconds",
            ));
        }
        if self.command_output_limit.bytes() < 1024 {
            problems.push(Invalid::new(
                "command_output_limit",
                "must be at least 1KiB",
            ));
        }
        for entry in &self.unix_socket_allow {
            if !(entry.starts_with('/') || entry.starts_with("~/")) {
                problems.push(Invalid::new(
                    "unix_socket_allow",
                    format!("`{entry}` is not an absolute path (or one starting with ~/)"),
                ));
            }
        }
        for entry in &self.network_allow_hosts {
            if !is_host_entry(entry) {
                problems.push(Invalid::new(
                    "network_allow_hosts",
                    format!(
                        "`{entry}` is not a host, host:port, or IP address (write \"intranet.example\", \"127.0.0.1:8080\" or \"[::1]:8080\", without a scheme or path)"
                    ),
                ));
            }
        }
        problems
    }
}

/// Whether `entry` is `host`, `host:port`, an IP address, or `[v6]` / `[v6]:port`.
fn is_host_entry(entry: &str) -> bool {
    if entry.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return false;
        };
        if inside.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after.strip_prefix(':') {
            _ if after.is_empty() => return true,
            Some(port) => (inside, Some(port)),
            None => return false,
        }
    } else {
        match entry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (entry, None),
        }
    };
    let port_ok = match port {
        None => true,
        Some(port) => port.parse::<u16>().is_ok(),
    };
    let host_ok = entry.starts_with('[')
        || (!host.is_empty()
            && !host.starts_with(['.', '-'])
            && host
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_')));
    port_ok && host_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_host_entries_are_checked() {
        for good in [
            "intranet.example",
            "intranet.example.",
            "127.0.0.1:8080",
            "::1",
            "[::1]",
            "[fd00::1]:80",
            "localhost",
            "münchen.example",
        ] {
            assert!(is_host_entry(good), "{good}");
        }
        for bad in [
            "",
            "http://intranet.example",
            "intranet.example/path",
            "a b",
            "host:99999",
            "host:",
            "user@host",
            "[not-v6]:80",
            "[::1]x",
            ".example",
        ] {
            assert!(!is_host_entry(bad), "{bad:?}");
        }
        let config = SandboxConfig {
            network_allow_hosts: vec!["ok.example".into(), "https://bad.example".into()],
            ..SandboxConfig::default()
        };
        let problems = config.check();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].key, "network_allow_hosts");
        assert!(problems[0].message.contains("https://bad.example"));
    }
}
