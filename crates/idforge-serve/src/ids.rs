//! `GET /v1/ids/{scheme}`: batches of ids, small ones made whole on the async worker, large ones
//! streamed from the blocking pool with bounded memory, stopped when their request is gone.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use idforge::schemes::ksuid::Ksuid;
use idforge::schemes::open::TextFormat;
use idforge::text::Format;

use crate::app::{App, Served};
use crate::errors::{fail, query_words, refusal, ApiError};
use crate::middleware::Issued;
use crate::negotiate::{negotiate, params, Body3, Params};

#[utoipa::path(
    get,
    path = "/v1/ids/{scheme}",
    operation_id = "issueIds",
    summary = "New ids of a scheme",
    params(crate::openapi::IdsPath, crate::openapi::IdsQuery),
    responses(
        (status = 200, description = "The ids, in increasing order for time-ordered schemes. \
            A batch of more than 64 ids is streamed (octet bodies with `Content-Length`, the \
            others chunked); if the generator refuses after the first ids, or the timeout \
            passes, the body is cut short: the connection closes without the final chunk or \
            short of `Content-Length`, which clients report as an incomplete body.",
            content(
                (crate::openapi::Ids = "application/json"),
                (inline(crate::openapi::IdLines) = "text/plain"),
                (inline(crate::openapi::IdOctets) = "application/octet-stream"),
            )),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 406, description = "The Accept header allows none of the bodies.",
            body = crate::openapi::ErrorBody),
        (status = 414, response = crate::openapi::UriTooLong),
        (status = 431, response = crate::openapi::HeadersTooLarge),
        (status = 503, description = "The generator refused (clock behind, lost state file), \
            the request timed out before its first ids, the scheme cannot issue the count \
            within the timeout (the message says the most it can), or too many large batches \
            are in flight (then with `Retry-After`).",
            body = crate::openapi::ErrorBody,
            headers(("Retry-After" = u32,
                description = "Seconds to wait, when too many large batches are in flight."))),
    )
)]
pub(crate) async fn ids(
    State(app): State<Arc<App>>,
    scheme: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
    req: Request,
) -> Response {
    // The usual request, a small batch of a scheme with a fine tick, is answered without an
    // await; the rest (large batches, coarse ticks) in a boxed future. Held inline, their
    // state made this handler's future, which axum allocates for every request, 1.4 KB: past
    // glibc's small bins, so that each request's allocation also consolidated the allocator's
    // fast bins.
    let plan = match plan(&app, scheme, query, req.headers()) {
        Ok(plan) => plan,
        Err(e) => return e.into_response(),
    };
    let answer = if plan.count > INLINE_COUNT || app.schemes[plan.i].coarse_tick {
        Box::pin(later(app, plan)).await
    } else {
        inline(&app, plan)
    };
    answer.unwrap_or_else(IntoResponse::into_response)
}

/// What a request for ids asks for, checked.
struct Plan {
    /// The scheme's index in [`App::schemes`].
    i: usize,
    count: u64,
    body: Body3,
    format: TextFormat,
}

/// The request's scheme, count, body and text format, or the answer that refuses it.
fn plan(
    app: &App,
    scheme: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
    headers: &HeaderMap,
) -> Result<Plan, ApiError> {
    let Path(scheme) = scheme.map_err(|e| fail(StatusCode::BAD_REQUEST, e.body_text()))?;
    let p = params(query, &["count", "format", "prefix"])?;
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
    let format = app.schemes[i]
        .gen
        .text_format_prefixed(
            p.get("format").map(String::as_str),
            p.get("prefix").map(String::as_str),
        )
        .map_err(|e| fail(StatusCode::BAD_REQUEST, query_words(&e.to_string())))?;
    Ok(Plan {
        i,
        count,
        body,
        format,
    })
}

/// A small batch, made whole here: the scheme waits at most a millisecond for its next tick.
fn inline(app: &App, plan: Plan) -> Result<Response, ApiError> {
    let Plan {
        i,
        count,
        body,
        format,
    } = plan;
    let s = &app.schemes[i];
    let out = small(s, count, body, format).map_err(|e| refused_message(s, &e))?;
    s.issued.inc_by(count);
    Ok(response(body, Body::from(out), None, i, count))
}

/// A large batch, streamed; or a small one of a scheme with a coarse tick, made whole on the
/// blocking pool (a Sonyflake batch may sleep 10 ms, and hundreds of them on the async
/// workers held /healthz up for seconds).
async fn later(app: Arc<App>, plan: Plan) -> Result<Response, ApiError> {
    let Plan {
        i,
        count,
        body,
        format,
    } = plan;
    if count > INLINE_COUNT {
        return stream(&app, i, count, body, format).await;
    }
    // The request may be gone before its batch is made (it timed out: under load, batches
    // queue for the scheme's ticks; or its client left). Its ids are then not taken: a dropped
    // handle does not stop a blocking task, so the task looks at `gone` before each id, and
    // one not started yet is aborted. Ids are counted as they are made.
    let gone = Arc::new(AtomicBool::new(false));
    let seen = gone.clone();
    let worker = app.clone();
    let task = tokio::task::spawn_blocking(move || {
        let s = &worker.schemes[i];
        let mut out = Vec::with_capacity(count as usize * per_id(s, body, format) + 10);
        let mut w = Writer::new(body);
        w.open(&mut out);
        for _ in 0..count {
            if seen.load(Ordering::Acquire) {
                return None;
            }
            if let Err(e) = w.ids(s, 1, format, &mut out) {
                return Some(Err(e));
            }
            s.issued.inc();
        }
        w.close(&mut out);
        Some(Ok(out))
    });
    let _abandon = Abandon {
        gone,
        task: task.abort_handle(),
    };
    let out = match task.await {
        Ok(Some(out)) => out,
        // The flag is set only once this future is dropped, so no answer is awaited.
        Ok(None) | Err(_) => {
            return Err(fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: id generation panicked (a bug: please report it)",
            ))
        }
    };
    let s = &app.schemes[i];
    let out = out.map_err(|e| refused_message(s, &e))?;
    Ok(response(body, Body::from(out), None, i, count))
}

/// Stops a small batch on the blocking pool when its request is gone: dropped with the
/// request's future (a timeout, a client that left), it tells the batch to take no more ids,
/// and aborts it if it has not started.
struct Abandon {
    gone: Arc<AtomicBool>,
    task: tokio::task::AbortHandle,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        self.gone.store(true, Ordering::Release);
        self.task.abort();
    }
}

/// A small batch's whole body.
fn small(
    s: &Served,
    count: u64,
    body: Body3,
    format: TextFormat,
) -> Result<Vec<u8>, idforge::Error> {
    let mut out = Vec::with_capacity(count as usize * per_id(s, body, format) + 10);
    let mut w = Writer::new(body);
    w.open(&mut out);
    w.ids(s, count, format, &mut out)?;
    w.close(&mut out);
    Ok(out)
}

/// The answer to a generator's refusal; a state file lost marks the scheme broken (unready).
fn refused_message(s: &Served, e: &idforge::Error) -> ApiError {
    s.refused(e);
    fail(
        refusal(e),
        format!("{} refused to issue: {e}", s.gen.name()),
    )
}

/// A 200 with `body` as the ids of `kind`.
fn response(kind: Body3, body: Body, length: Option<u64>, scheme: usize, count: u64) -> Response {
    let content_type = match kind {
        Body3::Json => "application/json",
        Body3::Text => "text/plain; charset=utf-8",
        Body3::Octets => "application/octet-stream",
    };
    let mut res = Response::new(body);
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(n) = length {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    // For the request log.
    res.extensions_mut().insert(Issued { scheme, count });
    res
}

/// Batches up to this many ids are made on the async worker, whole: at most one tick's wait.
pub(crate) const INLINE_COUNT: u64 = 64;

/// Ids are taken this many at a time, and a batch whose request is gone (timed out, or its
/// client left) stops between two of them: one Sonyflake tick's worth, 10 ms (several batches
/// share one scheme's ticks, so a chunk of 4,096 took over a second with 8 batches).
pub(crate) const CHUNK: u64 = 256;

/// A streamed batch is sent in frames of about this many bytes (whole chunks of ids, at least
/// one): 64 KB, 4,096 ids of 16 bytes or 1,536 UUIDs as JSON text.
pub(crate) const FRAME_BYTES: usize = 64 * 1024;

/// Frames made and not yet taken by the connection, per streamed batch: with the one being
/// made and the one being written, a batch holds at most about 256 KB besides hyper's own
/// write buffer, whatever its count.
const QUEUED_FRAMES: usize = 2;

/// A large batch, streamed: made on the blocking pool (the sequencer may sleep until the next
/// tick when one runs out) a frame at a time, at most [`QUEUED_FRAMES`] ahead of the
/// connection, so its memory does not grow with its count. The status is decided by the first
/// frame (a refusal there is an error answer as for a small batch); a refusal later, or the
/// request's deadline passing, cuts the body short (no final chunk; short of `Content-Length`
/// for octets), which every HTTP client reports as an incomplete body.
async fn stream(
    app: &Arc<App>,
    i: usize,
    count: u64,
    body: Body3,
    format: TextFormat,
) -> Result<Response, ApiError> {
    let s = &app.schemes[i];
    let timeout = app.config.timeout;
    // A batch the scheme cannot issue within the timeout even alone is refused before it
    // takes an id, not cut off after the timeout.
    if let Some(rate) = s.ids_per_second {
        let least = count as f64 / rate;
        if least > timeout.as_secs_f64() {
            let most = ((rate * timeout.as_secs_f64()) as u64).max(1);
            return Err(fail(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{count} {} ids take at least {} ms (it issues at most {rate:.0} a second): longer than {} ms (--timeout-ms); ask for at most {most}",
                    s.gen.name(),
                    (least * 1000.0).ceil() as u64,
                    timeout.as_millis()
                ),
            ));
        }
    }
    // The permit goes with the batch: it is held until the batch is done or stopped.
    let Ok(permit) = app.batches.clone().try_acquire_owned() else {
        let mut r = fail(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "too many large batches in flight (at most {} at once, --max-batches): retry in a second",
                app.config.max_batches
            ),
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return Ok(r);
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, idforge::Error>>(QUEUED_FRAMES);
    let worker = app.clone();
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = finished.clone();
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        // A frame waits for room at most until the deadline: a client that reads nothing does
        // not hold the batch (its thread, its frames, its place) past the timeout.
        let send = |item| {
            matches!(
                handle.block_on(tokio::time::timeout_at(deadline, tx.send(item))),
                Ok(Ok(()))
            )
        };
        let s = &worker.schemes[i];
        let mut w = Writer::new(body);
        let mut left = count;
        let per = per_id(s, body, format);
        let frame = ((FRAME_BYTES / per) as u64 / CHUNK).max(1) * CHUNK;
        while left > 0 {
            // The first frame is one chunk, so that the answer's head goes out soon.
            let k = left.min(if left == count { CHUNK } else { frame });
            let mut out = Vec::with_capacity(k as usize * per + 10);
            if left == count {
                w.open(&mut out);
            }
            let mut made = 0;
            while made < k {
                // The request is gone (timed out, its client left, or the server is closing
                // it): the rest of its ids are not taken.
                if tx.is_closed() {
                    return;
                }
                let c = (k - made).min(CHUNK);
                if let Err(e) = w.ids(s, c, format, &mut out) {
                    s.refused(&e);
                    let _ = send(Err(e));
                    return;
                }
                s.issued.inc_by(c);
                made += c;
            }
            left -= k;
            if left == 0 {
                w.close(&mut out);
            }
            if !send(Ok(out)) {
                return;
            }
            if left == 0 {
                done.store(true, std::sync::atomic::Ordering::Release);
            }
        }
    });
    // This future is dropped on the timeout (by the middleware) or when the client leaves, and
    // with it the receiver: the batch stops within a chunk.
    let first = match rx.recv().await {
        Some(Ok(frame)) => frame,
        Some(Err(e)) => return Err(refused_message(s, &e)),
        None => {
            return Err(fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: id generation stopped (a bug: please report it)",
            ))
        }
    };
    let timeout_ms = timeout.as_millis();
    let mut first = Some(first);
    let mut expired = Box::pin(tokio::time::sleep_until(deadline));
    let frames = futures_util::stream::poll_fn(move |cx| {
        if let Some(f) = first.take() {
            return Poll::Ready(Some(Ok(f)));
        }
        if expired.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the batch took longer than {timeout_ms} ms (--timeout-ms): cut short"),
            ))));
        }
        match rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(f))) => Poll::Ready(Some(Ok(f))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(std::io::Error::other(e)))),
            // The batch ended: whole, or stopped short (its deadline passed while the
            // connection took nothing), which must not look like a whole body.
            Poll::Ready(None) if finished.load(std::sync::atomic::Ordering::Acquire) => {
                Poll::Ready(None)
            }
            Poll::Ready(None) => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the batch took longer than {timeout_ms} ms (--timeout-ms): cut short"),
            )))),
            Poll::Pending => Poll::Pending,
        }
    });
    let length = (body == Body3::Octets).then(|| count * per_id(s, body, format) as u64);
    Ok(response(body, Body::from_stream(frames), length, i, count))
}

/// Bytes per id in a body (an upper bound for text).
fn per_id(s: &Served, body: Body3, format: TextFormat) -> usize {
    let bits = s.gen.bits();
    let width = match format {
        TextFormat::Plain(Format::Uuid) => 36,
        TextFormat::Plain(Format::Hex) => idforge::text::hex_width(bits),
        TextFormat::Plain(Format::Base32) => idforge::text::base32_width(bits),
        TextFormat::Plain(Format::Dec) if bits <= 64 => 20,
        TextFormat::TypeId(p) => p.as_str().len() + 27,
        TextFormat::Ksuid => 27,
        _ => 40,
    };
    match body {
        Body3::Octets if format == TextFormat::Ksuid => 20,
        Body3::Json => width + 3,
        Body3::Text => width + 1,
        Body3::Octets if bits > 64 => 16,
        Body3::Octets => 8,
    }
}

/// Writes ids into a body of one representation, a chunk at a time: JSON's brackets and
/// commas, text's lines, packed big-endian bytes. Id text is digits, letters, `-`, `:` and
/// `.`: nothing to escape in JSON.
struct Writer {
    body: Body3,
    first: bool,
}

impl Writer {
    fn new(body: Body3) -> Writer {
        Writer { body, first: true }
    }

    fn open(&self, out: &mut Vec<u8>) {
        if self.body == Body3::Json {
            out.extend_from_slice(b"{\"ids\":[");
        }
    }

    fn close(&self, out: &mut Vec<u8>) {
        if self.body == Body3::Json {
            out.extend_from_slice(b"]}");
        }
    }

    /// `count` new ids of `s`, appended to `out`.
    fn ids(
        &mut self,
        s: &Served,
        count: u64,
        format: TextFormat,
        out: &mut Vec<u8>,
    ) -> Result<(), idforge::Error> {
        let bits = s.gen.bits();
        let put = |out: &mut Vec<u8>, id: u128| match format {
            TextFormat::Plain(f) => {
                out.extend_from_slice(idforge::text::encode(id, bits, f).as_bytes())
            }
            TextFormat::TypeId(p) => out.extend_from_slice(p.encode(id).as_bytes()),
            TextFormat::Ksuid => out.extend_from_slice(Ksuid::from_id(id).encode().as_bytes()),
            TextFormat::Time => out.extend_from_slice(s.gen.render(id, format).as_bytes()),
        };
        let first = &mut self.first;
        s.gen.take(count, |id| match self.body {
            Body3::Json => {
                if !*first {
                    out.push(b',');
                }
                *first = false;
                out.push(b'"');
                put(out, id);
                out.push(b'"');
            }
            Body3::Text => {
                put(out, id);
                out.push(b'\n');
            }
            // A KSUID's 20 bytes.
            Body3::Octets if format == TextFormat::Ksuid => {
                out.extend_from_slice(Ksuid::from_id(id).as_bytes())
            }
            Body3::Octets if bits > 64 => out.extend_from_slice(&id.to_be_bytes()),
            Body3::Octets => out.extend_from_slice(&(id as u64).to_be_bytes()),
        })
    }
}
