//! Bearer tokens, compared in constant time: the given token and every configured one are
//! reduced to SHA-256 digests (the configured ones once, at start) and the 32-byte digests are
//! compared with `subtle`'s `ConstantTimeEq`. The time then depends on the given token's length
//! (hashing it) and on the number of configured tokens, never on which token matched, how far a
//! wrong one agrees with a right one, or how long the configured tokens are.

use axum::http::{header, HeaderMap, StatusCode};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::errors::{fail, ApiError};

/// The configured tokens, kept as digests.
pub(crate) struct Tokens(Vec<[u8; 32]>);

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl Tokens {
    /// The digests of `tokens`; an empty token is left out (it would match nothing anyway:
    /// the configuration refuses one).
    pub(crate) fn new(tokens: &[String]) -> Tokens {
        Tokens(
            tokens
                .iter()
                .filter(|t| !t.is_empty())
                .map(|t| digest(t.as_bytes()))
                .collect(),
        )
    }

    /// Whether no token is configured (then no route needs one).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `given` is one of the tokens: every digest is compared, whichever matches.
    pub(crate) fn matches(&self, given: &[u8]) -> bool {
        let given = digest(given);
        let mut any = Choice::from(0);
        for t in &self.0 {
            any |= given.ct_eq(t);
        }
        any.into()
    }
}

/// Checks the bearer token: 401 without one, 403 with a wrong one.
pub(crate) fn authorize(tokens: &Tokens, headers: &HeaderMap) -> Result<(), ApiError> {
    let unauthorized = |msg: &str| fail(StatusCode::UNAUTHORIZED, msg);
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(unauthorized(
            "this service needs a bearer token: send `Authorization: Bearer TOKEN`",
        ));
    };
    let value = value.as_bytes();
    let given = match value.get(..7) {
        Some(p) if p.eq_ignore_ascii_case(b"bearer ") => value[7..].trim_ascii(),
        _ => {
            return Err(unauthorized(
                "the Authorization header is not `Bearer TOKEN`",
            ))
        }
    };
    if tokens.matches(given) {
        Ok(())
    } else {
        Err(fail(
            StatusCode::FORBIDDEN,
            "the bearer token is not one of this service's tokens",
        ))
    }
}

/// Whether `given` equals `secret`, as [`Tokens::matches`] compares them.
#[cfg(test)]
pub(crate) fn constant_time_eq(given: &[u8], secret: &[u8]) -> bool {
    Tokens::new(&[String::from_utf8(secret.to_vec()).unwrap()]).matches(given)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secre", b"secret"));
        assert!(!constant_time_eq(b"secretsecret", b"secret"));
        assert!(!constant_time_eq(b"secreT", b"secret"));
        assert!(!constant_time_eq(b"", b"secret"));
        assert!(!constant_time_eq(b"", b""));
    }

    #[test]
    fn any_of_several_tokens_matches() {
        let t = Tokens::new(&["first".into(), "second-token".into()]);
        assert!(t.matches(b"first") && t.matches(b"second-token"));
        assert!(!t.matches(b"third") && !t.matches(b"firs") && !t.matches(b"first "));
        assert!(Tokens::new(&[]).is_empty());
    }
}
