//! The JSON of decoded ids and of the catalog, shared by the command line (`idforge inspect
//! --json`, `idforge schemes --json`) and the service (`/v1/inspect`, `/v1/schemes`), so the two
//! never drift apart.

use idforge::schemes::catalog;
use idforge::Decoded;
use serde_json::{json, Value};

/// A decoded id as JSON: the library's serialisation of [`Decoded`] (ids as strings, `unix_ms`
/// and `unix_ns` as integers, fields wider than 53 bits as strings, each scheme's parts under
/// their own names). `hint` rewrites the library's hint for the reader (flags for the command
/// line, query parameters for the service).
pub fn decoded(d: &Decoded, hint: impl Fn(&str) -> String) -> Value {
    let mut v = serde_json::to_value(d).unwrap_or_else(|e| json!({ "error": e.to_string() }));
    if let Some(h) = v.get_mut("hint") {
        if let Some(text) = h.as_str() {
            *h = Value::String(hint(text));
        }
    }
    v
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
                // uuid4 has no tick to count and no time field to run out: null.
                // A count like the others: a decimal string (a 128-bit layout's rate is past
                // what a JSON number holds exactly).
                "ids_per_second": per_second(f),
                "nodes": f.nodes.map(|n| n.to_string()),
                "end_year": (f.end_year != catalog::NEVER).then_some(f.end_year),
                "tick_ns": f.tick_ns,
                "epoch": f.epoch,
                "layout": f.diagram,
                "summary": f.summary,
                "fits_i64": match f.signed64 {
                    idforge::Signed64::Wider => Value::Null,
                    s => Value::String(s.to_string()),
                },
                "order": f.order,
            })
        })
        .collect();
    Value::Array(list)
}

/// Whole ids per second: exact where the tick divides a second (every preset), else rounded
/// down from the float; `None` without a tick (uuid4).
fn per_second(f: &catalog::Facts) -> Option<String> {
    if !f.ids_per_second.is_finite() {
        return None;
    }
    let exact = (f.tick_ns > 0 && 1_000_000_000 % f.tick_ns == 0)
        .then(|| {
            f.ids_per_tick
                .checked_mul(u128::from(1_000_000_000 / f.tick_ns))
        })
        .flatten();
    Some(match exact {
        Some(n) => n.to_string(),
        None => format!("{:.0}", f.ids_per_second.floor()),
    })
}
