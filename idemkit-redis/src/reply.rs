//! The scripts' replies, read into typed values (see the reply line at the top of each
//! script).

use bytes::Bytes;
use idemkit_core::ClaimToken;
use redis::Value;

/// A reply that is not what the script returns: a bug, or not our script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadReply(pub(crate) String);

fn bad(what: impl Into<String>) -> BadReply {
    BadReply(what.into())
}

/// A record as stored: instants in the server's microseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) token: ClaimToken,
    pub(crate) fingerprint: String,
    pub(crate) fingerprint_version: u32,
    pub(crate) claimed_at: u64,
    pub(crate) lease_until: u64,
    pub(crate) gone_at: u64,
    /// Present exactly when the record is completed.
    pub(crate) result: Option<StoredResult>,
}

/// A completed record's result, as stored: the headers still encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredResult {
    pub(crate) completed_at: u64,
    pub(crate) status: u16,
    pub(crate) headers: Bytes,
    pub(crate) body: Bytes,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimReply {
    /// The key is ours: fresh, or `reclaimed` from a lapsed lease. `replaced` says why a
    /// value at the key was not a record, if it was not.
    Won {
        reclaimed: bool,
        replaced: Option<String>,
    },
    /// Another claim's lease is live.
    InFlight(Stored),
    /// The completed record, to replay.
    Completed(Stored),
}

/// What a read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadReply {
    /// No record, or one that is gone; `corrupt` says why a value at the key was not a
    /// record, if it was not.
    Absent { corrupt: Option<String> },
    /// The record (claimed or completed).
    Present(Stored),
}

/// Reads the reply of the claim script, and the server's `now` it carries.
pub(crate) fn claim(value: Value) -> Result<(ClaimReply, u64), BadReply> {
    let mut items = Items::of(value)?;
    let outcome = items.text()?;
    let now = items.number()?;
    let note = items.text()?;
    let reply = match outcome.as_str() {
        "new" | "reclaimed" => ClaimReply::Won {
            reclaimed: outcome == "reclaimed",
            replaced: (!note.is_empty()).then_some(note),
        },
        "in_flight" => ClaimReply::InFlight(items.stored(false)?),
        "completed" => ClaimReply::Completed(items.stored(true)?),
        other => return Err(bad(format!("claim outcome {other:?}"))),
    };
    items.end()?;
    Ok((reply, now))
}

/// Reads the reply of the read script, and the server's `now` it carries.
pub(crate) fn read(value: Value) -> Result<(ReadReply, u64), BadReply> {
    let mut items = Items::of(value)?;
    let state = items.text()?;
    let now = items.number()?;
    let note = items.text()?;
    let reply = match state.as_str() {
        "absent" => ReadReply::Absent {
            corrupt: (!note.is_empty()).then_some(note),
        },
        "claimed" => ReadReply::Present(items.stored(false)?),
        "completed" => ReadReply::Present(items.stored(true)?),
        other => return Err(bad(format!("read state {other:?}"))),
    };
    items.end()?;
    Ok((reply, now))
}

/// Reads the reply of complete, release or renew: whether it took effect, and the
/// server's `now`.
pub(crate) fn write(value: Value) -> Result<(bool, u64), BadReply> {
    let mut items = Items::of(value)?;
    let done = match items.number()? {
        0 => false,
        1 => true,
        other => return Err(bad(format!("write result {other}"))),
    };
    let now = items.number()?;
    items.end()?;
    Ok((done, now))
}

/// The elements of an array reply, taken in order.
struct Items(std::vec::IntoIter<Value>);

impl Items {
    fn of(value: Value) -> Result<Items, BadReply> {
        match value {
            Value::Array(items) => Ok(Items(items.into_iter())),
            other => Err(bad(format!("not an array: {other:?}"))),
        }
    }

    fn next(&mut self) -> Result<Value, BadReply> {
        self.0.next().ok_or_else(|| bad("too few elements"))
    }

    fn end(mut self) -> Result<(), BadReply> {
        match self.0.next() {
            None => Ok(()),
            Some(extra) => Err(bad(format!("an extra element: {extra:?}"))),
        }
    }

    fn bytes(&mut self) -> Result<Bytes, BadReply> {
        match self.next()? {
            Value::BulkString(bytes) => Ok(Bytes::from(bytes)),
            Value::SimpleString(text) => Ok(Bytes::from(text)),
            other => Err(bad(format!("not a string: {other:?}"))),
        }
    }

    fn text(&mut self) -> Result<String, BadReply> {
        String::from_utf8(self.bytes()?.into()).map_err(|_| bad("text that is not UTF-8"))
    }

    fn number(&mut self) -> Result<u64, BadReply> {
        match self.next()? {
            Value::Int(n) => u64::try_from(n).map_err(|_| bad(format!("a negative number {n}"))),
            Value::BulkString(bytes) => std::str::from_utf8(&bytes)
                .ok()
                .and_then(|text| text.parse().ok())
                .ok_or_else(|| bad("not a number")),
            other => Err(bad(format!("not a number: {other:?}"))),
        }
    }

    /// The record fields, in the order the scripts list them.
    fn stored(&mut self, completed: bool) -> Result<Stored, BadReply> {
        let token = self
            .text()?
            .parse()
            .map_err(|_| bad("a malformed claim token"))?;
        let fingerprint = self.text()?;
        let fingerprint_version =
            u32::try_from(self.number()?).map_err(|_| bad("a fingerprint version beyond u32"))?;
        let claimed_at = self.number()?;
        let lease_until = self.number()?;
        let gone_at = self.number()?;
        let result = if completed {
            Some(StoredResult {
                completed_at: self.number()?,
                status: u16::try_from(self.number()?).map_err(|_| bad("a status beyond u16"))?,
                headers: self.bytes()?,
                body: self.bytes()?,
            })
        } else {
            None
        };
        Ok(Stored {
            token,
            fingerprint,
            fingerprint_version,
            claimed_at,
            lease_until,
            gone_at,
            result,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    fn array(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|item| bulk(item)).collect())
    }

    #[test]
    fn claim_replies_read_into_outcomes() {
        let (won, now) = claim(array(&["new", "100", ""])).unwrap();
        assert_eq!(
            won,
            ClaimReply::Won {
                reclaimed: false,
                replaced: None
            }
        );
        assert_eq!(now, 100);
        let (won, _) = claim(array(&["reclaimed", "100", ""])).unwrap();
        assert!(matches!(
            won,
            ClaimReply::Won {
                reclaimed: true,
                ..
            }
        ));
        let (won, _) = claim(array(&["new", "100", "a string value"])).unwrap();
        assert_eq!(
            won,
            ClaimReply::Won {
                reclaimed: false,
                replaced: Some("a string value".into())
            }
        );
        let (busy, _) = claim(array(&[
            "in_flight",
            "100",
            "",
            TOKEN,
            "fp",
            "3",
            "90",
            "130",
            "190",
        ]))
        .unwrap();
        let ClaimReply::InFlight(record) = busy else {
            panic!("{busy:?}")
        };
        assert_eq!(record.token.to_string(), TOKEN);
        assert_eq!(
            (record.fingerprint.as_str(), record.fingerprint_version),
            ("fp", 3)
        );
        assert_eq!(
            (record.claimed_at, record.lease_until, record.gone_at),
            (90, 130, 190)
        );
        assert_eq!(record.result, None);
        let (done, _) = claim(array(&[
            "completed",
            "100",
            "",
            TOKEN,
            "fp",
            "3",
            "90",
            "130",
            "190",
            "95",
            "201",
            "",
            "body",
        ]))
        .unwrap();
        let ClaimReply::Completed(record) = done else {
            panic!("{done:?}")
        };
        let result = record.result.unwrap();
        assert_eq!((result.completed_at, result.status), (95, 201));
        assert_eq!(result.body, "body");
    }

    #[test]
    fn replies_that_are_not_the_scripts_are_errors() {
        for value in [
            Value::Nil,
            Value::Int(1),
            array(&[]),
            array(&["new"]),
            array(&["new", "x", ""]),
            array(&["maybe", "100", ""]),
            array(&["new", "100", "", "extra"]),
            array(&[
                "in_flight",
                "100",
                "",
                "not-a-token",
                "fp",
                "3",
                "90",
                "130",
                "190",
            ]),
            array(&[
                "in_flight",
                "100",
                "",
                TOKEN,
                "fp",
                "99999999999",
                "90",
                "130",
                "190",
            ]),
        ] {
            assert!(claim(value.clone()).is_err(), "{value:?}");
        }
        assert!(write(Value::Array(vec![Value::Int(2), bulk("1")])).is_err());
        assert!(read(array(&["gone", "1", ""])).is_err());
    }

    #[test]
    fn write_and_read_replies() {
        let (done, now) = write(Value::Array(vec![Value::Int(1), bulk("42")])).unwrap();
        assert!(done);
        assert_eq!(now, 42);
        let (absent, _) = read(array(&["absent", "1", "a list value"])).unwrap();
        assert_eq!(
            absent,
            ReadReply::Absent {
                corrupt: Some("a list value".into())
            }
        );
    }
}
