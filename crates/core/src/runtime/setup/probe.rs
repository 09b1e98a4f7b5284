//! Asking a model server for its models (`GET <base>/models`, the OpenAI-compatible list Ollama,
//! LM Studio, llama.cpp and the others serve): for the servers configured in `[llm]` and for an
//! address a person types in the setup.
//!
//! Invariants:
//! - Only local destinations are contacted: loopback, private (RFC 1918, `fc00::/7`),
//!   link-local and carrier-grade NAT addresses (a server on this computer or the home network,
//!   Tailscale's included), never a cloud metadata address. A name is resolved first and every
//!   address it resolves to must be local; the connection then goes only to those addresses, so a
//!   second DNS answer cannot differ.
//! - One request per candidate address, each bounded by [`PROBE_TIMEOUT`] and [`MAX_BODY`]; no
//!   redirect is followed and no proxy used.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::Url;
use souz_protocol::{LocalServerProbe, ProbeProblem};

/// How long one server may take to list its models (and a name to resolve).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// The most models listed per server.
const MAX_MODELS: usize = 200;
/// The largest model list read from a server.
const MAX_BODY: usize = 1024 * 1024;

/// Cloud metadata and credential addresses inside otherwise local ranges (AWS instance
/// metadata and its IPv6 form, the ECS/EKS container credential endpoints, GCP, Azure,
/// Alibaba).
const METADATA: [IpAddr; 6] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 23)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23)),
];

/// Whether `ip` is on this computer or a local network (never a cloud metadata address).
pub(crate) fn is_local(ip: IpAddr) -> bool {
    if METADATA.contains(&ip) {
        return false;
    }
    match ip {
        IpAddr::V4(v4) => local_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => !METADATA.contains(&IpAddr::V4(v4)) && local_v4(v4),
            None => {
                let first = v6.segments()[0];
                v6.is_loopback() || first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80
            }
        },
    }
}

fn local_v4(ip: Ipv4Addr) -> bool {
    match ip.octets() {
        [127 | 10, ..] | [192, 168, ..] | [169, 254, ..] => true,
        [172, second, ..] => (16..=31).contains(&second),
        [100, second, ..] => (64..=127).contains(&second),
        _ => false,
    }
}

/// A typed address as a URL a probe may use: http(s), a host, no user, query or fragment.
pub(crate) fn parse_base(typed: &str) -> Option<Url> {
    let url = Url::parse(typed.trim()).ok()?;
    let usable = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|host| !host.is_empty())
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none();
    usable.then_some(url)
}

/// The addresses `url`'s host stands for, when every one of them is local.
async fn local_addresses(url: &Url) -> Result<Vec<SocketAddr>, ProbeProblem> {
    let host = url.host_str().ok_or(ProbeProblem::InvalidUrl)?;
    let port = url
        .port_or_known_default()
        .ok_or(ProbeProblem::InvalidUrl)?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            let lookup = tokio::net::lookup_host((bare, port));
            match tokio::time::timeout(PROBE_TIMEOUT, lookup).await {
                Ok(Ok(found)) => found.collect(),
                _ => Vec::new(),
            }
        }
    };
    if addresses.is_empty() || !addresses.iter().all(|address| is_local(address.ip())) {
        return Err(ProbeProblem::NotLocal);
    }
    Ok(addresses)
}

/// A client that reaches `url`'s host only at `addresses`, with the probe's limits.
fn client(url: &Url, addresses: &[SocketAddr]) -> Option<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .connect_timeout(PROBE_TIMEOUT);
    if let Some(host) = url.domain() {
        builder = builder.resolve_to_addrs(host, addresses);
    }
    builder.build().ok()
}

/// What one server said when asked for its models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    /// The model ids.
    pub models: Vec<String>,
    /// Who the server says owns them (`library` from Ollama, `organization_owner` from LM
    /// Studio, `llamacpp` from llama.cpp), which tells the servers apart.
    pub owners: Vec<String>,
}

/// `GET <base>/models` on `client`.
async fn list(client: &reqwest::Client, base: &str) -> Result<Listing, ProbeProblem> {
    let url = format!("{}/models", base.trim().trim_end_matches('/'));
    let response = client.get(url).send().await.map_err(|error| {
        if error.is_connect() || error.is_timeout() {
            ProbeProblem::Unreachable
        } else {
            ProbeProblem::NotModelServer
        }
    })?;
    if !response.status().is_success() {
        return Err(ProbeProblem::NotModelServer);
    }
    let body = crate::llm::http::bounded::read_limited(response, MAX_BODY)
        .await
        .map_err(|_| ProbeProblem::NotModelServer)?;
    let listing = parse_listing(&body).ok_or(ProbeProblem::NotModelServer)?;
    if listing.models.is_empty() {
        return Err(ProbeProblem::NoModels);
    }
    Ok(listing)
}

/// The models of the local server configured at `base`; `None` unless it is local and answers
/// with at least one model.
pub(crate) async fn configured_server(base: &str) -> Option<Vec<String>> {
    let url = parse_base(base)?;
    let addresses = local_addresses(&url).await.ok()?;
    let client = client(&url, &addresses)?;
    list(&client, base).await.ok().map(|listing| listing.models)
}

/// What answers at the address a person typed: its models and the kind of server it looks like,
/// or why it offers none. An address typed without a path is asked at `/v1` first (where the
/// servers serve their list), then as typed.
pub(crate) async fn typed_server(typed: &str) -> LocalServerProbe {
    let trimmed = typed.trim().trim_end_matches('/').to_owned();
    let answer = |base_url: String, provider: &str, models, problem| LocalServerProbe {
        base_url,
        provider: provider.to_owned(),
        models,
        problem,
    };
    let Some(url) = parse_base(typed) else {
        return answer(
            trimmed,
            "llama_cpp",
            Vec::new(),
            Some(ProbeProblem::InvalidUrl),
        );
    };
    let port = url.port_or_known_default().unwrap_or(0);
    let addresses = match local_addresses(&url).await {
        Ok(addresses) => addresses,
        Err(problem) => return answer(trimmed, kind(&[], port), Vec::new(), Some(problem)),
    };
    let Some(client) = client(&url, &addresses) else {
        return answer(
            trimmed,
            kind(&[], port),
            Vec::new(),
            Some(ProbeProblem::Unreachable),
        );
    };
    let candidates = if matches!(url.path(), "" | "/") {
        vec![format!("{trimmed}/v1"), trimmed.clone()]
    } else {
        vec![trimmed.clone()]
    };
    let mut problem = ProbeProblem::NotModelServer;
    for base in candidates {
        match list(&client, &base).await {
            Ok(listing) => {
                return answer(base, kind(&listing.owners, port), listing.models, None);
            }
            // Nothing answers at the host: another path there will not either. A server with an
            // empty list is a model server: that is what to say.
            Err(found @ (ProbeProblem::Unreachable | ProbeProblem::NoModels)) => {
                return answer(base, kind(&[], port), Vec::new(), Some(found));
            }
            Err(other) => problem = other,
        }
    }
    answer(trimmed, kind(&[], port), Vec::new(), Some(problem))
}

/// Which local server a list came from: by who it says owns the models, else by the port each
/// listens on by default; anything else is saved as llama.cpp's (the plain OpenAI-compatible
/// server).
pub(crate) fn kind(owners: &[String], port: u16) -> &'static str {
    let owned = |name: &str| owners.iter().any(|owner| owner == name);
    if owned("organization_owner") {
        "lm_studio"
    } else if owned("llamacpp") {
        "llama_cpp"
    } else if owned("library") || port == 11434 {
        "ollama"
    } else if port == 1234 {
        "lm_studio"
    } else {
        "llama_cpp"
    }
}

/// The model ids (and owners) of an OpenAI-style list (`{"data": [{"id": ...}]}`) or Ollama's
/// own (`{"models": [{"name": ...}]}`); `None` when the body is neither.
pub(crate) fn parse_listing(body: &[u8]) -> Option<Listing> {
    let value = serde_json::from_slice::<serde_json::Value>(body).ok()?;
    let (items, field) = match (value.get("data"), value.get("models")) {
        (Some(serde_json::Value::Array(items)), _) => (items, "id"),
        (_, Some(serde_json::Value::Array(items))) => (items, "name"),
        _ => return None,
    };
    let text = |item: &serde_json::Value, name: &str| {
        item.get(name)
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty() && !text.contains(char::is_control))
            .map(str::to_owned)
    };
    let mut listing = Listing {
        models: Vec::new(),
        owners: Vec::new(),
    };
    for item in items.iter().take(MAX_MODELS) {
        if let Some(model) = text(item, field) {
            listing.models.push(model);
            listing.owners.extend(text(item, "owned_by"));
        }
    }
    Some(listing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_means_this_computer_or_a_local_network_never_metadata() {
        for local in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.5",
            "172.31.255.1",
            "192.168.1.20",
            "169.254.10.1",
            "100.101.102.103",
            "::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:192.168.1.20",
        ] {
            assert!(is_local(local.parse().unwrap()), "{local}");
        }
        for remote in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "169.254.169.254",
            "169.254.170.2",
            "169.254.170.23",
            "100.100.100.200",
            "fd00:ec2::254",
            "fd00:ec2::23",
            "::ffff:169.254.169.254",
            "2001:4860:4860::8888",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "203.0.113.5",
        ] {
            assert!(!is_local(remote.parse().unwrap()), "{remote}");
        }
    }

    #[test]
    fn only_plain_http_addresses_are_probed() {
        assert!(parse_base("http://127.0.0.1:1234/v1").is_some());
        assert!(parse_base(" https://my-mac.local:11434 ").is_some());
        for bad in [
            "file:///etc/passwd",
            "ftp://127.0.0.1/v1",
            "127.0.0.1:1234",
            "not a url",
            "http://user:secret@127.0.0.1:1234/v1",
            "http://127.0.0.1:1234/v1?x=1",
            "http://127.0.0.1:1234/v1#top",
        ] {
            assert!(parse_base(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn model_lists_of_both_shapes_are_read_and_others_are_not_lists() {
        let openai = br#"{"object":"list","data":[{"id":"llama3.2","owned_by":"library"},{"id":"qwen3:8b"},{"x":1}]}"#;
        let listing = parse_listing(openai).unwrap();
        assert_eq!(listing.models, vec!["llama3.2", "qwen3:8b"]);
        assert_eq!(listing.owners, vec!["library"]);
        let ollama = br#"{"models":[{"name":"llama3.2:latest"}]}"#;
        assert_eq!(
            parse_listing(ollama).unwrap().models,
            vec!["llama3.2:latest"]
        );
        assert!(parse_listing(b"<html>").is_none());
        assert!(parse_listing(br#"{"data":"nope"}"#).is_none());
        assert!(parse_listing(br#"{"data":[]}"#).unwrap().models.is_empty());
        assert!(
            parse_listing(br#"{"data":[{"id":"bad\nname"}]}"#)
                .unwrap()
                .models
                .is_empty()
        );
    }

    #[test]
    fn the_server_is_told_by_its_owners_else_its_port() {
        let owners = |names: &[&str]| {
            names
                .iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(kind(&owners(&["organization_owner"]), 5000), "lm_studio");
        assert_eq!(kind(&owners(&["llamacpp"]), 11434), "llama_cpp");
        assert_eq!(kind(&owners(&["library"]), 8000), "ollama");
        assert_eq!(kind(&[], 11434), "ollama");
        assert_eq!(kind(&[], 1234), "lm_studio");
        assert_eq!(kind(&owners(&["vllm"]), 8000), "llama_cpp");
    }
}
