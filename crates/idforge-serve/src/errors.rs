//! Error answers: every error the service sends is `{"error": "..."}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// A JSON error response: `{"error": "..."}`.
pub(crate) fn error(status: StatusCode, msg: &str) -> Response {
    let body = serde_json::json!({ "error": msg }).to_string();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// An error answer: a status and a message, sent as `{"error": message}` (401 adds
/// `WWW-Authenticate: Bearer`).
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    msg: String,
}

pub(crate) fn fail(status: StatusCode, msg: impl Into<String>) -> ApiError {
    ApiError {
        status,
        msg: msg.into(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = error(self.status, &self.msg);
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"idforge\""),
            );
        }
        r
    }
}

/// A 200 response with a JSON body.
pub(crate) fn json_ok(v: &serde_json::Value) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        v.to_string(),
    )
        .into_response()
}

/// Error responses that are not JSON yet (the router's own: 405, bad path text) made JSON.
pub(crate) async fn json_errors(res: Response) -> Response {
    if !needs_json(&res) {
        return res;
    }
    let status = res.status();
    let (parts, body) = res.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let msg = if text.trim().is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text.trim().to_string()
    };
    let mut out = error(status, &msg);
    for (k, v) in &parts.headers {
        if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
            out.headers_mut().insert(k, v.clone());
        }
    }
    out
}

/// Whether `res` is an error answer whose body is not JSON, for [`json_errors`] to rewrite.
pub(crate) fn needs_json(res: &Response) -> bool {
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    (status.is_client_error() || status.is_server_error()) && !is_json
}

/// The HTTP status of a generator's refusal.
pub(crate) fn refusal(e: &idforge::Error) -> StatusCode {
    use idforge::Error as E;
    match e {
        E::StateFile(_)
        | E::LeaseLost { .. }
        | E::ClockBehind { .. }
        | E::TimeOutOfRange { .. }
        | E::BeforeEpoch { .. } => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A library message in the service's words: ``format `hex` `` as `format=hex`, and the
/// route that describes the schemes named after their list.
pub(crate) fn query_words(msg: &str) -> String {
    let mut s = if msg.starts_with("unknown scheme") {
        format!("{msg} (see /v1/schemes for their layouts)")
    } else {
        msg.to_string()
    };
    for word in ["format", "scheme"] {
        let pat = format!("{word} `");
        while let Some(i) = s.find(&pat) {
            let after = i + pat.len();
            match s[after..].find('`') {
                Some(j) if !s[after..after + j].contains(' ') => {
                    let v = s[after..after + j].to_string();
                    s.replace_range(i..after + j + 1, &format!("{word}={v}"));
                }
                _ => break,
            }
        }
    }
    s
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_words_become_query_words() {
        assert_eq!(
            query_words("name the scheme (scheme `uuid7` or scheme `uprotocol`)"),
            "name the scheme (scheme=uuid7 or scheme=uprotocol)"
        );
    }
}
