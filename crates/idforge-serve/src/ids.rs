//! `GET /v1/ids/{scheme}`: batches of ids, small ones on the async worker, large ones on the
//! blocking pool, stopped when their request is gone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::app::{App, Served, IN_FLIGHT_BATCHES};
use crate::errors::{fail, query_words, refusal, ApiError};
use crate::middleware::Issued;
use crate::negotiate::{negotiate, params, Body3, Params};

pub(crate) async fn ids(
    State(app): State<Arc<App>>,
    scheme: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
    req: Request,
) -> Response {
    ids_inner(app, scheme, query, req.headers())
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

pub(crate) async fn ids_inner(
    app: Arc<App>,
    scheme: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let Path(scheme) = scheme.map_err(|e| fail(StatusCode::BAD_REQUEST, e.body_text()))?;
    let p = params(query, &["count", "format"])?;
    let i = app.find(&scheme)?;
    let max = app.config.max_count;
    let count = match p.get("count") {
        None => 1,
        Some(c) => match c.trim().parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "count {c:?} is not a number from 1 to {max} (the service's --max-count)"
                    ),
                ))
            }
        },
    };
    let body = negotiate(headers)?;
    let s = &app.schemes[i];
    let format = s
        .gen
        .text_format(p.get("format").map(String::as_str))
        .map_err(|e| fail(StatusCode::BAD_REQUEST, query_words(&e.to_string())))?;
    // Small batches are made here; a large one (the sequencer may sleep until the next tick
    // when one runs out) on the blocking pool, off the async workers.
    let made = if count <= INLINE_COUNT {
        issue(s, count, body, format, &AtomicBool::new(false))
    } else {
        // count <= max_count <= MAX_COUNT_CEILING: it fits a u32. The permit goes with the
        // batch, so it is held until the batch is made, even past the request's timeout.
        let Ok(permit) = app.in_flight.clone().try_acquire_many_owned(count as u32) else {
            let mut r = fail(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "too many ids in flight (at most {} in large batches at once): retry in a second",
                    IN_FLIGHT_BATCHES * max
                ),
            )
            .into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return Ok(r);
        };
        let worker = app.clone();
        // A request that timed out (503) or whose client left drops this future, and with it
        // the guard: the batch stops within a chunk instead of taking every id it was asked
        // for (40 timed-out Sonyflake batches tied the scheme up for about 156 s).
        let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
        let cancelled = cancel.0.clone();
        tokio::task::spawn_blocking(move || {
            let made = issue(&worker.schemes[i], count, body, format, &cancelled);
            drop(permit);
            made
        })
        .await
        .map_err(|_| {
            fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: id generation panicked (a bug: please report it)",
            )
        })?
    };
    let bytes = match made {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(fail(
                StatusCode::SERVICE_UNAVAILABLE,
                "the batch was stopped: its request is gone",
            ))
        }
        Err(e) => {
            if matches!(e, idforge::Error::StateFile(_)) {
                *s.broken.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            }
            return Err(fail(
                refusal(&e),
                format!("{} refused to issue: {e}", s.gen.name()),
            ));
        }
    };
    s.issued.inc_by(count);
    let content_type = match body {
        Body3::Json => "application/json",
        Body3::Text => "text/plain; charset=utf-8",
        Body3::Octets => "application/octet-stream",
    };
    let mut res = Response::new(Body::from(bytes));
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // For the request log.
    res.extensions_mut().insert(Issued { scheme: i, count });
    Ok(res)
}

/// Batches up to this many ids are made on the async worker: at most one tick's wait.
pub(crate) const INLINE_COUNT: u64 = 64;

/// Ids are taken this many at a time, and a batch whose request is gone (timed out, or its
/// client left) stops between two of them: one Sonyflake tick's worth, 10 ms (several batches
/// share one scheme's ticks, so a chunk of 4,096 took over a second with 8 batches).
pub(crate) const CHUNK: u64 = 256;

/// `count` ids of `s`, written straight into the body (no id is kept apart from its text);
/// `None` when `cancelled` was set before the batch was complete (its request is gone, and the
/// rest of its ids are not taken).
pub(crate) fn issue(
    s: &Served,
    count: u64,
    body: Body3,
    format: idforge::schemes::open::TextFormat,
    cancelled: &AtomicBool,
) -> Result<Option<Vec<u8>>, idforge::Error> {
    use idforge::schemes::open::TextFormat;
    let bits = s.gen.bits();
    let n = count as usize;
    // Id text is digits, letters, `-`, `:` and `.`: nothing to escape in JSON.
    let put = |out: &mut Vec<u8>, id: u128| match format {
        TextFormat::Plain(f) => {
            out.extend_from_slice(idforge::text::encode(id, bits, f).as_bytes())
        }
        TextFormat::Time => out.extend_from_slice(s.gen.render(id, format).as_bytes()),
    };
    let width = match format {
        TextFormat::Plain(idforge::text::Format::Uuid) => 36,
        TextFormat::Plain(idforge::text::Format::Hex) => idforge::text::hex_width(bits),
        TextFormat::Plain(idforge::text::Format::Base32) => idforge::text::base32_width(bits),
        TextFormat::Plain(idforge::text::Format::Dec) if bits <= 64 => 20,
        _ => 40,
    };
    let per_id = match body {
        Body3::Json => width + 3,
        Body3::Text => width + 1,
        Body3::Octets if bits > 64 => 16,
        Body3::Octets => 8,
    };
    let mut out = Vec::with_capacity(n * per_id + 10);
    if body == Body3::Json {
        out.extend_from_slice(b"{\"ids\":[");
    }
    let mut first = true;
    let mut left = count;
    while left > 0 {
        if cancelled.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let k = left.min(CHUNK);
        s.gen.take(k, |id| match body {
            Body3::Json => {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.push(b'"');
                put(&mut out, id);
                out.push(b'"');
            }
            Body3::Text => {
                put(&mut out, id);
                out.push(b'\n');
            }
            Body3::Octets if bits > 64 => out.extend_from_slice(&id.to_be_bytes()),
            Body3::Octets => out.extend_from_slice(&(id as u64).to_be_bytes()),
        })?;
        left -= k;
    }
    if body == Body3::Json {
        out.extend_from_slice(b"]}");
    }
    Ok(Some(out))
}

/// Sets its flag when dropped: a handler holds one while its batch is made elsewhere, and the
/// handler's future is dropped when the request times out or its client leaves.
pub(crate) struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
