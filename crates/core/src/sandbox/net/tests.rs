//! SSRF refusals against a real server on 127.0.0.1: IP literals, DNS answers, redirects, plus
//! the limits (redirect count, body size, time, cancellation).

use super::test_server::TestServer;
use super::*;

fn client(allow: &[String]) -> WebClient {
    WebClient::new(allow).unwrap()
}

fn client_with_lookup(allow: &[String], lookup: StaticLookup) -> WebClient {
    WebClient::with_options(allow, WebOptions::default(), Arc::new(lookup)).unwrap()
}

async fn fetch(client: &WebClient, url: &str) -> Result<Fetched, WebError> {
    client.fetch(url, &CancellationToken::new()).await
}

fn loopback() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

#[tokio::test]
async fn loopback_is_refused_by_default_and_nothing_is_sent() {
    let server = TestServer::start("127.0.0.1").await;
    let client = client(&[]);
    for url in [
        server.url("/text"),
        format!("http://127.1:{}/text", server.address.port()),
        format!("http://2130706433:{}/text", server.address.port()),
        format!("http://[::ffff:127.0.0.1]:{}/text", server.address.port()),
    ] {
        let error = fetch(&client, &url).await.unwrap_err();
        let WebError::Refused { refusal, .. } = &error else {
            panic!("{url}: {error:?}");
        };
        assert!(matches!(refusal, Refusal::Address { .. }), "{url}: {error}");
        assert!(error.to_string().contains("loopback"), "{error}");
        assert!(error.to_string().contains("network_allow_hosts"), "{error}");
    }
    assert_eq!(server.hits(), 0, "no request reached the server");
}

#[tokio::test]
async fn an_allowed_host_is_fetched() {
    let server = TestServer::start("127.0.0.1").await;
    for entry in [server.allow_entry(), "127.0.0.1".to_owned()] {
        let fetched = fetch(&client(std::slice::from_ref(&entry)), &server.url("/text"))
            .await
            .unwrap_or_else(|error| panic!("{entry}: {error}"));
        assert_eq!(fetched.status, 200);
        assert_eq!(&fetched.body[..], b"hello from the test server");
        assert!(fetched.content_type.unwrap().starts_with("text/plain"));
    }
    // The same host on another port is not allowed.
    let other_port = format!("127.0.0.1:{}", server.address.port().wrapping_add(1).max(1));
    let error = fetch(&client(&[other_port]), &server.url("/text"))
        .await
        .unwrap_err();
    assert!(matches!(error, WebError::Refused { .. }), "{error}");
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused() {
    let server = TestServer::start("127.0.0.1").await;
    // The system resolver: `localhost` is loopback everywhere.
    let url = format!("http://localhost:{}/text", server.address.port());
    let error = fetch(&client(&[]), &url).await.unwrap_err();
    let WebError::Refused { refusal, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(
        matches!(refusal, Refusal::Address { target, .. } if target == "localhost"),
        "{error}"
    );
    assert!(
        error.to_string().contains("localhost resolves to"),
        "{error}"
    );

    // A public-looking name whose DNS answer is loopback (as in DNS rebinding), alone or mixed
    // with a public address.
    let lookup = StaticLookup::default()
        .with("rebind.test", &[loopback()])
        // Loopback first: were the check broken, the connection would land on the test server
        // (and be counted), never on the public address.
        .with(
            "mixed.test",
            &[loopback(), "93.184.216.34".parse().unwrap()],
        );
    let client = client_with_lookup(&[], lookup);
    for name in ["rebind.test", "mixed.test"] {
        let url = format!("http://{name}:{}/text", server.address.port());
        let error = fetch(&client, &url).await.unwrap_err();
        assert!(matches!(error, WebError::Refused { .. }), "{name}: {error}");
    }
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn an_allowed_name_may_resolve_to_a_private_address() {
    let server = TestServer::start("127.0.0.1").await;
    let lookup = StaticLookup::default().with("intranet.test", &[loopback()]);
    let client = client_with_lookup(&["intranet.test".to_owned()], lookup);
    let url = format!("http://intranet.test:{}/text", server.address.port());
    let fetched = fetch(&client, &url).await.unwrap();
    assert_eq!(&fetched.body[..], b"hello from the test server");
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn redirects_to_non_public_addresses_are_refused() {
    let allowed = TestServer::start("127.0.0.1").await;
    // A second server on another loopback address stands for the internal target.
    let internal = TestServer::start("127.0.0.2").await;
    let client = client_with_lookup(
        &[allowed.allow_entry()],
        StaticLookup::default()
            .with("internal.test", &["127.0.0.2".parse().unwrap()])
            .with("localhost", &["127.0.0.2".parse().unwrap()]),
    );
    let targets = [
        internal.url("/text"),
        format!("http://internal.test:{}/text", internal.address.port()),
        format!("http://localhost:{}/text", internal.address.port()),
        format!("http://[::ffff:127.0.0.2]:{}/text", internal.address.port()),
        "file:///etc/passwd".to_owned(),
    ];
    for target in targets {
        let url = format!("{}?to={target}", allowed.url("/redirect"));
        let error = fetch(&client, &url).await.unwrap_err();
        assert!(
            matches!(error, WebError::Refused { .. }),
            "{target}: {error}"
        );
    }
    assert_eq!(internal.hits(), 0, "the internal server was never reached");
    // A redirect that stays on the allowed host is followed.
    let url = format!("{}?to=/text", allowed.url("/redirect"));
    let fetched = fetch(&client, &url).await.unwrap();
    assert_eq!(fetched.url.path(), "/text");
    assert_eq!(&fetched.body[..], b"hello from the test server");
}

#[tokio::test]
async fn redirects_are_limited() {
    let server = TestServer::start("127.0.0.1").await;
    let client = client(&[server.allow_entry()]);
    let error = fetch(&client, &server.url("/loop")).await.unwrap_err();
    assert!(
        matches!(error, WebError::TooManyRedirects { .. }),
        "{error}"
    );
    assert_eq!(server.hits(), MAX_REDIRECTS + 1);
}

#[tokio::test]
async fn bodies_are_capped_and_statuses_checked() {
    let server = TestServer::start("127.0.0.1").await;
    let client = WebClient::with_options(
        &[server.allow_entry()],
        WebOptions {
            max_body_bytes: 1000,
            ..WebOptions::default()
        },
        Arc::new(SystemLookup),
    )
    .unwrap();
    let fetched = fetch(&client, &server.url("/big?bytes=1000"))
        .await
        .unwrap();
    assert_eq!(fetched.body.len(), 1000);
    let error = fetch(&client, &server.url("/big?bytes=1001"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, WebError::TooLarge { limit: 1000, .. }),
        "{error}"
    );
    let error = fetch(&client, &server.url("/status?code=404"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, WebError::Status { status: 404, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn slow_servers_time_out_and_callers_can_cancel() {
    let server = TestServer::start("127.0.0.1").await;
    let client = WebClient::with_options(
        &[server.allow_entry()],
        WebOptions {
            request_timeout: Duration::from_millis(300),
            ..WebOptions::default()
        },
        Arc::new(SystemLookup),
    )
    .unwrap();
    let error = fetch(&client, &server.url("/slow")).await.unwrap_err();
    assert!(matches!(error, WebError::Timeout { .. }), "{error}");

    let client = client_with_lookup(&[server.allow_entry()], StaticLookup::default());
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        crate::tasks::spawn_in_test(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        })
    };
    let error = client
        .fetch(&server.url("/slow"), &cancel)
        .await
        .unwrap_err();
    assert_eq!(error, WebError::Cancelled);
    canceller.await.unwrap();
}

#[tokio::test]
async fn bad_urls_are_clear_errors() {
    let client = client(&[]);
    for (url, expected) in [
        ("not a url", "invalid URL"),
        ("/relative/path", "invalid URL"),
        ("ftp://example.com/file", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http://[::1]/", "loopback"),
        ("http://0.0.0.0/", "this network"),
    ] {
        let error = fetch(&client, url).await.unwrap_err();
        assert!(error.to_string().contains(expected), "{url}: {error}");
    }
    assert!(matches!(
        WebClient::new(&["a b".to_owned()]),
        Err(WebError::Setup(_))
    ));
}
