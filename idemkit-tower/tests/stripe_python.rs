//! The Stripe dialect driven by Stripe's own Python client (PyPI `stripe`, the version
//! `.ci/run` installs), with `max_network_retries=4`, against the conformance server
//! started with `--compat stripe`: a key reused with other parameters raises the
//! client's `IdempotencyError` at once (400, no retries); a request that meets its key
//! in flight gets 409, which the client retries until the first one is done.
//!
//! Without stripe-python these tests say so and pass, unless
//! `IDEMKIT_REQUIRE_STRIPE_PYTHON=1` (as in CI), where its absence fails them.

mod support;

use std::path::PathBuf;
use std::process::Command;

use support::server::ServerProcess;

/// The Python interpreter: `IDEMKIT_PYTHON`, or `python3`.
fn python() -> String {
    std::env::var("IDEMKIT_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Whether stripe-python can be imported; panics if it cannot and CI requires it.
fn stripe_python_available() -> bool {
    let imported = Command::new(python())
        .args(["-c", "import stripe"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !imported {
        let required = std::env::var("IDEMKIT_REQUIRE_STRIPE_PYTHON").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "IDEMKIT_REQUIRE_STRIPE_PYTHON=1 but `{} -c 'import stripe'` fails: \
             pip install the version .ci/run names",
            python()
        );
        eprintln!(
            "stripe-python is not installed: skipped (set IDEMKIT_REQUIRE_STRIPE_PYTHON=1 to fail)"
        );
    }
    imported
}

/// Runs the driver script's `scenario` against `server`; its JSON result.
async fn drive(server: &ServerProcess, scenario: &str) -> serde_json::Value {
    let script: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "stripe_python",
        "drive.py",
    ]
    .iter()
    .collect();
    let base = format!("http://{}", server.address);
    let scenario = scenario.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(script)
            .arg(base)
            .arg(scenario)
            .output()
            .expect("python runs")
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "the driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "the driver printed no JSON ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// How many of the server's events so far were `decision`.
fn count(server: &ServerProcess, decision: &str) -> usize {
    server
        .events()
        .iter()
        .filter(|event| event["decision"] == decision)
        .count()
}

fn stripe_server() -> ServerProcess {
    // A short wait, so a duplicate in flight is answered 409 rather than waited for,
    // and a short lease, so the Retry-After the client honors stays short.
    ServerProcess::start(&[
        "--compat",
        "stripe",
        "--wait-timeout-ms",
        "200",
        "--lease-ttl-ms",
        "3000",
    ])
}

#[tokio::test]
async fn a_key_reused_with_other_parameters_raises_stripes_idempotency_error_at_once() {
    if !stripe_python_available() {
        return;
    }
    let server = stripe_server();
    let result = drive(&server, "reused").await;
    let (first, reused, retry) = (&result["first"], &result["reused"], &result["retry"]);
    assert_eq!(first["ok"], true, "{result}");
    assert_eq!(first["status"], 201);

    assert_eq!(reused["ok"], false, "{result}");
    assert_eq!(reused["error"], "IdempotencyError", "{result}");
    assert_eq!(reused["status"], 400);
    assert_eq!(reused["type"], "idempotency_error");
    assert_eq!(reused["code"], "urn:idemkit:payload-mismatch");
    assert!(reused["message"].as_str().is_some_and(|m| !m.is_empty()));
    // At once: one request reached the server, not five. (A retry waits at least half a
    // second; four of them several seconds.)
    assert_eq!(count(&server, "payload_mismatch"), 1, "{result}");
    assert!(reused["elapsed"].as_f64().unwrap() < 5.0, "{result}");

    // The original parameters again: the stored charge, replayed.
    assert_eq!(retry["ok"], true, "{result}");
    assert_eq!(retry["call"], first["call"]);
    assert_eq!(retry["replayed"], "true");
    assert_eq!(server.handler_calls().await, 1);
}

#[tokio::test]
async fn a_request_meeting_its_key_in_flight_gets_409_and_the_client_retries_to_the_replay() {
    if !stripe_python_available() {
        return;
    }
    let server = stripe_server();
    let result = drive(&server, "in_flight").await;
    let (first, second) = (&result["first"], &result["second"]);
    assert_eq!(first["ok"], true, "{result}");
    assert_eq!(second["ok"], true, "{result}");
    assert_eq!(second["call"], first["call"], "one run, replayed: {result}");
    assert_eq!(second["replayed"], "true");
    assert!(
        count(&server, "conflict") >= 1,
        "the duplicate met the key in flight (409) and was retried: {result}"
    );
    assert_eq!(count(&server, "payload_mismatch"), 0);
    assert_eq!(server.handler_calls().await, 1);
}

#[tokio::test]
async fn other_parameters_meeting_the_key_in_flight_get_409_then_the_idempotency_error() {
    if !stripe_python_available() {
        return;
    }
    let server = stripe_server();
    let result = drive(&server, "in_flight_other").await;
    let (first, second) = (&result["first"], &result["second"]);
    assert_eq!(first["ok"], true, "{result}");
    // In flight, Stripe answers 409 whatever the parameters; once the first is done,
    // the parameters are compared: 400, raised without further retries.
    assert!(count(&server, "conflict") >= 1, "{result}");
    assert_eq!(second["ok"], false, "{result}");
    assert_eq!(second["error"], "IdempotencyError", "{result}");
    assert_eq!(second["status"], 400);
    assert_eq!(count(&server, "payload_mismatch"), 1, "{result}");
    assert_eq!(server.handler_calls().await, 1);
}
