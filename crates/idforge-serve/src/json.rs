//! The JSON of decoded ids and of the catalog, shared by the command line (`idforge inspect
//! --json`, `idforge schemes --json`) and the service (`/v1/inspect`, `/v1/schemes`), so the two
//! never drift apart.

use idforge::schemes::catalog;
use idforge::text::{self, Format};
use idforge::Decoded;
use serde_json::{json, Map, Value};

/// Whether a number is exact as a JSON number in every reader (doubles hold integers to 2^53).
fn json_safe(n: u128) -> bool {
    n <= (1u128 << 53)
}

/// A decoded id as JSON: ids as strings, `unix_ms` and `unix_ns` as integers, fields wider than
/// 53 bits as strings. `hint` rewrites the library's hint for the reader (flags for the command
/// line, query parameters for the service).
pub fn decoded(d: &Decoded, hint: impl Fn(&str) -> String) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(d.input));
    m.insert("scheme".into(), json!(d.scheme));
    m.insert(
        "value".into(),
        json!(text::encode(d.value, d.bits, Format::Dec).to_string()),
    );
    m.insert("unix_ms".into(), json!(d.unix_ms() as u64));
    m.insert("unix_ns".into(), json!(d.unix_ns as u64));
    m.insert("time".into(), json!(d.time));
    let num = |n: u128| -> Value {
        if json_safe(n) {
            json!(n as u64)
        } else {
            json!(n.to_string())
        }
    };
    if let Some(node) = d.node {
        if d.scheme == "uprotocol-v8" {
            m.insert("rand_b".into(), json!(format!("{node:016x}")));
        } else if d.scheme == "nanots-host" {
            m.insert("host".into(), num(node));
        } else if d.scheme == "nanots" {
            m.insert("tag".into(), num(node));
        } else {
            m.insert("node".into(), num(node));
        }
    }
    if let Some(c) = d.counter {
        m.insert("counter".into(), num(c));
    }
    if let Some(pid) = d.pid {
        m.insert("pid".into(), json!(pid));
    }
    if let Some(mac) = &d.mac {
        m.insert("mac".into(), json!(mac));
    }
    if let Some(r) = d.random {
        m.insert("random".into(), json!(format!("{r:x}")));
    }
    if let Some(r) = d.rand_a {
        m.insert("rand_a".into(), json!(format!("{r:03x}")));
    }
    if let Some(r) = d.rand_b {
        m.insert("rand_b".into(), json!(format!("{r:016x}")));
    }
    if let Some(v) = d.version {
        m.insert("version".into(), json!(v));
    }
    if let Some(v) = d.variant {
        m.insert("variant".into(), json!(format!("0b{v:02b}")));
    }
    if !d.layouts.is_empty() {
        m.insert("layouts".into(), json!(d.layouts));
    }
    if let Some(h) = d.hint() {
        m.insert("hint".into(), json!(hint(&h)));
    }
    Value::Object(m)
}

/// The catalog's facts as a JSON array (counts wider than 53 bits as strings).
pub fn schemes() -> Value {
    let list: Vec<Value> = catalog::facts()
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "bits": f.bits,
                "ids_per_tick": f.ids_per_tick.to_string(),
                "ids_per_second": f.ids_per_second,
                "nodes": f.nodes.map(|n| n.to_string()),
                "end_year": f.end_year,
                "tick_ns": f.tick_ns,
                "epoch": f.epoch,
                "layout": f.diagram,
                "summary": f.summary,
            })
        })
        .collect();
    Value::Array(list)
}
