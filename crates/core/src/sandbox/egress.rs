//! The loopback egress proxy of one confined command: the command's only way out to the
//! network, to the hosts its skill's manifest lists and nowhere else.
//!
//! It listens on `127.0.0.1:<ephemeral port>` for the life of the command; the command gets
//! `HTTP(S)_PROXY`/`ALL_PROXY` pointing at it, and its confinement allows TCP `connect` only to
//! that port number (Landlock ABI 4 port rules, Seatbelt `localhost:<port>`). It speaks
//! `CONNECT host:port` (tunnels, for HTTPS and anything else over TCP) and plain-HTTP forwarding
//! (`GET http://host/path`).
//!
//! Invariants:
//! - A destination is reached only if its host is listed (names compared without case and a
//!   trailing dot; an entry without a port allows ports 80 and 443 only, `name:port` that port).
//! - Then the SSRF policy of the sandbox's web client applies: an IP literal or a name whose
//!   addresses are not all public is refused unless `[sandbox] network_allow_hosts` names it,
//!   and the connection goes to an address that check returned (no second DNS answer).
//! - Anything else (a malformed request, an unlisted host, a refused address) is answered
//!   `403` or `400` and closed; nothing is forwarded.
//! - With a byte limit, the bytes received from upstream over all connections stop there: the
//!   connection that crosses it is closed (a download cannot fill the disk).
//!
//! Not promised: a port rule is not an address rule, so a confined command can still connect
//! to *another* host on the proxy's port number (a service of that port on the LAN, say).

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::net::{HostLookup, NetworkPolicy};

/// Largest request head read before answering `400`.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Time for a client to send its request head, and for an upstream connection.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);

/// Where a proxy may connect.
#[derive(Clone)]
pub(crate) struct EgressRules {
    /// The listed hosts (`name` or `name:port`), as a manifest writes them.
    pub hosts: Vec<String>,
    /// The SSRF policy the destination must also pass.
    pub policy: Arc<NetworkPolicy>,
    /// Name resolution.
    pub lookup: Arc<dyn HostLookup>,
    /// Most bytes received from upstream over the proxy's life (`None`: no limit).
    pub limit: Option<u64>,
}

/// A running proxy; it stops when dropped.
pub struct EgressProxy {
    port: u16,
    rules: Arc<EgressRules>,
    _stop: DropGuard,
}

impl EgressProxy {
    /// Starts a proxy on a fresh loopback port.
    pub(crate) async fn start(rules: EgressRules) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let stop = CancellationToken::new();
        let token = stop.clone();
        let rules = Arc::new(rules);
        let kept = Arc::clone(&rules);
        let left = Arc::new(AtomicU64::new(rules.limit.unwrap_or(u64::MAX)));
        #[allow(
            clippy::disallowed_methods,
            reason = "the proxy's accept loop and its connections, owned by EgressProxy: its DropGuard cancels them when the command it serves ends"
        )]
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = token.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((client, _)) = accepted else {
                    continue;
                };
                let (rules, token, left) = (Arc::clone(&rules), token.clone(), Arc::clone(&left));
                tokio::spawn(async move {
                    tokio::select! {
                        () = token.cancelled() => {}
                        () = serve(client, &rules, left) => {}
                    }
                });
            }
        });
        Ok(Self {
            port,
            rules: kept,
            _stop: stop.drop_guard(),
        })
    }

    /// Whether the proxy would reach `host:port`, or why not (in the words it answers with):
    /// to say why before a client that shows only the status is started.
    pub(crate) async fn check(&self, host: &str, port: u16) -> Result<(), DestinationError> {
        destination(&self.rules, host, port).await.map(drop)
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its URL, for the proxy environment variables.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment a command needs to use it.
    pub fn environment(&self) -> Vec<(String, String)> {
        let url = self.url();
        [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ]
        .into_iter()
        .map(|name| (name.to_owned(), url.clone()))
        .chain([
            ("NO_PROXY".to_owned(), String::new()),
            ("no_proxy".to_owned(), String::new()),
        ])
        .collect()
    }
}

/// What a client asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// `CONNECT host:port`.
    Tunnel { host: String, port: u16 },
    /// An absolute-form HTTP request: its destination and the head to send upstream (request
    /// line in origin form, headers as sent).
    Forward {
        host: String,
        port: u16,
        head: Vec<u8>,
    },
}

/// Parses a request head (up to and including the blank line).
pub(crate) fn parse_head(head: &[u8]) -> Result<Request, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request is not text".to_owned())?;
    let (line, rest) = text
        .split_once("\r\n")
        .ok_or_else(|| "no request line".to_owned())?;
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(format!("malformed request line `{line}`"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported version {version}"));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(target, None)?;
        return Ok(Request::Tunnel { host, port });
    }
    let url = reqwest::Url::parse(target)
        .map_err(|_| format!("`{target}` is not an absolute http:// URL"))?;
    if url.scheme() != "http" {
        return Err(format!(
            "only http:// is forwarded (use CONNECT for {})",
            url.scheme()
        ));
    }
    let host = url
        .host_str()
        .ok_or_else(|| "the URL has no host".to_owned())?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    let mut upstream = format!("{method} {path} {version}\r\n").into_bytes();
    upstream.extend_from_slice(rest.as_bytes());
    Ok(Request::Forward {
        host,
        port,
        head: upstream,
    })
}

fn split_host_port(target: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let (host, port) = match target.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') => (
            host,
            port.parse::<u16>()
                .map_err(|_| format!("bad port in `{target}`"))?,
        ),
        _ => (
            target,
            default.ok_or_else(|| format!("`{target}` needs a port"))?,
        ),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || port == 0 {
        return Err(format!("bad destination `{target}`"));
    }
    Ok((host.to_owned(), port))
}

/// Whether `host:port` is listed in `hosts`.
pub(crate) fn listed(hosts: &[String], host: &str, port: u16) -> bool {
    let clean = |name: &str| name.trim_end_matches('.').to_ascii_lowercase();
    let host = clean(host);
    hosts.iter().any(|entry| {
        let (name, allowed) = match entry.rsplit_once(':') {
            Some((name, port)) => (name, port.parse::<u16>().ok()),
            None => (entry.as_str(), None),
        };
        clean(name) == host
            && match allowed {
                Some(allowed) => allowed == port,
                None => port == 80 || port == 443,
            }
    })
}

/// Why the proxy does not reach a destination; the answer's status follows the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DestinationError {
    /// Not allowed: not among the manifest's hosts, or refused by the network policy (`403`).
    #[error("{0}")]
    Refused(String),
    /// Allowed, but not found: the name does not resolve, in time or at all (`502`).
    #[error("{0}")]
    Unreachable(String),
}

impl DestinationError {
    /// The status line the proxy answers with.
    pub(crate) fn status(&self) -> &'static str {
        match self {
            Self::Refused(_) => "403 Forbidden",
            Self::Unreachable(_) => "502 Bad Gateway",
        }
    }
}

/// The addresses to connect to for `host:port`, or why not.
pub(crate) async fn destination(
    rules: &EgressRules,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, DestinationError> {
    use DestinationError::{Refused, Unreachable};
    if !listed(&rules.hosts, host, port) {
        return Err(Refused(format!(
            "{host}:{port} is not among the hosts this skill's manifest lists"
        )));
    }
    let literal = host.parse::<IpAddr>().ok();
    let url_host = match literal {
        Some(IpAddr::V6(ip)) => format!("[{ip}]"),
        _ => host.to_owned(),
    };
    let url = reqwest::Url::parse(&format!("http://{url_host}:{port}/"))
        .map_err(|error| Refused(format!("bad destination {host}: {error}")))?;
    rules
        .policy
        .check_url(&url)
        .map_err(|refusal| Refused(refusal.to_string()))?;
    let addresses = match literal {
        Some(ip) => vec![ip],
        None => {
            let found = tokio::time::timeout(STEP_TIMEOUT, rules.lookup.lookup(host))
                .await
                .map_err(|_| Unreachable(format!("resolving {host} took too long")))?
                .map_err(|error| Unreachable(format!("cannot resolve {host}: {error}")))?;
            rules
                .policy
                .check_resolved(host, &found)
                .map_err(|refusal| Refused(refusal.to_string()))?;
            found
        }
    };
    if addresses.is_empty() {
        return Err(Unreachable(format!("{host} has no addresses")));
    }
    Ok(addresses
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect())
}

/// Reads the request head; the bytes after it stay in `buffer` past the returned length.
async fn read_head(client: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<usize, String> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            return Ok(end + 4);
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err("the request head is too large".to_owned());
        }
        let read = tokio::time::timeout(STEP_TIMEOUT, client.read(&mut chunk))
            .await
            .map_err(|_| "the request head took too long".to_owned())?
            .map_err(|error| error.to_string())?;
        if read == 0 {
            return Err("the connection closed before the request".to_owned());
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

async fn connect(addresses: &[SocketAddr]) -> Result<TcpStream, String> {
    let mut last = String::from("no address");
    for address in addresses {
        match tokio::time::timeout(STEP_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => last = format!("{address}: {error}"),
            Err(_) => last = format!("{address}: timed out"),
        }
    }
    Err(format!("cannot connect: {last}"))
}

async fn refuse(client: &mut TcpStream, status: &str, reason: &str) {
    let body = format!("Souz egress proxy: {reason}\n");
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(answer.as_bytes()).await;
    let _ = client.shutdown().await;
}

/// Serves one client connection; `left` is what the byte limit still allows.
async fn serve(mut client: TcpStream, rules: &EgressRules, left: Arc<AtomicU64>) {
    let mut buffer = Vec::new();
    let end = match read_head(&mut client, &mut buffer).await {
        Ok(end) => end,
        Err(reason) => return refuse(&mut client, "400 Bad Request", &reason).await,
    };
    let request = match parse_head(&buffer[..end]) {
        Ok(request) => request,
        Err(reason) => return refuse(&mut client, "400 Bad Request", &reason).await,
    };
    let (host, port) = match &request {
        Request::Tunnel { host, port } | Request::Forward { host, port, .. } => (host, *port),
    };
    let addresses = match destination(rules, host, port).await {
        Ok(addresses) => addresses,
        Err(why) => return refuse(&mut client, why.status(), &why.to_string()).await,
    };
    let mut upstream = match connect(&addresses).await {
        Ok(stream) => Metered {
            inner: stream,
            left,
        },
        Err(reason) => return refuse(&mut client, "502 Bad Gateway", &reason).await,
    };
    let sent = match &request {
        Request::Tunnel { .. } => {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
        }
        Request::Forward { head, .. } => upstream.write_all(head).await,
    };
    if sent.is_err() || upstream.write_all(&buffer[end..]).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// An upstream connection whose reads count against the proxy's byte limit; past it, reading
/// fails and the connection is closed.
struct Metered {
    inner: TcpStream,
    left: Arc<AtomicU64>,
}

impl AsyncRead for Metered {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = (buf.filled().len() - before) as u64;
        if read > 0 {
            let taken = self
                .left
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                    left.checked_sub(read)
                });
            if taken.is_err() {
                self.left.store(0, Ordering::Release);
                return Poll::Ready(Err(std::io::Error::other(
                    "the egress proxy's byte limit was reached",
                )));
            }
        }
        polled
    }
}

impl AsyncWrite for Metered {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "egress/tests.rs"]
mod tests;
