//! The scripts on a real server, command by command: what each writes, when it refuses,
//! that everything written expires, that waiters are told, and that values which are not
//! records are treated as absent.

use std::thread::sleep;
use std::time::Duration;

use redis::{Commands, Connection, Value};

use super::SCRIPTS;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const OTHER: &str = "ffffffffffffffffffffffffffffffff";
const LEASE_US: &str = "30000000";
const GRACE_US: &str = "60000000";

fn connect() -> Option<Connection> {
    let server = redis_harness::shared()?;
    let client = redis::Client::open(server.url()).unwrap();
    Some(client.get_connection().unwrap())
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
    let value: Value = SCRIPTS
        .claim
        .key(key)
        .arg(token)
        .arg("fp")
        .arg(7)
        .arg(lease_us)
        .arg(grace_us)
        .arg(replacing)
        .invoke(con)
        .unwrap();
    reply(value)
}

fn complete(
    con: &mut Connection,
    key: &str,
    token: &str,
    ttl_us: &str,
    body: &[u8],
) -> Vec<String> {
    let headers = crate::headers::encode([("content-type", &b"text/plain"[..])]);
    let value: Value = SCRIPTS
        .complete
        .key(key)
        .arg(token)
        .arg(ttl_us)
        .arg(201)
        .arg(headers)
        .arg(body)
        .invoke(con)
        .unwrap();
    reply(value)
}

fn release(con: &mut Connection, key: &str, token: &str) -> Vec<String> {
    reply(SCRIPTS.release.key(key).arg(token).invoke(con).unwrap())
}

fn renew(con: &mut Connection, key: &str, token: &str, lease_us: &str) -> Vec<String> {
    reply(
        SCRIPTS
            .renew
            .key(key)
            .arg(token)
            .arg(lease_us)
            .arg(GRACE_US)
            .invoke(con)
            .unwrap(),
    )
}

fn read(con: &mut Connection, key: &str) -> Vec<String> {
    reply(SCRIPTS.read.key(key).invoke(con).unwrap())
}

fn field(con: &mut Connection, key: &str, name: &str) -> Option<String> {
    con.hget(key, name).unwrap()
}

fn number(con: &mut Connection, key: &str, name: &str) -> u64 {
    field(con, key, name).unwrap().parse().unwrap()
}

fn pttl(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(con).unwrap()
}

#[test]
fn a_claim_writes_a_fenced_lease_that_expires_after_its_grace() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{claim-new}";
    let first = claim(&mut con, key, TOKEN, LEASE_US, GRACE_US);
    assert_eq!(first[0], "new");
    assert_eq!(first[2], "", "nothing was replaced");
    let now: u64 = first[1].parse().unwrap();
    assert_eq!(field(&mut con, key, "v").as_deref(), Some("1"));
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
    assert_eq!(
        second[3..],
        [
            TOKEN,
            "fp",
            "7",
            &now.to_string(),
            &(now + 30_000_000).to_string(),
            &(now + 90_000_000).to_string()
        ]
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
    let body: Vec<u8> = con.hget(key, "b").unwrap();
    assert_eq!(body, b"the body");

    let replay = claim(&mut con, key, OTHER, LEASE_US, GRACE_US);
    assert_eq!(replay[0], "completed");
    assert_eq!(replay[3], TOKEN);
    assert_eq!(replay[9], completed_at.to_string());
    assert_eq!(replay[10], "201");
    assert_eq!(replay[12], "the body");
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
    let plants: [(&str, Plant); 7] = [
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
fn a_completed_record_the_client_cannot_decode_is_replaced_only_if_unchanged() {
    let Some(mut con) = connect() else { return };
    let key = "scripts:{undecodable}";
    claim(&mut con, key, TOKEN, LEASE_US, GRACE_US);
    complete(&mut con, key, TOKEN, "3600000000", b"body");
    let () = con.hset(key, "h", "not headers").unwrap();
    // Naming another token changes nothing: the record is replayed as it is.
    assert_eq!(
        claim_replacing(&mut con, key, OTHER, LEASE_US, GRACE_US, OTHER)[0],
        "completed"
    );
    let replaced = claim_replacing(&mut con, key, OTHER, LEASE_US, GRACE_US, TOKEN);
    assert_eq!(replaced[0], "new");
    assert_ne!(replaced[2], "");
    assert_eq!(field(&mut con, key, "t").as_deref(), Some(OTHER));
    assert_eq!(field(&mut con, key, "b"), None);
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

#[test]
fn complete_release_and_reclaim_wake_the_keys_channel() {
    let Some(mut con) = connect() else { return };
    let server = redis_harness::shared().unwrap();
    let mut listener = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
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
    let seen: Vec<(String, String)> = (0..3)
        .map(|_| {
            let message = pubsub.get_message().unwrap();
            (
                message.get_channel_name().to_string(),
                message.get_payload().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (keys[0].to_string(), "completed".to_string()),
            (keys[1].to_string(), "released".to_string()),
            (keys[2].to_string(), "claimed".to_string()),
        ]
    );
}

#[test]
fn a_flushed_script_cache_is_reloaded() {
    let Some(mut con) = connect() else { return };
    let () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    assert_eq!(read(&mut con, "scripts:{after-flush}")[0], "absent");
}

/// The scripts that change a record read only its small fields: none of them can cost
/// more for a larger body.
#[test]
fn the_writing_scripts_never_read_the_response() {
    let prelude = include_str!("prelude.lua");
    let held = &prelude[prelude.find("local function held").unwrap()..];
    let held = &held[..held.find("\nend\n").unwrap()];
    assert!(held.contains("'v', 's', 't', 'ga'"), "{held}");
    for source in [super::COMPLETE, super::RELEASE, super::RENEW] {
        let body = &source[prelude.len()..];
        assert!(!body.contains("load()"), "{body}");
        assert!(!body.contains("HGET"), "{body}");
    }
}
