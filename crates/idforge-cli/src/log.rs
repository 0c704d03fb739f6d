//! The log of `idforge serve`: the service emits `tracing` events, and this sets up the
//! subscriber that writes them to stderr, as text for a person or as a JSON object per line, with
//! what is logged chosen by `IDFORGE_LOG` (or `RUST_LOG` when that is unset; default `info`).

use std::fmt;

use idforge_serve::LogFormat;
use tracing::{Event, Level, Subscriber};
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// The filter when neither variable is set.
pub const DEFAULT_FILTER: &str = "info";

/// The filter of `IDFORGE_LOG`, else of `RUST_LOG`, else [`DEFAULT_FILTER`], with variables
/// looked up by `var`.
///
/// # Errors
/// A variable whose value is not a filter, named with its value.
pub fn filter(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<EnvFilter> {
    let set = |k: &'static str| var(k).filter(|v| !v.trim().is_empty()).map(|v| (k, v));
    let (name, spec) = set("IDFORGE_LOG")
        .or_else(|| set("RUST_LOG"))
        .unwrap_or(("the default", DEFAULT_FILTER.to_string()));
    EnvFilter::builder().parse(spec.trim()).map_err(|e| {
        anyhow::anyhow!(
            "{name}={spec:?} is not a log filter ({e}): set a level (error, warn, info, debug, trace) \
             or target=level directives, comma separated, e.g. info,idforge_serve::request=off"
        )
    })
}

/// The subscriber writing events that pass `filter` to `writer` in `format`.
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.event_format(Text).finish()),
        LogFormat::Json => Box::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// Sets up the log on stderr for the rest of the process. Lines are formatted where the event
/// happens and written by a thread of their own (`tracing-appender`), through a buffer flushed
/// whenever no line waits: under load many lines go out in one `write` instead of one each, and a
/// slow reader of stderr does not hold up the requests until 128,000 lines wait (then they do:
/// no line is dropped). Keep the guard until the end: dropping it writes what is left.
///
/// # Errors
/// A filter that does not parse (see [`filter`]).
pub fn init(format: LogFormat) -> anyhow::Result<WorkerGuard> {
    let filter = filter(|k| std::env::var(k).ok())?;
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("idforge-log")
        .finish(std::io::BufWriter::with_capacity(
            16 * 1024,
            std::io::stderr(),
        ));
    // Set only once per process; a second call (none today) keeps the first.
    let _ = tracing::subscriber::set_global_default(subscriber(format, filter, writer));
    Ok(guard)
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
        SystemTime.format_time(&mut w)?;
        w.write_str(" idforge serve: ")?;
        let meta = event.metadata();
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
        let sub = subscriber(format, EnvFilter::new(filter), out.clone());
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
        let show = |f: EnvFilter| f.to_string();
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
