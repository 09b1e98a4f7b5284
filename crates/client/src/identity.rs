//! The client side of the daemon's proof of identity: before a credential goes to whatever
//! listens at an address, `GET /v1/identity?nonce=N&key=K` must be answered with the HMAC of
//! [`souz_protocol::identity`], which only the holder of the token's digest can compute.
//!
//! Invariant: the request carries no credential (only the key id, which names the token
//! without revealing it), and a listener that fails the check gets nothing else.

use std::time::Duration;

use souz_protocol::IdentityProof;
use souz_protocol::identity as proof;

use crate::ClientError;

/// How long the identity check may take.
const IDENTITY_TIMEOUT: Duration = Duration::from_secs(5);

/// `host:port` of `base` (`http://host:port`), as the `Host` header names it.
pub(crate) fn host_of(base: &str) -> &str {
    base.trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/')
}

/// An HTTP client for the daemon (never through a proxy).
pub fn http_client() -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|error| ClientError::Invalid(format!("cannot build an HTTP client: {error}")))
}

/// Checks that the listener at `base` is the Souz daemon that knows `token`, without sending
/// the token: [`ClientError::Unreachable`] when nothing answers, [`ClientError::NotSouz`]
/// when the answer is not the right proof.
pub async fn verify_listener(
    http: &reqwest::Client,
    base: &str,
    token: &str,
) -> Result<(), ClientError> {
    let host = host_of(base).to_owned();
    let not_souz = |detail: String| ClientError::NotSouz {
        host: host.clone(),
        detail,
    };
    let digest = proof::digest(token);
    let nonce = proof::new_nonce().map_err(|error| not_souz(format!("no randomness: {error}")))?;
    let url = format!(
        "{base}/v1/identity?nonce={nonce}&key={}",
        proof::key_id(&digest)
    );
    let response = http
        .get(url)
        .timeout(IDENTITY_TIMEOUT)
        .send()
        .await
        .map_err(|error| ClientError::Unreachable {
            base: base.to_owned(),
            reason: error.to_string(),
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(not_souz(format!(
            "it answered the identity check with {status}; a revoked token gets 404"
        )));
    }
    let answer: IdentityProof = response
        .json()
        .await
        .map_err(|_| not_souz("it answered the identity check with no proof".to_owned()))?;
    if !proof::verify(&digest, &nonce, &host, &answer.proof) {
        return Err(not_souz("its proof of identity is wrong".to_owned()));
    }
    Ok(())
}
