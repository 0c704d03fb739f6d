//! The routes and their handlers (the ids route is in [`crate::ids`]).

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use idforge::inspect::inspect_as;
use idforge::schemes::catalog::Kind;
use idforge::text::Format;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::app::{App, Served};
use crate::errors::{error, fail, json_ok, query_words, ApiError};
use crate::fleet::LeaseStatus;
use crate::metrics::{LeaseGauges, SchemeGauges};
use crate::middleware::layers;
use crate::negotiate::{params, Params};
use crate::openapi::{
    ApiDoc, BadRequest, Decoded, Forbidden, HeadersTooLarge, InspectPath, InspectQuery,
    SchemeFacts, Status, Unauthorized, Unavailable, UriTooLong,
};
use crate::{json, openapi};

/// Every route of the service, each with its operation in the OpenAPI document: `routes!`
/// takes the method and path from the handler's `#[utoipa::path]`, so a route cannot be
/// served without being documented, nor documented where it is not served. Routes are added
/// here only.
pub(crate) fn api() -> OpenApiRouter<Arc<App>> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(crate::ids::ids))
        .routes(routes!(inspect))
        .routes(routes!(schemes))
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics_text))
        .routes(routes!(openapi_document))
}

/// The service's routes over `app`, with authentication, limits, metrics and JSON errors.
pub fn router(app: Arc<App>) -> Router {
    let (routes, _) = api().split_for_parts();
    layers(routes.fallback(not_found), &app).with_state(app)
}

pub(crate) async fn not_found(req: Request) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!(
            "no route {}: see /openapi.json for the routes",
            req.uri().path()
        ),
    )
}

#[utoipa::path(
    get,
    path = "/v1/inspect/{id}",
    operation_id = "inspectId",
    summary = "Decode an id (as `idforge inspect --json`)",
    params(InspectPath, InspectQuery),
    responses(
        (status = 200, description = "The id's parts.", body = Decoded),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 414, response = UriTooLong),
        (status = 431, response = HeadersTooLarge),
    )
)]
pub(crate) async fn inspect(
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Params,
) -> Response {
    let res = (|| -> Result<Response, ApiError> {
        let Path(id) = id.map_err(|e| fail(StatusCode::BAD_REQUEST, e.body_text()))?;
        let p = params(query, &["scheme", "layout", "format", "host_digits"])?;
        let bad = |m: String| fail(StatusCode::BAD_REQUEST, query_words(&m));
        let kind = match (p.get("scheme"), p.get("layout")) {
            (Some(name), layout) => Some(
                Kind::from_name(name, layout.map(String::as_str))
                    .map_err(|e| bad(e.to_string()))?,
            ),
            (None, Some(layout)) => {
                Some(Kind::from_name("custom", Some(layout)).map_err(|e| bad(e.to_string()))?)
            }
            (None, None) => None,
        };
        let timestamps = matches!(
            kind,
            Some(Kind::NanoTsHost) | Some(Kind::Layout(idforge::Scheme::NanoTs))
        );
        let format = match p.get("format").map(|f| f.trim()) {
            None => None,
            Some("time") if timestamps => None,
            Some("time") => {
                return Err(bad(
                    "format=time applies only to nanots and nanots-host ids: add scheme=".into(),
                ))
            }
            Some(f) => Some(f.parse::<Format>().map_err(bad)?),
        };
        let host_digits = p
            .get("host_digits")
            .map(|d| {
                d.trim()
                    .parse::<u32>()
                    .map_err(|_| bad(format!("host_digits {d:?} is not 2 or 3")))
            })
            .transpose()?;
        let d =
            inspect_as(&id, kind.as_ref(), format, host_digits).map_err(|e| bad(e.to_string()))?;
        Ok(json_ok(&json::decoded(&d, query_words)))
    })();
    res.unwrap_or_else(IntoResponse::into_response)
}

#[utoipa::path(
    get,
    path = "/v1/schemes",
    operation_id = "listSchemes",
    summary = "The catalog (as `idforge schemes --json`)",
    responses(
        (status = 200, description = "Every scheme's facts.", body = [SchemeFacts]),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 414, response = UriTooLong),
        (status = 431, response = HeadersTooLarge),
    )
)]
pub(crate) async fn schemes() -> Response {
    json_ok(&json::schemes())
}

#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "health",
    summary = "Liveness: 200 while the process runs (never needs a token)",
    security(),
    responses(
        (status = 200, description = "Alive.", body = Status),
        (status = 414, response = UriTooLong),
        (status = 431, response = HeadersTooLarge),
    )
)]
pub(crate) async fn healthz() -> Response {
    json_ok(&serde_json::json!({ "status": "ok" }))
}

/// Ready when every scheme can issue: each issues one id now (ids are cheap, and this is the
/// only test that covers every way of failing: a lost state file, a clock behind).
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "ready",
    summary = "Readiness: 200 when every served scheme can issue an id now",
    description = "Each served scheme issues one id: a state file deleted or replaced, a clock \
        behind the last id, or a node id whose lease is not held makes the service unready. \
        Without an Authorization header it needs no token (for probes) and a 503 does not say \
        why; with one, the token must be right and a 503 gives the reasons.",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Ready.", body = Status),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 414, response = UriTooLong),
        (status = 431, response = HeadersTooLarge),
        (status = 503, response = Unavailable),
    )
)]
pub(crate) async fn readyz(State(app): State<Arc<App>>, req: Request) -> Response {
    let anonymous = req
        .extensions()
        .get::<crate::middleware::Anonymous>()
        .is_some();
    let probe = app.clone();
    let problems = tokio::task::spawn_blocking(move || {
        let mut problems = Vec::new();
        for s in &probe.schemes {
            let broken = s.broken();
            if let Some(why) = broken {
                problems.push(format!("{}: {why}", s.gen.name()));
                continue;
            }
            if let Some(lease) = &s.lease {
                match lease.status() {
                    Some(st) if st.issuing => {}
                    Some(st) => {
                        problems.push(format!(
                            "{}: node {} is not held ({})",
                            s.gen.name(),
                            st.node,
                            st.why_not_issuing()
                        ));
                        continue;
                    }
                    None => {
                        problems.push(format!("{}: the node id was given back", s.gen.name()));
                        continue;
                    }
                }
            }
            if let Err(e) = s.gen.next() {
                s.refused(&e);
                problems.push(format!("{}: {e}", s.gen.name()));
            }
        }
        problems
    })
    .await
    .unwrap_or_else(|_| vec!["the readiness check panicked".into()]);
    if problems.is_empty() {
        json_ok(&serde_json::json!({ "status": "ready" }))
    } else if anonymous {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready (send the bearer token for the reasons)",
        )
    } else {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("not ready: {}", problems.join("; ")),
        )
    }
}

#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    summary = "Prometheus text exposition",
    responses(
        (status = 200, description = "Metrics.", body = String, content_type = "text/plain"),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 414, response = UriTooLong),
        (status = 431, response = HeadersTooLarge),
    )
)]
pub(crate) async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    let leases: Vec<Option<LeaseStatus>> = app.schemes.iter().map(Served::lease_status).collect();
    let ready = app.schemes.iter().zip(&leases).all(|(s, l)| {
        s.broken().is_none() && (s.lease.is_none() || l.as_ref().is_some_and(|l| l.issuing))
    });
    let gauges = app.schemes.iter().zip(&leases).map(|(s, l)| SchemeGauges {
        name: s.gen.name(),
        lead: s.gen.lead(),
        node: l.as_ref().map(|l| l.node).or(s.node),
        lease: s.lease.as_ref().map(|_| LeaseGauges {
            held: l.as_ref().is_some_and(|l| l.issuing),
            token: l.as_ref().map_or(0, |l| l.token),
            ahead_secs: l.as_ref().map_or(0.0, |l| l.ahead_secs),
        }),
    });
    let text = app.metrics.render(gauges, ready);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
        )],
        text,
    )
        .into_response()
}

#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    summary = "This document",
    responses(
        (status = 200, description = "OpenAPI 3.", body = Object),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 414, response = UriTooLong),
        (status = 431, response = HeadersTooLarge),
    )
)]
pub(crate) async fn openapi_document() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        openapi::openapi_json(),
    )
        .into_response()
}
