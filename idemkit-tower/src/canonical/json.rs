//! The canonical form of a JSON body: parsed, then written compactly with every object's
//! keys sorted, so that key order and insignificant whitespace do not change a
//! fingerprint.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// `body` parsed as JSON and written back with sorted keys, no whitespace, non-ASCII
/// characters kept as UTF-8; `None` if `body` is not JSON (the caller then uses the raw
/// bytes). Parsing is bounded: the parser refuses nesting deeper than 128 levels.
///
/// Numbers are written as the parser read them (integers exactly, other numbers by the
/// shortest representation of their `f64`), so `1` and `1.0` differ, as do `1e2` and
/// `100`; strings are compared after unescaping, so `"\u0041"` and `"A"` agree.
pub(crate) fn canonical_json(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    Canonical(&mut out).deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(out)
}

/// Writes the canonical form of one JSON value at the end of a buffer, as it is parsed:
/// no tree of values is built, and nested values go into the same buffer (an object's
/// members are put in order once all are read).
struct Canonical<'a>(&'a mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Canonical<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Writes a scalar as JSON. Scalars from the parser always serialize (numbers are
/// finite, strings are UTF-8) and a `Vec` never fails a write.
fn write_scalar(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    let _ = serde_json::to_writer(out, value);
}

impl<'de> Visitor<'de> for Canonical<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<(), E> {
        self.0
            .extend_from_slice(if value { &b"true"[..] } else { b"false" });
        Ok(())
    }

    fn visit_i64<E>(self, value: i64) -> Result<(), E> {
        write_scalar(self.0, &value);
        Ok(())
    }

    fn visit_u64<E>(self, value: u64) -> Result<(), E> {
        write_scalar(self.0, &value);
        Ok(())
    }

    fn visit_f64<E>(self, value: f64) -> Result<(), E> {
        write_scalar(self.0, &value);
        Ok(())
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        write_scalar(self.0, &value);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'[');
        let mut first = true;
        loop {
            let comma = out.len();
            if !first {
                out.push(b',');
            }
            if items.next_element_seed(Canonical(out))?.is_none() {
                out.truncate(comma);
                break;
            }
            first = false;
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        let out = self.0;
        // Each member's value is written after the others, then the members are put in
        // order of their names (bytewise) into the place where the object started.
        let start = out.len();
        let mut entries: Vec<(Cow<'de, str>, usize, usize)> = Vec::new();
        while let Some(name) = members.next_key_seed(Name)? {
            let from = out.len();
            members.next_value_seed(Canonical(out))?;
            entries.push((name, from, out.len()));
        }
        // Stable: of members sharing a name, the last one written stays last, and wins.
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let values = out.split_off(start);
        out.push(b'{');
        let mut first = true;
        for (index, (name, from, to)) in entries.iter().enumerate() {
            if entries
                .get(index + 1)
                .is_some_and(|(next, ..)| next == name)
            {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            write_scalar(out, &name.as_ref());
            out.push(b':');
            out.extend_from_slice(&values[from - start..to - start]);
        }
        out.push(b'}');
        Ok(())
    }
}

/// An object member's name, borrowed from the body when it holds no escape.
struct Name;

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(name))
    }

    fn visit_str<E>(self, name: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(name.to_owned()))
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
    fn escaped_member_names_are_unescaped_then_sorted() {
        assert_eq!(canonical(r#"{"\u0062":1,"a":2}"#), r#"{"a":2,"b":1}"#);
        assert_eq!(canonical(r#"{"b":1,"\u0062":2}"#), r#"{"b":2}"#);
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
        assert_eq!(canonical_json(b"{} trailing"), None);
        assert_eq!(canonical_json(b"1 2"), None);
        // Nesting past the parser's limit is refused rather than recursed into.
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(canonical_json(deep.as_bytes()), None);
    }
}
