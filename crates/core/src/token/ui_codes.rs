//! One-time codes that sign the web UI in without the token ever appearing in a process
//! argument or an address: `souz ui --open` asks for a code with the operator token (in a
//! header), opens `/app/#code=<code>`, and the page trades the code for the token once.
//!
//! Invariants: a code is 256 random bits, held only as its SHA-256, in memory; it works once
//! (taken out under the lock that checks it) and for [`CODE_LIFETIME`]; at most
//! [`MAX_OUTSTANDING`] codes wait at a time (the oldest is dropped).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

use super::proof;

/// How long a code works.
pub(crate) const CODE_LIFETIME: Duration = Duration::from_secs(60);
/// Codes waiting to be used, at most.
const MAX_OUTSTANDING: usize = 16;

/// An outstanding code: its SHA-256 and when it stops working.
type Outstanding = ([u8; 32], Instant);

/// The outstanding codes. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct UiCodes {
    codes: Arc<Mutex<VecDeque<Outstanding>>>,
}

impl std::fmt::Debug for UiCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UiCodes([redacted])")
    }
}

impl UiCodes {
    /// A new code, valid from `now` for [`CODE_LIFETIME`].
    pub(crate) fn issue(&self, now: Instant) -> Result<String, getrandom::Error> {
        let code = proof::new_nonce()?;
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        codes.retain(|(_, expires)| *expires > now);
        while codes.len() >= MAX_OUTSTANDING {
            codes.pop_front();
        }
        codes.push_back((proof::digest(&code), now + CODE_LIFETIME));
        Ok(code)
    }

    /// Whether `code` is outstanding and unexpired at `now`; it is used up either way.
    pub(crate) fn redeem(&self, code: &str, now: Instant) -> bool {
        let presented = proof::digest(code.trim());
        let mut codes = self.codes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = None;
        for (index, (digest, _)) in codes.iter().enumerate() {
            if bool::from(digest.ct_eq(&presented)) {
                found = Some(index);
            }
        }
        let Some((_, expires)) = found.and_then(|index| codes.remove(index)) else {
            return false;
        };
        expires > now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_and_not_after_it_expires() {
        let codes = UiCodes::default();
        let start = Instant::now();
        let code = codes.issue(start).unwrap();
        assert!(!codes.redeem("not-a-code", start));
        assert!(codes.redeem(&code, start + Duration::from_secs(5)));
        assert!(!codes.redeem(&code, start + Duration::from_secs(6)), "once");

        let late = codes.issue(start).unwrap();
        assert!(!codes.redeem(&late, start + CODE_LIFETIME));
        assert!(!codes.redeem(&late, start), "an expired try used it up");
    }

    #[test]
    fn outstanding_codes_are_bounded() {
        let codes = UiCodes::default();
        let now = Instant::now();
        let first = codes.issue(now).unwrap();
        for _ in 0..MAX_OUTSTANDING {
            codes.issue(now).unwrap();
        }
        assert!(!codes.redeem(&first, now), "the oldest was dropped");
    }
}
