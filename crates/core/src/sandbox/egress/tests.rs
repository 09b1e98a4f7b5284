use std::net::Ipv4Addr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::sandbox::net::StaticLookup;

#[test]
fn heads_parse_as_tunnels_or_forwards() {
    assert_eq!(
        parse_head(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap(),
        Request::Tunnel {
            host: "api.example.com".into(),
            port: 443
        }
    );
    let Request::Forward { host, port, head } =
        parse_head(b"GET http://api.example.com/a/b?c=1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
            .unwrap()
    else {
        panic!("not a forward");
    };
    assert_eq!((host.as_str(), port), ("api.example.com", 80));
    assert_eq!(
        String::from_utf8(head).unwrap(),
        "GET /a/b?c=1 HTTP/1.1\r\nHost: api.example.com\r\n\r\n"
    );
    for bad in [
        &b"GET /relative HTTP/1.1\r\n\r\n"[..],
        b"GET https://x.example/ HTTP/1.1\r\n\r\n",
        b"CONNECT x.example HTTP/1.1\r\n\r\n",
        b"CONNECT x.example:0 HTTP/1.1\r\n\r\n",
        b"GET http://x.example/ SPDY/3\r\n\r\n",
        b"\xff\xfe\r\n\r\n",
    ] {
        assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn hosts_match_by_name_and_port() {
    let hosts = vec!["API.example.com".to_owned(), "h.example:8443".to_owned()];
    assert!(listed(&hosts, "api.example.com.", 443));
    assert!(listed(&hosts, "api.example.com", 80));
    assert!(!listed(&hosts, "api.example.com", 22));
    assert!(!listed(&hosts, "evil.api.example.com", 443));
    assert!(listed(&hosts, "h.example", 8443));
    assert!(!listed(&hosts, "h.example", 443));
    assert!(!listed(&hosts, "other.example", 443));
}

/// A server answering every connection `reached`; its port.
async fn server() -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    crate::tasks::spawn_in_test(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            crate::tasks::spawn_in_test(async move {
                let mut buffer = [0u8; 1024];
                let _ = stream.read(&mut buffer).await;
                let _ = stream
                    .write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached")
                    .await;
            });
        }
    });
    port
}

/// Sends `request` through the proxy on `port`; everything it answers.
async fn through(port: u16, request: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn only_listed_hosts_that_pass_the_network_policy_are_reached() {
    let target = server().await;
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let lookup = StaticLookup::default()
        .with("listed.test", &[loopback])
        .with("unlisted.test", &[loopback]);
    // The test allows loopback explicitly (`network_allow_hosts`), as an operator would.
    let rules = |hosts: Vec<String>, allow: &[&str]| EgressRules {
        hosts,
        policy: Arc::new(
            NetworkPolicy::new(&allow.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).unwrap(),
        ),
        lookup: Arc::new(lookup.clone()),
        limit: None,
    };
    let proxy = EgressProxy::start(rules(
        vec![format!("listed.test:{target}")],
        &["listed.test", "unlisted.test"],
    ))
    .await
    .unwrap();
    let port = proxy.port();
    let forwarded = through(
        port,
        &format!("GET http://listed.test:{target}/x HTTP/1.1\r\nHost: listed.test\r\n\r\n"),
    )
    .await;
    assert!(forwarded.ends_with("reached"), "{forwarded}");
    let tunnel = through(
        port,
        &format!("CONNECT listed.test:{target} HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n"),
    )
    .await;
    assert!(tunnel.starts_with("HTTP/1.1 200"), "{tunnel}");
    assert!(tunnel.ends_with("reached"), "{tunnel}");
    // Not listed (even on the same address), or another port of a listed host: refused.
    for request in [
        format!("CONNECT unlisted.test:{target} HTTP/1.1\r\n\r\n"),
        format!("CONNECT 127.0.0.1:{target} HTTP/1.1\r\n\r\n"),
        "CONNECT listed.test:443 HTTP/1.1\r\n\r\n".to_owned(),
        format!("GET http://unlisted.test:{target}/ HTTP/1.1\r\n\r\n"),
    ] {
        let answer = through(port, &request).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
        assert!(!answer.contains("reached"), "{answer}");
    }
    assert!(
        through(port, "nonsense\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 400")
    );
    drop(proxy);

    // Listed, but private and not allowed by the network policy: refused.
    let strict = EgressProxy::start(rules(vec![format!("listed.test:{target}")], &[]))
        .await
        .unwrap();
    let answer = through(
        strict.port(),
        &format!("CONNECT listed.test:{target} HTTP/1.1\r\n\r\n"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("127.0.0.1"), "{answer}");
}

/// A listed host that does not resolve is not refused (`403`, the manifest or the policy
/// said no) but unreachable (`502`), and `check` says which.
#[tokio::test]
async fn a_listed_host_that_does_not_resolve_is_unreachable_not_refused() {
    let rules = EgressRules {
        hosts: vec!["nowhere.test:443".to_owned()],
        policy: Arc::new(NetworkPolicy::new(&[]).unwrap()),
        lookup: Arc::new(StaticLookup::default()),
        limit: None,
    };
    let proxy = EgressProxy::start(rules).await.unwrap();
    let answer = through(proxy.port(), "CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(answer.contains("cannot resolve nowhere.test"), "{answer}");
    assert!(matches!(
        proxy.check("nowhere.test", 443).await,
        Err(DestinationError::Unreachable(_))
    ));
    assert!(matches!(
        proxy.check("elsewhere.test", 443).await,
        Err(DestinationError::Refused(_))
    ));
}

#[tokio::test]
async fn a_byte_limit_closes_the_connection_that_crosses_it() {
    let target = server().await;
    let lookup = StaticLookup::default().with("listed.test", &[IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    let start = |limit| {
        EgressProxy::start(EgressRules {
            hosts: vec![format!("listed.test:{target}")],
            policy: Arc::new(NetworkPolicy::new(&["listed.test".to_owned()]).unwrap()),
            lookup: Arc::new(lookup.clone()),
            limit: Some(limit),
        })
    };
    let request = format!("CONNECT listed.test:{target} HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n");
    // Room for one answer (45 bytes): the first gets through whole, the second is cut off.
    let proxy = start(60).await.unwrap();
    let first = through(proxy.port(), &request).await;
    assert!(first.ends_with("reached"), "{first}");
    let second = through(proxy.port(), &request).await;
    assert!(!second.contains("reached"), "{second}");
    // Too small for even one answer.
    let tight = start(10).await.unwrap();
    let cut = through(tight.port(), &request).await;
    assert!(!cut.contains("reached"), "{cut}");
}
