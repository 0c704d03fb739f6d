//! The log of `idforge serve`: the service emits `tracing` events, and this sets up the
//! subscriber that writes them to stderr, as text for a person or as a JSON object per line, with
//! what is logged chosen by `IDFORGE_LOG` (or `RUST_LOG` when that is unset; default `info`).

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use idforge_serve::LogFormat;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// The filter when neither variable is set.
pub const DEFAULT_FILTER: &str = "info";

/// The filter of `IDFORGE_LOG`, else of `RUST_LOG`, else [`DEFAULT_FILTER`], with variables
/// looked up by `var`.
///
/// # Errors
/// A variable whose value is not a filter, named with its value.
pub fn filter(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Targets> {
    let set = |k: &'static str| var(k).filter(|v| !v.trim().is_empty()).map(|v| (k, v));
    let (name, spec) = set("IDFORGE_LOG")
        .or_else(|| set("RUST_LOG"))
        .unwrap_or(("the default", DEFAULT_FILTER.to_string()));
    spec.trim().parse::<Targets>().map_err(|e| {
        anyhow::anyhow!(
            "{name}={spec:?} is not a log filter ({e}): set a level (error, warn, info, debug, trace) \
             or target=level directives, comma separated, e.g. info,idforge_serve::request=off"
        )
    })
}

/// The subscriber writing events that pass `filter` to `writer` in `format`.
pub fn subscriber<W>(
    format: LogFormat,
    filter: Targets,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // The filter is a layer over the whole subscriber: an event it does not enable is neither
    // formatted nor written, and `max_level_hint` lets `tracing` skip the callsite altogether.
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing::level_filters::LevelFilter::TRACE)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.event_format(Text).finish().with(filter)),
        LogFormat::Json => Box::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish()
                .with(filter),
        ),
    }
}

/// Sets up the log on stderr for the rest of the process. Lines are formatted where the event
/// happens and appended to a shared buffer; a thread of its own ([`Batched`]) writes what the
/// buffer holds a few milliseconds after its first line, in one `write`: under load many lines
/// go out together, and neither a line nor a wakeup of that thread is paid per request. A slow
/// reader of stderr does not hold up the requests until [`PENDING_BYTES`] wait (then they do:
/// no line is dropped). Keep the guard until the end: dropping it writes what is left.
///
/// # Errors
/// A filter that does not parse (see [`filter`]).
pub fn init(format: LogFormat) -> anyhow::Result<LogGuard> {
    let filter = filter(|k| std::env::var(k).ok())?;
    let (writer, guard) = Batched::start(std::io::stderr())?;
    // Set only once per process; a second call (none today) keeps the first.
    let _ = tracing::subscriber::set_global_default(subscriber(format, filter, writer.clone()));
    // The text request lines, the most frequent by far, are written here without a `tracing`
    // event each: the same text as the event's through [`Text`], each line made in a buffer of
    // its thread. The filter is asked once, now that the subscriber is set (it never changes):
    // with the request lines filtered out no writer is set, and the service's event for them
    // is filtered out as any other.
    let request_lines = tracing::enabled!(target: idforge_serve::REQUEST_LOG, tracing::Level::INFO);
    if matches!(format, LogFormat::Text) && request_lines {
        let lines = writer.clone();
        idforge_serve::set_request_writer(Box::new(move |line| {
            thread_local! {
                static LINE: RefCell<String> = const { RefCell::new(String::new()) };
            }
            LINE.with(|b| {
                let mut b = b.borrow_mut();
                b.clear();
                // Writing to a String cannot fail; nor can writing to the buffer.
                let _ = text_line(line, &mut *b);
                let _ = std::io::Write::write_all(&mut &lines, b.as_bytes());
            });
        }));
    }
    Ok(guard)
}

/// How long the log's thread waits, after a line arrives in an empty buffer, before it writes
/// the buffer out: the longest a line waits (besides the write itself), and at most one wakeup
/// of that thread per period.
pub const FLUSH_AFTER: Duration = Duration::from_millis(5);

/// Bytes of lines that may wait for the log's thread (about 100,000 request lines, seconds of
/// them at full load: a disk that stalls the log's writes for a moment does not stall the
/// requests): past them a line waits for room, so memory stays bounded when stderr is read slowly.
pub const PENDING_BYTES: usize = 16 << 20;

/// The lines waiting for the log's thread.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    /// The first line arrived in an empty buffer, or the log is closing.
    arrived: Condvar,
    /// The thread took the buffer: there is room again.
    room: Condvar,
}

/// The log's writer: each line is appended to a shared buffer (one short lock, no allocation
/// once the buffers have grown, no system call), which a thread of its own writes out.
#[derive(Clone)]
pub struct Batched(Arc<Shared>);

/// Writes the lines still waiting and stops the log's thread when dropped.
pub struct LogGuard {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Batched {
    /// The writer and the guard of a thread writing to `out`.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn start<W: std::io::Write + Send + 'static>(
        mut out: W,
    ) -> anyhow::Result<(Batched, LogGuard)> {
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("idforge-log".into())
            .spawn(move || {
                let mut spare = Vec::new();
                loop {
                    let mut p = s.pending.lock().unwrap_or_else(|e| e.into_inner());
                    while p.buf.is_empty() && !p.closed {
                        p = s.arrived.wait(p).unwrap_or_else(|e| e.into_inner());
                    }
                    if !p.closed {
                        // Let more lines come, to write them in one go.
                        drop(p);
                        std::thread::sleep(FLUSH_AFTER);
                        p = s.pending.lock().unwrap_or_else(|e| e.into_inner());
                    }
                    let closed = p.closed;
                    std::mem::swap(&mut p.buf, &mut spare);
                    drop(p);
                    s.room.notify_all();
                    // Nowhere to report a failure to write the log: the lines are lost.
                    let _ = out.write_all(&spare).and_then(|()| out.flush());
                    spare.clear();
                    if closed {
                        return;
                    }
                }
            })?;
        Ok((
            Batched(shared.clone()),
            LogGuard {
                shared,
                thread: Some(thread),
            },
        ))
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed = true;
        self.shared.arrived.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::io::Write for &Batched {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let s = &self.0;
        let mut p = s.pending.lock().unwrap_or_else(|e| e.into_inner());
        while p.buf.len() >= PENDING_BYTES && !p.closed {
            p = s.room.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        let first = p.buf.is_empty();
        p.buf.extend_from_slice(line);
        drop(p);
        if first {
            s.arrived.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Batched {
    type Writer = &'a Batched;
    fn make_writer(&'a self) -> &'a Batched {
        self
    }
}

/// The text format: the time, `idforge serve:`, the level when it is not info (`warning:`,
/// `error:`, ...), the message and the event's other fields as `key=value`:
///
/// ```text
/// 2026-11-23T10:00:00.123456Z idforge serve: listening on http://127.0.0.1:7470; schemes: uuid7; auth: none
/// 2026-11-23T10:00:01.234567Z idforge serve: request method=GET route=/v1/ids/{scheme} status=200 latency_ms=0.087 request_id=0197... scheme=uuid7 count=1
/// ```
struct Text;

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write_time(&mut w)?;
        w.write_str(" idforge serve: ")?;
        let meta = event.metadata();
        // The line per request, the most frequent by far, is written field by field here:
        // the same text as the default field format, without its styling and padding calls.
        if meta.target() == idforge_serve::REQUEST_LOG && ctx.event_scope().is_none() {
            let mut v = Fields {
                w: w.by_ref(),
                first: true,
                result: Ok(()),
            };
            event.record(&mut v);
            v.result?;
            return writeln!(w);
        }
        w.write_str(match *meta.level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::INFO => "",
            Level::DEBUG => "debug: ",
            Level::TRACE => "trace: ",
        })?;
        // Events of the libraries below (at debug and trace) say where they come from.
        if !meta.target().starts_with("idforge") {
            write!(w, "{}: ", meta.target())?;
        }
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                write!(w, "{}: ", span.name())?;
            }
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// The time as the default format writes it (`SystemTime`: RFC 3339 in UTC with microseconds,
/// `2026-11-23T10:00:00.123456Z`); the date and time of day are made once per second and thread.
fn write_time(w: &mut impl fmt::Write) -> fmt::Result {
    thread_local! {
        static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let Ok(since) = std::time::SystemTime::now().duration_since(UNIX_EPOCH) else {
        return SystemTime.format_time(&mut Writer::new(w));
    };
    let (secs, micros) = (since.as_secs(), since.subsec_micros());
    // Years 1970 to 9999: the default format's other years have other widths.
    if secs >= 253_402_300_800 {
        return SystemTime.format_time(&mut Writer::new(w));
    }
    SECOND.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs {
            c.0 = secs;
            c.1 = date_time(secs);
        }
        w.write_str(&c.1)?;
        let mut digits = [b'0'; 6];
        let mut m = micros;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (m % 10) as u8;
            m /= 10;
        }
        // ASCII digits.
        w.write_str(std::str::from_utf8(&digits).unwrap_or("000000"))?;
        w.write_char('Z')
    })
}

/// `value` in decimal.
fn write_u64(w: &mut impl fmt::Write, value: u64) -> fmt::Result {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = value;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // ASCII digits.
    w.write_str(std::str::from_utf8(&digits[i..]).unwrap_or("?"))
}

/// `micros` in milliseconds as `Debug` writes the `f64` `micros / 1000.0` (`0.004`, `12.5`,
/// `2.0`), for up to 10^12 microseconds.
fn write_millis(w: &mut impl fmt::Write, micros: u64) -> fmt::Result {
    write_u64(w, micros / 1000)?;
    let mut frac = micros % 1000;
    let mut digits = [b'.', b'0', b'0', b'0'];
    let mut end = 4;
    for d in digits[1..].iter_mut().rev() {
        *d = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    while end > 2 && digits[end - 1] == b'0' {
        end -= 1;
    }
    // ASCII.
    w.write_str(std::str::from_utf8(&digits[..end]).unwrap_or(".0"))
}

/// A request's whole text line, as [`Text`] writes the service's request event.
fn text_line(l: &idforge_serve::RequestLine<'_>, w: &mut impl fmt::Write) -> fmt::Result {
    write_time(w)?;
    w.write_str(" idforge serve: request method=")?;
    w.write_str(l.method)?;
    w.write_str(" route=")?;
    w.write_str(l.route)?;
    w.write_str(" status=")?;
    write_u64(w, u64::from(l.status))?;
    w.write_str(" latency_ms=")?;
    if l.micros < 1_000_000_000_000 {
        write_millis(w, l.micros)?;
    } else {
        write!(w, "{:?}", l.micros as f64 / 1000.0)?;
    }
    if let Some(id) = l.request_id {
        w.write_str(" request_id=")?;
        w.write_str(id)?;
    }
    if let Some(scheme) = l.scheme {
        w.write_str(" scheme=")?;
        w.write_str(scheme)?;
    }
    if let Some(count) = l.count {
        w.write_str(" count=")?;
        write_u64(w, count)?;
    }
    w.write_char('\n')
}

/// `YYYY-MM-DDTHH:MM:SS.` of a time in seconds since 1970 (the civil date from the day number,
/// as in Howard Hinnant's `civil_from_days`).
fn date_time(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.",
        rem / 3_600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Writes an event's fields as the default field format does with no styling: the message
/// first, then `name=value` (values as `Debug`, numbers as decimals), separated by spaces.
struct Fields<'w> {
    w: Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl Fields<'_> {
    fn name(&mut self, field: &Field) -> fmt::Result {
        if !std::mem::take(&mut self.first) {
            self.w.write_char(' ')?;
        }
        if field.name() != "message" {
            self.w.write_str(field.name().trim_start_matches("r#"))?;
            self.w.write_char('=')?;
        }
        Ok(())
    }
}

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_ok() {
            self.result = self.name(field).and_then(|()| write!(self.w, "{value:?}"));
        }
    }

    /// Text as it is, unquoted: the request line's text fields are the method, a route
    /// template, a request id of letters, digits and `-_.:/+=@`, and a scheme name.
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_ok() {
            self.result = self.name(field).and_then(|()| self.w.write_str(value));
        }
    }

    /// A latency in milliseconds with microseconds (`k / 1000.0`) as `Debug` writes it (`0.004`,
    /// `12.5`, `2.0`), from integers; anything else through `Debug`.
    fn record_f64(&mut self, field: &Field, value: f64) {
        if self.result.is_err() {
            return;
        }
        let k = (value * 1000.0).round();
        if !(0.0..1e12).contains(&k) || k / 1000.0 != value {
            self.record_debug(field, &value);
            return;
        }
        self.result = self
            .name(field)
            .and_then(|()| write_millis(&mut self.w, k as u64));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.result.is_ok() {
            self.result = self
                .name(field)
                .and_then(|()| write_u64(&mut self.w, value));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'w self) -> Buffer {
            self.clone()
        }
    }

    const TOKEN: &str = "s3cret-token-never-logged";

    /// The log of three requests to a service with a token, in `format`: ids with a secret in
    /// the query and a request id of the client's, a wrong token, and an unknown route.
    fn log_of_requests(format: LogFormat, filter: &str) -> String {
        let app = idforge_serve::App::open(idforge_serve::Config {
            schemes: Some(vec!["uuid7".into()]),
            in_process: true,
            tokens: vec![TOKEN.into()],
            ..idforge_serve::Config::default()
        })
        .unwrap();
        let out = Buffer::default();
        let sub = subscriber(format, filter.parse::<Targets>().unwrap(), out.clone());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tracing::subscriber::with_default(sub, || {
            rt.block_on(async {
                for (path, token, id) in [
                    (
                        "/v1/ids/uuid7?count=3&format=hex",
                        TOKEN,
                        Some("client-id-1"),
                    ),
                    ("/v1/ids/uuid7?secret=hunter2", "wrong-token", None),
                    ("/nowhere?secret=hunter2", TOKEN, Some("bad id with spaces")),
                ] {
                    let mut req = Request::get(path)
                        .header("authorization", format!("Bearer {token}"))
                        .header("host", "localhost");
                    if let Some(id) = id {
                        req = req.header("x-request-id", id);
                    }
                    let req = req.body(Body::empty()).unwrap();
                    let res = idforge_serve::router(app.clone())
                        .oneshot(req)
                        .await
                        .unwrap();
                    let _ = axum::body::to_bytes(res.into_body(), 1 << 20).await;
                }
            })
        });
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_text_line_per_request_with_route_status_and_request_id_and_no_secret() {
        let log = log_of_requests(LogFormat::Text, "info");
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 3, "{log}");
        for l in &lines {
            assert!(
                l.contains(" idforge serve: request method=GET route="),
                "{l}"
            );
            assert!(!l.contains(TOKEN) && !l.contains("wrong-token"), "{l}");
            assert!(!l.contains("hunter2") && !l.contains('?'), "{l}");
            assert!(l.contains(" latency_ms="), "{l}");
        }
        assert!(
            lines[0].contains("route=/v1/ids/{scheme} status=200 latency_ms=",)
                && lines[0].contains(" request_id=client-id-1 scheme=uuid7 count=3"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("route=/v1/ids/{scheme} status=403 "),
            "{}",
            lines[1]
        );
        assert!(!lines[1].contains("scheme=uuid7"), "{}", lines[1]);
        // A request id made here: a uuid7 in place of the client's unfit one.
        assert!(
            lines[2].contains("route=unmatched status=404 "),
            "{}",
            lines[2]
        );
        let made = lines[2].split(" request_id=").nth(1).unwrap();
        assert_eq!(made.len(), 36, "{made}");
        assert_eq!(made.as_bytes()[14], b'7', "{made}");
        // The request log can be turned off on its own.
        assert_eq!(
            log_of_requests(LogFormat::Text, "info,idforge_serve::request=off"),
            ""
        );
    }

    #[test]
    fn the_time_is_written_as_the_default_format_writes_it() {
        // Made with Python's datetime (UTC), seconds since 1970 to `%Y-%m-%dT%H:%M:%S.`.
        for (secs, text) in [
            (0, "1970-01-01T00:00:00."),
            (951_782_400, "2000-02-29T00:00:00."),
            (951_868_799, "2000-02-29T23:59:59."),
            (1_795_689_600, "2026-11-26T10:40:00."),
            (4_102_444_800, "2100-01-01T00:00:00."),
            (253_402_300_799, "9999-12-31T23:59:59."),
            (1_764_170_745, "2025-11-26T15:25:45."),
        ] {
            assert_eq!(date_time(secs), text);
        }
        // Against tracing-subscriber's own, now (again if a second began in between).
        for _ in 0..3 {
            let (mut ours, mut theirs) = (String::new(), String::new());
            SystemTime
                .format_time(&mut Writer::new(&mut theirs))
                .unwrap();
            write_time(&mut Writer::new(&mut ours)).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{ours} {theirs}");
            if ours[..20] == theirs[..20] {
                assert!(ours.ends_with('Z') && ours.as_bytes()[19] == b'.', "{ours}");
                return;
            }
        }
        panic!("the time's date and time of day differ from tracing-subscriber's");
    }

    #[test]
    fn request_lines_write_latencies_and_counts_as_debug_does() {
        let out = Buffer::default();
        let sub = subscriber(
            LogFormat::Text,
            "info".parse::<Targets>().unwrap(),
            out.clone(),
        );
        let mut want = Vec::new();
        tracing::subscriber::with_default(sub, || {
            for k in (0..3_000u64).chain([9_999, 10_000, 123_456_789, u64::MAX / 2]) {
                let ms = k as f64 / 1000.0;
                tracing::info!(target: "idforge_serve::request", route = "/r", latency_ms = ms, count = k, "request");
                want.push(format!("request route=/r latency_ms={ms:?} count={k}"));
            }
            // Not a whole number of microseconds: as Debug writes it.
            tracing::info!(target: "idforge_serve::request", latency_ms = 0.0001234, "request");
            want.push("request latency_ms=0.0001234".into());
        });
        let log = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let got: Vec<&str> = log
            .lines()
            .map(|l| l.split_once(" idforge serve: ").unwrap().1)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_request_writer_writes_the_line_the_request_event_gives() {
        use idforge_serve::RequestLine;
        let out = Buffer::default();
        let sub = subscriber(
            LogFormat::Text,
            "info".parse::<Targets>().unwrap(),
            out.clone(),
        );
        let lines = [
            RequestLine {
                method: "GET",
                route: "/v1/ids/{scheme}",
                status: 200,
                micros: 87,
                request_id: Some("01a217ae-7412-7000-9f6d-f61050ed50be"),
                scheme: Some("snowflake"),
                count: Some(1),
            },
            RequestLine {
                method: "HEAD",
                route: "unmatched",
                status: 404,
                micros: 12_000,
                request_id: Some("client-id-1"),
                scheme: None,
                count: None,
            },
            RequestLine {
                method: "GET",
                route: "/healthz",
                status: 200,
                micros: 1_234_567,
                request_id: None,
                scheme: None,
                count: Some(100_000),
            },
        ];
        let mut ours = String::new();
        tracing::subscriber::with_default(sub, || {
            for l in &lines {
                text_line(l, &mut ours).unwrap();
                // The event as the service emits it without a request writer.
                tracing::info!(
                    target: "idforge_serve::request",
                    method = l.method,
                    route = l.route,
                    status = l.status,
                    latency_ms = l.micros as f64 / 1000.0,
                    request_id = l.request_id,
                    scheme = l.scheme,
                    count = l.count,
                    "request"
                );
            }
        });
        let theirs = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let untimed = |s: &str| -> Vec<String> {
            s.lines()
                .map(|l| l.split_once(" idforge serve: ").unwrap().1.to_string())
                .collect()
        };
        assert_eq!(untimed(&ours), untimed(&theirs));
        assert_eq!(
            untimed(&ours)[0],
            "request method=GET route=/v1/ids/{scheme} status=200 latency_ms=0.087 \
             request_id=01a217ae-7412-7000-9f6d-f61050ed50be scheme=snowflake count=1"
        );
        for l in ours.lines() {
            assert_eq!(l.as_bytes()[10], b'T', "{l}");
            assert!(l[..27].ends_with('Z'), "{l}");
        }
    }

    #[test]
    fn the_batched_writer_writes_every_line_in_order_and_the_rest_when_dropped() {
        let out = Buffer::default();
        let (w, guard) = Batched::start(out.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let w = w.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        std::io::Write::write_all(&mut &w, format!("{t} {i}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let mut next = [0; 4];
        for line in text.lines() {
            let (t, i) = line.split_once(' ').unwrap();
            let t: usize = t.parse().unwrap();
            assert_eq!(i.parse::<i32>().unwrap(), next[t], "{line}");
            next[t] += 1;
        }
        assert_eq!(next, [5_000; 4]);
    }

    #[test]
    fn json_lines_parse_each_as_an_object_with_the_fields() {
        let log = log_of_requests(LogFormat::Json, "info");
        let lines: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(lines.len(), 3, "{log}");
        assert!(!log.contains(TOKEN) && !log.contains("hunter2"), "{log}");
        let first = &lines[0];
        assert_eq!(first["message"], "request");
        assert_eq!(first["level"], "INFO");
        assert_eq!(first["target"], "idforge_serve::request");
        assert_eq!(first["method"], "GET");
        assert_eq!(first["route"], "/v1/ids/{scheme}");
        assert_eq!(first["status"], 200);
        assert_eq!(first["request_id"], "client-id-1");
        assert_eq!(first["scheme"], "uuid7");
        assert_eq!(first["count"], 3);
        assert!(first["latency_ms"].as_f64().unwrap() >= 0.0, "{first}");
        assert!(
            first["timestamp"].as_str().unwrap().ends_with('Z'),
            "{first}"
        );
        assert_eq!(lines[1]["status"], 403);
        assert!(lines[1].get("scheme").is_none(), "{}", lines[1]);
        assert_eq!(lines[2]["route"], "unmatched");
    }

    #[test]
    fn the_filter_comes_from_idforge_log_then_rust_log_then_info() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let show = |f: Targets| f.to_string();
        assert_eq!(show(filter(vars(&[])).unwrap()), "info");
        assert_eq!(
            show(filter(vars(&[("RUST_LOG", "debug")])).unwrap()),
            "debug"
        );
        assert_eq!(
            show(filter(vars(&[("RUST_LOG", "debug"), ("IDFORGE_LOG", "warn")])).unwrap()),
            "warn"
        );
        let e = filter(vars(&[("IDFORGE_LOG", "info,=x=y")])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("IDFORGE_LOG=\"info,=x=y\" is not a log filter"),
            "{e}"
        );
    }
}
