//! Every route and every error status, over real HTTP on loopback.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{config, get, issued_settled, request, stalled, start};
use idforge_serve::{App, Config, Settings};

/// A custom layout with a node field.
const LAYOUT: &str = "time:41,node:10,counter:12,tick=1ms,epoch=2020-01-01T00:00:00Z";

#[test]
fn ids_as_json_text_and_packed_bytes() {
    let s = start(config(&["snowflake", "uuid7", "nanots-host"]));
    let one = get(s.addr, "/v1/ids/snowflake", &[]);
    assert_eq!(one.header("content-type"), Some("application/json"));
    let ids = one.ids();
    assert_eq!(ids.len(), 1);
    assert!(
        ids[0].len() == 19 && ids[0].bytes().all(|b| b.is_ascii_digit()),
        "{ids:?}"
    );

    let text = get(
        s.addr,
        "/v1/ids/snowflake?count=500",
        &[("Accept", "text/plain")],
    );
    assert_eq!(text.status, 200);
    assert!(text
        .header("content-type")
        .unwrap()
        .starts_with("text/plain"));
    let lines: Vec<u64> = text.text().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(lines.len(), 500);
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "increasing");
    assert!(lines[0] > ids[0].parse::<u64>().unwrap());

    let hex = get(s.addr, "/v1/ids/snowflake?count=2&format=hex", &[]).ids();
    assert!(
        hex.iter()
            .all(|h| h.len() == 16 && u64::from_str_radix(h, 16).is_ok()),
        "{hex:?}"
    );

    let packed = get(
        s.addr,
        "/v1/ids/snowflake?count=3",
        &[("Accept", "application/octet-stream")],
    );
    assert_eq!(
        packed.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(packed.body.len(), 24);
    let vals: Vec<u64> = packed
        .body
        .chunks(8)
        .map(|c| u64::from_be_bytes(c.try_into().unwrap()))
        .collect();
    assert!(vals.windows(2).all(|w| w[0] < w[1]));
    assert!(
        vals[0] > *lines.last().unwrap(),
        "bytes are big-endian values of later ids"
    );

    let wide = get(
        s.addr,
        "/v1/ids/uuid7?count=4",
        &[("Accept", "application/octet-stream")],
    );
    assert_eq!(wide.body.len(), 64);
    for c in wide.body.chunks(16) {
        assert_eq!(c[6] >> 4, 7, "version 7 in byte 6");
        assert_eq!(c[8] >> 6, 0b10, "variant in byte 8");
    }
    let uuids = get(s.addr, "/v1/ids/uuid7?count=2", &[]).ids();
    assert!(
        uuids
            .iter()
            .all(|u| u.len() == 36 && u.as_bytes()[14] == b'7'),
        "{uuids:?}"
    );

    let times = get(s.addr, "/v1/ids/nanots-host?format=time", &[]).ids();
    assert!(
        times[0].starts_with("20") && times[0].contains('T'),
        "{times:?}"
    );

    // Quality values choose between bodies.
    let q = get(
        s.addr,
        "/v1/ids/snowflake",
        &[("Accept", "application/json;q=0.2, text/plain;q=0.9")],
    );
    assert!(q.header("content-type").unwrap().starts_with("text/plain"));
}

#[test]
fn batches_made_inline_and_on_the_blocking_pool_give_the_same_bodies() {
    // Up to 64 ids are made on the async worker, more on the blocking pool: every body of
    // either kind holds exactly the ids asked for, distinct and increasing.
    let s = start(config(&["uuid7", "snowflake"]));
    for count in [1usize, 64, 65, 1000, 5000] {
        let json = get(s.addr, &format!("/v1/ids/uuid7?count={count}"), &[]).ids();
        assert_eq!(json.len(), count);
        assert!(json.windows(2).all(|w| w[0] < w[1]), "increasing UUID text");
        assert!(json
            .iter()
            .all(|u| u.len() == 36 && u.as_bytes()[14] == b'7'));

        let text = get(
            s.addr,
            &format!("/v1/ids/snowflake?count={count}&format=hex"),
            &[("Accept", "text/plain")],
        )
        .text();
        let vals: Vec<u64> = text
            .lines()
            .map(|l| {
                assert_eq!(l.len(), 16, "{l}");
                u64::from_str_radix(l, 16).unwrap()
            })
            .collect();
        assert_eq!(vals.len(), count);
        assert!(text.ends_with('\n'));
        assert!(vals.windows(2).all(|w| w[0] < w[1]));

        let packed = get(
            s.addr,
            &format!("/v1/ids/uuid7?count={count}"),
            &[("Accept", "application/octet-stream")],
        );
        assert_eq!(packed.body.len(), 16 * count);
        let wide: Vec<u128> = packed
            .body
            .chunks(16)
            .map(|c| u128::from_be_bytes(c.try_into().unwrap()))
            .collect();
        assert!(wide.windows(2).all(|w| w[0] < w[1]));
        assert!(
            wide.iter().any(|v| *v > u128::from(u64::MAX)),
            "all 16 bytes written"
        );
    }
}

/// The schemes that need a node (or host) id.
const NODE_SCHEMES: [&str; 10] = [
    "global-id",
    "global-id-128",
    "snowflake",
    "sonyflake",
    "discord",
    "instagram",
    "tsid",
    "objectid",
    "xid",
    "nanots-host",
];

#[test]
fn every_scheme_of_the_catalog_is_served_with_a_node_and_a_host() {
    let s = start(Config {
        node: Some(3),
        host: Some(4),
        ..Config::default()
    });
    let served = s.app.scheme_names();
    assert!(s.app.left_out().is_empty());
    assert_eq!(s.app.left_out_note(), None);
    for name in idforge::schemes::catalog::NAMES {
        if name == "custom" {
            assert!(
                !served.iter().any(|n| n == "custom"),
                "custom needs a layout"
            );
            continue;
        }
        assert!(
            served.iter().any(|n| n == name),
            "{name} not served: {served:?}"
        );
        let ids = get(s.addr, &format!("/v1/ids/{name}?count=3"), &[]).ids();
        assert_eq!(ids.len(), 3, "{name}");
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 3, "{name}");
    }
    // Host-wide by default: schemes that can keep their stamp in a state file do.
    let files = s.app.state_files();
    assert!(files.iter().any(|(n, _)| n == "snowflake"), "{files:?}");
    assert!(files
        .iter()
        .all(|(_, p)| p.starts_with(common::state_dir())));
}

#[test]
fn without_a_node_the_schemes_that_need_one_are_left_out_and_named() {
    // Two servers started the same way on two hosts would issue the same Snowflakes on node
    // 0: idforge never picks a node id.
    let s = start(Config::default());
    let served = s.app.scheme_names();
    for name in NODE_SCHEMES {
        assert!(!served.iter().any(|n| n == name), "{name} served on node 0");
        let e = get(s.addr, &format!("/v1/ids/{name}"), &[]);
        assert_eq!(e.status, 400, "{name}");
        assert!(e.error().contains("not served here"), "{}", e.error());
    }
    assert_eq!(s.app.left_out(), NODE_SCHEMES);
    let note = s.app.left_out_note().unwrap();
    for needed in ["--node N", "--host N", "--etcd", "[nodes]"] {
        assert!(note.contains(needed), "{note}");
    }
    for name in ["uuid7", "uprotocol", "uprotocol-v8", "nanots", "locality"] {
        assert_eq!(get(s.addr, &format!("/v1/ids/{name}"), &[]).ids().len(), 1);
    }
    // --node alone serves the node schemes, not nanots-host, which needs a host id.
    let s = start(Config {
        node: Some(5),
        ..Config::default()
    });
    assert_eq!(s.app.left_out(), ["nanots-host"]);
    assert!(s.app.left_out_note().unwrap().contains("--host N"));
    let m = get(s.addr, "/metrics", &[]).text();
    assert!(m.contains("idforge_node_id{scheme=\"snowflake\"} 5"), "{m}");

    // Named in the schemes without a node: refused at start, saying how to give one.
    for name in NODE_SCHEMES {
        let e = App::open(Config {
            schemes: Some(vec!["uuid7".into(), name.into()]),
            ..Config::default()
        })
        .err()
        .unwrap_or_else(|| panic!("{name} served without a node"));
        let e = format!("{e:#}");
        assert!(e.contains(&format!("{name} needs a node id")), "{e}");
        assert!(e.contains("never picks one"), "{e}");
    }
    // custom, asked for by its layout, with a node field but no node.
    let e = App::open(Config {
        layout: Some(LAYOUT.into()),
        ..Config::default()
    })
    .err()
    .expect("custom served without a node");
    assert!(format!("{e:#}").contains("custom needs a node id"), "{e:#}");
}

#[test]
fn a_node_per_scheme_from_the_config_file() {
    common::state_dir();
    let settings = Settings::from_toml(
        "schemes = [\"snowflake\", \"sonyflake\", \"nanots-host\", \"uuid7\"]\nnode = 2\n\n[nodes]\nsnowflake = 7\nnanots-host = 11\n",
    )
    .unwrap();
    let s = start(settings.finish().unwrap());
    let m = get(s.addr, "/metrics", &[]).text();
    for line in [
        "idforge_node_id{scheme=\"snowflake\"} 7",
        "idforge_node_id{scheme=\"sonyflake\"} 2",
        "idforge_node_id{scheme=\"nanots-host\"} 11",
    ] {
        assert!(m.lines().any(|l| l == line), "missing {line:?} in\n{m}");
    }
    // Without `node`, the catalog is served with the schemes given a node under [nodes].
    let settings = Settings::from_toml("[nodes]\nglobal-id = 9\n").unwrap();
    let s = start(settings.finish().unwrap());
    assert!(s.app.scheme_names().iter().any(|n| n == "global-id"));
    assert_eq!(
        s.app.left_out(),
        [
            "global-id-128",
            "snowflake",
            "sonyflake",
            "discord",
            "instagram",
            "tsid",
            "objectid",
            "xid",
            "nanots-host"
        ]
    );
    // A name that is no scheme, or a scheme without a node field, is refused.
    for (toml, says) in [
        ("[nodes]\nsnowflak = 1\n", "did you mean snowflake"),
        ("[nodes]\nuuid7 = 1\n", "no node field"),
    ] {
        let c = Settings::from_toml(toml).unwrap().finish().unwrap();
        let e = format!("{:#}", App::open(c).err().expect(toml));
        assert!(e.contains(says), "{toml}: {e}");
    }
}

#[test]
fn max_count_over_the_ceiling_is_refused_at_start() {
    // A Config made without Settings::finish is checked too.
    let e = App::open(Config {
        max_count: 39_000_000_000_000,
        ..config(&["uuid7"])
    })
    .err()
    .expect("opened with a max count over the ceiling");
    assert!(format!("{e:#}").contains("ceiling"), "{e:#}");
    let s = start(Config {
        max_count: idforge_serve::MAX_COUNT_CEILING,
        ..config(&["uuid7"])
    });
    let e = get(s.addr, "/v1/ids/uuid7?count=1000001", &[]);
    assert_eq!(e.status, 400);
    assert!(e.error().contains("from 1 to 1000000"), "{}", e.error());
}

#[test]
fn a_layout_that_does_not_parse_stops_the_service_with_the_reason_gen_gives() {
    let gen_says = idforge::schemes::catalog::Kind::from_name("custom", Some("41t.10n.12s"))
        .unwrap_err()
        .to_string();
    for schemes in [None, Some(vec!["custom".to_string()])] {
        let e = App::open(Config {
            schemes: schemes.clone(),
            layout: Some("41t.10n.12s".into()),
            node: Some(1),
            ..Config::default()
        })
        .err()
        .unwrap_or_else(|| panic!("served with a bad layout ({schemes:?})"));
        let e = format!("{e:#}");
        assert!(e.contains("--layout"), "{e}");
        assert!(e.contains(&gen_says), "{e}");
        assert!(!e.contains("``"), "the spec is named, not \"\": {e}");
    }
}

#[test]
fn custom_is_served_with_a_layout() {
    let s = start(Config {
        schemes: Some(vec!["custom".into()]),
        layout: Some(LAYOUT.into()),
        node: Some(9),
        ..Config::default()
    });
    let id = get(s.addr, "/v1/ids/custom", &[]).ids().remove(0);
    let value: u64 = id.parse().unwrap();
    assert_eq!((value >> 12) & 1023, 9, "node field");
}

#[test]
fn bad_requests_get_json_errors_with_a_fitting_status() {
    let s = start(Config {
        max_count: 10,
        ..config(&["snowflake", "uuid7"])
    });
    let e = get(s.addr, "/v1/ids/snowflak", &[]);
    assert_eq!(e.status, 400);
    assert!(
        e.error().contains("did you mean snowflake"),
        "{}",
        e.error()
    );

    let e = get(s.addr, "/v1/ids/banana", &[]);
    assert_eq!(e.status, 400);
    assert!(e.error().contains("see /v1/schemes"), "{}", e.error());

    let e = get(s.addr, "/v1/ids/sonyflake", &[]);
    assert_eq!(e.status, 400);
    assert!(e.error().contains("not served here"), "{}", e.error());

    for bad in ["0", "11", "-1", "x", "99999999999999999999"] {
        let e = get(s.addr, &format!("/v1/ids/snowflake?count={bad}"), &[]);
        assert_eq!(e.status, 400, "count={bad}");
        assert!(e.error().contains("from 1 to 10"), "{}", e.error());
    }
    assert_eq!(
        get(s.addr, "/v1/ids/snowflake?count=10", &[]).ids().len(),
        10
    );

    let e = get(s.addr, "/v1/ids/snowflake?format=uuid", &[]);
    assert_eq!(e.status, 400);
    assert!(!e.error().is_empty());
    let e = get(s.addr, "/v1/ids/snowflake?format=roman", &[]);
    assert_eq!(e.status, 400);

    let e = get(s.addr, "/v1/ids/snowflake?cuont=3", &[]);
    assert_eq!(e.status, 400);
    assert!(e.error().contains("\"cuont\""), "{}", e.error());

    let e = get(s.addr, "/v1/ids/snowflake", &[("Accept", "image/png")]);
    assert_eq!(e.status, 406);
    assert!(e.error().contains("text/plain"));

    let e = get(s.addr, "/nope", &[]);
    assert_eq!(e.status, 404);
    assert!(e.error().contains("/openapi.json"));

    let e = request(
        s.addr,
        "POST",
        "/v1/ids/snowflake",
        &[("Content-Length", "0")],
    );
    assert_eq!(e.status, 405);
    assert!(!e.error().is_empty());

    // HEAD issues nothing: 405 with Allow, and not one id taken.
    for _ in 0..3 {
        let e = request(s.addr, "HEAD", "/v1/ids/snowflake?count=10", &[]);
        assert_eq!(e.status, 405);
        assert_eq!(e.header("allow"), Some("GET"));
        assert_eq!(e.header("content-type"), Some("application/json"));
        assert!(e.body.is_empty(), "a HEAD answer has no body");
    }
    let m = get(s.addr, "/metrics", &[]).text();
    assert!(
        m.contains("idforge_ids_issued_total{scheme=\"snowflake\"} 10\n"),
        "only the GET's 10 ids: {m}"
    );
    // The POST's 405 says what is allowed too.
    assert!(e.header("allow").is_some_and(|a| a.contains("GET")));

    let long = format!("/v1/ids/snowflake?format={}", "x".repeat(2100));
    let e = get(s.addr, &long, &[]);
    assert_eq!(e.status, 414);
    assert!(e.error().contains("2048"));
}

#[test]
fn inspect_gives_the_fields_of_inspect_json() {
    let s = start(config(&["snowflake"]));
    let id = get(s.addr, "/v1/ids/snowflake", &[]).ids().remove(0);
    let r = get(s.addr, &format!("/v1/inspect/{id}?scheme=snowflake"), &[]);
    assert_eq!(r.status, 200);
    let j = r.json();
    let kind = idforge::schemes::catalog::Kind::from_name("snowflake", None).unwrap();
    let d = idforge::inspect::inspect_as(&id, Some(&kind), None, None).unwrap();
    assert_eq!(j, idforge_serve::json::decoded(&d, |h| h.to_string()));
    assert_eq!(j["scheme"], "snowflake");
    assert_eq!(j["node"], 0);
    assert_eq!(j["id"], id.as_str());

    // A UUIDv7 without a scheme: the hint speaks of query parameters.
    let r = get(
        s.addr,
        "/v1/inspect/017f22e2-79b0-7cc3-98c4-dc0c0c07398f",
        &[],
    );
    assert_eq!(r.status, 200);
    let hint = r.json()["hint"].as_str().unwrap().to_string();
    assert!(hint.contains("scheme=uprotocol"), "{hint}");
    assert_eq!(r.json()["unix_ms"], 1_645_557_742_000u64);

    for bad in [
        "/v1/inspect/banana",
        "/v1/inspect/123?scheme=nope",
        "/v1/inspect/12?scheme=snowflake&format=time",
        "/v1/inspect/12?scheme=snowflake&host_digits=3",
        "/v1/inspect/12?scheme=snowflake&bogus=1",
    ] {
        let r = get(s.addr, bad, &[]);
        assert_eq!(r.status, 400, "{bad}");
        assert!(!r.error().is_empty(), "{bad}");
    }
}

#[test]
fn schemes_health_readiness_metrics_and_openapi() {
    let s = start(Config {
        node: Some(12),
        ..config(&["snowflake", "uuid7"])
    });
    let list = get(s.addr, "/v1/schemes", &[]).json();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let facts = idforge::schemes::catalog::facts();
    assert_eq!(
        names,
        facts.iter().map(|f| f.name.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(list, idforge_serve::json::schemes());
    // Counts are decimal strings (or null), never a mix of strings and floats.
    for f in list.as_array().unwrap() {
        for key in ["ids_per_tick", "ids_per_second", "nodes"] {
            assert!(f[key].is_string() || f[key].is_null(), "{key} of {f}");
        }
    }
    let u7 = list
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "uuid7")
        .unwrap();
    assert_eq!(u7["ids_per_second"], "65536000");

    assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
    let ready = get(s.addr, "/readyz", &[]);
    assert_eq!(ready.status, 200, "{}", ready.text());

    get(s.addr, "/v1/ids/snowflake?count=7", &[]).ids();
    get(s.addr, "/v1/ids/snowflake?count=5", &[]).ids();
    get(s.addr, "/v1/ids/snowflake?count=0", &[]);
    let m = get(s.addr, "/metrics", &[]);
    assert_eq!(m.status, 200);
    assert!(m.header("content-type").unwrap().starts_with("text/plain"));
    let m = m.text();
    for line in [
        "idforge_ids_issued_total{scheme=\"snowflake\"} 12",
        "idforge_ids_issued_total{scheme=\"uuid7\"} 0",
        "idforge_node_id{scheme=\"snowflake\"} 12",
        "idforge_http_requests_total{route=\"/v1/ids/{scheme}\",status=\"200\"} 2",
        "idforge_http_requests_total{route=\"/v1/ids/{scheme}\",status=\"400\"} 1",
        "idforge_http_request_duration_seconds_count{route=\"/v1/ids/{scheme}\"} 3",
        "idforge_http_request_duration_seconds_bucket{route=\"/v1/ids/{scheme}\",le=\"+Inf\"} 3",
        "idforge_ready 1",
    ] {
        assert!(m.lines().any(|l| l == line), "missing {line:?} in\n{m}");
    }
    assert!(
        m.contains("idforge_lead_seconds{scheme=\"snowflake\"} "),
        "{m}"
    );
    assert!(
        !m.contains("idforge_node_id{scheme=\"uuid7\"}"),
        "uuid7 has no node"
    );

    let api = get(s.addr, "/openapi.json", &[]).json();
    assert!(api["openapi"].as_str().unwrap().starts_with("3."));
    // The document names every scheme of the catalog (so generated requests reach them all).
    let names: Vec<&str> = api["paths"]["/v1/ids/{scheme}"]["get"]["parameters"][0]["schema"]
        ["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, idforge::schemes::catalog::NAMES);
    for path in [
        "/v1/ids/{scheme}",
        "/v1/inspect/{id}",
        "/v1/schemes",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
    ] {
        assert!(
            api["paths"][path]["get"].is_object(),
            "{path} not documented"
        );
        // The routes are served where the document says.
        let probe = path.replace("{scheme}", "snowflake").replace("{id}", "0");
        assert_ne!(get(s.addr, &probe, &[]).status, 404, "{probe}");
        // Every route answers an over-long request target with 414, and says so.
        let long = format!("{probe}?x={}", "a".repeat(3000));
        assert_eq!(get(s.addr, &long, &[]).status, 414, "{path}");
        assert!(
            api["paths"][path]["get"]["responses"]["414"].is_object(),
            "{path} does not document 414"
        );
        // hyper's own answer to a request head too large is documented too.
        assert!(
            api["paths"][path]["get"]["responses"]["431"].is_object(),
            "{path} does not document 431"
        );
    }
    // The bodies have the fields the document gives them.
    let props = |name: &str| -> HashSet<String> {
        api["components"]["schemas"][name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no schema {name}"))
            .keys()
            .cloned()
            .collect()
    };
    let keys = |v: &serde_json::Value| -> HashSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    };
    let ids = get(s.addr, "/v1/ids/snowflake", &[]).json();
    assert_eq!(keys(&ids), props("Ids"));
    for f in list.as_array().unwrap() {
        assert_eq!(keys(f), props("Scheme"), "{f}");
    }
    let error = get(s.addr, "/v1/ids/nope", &[]).json();
    assert_eq!(keys(&error), props("Error"));
    assert_eq!(keys(&get(s.addr, "/healthz", &[]).json()), props("Status"));
    let snowflake = ids["ids"][0].as_str().unwrap().to_string();
    for path in [
        format!("/v1/inspect/{snowflake}?scheme=snowflake"),
        "/v1/inspect/017f22e2-79b0-7cc3-98c4-dc0c0c07398f".into(),
        "/v1/inspect/017f22e2-79b0-7cc3-98c4-dc0c0c07398f?scheme=uuid7".into(),
        "/v1/inspect/2021-12-28T14:07:02.954100128?scheme=nanots-host".into(),
        "/v1/inspect/20be0ffc-314a-bd53-7a50-013a65ca76d2".into(),
    ] {
        let r = get(s.addr, &path, &[]);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let extra: Vec<String> = keys(&r.json())
            .difference(&props("Decoded"))
            .cloned()
            .collect();
        assert!(extra.is_empty(), "{path}: {extra:?} not in the document");
    }
}

#[test]
fn bearer_tokens_guard_every_route_but_healthz_and_an_anonymous_readyz() {
    let s = start(Config {
        tokens: vec!["first-token".into(), "second-token".into()],
        ..config(&["snowflake"])
    });
    assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
    for path in [
        "/v1/ids/snowflake",
        "/v1/schemes",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/nope",
    ] {
        let r = get(s.addr, path, &[]);
        if path == "/readyz" {
            // For probes: ready or not without a token (reasons only with one, below).
            assert_eq!(r.status, 200, "{path}");
        } else {
            assert_eq!(r.status, 401, "{path}");
            assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
            assert!(r.error().contains("Authorization: Bearer"), "{}", r.error());
        }
        let r = get(s.addr, path, &[("Authorization", "Bearer first-tokem")]);
        assert_eq!(r.status, 403, "{path}");
        let r = get(
            s.addr,
            path,
            &[("Authorization", "Bearer first-token-and-more")],
        );
        assert_eq!(r.status, 403, "{path}");
        let r = get(s.addr, path, &[("Authorization", "Basic Zmlyc3QtdG9rZW4=")]);
        assert_eq!(r.status, 401, "{path}");
    }
    for t in ["first-token", "second-token"] {
        let r = get(
            s.addr,
            "/v1/ids/snowflake",
            &[("Authorization", &format!("Bearer {t}"))],
        );
        assert_eq!(r.ids().len(), 1);
    }
    let r = get(s.addr, "/nope", &[("Authorization", "bearer second-token")]);
    assert_eq!(r.status, 404);
}

#[test]
fn a_request_over_the_timeout_is_503() {
    // Sonyflake issues 256 ids per 10 ms tick: 5000 take about 200 ms.
    let s = start(Config {
        timeout: Duration::from_millis(20),
        in_process: true,
        ..config(&["sonyflake"])
    });
    let t = Instant::now();
    let r = get(s.addr, "/v1/ids/sonyflake?count=5000", &[]);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.error().contains("longer than 20 ms"), "{}", r.error());
    assert!(
        t.elapsed() < Duration::from_millis(190),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn two_servers_on_one_state_file_never_repeat() {
    let cfg = Config {
        node: Some(21),
        ..config(&["snowflake"])
    };
    let a = start(cfg.clone());
    let b = start(cfg);
    assert_eq!(a.app.state_files(), b.app.state_files());
    let mut all = HashSet::new();
    let fetch = |addr| {
        std::thread::spawn(move || {
            let mut ids = Vec::new();
            for _ in 0..20 {
                ids.extend(get(addr, "/v1/ids/snowflake?count=2000", &[]).ids());
            }
            ids
        })
    };
    let (ta, tb) = (fetch(a.addr), fetch(b.addr));
    let mut n = 0;
    for ids in [ta.join().unwrap(), tb.join().unwrap()] {
        n += ids.len();
        all.extend(ids);
    }
    assert_eq!(n, 80_000);
    assert_eq!(all.len(), n, "an id was served twice");
}

#[test]
fn a_lost_state_file_makes_the_service_unready() {
    let s = start(Config {
        node: Some(33),
        ..config(&["snowflake", "uuid7"])
    });
    assert_eq!(get(s.addr, "/readyz", &[]).status, 200);
    let (_, path) = s
        .app
        .state_files()
        .into_iter()
        .find(|(n, _)| n == "snowflake")
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let r = get(s.addr, "/v1/ids/snowflake?count=10", &[]);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.error().contains("was deleted"), "{}", r.error());
    let r = get(s.addr, "/readyz", &[]);
    assert_eq!(r.status, 503);
    assert!(r.error().contains("snowflake"), "{}", r.error());
    // The others still issue; liveness is unaffected.
    assert_eq!(get(s.addr, "/v1/ids/uuid7", &[]).ids().len(), 1);
    assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
    assert!(get(s.addr, "/metrics", &[])
        .text()
        .contains("idforge_ready 0"));
}

/// Before: a large batch was made whole before its first byte was sent: one request for a
/// million ids held 39 MB, and a client that read nothing made the server issue (and hold) every
/// id. A large batch is now streamed a frame at a time, at most a few frames ahead of what the
/// connection takes.
#[test]
fn a_large_batch_is_streamed_no_further_ahead_than_its_client_reads() {
    let s = start(Config {
        max_count: 1_000_000,
        timeout: Duration::from_secs(20),
        in_process: true,
        ..config(&["uuid7"])
    });
    let c = stalled(s.addr, "/v1/ids/uuid7?count=1000000", &[]);
    // 37 MB of text asked for; the kernel's socket buffers take a few MB of it, the server a
    // few 1,024-id frames more.
    let issued = issued_settled(s.addr, "uuid7");
    assert!(
        issued < 400_000,
        "{issued} ids issued for a client that read 12 bytes: the batch is not streamed"
    );
    drop(c);
    // A client that reads everything gets all of them, in order, the body chunked.
    let r = get(s.addr, "/v1/ids/uuid7?count=300000", &[]);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    let ids = r.ids();
    assert_eq!(ids.len(), 300_000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    // Octets carry their length.
    let r = get(
        s.addr,
        "/v1/ids/uuid7?count=5000",
        &[("Accept", "application/octet-stream")],
    );
    assert_eq!(r.header("content-length"), Some("80000"));
    assert!(r.complete);
}

/// How long until a large batch (100 uuid7) is served, polling up to `within`.
fn large_batch_served_within(addr: std::net::SocketAddr, within: Duration) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < within {
        let r = get(addr, "/v1/ids/uuid7?count=100", &[]);
        if r.status == 200 {
            assert_eq!(r.ids().len(), 100);
            return Some(t.elapsed());
        }
        assert_eq!(r.status, 503, "{}", r.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn large_batches_in_flight_are_capped_with_503_and_retry_after() {
    // Clients that read nothing hold their large batches (and the memory of a few frames each)
    // until the timeout: at most max_batches of them at once.
    let s = start(Config {
        max_count: 1_000_000,
        max_batches: 3,
        timeout: Duration::from_secs(20),
        in_process: true,
        ..config(&["uuid7"])
    });
    let held: Vec<_> = (0..3)
        .map(|_| stalled(s.addr, "/v1/ids/uuid7?count=1000000", &[]))
        .collect();
    let r = get(s.addr, "/v1/ids/uuid7?count=100", &[]);
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(
        r.error().contains("too many large batches in flight"),
        "{}",
        r.error()
    );
    // Small batches are not counted.
    assert_eq!(get(s.addr, "/v1/ids/uuid7?count=64", &[]).ids().len(), 64);
    // A client that leaves gives its batch's place back.
    drop(held);
    let waited = large_batch_served_within(s.addr, Duration::from_secs(5))
        .expect("the batches of clients that left still hold their places 5 s later");
    assert!(waited < Duration::from_secs(5));
}

#[test]
fn small_batches_that_time_out_take_no_more_ids() {
    // Sonyflake (256 ids per 10 ms tick) makes its small batches on the blocking pool. 200
    // requests of 64 at once need 12,800 ids, half a second of the scheme's ticks, against a
    // timeout of 20 ms: most are answered 503. A batch whose request timed out must stop taking
    // ids: they would be taken for nobody, and the requests after them would wait for the ticks
    // they used up (seconds, under overload). So the ids issued and not delivered can be no
    // more than the scheme makes until the last 503 (one tick more), and one id per request.
    let s = start(Config {
        timeout: Duration::from_millis(20),
        in_process: true,
        ..config(&["sonyflake"])
    });
    let addr = s.addr;
    let go = std::sync::Arc::new(std::sync::Barrier::new(201));
    let answers: Vec<_> = (0..200)
        .map(|_| {
            let go = go.clone();
            std::thread::spawn(move || {
                go.wait();
                let r = get(addr, "/v1/ids/sonyflake?count=64", &[]);
                (r, Instant::now())
            })
        })
        .collect();
    go.wait();
    let t = Instant::now();
    let mut timed_out = 0u64;
    let mut last_503 = t;
    let mut delivered = HashSet::new();
    for a in answers {
        let (r, at) = a.join().unwrap();
        match r.status {
            503 => {
                assert!(r.text().contains("took longer than 20 ms"), "{}", r.text());
                timed_out += 1;
                last_503 = last_503.max(at);
            }
            200 => {
                for id in r.ids() {
                    assert!(delivered.insert(id), "an id issued twice");
                }
            }
            other => panic!("{other}: {}", r.text()),
        }
    }
    assert!(timed_out > 0, "no batch timed out: nothing was checked");
    let window_ms = (last_503 - t).as_millis() as u64;
    let issued = issued_settled(addr, "sonyflake");
    let wasted = issued - delivered.len() as u64;
    let bound = 256 * (window_ms / 10 + 2) + 200;
    assert!(
        wasted <= bound,
        "{issued} ids issued, {} delivered: {wasted} taken for {timed_out} requests that timed \
         out within {window_ms} ms, more than the scheme makes in that time ({bound}), so \
         batches whose requests were gone went on taking ids",
        delivered.len()
    );
}

#[test]
fn a_batch_that_outlives_the_timeout_is_cut_short_and_stops() {
    // Sonyflake: 256 ids per 10 ms tick. Alone, 6,000 take about 234 ms, within the 400 ms
    // timeout; six at once share the ticks and need about 1.4 s: they are cut short at the
    // timeout (the body ends without its final chunk, which clients report as incomplete)
    // and stop taking ids.
    let s = start(Config {
        max_count: 100_000,
        timeout: Duration::from_millis(400),
        in_process: true,
        ..config(&["sonyflake"])
    });
    let addr = s.addr;
    let t = Instant::now();
    let batches: Vec<_> = (0..6)
        .map(|_| std::thread::spawn(move || get(addr, "/v1/ids/sonyflake?count=6000", &[])))
        .collect();
    let mut cut = 0;
    for b in batches {
        let r = b.join().unwrap();
        // On a loaded machine a batch may not have sent its head before the timeout: then it
        // is answered 503 (timed out) instead of cut mid-body; either way it stopped.
        if r.status == 503 {
            assert!(String::from_utf8_lossy(&r.body).contains("took longer than 400 ms"));
            cut += 1;
            continue;
        }
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        if !r.complete {
            cut += 1;
            assert!(r.body.starts_with(b"{\"ids\":[\""));
        }
    }
    assert!(cut >= 1, "no batch was cut at the timeout");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // The cut batches stopped: the scheme's ticks are free again at once.
    let issued = issued_settled(s.addr, "sonyflake");
    assert!(issued < 36_000, "{issued}");
    let t = Instant::now();
    assert_eq!(
        get(s.addr, "/v1/ids/sonyflake?count=2000", &[]).ids().len(),
        2000
    );
    assert!(
        t.elapsed() < Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn a_batch_the_scheme_cannot_issue_within_the_timeout_is_refused_before_it_starts() {
    // 100,000 Sonyflake ids take at least 3.9 s: with a 150 ms timeout the request is refused
    // at once, and takes no id (40 such requests tied the scheme up for about 156 s before).
    let s = start(Config {
        max_count: 100_000,
        timeout: Duration::from_millis(150),
        in_process: true,
        ..config(&["sonyflake"])
    });
    let t = Instant::now();
    let r = get(s.addr, "/v1/ids/sonyflake?count=100000", &[]);
    assert_eq!(r.status, 503, "{}", r.text());
    let e = r.error();
    assert!(e.contains("take at least 3907 ms"), "{e}");
    assert!(e.contains("ask for at most 3840"), "{e}");
    assert!(
        t.elapsed() < Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        get(s.addr, "/v1/ids/sonyflake?count=2000", &[]).ids().len(),
        2000
    );
}

#[test]
fn hypers_own_431_and_414_are_documented_as_they_are() {
    let s = start(config(&["uuid7"]));
    let api = get(s.addr, "/openapi.json", &[]).json();
    let head = &api["paths"]["/v1/ids/{scheme}"]["head"]["responses"]["405"];
    assert_eq!(
        head["headers"]["Allow"]["schema"]["enum"][0], "GET",
        "{head}"
    );
    let info = api["info"]["description"].as_str().unwrap();
    for says in [
        "431",
        "100 header fields",
        "417792 bytes",
        "65534 bytes",
        "empty body",
    ] {
        assert!(info.contains(says), "{says}: {info}");
    }
    let too_large = &api["components"]["responses"]["HeadersTooLarge"];
    assert!(too_large["content"].is_null(), "no body: {too_large}");

    // More than 100 header fields: hyper's 431, with an empty body, as documented.
    let many: Vec<(String, String)> = (0..101).map(|i| (format!("x-h{i}"), "1".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = get(s.addr, "/v1/ids/uuid7", &many);
    assert_eq!(r.status, 431);
    assert!(r.body.is_empty(), "{r:?}");
    // A request target over 65534 bytes: hyper's 414, with an empty body.
    let r = get(
        s.addr,
        &format!("/v1/ids/uuid7?x={}", "a".repeat(70_000)),
        &[],
    );
    assert_eq!(r.status, 414);
    assert!(r.body.is_empty(), "{r:?}");
    // Below hyper's limits the service answers, in JSON.
    let r = get(
        s.addr,
        &format!("/v1/ids/uuid7?x={}", "a".repeat(3000)),
        &[],
    );
    assert_eq!(r.status, 414);
    assert!(r.error().contains("2048"));
}

#[test]
fn request_ids_are_kept_when_fit_and_made_otherwise() {
    let s = start(config(&["uuid7"]));
    let id = |r: &common::Res| r.header("x-request-id").map(str::to_string);
    // A client's id is sent back, on answers and errors alike.
    for path in ["/v1/ids/uuid7", "/nope", "/v1/ids/uuid7?count=0"] {
        let r = get(s.addr, path, &[("X-Request-Id", "abc-DEF_1.2:3/4+5=6@x")]);
        assert_eq!(id(&r).as_deref(), Some("abc-DEF_1.2:3/4+5=6@x"), "{path}");
    }
    let long = format!("/v1/ids/uuid7?x={}", "a".repeat(3000));
    let r = get(s.addr, &long, &[("X-Request-Id", "kept-on-414")]);
    assert_eq!((r.status, id(&r).as_deref()), (414, Some("kept-on-414")));
    // Without one, or with one unfit to log, a uuid7 is made.
    let long_id = "x".repeat(129);
    let mut made = HashSet::new();
    for headers in [
        &[][..],
        &[("X-Request-Id", "has space")][..],
        &[("X-Request-Id", "semi;colon")][..],
        &[("X-Request-Id", "quote\"d")][..],
        &[("X-Request-Id", long_id.as_str())][..],
        &[("X-Request-Id", "one"), ("X-Request-Id", "two")][..],
    ] {
        let r = get(s.addr, "/v1/ids/uuid7", headers);
        assert_eq!(r.status, 200);
        let v = id(&r).unwrap_or_else(|| panic!("no request id for {headers:?}"));
        let parsed = idforge::text::parse(&v, 128, Some(idforge::text::Format::Uuid))
            .unwrap_or_else(|e| panic!("{v:?} for {headers:?}: {e}"));
        assert_eq!((parsed >> 76) & 0xf, 7, "{v} is not a uuid7");
        assert!(made.insert(v), "a request id made twice");
    }
    // 128 characters are kept.
    let at_limit = "y".repeat(128);
    let r = get(s.addr, "/healthz", &[("X-Request-Id", &at_limit)]);
    assert_eq!(id(&r).as_deref(), Some(at_limit.as_str()));
}

#[test]
fn metrics_count_every_request_by_route_and_status() {
    let s = start(config(&["uuid7"]));
    for i in 0..25 {
        get(s.addr, &format!("/v1/ids/uuid7?count={}", i % 5 + 1), &[]).ids();
    }
    for _ in 0..4 {
        assert_eq!(get(s.addr, "/v1/ids/uuid7?count=zero", &[]).status, 400);
    }
    for _ in 0..3 {
        assert_eq!(get(s.addr, "/healthz", &[]).status, 200);
    }
    assert_eq!(get(s.addr, "/nope", &[]).status, 404);
    let m = get(s.addr, "/metrics", &[]).text();
    // 5 rounds of 1 + 2 + 3 + 4 + 5 ids.
    for line in [
        "idforge_ids_issued_total{scheme=\"uuid7\"} 75",
        "idforge_http_requests_total{route=\"/v1/ids/{scheme}\",status=\"200\"} 25",
        "idforge_http_requests_total{route=\"/v1/ids/{scheme}\",status=\"400\"} 4",
        "idforge_http_requests_total{route=\"/healthz\",status=\"200\"} 3",
        "idforge_http_requests_total{route=\"unmatched\",status=\"404\"} 1",
        "idforge_http_request_duration_seconds_count{route=\"/v1/ids/{scheme}\"} 29",
        "idforge_http_request_duration_seconds_bucket{route=\"/v1/ids/{scheme}\",le=\"+Inf\"} 29",
        "idforge_http_request_duration_seconds_count{route=\"/healthz\"} 3",
        "# TYPE idforge_http_request_duration_seconds histogram",
        "# TYPE idforge_http_requests_total counter",
        "# TYPE idforge_ids_issued_total counter",
        "# TYPE idforge_ready gauge",
    ] {
        assert!(m.lines().any(|l| l == line), "missing {line:?} in\n{m}");
    }
    // The buckets are cumulative and end at the count.
    let buckets: Vec<u64> = m
        .lines()
        .filter(|l| {
            l.starts_with("idforge_http_request_duration_seconds_bucket{route=\"/v1/ids/{scheme}\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(buckets.len(), 13, "{m}");
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    // The scrape itself is counted once it is answered.
    let again = get(s.addr, "/metrics", &[]).text();
    assert!(
        again.contains("idforge_http_requests_total{route=\"/metrics\",status=\"200\"} 1"),
        "{again}"
    );
}

/// Found by an attack on the service: a client that asked for a large batch and then read
/// nothing held the batch (its thread, its frames, its place under --max-batches) and its
/// connection for ever: the timeout was checked only when the connection asked for the next
/// frame, which a blocked write never does. The batch and the connection now end at the
/// timeout.
#[test]
fn a_client_that_reads_nothing_gives_its_batch_place_back_at_the_timeout() {
    use std::io::Read;
    let s = start(Config {
        max_count: 1_000_000,
        max_batches: 1,
        timeout: Duration::from_millis(800),
        in_process: true,
        ..config(&["uuid7"])
    });
    let mut c = stalled(
        s.addr,
        "/v1/ids/uuid7?count=1000000",
        &[("Accept", "application/octet-stream")],
    );
    // Its place is taken while it stalls...
    let r = get(s.addr, "/v1/ids/uuid7?count=100", &[]);
    assert_eq!(r.status, 503, "{}", r.text());
    // ... and given back at the timeout, although the client still reads nothing.
    large_batch_served_within(s.addr, Duration::from_secs(5)).expect(
        "a client that reads nothing still holds the only batch place 5 s after its request's timeout of 800 ms",
    );
    // Its connection was closed, its body short of its length.
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    assert!(rest.len() < 16_000_000, "{}", rest.len());
    drop(c);
}

/// Found by an attack on the service: small Sonyflake batches (a 10 ms tick) slept on the async
/// workers, and under hundreds of them /healthz took seconds. They are made on the blocking pool.
#[test]
fn small_batches_of_a_coarse_tick_do_not_hold_up_the_async_workers() {
    let s = start(Config {
        in_process: true,
        ..config(&["sonyflake"])
    });
    let addr = s.addr;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load: Vec<_> = (0..96)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    assert_eq!(get(addr, "/v1/ids/sonyflake?count=64", &[]).status, 200);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        let t = Instant::now();
        assert_eq!(get(addr, "/healthz", &[]).status, 200);
        worst = worst.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    assert!(
        worst < Duration::from_millis(250),
        "/healthz took {worst:?} beside 96 clients of small Sonyflake batches"
    );
}

/// A kubelet's `httpGet` probe cannot send a token from a Secret: with tokens set, /readyz
/// answered every probe 401, and the production configuration needed curl in the image. It now
/// answers without a token, ready or not, keeping the reasons (state file paths, etcd leases)
/// for requests with the token; a wrong token is still refused.
#[test]
fn readyz_answers_probes_without_a_token_and_keeps_the_reasons_for_the_token() {
    let s = start(Config {
        node: Some(34),
        tokens: vec!["probe-test-token".into()],
        ..config(&["snowflake"])
    });
    assert_eq!(get(s.addr, "/readyz", &[]).status, 200);
    let (_, path) = s.app.state_files().into_iter().next().unwrap();
    std::fs::remove_file(&path).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let auth = [("Authorization", "Bearer probe-test-token")];
    assert_eq!(get(s.addr, "/v1/ids/snowflake", &auth).status, 503);
    let r = get(s.addr, "/readyz", &[]);
    assert_eq!(r.status, 503);
    assert!(!r.error().contains("snowflake"), "{}", r.error());
    assert!(r.error().contains("send the bearer token"), "{}", r.error());
    let r = get(s.addr, "/readyz", &auth);
    assert_eq!(r.status, 503);
    assert!(r.error().contains("snowflake"), "{}", r.error());
    let r = get(s.addr, "/readyz", &[("Authorization", "Bearer wrong")]);
    assert_eq!(r.status, 403);
}

#[test]
fn a_parameter_given_twice_is_refused() {
    let s = start(config(&["uuid7"]));
    // The last one won: a proxy that checked the first count was bypassed.
    let r = get(s.addr, "/v1/ids/uuid7?count=5&count=6", &[]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.error().contains("\"count\" is given twice"),
        "{}",
        r.error()
    );
    assert_eq!(get(s.addr, "/v1/ids/uuid7?count=5", &[]).ids().len(), 5);
}

#[test]
fn ksuid_ids_are_served_as_text_and_as_20_bytes() {
    let s = start(config(&["ksuid"]));
    let ids = get(s.addr, "/v1/ids/ksuid?count=100", &[]).ids();
    assert_eq!(ids.len(), 100);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for id in &ids {
        let k: idforge::schemes::ksuid::Ksuid = id.parse().unwrap();
        assert_eq!(k.to_string(), *id);
    }
    let r = get(
        s.addr,
        "/v1/ids/ksuid?count=3",
        &[("Accept", "application/octet-stream")],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 60, "3 KSUIDs of 20 bytes");
    let r = get(s.addr, "/v1/ids/ksuid?format=hex", &[]);
    assert_eq!(r.status, 400);
    let r = get(s.addr, &format!("/v1/inspect/{}", ids[0]), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["scheme"], "ksuid");
}

#[test]
fn typeid_ids_take_their_prefix_from_the_query() {
    let s = start(config(&["typeid", "uuid7"]));
    let ids = get(s.addr, "/v1/ids/typeid?count=3&prefix=user", &[]).ids();
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for id in &ids {
        let t: idforge::schemes::typeid::TypeId = id.parse().unwrap();
        assert_eq!(t.prefix(), "user");
        assert_eq!((t.uuid() >> 76) & 0xF, 7, "a UUIDv7: {id}");
    }
    // Without a prefix, the bare suffix; as text lines; streamed (more than 64).
    let bare = get(s.addr, "/v1/ids/typeid", &[]).ids();
    assert_eq!(bare[0].len(), 26);
    let lines = get(
        s.addr,
        "/v1/ids/typeid?count=500&prefix=order_item",
        &[("Accept", "text/plain")],
    );
    assert_eq!(lines.status, 200);
    let body = lines.text();
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 500);
    assert!(lines
        .iter()
        .all(|l| l.len() == 11 + 26 && l.starts_with("order_item_")));
    // Any 128-bit scheme as TypeID text.
    let u = get(s.addr, "/v1/ids/uuid7?format=typeid&prefix=order", &[]).ids();
    assert!(u[0].starts_with("order_0"), "{u:?}");
    // Prefixes the spec refuses, and a prefix for other text: 400, nothing issued.
    for bad in [
        "/v1/ids/typeid?prefix=User",
        "/v1/ids/typeid?prefix=user1",
        "/v1/ids/typeid?prefix=_user",
        "/v1/ids/typeid?prefix=user&format=uuid",
        "/v1/ids/uuid7?prefix=user",
    ] {
        let r = get(s.addr, bad, &[]);
        assert_eq!(r.status, 400, "{bad}");
        assert!(r.error().contains("prefix"), "{bad}: {}", r.error());
    }
    // Inspected with and without the scheme.
    let r = get(s.addr, &format!("/v1/inspect/{}", ids[0]), &[]);
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(
        (j["scheme"].as_str(), j["prefix"].as_str()),
        (Some("typeid"), Some("user"))
    );
    assert!(j["unix_ms"].as_u64().is_some());
    let r = get(
        s.addr,
        &format!("/v1/inspect/{}?scheme=typeid", bare[0]),
        &[],
    );
    assert_eq!(r.json()["prefix"], "");
}

#[test]
fn inspect_reads_every_uuid_version() {
    let s = start(config(&["uuid7"]));
    // RFC 9562 Appendix A.1: a version 1 UUID.
    let j = get(
        s.addr,
        "/v1/inspect/c232ab00-9414-11ec-b3c8-9f6bdeced846",
        &[],
    )
    .json();
    assert_eq!(j["scheme"], "uuid-v1");
    assert_eq!(j["unix_ms"], 1_645_557_742_000u64);
    assert_eq!(
        (j["clock_seq"].as_u64(), j["node"].as_str()),
        (Some(0x33c8), Some("9f6bdeced846"))
    );
    let j = get(
        s.addr,
        "/v1/inspect/919108f7-52d1-4320-9bac-f847db4148a8",
        &[],
    )
    .json();
    assert_eq!(j["scheme"], "uuid-v4");
    assert!(
        j.get("unix_ms").is_none() && j["note"].as_str().unwrap().contains("random"),
        "{j}"
    );
}

#[test]
fn uuid4_is_served() {
    let s = start(config(&["uuid4"]));
    let ids = get(s.addr, "/v1/ids/uuid4?count=100", &[]).ids();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 100);
    assert!(
        ids.iter()
            .all(|u| u.len() == 36 && u.as_bytes()[14] == b'4'),
        "{ids:?}"
    );
    let j = get(s.addr, &format!("/v1/inspect/{}?scheme=uuid4", ids[0]), &[]).json();
    assert_eq!(j["scheme"], "uuid4");
    let facts = get(s.addr, "/v1/schemes", &[]).json();
    let u4 = facts
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "uuid4")
        .unwrap();
    assert_eq!(u4["order"], "none");
}
