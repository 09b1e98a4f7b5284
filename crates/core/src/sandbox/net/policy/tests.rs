use super::*;

#[test]
fn non_public_addresses_are_recognized_in_every_form() {
    let refused = [
        "0.0.0.0",
        "0.1.2.3",
        "10.0.0.1",
        "100.64.0.1",
        "100.127.255.254",
        "127.0.0.1",
        "127.255.255.254",
        "169.254.169.254",
        "169.254.1.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.0.0.8",
        "192.0.2.1",
        "192.88.99.1",
        "192.168.1.1",
        "198.18.0.1",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:10.1.2.3",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "::8.8.8.8",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::1",
        "100::1",
        "2001:db8::1",
        "2001::1",
        "2002:7f00:1::1",
        "2002:c0a8:101::1",
        "fc00::1",
        "fd00:ec2::254",
        "fd12:3456::1",
        "fe80::1",
        "febf::1",
        "fec0::1",
        "ff02::1",
        "4000::1",
    ];
    for address in refused {
        let ip: IpAddr = address.parse().unwrap();
        assert!(non_public_reason(ip).is_some(), "{address} must be refused");
    }
    let public = [
        "1.1.1.1",
        "8.8.8.8",
        "93.184.216.34",
        "100.63.255.255",
        "100.128.0.1",
        "172.15.255.255",
        "172.32.0.1",
        "192.169.0.1",
        "223.255.255.255",
        "2606:4700:4700::1111",
        "2a00:1450:4001::200e",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ];
    for address in public {
        let ip: IpAddr = address.parse().unwrap();
        assert_eq!(non_public_reason(ip), None, "{address} is public");
    }
    assert_eq!(
        non_public_reason("169.254.169.254".parse().unwrap()).as_deref(),
        Some("the cloud metadata address")
    );
    assert_eq!(
        non_public_reason("fd00:ec2::254".parse().unwrap()).as_deref(),
        Some("the cloud metadata address")
    );
    assert!(
        non_public_reason("::ffff:127.0.0.1".parse().unwrap())
            .unwrap()
            .contains("IPv4-mapped form of a loopback address")
    );
}

#[test]
fn ip_literal_urls_are_checked_in_every_spelling() {
    let policy = NetworkPolicy::default();
    for url in [
        "http://127.0.0.1/",
        "http://127.1/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0177.0.0.1/",
        "http://[::1]:8080/",
        "http://[::ffff:7f00:1]/",
        "https://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://0.0.0.0:22/",
        "http://10.0.0.1/",
    ] {
        let parsed = Url::parse(url).unwrap();
        assert!(
            matches!(policy.check_url(&parsed), Err(Refusal::Address { .. })),
            "{url}"
        );
    }
    assert_eq!(
        policy.check_url(&Url::parse("https://example.com/").unwrap()),
        Ok(())
    );
    assert_eq!(
        policy.check_url(&Url::parse("http://8.8.8.8/").unwrap()),
        Ok(())
    );
    for url in [
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://127.0.0.1/",
    ] {
        assert!(
            matches!(
                policy.check_url(&Url::parse(url).unwrap()),
                Err(Refusal::Scheme(_))
            ),
            "{url}"
        );
    }
}

#[test]
fn allow_entries_match_host_and_port() {
    let policy = NetworkPolicy::new(&[
        "127.0.0.1:8080".to_owned(),
        "::1".to_owned(),
        "Intranet.Example.".to_owned(),
        "wiki.internal:8443".to_owned(),
        "[fd00::1]:80".to_owned(),
    ])
    .unwrap();
    let check = |url: &str| policy.check_url(&Url::parse(url).unwrap());
    assert_eq!(check("http://127.0.0.1:8080/x"), Ok(()));
    assert!(matches!(
        check("http://127.0.0.1:8081/x"),
        Err(Refusal::Address { .. })
    ));
    assert!(matches!(
        check("http://127.0.0.1/x"),
        Err(Refusal::Address { .. })
    ));
    assert_eq!(check("http://[::1]:9999/"), Ok(()));
    assert_eq!(check("http://intranet.example/"), Ok(()));
    assert_eq!(check("https://INTRANET.example.:444/"), Ok(()));
    assert_eq!(check("https://wiki.internal:8443/"), Ok(()));
    assert_eq!(
        check("https://wiki.internal/"),
        Err(Refusal::Port {
            host: "wiki.internal".to_owned(),
            port: 443
        })
    );
    assert_eq!(check("http://[fd00::1]/"), Ok(()));
    assert!(matches!(
        check("http://[fd00::1]:81/"),
        Err(Refusal::Address { .. })
    ));
    assert!(policy.domain_allowed("intranet.example"));
    assert!(policy.domain_allowed("WIKI.internal."));
    assert!(!policy.domain_allowed("other.example"));
    for bad in ["", "http://x/", "a b", "x:99999", "user@host", "host/path"] {
        assert!(AllowedHost::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn resolved_addresses_must_all_be_public_unless_the_name_is_allowed() {
    let policy = NetworkPolicy::new(&["intranet.example".to_owned()]).unwrap();
    let public: IpAddr = "93.184.216.34".parse().unwrap();
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    assert_eq!(policy.check_resolved("example.com", &[public]), Ok(()));
    let refusal = policy
        .check_resolved("rebind.example", &[public, loopback])
        .unwrap_err();
    assert_eq!(
        refusal.to_string(),
        "rebind.example resolves to 127.0.0.1, a loopback address; Souz does not connect to \
         such addresses unless the host is listed in [sandbox] network_allow_hosts"
    );
    assert_eq!(
        policy.check_resolved("intranet.example", &[loopback]),
        Ok(())
    );
}
