//! The canonical form of a JSON body: parsed, then written compactly with every object's
//! keys sorted, so that key order and insignificant whitespace do not change a
//! fingerprint.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// `body` parsed as JSON and written back with sorted keys, no whitespace, non-ASCII
/// characters kept as UTF-8; `None` if `body` is not JSON (the caller then uses the raw
/// bytes). Parsing is bounded: the parser refuses nesting deeper than 128 levels.
///
/// Numbers are written as the parser read them (integers exactly, other numbers by the
/// shortest representation of their `f64`), so `1` and `1.0` differ, as do `1e2` and
/// `100`; strings are compared after unescaping, so `"\u0041"` and `"A"` agree.
pub(crate) fn canonical_json(body: &[u8]) -> Option<Vec<u8>> {
    serde_json::from_slice::<Canonical>(body)
        .ok()
        .map(|canonical| canonical.0)
}

/// A JSON value in canonical form, written as it is parsed (no tree of values is
/// built: only an object's members are held, to be sorted).
struct Canonical(Vec<u8>);

impl<'de> Deserialize<'de> for Canonical {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Canonical, D::Error> {
        deserializer.deserialize_any(CanonicalVisitor)
    }
}

struct CanonicalVisitor;

/// Writes a scalar as JSON. Scalars from the parser always serialize (numbers are
/// finite, strings are UTF-8).
fn scalar(value: &impl serde::Serialize) -> Canonical {
    Canonical(serde_json::to_vec(value).unwrap_or_default())
}

impl<'de> Visitor<'de> for CanonicalVisitor {
    type Value = Canonical;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Canonical, E> {
        Ok(Canonical(
            if value { &b"true"[..] } else { b"false" }.to_vec(),
        ))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Canonical, E> {
        Ok(scalar(&value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Canonical, E> {
        Ok(scalar(&value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Canonical, E> {
        Ok(scalar(&value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Canonical, E> {
        Ok(scalar(&value))
    }

    fn visit_unit<E>(self) -> Result<Canonical, E> {
        Ok(Canonical(b"null".to_vec()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Canonical, A::Error> {
        let mut out = vec![b'['];
        while let Some(Canonical(item)) = items.next_element::<Canonical>()? {
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(&item);
        }
        out.push(b']');
        Ok(Canonical(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Canonical, A::Error> {
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        while let Some((name, Canonical(value))) = members.next_entry::<String, Canonical>()? {
            entries.push((name, value));
        }
        // Stable: of members sharing a name, the last one written stays last, and wins.
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut out = vec![b'{'];
        for (index, (name, value)) in entries.iter().enumerate() {
            if entries.get(index + 1).is_some_and(|(next, _)| next == name) {
                continue;
            }
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(&scalar(name).0);
            out.push(b':');
            out.extend_from_slice(value);
        }
        out.push(b'}');
        Ok(Canonical(out))
    }
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
        assert_eq!(
            canonical(r#"{"b":0,"a":1,"b":3,"a":2}"#),
            r#"{"a":2,"b":3}"#
        );
    }

    #[test]
    fn scalars_and_nesting_are_written_compactly() {
        assert_eq!(
            canonical(
                r#" [ true , false , null , -1 , 18446744073709551615 , 2.5e3 , "" , [ ] , { } ] "#
            ),
            r#"[true,false,null,-1,18446744073709551615,2500.0,"",[],{}]"#
        );
        assert_eq!(
            canonical(r#"{"z":{"b":[{"y":1,"x":2}],"a":0}}"#),
            r#"{"z":{"a":0,"b":[{"x":2,"y":1}]}}"#
        );
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
