//! What a request asks for: its query parameters and the representation it accepts.

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::{header, HeaderMap, StatusCode};

use crate::errors::{fail, ApiError};

pub(crate) type Params =
    Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>;

/// The query parameters, refusing any not in `known`, and any given twice (`count=5&count=6`:
/// a proxy that checked the first would be bypassed by the last).
pub(crate) fn params(q: Params, known: &[&str]) -> Result<HashMap<String, String>, ApiError> {
    let Query(pairs) = q.map_err(|e| fail(StatusCode::BAD_REQUEST, e.body_text()))?;
    let mut map = HashMap::with_capacity(pairs.len());
    for (k, v) in pairs {
        if !known.contains(&k.as_str()) {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                format!(
                    "unknown parameter {k:?}: this route takes {}",
                    known.join(", ")
                ),
            ));
        }
        if map.contains_key(&k) {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                format!("parameter {k:?} is given twice: give it once"),
            ));
        }
        map.insert(k, v);
    }
    Ok(map)
}

/// The representation a request accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body3 {
    Json,
    Text,
    Octets,
}

/// The best representation the `Accept` header allows (JSON without one). Several `Accept`
/// lines are one list, as HTTP says of a header given more than once; a value that is not text
/// (bytes outside visible ASCII) is refused rather than taken for no header.
pub(crate) fn negotiate(headers: &HeaderMap) -> Result<Body3, ApiError> {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return Ok(Body3::Json);
    }
    let mut best: Option<(f32, Body3)> = None;
    for value in values {
        let Ok(accept) = value.to_str() else {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                "the Accept header is not text (bytes outside visible ASCII): send media types such as application/json",
            ));
        };
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let is = |m: &str| media.eq_ignore_ascii_case(m);
            let body = if is("application/json") || is("application/*") || is("*/*") {
                Body3::Json
            } else if is("text/plain") || is("text/*") {
                Body3::Text
            } else if is("application/octet-stream") {
                Body3::Octets
            } else {
                continue;
            };
            // The highest q wins; between equal ones, the first given.
            if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
                best = Some((q, body));
            }
        }
    }
    best.map(|b| b.1).ok_or_else(|| {
        // Every value is text here (checked above); joined only for the message.
        let accept = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", ");
        fail(
            StatusCode::NOT_ACCEPTABLE,
            format!("cannot answer in {accept:?}: accept application/json, text/plain or application/octet-stream"),
        )
    })
}
#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn accept_picks_the_best_representation() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            negotiate(&m)
        };
        assert_eq!(negotiate(&HeaderMap::new()).unwrap(), Body3::Json);
        assert_eq!(h("text/plain").unwrap(), Body3::Text);
        assert_eq!(h("application/octet-stream").unwrap(), Body3::Octets);
        assert_eq!(
            h("application/json;q=0.5, text/plain").unwrap(),
            Body3::Text
        );
        assert_eq!(h("image/png, */*;q=0.1").unwrap(), Body3::Json);
        assert!(h("image/png").is_err());
        assert!(h("text/plain;q=0").is_err());
        assert_eq!(h("TEXT/Plain").unwrap(), Body3::Text);
    }

    #[test]
    fn accept_lines_given_twice_are_one_list_and_a_value_not_text_is_refused() {
        let mut m = HeaderMap::new();
        m.append(header::ACCEPT, HeaderValue::from_static("image/png"));
        m.append(header::ACCEPT, HeaderValue::from_static("text/plain"));
        assert_eq!(negotiate(&m).unwrap(), Body3::Text);
        let mut m = HeaderMap::new();
        m.append(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=0.2"),
        );
        m.append(
            header::ACCEPT,
            HeaderValue::from_static("application/octet-stream;q=0.9"),
        );
        assert_eq!(negotiate(&m).unwrap(), Body3::Octets);
        let mut m = HeaderMap::new();
        m.insert(
            header::ACCEPT,
            HeaderValue::from_bytes(b"text/pl\xc3\xa4in").unwrap(),
        );
        let e = axum::response::IntoResponse::into_response(negotiate(&m).unwrap_err());
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
    }
}
