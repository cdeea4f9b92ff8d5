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

/// A record value the client cannot read although the server took it for one (its
/// headers do not decode, its fingerprint is not UTF-8): corrupt, like a value the
/// server itself refuses. Its token names it, so a claim can replace exactly it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Undecodable {
    /// The claim token's bytes as stored (32 hex digits in a sound record; whatever they
    /// are in a damaged one, which a claim names byte for byte to replace it).
    pub(crate) token: Bytes,
    /// What is wrong with it.
    pub(crate) reason: String,
}

/// A record value as the client decoded it.
pub(crate) type Decoded = Result<Stored, Undecodable>;

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
    InFlight(Decoded),
    /// The completed record, to replay.
    Completed(Decoded),
}

/// What a read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadReply {
    /// No record, or one that is gone; `corrupt` says why a value at the key was not a
    /// record, if it was not.
    Absent { corrupt: Option<String> },
    /// The record (claimed or completed).
    Present(Decoded),
}

/// Reads the reply of the claim function, and the server's `now` it carries. A claim of a
/// free key answers only the server's time (an integer).
pub(crate) fn claim(value: Value) -> Result<(ClaimReply, u64), BadReply> {
    if let Value::Int(now) = value {
        let now = u64::try_from(now).map_err(|_| bad(format!("a negative time {now}")))?;
        let won = ClaimReply::Won {
            reclaimed: false,
            replaced: None,
        };
        return Ok((won, now));
    }
    let mut items = Items::of(value)?;
    let outcome = items.text()?;
    let now = items.number()?;
    let note = items.text()?;
    let reply = match outcome.as_str() {
        "new" | "reclaimed" => ClaimReply::Won {
            reclaimed: outcome == "reclaimed",
            replaced: (!note.is_empty()).then_some(note),
        },
        "in_flight" => ClaimReply::InFlight(decode(items.bytes()?, false)?),
        "completed" => ClaimReply::Completed(decode(items.bytes()?, true)?),
        other => return Err(bad(format!("claim outcome {other:?}"))),
    };
    items.end()?;
    Ok((reply, now))
}

/// Reads the reply of the read function, and the server's `now` it carries.
pub(crate) fn read(value: Value) -> Result<(ReadReply, u64), BadReply> {
    let mut items = Items::of(value)?;
    let state = items.text()?;
    let now = items.number()?;
    let note = items.text()?;
    let reply = match state.as_str() {
        "absent" => ReadReply::Absent {
            corrupt: (!note.is_empty()).then_some(note),
        },
        "claimed" => ReadReply::Present(decode(items.bytes()?, false)?),
        "completed" => ReadReply::Present(decode(items.bytes()?, true)?),
        other => return Err(bad(format!("read state {other:?}"))),
    };
    items.end()?;
    Ok((reply, now))
}

/// Reads the reply of complete, release or renew: whether it took effect, and the
/// server's `now`. The reply is the server's time, negated when nothing was done; the
/// completion of a client's claim answers it as its digits (text), which the server
/// has at hand.
pub(crate) fn write(value: Value) -> Result<(bool, u64), BadReply> {
    match value {
        Value::Int(now) if now > 0 => Ok((true, now.unsigned_abs())),
        Value::Int(now) if now < 0 => Ok((false, now.unsigned_abs())),
        Value::BulkString(text) if !text.is_empty() => digits(&text, 0..text.len())
            .filter(|&now| now > 0)
            .map(|now| (true, now))
            .ok_or_else(|| bad(format!("a write's reply that is not a time: {text:?}"))),
        other => Err(bad(format!(
            "a write's reply that is not a time: {other:?}"
        ))),
    }
}

/// The layout of a record value (see the top of `scripts/library.lua`): its first bytes,
/// the fixed header's length, and where each fixed field sits in it (0-based, end
/// exclusive).
pub(crate) mod layout {
    use std::ops::Range;

    pub(crate) const PREFIX: &[u8] = b"ik2";
    pub(crate) const STATE: usize = 3;
    pub(crate) const TOKEN: Range<usize> = 4..36;
    pub(crate) const CLAIMED_AT: Range<usize> = 36..52;
    pub(crate) const LEASE: Range<usize> = 52..68;
    pub(crate) const GRACE: Range<usize> = 68..84;
    pub(crate) const COMPLETED_AT: Range<usize> = 84..100;
    pub(crate) const TIME_TO_LIVE: Range<usize> = 100..116;
    pub(crate) const STATUS: Range<usize> = 116..119;
    pub(crate) const FINGERPRINT_VERSION: Range<usize> = 119..129;
    pub(crate) const FINGERPRINT_LEN: Range<usize> = 129..139;
    pub(crate) const HEADERS_LEN: Range<usize> = 139..149;
    pub(crate) const HEADER: usize = 149;
}

/// Decimal digits as a number, or `None` for anything else.
fn digits(value: &[u8], at: std::ops::Range<usize>) -> Option<u64> {
    let field = &value[at];
    if !field.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// A record value as the functions return it, `completed` or claimed as the reply said.
/// What the server checked (the layout, the state, the lengths) failing here is a bad
/// reply; any other field that does not decode (the server trusts the layout and leaves
/// those to the client) makes the record [`Undecodable`]: corrupt, reported, replaced by
/// the next claim. The body and headers are slices of the reply, not copies.
pub(crate) fn decode(value: Bytes, completed: bool) -> Result<Decoded, BadReply> {
    use layout::*;
    if value.len() < HEADER || !value.starts_with(PREFIX) {
        return Err(bad("a record value of another layout"));
    }
    let state = if completed { b'd' } else { b'c' };
    if value[STATE] != state {
        return Err(bad("a record value whose state is not the reply's"));
    }
    let token = value.slice(TOKEN);
    let corrupt = |reason: &str| {
        Ok(Err(Undecodable {
            token: token.clone(),
            reason: reason.to_owned(),
        }))
    };
    let Some(claim_token) = std::str::from_utf8(&token)
        .ok()
        .filter(|text| {
            text.bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        })
        .and_then(|text| text.parse::<ClaimToken>().ok())
    else {
        return corrupt("a malformed claim token");
    };
    let numbers = (
        digits(&value, CLAIMED_AT),
        digits(&value, LEASE),
        digits(&value, FINGERPRINT_VERSION).and_then(|version| u32::try_from(version).ok()),
        digits(&value, FINGERPRINT_LEN),
        digits(&value, HEADERS_LEN),
    );
    let (
        Some(claimed_at),
        Some(lease),
        Some(fingerprint_version),
        Some(fingerprint_len),
        Some(headers_len),
    ) = numbers
    else {
        return corrupt("malformed numbers");
    };
    let Some(lease_until) = claimed_at.checked_add(lease) else {
        return corrupt("malformed instants");
    };
    let fingerprint_end = HEADER + fingerprint_len as usize;
    let headers_end = fingerprint_end + headers_len as usize;
    if headers_end > value.len() {
        return Err(bad("fields beyond the value"));
    }
    let (gone_at, result) = if completed {
        let status = digits(&value, STATUS)
            .and_then(|status| u16::try_from(status).ok())
            .filter(|status| (100..=999).contains(status));
        let Some(status) = status else {
            return corrupt("a status out of range");
        };
        let (Some(completed_at), Some(ttl)) =
            (digits(&value, COMPLETED_AT), digits(&value, TIME_TO_LIVE))
        else {
            return corrupt("malformed instants");
        };
        let result = StoredResult {
            completed_at,
            status,
            headers: value.slice(fingerprint_end..headers_end),
            body: value.slice(headers_end..),
        };
        (completed_at.checked_add(ttl), Some(result))
    } else {
        (
            digits(&value, GRACE).and_then(|grace| lease_until.checked_add(grace)),
            None,
        )
    };
    let Some(gone_at) = gone_at else {
        return corrupt("malformed instants");
    };
    let Ok(fingerprint) = std::str::from_utf8(&value[HEADER..fingerprint_end]) else {
        return corrupt("a fingerprint that is not UTF-8");
    };
    Ok(Ok(Stored {
        token: claim_token,
        fingerprint: fingerprint.to_owned(),
        fingerprint_version,
        claimed_at,
        lease_until,
        gone_at,
        result,
    }))
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
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    fn array(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|item| bulk(item)).collect())
    }

    /// A record value as the library writes it: claimed when `result` is `None`, else
    /// completed with (completed at, status, headers, body).
    pub(crate) fn value(
        token: &str,
        fingerprint: &str,
        instants: (u64, u64, u64),
        result: Option<(u64, u16, &str, &str)>,
    ) -> String {
        let (claimed_at, lease_until, gone_at) = instants;
        let lease = lease_until - claimed_at;
        let tail = format!("{:010}{:010}", 3, fingerprint.len());
        match result {
            None => format!(
                "ik2c{token}{claimed_at:016}{lease:016}{:016}{:035}{tail}{:010}{fingerprint}",
                gone_at - lease_until,
                0,
                0
            ),
            Some((completed_at, status, headers, body)) => format!(
                "ik2d{token}{claimed_at:016}{lease:016}{:016}{completed_at:016}{:016}{status:03}{tail}{:010}{fingerprint}{headers}{body}",
                0,
                gone_at - completed_at,
                headers.len()
            ),
        }
    }

    #[test]
    fn the_layouts_offsets_are_the_librarys() {
        let library = include_str!("scripts/library.lua");
        // The library's table of offsets is 1-based and inclusive.
        for (range, line) in [
            (layout::TOKEN, "5-36    claim token"),
            (layout::CLAIMED_AT, "37-52   claimed at"),
            (layout::LEASE, "53-68   lease"),
            (layout::GRACE, "69-84   grace"),
            (layout::COMPLETED_AT, "85-100  completed at"),
            (layout::TIME_TO_LIVE, "101-116 time to live"),
            (layout::STATUS, "117-119 status"),
            (layout::FINGERPRINT_VERSION, "120-129 fingerprint version"),
            (layout::FINGERPRINT_LEN, "130-139 fingerprint length"),
            (layout::HEADERS_LEN, "140-149 headers length"),
        ] {
            assert!(library.contains(line), "{line}");
            let documented = format!("{}-{}", range.start + 1, range.end);
            assert!(line.starts_with(&documented), "{line} vs {range:?}");
        }
        assert!(library.contains(&format!("local HEADER = {}", layout::HEADER)));
        let claimed = value(TOKEN, "fp", (1, 2, 3), None);
        assert_eq!(claimed.len(), layout::HEADER + 2);
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
        // A free key's claim answers only the time.
        let (won, now) = claim(Value::Int(101)).unwrap();
        assert_eq!(
            won,
            ClaimReply::Won {
                reclaimed: false,
                replaced: None
            }
        );
        assert_eq!(now, 101);
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
        let claimed = value(TOKEN, "fp", (90, 130, 190), None);
        let (busy, _) = claim(array(&["in_flight", "100", "", &claimed])).unwrap();
        let ClaimReply::InFlight(Ok(record)) = busy else {
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
        let completed = value(TOKEN, "fp", (90, 130, 190), Some((95, 201, "hh", "body")));
        let (done, _) = claim(array(&["completed", "100", "", &completed])).unwrap();
        let ClaimReply::Completed(Ok(record)) = done else {
            panic!("{done:?}")
        };
        let result = record.result.unwrap();
        assert_eq!((result.completed_at, result.status), (95, 201));
        assert_eq!(result.headers, "hh");
        assert_eq!(result.body, "body");
    }

    #[test]
    fn a_fingerprint_that_is_not_utf8_is_undecodable_by_its_token() {
        let mut claimed = value(TOKEN, "fp", (90, 130, 190), None).into_bytes();
        let last = claimed.len() - 1;
        claimed[last] = 0xff;
        let decoded = decode(Bytes::from(claimed), false).unwrap();
        assert_eq!(
            decoded,
            Err(Undecodable {
                token: Bytes::from_static(TOKEN.as_bytes()),
                reason: "a fingerprint that is not UTF-8".to_owned()
            })
        );
    }

    #[test]
    fn fields_the_server_leaves_to_the_client_make_a_record_undecodable() {
        let claimed = value(TOKEN, "fp", (90, 130, 190), None);
        let completed = value(TOKEN, "fp", (90, 130, 190), Some((95, 201, "", "b")));
        for (what, damaged, is_completed, reason) in [
            (
                "token",
                claimed.replacen(TOKEN, &"Z".repeat(32), 1),
                false,
                "token",
            ),
            (
                "upper-case token",
                claimed.replacen(TOKEN, &TOKEN.to_uppercase(), 1),
                false,
                "token",
            ),
            (
                "lease",
                claimed.replacen("0000000000000040", " 000000000000040", 1),
                false,
                "numbers",
            ),
            (
                "fingerprint version",
                claimed.replacen("00000000030000000002", "0000000x030000000002", 1),
                false,
                "numbers",
            ),
            (
                "status",
                completed.replacen("201", "099", 1),
                true,
                "status",
            ),
            (
                "status digits",
                completed.replacen("201", "2x1", 1),
                true,
                "status",
            ),
        ] {
            assert_ne!(damaged, claimed, "{what}");
            let decoded = decode(Bytes::from(damaged.clone()), is_completed).unwrap();
            let Err(undecodable) = decoded else {
                panic!("{what}: decoded {decoded:?}")
            };
            assert!(
                undecodable.reason.contains(reason),
                "{what}: {undecodable:?}"
            );
            assert_eq!(undecodable.token, damaged.as_bytes()[4..36], "{what}");
        }
    }

    #[test]
    fn replies_that_are_not_the_functions_are_errors() {
        let claimed = value(TOKEN, "fp", (90, 130, 190), None);
        let completed = value(TOKEN, "fp", (90, 130, 190), Some((95, 201, "", "b")));
        let short = &claimed[..claimed.len() - 1];
        let other_layout = claimed.replacen("ik2", "ik3", 1);
        let too_long = claimed.replacen("00000000020000000000fp", "00000000090000000000fp", 1);
        assert_ne!(too_long, claimed);
        for value in [
            Value::Nil,
            Value::Int(-1),
            array(&[]),
            array(&["new"]),
            array(&["new", "x", ""]),
            array(&["maybe", "100", ""]),
            array(&["new", "100", "", "extra"]),
            array(&["in_flight", "100", ""]),
            array(&["in_flight", "100", "", &completed]),
            array(&["completed", "100", "", &claimed]),
            array(&["in_flight", "100", "", short]),
            array(&["in_flight", "100", "", &other_layout]),
            array(&["in_flight", "100", "", &too_long]),
            array(&["in_flight", "100", "", &claimed, "extra"]),
        ] {
            assert!(claim(value.clone()).is_err(), "{value:?}");
        }
        assert!(write(Value::Array(vec![Value::Int(1), bulk("1")])).is_err());
        assert!(write(Value::Int(0)).is_err());
        assert!(read(array(&["gone", "1", ""])).is_err());
    }

    #[test]
    fn write_and_read_replies() {
        let (done, now) = write(Value::Int(42)).unwrap();
        assert!(done);
        assert_eq!(now, 42);
        let (done, now) = write(Value::Int(-43)).unwrap();
        assert!(!done);
        assert_eq!(now, 43);
        // The completion of a client's claim answers the digits of its time.
        let text = |digits: &str| Value::BulkString(digits.as_bytes().to_vec());
        assert_eq!(
            write(text("1733450000123456")).unwrap(),
            (true, 1733450000123456)
        );
        for bad in ["", "0", "-5", "12a", "99999999999999999999999"] {
            assert!(write(text(bad)).is_err(), "{bad:?}");
        }
        assert!(write(Value::Int(0)).is_err());
        let (absent, _) = read(array(&["absent", "1", "a list value"])).unwrap();
        assert_eq!(
            absent,
            ReadReply::Absent {
                corrupt: Some("a list value".into())
            }
        );
        let completed = value(TOKEN, "fp", (90, 130, 190), Some((95, 201, "", "b")));
        let (present, _) = read(array(&["completed", "1", "", &completed])).unwrap();
        assert!(matches!(present, ReadReply::Present(Ok(_))));
    }
}
