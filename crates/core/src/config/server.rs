//! `[server]`: where the gateway listens and which requests it accepts.

use std::net::IpAddr;

use super::byte_size::ByteSize;
use super::section::{Invalid, config_section};

config_section! {
    /// Where the gateway (HTTP API, WebSocket, MCP) listens and what it accepts.
    #[section = "server"]
    pub struct ServerConfig {
        /// Address to listen on. Loopback (127.0.0.1, ::1, localhost) unless
        /// `allow_non_loopback` is true.
        pub host: String = "127.0.0.1".to_owned(),
        /// TCP port of the gateway API and the MCP server. 0 picks a free port (the chosen one
        /// is written to `daemon.json` in the Souz home).
        pub port: u16 = 8383,
        /// Listen on a non-loopback address. Anyone who can reach the port and has the token
        /// can use your tools: only enable this behind a firewall you trust.
        pub allow_non_loopback: bool = false,
        /// Extra `Host` header values to accept (e.g. "souz.local:8383"). The bound address and
        /// localhost with the right port are always accepted; anything else gets 403.
        pub allowed_hosts: Vec<String> = Vec::new(),
        /// Browser origins allowed to call the API (scheme://host[:port]). The daemon's own
        /// origins are always allowed; a request with any other `Origin` gets 403.
        pub allowed_origins: Vec<String> = vec![
            "tauri://localhost".to_owned(),
            "http://tauri.localhost".to_owned(),
        ],
        /// Largest request body accepted; bigger requests get 413.
        pub body_limit: ByteSize = ByteSize::mib(10),
        /// Seconds to let in-flight requests finish after SIGINT/SIGTERM.
        pub shutdown_grace_seconds: u64 = 10,
        /// Seconds a client gets to send a request's headers (the whole header block, also on
        /// a kept-alive connection between requests); a slower one is disconnected.
        pub header_read_timeout_seconds: u64 = 10,
        /// Most connections served at once (WebSockets and MCP streams included). A connection
        /// over the cap is answered 503 `busy` and closed at once; nothing waits.
        pub max_connections: usize = 256,
        /// Trusted-proxy mode for server deployments (empty: off). When set, a request whose
        /// `X-Souz-Proxy-Auth` carries this secret acts for the user named by `X-User-Id`: chats,
        /// settings, provider keys, and their chats' approvals and audit rows are scoped to that
        /// user, and daemon-wide routes (config, pause, grants, tools, runtime events) answer 403.
        /// A request with neither header is the operator. Prefer setting it with SOUZ_PROXY_TOKEN.
        pub trusted_proxy_token: String = String::new(),
        /// Trusted-proxy mode: the folder each proxied user's agent and tools work in, a
        /// template with `{user}` (e.g. "/srv/souz/users/{user}"). Created 0700 on first use;
        /// it is that user's only root, never the operator's. Empty: proxied users' tools get
        /// no folder at all (file tools and commands are refused).
        pub proxy_user_roots: String = String::new(),
        /// Trusted-proxy mode: whether proxied users decide their own chats' tool approvals.
        /// Off (the default): only the operator decides them, and a user's decision gets 403.
        pub proxy_users_decide: bool = false,
    }
}

impl ServerConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        match parse_host(&self.host) {
            None => problems.push(Invalid::new(
                "host",
                format!("`{}` is not an IP address or `localhost`", self.host),
            )),
            Some(ip) if !ip.is_loopback() && !self.allow_non_loopback => {
                problems.push(Invalid::new(
                    "host",
                    format!(
                        "`{}` is not a loopback address; Souz listens on loopback only unless \
                         `allow_non_loopback = true` is set",
                        self.host
                    ),
                ));
            }
            Some(_) => {}
        }
        for origin in &self.allowed_origins {
            if let Err(message) = normalize_origin(origin) {
                problems.push(Invalid::new("allowed_origins", message));
            }
        }
        for host in &self.allowed_hosts {
            if host.trim().is_empty() || host.contains('/') || host.contains(char::is_whitespace) {
                problems.push(Invalid::new(
                    "allowed_hosts",
                    format!("`{host}` is not a host[:port] value"),
                ));
            }
        }
        if self.body_limit.bytes() < 1024 {
            problems.push(Invalid::new("body_limit", "must be at least 1KiB"));
        }
        let proxy = self.trusted_proxy_token.trim();
        if !proxy.is_empty() && proxy.len() < 16 {
            problems.push(Invalid::new(
                "trusted_proxy_token",
                "must be at least 16 characters (or empty to switch trusted-proxy mode off)",
            ));
        }
        if !(1..=3600).contains(&self.header_read_timeout_seconds) {
            problems.push(Invalid::new(
                "header_read_timeout_seconds",
                "must be between 1 and 3600",
            ));
        }
        if !(1..=65_536).contains(&self.max_connections) {
            problems.push(Invalid::new(
                "max_connections",
                "must be between 1 and 65536",
            ));
        }
        if let Err(message) = check_user_roots(&self.proxy_user_roots) {
            problems.push(Invalid::new("proxy_user_roots", message));
        }
        if self.shutdown_grace_seconds > 300 {
            problems.push(Invalid::new(
                "shutdown_grace_seconds",
                "must be at most 300",
            ));
        }
        problems
    }

    /// The IP address to bind; `localhost` means 127.0.0.1.
    pub fn ip(&self) -> Option<IpAddr> {
        parse_host(&self.host)
    }
}

/// The placeholder in `proxy_user_roots` replaced by the user id.
pub(crate) const USER_PLACEHOLDER: &str = "{user}";

fn check_user_roots(template: &str) -> Result<(), String> {
    let template = template.trim();
    if template.is_empty() {
        return Ok(());
    }
    if !template.starts_with('/') {
        return Err(format!("`{template}` must be an absolute path"));
    }
    if !template.contains(USER_PLACEHOLDER) {
        return Err(format!(
            "`{template}` must contain {USER_PLACEHOLDER}, so every user gets a folder of their own"
        ));
    }
    if template.split('/').any(|part| part == "..") {
        return Err(format!("`{template}` must not contain `..`"));
    }
    Ok(())
}

fn parse_host(host: &str) -> Option<IpAddr> {
    if host.eq_ignore_ascii_case("localhost") {
        return Some(IpAddr::from([127, 0, 0, 1]));
    }
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Checks an origin (`scheme://host[:port]`, no path) and returns it lower-cased.
pub(crate) fn normalize_origin(origin: &str) -> Result<String, String> {
    let lower = origin.trim().to_ascii_lowercase();
    let Some((scheme, rest)) = lower.split_once("://") else {
        return Err(format!(
            "`{origin}` is not an origin: expected scheme://host[:port]"
        ));
    };
    let valid_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme || rest.is_empty() || rest.contains(['/', '?', '#', ' ']) {
        return Err(format!(
            "`{origin}` is not an origin: expected scheme://host[:port] with no path"
        ));
    }
    Ok(lower)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::section::Section;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(ServerConfig::default().validate(), vec![]);
    }

    #[test]
    fn non_loopback_needs_explicit_permission() {
        let mut config = ServerConfig {
            host: "0.0.0.0".into(),
            ..ServerConfig::default()
        };
        let problems = config.validate();
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].key, "host");
        assert!(problems[0].message.contains("allow_non_loopback"));
        config.allow_non_loopback = true;
        assert_eq!(config.validate(), vec![]);
    }

    #[test]
    fn bounds_and_user_roots_are_validated() {
        let config = ServerConfig {
            header_read_timeout_seconds: 0,
            max_connections: 0,
            proxy_user_roots: "srv/{user}".into(),
            ..ServerConfig::default()
        };
        let keys: Vec<&str> = config.validate().iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            [
                "header_read_timeout_seconds",
                "max_connections",
                "proxy_user_roots"
            ]
        );
        for bad in ["/srv/souz/users", "/srv/../{user}", "relative/{user}"] {
            assert!(check_user_roots(bad).is_err(), "{bad}");
        }
        assert!(check_user_roots("/srv/souz/users/{user}").is_ok());
        assert!(check_user_roots("").is_ok());
    }

    #[test]
    fn hosts_and_origins() {
        assert_eq!(parse_host("localhost"), Some(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(parse_host("[::1]"), Some("::1".parse().unwrap()));
        assert_eq!(parse_host("example.com"), None);
        assert_eq!(
            normalize_origin("HTTP://Localhost:8383").unwrap(),
            "http://localhost:8383"
        );
        assert!(normalize_origin("localhost:8383").is_err());
        assert!(normalize_origin("http://x/path").is_err());
        assert!(normalize_origin("://x").is_err());
    }
}
