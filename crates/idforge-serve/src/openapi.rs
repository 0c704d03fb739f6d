//! The service's OpenAPI 3.1 document, generated from the route code: each handler's
//! `#[utoipa::path]` gives its operation, [`crate::routes::api`] registers every route and its
//! operation in one call (utoipa-axum's `routes!`), and this module holds what the operations
//! share: the info, the bearer security scheme, the reusable responses, and the body and
//! parameter types. The scheme names come from the catalog, so a new scheme is documented by
//! itself.

use std::sync::OnceLock;

use idforge::schemes::catalog;
use idforge::text::Format;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::RefOr;
use utoipa::{IntoParams, Modify, OpenApi, PartialSchema, ToResponse, ToSchema};

/// The service's OpenAPI document, made from the routes (see [`openapi_json`] for the served
/// text, which also marks the headers always sent as `required`).
pub fn openapi() -> utoipa::openapi::OpenApi {
    crate::routes::api().into_openapi()
}

/// The document as served at `/openapi.json`: JSON, made once.
pub fn openapi_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let mut doc = serde_json::to_value(openapi()).expect("the OpenAPI document is JSON");
        require_headers(&mut doc);
        doc.to_string()
    })
}

/// Response headers the service always sends with their status: utoipa's header object has no
/// `required`, so it is added to the JSON (a fuzzer then checks that they are sent).
const ALWAYS_SENT: [&str; 2] = ["Allow", "WWW-Authenticate"];

fn require_headers(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(headers)) = map.get_mut("headers") {
                for (name, header) in headers.iter_mut() {
                    if let (true, Some(h)) =
                        (ALWAYS_SENT.contains(&name.as_str()), header.as_object_mut())
                    {
                        h.insert("required".into(), true.into());
                    }
                }
            }
            map.values_mut().for_each(require_headers);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(require_headers),
        _ => {}
    }
}

/// What the document says before the routes add their operations.
#[derive(OpenApi)]
#[openapi(
    info(title = "idforge", version = "1", description = DESCRIPTION),
    paths(ids_head),
    components(
        schemas(ErrorBody, Ids, Decoded, SchemeFacts, Status),
        responses(BadRequest, Unauthorized, Forbidden, UriTooLong, HeadersTooLarge, Unavailable)
    ),
    modifiers(&Finish),
    security(("bearer" = []), ())
)]
pub(crate) struct ApiDoc;

const DESCRIPTION: &str = "Unique ids of every idforge scheme over HTTP. With bearer tokens \
configured, every route but /healthz needs `Authorization: Bearer TOKEN` (401 without, 403 with \
a wrong one). Errors from the service are always JSON `{\"error\": \"...\"}`; a request target \
over 2048 bytes gets 414, a request over the timeout 503. Two answers come from the HTTP library \
(hyper) before the service sees the request, with an empty body and no content type, and close \
the connection: 431 for a request head of more than 100 header fields or about 417792 bytes \
(checked before each read, so up to one read more may pass), and 414 \
for a request target over 65534 bytes. Every route takes GET; HEAD is answered as GET without a \
body, except on /v1/ids/{scheme}, where it is 405 with `Allow: GET` and issues nothing.";

/// Adds the `bearer` security scheme the document's `security` names, and drops the empty tag
/// lists of the operations listed in [`ApiDoc`] (the document uses no tags).
struct Finish;

impl Modify for Finish {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        api.components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
            );
        for item in api.paths.paths.values_mut() {
            for op in [&mut item.get, &mut item.head].into_iter().flatten() {
                if op.tags.as_ref().is_some_and(Vec::is_empty) {
                    op.tags = None;
                }
            }
        }
    }
}

/// `HEAD /v1/ids/{scheme}` is answered by the guard (`crate::middleware`), before any handler:
/// this function only carries its operation.
#[utoipa::path(
    head,
    path = "/v1/ids/{scheme}",
    operation_id = "headIds",
    summary = "Not allowed: a HEAD would issue ids only to throw them away",
    description = "Always 405 with `Allow: GET` (after the bearer token check), and no id is \
        issued. The answer to a HEAD has no body.",
    params(("scheme" = String, Path)),
    responses(
        (status = 405, description = "HEAD is not allowed here: use GET.",
            headers(("Allow" = inline(AllowGet), description = "GET"))),
        (status = 401, description = "No bearer token (no body: a HEAD).",
            headers(("WWW-Authenticate" = String, description = "Bearer realm=\"idforge\""))),
        (status = 403, description = "A wrong bearer token (no body: a HEAD)."),
        (status = 414, description = "The request target is over 2048 bytes (no body: a HEAD)."),
        (status = 431, response = HeadersTooLarge),
    )
)]
#[allow(dead_code)] // documentation only
fn ids_head() {}

// Parameters.

/// A scheme name of the catalog ([`catalog::NAMES`]).
pub(crate) struct SchemeName;

impl PartialSchema for SchemeName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(catalog::NAMES))
            .into()
    }
}
impl ToSchema for SchemeName {}

/// The text formats (`idforge gen --format`): the library's, `time` for timestamp ids and
/// `ksuid` for KSUIDs (160 bits: not a [`Format`] of the 128-bit values).
pub(crate) const FORMATS: [&str; 9] = [
    format_name(Format::Dec),
    format_name(Format::Hex),
    format_name(Format::Base32),
    format_name(Format::Uuid),
    format_name(Format::Ulid),
    format_name(Format::Xid),
    format_name(Format::TypeId),
    "time",
    "ksuid",
];

/// A format's name; the match makes a new format a compile error here, until it is listed.
const fn format_name(f: Format) -> &'static str {
    match f {
        Format::Dec => "dec",
        Format::Hex => "hex",
        Format::Base32 => "base32",
        Format::Uuid => "uuid",
        Format::Ulid => "ulid",
        Format::Xid => "xid",
        Format::TypeId => "typeid",
    }
}

/// A text format name ([`FORMATS`]).
pub(crate) struct FormatName;

impl PartialSchema for FormatName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(FORMATS))
            .into()
    }
}
impl ToSchema for FormatName {}

/// `host_digits`: 2 or 3.
pub(crate) struct HostDigits;

impl PartialSchema for HostDigits {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some([2, 3]))
            .into()
    }
}
impl ToSchema for HostDigits {}

/// The one method allowed.
#[derive(ToSchema)]
#[allow(dead_code, clippy::upper_case_acronyms)] // documentation only
pub(crate) enum AllowGet {
    GET,
}

/// The path of `GET /v1/ids/{scheme}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // documentation only
pub(crate) struct IdsPath {
    /// A name from /v1/schemes (custom when the service has a layout). A scheme the service
    /// does not serve gets 400.
    #[param(inline)]
    scheme: SchemeName,
}

/// The query of `GET /v1/ids/{scheme}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // documentation only
pub(crate) struct IdsQuery {
    /// How many ids, at most the service's max count (--max-count: default 100000, at most
    /// 1000000); more is 400, and never allocated.
    #[param(minimum = 1, default = 1)]
    count: Option<u64>,
    /// Text format (JSON and text bodies); default: the format's own text for ulid, tsid
    /// (base32), objectid (hex), xid and typeid, uuid for UUID schemes, dec otherwise.
    #[param(inline)]
    format: Option<FormatName>,
    /// TypeID text's prefix (the typeid scheme, or format=typeid): empty, or up to 63 of a-z and
    /// `_`, starting and ending with a letter; absent: the bare 26-character suffix. With
    /// another format it is 400.
    #[param(
        max_length = 63,
        pattern = "^([a-z]([a-z_]{0,61}[a-z])?)?$",
        example = "user"
    )]
    prefix: Option<String>,
}

/// The path of `GET /v1/inspect/{id}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // documentation only
pub(crate) struct InspectPath {
    /// An id; integer ids need scheme=.
    #[param(
        min_length = 1,
        max_length = 64,
        example = "0193578d-5c2e-7cc2-8f4a-3c1d2b0a9e11"
    )]
    id: String,
}

/// The query of `GET /v1/inspect/{id}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // documentation only
pub(crate) struct InspectQuery {
    /// Needed for integer ids; UUIDs are recognised by their version.
    scheme: Option<String>,
    /// The custom scheme's layout.
    layout: Option<String>,
    #[param(inline)]
    format: Option<FormatName>,
    #[param(inline)]
    host_digits: Option<HostDigits>,
}

// Bodies.

/// Every error answer of the service.
#[derive(ToSchema)]
#[schema(as = Error)]
#[allow(dead_code)] // documentation only
pub(crate) struct ErrorBody {
    /// What went wrong and how to fix it.
    error: String,
}

/// New ids as JSON.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only
pub(crate) struct Ids {
    ids: Vec<String>,
}

/// One id per line.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only
pub(crate) struct IdLines(String);

/// Big-endian: 8 bytes per id of a 64-bit scheme, 16 of a 128-bit one.
#[derive(ToSchema)]
#[schema(format = Binary)]
#[allow(dead_code)] // documentation only
pub(crate) struct IdOctets(String);

/// An integer, or a decimal string where it may not fit one (`description` for a field).
fn int_or_string(description: Option<&str>) -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Integer))
        .item(ObjectBuilder::new().schema_type(Type::String))
        .description(description)
        .into()
}

fn unix_ms() -> Schema {
    int_or_string(Some(
        "Absent for an id that records no time it can be read from (a version 8 UUID without \
         a scheme); a decimal string past 64 bits.",
    ))
}

fn unix_ns() -> Schema {
    int_or_string(Some(
        "Absent where unix_ms is; a decimal string past 64 bits (never wrapped).",
    ))
}

fn any_width() -> Schema {
    int_or_string(None)
}

/// The same fields as `idforge inspect --json`. Fields wider than 53 bits are strings.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only
pub(crate) struct Decoded {
    id: String,
    /// TypeID: the prefix (empty for a bare suffix)
    #[schema(nullable = false)]
    prefix: Option<String>,
    /// The scheme, or for a UUID decoded without one uuid-v1 to uuid-v8, uuid-nil or uuid-max.
    scheme: String,
    /// The id's value in decimal.
    value: String,
    #[schema(schema_with = unix_ms)]
    unix_ms: Option<u128>,
    #[schema(schema_with = unix_ns)]
    unix_ns: Option<u128>,
    /// RFC 3339 UTC at the scheme's precision; absent where unix_ms is, except for a version 1
    /// or 6 UUID before 1970 (a time, no Unix milliseconds).
    #[schema(nullable = false)]
    time: Option<String>,
    /// A version 1 or 6 UUID's 60-bit time: 100 ns intervals since 1582-10-15 (a string past
    /// 2^53)
    #[schema(schema_with = any_width)]
    timestamp: Option<u64>,
    /// A version 1 or 6 UUID's 14-bit clock sequence
    #[schema(nullable = false)]
    clock_seq: Option<u16>,
    #[schema(schema_with = any_width)]
    node: Option<u128>,
    /// nanots-host
    #[schema(nullable = false)]
    host: Option<u64>,
    /// nanots
    #[schema(nullable = false)]
    tag: Option<u64>,
    #[schema(schema_with = any_width)]
    counter: Option<u128>,
    /// locality
    #[schema(nullable = false)]
    pid: Option<u32>,
    /// locality: 28-bit MAC fragment, hex
    #[schema(nullable = false)]
    mac: Option<String>,
    /// hex
    #[schema(nullable = false)]
    random: Option<String>,
    /// hex
    #[schema(nullable = false)]
    rand_a: Option<String>,
    /// hex
    #[schema(nullable = false)]
    rand_b: Option<String>,
    /// hex: a version 8 UUID's 48 bits before the version (RFC 9562 section 5.8)
    #[schema(nullable = false)]
    custom_a: Option<String>,
    /// hex: the 12 bits after the version
    #[schema(nullable = false)]
    custom_b: Option<String>,
    /// hex: the 62 bits after the variant
    #[schema(nullable = false)]
    custom_c: Option<String>,
    #[schema(nullable = false)]
    version: Option<u8>,
    #[schema(nullable = false, examples("0b10"))]
    variant: Option<String>,
    #[schema(nullable = false)]
    layouts: Option<Vec<String>>,
    #[schema(nullable = false)]
    hint: Option<String>,
    /// What kind of UUID it is (random, name-based, time-based, nil, max, ...), for UUIDs decoded
    /// without a scheme
    #[schema(nullable = false)]
    note: Option<String>,
}

/// A scheme's facts, as `idforge schemes --json`.
#[derive(ToSchema)]
#[schema(as = Scheme)]
#[allow(dead_code)] // documentation only
pub(crate) struct SchemeFacts {
    name: String,
    bits: u32,
    /// "0" for uuid4, which has no tick.
    ids_per_tick: String,
    /// Whole ids per second, a decimal string like the other counts; null for uuid4: no tick
    /// bounds it.
    #[schema(required = true)]
    ids_per_second: Option<String>,
    #[schema(required = true)]
    nodes: Option<String>,
    /// null for uuid4: no time field runs out.
    #[schema(required = true)]
    end_year: Option<i32>,
    tick_ns: u64,
    epoch: String,
    layout: String,
    summary: String,
    /// Whether ids fit a signed 64-bit integer (PostgreSQL bigint, Java long): yes, node<N, to
    /// YEAR, no; null for 128-bit ids.
    #[schema(required = true)]
    fits_i64: Option<String>,
    /// time: increasing per generator; none: in no order (uuid4, locality, a custom layout with
    /// order=none)
    #[schema(examples("time"))]
    order: String,
}

/// Health and readiness.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only
pub(crate) struct Status {
    status: String,
}

// Responses shared by the operations.

/// Unknown scheme, bad count, format, id or parameter.
#[derive(ToResponse)]
#[allow(dead_code)] // documentation only
pub(crate) struct BadRequest(ErrorBody);

/// No bearer token.
#[derive(ToResponse)]
#[response(headers(("WWW-Authenticate" = String, description = "Bearer realm=\"idforge\"")))]
#[allow(dead_code)] // documentation only
pub(crate) struct Unauthorized(ErrorBody);

/// A wrong bearer token.
#[derive(ToResponse)]
#[allow(dead_code)] // documentation only
pub(crate) struct Forbidden(ErrorBody);

/// The request target (path and query) is over 2048 bytes: shorten it. (Over 65534 bytes hyper
/// answers 414 itself, with an empty body and no content type.)
#[derive(ToResponse)]
#[allow(dead_code)] // documentation only
pub(crate) struct UriTooLong(ErrorBody);

/// Request Header Fields Too Large, answered by hyper (the HTTP library) before the service sees
/// the request: more than 100 header fields, or a request head over 417792 bytes (hyper checks
/// its read buffer before each read, so a head up to one read longer may pass). The body is
/// empty, with no content type, and the connection is closed.
#[derive(ToResponse)]
pub(crate) struct HeadersTooLarge;

/// Not ready, the generator refused (clock behind, lost state file), the request timed out, or
/// (with `Retry-After: 1`) too many large batches are in flight.
#[derive(ToResponse)]
#[allow(dead_code)] // documentation only
pub(crate) struct Unavailable(ErrorBody);
