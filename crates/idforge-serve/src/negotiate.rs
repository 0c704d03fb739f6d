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

/// The best representation the `Accept` header allows (JSON without one).
pub(crate) fn negotiate(headers: &HeaderMap) -> Result<Body3, ApiError> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(Body3::Json);
    };
    let mut ranges: Vec<(f32, usize, Body3)> = Vec::new();
    for (i, range) in accept.split(',').enumerate() {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let body = match media.as_str() {
            "application/json" | "application/*" | "*/*" => Body3::Json,
            "text/plain" | "text/*" => Body3::Text,
            "application/octet-stream" => Body3::Octets,
            _ => continue,
        };
        if q > 0.0 {
            ranges.push((q, i, body));
        }
    }
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges.first().map(|r| r.2).ok_or_else(|| {
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
    }
}
