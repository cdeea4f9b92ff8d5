//! The layer's rules over real loopback HTTP, with an axum app in the test's process:
//! what the conformance scenarios do not reach (key syntax, methods, caps, streams,
//! the Stripe dialect, storage failures, scopes, fingerprints, disconnects, lapsed
//! leases, events).

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use idemkit_core::{Heartbeat, InMemoryBackend, OnStorageError, Policy, Response as Stored};
use idemkit_tower::{
    Compat, EventKind, IdempotencyEvent, IdempotencyLayer, IdempotencyLayerBuilder, MAX_KEY_BYTES,
    StoredHeaders,
};
use support::client::{Call, Reply, send, send_raw, send_then_abandon};
use support::in_process::{Served, serve_axum};
use tokio::sync::Notify;

/// The app behind the layer: it counts its runs, and its request headers steer it.
#[derive(Clone, Default)]
struct App {
    calls: Arc<AtomicU64>,
    /// Requests with `x-gate` wait here until the test lets them go.
    gate: Arc<Notify>,
    /// Requests with `x-gate` are counted here once they wait.
    waiting: Arc<AtomicU64>,
}

impl App {
    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

/// `x-status`: the status; `x-len`: a chunked body of that many bytes; `x-sse`: an
/// event stream; `x-gate`: wait for the test; otherwise a JSON body with the run's
/// number and the request body.
async fn app_handler(State(app): State<App>, request: Request) -> Response {
    let call = app.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let (parts, body) = request.into_parts();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    if header("x-gate").is_some() {
        let released = app.gate.notified();
        app.waiting.fetch_add(1, Ordering::SeqCst);
        released.await;
    }
    let body = body.collect().await.unwrap().to_bytes();
    let status = header("x-status").map_or(201, |s| s.parse().unwrap());
    let mut builder = axum::http::Response::builder().status(status);
    let response_body = if let Some(length) = header("x-len") {
        let length: usize = length.parse().unwrap();
        builder = builder.header("content-type", "application/octet-stream");
        chunked(vec![b'z'; length])
    } else if header("x-sse").is_some() {
        builder = builder.header("content-type", "text/event-stream");
        chunked(b"data: one\n\ndata: two\n\n".to_vec())
    } else {
        builder = builder
            .header("content-type", "application/json")
            .header("link", "</first>")
            .header("link", "</second>")
            .header("set-cookie", "session=1")
            .header("x-private", "p");
        Body::from(
            serde_json::json!({ "call": call, "body": String::from_utf8_lossy(&body) }).to_string(),
        )
    };
    builder.body(response_body).unwrap()
}

/// A body sent in 512-byte chunks, with no declared length.
fn chunked(bytes: Vec<u8>) -> Body {
    struct Chunks(std::collections::VecDeque<Bytes>);
    impl http_body::Body for Chunks {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            std::task::Poll::Ready(
                self.0
                    .pop_front()
                    .map(|chunk| Ok(http_body::Frame::data(chunk))),
            )
        }
    }
    Body::new(Chunks(
        bytes.chunks(512).map(Bytes::copy_from_slice).collect(),
    ))
}

/// The events a layer reported, in order.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<IdempotencyEvent>>>);

impl Events {
    fn kinds(&self) -> Vec<EventKind> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|event| event.kind)
            .collect()
    }

    fn last(&self) -> IdempotencyEvent {
        self.0.lock().unwrap().last().cloned().expect("an event")
    }
}

fn builder() -> IdempotencyLayerBuilder<InMemoryBackend> {
    IdempotencyLayer::builder(InMemoryBackend::new()).single_tenant()
}

/// Serves the app behind the layer `builder` describes, reporting into `events`.
async fn serve(builder: IdempotencyLayerBuilder<InMemoryBackend>) -> (Served, App, Events) {
    let events = Events::default();
    let sink = events.clone();
    let layer = builder
        .on_event(move |event| sink.0.lock().unwrap().push(event.clone()))
        .build()
        .unwrap();
    let app = App::default();
    let router = Router::new()
        .fallback(app_handler)
        .with_state(app.clone())
        .layer(layer);
    (serve_axum(router).await, app, events)
}

fn post(key: &str) -> Call {
    Call::post("/orders").key(key).body(r#"{"sku":"A1"}"#)
}

fn replayed(reply: &Reply) -> bool {
    reply.header("idempotency-replayed") == Some("true")
}

// ----- the key header -----

#[tokio::test]
async fn quoted_and_bare_keys_name_one_record() {
    let (served, app, _) = serve(builder()).await;
    let bare = send(served.address, post("k-1")).await.unwrap();
    let quoted = send(served.address, post("\"k-1\"")).await.unwrap();
    assert_eq!(app.calls(), 1);
    assert!(replayed(&quoted));
    assert_eq!(quoted.body, bare.body);
}

#[tokio::test]
async fn the_header_name_is_matched_whatever_its_case() {
    let (served, app, _) = serve(builder()).await;
    for name in ["Idempotency-Key", "idempotency-key", "IDEMPOTENCY-KEY"] {
        let request = format!(
            "POST /orders HTTP/1.1\r\nHost: x\r\n{name}: case-key\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let answer = send_raw(served.address, request.as_bytes()).await.unwrap();
        assert!(answer.starts_with(b"HTTP/1.1 201"), "{name}");
    }
    assert_eq!(app.calls(), 1, "the three spellings name one key");
}

#[tokio::test]
async fn unusable_keys_are_400_and_never_run() {
    let (served, app, events) = serve(builder()).await;
    let longest = "k".repeat(MAX_KEY_BYTES);
    let too_long = "k".repeat(MAX_KEY_BYTES + 1);
    for key in ["\"unterminated", "\"bad\\escape\"", "\"\"", &too_long] {
        let reply = send(served.address, post(key)).await.unwrap();
        assert_eq!(reply.status, 400, "{key}");
        assert_eq!(reply.problem_type(), "urn:idemkit:missing-key");
        assert_eq!(events.last().kind, EventKind::InvalidKey);
    }
    // Sent twice in one request: refused too.
    let twice = send(served.address, post("a").key("b")).await.unwrap();
    assert_eq!(twice.status, 400);
    assert_eq!(app.calls(), 0);
    // 255 bytes is still a key.
    let reply = send(served.address, post(&longest)).await.unwrap();
    assert_eq!(reply.status, 201);
}

#[tokio::test]
async fn a_missing_key_passes_through_unless_required() {
    let (served, app, events) = serve(builder()).await;
    for _ in 0..2 {
        let reply = send(served.address, Call::post("/orders").body("x"))
            .await
            .unwrap();
        assert_eq!(reply.status, 201);
        assert!(!replayed(&reply));
    }
    assert_eq!(app.calls(), 2, "unprotected: both ran");
    assert!(events.kinds().is_empty(), "no decision to report");

    let (served, app, events) = serve(builder().require_key(true)).await;
    let reply = send(served.address, Call::post("/orders").body("x"))
        .await
        .unwrap();
    assert_eq!(reply.status, 400);
    assert_eq!(reply.problem_type(), "urn:idemkit:missing-key");
    assert_eq!(events.kinds(), [EventKind::MissingKey]);
    // Methods the layer does not protect still need no key.
    let reply = send(served.address, Call::get("/orders")).await.unwrap();
    assert_eq!(reply.status, 201);
    assert_eq!(app.calls(), 1);
}

// ----- methods -----

#[tokio::test]
async fn only_protected_methods_are_handled() {
    let (served, app, _) = serve(builder()).await;
    for method in [Method::GET, Method::PUT, Method::DELETE] {
        for _ in 0..2 {
            let reply = send(
                served.address,
                Call::new(method.clone(), "/orders").key("m"),
            )
            .await
            .unwrap();
            assert!(!replayed(&reply), "{method}");
        }
    }
    assert_eq!(
        app.calls(),
        6,
        "GET, PUT and DELETE pass through by default"
    );
    send(served.address, Call::new(Method::PATCH, "/orders").key("p"))
        .await
        .unwrap();
    let reply = send(served.address, Call::new(Method::PATCH, "/orders").key("p"))
        .await
        .unwrap();
    assert!(replayed(&reply), "PATCH is protected by default");

    let (served, app, _) = serve(builder().methods([Method::PUT])).await;
    send(served.address, Call::new(Method::PUT, "/o").key("k"))
        .await
        .unwrap();
    let put = send(served.address, Call::new(Method::PUT, "/o").key("k"))
        .await
        .unwrap();
    assert!(replayed(&put));
    send(served.address, post("k")).await.unwrap();
    send(served.address, post("k")).await.unwrap();
    assert_eq!(app.calls(), 3, "POST is no longer protected");
}

// ----- effective key and fingerprint -----

#[tokio::test]
async fn the_key_is_scoped_to_method_and_path() {
    let (served, app, _) = serve(builder()).await;
    send(served.address, Call::post("/a").key("k"))
        .await
        .unwrap();
    send(served.address, Call::post("/b").key("k"))
        .await
        .unwrap();
    send(served.address, Call::new(Method::PATCH, "/a").key("k"))
        .await
        .unwrap();
    assert_eq!(app.calls(), 3);
    let reply = send(served.address, Call::post("/a/").key("k"))
        .await
        .unwrap();
    assert!(replayed(&reply), "a trailing slash names the same path");
}

/// Sends key `k` as tenant `a`, as `b`, then as `a` again, through a layer scoped by
/// `x-tenant`: the handler runs for each tenant once, and `a`'s retry is replayed.
async fn one_key_from_two_callers(served: &Served, app: &App) {
    let a = send(served.address, post("k").header("x-tenant", "a"))
        .await
        .unwrap();
    let b = send(served.address, post("k").header("x-tenant", "b"))
        .await
        .unwrap();
    assert!(!replayed(&b));
    assert_ne!(a.body, b.body);
    let a_again = send(served.address, post("k").header("x-tenant", "a"))
        .await
        .unwrap();
    assert!(replayed(&a_again));
    assert_eq!(a_again.body, a.body);
    assert_eq!(app.calls(), 2);
}

/// Sends each of `calls`, expecting each refused for want of an identity, the handler
/// not run.
async fn refused_without_identity(served: &Served, app: &App, events: &Events, calls: Vec<Call>) {
    let runs = app.calls();
    for call in calls {
        let reply = send(served.address, call).await.unwrap();
        assert_eq!(reply.status, 500);
        assert_eq!(reply.problem_type(), "urn:idemkit:identity-unavailable");
        assert_eq!(events.last().kind, EventKind::IdentityUnavailable);
    }
    assert_eq!(app.calls(), runs);
}

#[tokio::test]
async fn callers_are_kept_apart_by_scope_and_refused_without_identity() {
    let scoped =
        builder().scope(|parts| Some(parts.headers.get("x-tenant")?.to_str().ok()?.to_owned()));
    let (served, app, events) = serve(scoped).await;
    one_key_from_two_callers(&served, &app).await;
    let anonymous = vec![post("k"), post("k").header("x-tenant", "")];
    refused_without_identity(&served, &app, &events, anonymous).await;
}

#[tokio::test]
async fn a_scope_header_keeps_callers_apart_and_refuses_a_header_sent_twice() {
    let scoped = builder().scope_header(http::header::HeaderName::from_static("x-tenant"));
    let (served, app, events) = serve(scoped).await;
    one_key_from_two_callers(&served, &app).await;
    // No identity, or two: a front layer may have checked either value, so neither is
    // taken, even when both name the caller whose record exists.
    let refused = vec![
        post("k"),
        post("k").header("x-tenant", ""),
        post("k").header("x-tenant", "a").header("x-tenant", "b"),
        post("k").header("x-tenant", "b").header("x-tenant", "a"),
        post("k").header("x-tenant", "a").header("x-tenant", "a"),
    ];
    refused_without_identity(&served, &app, &events, refused).await;
}

#[test]
fn a_scope_header_names_records_as_a_scope_function_reading_it_does() {
    let header = builder()
        .scope_header(http::header::HeaderName::from_static("x-tenant"))
        .build()
        .unwrap();
    let function = builder()
        .scope(|parts| Some(parts.headers.get("x-tenant")?.to_str().ok()?.to_owned()))
        .build()
        .unwrap();
    let parts = |tenant: &str| {
        http::Request::post("/orders")
            .header("idempotency-key", "k")
            .header("x-tenant", tenant)
            .body(())
            .unwrap()
            .into_parts()
            .0
    };
    let (a, b) = (parts("tenant-a"), parts("tenant-b"));
    assert_eq!(header.effective_key(&a), function.effective_key(&a));
    assert!(header.effective_key(&a).is_ok());
    assert_ne!(header.effective_key(&a), header.effective_key(&b));
}

#[tokio::test]
async fn the_fingerprint_covers_query_and_body_and_named_headers() {
    let named =
        builder().fingerprint_headers([http::header::HeaderName::from_static("x-currency")]);
    let (served, app, _) = serve(named).await;
    let json = |body: &str| {
        Call::post("/pay?a=1&b=2")
            .key("f")
            .header("content-type", "application/json")
            .header("x-currency", "USD")
            .body(body.to_owned())
    };
    send(served.address, json(r#"{"amount":1,"to":"x"}"#))
        .await
        .unwrap();
    // Same meaning, other spelling: replayed.
    let reordered = Call {
        path: "/pay?b=2&a=1".to_owned(),
        ..json(r#"{ "to": "x", "amount": 1 }"#)
    };
    let reply = send(served.address, reordered).await.unwrap();
    assert!(replayed(&reply));
    // Another meaning: refused, never replayed.
    let other_query = Call {
        path: "/pay?a=1&b=3".to_owned(),
        ..json(r#"{"amount":1,"to":"x"}"#)
    };
    let mut other_currency = json(r#"{"amount":1,"to":"x"}"#);
    other_currency
        .headers
        .retain(|(name, _)| name != "x-currency");
    let other_currency = other_currency.header("x-currency", "EUR");
    for call in [
        json(r#"{"amount":2,"to":"x"}"#),
        other_query,
        other_currency,
    ] {
        let reply = send(served.address, call).await.unwrap();
        assert_eq!(reply.status, 422);
        assert_eq!(reply.problem_type(), "urn:idemkit:payload-mismatch");
    }
    assert_eq!(app.calls(), 1);
}

// ----- request and response bodies -----

#[tokio::test]
async fn request_bodies_over_the_cap_are_413_and_never_run() {
    let (served, app, events) = serve(builder().max_request_body_bytes(1000)).await;
    let at_cap = send(served.address, post("a").body(vec![b'x'; 1000]))
        .await
        .unwrap();
    assert_eq!(at_cap.status, 201);
    let over = send(served.address, post("b").body(vec![b'x'; 1001]))
        .await
        .unwrap();
    assert_eq!(over.status, 413);
    assert_eq!(over.problem_type(), "urn:idemkit:request-too-large");
    assert_eq!(events.last().kind, EventKind::RequestTooLarge);
    // Chunked, with no length declared: counted as it arrives.
    let mut request = b"POST /orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: c\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for _ in 0..3 {
        request.extend_from_slice(b"190\r\n");
        request.extend_from_slice(&[b'y'; 400]);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let answer = send_raw(served.address, &request).await.unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 413"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(app.calls(), 1);
}

#[tokio::test]
async fn response_bodies_are_stored_up_to_the_cap_counted_as_they_stream() {
    let (served, app, events) = serve(builder().max_response_body_bytes(1024)).await;
    let at_cap = || post("fits").header("x-len", "1024");
    let first = send(served.address, at_cap()).await.unwrap();
    assert_eq!(first.body.len(), 1024);
    assert!(first.header("idempotency-replay-unavailable").is_none());
    let replay = send(served.address, at_cap()).await.unwrap();
    assert!(replayed(&replay));
    assert_eq!(replay.body, first.body);

    let over = || post("over").header("x-len", "1025");
    let first = send(served.address, over()).await.unwrap();
    assert_eq!(
        first.header("idempotency-replay-unavailable"),
        Some("size-exceeded")
    );
    assert_eq!(first.body, vec![b'z'; 1025], "delivered whole");
    assert_eq!(events.last().kind, EventKind::SizeExceeded);
    let again = send(served.address, over()).await.unwrap();
    assert!(!replayed(&again));
    assert_eq!(app.calls(), 3, "the long response was not stored");
}

#[tokio::test]
async fn event_streams_are_never_stored() {
    let (served, app, events) = serve(builder()).await;
    for _ in 0..2 {
        let reply = send(served.address, post("sse").header("x-sse", "1"))
            .await
            .unwrap();
        assert_eq!(
            reply.header("idempotency-replay-unavailable"),
            Some("streaming")
        );
        assert_eq!(reply.body, "data: one\n\ndata: two\n\n");
        assert!(!replayed(&reply));
    }
    assert_eq!(app.calls(), 2);
    assert_eq!(events.kinds(), [EventKind::Streaming, EventKind::Streaming]);
}

// ----- what is stored -----

#[tokio::test]
async fn replays_carry_the_stored_headers_only() {
    let (served, _, _) = serve(builder()).await;
    let first = send(served.address, post("h")).await.unwrap();
    assert_eq!(first.header("set-cookie"), Some("session=1"));
    assert_eq!(first.header("x-private"), Some("p"));
    let replay = send(served.address, post("h")).await.unwrap();
    let links: Vec<&HeaderValue> = replay.headers.get_all("link").iter().collect();
    assert_eq!(
        links,
        ["</first>", "</second>"],
        "repeated headers kept in order"
    );
    assert_eq!(replay.header("content-type"), Some("application/json"));
    assert!(replay.header("set-cookie").is_none());
    assert!(replay.header("x-private").is_none());

    let custom = builder().stored_headers(
        StoredHeaders::default().allow(http::header::HeaderName::from_static("x-private")),
    );
    let (served, _, _) = serve(custom).await;
    send(served.address, post("h")).await.unwrap();
    let replay = send(served.address, post("h")).await.unwrap();
    assert_eq!(replay.header("x-private"), Some("p"));
    assert!(replay.header("set-cookie").is_none());
}

#[tokio::test]
async fn server_errors_are_never_stored_whatever_the_predicate_says() {
    let (served, app, events) = serve(
        builder().policy(
            Policy::builder()
                .cacheable(|_: &Stored| true)
                .build()
                .expect("a valid policy"),
        ),
    )
    .await;
    for _ in 0..2 {
        let reply = send(served.address, post("e").header("x-status", "503"))
            .await
            .unwrap();
        assert_eq!(reply.status, 503);
        assert!(!replayed(&reply));
    }
    assert_eq!(events.kinds(), [EventKind::NotCached, EventKind::NotCached]);
    // The predicate can store a 4xx.
    send(served.address, post("c").header("x-status", "409"))
        .await
        .unwrap();
    let reply = send(served.address, post("c").header("x-status", "409"))
        .await
        .unwrap();
    assert!(replayed(&reply));
    assert_eq!(reply.status, 409);
    assert_eq!(app.calls(), 3);

    // By default a 4xx is not stored either.
    let (served, app, _) = serve(builder()).await;
    send(served.address, post("c").header("x-status", "409"))
        .await
        .unwrap();
    send(served.address, post("c").header("x-status", "409"))
        .await
        .unwrap();
    assert_eq!(app.calls(), 2);
}

// ----- the Stripe dialect -----

#[tokio::test]
async fn the_stripe_dialect_answers_400_or_409_and_marks_replays_its_way() {
    let stripe = builder().compat(Compat::Stripe).policy(
        Policy::builder()
            .wait_timeout(Duration::from_millis(200))
            .build()
            .expect("a valid policy"),
    );
    let (served, app, _) = serve(stripe).await;
    send(served.address, post("s")).await.unwrap();
    let replay = send(served.address, post("s")).await.unwrap();
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert!(replay.header("idempotency-replayed").is_none());

    // A key reused with other parameters: Stripe's 400 and error object.
    let mismatch = send(served.address, post("s").body("other")).await.unwrap();
    assert_eq!(mismatch.status, 400);
    assert_eq!(mismatch.header("content-type"), Some("application/json"));
    let error = &mismatch.json()["error"];
    assert_eq!(error["type"], "idempotency_error");
    assert_eq!(error["code"], "urn:idemkit:payload-mismatch");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));

    let address = served.address;
    let held = tokio::spawn(async move { send(address, post("busy").header("x-gate", "1")).await });
    wait_until(|| app.waiting.load(Ordering::SeqCst) == 1).await;
    let busy = send(served.address, post("busy").header("x-gate", "1"))
        .await
        .unwrap();
    assert_eq!(busy.status, 409);
    assert_eq!(busy.problem_type(), "urn:idemkit:in-progress");
    assert!(busy.header("retry-after").is_some());
    // Other parameters meeting the key in flight: 409 too, as Stripe answers.
    let other = send(
        served.address,
        post("busy").header("x-gate", "1").body("other"),
    )
    .await
    .unwrap();
    assert_eq!(other.status, 409);
    assert_eq!(other.problem_type(), "urn:idemkit:in-progress");
    assert!(other.header("retry-after").is_some());
    app.gate.notify_waiters();
    assert_eq!(held.await.unwrap().unwrap().status, 201);
    // Once it is done, they are compared: 400.
    let other = send(
        served.address,
        post("busy").header("x-gate", "1").body("other"),
    )
    .await
    .unwrap();
    assert_eq!(other.status, 400);
    assert_eq!(other.json()["error"]["type"], "idempotency_error");
}

#[tokio::test]
async fn the_default_dialect_refuses_other_parameters_in_flight_with_422() {
    let (served, app, _) = serve(builder()).await;
    let address = served.address;
    let held = tokio::spawn(async move { send(address, post("busy").header("x-gate", "1")).await });
    wait_until(|| app.waiting.load(Ordering::SeqCst) == 1).await;
    let other = send(served.address, post("busy").body("other"))
        .await
        .unwrap();
    assert_eq!(other.status, 422);
    assert_eq!(other.problem_type(), "urn:idemkit:payload-mismatch");
    app.gate.notify_waiters();
    assert_eq!(held.await.unwrap().unwrap().status, 201);
}

/// Polls `done` every 10 ms, for at most a minute.
async fn wait_until(mut done: impl FnMut() -> bool) {
    for _ in 0..6_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the condition did not hold within a minute");
}

// ----- storage failures -----

/// A store that holds one record: the second key fails to claim (the store is full),
/// which is the storage-error path.
fn one_record_store() -> IdempotencyLayerBuilder<InMemoryBackend> {
    IdempotencyLayer::builder(InMemoryBackend::builder().max_size(1).build()).single_tenant()
}

#[tokio::test]
async fn a_failing_store_is_503_with_retry_after_when_failing_closed() {
    let (served, app, events) =
        serve(one_record_store().storage_retry_after(Duration::from_secs(7))).await;
    send(served.address, post("first")).await.unwrap();
    let refused = send(served.address, post("second")).await.unwrap();
    assert_eq!(refused.status, 503);
    assert_eq!(refused.problem_type(), "urn:idemkit:storage-error");
    assert_eq!(refused.header("retry-after"), Some("7"));
    assert_eq!(events.last().kind, EventKind::StorageFailed);
    assert_eq!(app.calls(), 1, "not run when failing closed");
}

#[tokio::test]
async fn a_failing_store_runs_the_handler_unprotected_when_failing_open() {
    let (served, app, events) = serve(
        one_record_store().policy(
            Policy::builder()
                .on_storage_error(OnStorageError::FailOpen)
                .build()
                .expect("a valid policy"),
        ),
    )
    .await;
    send(served.address, post("first")).await.unwrap();
    for _ in 0..2 {
        let reply = send(served.address, post("second")).await.unwrap();
        assert_eq!(reply.status, 201);
        assert!(!replayed(&reply));
        assert_eq!(
            reply.header("idempotency-replay-unavailable"),
            Some("storage-error"),
            "its client learns that a retry runs again"
        );
    }
    assert_eq!(app.calls(), 3);
    assert_eq!(events.last().kind, EventKind::RanUnprotected);
}

// ----- disconnects and leases -----

#[tokio::test]
async fn a_client_that_goes_away_mid_run_does_not_leave_its_key_held() {
    let (served, app, events) = serve(
        builder().policy(
            Policy::builder()
                .wait_timeout(Duration::from_millis(200))
                .build()
                .expect("a valid policy"),
        ),
    )
    .await;
    let waiting = app.waiting.clone();
    send_then_abandon(served.address, post("gone").header("x-gate", "1"), || {
        let started = waiting.load(Ordering::SeqCst) == 1;
        async move { started }
    })
    .await;
    // The server sees the connection close and drops the run, which releases the key:
    // a retry runs at once rather than waiting out the 30 s lease. Retried until the
    // close has been seen (bounded).
    let mut reply = None;
    for _ in 0..200 {
        let attempt = send(served.address, post("gone")).await.unwrap();
        if attempt.status == 201 {
            reply = Some(attempt);
            break;
        }
        assert_eq!(attempt.status, 423, "still held until the close is seen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reply = reply.expect("the key was released");
    assert!(!replayed(&reply));
    assert_eq!(app.calls(), 2);
    assert_eq!(events.last().kind, EventKind::New);
}

#[tokio::test(flavor = "multi_thread")]
async fn waiters_that_give_up_leave_the_others_their_replay() {
    let (served, app, _) = serve(builder()).await;
    let address = served.address;
    let holder =
        tokio::spawn(async move { send(address, post("crowd").header("x-gate", "1")).await });
    wait_until(|| app.waiting.load(Ordering::SeqCst) == 1).await;
    // Five duplicates wait for the holder; three of their clients give up.
    let mut patient = Vec::new();
    for _ in 0..2 {
        patient.push(tokio::spawn(
            async move { send(address, post("crowd")).await },
        ));
    }
    let mut impatient = Vec::new();
    for _ in 0..3 {
        impatient.push(tokio::spawn(
            async move { send(address, post("crowd")).await },
        ));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for waiter in &impatient {
        waiter.abort();
    }
    app.gate.notify_waiters();
    let first = holder.await.unwrap().unwrap();
    for waiter in patient {
        let reply = waiter.await.unwrap().unwrap();
        assert!(replayed(&reply));
        assert_eq!(reply.body, first.body);
    }
    assert_eq!(app.calls(), 1);
    let later = send(served.address, post("crowd")).await.unwrap();
    assert!(replayed(&later));
}

#[tokio::test]
async fn a_stalled_holder_loses_its_key_when_its_lease_lapses() {
    // No heartbeat: a holder that stalls past its lease is taken over, as a crashed one
    // would be, and its late result is fenced out.
    let stalling = builder().policy(
        Policy::builder()
            .heartbeat(Heartbeat::Off)
            .lease_ttl(Duration::from_millis(300))
            .build()
            .expect("a valid policy"),
    );
    let (served, app, events) = serve(stalling).await;
    let address = served.address;
    let zombie =
        tokio::spawn(async move { send(address, post("lapse").header("x-gate", "1")).await });
    wait_until(|| app.waiting.load(Ordering::SeqCst) == 1).await;
    tokio::time::sleep(Duration::from_millis(900)).await;

    let taker = send(served.address, post("lapse")).await.unwrap();
    assert_eq!(taker.status, 201);
    assert!(!replayed(&taker));
    assert_eq!(taker.json()["call"], 2);
    assert_eq!(events.last().kind, EventKind::Reclaimed);

    app.gate.notify_waiters();
    let zombie = zombie.await.unwrap().unwrap();
    assert_eq!(
        zombie.json()["call"],
        1,
        "the stalled client still gets its own response"
    );
    assert_eq!(events.last().kind, EventKind::ReclaimedLoss);
    let replay = send(served.address, post("lapse")).await.unwrap();
    assert!(replayed(&replay));
    assert_eq!(
        replay.json()["call"],
        2,
        "the taker's result is the one kept"
    );
}

#[tokio::test]
async fn a_duplicate_waits_then_replays_and_times_out_with_the_lease_remaining() {
    let (served, app, events) = serve(
        builder().policy(
            Policy::builder()
                .wait_timeout(Duration::from_millis(300))
                .build()
                .expect("a valid policy"),
        ),
    )
    .await;
    let address = served.address;
    let first = tokio::spawn(async move { send(address, post("w").header("x-gate", "1")).await });
    wait_until(|| app.waiting.load(Ordering::SeqCst) == 1).await;
    let timed_out = send(served.address, post("w")).await.unwrap();
    assert_eq!(timed_out.status, 423);
    let seconds: u64 = timed_out.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&seconds), "{seconds}");
    assert_eq!(events.last().kind, EventKind::InProgress);
    app.gate.notify_waiters();
    let first = first.await.unwrap().unwrap();
    let replay = send(served.address, post("w")).await.unwrap();
    assert_eq!(replay.body, first.body);
    assert_eq!(app.calls(), 1);
}

// ----- events -----

#[tokio::test]
async fn each_decision_is_reported_with_the_hashed_key_never_the_raw_one() {
    let (served, _, events) = serve(builder()).await;
    send(served.address, post("secret-key-1")).await.unwrap();
    send(served.address, post("secret-key-1")).await.unwrap();
    send(served.address, post("secret-key-1").body("other"))
        .await
        .unwrap();
    assert_eq!(
        events.kinds(),
        [
            EventKind::New,
            EventKind::Replayed,
            EventKind::PayloadMismatch
        ]
    );
    let event = events.last();
    assert_eq!(event.status, Some(StatusCode::UNPROCESSABLE_ENTITY));
    assert_eq!(event.method, Method::POST);
    assert_eq!(event.path, "/orders");
    assert_eq!(event.backend, "memory");
    assert_eq!(event.fingerprint_version, 2);
    let key = event.effective_key.clone().expect("a hashed key");
    assert_eq!(key.as_str().len(), 64);
    assert!(!format!("{event:?}").contains("secret-key-1"));
}
