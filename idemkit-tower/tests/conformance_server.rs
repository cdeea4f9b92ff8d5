//! The conformance server's own contract, before any idempotency: where it listens, the
//! handler's answer, `/_stats`, the test headers, the crash.

mod support;

use std::time::Duration;

use http::Method;
use support::client::{Call, send};
use support::server::ServerProcess;

#[tokio::test]
async fn every_path_and_method_reaches_the_counting_handler() {
    let server = ServerProcess::start(&[]);
    assert!(server.address.ip().is_loopback());
    assert_eq!(server.handler_calls().await, 0);
    let mut servers = Vec::new();
    for (index, (method, path)) in [
        (Method::POST, "/resources"),
        (Method::PUT, "/a/b?c=d"),
        (Method::DELETE, "/"),
        (Method::GET, "/anything"),
    ]
    .into_iter()
    .enumerate()
    {
        let reply = send(
            server.address,
            Call::new(method.clone(), path)
                .header("X-Identity", "tenant-A:user-1")
                .body(format!("payload {index}")),
        )
        .await
        .unwrap();
        assert_eq!(reply.status, 201, "{method} {path}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let json = reply.json();
        assert_eq!(json["call"], index as u64 + 1);
        assert_eq!(json["identity"], "tenant-A:user-1");
        assert_eq!(json["body"], format!("payload {index}"));
        servers.push(json["server"].as_str().unwrap().to_owned());
    }
    assert!(servers.iter().all(|id| *id == servers[0] && !id.is_empty()));
    assert_eq!(server.handler_calls().await, 4);

    let other = ServerProcess::start(&[]);
    let reply = send(other.address, Call::post("/r")).await.unwrap();
    assert_ne!(
        reply.json()["server"],
        servers[0],
        "a server id per process"
    );
    assert_eq!(reply.json()["identity"], "");
}

#[tokio::test]
async fn test_headers_steer_the_handler() {
    let server = ServerProcess::start(&[]);
    let reply = send(
        server.address,
        Call::post("/resources")
            .header("X-Test-Status", "500")
            .header("X-Test-Response-Header", "Location: /resources/abc123")
            .header("X-Test-Response-Header", "ETag: \"v1\""),
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 500);
    assert_eq!(reply.header("location"), Some("/resources/abc123"));
    assert_eq!(reply.header("etag"), Some("\"v1\""));

    // The long body goes out in chunks: no Content-Length on the wire.
    let raw = support::client::send_raw(
        server.address,
        b"POST /r HTTP/1.1\r\nHost: x\r\nX-Test-Body-Bytes: 3000\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    let head = text.split("\r\n\r\n").next().unwrap();
    assert!(head.starts_with("http/1.1 201"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    assert!(!head.contains("content-length"), "{head}");

    let reply = send(
        server.address,
        Call::post("/r").header("X-Test-Body-Bytes", "3000"),
    )
    .await
    .unwrap();
    assert_eq!(reply.body.len(), 3000);
}

#[tokio::test]
async fn the_crash_header_aborts_the_process_before_it_answers() {
    let mut server = ServerProcess::start(&[]);
    let crashed = send(server.address, Call::post("/r").header("X-Test-Crash", "1")).await;
    assert!(
        crashed.is_err(),
        "no answer from a crashed server: {crashed:?}"
    );
    let status = server
        .wait_for_exit(Duration::from_secs(60))
        .expect("the process exits");
    assert!(!status.success(), "aborted, not exited cleanly: {status:?}");
}

#[tokio::test]
async fn events_are_json_lines_and_storage_keys_name_their_records() {
    let server = ServerProcess::start(&[]);
    let call = || {
        Call::post("/resources")
            .key("K-storage")
            .header("X-Identity", "tenant-A:user-1")
            .body("x")
    };
    send(server.address, call()).await.unwrap();
    send(server.address, call()).await.unwrap();
    let storage_key = |identity: &'static str| {
        let address = server.address;
        async move {
            let reply = send(
                address,
                Call::get("/_storage_key?method=POST&path=%2Fresources")
                    .key("K-storage")
                    .header("X-Identity", identity),
            )
            .await
            .unwrap();
            assert_eq!(reply.status, 200);
            assert_eq!(reply.header("content-type"), Some("text/plain"));
            String::from_utf8(reply.body.to_vec()).unwrap()
        }
    };
    let key_a = storage_key("tenant-A:user-1").await;
    let key_b = storage_key("tenant-B:user-2").await;
    assert_ne!(key_a, key_b, "another caller, another record");

    // The printed events: one line each, naming the record by the same key.
    let mut events = Vec::new();
    for _ in 0..500 {
        events = server.events();
        if events.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["event"], "idempotency.new");
    assert_eq!(events[1]["event"], "idempotency.replayed");
    for event in &events {
        assert_eq!(event["effective_key"], key_a.as_str());
        assert_eq!(event["method"], "POST");
        assert_eq!(event["path"], "/resources");
        assert_eq!(event["status"], 201);
        assert_eq!(event["backend"], "memory");
        assert!(event["latency_ms"].is_number());
    }
    // The two routes outside the layer produce no event, and the handler did not run
    // for them.
    assert_eq!(server.handler_calls().await, 1);
    let no_key = send(
        server.address,
        Call::get("/_storage_key?method=POST&path=%2Fresources"),
    )
    .await
    .unwrap();
    assert_eq!(no_key.status, 400);
}

/// `call` with an `X-Identity` header of exactly these bytes (not necessarily UTF-8).
fn with_identity(call: Call, identity: &[u8]) -> Call {
    let mut call = call;
    call.headers.push((
        http::HeaderName::from_static("x-identity"),
        http::HeaderValue::from_bytes(identity).expect("a header value"),
    ));
    call
}

#[tokio::test]
async fn two_identities_that_differ_only_outside_utf8_never_share_records() {
    let server = ServerProcess::start(&[]);
    let charge = || Call::post("/charges").key("shared-key").body("amount=100");
    // Each is invalid UTF-8; a lossy conversion makes both `tenant-\u{fffd}`.
    let (first, second) = (&b"tenant-\xff"[..], &b"tenant-\xfe"[..]);
    let a = send(server.address, with_identity(charge(), first))
        .await
        .unwrap();
    assert_eq!(a.status, 201);
    let b = send(server.address, with_identity(charge(), second))
        .await
        .unwrap();
    assert_eq!(b.status, 201);
    assert_eq!(
        b.header("idempotency-replayed"),
        None,
        "not the other's response"
    );
    assert_ne!(b.json()["call"], a.json()["call"]);
    // Nor does the replacement character itself name either of them.
    let replacement = send(
        server.address,
        with_identity(charge(), "tenant-\u{fffd}".as_bytes()),
    )
    .await
    .unwrap();
    assert_eq!(replacement.header("idempotency-replayed"), None);
    assert_eq!(server.handler_calls().await, 3);
    // Each identity's own retry replays its own response.
    for (identity, original) in [(first, &a), (second, &b)] {
        let retry = send(server.address, with_identity(charge(), identity))
            .await
            .unwrap();
        assert_eq!(retry.header("idempotency-replayed"), Some("true"));
        assert_eq!(retry.body, original.body);
    }
    assert_eq!(server.handler_calls().await, 3);
    // The storage keys the server names for them differ too.
    let key_of = |identity: &[u8]| {
        with_identity(
            Call::get("/_storage_key?method=POST&path=/charges").key("shared-key"),
            identity,
        )
    };
    let key_a = send(server.address, key_of(first)).await.unwrap();
    let key_b = send(server.address, key_of(second)).await.unwrap();
    assert_eq!((key_a.status.as_u16(), key_b.status.as_u16()), (200, 200));
    assert_ne!(key_a.body, key_b.body);
}
