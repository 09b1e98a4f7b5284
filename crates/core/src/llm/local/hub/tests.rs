//! Resolving pins against a fake hub that speaks the Hub's API (`souz_testkit::hub`).

use sha2::{Digest, Sha256};
use souz_testkit::hub::FakeHub;

use super::*;

const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn client(hub: &FakeHub) -> WebClient {
    WebClient::new(&hub.allow_entries()).expect("client")
}

fn pin(path: &'static str) -> HubPin {
    HubPin {
        repo: "org/model-GGUF",
        revision: REVISION,
        path,
    }
}

#[tokio::test]
async fn a_pinned_file_resolves_to_the_hubs_digest_size_and_url_in_a_folder_and_across_pages() {
    let hub = FakeHub::start().await;
    let weights = b"GGUF weights".to_vec();
    let digest = sha(&weights);
    for name in ["a.gguf", "b.gguf", "c.gguf"] {
        hub.commit("org/model-GGUF", REVISION)
            .lfs(name, b"x".to_vec(), &sha(b"x"));
    }
    hub.commit("org/model-GGUF", REVISION)
        .lfs("z.gguf", weights.clone(), &digest);
    hub.commit("org/model-GGUF", REVISION)
        .lfs("q4/deep.gguf", weights.clone(), &digest);
    hub.page_size(2);
    let cancel = CancellationToken::new();

    let file = resolve(&client(&hub), hub.url(), &pin("z.gguf"), &cancel)
        .await
        .expect("resolved");
    assert_eq!(file.digest, HubDigest::Sha256(digest.clone()));
    assert_eq!(file.bytes, weights.len() as u64);
    assert_eq!(
        file.url,
        format!("{}/org/model-GGUF/resolve/{REVISION}/z.gguf", hub.url())
    );
    // Five root entries (four files and a folder), two a page: the file is on the third.
    let listings = hub.listings();
    assert_eq!(listings.len(), 3, "{listings:?}");
    assert!(listings[2].ends_with("?cursor=4"), "{listings:?}");

    // A file in a folder is looked up in that folder's listing; a trailing slash on the hub
    // URL changes nothing.
    let hub_url = format!("{}/", hub.url());
    let deep = resolve(&client(&hub), &hub_url, &pin("q4/deep.gguf"), &cancel)
        .await
        .expect("resolved");
    assert_eq!(deep.digest, HubDigest::Sha256(digest));
    assert!(
        hub.listings()
            .last()
            .is_some_and(|last| last.ends_with(&format!("/tree/{REVISION}/q4"))),
        "{:?}",
        hub.listings()
    );
}

#[tokio::test]
async fn unknown_commits_missing_files_and_files_without_a_digest_are_refused_with_their_reason() {
    let hub = FakeHub::start().await;
    hub.commit("org/model-GGUF", REVISION)
        .lfs("m.gguf", b"m".to_vec(), &sha(b"m"));
    hub.commit("org/model-GGUF", REVISION)
        .lfs("odd.gguf", b"o".to_vec(), "not-a-digest");
    // A plain (non-LFS) entry one byte over the limit: refused, whatever its blob id.
    let large = usize::try_from(MAX_GIT_BLOB_BYTES).unwrap() + 1;
    hub.commit("org/model-GGUF", REVISION)
        .plain("huge.json", vec![b' '; large]);
    let client = client(&hub);
    let cancel = CancellationToken::new();

    let other = HubPin {
        revision: "fedcba9876543210fedcba9876543210fedcba98",
        ..pin("m.gguf")
    };
    let error = resolve(&client, hub.url(), &other, &cancel)
        .await
        .unwrap_err();
    assert!(matches!(error, HubError::NotFound { .. }), "{error:?}");
    assert!(error.to_string().contains("fedcba98"), "{error}");

    let error = resolve(&client, hub.url(), &pin("gone.gguf"), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(error, HubError::FileMissing { .. }), "{error:?}");

    let error = resolve(&client, hub.url(), &pin("odd.gguf"), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(error, HubError::NoDigest { .. }), "{error:?}");

    let error = resolve(&client, hub.url(), &pin("huge.json"), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, HubError::TooLargeForGit { bytes, .. } if *bytes == large as u64),
        "{error:?}"
    );
    assert!(error.to_string().contains("huge.json"), "{error}");
}

/// A listing entry as the hub sends it, resolved on its own (no server).
fn entry_of(json: serde_json::Value) -> Result<HubFile, HubError> {
    let entry: Entry = serde_json::from_value(json).unwrap();
    file_of(entry, &pin("config.json"), "http://hub.example")
}

#[test]
fn a_plain_entry_needs_its_blob_id_and_size_and_stays_under_the_limit() {
    let id = "4f2a9914b2ac740e8f71ae3e5eb059fbb757422d";
    let file = entry_of(serde_json::json!({
        "type": "file", "oid": id.to_uppercase(), "size": 22, "path": "config.json"
    }))
    .unwrap();
    assert_eq!(file.digest, HubDigest::GitBlob(id.to_owned()));
    assert_eq!(file.bytes, 22);
    for refused in [
        serde_json::json!({"type": "file", "size": 22, "path": "config.json"}),
        serde_json::json!({"type": "file", "oid": id, "path": "config.json"}),
        serde_json::json!({"type": "file", "oid": "abc", "size": 22, "path": "config.json"}),
        serde_json::json!({"type": "file", "oid": "g".repeat(40), "size": 22, "path": "config.json"}),
    ] {
        let error = entry_of(refused.clone()).unwrap_err();
        assert!(
            matches!(error, HubError::NoDigest { .. }),
            "{refused}: {error:?}"
        );
    }
    let at_limit = entry_of(serde_json::json!({
        "type": "file", "oid": id, "size": MAX_GIT_BLOB_BYTES, "path": "config.json"
    }));
    assert!(at_limit.is_ok(), "{at_limit:?}");
    let over = entry_of(serde_json::json!({
        "type": "file", "oid": id, "size": MAX_GIT_BLOB_BYTES + 1, "path": "config.json"
    }));
    assert!(
        matches!(over, Err(HubError::TooLargeForGit { .. })),
        "{over:?}"
    );
}

#[test]
fn a_git_blob_id_is_what_git_hash_object_prints() {
    // `printf 'Souz pins its models.\n' > v.txt && git hash-object v.txt`, and so on.
    assert_eq!(
        git_blob_id(b"Souz pins its models.\n"),
        "4f2a9914b2ac740e8f71ae3e5eb059fbb757422d"
    );
    assert_eq!(git_blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    assert_eq!(
        git_blob_id("{\"a\": \"привет\"}\n".as_bytes()),
        "810362c706e45c4256f10aa0c10265029f762d69"
    );
    // The size is part of the id: the same content hashed without git's header differs.
    use sha1::Digest as _;
    let bare = hex::encode(sha1::Sha1::digest(b"Souz pins its models.\n"));
    assert_ne!(bare, git_blob_id(b"Souz pins its models.\n"));
}

#[tokio::test]
async fn a_small_plain_file_resolves_to_its_git_blob_id() {
    let hub = FakeHub::start().await;
    let config = br#"{"d_model": 384}"#.to_vec();
    hub.commit("org/model-GGUF", REVISION)
        .plain("config.json", config.clone());
    let file = resolve(
        &client(&hub),
        hub.url(),
        &pin("config.json"),
        &CancellationToken::new(),
    )
    .await
    .expect("resolved");
    assert_eq!(file.digest, HubDigest::GitBlob(git_blob_id(&config)));
    assert_eq!(file.bytes, config.len() as u64);
}

#[test]
fn a_catalogs_own_pins_must_agree_with_the_hub() {
    let lfs = HubFile {
        digest: HubDigest::Sha256("a".repeat(64)),
        bytes: 10,
        url: String::new(),
    };
    assert!(agree(&lfs, "m", Some(&"a".repeat(64)), Some(10)).is_ok());
    assert!(agree(&lfs, "m", None, None).is_ok());
    let error = agree(&lfs, "m", Some(&"b".repeat(64)), Some(10)).unwrap_err();
    assert!(matches!(error, HubError::PinMismatch { .. }), "{error:?}");
    assert!(error.to_string().contains(&"b".repeat(64)), "{error}");
    let error = agree(&lfs, "m", None, Some(11)).unwrap_err();
    assert!(error.to_string().contains("11 bytes"), "{error}");
    // A blob's SHA-256 cannot be compared with its listing; the downloader checks it.
    let blob = HubFile {
        digest: HubDigest::GitBlob("c".repeat(40)),
        bytes: 10,
        url: String::new(),
    };
    assert!(agree(&blob, "m", Some(&"a".repeat(64)), Some(10)).is_ok());
    assert!(agree(&blob, "m", None, Some(9)).is_err());
}

#[tokio::test]
async fn a_pin_that_is_not_a_commit_or_a_plain_path_is_refused_before_any_request() {
    let hub = FakeHub::start().await;
    hub.commit("org/model-GGUF", "main")
        .lfs("m.gguf", b"m".to_vec(), &sha(b"m"));
    let client = client(&hub);
    let cancel = CancellationToken::new();
    let bad = [
        HubPin {
            revision: "main",
            ..pin("m.gguf")
        },
        HubPin {
            revision: "0123456789ABCDEF0123456789ABCDEF01234567",
            ..pin("m.gguf")
        },
        pin("../m.gguf"),
        pin("q4//m.gguf"),
        pin("m.gguf?x=1"),
        HubPin {
            repo: "model-GGUF",
            ..pin("m.gguf")
        },
        HubPin {
            repo: "org/../x",
            ..pin("m.gguf")
        },
    ];
    for pin in bad {
        let error = resolve(&client, hub.url(), &pin, &cancel)
            .await
            .unwrap_err();
        assert!(matches!(error, HubError::BadPin(_)), "{pin:?}: {error:?}");
    }
    for hub_url in ["file:///etc", "ftp://hub.example", "not a url"] {
        let error = resolve(&client, hub_url, &pin("m.gguf"), &cancel)
            .await
            .unwrap_err();
        assert!(matches!(error, HubError::BadHub(_)), "{hub_url}: {error:?}");
    }
    assert!(hub.listings().is_empty(), "{:?}", hub.listings());
}

#[test]
fn the_next_page_is_read_from_a_link_header() {
    assert_eq!(
        next_link("</api/x?cursor=2>; rel=\"next\""),
        Some("/api/x?cursor=2")
    );
    assert_eq!(
        next_link("<https://a/prev>; rel=\"prev\", <https://a/next>; rel=\"next\""),
        Some("https://a/next")
    );
    assert_eq!(next_link("<https://a/prev>; rel=\"prev\""), None);
    assert_eq!(next_link("garbage"), None);
}

#[tokio::test]
async fn a_listing_longer_than_souz_reads_is_refused_not_followed_for_ever() {
    let hub = FakeHub::start().await;
    for index in 0..MAX_PAGES + 5 {
        let name = format!("f{index:03}.gguf");
        hub.commit("org/model-GGUF", REVISION)
            .lfs(&name, b"x".to_vec(), &sha(b"x"));
    }
    hub.page_size(1);
    let error = resolve(
        &client(&hub),
        hub.url(),
        &pin("f024.gguf"),
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, HubError::Paging(_)), "{error:?}");
    assert_eq!(hub.listings().len(), MAX_PAGES);
}
