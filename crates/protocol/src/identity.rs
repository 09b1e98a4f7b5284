//! The daemon's proof of identity: before a client sends a credential to whatever listens on
//! the configured port, it asks `GET /v1/identity?nonce=N&key=K` and checks the answer.
//!
//! The proof is `HMAC-SHA256(key = SHA-256(token), "souz-identity-v1\n" || N || "\n" || host)`,
//! where `host` is the `Host` the client sent (the listener's address; the perimeter refuses a
//! `Host` that does not name this daemon, so an answer relayed from the daemon on another port
//! does not verify). The daemon needs only the token's SHA-256, which it keeps for client
//! tokens anyway; the client knows its token and so the digest. `K` names the credential
//! without revealing it: the first 32 hex characters of SHA-256(SHA-256(token)).
//!
//! Invariants: nonces are fresh 256-bit randomness from the client; proofs are compared in
//! constant time; nothing here ever sees a token in a form the listener could reuse.
//!
//! Part of the wire contract: the daemon (`souz-core`) proves with it and every client
//! (`souz-client`) checks with it, so both sides compute the same bytes.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// Domain separation for the proof.
const CONTEXT: &[u8] = b"souz-identity-v1";
/// Hex characters of a key id.
const KEY_ID_CHARS: usize = 32;
/// Shortest and longest accepted nonce, in hex characters.
const NONCE_CHARS: std::ops::RangeInclusive<usize> = 32..=128;

/// SHA-256 of a token's text: what the daemon stores and what keys the proof.
pub fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The public name of the credential whose digest is `digest`.
pub fn key_id(digest: &[u8; 32]) -> String {
    let mut id = hex::encode(Sha256::digest(digest));
    id.truncate(KEY_ID_CHARS);
    id
}

/// Whether `nonce` is acceptable: 32 to 128 hex characters.
pub fn valid_nonce(nonce: &str) -> bool {
    NONCE_CHARS.contains(&nonce.len()) && nonce.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// A fresh nonce (256 bits, hex).
pub fn new_nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

fn mac(digest: &[u8; 32], nonce: &str, host: &str) -> Hmac<Sha256> {
    // HMAC pads a short key with zeros to the block size, so the block-sized key made of the
    // digest and zeros is the same key, and needs no fallible constructor.
    let mut key = hmac::digest::Key::<Hmac<Sha256>>::default();
    key[..digest.len()].copy_from_slice(digest);
    let mut mac = <Hmac<Sha256> as KeyInit>::new(&key);
    mac.update(CONTEXT);
    mac.update(b"\n");
    mac.update(nonce.as_bytes());
    mac.update(b"\n");
    mac.update(host.trim().to_ascii_lowercase().as_bytes());
    mac
}

/// The proof, as hex, for the credential with `digest`.
pub fn prove(digest: &[u8; 32], nonce: &str, host: &str) -> String {
    hex::encode(mac(digest, nonce, host).finalize().into_bytes())
}

/// Whether `proof` (hex) proves the credential with `digest` for `nonce` and `host`, in
/// constant time.
pub fn verify(digest: &[u8; 32], nonce: &str, host: &str, proof: &str) -> bool {
    let Ok(bytes) = hex::decode(proof.trim()) else {
        return false;
    };
    mac(digest, nonce, host).verify_slice(&bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_verifies_only_for_its_token_nonce_and_host() {
        let token = digest("a-token-of-the-daemon-0123456789abcdef");
        let other = digest("another-token-0123456789abcdef0123");
        let nonce = new_nonce().unwrap();
        let proof = prove(&token, &nonce, "127.0.0.1:8383");
        assert!(verify(&token, &nonce, "127.0.0.1:8383", &proof));
        assert!(verify(&token, &nonce, " 127.0.0.1:8383", &proof));
        assert!(!verify(&other, &nonce, "127.0.0.1:8383", &proof));
        assert!(!verify(
            &token,
            &new_nonce().unwrap(),
            "127.0.0.1:8383",
            &proof
        ));
        assert!(!verify(&token, &nonce, "127.0.0.1:8384", &proof));
        assert!(!verify(&token, &nonce, "127.0.0.1:8383", "zz"));
        assert!(!verify(&token, &nonce, "127.0.0.1:8383", ""));
    }

    #[test]
    fn key_ids_name_without_revealing() {
        let token = digest("a-token-of-the-daemon-0123456789abcdef");
        let id = key_id(&token);
        assert_eq!(id.len(), 32);
        assert!(!id.contains(&hex::encode(token)[..8]));
        assert_ne!(id, key_id(&digest("another-token-0123456789abcdef0123")));
    }

    #[test]
    fn nonces_are_hex_of_bounded_length() {
        assert!(valid_nonce(&new_nonce().unwrap()));
        assert!(!valid_nonce("abc"));
        assert!(!valid_nonce(&"g".repeat(64)));
        assert!(!valid_nonce(&"a".repeat(129)));
    }
}
