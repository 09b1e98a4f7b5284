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
    assert_eq!(file.sha256, digest);
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
    assert_eq!(deep.sha256, digest);
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
        .plain("README.md", b"# model".to_vec());
    hub.commit("org/model-GGUF", REVISION)
        .lfs("odd.gguf", b"o".to_vec(), "not-a-digest");
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

    for path in ["README.md", "odd.gguf"] {
        let error = resolve(&client, hub.url(), &pin(path), &cancel)
            .await
            .unwrap_err();
        assert!(
            matches!(error, HubError::NoDigest { .. }),
            "{path}: {error:?}"
        );
    }
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
