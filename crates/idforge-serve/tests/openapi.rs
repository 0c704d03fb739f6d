//! The OpenAPI document, generated from the route code: it documents every route the service
//! serves and nothing it does not, each operation with a stable operation id, and it is a
//! valid document.

mod common;

use std::collections::{BTreeMap, HashSet};

use common::{config, get, request, start};
use idforge_serve::Config;
use serde_json::Value;

fn doc() -> Value {
    serde_json::from_str(idforge_serve::openapi_json()).unwrap()
}

/// Every operation of the document: (method, path, operation).
fn operations(api: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in api["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.to_ascii_uppercase(), path.clone(), op.clone()));
        }
    }
    out
}

/// A response of an operation, its `$ref` to the shared responses followed.
fn response<'a>(api: &'a Value, op: &'a Value, status: u16) -> Option<&'a Value> {
    let r = op["responses"].get(status.to_string())?;
    Some(match r["$ref"].as_str() {
        Some(to) => {
            let name = to.strip_prefix("#/components/responses/").unwrap();
            &api["components"]["responses"][name]
        }
        None => r,
    })
}

#[test]
fn operation_ids_are_unique_and_stable() {
    let api = doc();
    let ids: BTreeMap<(String, String), String> = operations(&api)
        .into_iter()
        .map(|(method, path, op)| {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"))
                .to_string();
            ((method, path), id)
        })
        .collect();
    let unique: HashSet<&String> = ids.values().collect();
    assert_eq!(unique.len(), ids.len(), "repeated operation ids: {ids:?}");
    // Generated clients name their methods after these: renaming one breaks them.
    let stable: BTreeMap<(String, String), String> = [
        ("GET", "/v1/ids/{scheme}", "issueIds"),
        ("HEAD", "/v1/ids/{scheme}", "headIds"),
        ("GET", "/v1/inspect/{id}", "inspectId"),
        ("GET", "/v1/schemes", "listSchemes"),
        ("GET", "/healthz", "health"),
        ("GET", "/readyz", "ready"),
        ("GET", "/metrics", "metrics"),
        ("GET", "/openapi.json", "openapi"),
    ]
    .into_iter()
    .map(|(m, p, id)| ((m.to_string(), p.to_string()), id.to_string()))
    .collect();
    assert_eq!(ids, stable);
}

#[test]
fn the_document_parses_back_and_every_ref_resolves() {
    let text = idforge_serve::openapi_json();
    let parsed: utoipa::openapi::OpenApi =
        serde_json::from_str(text).expect("an OpenAPI document utoipa reads back");
    // Read back, it says the same (but `required` on headers, which utoipa's model lacks).
    let (back, made) = (
        serde_json::to_value(&parsed).unwrap(),
        serde_json::to_value(idforge_serve::openapi()).unwrap(),
    );
    assert_eq!(back, made);
    let api = doc();
    assert!(api["openapi"].as_str().unwrap().starts_with("3.1."));
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&api, &mut all);
    assert!(all.len() > 30, "{all:?}");
    for r in all {
        let pointer = r.strip_prefix('#').expect("a local $ref");
        assert!(api.pointer(pointer).is_some(), "{r} does not resolve");
    }
    // The document names every scheme of the catalog, and the formats.
    let params = &api["paths"]["/v1/ids/{scheme}"]["get"]["parameters"];
    assert_eq!(
        params[0]["schema"]["enum"],
        serde_json::json!(idforge::schemes::catalog::NAMES)
    );
    assert_eq!(
        params[2]["schema"]["enum"],
        serde_json::json!([
            "dec", "hex", "base32", "uuid", "ulid", "xid", "typeid", "time", "ksuid"
        ])
    );
    // Every operation but /healthz takes the bearer token, when the service has tokens.
    assert_eq!(api["security"], serde_json::json!([{ "bearer": [] }, {}]));
    assert_eq!(
        api["paths"]["/healthz"]["get"]["security"],
        serde_json::json!([])
    );
    assert_eq!(
        api["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

/// Every documented operation is served, and answers with a documented status, content type and
/// required headers, with the bearer token and without it.
#[test]
fn every_documented_operation_is_served_as_documented() {
    let s = start(Config {
        tokens: vec!["the-token".into()],
        ..config(&["snowflake", "uuid7"])
    });
    let api = doc();
    let served = get(
        s.addr,
        "/openapi.json",
        &[("Authorization", "Bearer the-token")],
    );
    assert_eq!(served.text(), idforge_serve::openapi_json());
    let ops = operations(&api);
    assert_eq!(
        ops.len(),
        8,
        "{:?}",
        ops.iter().map(|o| (&o.0, &o.1)).collect::<Vec<_>>()
    );
    for (method, path, op) in &ops {
        let target = path.replace("{scheme}", "snowflake").replace("{id}", "0");
        for auth in [&[][..], &[("Authorization", "Bearer the-token")][..]] {
            let r = request(s.addr, method, &target, auth);
            let said = format!("{method} {target} ({} headers)", auth.len());
            assert!(r.status != 404, "{said}: not served");
            let Some(doc) = response(&api, op, r.status) else {
                panic!("{said}: {} is not documented", r.status);
            };
            if let Some(content) = doc["content"].as_object().filter(|_| method != "HEAD") {
                let ct = r.header("content-type").unwrap_or("");
                let media = ct.split(';').next().unwrap().trim();
                assert!(content.contains_key(media), "{said}: {ct} not documented");
            }
            for (name, h) in doc["headers"].as_object().into_iter().flatten() {
                if h["required"] == true {
                    assert!(r.header(name).is_some(), "{said}: no {name}");
                }
            }
            // Public: no security, or an empty requirement among them (/readyz).
            let public = op["security"] == serde_json::json!([])
                || op["security"]
                    .as_array()
                    .is_some_and(|a| a.contains(&serde_json::json!({})));
            if auth.is_empty() && !public {
                assert_eq!(r.status, 401, "{said}");
            }
            // HEAD is answered as GET without a body where the document has no HEAD of its own.
            if method == "GET" && api["paths"][path]["head"].is_null() {
                let head = request(s.addr, "HEAD", &target, auth);
                assert_eq!(head.status, r.status, "HEAD {target}");
                assert!(head.body.is_empty(), "HEAD {target}");
            }
        }
    }
}

/// The router takes its routes only from `routes::api()`, where utoipa-axum's `routes!` adds
/// each route together with its operation, from the handler's `#[utoipa::path]`: a route added
/// any other way would be served undocumented.
#[test]
fn routes_are_added_only_with_their_operation() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // The unit tests build routers of their own.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for adds_a_route in [
            ".route(",
            ".route_service(",
            ".nest(",
            ".nest_service(",
            "Router::new(",
        ] {
            assert!(
                !code.contains(adds_a_route),
                "{} adds a route with `{adds_a_route}`: add it in routes::api() with \
                 `.routes(routes!(handler))` and a #[utoipa::path] on the handler",
                path.display()
            );
        }
        seen += code.matches("routes!(").count();
    }
    // Each `routes!(handler)` adds one GET route and its operation (HEAD on the ids route is
    // the guard's answer, documented apart).
    let gets = operations(&doc()).iter().filter(|o| o.0 == "GET").count();
    assert_eq!(seen, gets, "one routes!(...) per route in routes::api()");
}
