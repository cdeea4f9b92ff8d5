//! The fingerprint's rules over real loopback HTTP: two requests a handler reads
//! differently never share a stored response. JSON numbers are compared exactly, an
//! object that repeats a name matches only itself, and what a body is (JSON, form,
//! multipart, raw, and each part's own headers) counts, not only its bytes.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use idemkit_core::Backend;
use idemkit_core::{Claim, InMemoryBackend, Key, Response as StoredResponse};
use idemkit_tower::IdempotencyLayer;
use support::client::{Call, Reply, send};
use support::in_process::{Served, serve_axum};

/// Counts its runs and answers 201 with the run's number.
async fn counting(State(calls): State<Arc<AtomicU64>>) -> (http::StatusCode, String) {
    let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
    (http::StatusCode::CREATED, format!("run {call}"))
}

/// A single-tenant layer over `backend` in front of the counting handler.
async fn serve_with(backend: InMemoryBackend) -> (Served, Arc<AtomicU64>) {
    let layer = IdempotencyLayer::builder(backend)
        .single_tenant()
        .build()
        .unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let router = Router::new()
        .fallback(counting)
        .with_state(Arc::clone(&calls))
        .layer(layer);
    (serve_axum(router).await, calls)
}

async fn serve() -> (Served, Arc<AtomicU64>) {
    serve_with(InMemoryBackend::new()).await
}

fn typed(key: &str, content_type: &str, body: &str) -> Call {
    Call::post("/charges")
        .key(key)
        .header("content-type", content_type)
        .body(body.to_owned())
}

fn json(key: &str, body: &str) -> Call {
    typed(key, "application/json", body)
}

fn replayed(reply: &Reply) -> bool {
    reply.header("idempotency-replayed") == Some("true")
}

/// Sends `first` then `second` with one key: asserts the first ran and the second was
/// refused as another request (422), never given the first one's response.
async fn assert_refused_after(served: &Served, first: Call, second: Call) {
    let what = format!(
        "{:?} then {:?}",
        String::from_utf8_lossy(&first.body),
        String::from_utf8_lossy(&second.body)
    );
    let ran = send(served.address, first).await.unwrap();
    assert_eq!(ran.status, 201, "{what}");
    assert!(!replayed(&ran), "{what}");
    let refused = send(served.address, second).await.unwrap();
    assert_eq!(refused.status, 422, "{what}: {:?}", refused.body);
    assert_eq!(
        refused.problem_type(),
        "urn:idemkit:payload-mismatch",
        "{what}"
    );
    assert_ne!(refused.body, ran.body, "{what}");
}

#[tokio::test]
async fn json_numbers_that_differ_in_any_digit_are_two_requests() {
    let (served, calls) = serve().await;
    let pairs = [
        ("18446744073709551616", "18446744073709551617"),
        (
            "1000000000000000000000000000000",
            "1000000000000000000000000000001",
        ),
        ("-9223372036854775809", "-9223372036854775810"),
        ("0.1", "0.10000000000000000001"),
        ("18446744073709551616", "1.8446744073709552e19"),
        ("1", "1.0"),
        ("1e400", "1e401"),
    ];
    for (index, (a, b)) in pairs.into_iter().enumerate() {
        // Each way round: neither is ever replayed to the other.
        for (first, second, tag) in [(a, b, "ab"), (b, a, "ba")] {
            let key = format!("n-{index}-{tag}");
            assert_refused_after(
                &served,
                json(&key, &format!(r#"{{"amount":{first}}}"#)),
                json(&key, &format!(r#"{{"amount":{second}}}"#)),
            )
            .await;
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2 * pairs.len() as u64);
}

#[tokio::test]
async fn json_numbers_of_the_same_decimal_value_replay() {
    let (served, calls) = serve().await;
    for (index, (a, b)) in [
        ("1.50", "1.5"),
        ("1e2", "100.0"),
        ("-0", "0"),
        ("25e-1", "2.5"),
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("same-{index}");
        let first = send(served.address, json(&key, &format!(r#"{{"amount":{a}}}"#)))
            .await
            .unwrap();
        let again = send(
            served.address,
            json(&key, &format!(r#"{{ "amount" : {b} }}"#)),
        )
        .await
        .unwrap();
        assert!(replayed(&again), "{a} and {b}");
        assert_eq!(again.body, first.body);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_hostile_exponent_is_answered_promptly_and_matches_only_itself() {
    let (served, calls) = serve().await;
    let hostile = format!(r#"{{"amount":1e{}}}"#, "9".repeat(100_000));
    let started = std::time::Instant::now();
    let first = send(served.address, json("huge", &hostile)).await.unwrap();
    assert_eq!(first.status, 201);
    let again = send(served.address, json("huge", &hostile)).await.unwrap();
    assert!(replayed(&again));
    assert!(started.elapsed() < Duration::from_secs(30));
    let other = format!(r#"{{ "amount":1e{}}}"#, "9".repeat(100_000));
    let refused = send(served.address, json("huge", &other)).await.unwrap();
    assert_eq!(
        refused.status, 422,
        "read by its raw bytes: a space is a difference"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_object_that_repeats_a_name_matches_only_itself() {
    let (served, calls) = serve().await;
    let repeated = r#"{"a":1,"a":2}"#;
    for (index, other) in [r#"{"a":2}"#, r#"{"a":1}"#, r#"{"a":2,"a":1}"#]
        .into_iter()
        .enumerate()
    {
        assert_refused_after(
            &served,
            json(&format!("dup-{index}"), repeated),
            json(&format!("dup-{index}"), other),
        )
        .await;
        assert_refused_after(
            &served,
            json(&format!("dup-rev-{index}"), other),
            json(&format!("dup-rev-{index}"), repeated),
        )
        .await;
    }
    // Itself, byte for byte, is a retry.
    send(served.address, json("dup-self", repeated))
        .await
        .unwrap();
    let again = send(served.address, json("dup-self", repeated))
        .await
        .unwrap();
    assert!(replayed(&again));
    assert_eq!(calls.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn what_a_body_is_counts_not_only_its_bytes() {
    let (served, _) = serve().await;
    // The canonical JSON of one is the raw bytes of the other.
    assert_refused_after(
        &served,
        json("kind-1", r#"{"b":1,"a":2}"#),
        typed("kind-1", "text/plain", r#"{"a":2,"b":1}"#),
    )
    .await;
    assert_refused_after(
        &served,
        typed("kind-2", "text/plain", r#"{"a":2,"b":1}"#),
        json("kind-2", r#"{"b":1,"a":2}"#),
    )
    .await;
    // The canonical form of a form is the raw bytes of another body.
    assert_refused_after(
        &served,
        typed("kind-3", "application/x-www-form-urlencoded", "b=2&a=1"),
        typed("kind-3", "text/plain", "a=1&b=2"),
    )
    .await;
    // The same raw bytes, declared as two things.
    assert_refused_after(
        &served,
        typed("kind-4", "text/plain", "payload"),
        typed("kind-4", "application/octet-stream", "payload"),
    )
    .await;
}

/// A one-part multipart form whose part has `headers` after its disposition.
fn multipart(key: &str, disposition: &str, headers: &str) -> Call {
    let body = format!(
        "--XyZ\r\nContent-Disposition: form-data; name=\"doc\"{disposition}\r\n{headers}\r\n\
         same content\r\n--XyZ--\r\n"
    );
    typed(key, "multipart/form-data; boundary=XyZ", &body)
}

#[tokio::test]
async fn a_multipart_parts_own_headers_count() {
    let (served, calls) = serve().await;
    let cases = [
        (
            ("", "Content-Type: text/plain\r\n"),
            ("", "Content-Type: application/json\r\n"),
        ),
        (("", ""), ("", "Content-Type: text/plain\r\n")),
        (("; filename=\"a.txt\"", ""), ("; filename=\"b.txt\"", "")),
        (("; filename=\"a.txt\"", ""), ("", "")),
        (
            ("; filename*=UTF-8''a.txt", ""),
            ("; filename*=UTF-8''b.txt", ""),
        ),
        (("; filename*=UTF-8''a.txt", ""), ("", "")),
    ];
    for (index, (first, second)) in cases.into_iter().enumerate() {
        let key = format!("part-{index}");
        assert_refused_after(
            &served,
            multipart(&key, first.0, first.1),
            multipart(&key, second.0, second.1),
        )
        .await;
    }
    // The same part again is a retry.
    let same = multipart(
        "part-same",
        "; filename=\"a.txt\"",
        "Content-Type: text/plain\r\n",
    );
    send(served.address, same.clone()).await.unwrap();
    assert!(replayed(&send(served.address, same).await.unwrap()));
    assert_eq!(calls.load(Ordering::SeqCst), cases.len() as u64 + 1);
}

#[tokio::test]
async fn a_record_of_the_first_fingerprint_version_is_neither_replayed_nor_refused() {
    // What version 1 of this layer stored for `POST /charges` with key `old` (single
    // tenant: an empty scope), under its effective key of four parts.
    let backend = InMemoryBackend::new();
    let old_key = Key::new(["old", "", "POST", "/charges"]);
    let Claim::New(token) = backend
        .claim(
            old_key.as_str(),
            "a version 1 fingerprint",
            1,
            Duration::from_secs(30),
        )
        .await
        .unwrap()
    else {
        panic!("a fresh store");
    };
    let stored = backend.complete(
        old_key.as_str(),
        &token,
        StoredResponse::new(201, "stored by version 1").into(),
        Duration::from_secs(3600),
    );
    assert!(stored.await.unwrap());
    let (served, calls) = serve_with(backend).await;
    let reply = send(served.address, json("old", r#"{"amount":1}"#))
        .await
        .unwrap();
    assert_eq!(reply.status, 201);
    assert!(!replayed(&reply));
    assert_eq!(&reply.body[..], b"run 1");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Its own retries replay what it stored.
    let again = send(served.address, json("old", r#"{"amount":1}"#))
        .await
        .unwrap();
    assert!(replayed(&again));
    assert_eq!(&again.body[..], b"run 1");
}
