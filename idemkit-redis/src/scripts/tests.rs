//! The library on a real server, function by function: what each writes, when it
//! refuses, that everything written expires, that waiters are told, that values which
//! are not records are treated as absent, that records of the previous layout (hashes)
//! are read, completed, renewed and released, and that the claims the client writes
//! itself (layout 3) are judged by their key's expiry.

use std::thread::sleep;
use std::time::Duration;

use bytes::Bytes;
use redis::{Commands, Connection, Value};

use crate::commands::function_missing;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const OTHER: &str = "ffffffffffffffffffffffffffffffff";
const LEASE_US: &str = "30000000";
const GRACE_US: &str = "60000000";

fn load_library(con: &mut Connection) {
    let _: Value = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(super::LIBRARY.as_str())
        .query(con)
        .unwrap();
}

fn connect() -> Option<Connection> {
    let server = redis_harness::shared()?;
    let client = redis::Client::open(server.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    load_library(&mut con);
    Some(con)
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        Value::Int(n) => n.to_string(),
        other => panic!("not text: {other:?}"),
    }
}

fn reply(value: Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().map(text).collect(),
        other => panic!("not an array: {other:?}"),
    }
}

/// `FCALL function 1 key args...` ([`fcall_reply`]), which must not fail. An integer
/// reply is spelled out as the array it stands for: a claim's ["new", now,
/// ""], a write's [done, now]; so is the digits of a time a client claim's completion
/// answers (through the client's own reading of it).
fn fcall(con: &mut Connection, function: &str, key: &str, args: &[&[u8]]) -> Vec<String> {
    match fcall_reply(con, function, key, args).unwrap() {
        Value::Int(now) if function == super::CLAIM => {
            vec!["new".to_owned(), now.to_string(), String::new()]
        }
        Value::Int(now) => vec![
            if now > 0 { "1" } else { "0" }.to_owned(),
            now.unsigned_abs().to_string(),
        ],
        Value::Nil if function == super::COMPLETE_OWN_CLAIM => vec!["declined".to_owned()],
        Value::BulkString(digits)
            if function == super::COMPLETE || function == super::COMPLETE_OWN_CLAIM =>
        {
            let (done, now) = crate::reply::write(Value::BulkString(digits)).unwrap();
            vec![if done { "1" } else { "0" }.to_owned(), now.to_string()]
        }
        other => reply(other),
    }
}

/// The reply of `FCALL function 1 key args...` as the server gave it (an error too); a
/// library another test flushed is loaded again first.
fn fcall_reply(
    con: &mut Connection,
    function: &str,
    key: &str,
    args: &[&[u8]],
) -> redis::RedisResult<Value> {
    let mut call = redis::cmd("FCALL");
    call.arg(function).arg(1).arg(key);
    for arg in args {
        call.arg(*arg);
    }
    match call.query(con) {
        Err(error) if function_missing(&error) => {
            load_library(con);
            call.query(con)
        }
        result => result,
    }
}

/// What a claim writes after its time, as the backend sends it: lease, grace, no result,
/// fingerprint version 7 and length, no headers, the fingerprint `fp`.
fn claim_rest(lease_us: &str, grace_us: &str) -> String {
    format!(
        "{}{}{:035}{:010}{:010}{:010}fp",
        digits16(lease_us),
        digits16(grace_us),
        0,
        7,
        2,
        0
    )
}

/// A duration in microseconds as a record stores it.
fn digits16(micros: &str) -> String {
    format!("{:016}", micros.parse::<u64>().unwrap())
}

/// The key's time to live for a record gone in `micros` from now, as the backend sends it.
fn key_ttl(micros: u64) -> String {
    (micros.div_ceil(1000) + 1).to_string()
}

fn claim(
    con: &mut Connection,
    key: &str,
    token: &str,
    lease_us: &str,
    grace_us: &str,
) -> Vec<String> {
    claim_replacing(con, key, token, lease_us, grace_us, "")
}

fn claim_replacing(
    con: &mut Connection,
    key: &str,
    token: &str,
    lease_us: &str,
    grace_us: &str,
    replacing: &str,
) -> Vec<String> {
    let rest = claim_rest(lease_us, grace_us);
    let ttl = key_ttl(lease_us.parse::<u64>().unwrap() + grace_us.parse::<u64>().unwrap());
    let args: [&[u8]; 5] = [
        token.as_bytes(),
        rest.as_bytes(),
        ttl.as_bytes(),
        replacing.as_bytes(),
        b"the client could not decode it",
    ];
    fcall(con, super::CLAIM, key, &args)
}

/// Claims `key` as the backend first does, without a function: a plain `SET ... NX PX
/// ... GET` of a claim in layout 3 (the key's time to live where layout 2 holds the
/// claim's time, the time from the lease's end to the key's expiry where it holds the
/// grace). What was at the key, if anything (then nothing is written).
fn client_claim(
    con: &mut Connection,
    key: &str,
    token: &str,
    lease_us: &str,
    grace_us: &str,
) -> Option<Vec<u8>> {
    let ttl = key_ttl(lease_us.parse::<u64>().unwrap() + grace_us.parse::<u64>().unwrap());
    let value = format!(
        "ik3c{token}{}{}",
        digits16(&ttl),
        claim_rest(lease_us, &client_claim_kept(lease_us, grace_us))
    );
    redis::cmd("SET")
        .arg(key)
        .arg(value)
        .arg("NX")
        .arg("PX")
        .arg(&ttl)
        .arg("GET")
        .query(con)
        .unwrap()
}

/// How long a client's claim keeps its record past its lease, as `client_claim` writes
/// it: to its key's expiry, from the last microsecond of the millisecond it was made in.
fn client_claim_kept(lease_us: &str, grace_us: &str) -> String {
    let lease: u64 = lease_us.parse().unwrap();
    let ttl: u64 = key_ttl(lease + grace_us.parse::<u64>().unwrap())
        .parse()
        .unwrap();
    (ttl * 1000 - 999 - lease).to_string()
}

/// Completes the client's claim `client_claim` wrote with `lease_us` and `grace_us` (and
/// the fingerprint `fp`, version 7) as the backend that wrote it does: handing the
/// server the completed record's parts, the fingerprint among them as `fingerprint`
/// (the one the claim holds, or another to try the check of the claim's length).
fn complete_own(
    con: &mut Connection,
    key: &str,
    token: &str,
    lease_and_grace: (&str, &str),
    fingerprint: &str,
    body: &[u8],
) -> Vec<String> {
    let args = own_claim_args(token, lease_and_grace, fingerprint, body);
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    fcall(con, super::COMPLETE_OWN_CLAIM, key, &args)
}

/// The arguments of [`complete_own`]'s call.
fn own_claim_args(
    token: &str,
    (lease_us, grace_us): (&str, &str),
    fingerprint: &str,
    body: &[u8],
) -> [Vec<u8>; 6] {
    let kept = format!(
        "{}{}",
        digits16(lease_us),
        digits16(&client_claim_kept(lease_us, grace_us))
    );
    let headers = crate::headers::encode([("content-type", &b"text/plain"[..])]);
    let result_fields = format!(
        "{}201{:010}{:010}{:010}{fingerprint}",
        digits16("1000000"),
        7,
        fingerprint.len(),
        headers.len()
    );
    let mut headers_and_body = headers;
    headers_and_body.extend_from_slice(body);
    let claim_px = key_ttl(lease_us.parse::<u64>().unwrap() + grace_us.parse::<u64>().unwrap());
    [
        token.as_bytes().to_vec(),
        claim_px.into_bytes(),
        kept.into_bytes(),
        result_fields.into_bytes(),
        headers_and_body,
        key_ttl(1_000_000).into_bytes(),
    ]
}

/// The value at `key` and its expiry (`PEXPIRETIME`: -1 for none, -2 for no key).
fn value_and_expiry(con: &mut Connection, key: &str) -> (Option<Vec<u8>>, i64) {
    let value = con.get(key).unwrap();
    let expiry = redis::cmd("PEXPIRETIME").arg(key).query(con).unwrap();
    (value, expiry)
}

/// Writes `value` over what is at `key`, its expiry kept.
fn set_keeping_ttl(con: &mut Connection, key: &str, value: &[u8]) {
    let () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .arg("KEEPTTL")
        .query(con)
        .unwrap();
}

fn complete(
    con: &mut Connection,
    key: &str,
    token: &str,
    ttl_us: &str,
    body: &[u8],
) -> Vec<String> {
    let headers = crate::headers::encode([("content-type", &b"text/plain"[..])]);
    let headers_len = format!("{:010}", headers.len());
    let ttl_and_status = format!("{}201", digits16(ttl_us));
    let key_ttl = key_ttl(ttl_us.parse().unwrap());
    let mut headers_and_body = headers;
    headers_and_body.extend_from_slice(body);
    let args: [&[u8]; 5] = [
        token.as_bytes(),
        ttl_and_status.as_bytes(),
        headers_len.as_bytes(),
        &headers_and_body,
        key_ttl.as_bytes(),
    ];
    fcall(con, super::COMPLETE, key, &args)
}

fn release(con: &mut Connection, key: &str, token: &str) -> Vec<String> {
    fcall(con, super::RELEASE, key, &[token.as_bytes()])
}

fn renew(con: &mut Connection, key: &str, token: &str, lease_us: &str) -> Vec<String> {
    let grace = digits16(GRACE_US);
    let ttl = key_ttl(lease_us.parse::<u64>().unwrap() + GRACE_US.parse::<u64>().unwrap());
    let args: [&[u8]; 4] = [
        token.as_bytes(),
        lease_us.as_bytes(),
        grace.as_bytes(),
        ttl.as_bytes(),
    ];
    fcall(con, super::RENEW, key, &args)
}

fn read(con: &mut Connection, key: &str) -> Vec<String> {
    fcall(con, super::READ, key, &[])
}

/// A field of the record at `key`, by its layout 1 name, whichever layout it is in: a
/// layout 2 string is decoded (`v` is then "2"), a layout 1 hash read field by field.
fn field(con: &mut Connection, key: &str, name: &str) -> Option<String> {
    let value: Vec<u8> = match con.get::<_, Option<Vec<u8>>>(key) {
        Ok(Some(value)) => value,
        Ok(None) => return None,
        Err(_) => return con.hget(key, name).unwrap(),
    };
    let completed = value.get(3) == Some(&b'd');
    let stored = crate::reply::decode(Bytes::from(value), completed)
        .expect("a record of layout 2")
        .expect("decodable");
    let result = stored.result.as_ref();
    let utf8 = |bytes: &Bytes| String::from_utf8_lossy(bytes).into_owned();
    match name {
        "v" => Some("2".to_owned()),
        "s" => Some(if completed { "completed" } else { "claimed" }.to_owned()),
        "t" => Some(stored.token.to_string()),
        "f" => Some(stored.fingerprint.clone()),
        "fv" => Some(stored.fingerprint_version.to_string()),
        "ca" => Some(stored.claimed_at.to_string()),
        "lu" => Some(stored.lease_until.to_string()),
        "ga" => Some(stored.gone_at.to_string()),
        "cd" => result.map(|result| result.completed_at.to_string()),
        "st" => result.map(|result| result.status.to_string()),
        "h" => result.map(|result| utf8(&result.headers)),
        "b" => result.map(|result| utf8(&result.body)),
        other => panic!("no field {other}"),
    }
}

fn number(con: &mut Connection, key: &str, name: &str) -> u64 {
    field(con, key, name).unwrap().parse().unwrap()
}

fn pttl(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(con).unwrap()
}

/// The record a client reads from a reply's value (`reply[3]`).
fn decoded(reply: &[String]) -> crate::reply::Stored {
    let completed = reply[0] == "completed";
    crate::reply::decode(Bytes::from(reply[3].clone()), completed)
        .unwrap()
        .unwrap()
}

/// Writes a layout 1 record (a hash, as the previous scripts wrote it) at `key`, with a
/// TTL: claimed by `token` at the server's `now` for 30 s, or completed with `body`.
fn plant_layout_1(con: &mut Connection, key: &str, token: &str, body: Option<&str>) -> u64 {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
    let now = seconds * 1_000_000 + micros;
    let mut fields = vec![
        ("v", "1".to_owned()),
        ("s", "claimed".to_owned()),
        ("t", token.to_owned()),
        ("f", "old-fp".to_owned()),
        ("fv", "2".to_owned()),
        ("ca", now.to_string()),
        ("lu", (now + 30_000_000).to_string()),
        ("ga", (now + 90_000_000).to_string()),
    ];
    if let Some(body) = body {
        let headers = crate::headers::encode([("x-old", &b"1"[..])]);
        fields[1].1 = "completed".to_owned();
        fields.push(("cd", now.to_string()));
        fields.push(("st", "202".to_owned()));
        fields.push(("h", String::from_utf8(headers.to_vec()).unwrap()));
        fields.push(("b", body.to_owned()));
    }
    let () = con.hset_multiple(key, &fields).unwrap();
    let _: bool = con.pexpire(key, 90_000).unwrap();
    now
}

#[test]
fn a_claim_writes_a_fenced_lease_that_expires_after_its_grace() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{claim-new}";
    // A free key's claim answers with the server's time alone, an integer.
    let rest = claim_rest(LEASE_US, GRACE_US);
    let args: [&[u8]; 5] = [TOKEN.as_bytes(), rest.as_bytes(), b"90001", b"", b""];
    let free = fcall_reply(&mut con, super::CLAIM, "scripts:{claim-free}", &args).unwrap();
    assert!(matches!(free, Value::Int(now) if now > 0), "{free:?}");
    let first = claim(&mut con, key, TOKEN, LEASE_US, GRACE_US);
    assert_eq!(first[0], "new");
    assert_eq!(first[2], "", "nothing was replaced");
    let now: u64 = first[1].parse().unwrap();
    assert_eq!(field(&mut con, key, "v").as_deref(), Some("2"));
    assert_eq!(field(&mut con, key, "s").as_deref(), Some("claimed"));
    assert_eq!(field(&mut con, key, "t").as_deref(), Some(TOKEN));
    assert_eq!(field(&mut con, key, "f").as_deref(), Some("fp"));
    assert_eq!(field(&mut con, key, "fv").as_deref(), Some("7"));
    assert_eq!(number(&mut con, key, "ca"), now);
    assert_eq!(number(&mut con, key, "lu"), now + 30_000_000);
    assert_eq!(number(&mut con, key, "ga"), now + 90_000_000);
    let ttl = pttl(&mut con, key);
    assert!(
        (85_000..=90_001).contains(&ttl),
        "lease + grace, got {ttl} ms"
    );

    let second = claim(&mut con, key, OTHER, LEASE_US, GRACE_US);
    assert_eq!(second[0], "in_flight");
    let record = decoded(&second);
    assert_eq!(record.token.to_string(), TOKEN);
    assert_eq!(
        (record.fingerprint.as_str(), record.fingerprint_version),
        ("fp", 7)
    );
    assert_eq!(
        (record.claimed_at, record.lease_until, record.gone_at),
        (now, now + 30_000_000, now + 90_000_000)
    );
    assert_eq!(
        field(&mut con, key, "t").as_deref(),
        Some(TOKEN),
        "unchanged"
    );
}

#[test]
fn complete_release_and_renew_are_fenced_by_the_token() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{fenced}";
    claim(&mut con, key, TOKEN, LEASE_US, GRACE_US);
    assert_eq!(complete(&mut con, key, OTHER, "1000000", b"x")[0], "0");
    assert_eq!(release(&mut con, key, OTHER)[0], "0");
    assert_eq!(renew(&mut con, key, OTHER, LEASE_US)[0], "0");
    assert_eq!(field(&mut con, key, "s").as_deref(), Some("claimed"));
    assert_eq!(field(&mut con, key, "t").as_deref(), Some(TOKEN));

    let renewed = renew(&mut con, key, TOKEN, "120000000");
    assert_eq!(renewed[0], "1");
    let now: u64 = renewed[1].parse().unwrap();
    assert_eq!(number(&mut con, key, "lu"), now + 120_000_000);
    assert_eq!(number(&mut con, key, "ga"), now + 180_000_000);
    assert!(
        pttl(&mut con, key) > 170_000,
        "the key's expiry moved with the lease"
    );

    let done = complete(&mut con, key, TOKEN, "3600000000", b"the body");
    assert_eq!(done[0], "1");
    let completed_at: u64 = done[1].parse().unwrap();
    assert_eq!(field(&mut con, key, "s").as_deref(), Some("completed"));
    assert_eq!(number(&mut con, key, "cd"), completed_at);
    assert_eq!(number(&mut con, key, "ga"), completed_at + 3_600_000_000);
    let ttl = pttl(&mut con, key);
    assert!(
        (3_590_000..=3_600_001).contains(&ttl),
        "the result's TTL, got {ttl} ms"
    );

    // A completed record is no longer held by anyone: nothing changes it.
    assert_eq!(complete(&mut con, key, TOKEN, "1000000", b"other")[0], "0");
    assert_eq!(renew(&mut con, key, TOKEN, LEASE_US)[0], "0");
    assert_eq!(release(&mut con, key, TOKEN)[0], "0");
    assert_eq!(field(&mut con, key, "b").as_deref(), Some("the body"));

    let replay = claim(&mut con, key, OTHER, LEASE_US, GRACE_US);
    assert_eq!(replay[0], "completed");
    let record = decoded(&replay);
    assert_eq!(record.token.to_string(), TOKEN);
    assert_eq!(
        (record.fingerprint.as_str(), record.fingerprint_version),
        ("fp", 7)
    );
    let result = record.result.unwrap();
    assert_eq!((result.completed_at, result.status), (completed_at, 201));
    assert_eq!(
        crate::headers::decode(&result.headers).unwrap(),
        [("content-type".to_owned(), Bytes::from_static(b"text/plain"))]
    );
    assert_eq!(result.body, "the body");
    let seen = read(&mut con, key);
    assert_eq!(seen[0], "completed");
    assert_eq!(seen[2..], replay[2..], "read returns what a replay does");
}

#[test]
fn a_release_deletes_the_claim() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{release}";
    claim(&mut con, key, TOKEN, LEASE_US, GRACE_US);
    assert_eq!(release(&mut con, key, TOKEN)[0], "1");
    let exists: bool = con.exists(key).unwrap();
    assert!(!exists);
    assert_eq!(read(&mut con, key)[0], "absent");
    assert_eq!(release(&mut con, key, TOKEN)[0], "0", "only once");
    assert_eq!(claim(&mut con, key, OTHER, LEASE_US, GRACE_US)[0], "new");
}

#[test]
fn a_lapsed_lease_is_reclaimed_within_its_grace_and_fenced_out() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{reclaim}";
    // A 1 ms lease, then ten times the margin a busy machine needs to pass it.
    claim(&mut con, key, TOKEN, "1000", GRACE_US);
    sleep(Duration::from_millis(100));
    assert_eq!(read(&mut con, key)[0], "claimed", "kept for the grace");
    let taken = claim(&mut con, key, OTHER, LEASE_US, GRACE_US);
    assert_eq!(taken[0], "reclaimed");
    assert_eq!(field(&mut con, key, "t").as_deref(), Some(OTHER));
    assert_eq!(
        complete(&mut con, key, TOKEN, "1000000", b"late")[0],
        "0",
        "the old token is fenced out"
    );
    assert_eq!(renew(&mut con, key, TOKEN, LEASE_US)[0], "0");
    assert_eq!(release(&mut con, key, TOKEN)[0], "0");
    assert_eq!(complete(&mut con, key, OTHER, "1000000", b"mine")[0], "1");
}

#[test]
fn a_lapsed_claim_still_completes_until_someone_reclaims_it() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{late-complete}";
    claim(&mut con, key, TOKEN, "1000", GRACE_US);
    sleep(Duration::from_millis(100));
    assert_eq!(
        complete(&mut con, key, TOKEN, "1000000", b"late but first")[0],
        "1"
    );
}

#[test]
fn a_claim_past_its_grace_is_gone() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{gone}";
    claim(&mut con, key, TOKEN, "1000", "1000");
    sleep(Duration::from_millis(100));
    assert_eq!(read(&mut con, key)[0], "absent");
    assert_eq!(
        complete(&mut con, key, TOKEN, "1000000", b"too late")[0],
        "0"
    );
    assert_eq!(renew(&mut con, key, TOKEN, LEASE_US)[0], "0");
    assert_eq!(claim(&mut con, key, OTHER, LEASE_US, GRACE_US)[0], "new");
}

#[test]
fn an_expired_result_is_gone() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{expired}";
    claim(&mut con, key, TOKEN, LEASE_US, GRACE_US);
    assert_eq!(complete(&mut con, key, TOKEN, "1000", b"brief")[0], "1");
    sleep(Duration::from_millis(100));
    assert_eq!(read(&mut con, key)[0], "absent");
    assert_eq!(claim(&mut con, key, OTHER, LEASE_US, GRACE_US)[0], "new");
}

/// Values that are not records: each is absent to a read, refused (not an error) by the
/// writes that need a claim, and overwritten by a claim that says what it found.
#[test]
fn values_that_are_not_records_are_absent_and_overwritten_by_a_claim() {
    let Some(mut con) = connect() else { return };
    type Plant = fn(&mut Connection, &str);
    /// A layout 2 claimed record with its bytes from `at` replaced by `with`.
    fn damaged(con: &mut Connection, key: &str, at: usize, with: &str) {
        let (seconds, _): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
        let far = (seconds + 3600) * 1_000_000;
        let mut value = crate::reply::tests::value(TOKEN, "fp", (far, far, far), None).into_bytes();
        value.splice(at..at + with.len(), with.bytes());
        let () = con.set(key, value).unwrap();
    }
    let plants: [(&str, Plant); 13] = [
        ("another layout's string", |con, key| {
            damaged(con, key, 0, "ik3")
        }),
        ("an unknown state", |con, key| damaged(con, key, 3, "x")),
        ("a layout 2 instant that is not digits", |con, key| {
            damaged(con, key, 60, "-")
        }),
        ("a layout 2 instant beyond 2^53", |con, key| {
            damaged(con, key, 68, "9999999999999999")
        }),
        ("a fingerprint longer than the value", |con, key| {
            damaged(con, key, 129, "0000000009")
        }),
        ("a completed record shorter than its fields", |con, key| {
            damaged(con, key, 3, "d");
            let _: i64 = con.setrange(key, 116, "200").unwrap();
            let _: i64 = con.setrange(key, 139, "0000000099").unwrap();
        }),
        ("a plain string", |con, key| {
            let () = con.set(key, "garbage").unwrap();
        }),
        ("a list", |con, key| {
            let _: i64 = con.rpush(key, "x").unwrap();
        }),
        ("a hash of another program", |con, key| {
            let () = con
                .hset_multiple(key, &[("name", "x"), ("age", "3")])
                .unwrap();
        }),
        ("a future format", |con, key| {
            let () = con
                .hset_multiple(key, &[("v", "2"), ("s", "claimed")])
                .unwrap();
        }),
        ("a record missing fields", |con, key| {
            let () = con
                .hset_multiple(key, &[("v", "1"), ("s", "claimed"), ("t", TOKEN)])
                .unwrap();
        }),
        ("a record with a bad token", |con, key| {
            let () = con
                .hset_multiple(
                    key,
                    &[
                        ("v", "1"),
                        ("s", "claimed"),
                        ("t", "XYZ"),
                        ("f", "fp"),
                        ("fv", "1"),
                        ("ca", "1"),
                        ("lu", "9007199254740991"),
                        ("ga", "9007199254740991"),
                    ],
                )
                .unwrap();
        }),
        ("a completed record without its response", |con, key| {
            let () = con
                .hset_multiple(
                    key,
                    &[
                        ("v", "1"),
                        ("s", "completed"),
                        ("t", TOKEN),
                        ("f", "fp"),
                        ("fv", "1"),
                        ("ca", "1"),
                        ("lu", "2"),
                        ("ga", "9007199254740991"),
                        ("cd", "2"),
                    ],
                )
                .unwrap();
        }),
    ];
    for (what, plant) in plants {
        let key = format!("scripts:{{corrupt-{what}}}");
        plant(&mut con, &key);
        let seen = read(&mut con, &key);
        assert_eq!(seen[0], "absent", "{what}");
        assert_ne!(seen[2], "", "{what}: the read says why");
        assert_eq!(
            complete(&mut con, &key, TOKEN, "1000000", b"x")[0],
            "0",
            "{what}"
        );
        assert_eq!(renew(&mut con, &key, TOKEN, LEASE_US)[0], "0", "{what}");
        assert_eq!(release(&mut con, &key, TOKEN)[0], "0", "{what}");
        let claimed = claim(&mut con, &key, OTHER, LEASE_US, GRACE_US);
        assert_eq!(claimed[0], "new", "{what}");
        assert_ne!(
            claimed[2], "",
            "{what}: the claim says it replaced something"
        );
        assert_eq!(read(&mut con, &key)[0], "claimed", "{what}");
        assert_eq!(field(&mut con, &key, "t").as_deref(), Some(OTHER), "{what}");
        let leftovers: Option<String> = con.hget(&key, "name").unwrap_or(None);
        assert_eq!(leftovers, None, "{what}: nothing of the old value is left");
        assert!(pttl(&mut con, &key) > 0, "{what}");
    }
}

#[test]
fn a_record_the_client_cannot_decode_is_replaced_only_if_unchanged() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{undecodable}";
    claim(&mut con, key, TOKEN, LEASE_US, GRACE_US);
    complete(&mut con, key, TOKEN, "3600000000", b"body");
    // Naming another token changes nothing: the record is replayed as it is.
    assert_eq!(
        claim_replacing(&mut con, key, OTHER, LEASE_US, GRACE_US, OTHER)[0],
        "completed"
    );
    let replaced = claim_replacing(&mut con, key, OTHER, LEASE_US, GRACE_US, TOKEN);
    assert_eq!(replaced[0], "new");
    assert_eq!(
        replaced[2], "the client could not decode it",
        "the client's reason comes back"
    );
    assert_eq!(field(&mut con, key, "t").as_deref(), Some(OTHER));
    assert_eq!(field(&mut con, key, "b"), None);
    // A claim in flight that the client cannot read is replaced the same way.
    let taken = claim_replacing(&mut con, key, TOKEN, LEASE_US, GRACE_US, OTHER);
    assert_eq!(taken[0], "new");
    assert_eq!(field(&mut con, key, "t").as_deref(), Some(TOKEN));
}

#[test]
fn the_longest_durations_still_expire_and_stay_exact() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{longest}";
    let longest = crate::server_clock::micros(crate::server_clock::LONGEST).to_string();
    let won = claim(&mut con, key, TOKEN, &longest, &longest);
    let now: u64 = won[1].parse().unwrap();
    let longest: u64 = longest.parse().unwrap();
    assert_eq!(number(&mut con, key, "ga"), now + 2 * longest);
    assert!(pttl(&mut con, key) > 0);
    assert_eq!(
        complete(&mut con, key, TOKEN, &longest.to_string(), b"x")[0],
        "1"
    );
    assert_eq!(
        number(&mut con, key, "ga"),
        number(&mut con, key, "cd") + longest
    );
    assert!(pttl(&mut con, key) > 0);
}

/// A connection to the shared server for a subscriber, whose reads give up after 10 s
/// (a message that never comes fails the test instead of hanging it).
fn listener() -> Connection {
    let server = redis_harness::shared().unwrap();
    let listener = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    listener
}

/// The next message a subscriber gets: its channel and its payload.
fn next_message(pubsub: &mut redis::PubSub<'_>) -> (String, String) {
    let message = pubsub.get_message().unwrap();
    (
        message.get_channel_name().to_string(),
        message.get_payload().unwrap(),
    )
}

#[test]
fn complete_release_and_reclaim_wake_the_keys_channel() {
    let Some(mut con) = connect() else { return };
    let mut listener = listener();
    let mut pubsub = listener.as_pubsub();
    let keys = [
        "scripts:{wake-complete}",
        "scripts:{wake-release}",
        "scripts:{wake-reclaim}",
    ];
    for key in keys {
        pubsub.subscribe(key).unwrap();
    }
    claim(&mut con, keys[0], TOKEN, LEASE_US, GRACE_US);
    complete(&mut con, keys[0], TOKEN, "1000000", b"x");
    claim(&mut con, keys[1], TOKEN, LEASE_US, GRACE_US);
    release(&mut con, keys[1], TOKEN);
    claim(&mut con, keys[2], TOKEN, "1000", GRACE_US);
    sleep(Duration::from_millis(100));
    claim(&mut con, keys[2], OTHER, LEASE_US, GRACE_US);
    // A fresh claim and a renewal have no one to wake: they publish nothing, so the
    // next three messages are exactly these.
    let seen: Vec<(String, String)> = (0..3).map(|_| next_message(&mut pubsub)).collect();
    assert_eq!(
        seen,
        [
            (keys[0].to_string(), "completed".to_string()),
            (keys[1].to_string(), "released".to_string()),
            (keys[2].to_string(), "claimed".to_string()),
        ]
    );
}

/// A client's claim is completed without a `PUBLISH` unless a waiter watched it first:
/// then its completion wakes the channel. A watch reads like a read.
#[test]
fn a_client_claim_publishes_its_completion_only_once_watched() {
    let Some(mut con) = connect() else { return };
    let mut listener = listener();
    let mut pubsub = listener.as_pubsub();
    let keys = ["scripts:{unwatched}", "scripts:{watched}"];
    for key in keys {
        let () = con.del(key).unwrap();
        pubsub.subscribe(key).unwrap();
        assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    }
    let watched = fcall(&mut con, super::WATCH, keys[1], &[]);
    assert_eq!(watched[0], "claimed");
    assert_eq!(decoded(&watched).token.to_string(), TOKEN);
    let value: Vec<u8> = con.get(keys[1]).unwrap();
    assert_eq!(&value[..4], b"ik3w", "marked watched, nothing else changed");
    assert!(pttl(&mut con, keys[1]) > 0, "its expiry kept");
    assert_eq!(read(&mut con, keys[1])[0], "claimed");
    // Watched twice: still one mark.
    fcall(&mut con, super::WATCH, keys[1], &[]);
    let again: Vec<u8> = con.get(keys[1]).unwrap();
    assert_eq!(again, value);

    assert_eq!(complete(&mut con, keys[0], TOKEN, "1000000", b"a")[0], "1");
    assert_eq!(complete(&mut con, keys[1], OTHER, "1000000", b"b")[0], "0");
    assert_eq!(complete(&mut con, keys[1], TOKEN, "1000000", b"b")[0], "1");
    assert_eq!(
        next_message(&mut pubsub),
        (keys[1].to_string(), "completed".to_string()),
        "the unwatched completion published nothing"
    );
    for key in keys {
        let done = read(&mut con, key);
        assert_eq!(done[0], "completed");
        assert_eq!(decoded(&done).token.to_string(), TOKEN);
    }
}

#[test]
fn records_of_layout_1_are_read_replayed_and_completed_in_layout_2() {
    let Some(mut con) = connect() else { return };
    // A claim in flight, written by the previous scripts.
    let key = "scripts:{layout-1-claimed}";
    let claimed_at = plant_layout_1(&mut con, key, TOKEN, None);
    let seen = read(&mut con, key);
    assert_eq!((seen[0].as_str(), seen[2].as_str()), ("claimed", ""));
    let record = decoded(&seen);
    assert_eq!(record.token.to_string(), TOKEN);
    assert_eq!(
        (record.fingerprint.as_str(), record.fingerprint_version),
        ("old-fp", 2)
    );
    assert_eq!(
        (record.claimed_at, record.lease_until, record.gone_at),
        (claimed_at, claimed_at + 30_000_000, claimed_at + 90_000_000)
    );
    assert_eq!(
        claim(&mut con, key, OTHER, LEASE_US, GRACE_US)[0],
        "in_flight"
    );
    assert_eq!(
        complete(&mut con, key, OTHER, "1000000", b"x")[0],
        "0",
        "fenced"
    );
    assert_eq!(field(&mut con, key, "v").as_deref(), Some("1"), "untouched");
    // Its owner completes it: the record is now one string of layout 2, with its TTL.
    let done = complete(&mut con, key, TOKEN, "3600000000", b"finished");
    assert_eq!(done[0], "1");
    let kind: String = redis::cmd("TYPE").arg(key).query(&mut con).unwrap();
    assert_eq!(kind, "string");
    assert_eq!(field(&mut con, key, "v").as_deref(), Some("2"));
    assert_eq!(field(&mut con, key, "f").as_deref(), Some("old-fp"));
    assert_eq!(number(&mut con, key, "ca"), claimed_at);
    assert_eq!(field(&mut con, key, "b").as_deref(), Some("finished"));
    assert!(pttl(&mut con, key) > 3_500_000);
    let replay = claim(&mut con, key, OTHER, LEASE_US, GRACE_US);
    assert_eq!(replay[0], "completed");
    assert_eq!(decoded(&replay).result.unwrap().body, "finished");

    // A completed record of layout 1 is replayed with its headers and body.
    let key = "scripts:{layout-1-completed}";
    plant_layout_1(&mut con, key, TOKEN, Some("old body"));
    let replay = claim(&mut con, key, OTHER, LEASE_US, GRACE_US);
    assert_eq!(replay[0], "completed");
    let result = decoded(&replay).result.unwrap();
    assert_eq!(result.status, 202);
    assert_eq!(
        crate::headers::decode(&result.headers).unwrap(),
        [("x-old".to_owned(), Bytes::from_static(b"1"))]
    );
    assert_eq!(result.body, "old body");
    assert_eq!(
        read(&mut con, key)[3],
        replay[3],
        "read returns what a replay does"
    );

    // Renewed, it moves to layout 2 too; released, it is gone.
    let key = "scripts:{layout-1-renewed}";
    plant_layout_1(&mut con, key, TOKEN, None);
    let renewed = renew(&mut con, key, TOKEN, "120000000");
    assert_eq!(renewed[0], "1");
    let now: u64 = renewed[1].parse().unwrap();
    assert_eq!(field(&mut con, key, "v").as_deref(), Some("2"));
    assert_eq!(number(&mut con, key, "lu"), now + 120_000_000);
    assert!(pttl(&mut con, key) > 170_000);
    let key = "scripts:{layout-1-released}";
    plant_layout_1(&mut con, key, TOKEN, None);
    assert_eq!(release(&mut con, key, OTHER)[0], "0");
    assert_eq!(release(&mut con, key, TOKEN)[0], "1");
    let exists: bool = con.exists(key).unwrap();
    assert!(!exists);
}

#[test]
fn a_claim_the_client_wrote_is_judged_by_its_keys_expiry() {
    let Some(mut con) = connect() else { return };

    // A lease of 1 ms: in flight at once, lapsed soon after, then reclaimed and fenced.
    let key = "scripts:{client-claim-lapses}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, "1000", GRACE_US), None);
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query(&mut con).unwrap();
    let now = seconds * 1_000_000 + micros;
    let found = read(&mut con, key);
    assert_eq!(found[0], "claimed", "{found:?}");
    let stored = decoded(&found);
    assert_eq!(stored.token.to_string(), TOKEN);
    assert_eq!(
        stored.claimed_at % 1000,
        999,
        "the last microsecond of its millisecond"
    );
    assert!(
        stored.claimed_at <= now + 1000 && stored.claimed_at + 1_000_000 > now,
        "claimed at {} by a server at {now}",
        stored.claimed_at
    );
    assert_eq!(stored.lease_until, stored.claimed_at + 1000);
    let expires: u64 = redis::cmd("PEXPIRETIME").arg(key).query(&mut con).unwrap();
    assert_eq!(stored.gone_at, expires * 1000, "gone when its key expires");
    assert!(stored.gone_at >= stored.lease_until + GRACE_US.parse::<u64>().unwrap());
    let taken = client_claim(&mut con, key, OTHER, LEASE_US, GRACE_US).expect("taken");
    assert_eq!(&taken[..4], b"ik3c", "a plain claim never writes over one");
    sleep(Duration::from_millis(20));
    assert_eq!(
        claim(&mut con, key, OTHER, LEASE_US, GRACE_US)[0],
        "reclaimed"
    );
    assert_eq!(complete(&mut con, key, TOKEN, "1000000", b"late")[0], "0");
    assert_eq!(complete(&mut con, key, OTHER, "1000000", b"ok")[0], "1");

    // Renewed: in layout 2 from then on, its claim's time kept, its lease from now.
    let key = "scripts:{client-claim-renewed}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    let before = decoded(&read(&mut con, key));
    assert_eq!(
        claim(&mut con, key, OTHER, LEASE_US, GRACE_US)[0],
        "in_flight"
    );
    assert_eq!(renew(&mut con, key, OTHER, "90000000")[0], "0");
    let renewed = renew(&mut con, key, TOKEN, "90000000");
    assert_eq!(renewed[0], "1");
    let value: Vec<u8> = con.get(key).unwrap();
    assert_eq!(&value[..4], b"ik2c");
    let after = decoded(&read(&mut con, key));
    assert_eq!(after.claimed_at, before.claimed_at);
    assert_eq!(
        after.lease_until,
        renewed[1].parse::<u64>().unwrap() + 90_000_000
    );

    // Completed: its claim's time kept to the microsecond, dated by the time the
    // completion answered (as text: the server reads no number out of `TIME` for it).
    let key = "scripts:{client-claim-completed}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    let claimed = decoded(&read(&mut con, key));
    let done = complete(&mut con, key, TOKEN, "1000000", b"ok");
    assert_eq!(done[0], "1");
    let completed = decoded(&read(&mut con, key));
    assert_eq!(completed.claimed_at, claimed.claimed_at);
    assert_eq!(completed.lease_until, claimed.lease_until);
    let result = completed.result.expect("completed");
    assert_eq!(result.completed_at.to_string(), done[1]);
    assert_eq!(completed.gone_at, result.completed_at + 1_000_000);
    assert_eq!((result.status, &result.body[..]), (201, &b"ok"[..]));

    // Released by its token alone.
    let key = "scripts:{client-claim-released}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    // Fenced by the whole token: not a part of it, nor nothing.
    for wrong in ["", &TOKEN[..31], &TOKEN[1..], OTHER] {
        assert_eq!(
            complete(&mut con, key, wrong, "1000000", b"x")[0],
            "0",
            "{wrong:?}"
        );
    }
    // A claim cut short (its fingerprint shorter than its length says) is not held,
    // whatever its token.
    let whole: Vec<u8> = con.get(key).unwrap();
    set_keeping_ttl(&mut con, key, &whole[..whole.len() - 1]);
    assert_eq!(complete(&mut con, key, TOKEN, "1000000", b"x")[0], "0");
    set_keeping_ttl(&mut con, key, &whole);
    assert_eq!(release(&mut con, key, OTHER)[0], "0");
    assert_eq!(release(&mut con, key, TOKEN)[0], "1");
    assert_eq!(client_claim(&mut con, key, OTHER, LEASE_US, GRACE_US), None);

    // Its key's expiry removed: no longer a record, replaced by the next claim.
    let key = "scripts:{client-claim-persisted}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    let _: bool = con.persist(key).unwrap();
    let found = read(&mut con, key);
    assert_eq!(found[0], "absent");
    assert_eq!(found[2], "a claim whose key lost its expiry");
    let replaced = claim(&mut con, key, OTHER, LEASE_US, GRACE_US);
    assert_eq!(replaced[0], "new");
    assert_eq!(replaced[2], "a claim whose key lost its expiry");
    assert!(pttl(&mut con, key) > 0);
}

/// A client on RESP3 (as a `redis://...?protocol=resp3` URL makes the backend's) reads the
/// own-claim completion's decline as null, as one on RESP2 does: the backend reads a
/// decline by its null.
#[test]
fn an_own_claim_completion_declines_with_null_under_resp3() {
    let Some(server) = redis_harness::shared() else {
        return;
    };
    let client = redis::Client::open(format!("{}?protocol=resp3", server.url())).unwrap();
    let mut con = client.get_connection().unwrap();
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut con).unwrap();
    assert!(
        info.split_whitespace().any(|field| field == "resp=3"),
        "not a RESP3 connection: {info}"
    );
    load_library(&mut con);
    let own = (LEASE_US, GRACE_US);
    let declined = |con: &mut Connection, key: &str| -> Value {
        let args = own_claim_args(TOKEN, own, "fp", b"x");
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        fcall_reply(con, super::COMPLETE_OWN_CLAIM, key, &args).unwrap()
    };

    // Its claim renewed into layout 2.
    let key = "scripts:{own-resp3-renewed}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    assert_eq!(renew(&mut con, key, TOKEN, "90000000")[0], "1");
    assert_eq!(declined(&mut con, key), Value::Nil);
    // Its key without expiry.
    let key = "scripts:{own-resp3-persisted}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    let _: bool = con.persist(key).unwrap();
    assert_eq!(declined(&mut con, key), Value::Nil);
}

/// The completion of a client's claim by the client that wrote it, handed the completed
/// record's parts: the same record as the general completion writes, fenced the same way
/// (the whole token, the claim's length), putting back exactly what it refused (value
/// and expiry), publishing only when watched; a claim renewed into layout 2 is left for
/// the general completion.
#[test]
fn a_client_claim_completed_with_the_parts_its_client_wrote_is_the_same_record() {
    let Some(mut con) = connect() else { return };
    let own = (LEASE_US, GRACE_US);
    // The fingerprint of the claims `client_claim` writes.
    let fp = "fp";

    // The same record, byte for byte but for its two times.
    let keys = ["scripts:{own-general}", "scripts:{own-parts}"];
    for key in keys {
        let () = con.del(key).unwrap();
        assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    }
    let claimed = decoded(&read(&mut con, keys[1]));
    assert_eq!(complete(&mut con, keys[0], TOKEN, "1000000", b"ok")[0], "1");
    let done = complete_own(&mut con, keys[1], TOKEN, own, fp, b"ok");
    assert_eq!(done[0], "1", "{done:?}");
    let values: Vec<Vec<u8>> = keys.iter().map(|key| con.get(key).unwrap()).collect();
    let without_times = |value: &[u8]| [&value[..36], &value[52..84], &value[100..]].concat();
    assert_eq!(without_times(&values[0]), without_times(&values[1]));
    let completed = decoded(&read(&mut con, keys[1]));
    assert_eq!(
        completed.claimed_at, claimed.claimed_at,
        "the claim's time kept"
    );
    assert_eq!(completed.lease_until, claimed.lease_until);
    let result = completed.result.expect("completed");
    assert_eq!(
        result.completed_at.to_string(),
        done[1],
        "dated by its reply"
    );
    assert_eq!(completed.gone_at, result.completed_at + 1_000_000);
    assert_eq!((result.status, &result.body[..]), (201, &b"ok"[..]));
    assert!(pttl(&mut con, keys[1]) > 0);
    assert_eq!(
        complete_own(&mut con, keys[1], TOKEN, own, fp, b"again")[0],
        "0",
        "completed once"
    );

    // Fenced by the whole token.
    let key = "scripts:{own-fenced}";
    let () = con.del(key).unwrap();
    assert_eq!(
        complete_own(&mut con, key, TOKEN, own, fp, b"x")[0],
        "0",
        "no claim at all"
    );
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    let whole = value_and_expiry(&mut con, key);
    for wrong in ["", &TOKEN[..31], &TOKEN[1..], OTHER] {
        let refused = complete_own(&mut con, key, wrong, own, fp, b"x");
        assert_eq!(refused[0], "0", "{wrong:?}");
    }
    // A claim whose length is not the one its client wrote is not held: cut short, or
    // any other length.
    for other_length in ["f", "fp2", ""] {
        let refused = complete_own(&mut con, key, TOKEN, own, other_length, b"x");
        assert_eq!(refused[0], "0", "{other_length}");
    }
    assert_eq!(
        value_and_expiry(&mut con, key),
        whole,
        "every refusal so far put back what it replaced, and its expiry"
    );
    let cut_short = &whole.0.as_ref().unwrap()[..whole.0.as_ref().unwrap().len() - 1];
    set_keeping_ttl(&mut con, key, cut_short);
    assert_eq!(complete_own(&mut con, key, TOKEN, own, fp, b"x")[0], "0");
    assert_eq!(con.get::<_, Vec<u8>>(key).unwrap(), cut_short);
    set_keeping_ttl(&mut con, key, whole.0.as_ref().unwrap());
    // An error but WRONGTYPE (here a time to live the server refuses) is raised, not taken
    // for a refusal, and nothing is written.
    let args: [&[u8]; 6] = [
        TOKEN.as_bytes(),
        b"90000",
        b"kept",
        b"result fields",
        b"body",
        b"0",
    ];
    let error = fcall_reply(&mut con, super::COMPLETE_OWN_CLAIM, key, &args).unwrap_err();
    assert!(error.to_string().contains("invalid expire time"), "{error}");
    assert_eq!(value_and_expiry(&mut con, key), whole);
    // Its key's expiry removed: not a claim of its layout, left to the general
    // completion, which refuses it.
    let _: bool = con.persist(key).unwrap();
    let persisted = value_and_expiry(&mut con, key);
    assert_eq!(persisted.1, -1);
    assert_eq!(
        complete_own(&mut con, key, TOKEN, own, fp, b"x"),
        ["declined"]
    );
    assert_eq!(complete(&mut con, key, TOKEN, "1000000", b"x")[0], "0");
    assert_eq!(
        value_and_expiry(&mut con, key),
        persisted,
        "nothing written"
    );
    // Not a string: nothing written.
    let () = con.del(key).unwrap();
    let _: i64 = con.rpush(key, "x").unwrap();
    let _: bool = con.pexpire(key, 60_000).unwrap();
    assert_eq!(complete_own(&mut con, key, TOKEN, own, fp, b"x")[0], "0");
    assert_eq!(con.lrange::<_, Vec<String>>(key, 0, -1).unwrap(), ["x"]);
    let () = con.del(key).unwrap();
    // Any other string with an expiry, a record or not, is put back as it was, its
    // expiry to the millisecond (and one without is never written over).
    for other in [
        &b"not a record"[..],
        b"ik3cthe claim of a client that wrote something else",
        b"ik2d",
    ] {
        let () = redis::cmd("SET")
            .arg(key)
            .arg(other)
            .arg("PXAT")
            .arg(4_102_444_800_123_u64)
            .query(&mut con)
            .unwrap();
        let before = value_and_expiry(&mut con, key);
        assert_eq!(complete_own(&mut con, key, TOKEN, own, fp, b"x")[0], "0");
        assert_eq!(value_and_expiry(&mut con, key), before);
    }
    let () = con.del(key).unwrap();
    assert_eq!(complete_own(&mut con, key, TOKEN, own, fp, b"x")[0], "0");
    assert_eq!(
        value_and_expiry(&mut con, key),
        (None, -2),
        "no key written"
    );

    // Renewed, so in layout 2: declined, changed nothing, and the general completion
    // completes it.
    let key = "scripts:{own-renewed}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    assert_eq!(renew(&mut con, key, TOKEN, "90000000")[0], "1");
    let renewed: Vec<u8> = con.get(key).unwrap();
    assert_eq!(&renewed[..4], b"ik2c");
    let renewed_expiry = value_and_expiry(&mut con, key).1;
    assert_eq!(
        complete_own(&mut con, key, TOKEN, own, fp, b"x"),
        ["declined"]
    );
    assert_eq!(
        value_and_expiry(&mut con, key),
        (Some(renewed), renewed_expiry)
    );
    assert_eq!(complete(&mut con, key, TOKEN, "1000000", b"ok")[0], "1");
    let completed = value_and_expiry(&mut con, key);
    assert_eq!(
        complete_own(&mut con, key, TOKEN, own, fp, b"x")[0],
        "0",
        "a completed record is not declined but refused"
    );
    assert_eq!(value_and_expiry(&mut con, key), completed);

    // Lapsed and taken over by another claim (in layout 2): refused at once, not
    // declined, and the new claim is untouched.
    let key = "scripts:{own-taken-over}";
    let () = con.del(key).unwrap();
    assert_eq!(client_claim(&mut con, key, TOKEN, "1000", GRACE_US), None);
    sleep(Duration::from_millis(20));
    assert_eq!(
        claim(&mut con, key, OTHER, LEASE_US, GRACE_US)[0],
        "reclaimed"
    );
    let taken = value_and_expiry(&mut con, key);
    assert_eq!(&taken.0.as_ref().unwrap()[..4], b"ik2c");
    let late = ("1000", GRACE_US);
    assert_eq!(
        complete_own(&mut con, key, TOKEN, late, fp, b"late")[0],
        "0"
    );
    assert_eq!(value_and_expiry(&mut con, key), taken);

    // A waiter is told only if it watched.
    let mut listener = listener();
    let mut pubsub = listener.as_pubsub();
    let keys = ["scripts:{own-unwatched}", "scripts:{own-watched}"];
    for key in keys {
        let () = con.del(key).unwrap();
        pubsub.subscribe(key).unwrap();
        assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    }
    assert_eq!(fcall(&mut con, super::WATCH, keys[1], &[])[0], "claimed");
    // A watched claim refused (another token, a length not its own) is put back watched,
    // and no one is told.
    let watched = value_and_expiry(&mut con, keys[1]);
    assert_eq!(&watched.0.as_ref().unwrap()[..4], b"ik3w");
    assert_eq!(
        complete_own(&mut con, keys[1], OTHER, own, fp, b"w")[0],
        "0"
    );
    assert_eq!(
        complete_own(&mut con, keys[1], TOKEN, own, "f", b"w")[0],
        "0"
    );
    assert_eq!(value_and_expiry(&mut con, keys[1]), watched);
    let _: i64 = con.publish(keys[1], "refused twice").unwrap();
    assert_eq!(
        next_message(&mut pubsub),
        (keys[1].to_string(), "refused twice".to_string()),
        "the refusals published nothing"
    );
    for key in keys {
        assert_eq!(complete_own(&mut con, key, TOKEN, own, fp, b"w")[0], "1");
        assert_eq!(read(&mut con, key)[0], "completed");
    }
    assert_eq!(
        next_message(&mut pubsub),
        (keys[1].to_string(), "completed".to_string()),
        "the unwatched completion published nothing"
    );
}

/// `TIME`'s microseconds, one to six digits, are padded to six from a table: the
/// library's own `clock_text`, run with every length of microseconds in turn (a server's
/// clock gives fewer than six digits in only a tenth of its microseconds, so the other
/// tests reach the table by chance).
#[test]
fn the_clock_is_sixteen_digits_for_microseconds_of_every_length() {
    let Some(mut con) = connect() else { return };
    let library = super::TEMPLATE;
    let start = library
        .find("local MICROS_PADDING")
        .expect("the padding table");
    let body = &library[start..];
    let end = body.find("\nend\n").expect("the end of clock_text") + "\nend\n".len();
    let clock_text = &body[..end];
    assert!(clock_text.contains("local function clock_text()"));
    let script = format!(
        "local TIME = {{ARGV[1], ARGV[2]}}\n{}\nreturn clock_text()",
        clock_text.replace("redis.call('TIME')", "TIME")
    );
    for micros in ["0", "7", "42", "123", "4567", "89012", "999999"] {
        let text: String = redis::cmd("EVAL")
            .arg(&script)
            .arg(0)
            .arg("1733456789")
            .arg(micros)
            .query(&mut con)
            .unwrap();
        let expected = format!("1733456789{:06}", micros.parse::<u32>().unwrap());
        assert_eq!(text, expected, "{micros}");
    }
}

/// A waiter's read marks a claim, a write: it still runs when the server is out of
/// memory (`maxmemory` reached, `noeviction`), as the read it replaced did.
#[test]
fn a_waiter_reads_even_when_the_server_is_out_of_memory() {
    let Some((_server, mut con)) = private_server() else {
        return;
    };
    load_library(&mut con);
    let key = "scripts:{out-of-memory}";
    assert_eq!(client_claim(&mut con, key, TOKEN, LEASE_US, GRACE_US), None);
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query(&mut con)
        .unwrap();
    let refused: redis::RedisResult<()> = con.set("scripts:{another}", "x");
    assert!(refused.is_err(), "the server is out of memory");
    let watched = fcall(&mut con, super::WATCH, key, &[]);
    assert_eq!(watched[0], "claimed");
    let value: Vec<u8> = con.get(key).unwrap();
    assert_eq!(&value[..4], b"ik3w");
}

/// A private server, so that flushing and replacing its functions disturbs no other test.
fn private_server() -> Option<(redis_harness::RedisServer, Connection)> {
    if !redis_harness::available() {
        return None;
    }
    let server = redis_harness::RedisServer::start().unwrap();
    let con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    Some((server, con))
}

/// The names of the function libraries loaded on the server.
fn libraries(con: &mut Connection) -> Vec<String> {
    let listing: Value = redis::cmd("FUNCTION").arg("LIST").query(con).unwrap();
    let Value::Array(libraries) = listing else {
        panic!("{listing:?}")
    };
    libraries
        .into_iter()
        .map(|library| {
            let Value::Array(fields) = library else {
                panic!("{library:?}")
            };
            let at = fields
                .iter()
                .position(|field| text(field) == "library_name")
                .unwrap();
            text(&fields[at + 1])
        })
        .collect()
}

#[test]
fn a_new_version_replaces_the_library_instead_of_adding_one() {
    let Some((_server, mut con)) = private_server() else {
        return;
    };
    load_library(&mut con);
    let version: String = redis::cmd("FCALL")
        .arg(super::VERSION_FUNCTION)
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(version, *super::VERSION);
    // Another version of the code (as a later release would load) under the same name.
    let other = super::LIBRARY.replace(super::VERSION.as_str(), "another-version");
    let _: Value = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(&other)
        .query(&mut con)
        .unwrap();
    assert_eq!(libraries(&mut con), [super::LIBRARY_NAME]);
    let version: String = redis::cmd("FCALL")
        .arg(super::VERSION_FUNCTION)
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(version, "another-version");
    load_library(&mut con);
    assert_eq!(libraries(&mut con), [super::LIBRARY_NAME]);
    assert!(super::LIBRARY.starts_with(&format!("#!lua name={}\n", super::LIBRARY_NAME)));
}

#[test]
fn a_server_without_the_library_says_so_in_the_words_the_client_looks_for() {
    let Some((_server, mut con)) = private_server() else {
        return;
    };
    let missing = redis::cmd("FCALL")
        .arg(super::READ)
        .arg(1)
        .arg("k")
        .query::<Value>(&mut con)
        .unwrap_err();
    assert!(function_missing(&missing), "{missing:?}");
    let other = redis::cmd("GET")
        .arg("a")
        .arg("b")
        .query::<Value>(&mut con)
        .unwrap_err();
    assert!(!function_missing(&other), "{other:?}");
}
