//! Which network destinations are public, and which non-public hosts the configuration allows.
//!
//! Invariants:
//! - Only global unicast addresses are public. Loopback, private (RFC 1918, `fc00::/7`),
//!   link-local (incl. the cloud metadata addresses `169.254.169.254` and `fd00:ec2::254`),
//!   carrier-grade NAT, unspecified, multicast, broadcast, documentation, benchmarking and
//!   reserved ranges are not; IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64,
//!   6to4) are judged by the embedded address.
//! - An allow-list entry names a host (domain or IP) and optionally a port. A domain with only
//!   port-specific entries is refused on other ports, so the resolver (which sees names, not
//!   ports) may let an allowed domain resolve to anything.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reqwest::Url;

/// Why `ip` is not a public address, or `None` when it is one.
pub(crate) fn non_public_reason(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => ipv4_reason(v4).map(str::to_owned),
        IpAddr::V6(v6) => ipv6_reason(v6),
    }
}

fn ipv4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let reason = match ip.octets() {
        [0, ..] => "a \"this network\" address (0.0.0.0/8)",
        [10, ..] => "a private address (10.0.0.0/8)",
        [100, second, ..] if (64..=127).contains(&second) => {
            "a carrier-grade NAT address (100.64.0.0/10)"
        }
        [127, ..] => "a loopback address",
        [169, 254, 169, 254] => "the cloud metadata address",
        [169, 254, ..] => "a link-local address (169.254.0.0/16)",
        [172, second, ..] if (16..=31).contains(&second) => "a private address (172.16.0.0/12)",
        [192, 0, 0, _] => "an IETF protocol address (192.0.0.0/24)",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "a documentation address",
        [192, 88, 99, _] => "a 6to4 relay address (192.88.99.0/24)",
        [192, 168, ..] => "a private address (192.168.0.0/16)",
        [198, 18 | 19, ..] => "a benchmarking address (198.18.0.0/15)",
        [255, 255, 255, 255] => "the broadcast address",
        [first, ..] if (224..=239).contains(&first) => "a multicast address",
        [first, ..] if first >= 240 => "a reserved address (240.0.0.0/4)",
        _ => return None,
    };
    Some(reason)
}

fn ipv6_reason(ip: Ipv6Addr) -> Option<String> {
    let embedded = |v4: Ipv4Addr, form: &str| {
        ipv4_reason(v4).map(|reason| format!("{form} of {reason} ({v4})"))
    };
    if ip.is_unspecified() {
        return Some("the unspecified address".to_owned());
    }
    if ip.is_loopback() {
        return Some("a loopback address".to_owned());
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return embedded(v4, "an IPv4-mapped form");
    }
    let segments = ip.segments();
    let low_v4 = || {
        let [.., a, b, c, d] = ip.octets();
        Ipv4Addr::new(a, b, c, d)
    };
    let reason = match segments {
        // ::a.b.c.d (deprecated IPv4-compatible): judged like the IPv4 address, and refused
        // even when that is public, since nothing legitimate uses the form.
        [0, 0, 0, 0, 0, 0, _, _] => {
            return embedded(low_v4(), "an IPv4-compatible form")
                .or_else(|| Some("a deprecated IPv4-compatible address (::/96)".to_owned()));
        }
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => {
            return embedded(low_v4(), "a NAT64 form");
        }
        [0x64, 0xff9b, 1, ..] => "a local-use NAT64 address (64:ff9b:1::/48)",
        [0x100, 0, 0, 0, ..] => "a discard-only address (100::/64)",
        [0x2001, 0xdb8, ..] => "a documentation address (2001:db8::/32)",
        [0x2001, second, ..] if second < 0x200 => "an IETF protocol address (2001::/23)",
        [0x2002, high, low, ..] => {
            let [a, b] = high.to_be_bytes();
            let [c, d] = low.to_be_bytes();
            return embedded(Ipv4Addr::new(a, b, c, d), "a 6to4 form");
        }
        [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254] => "the cloud metadata address",
        [first, ..] if first & 0xfe00 == 0xfc00 => "a unique local (private) address (fc00::/7)",
        [first, ..] if first & 0xffc0 == 0xfe80 => "a link-local address (fe80::/10)",
        [first, ..] if first & 0xffc0 == 0xfec0 => "a site-local address (fec0::/10)",
        [first, ..] if first & 0xff00 == 0xff00 => "a multicast address",
        [first, ..] if first & 0xe000 != 0x2000 => "not a global unicast address",
        _ => return None,
    };
    Some(reason.to_owned())
}

/// A host as the allow list and URLs name it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostName {
    Ip(IpAddr),
    /// Lower case, ASCII (IDNA), without a trailing dot.
    Domain(String),
}

impl HostName {
    fn of_url(url: &Url) -> Option<Self> {
        // The URL parser already turned every IPv4 spelling (`0x7f.1`, `2130706433`) into
        // dotted form and bracketed IPv6; what does not parse as an address is a domain.
        let host = url.host_str().filter(|host| !host.is_empty())?;
        let unbracketed = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host);
        Some(match unbracketed.parse::<IpAddr>() {
            Ok(ip) => Self::Ip(ip),
            Err(_) => Self::domain(host),
        })
    }

    fn domain(domain: &str) -> Self {
        Self::Domain(domain.trim_end_matches('.').to_ascii_lowercase())
    }
}

/// One `network_allow_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedHost {
    host: HostName,
    port: Option<u16>,
}

impl AllowedHost {
    /// Parses `host`, `host:port`, an IP address, or `[v6]:port`.
    pub(crate) fn parse(entry: &str) -> Result<Self, String> {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err("an entry is empty".to_owned());
        }
        // A bare IPv6 address has colons that are not a port separator.
        if let Ok(ip) = entry.parse::<IpAddr>() {
            return Ok(Self {
                host: HostName::Ip(ip),
                port: None,
            });
        }
        let invalid = || format!("`{entry}` is not a host, host:port, or IP address");
        if entry.contains(['/', '?', '#', '@']) {
            return Err(invalid());
        }
        let url = Url::parse(&format!("http://{entry}/")).map_err(|_| invalid())?;
        let host = HostName::of_url(&url).ok_or_else(invalid)?;
        // Read the port from the entry itself: the URL parser forgets an explicit `:80`.
        let port = match entry.rfind(':') {
            Some(colon) if !entry[colon..].contains(']') => {
                Some(entry[colon + 1..].parse::<u16>().map_err(|_| invalid())?)
            }
            _ => None,
        };
        Ok(Self { host, port })
    }
}

/// The `[sandbox] network_allow_hosts` list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    allowed: Vec<AllowedHost>,
}

/// Why a URL or address is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not http or https.
    Scheme(String),
    /// No host.
    NoHost,
    /// The host is an allowed domain, but not on this port.
    Port {
        /// The host.
        host: String,
        /// The port asked for.
        port: u16,
    },
    /// The address is not public.
    Address {
        /// What was asked for (host or host:port).
        target: String,
        /// The address.
        ip: IpAddr,
        /// Why it is not public.
        reason: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scheme(scheme) => {
                write!(f, "only http and https URLs can be fetched, not {scheme}:")
            }
            Self::NoHost => write!(f, "the URL has no host"),
            Self::Port { host, port } => write!(
                f,
                "{host} is allowed in [sandbox] network_allow_hosts only on other ports, not {port}"
            ),
            Self::Address { target, ip, reason } => {
                let bare_target = target.trim_start_matches('[').trim_end_matches(']');
                if bare_target == ip.to_string() {
                    write!(f, "{ip} is {reason}")?;
                } else {
                    write!(f, "{target} resolves to {ip}, {reason}")?;
                }
                write!(
                    f,
                    "; Souz does not connect to such addresses unless the host is listed in \
                     [sandbox] network_allow_hosts"
                )
            }
        }
    }
}

impl std::error::Error for Refusal {}

impl NetworkPolicy {
    /// Parses the allow list.
    pub fn new(entries: &[String]) -> Result<Self, String> {
        let allowed = entries
            .iter()
            .map(|entry| AllowedHost::parse(entry))
            .collect::<Result<_, _>>()?;
        Ok(Self { allowed })
    }

    /// Checks a URL before connecting or following a redirect to it: the scheme, and for IP
    /// literals the address (names are checked after DNS by the resolver).
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme(url.scheme().to_owned()));
        }
        let host = HostName::of_url(url).ok_or(Refusal::NoHost)?;
        let port = url.port_or_known_default().unwrap_or(0);
        let entries: Vec<&AllowedHost> = self
            .allowed
            .iter()
            .filter(|allowed| allowed.host == host)
            .collect();
        if entries
            .iter()
            .any(|allowed| allowed.port.is_none_or(|allowed_port| allowed_port == port))
        {
            return Ok(());
        }
        match host {
            HostName::Ip(ip) => match non_public_reason(ip) {
                Some(reason) => Err(Refusal::Address {
                    target: url.host_str().unwrap_or_default().to_owned(),
                    ip,
                    reason,
                }),
                None => Ok(()),
            },
            HostName::Domain(domain) if !entries.is_empty() => {
                Err(Refusal::Port { host: domain, port })
            }
            HostName::Domain(_) => Ok(()),
        }
    }

    /// Whether the resolver may let `name` resolve to non-public addresses (an entry names it;
    /// ports were checked by [`NetworkPolicy::check_url`]).
    pub fn domain_allowed(&self, name: &str) -> bool {
        let name = HostName::domain(name);
        self.allowed.iter().any(|allowed| allowed.host == name)
    }

    /// Checks the addresses `name` resolved to: all must be public unless the name is allowed.
    pub fn check_resolved(&self, name: &str, addresses: &[IpAddr]) -> Result<(), Refusal> {
        if self.domain_allowed(name) {
            return Ok(());
        }
        for ip in addresses {
            if let Some(reason) = non_public_reason(*ip) {
                return Err(Refusal::Address {
                    target: name.to_owned(),
                    ip: *ip,
                    reason,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
