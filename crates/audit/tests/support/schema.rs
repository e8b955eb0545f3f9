//! The JSON report's schema as the audit README documents it, and a check of
//! a real report against it (R-AUD-9). Shared by the audit's and the CLI's
//! tests (`#[path]`).
//!
//! The README's block after `<!-- schema: audit --json -->` is a JSON object
//! whose leaves are alternatives separated by ` | `: the words `string`,
//! `integer`, `hex` (64 lowercase hex digits), `null`, or a literal string.
//! An array holds the schema of its items. A report must have exactly the
//! documented keys.

use serde_json::Value;

const MARKER: &str = "<!-- schema: audit --json -->";

/// The documented schema, read from the README at `readme`.
pub fn documented(readme: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(readme).unwrap();
    let after = &text[text.find(MARKER).expect("the README documents the schema") + MARKER.len()..];
    let start = after.find("```json\n").expect("a json block after the marker") + "```json\n".len();
    let end = after[start..].find("```").unwrap() + start;
    serde_json::from_str(&after[start..end]).expect("the documented schema is JSON")
}

/// Every way `actual` departs from `schema`, by path.
pub fn departures(schema: &Value, actual: &Value, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    match schema {
        Value::Object(fields) => match actual.as_object() {
            Some(got) => {
                for (key, sub) in fields {
                    match got.get(key) {
                        Some(value) => out.extend(departures(sub, value, &format!("{path}.{key}"))),
                        None => out.push(format!("{path}.{key} is missing")),
                    }
                }
                out.extend(
                    got.keys().filter(|key| !fields.contains_key(*key)).map(|k| format!("{path}.{k} is undocumented")),
                );
            }
            None => out.push(format!("{path} is not an object: {actual}")),
        },
        Value::Array(items) => match actual.as_array() {
            Some(got) => {
                for (i, value) in got.iter().enumerate() {
                    out.extend(departures(&items[0], value, &format!("{path}[{i}]")));
                }
            }
            None => out.push(format!("{path} is not an array: {actual}")),
        },
        Value::String(alternatives) => {
            let fits = alternatives.split(" | ").any(|alt| match alt {
                "string" => actual.is_string(),
                "integer" => actual.is_u64(),
                "null" => actual.is_null(),
                "hex" => actual.as_str().is_some_and(|s| {
                    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                }),
                literal => actual.as_str() == Some(literal),
            });
            if !fits {
                out.push(format!("{path} is {actual}, not {alternatives}"));
            }
        }
        other => panic!("schema leaf {other} at {path}"),
    }
    out
}

/// Panics with every departure of `actual` from the schema in `readme`.
pub fn assert_matches(readme: &std::path::Path, actual: &Value) {
    let departures = departures(&documented(readme), actual, "$");
    assert!(
        departures.is_empty(),
        "the report departs from the documented schema:\n{}\n{actual:#}",
        departures.join("\n")
    );
}
