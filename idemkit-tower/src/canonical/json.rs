//! The canonical form of a JSON body: parsed, then written compactly with every object's
//! keys sorted, so that key order and insignificant whitespace do not change a
//! fingerprint.

use serde_json::Value;

/// `body` parsed as JSON and written back with sorted keys, no whitespace, non-ASCII
/// characters kept as UTF-8; `None` if `body` is not JSON (the caller then uses the raw
/// bytes). Parsing is bounded: the parser refuses nesting deeper than 128 levels.
///
/// Numbers are written as the parser read them (integers exactly, other numbers by the
/// shortest representation of their `f64`), so `1` and `1.0` differ, as do `1e2` and
/// `100`; strings are compared after unescaping, so `"\u0041"` and `"A"` agree.
pub(crate) fn canonical_json(body: &[u8]) -> Option<Vec<u8>> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let mut out = Vec::with_capacity(body.len());
    write_sorted(&value, &mut out);
    Some(out)
}

fn write_sorted(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            // Sorted here rather than trusting the map's own order: another crate in a
            // build can turn on serde_json's insertion-order maps.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (index, (name, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(name.clone()), out);
                out.push(b':');
                write_sorted(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_sorted(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing a scalar `Value` into a `Vec` cannot fail: no I/O, no map keys to check.
    serde_json::to_writer(&mut *out, value).expect("a JSON scalar always serializes");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        String::from_utf8(canonical_json(text.as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        assert_eq!(
            canonical(r#"{"b": 1, "a": [1, 2]}"#),
            r#"{"a":[1,2],"b":1}"#
        );
        assert_eq!(
            canonical("{ \"a\" :\n{\"z\":null, \"y\":true} }"),
            r#"{"a":{"y":true,"z":null}}"#
        );
    }

    #[test]
    fn array_order_and_values_do_matter() {
        assert_ne!(canonical("[1,2]"), canonical("[2,1]"));
        assert_ne!(canonical(r#"{"name":"x"}"#), canonical(r#"{"name":"y"}"#));
        assert_ne!(canonical(r#"{"a":1}"#), canonical(r#"{"a":1.0}"#));
    }

    #[test]
    fn strings_are_compared_unescaped_and_written_as_utf8() {
        assert_eq!(canonical(r#""\u0041""#), canonical(r#""A""#));
        assert_eq!(canonical(r#"{"k":"caf\u00e9"}"#), "{\"k\":\"café\"}");
        assert_eq!(canonical(r#""a\"b\\c\n""#), r#""a\"b\\c\n""#);
    }

    #[test]
    fn keys_sort_by_code_point() {
        assert_eq!(
            canonical(r#"{"é":1,"z":2,"Z":3,"a":4}"#),
            "{\"Z\":3,\"a\":4,\"z\":2,\"é\":1}"
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        assert_eq!(canonical(r#"{"a":1,"a":2}"#), r#"{"a":2}"#);
    }

    #[test]
    fn what_is_not_json_has_no_canonical_form() {
        assert_eq!(canonical_json(b"{\"a\":"), None);
        assert_eq!(canonical_json(b"not json"), None);
        assert_eq!(canonical_json(b"\xff"), None);
        assert_eq!(canonical_json(b"[NaN]"), None);
        // Nesting past the parser's limit is refused rather than recursed into.
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(canonical_json(deep.as_bytes()), None);
    }
}
