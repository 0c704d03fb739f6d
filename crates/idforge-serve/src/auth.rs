//! Bearer tokens.

use axum::http::{header, HeaderMap, StatusCode};

use crate::errors::{fail, ApiError};

/// Checks the bearer token: 401 without one, 403 with a wrong one.
pub(crate) fn authorize(tokens: &[String], headers: &HeaderMap) -> Result<(), ApiError> {
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
    // Every token is compared, each in time that depends only on the length of the given one.
    let mut any = false;
    for t in tokens {
        any |= constant_time_eq(given, t.as_bytes());
    }
    if any {
        Ok(())
    } else {
        Err(fail(
            StatusCode::FORBIDDEN,
            "the bearer token is not one of this service's tokens",
        ))
    }
}

/// Whether `given` equals `secret`, in time that depends only on `given`'s length.
pub(crate) fn constant_time_eq(given: &[u8], secret: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let mut diff = u64::from(given.len() != secret.len());
    for (i, b) in given.iter().enumerate() {
        diff |= u64::from(b ^ secret[i % secret.len()]);
    }
    std::hint::black_box(diff) == 0
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
}
