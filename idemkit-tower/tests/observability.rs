//! What an operator sees: each decision as a `tracing` event, and the warning when no
//! scope is configured (once per process: this binary holds this one test so that no
//! other test warns first).

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use idemkit_core::InMemoryBackend;
use idemkit_tower::IdempotencyLayer;
use support::client::{Call, send};
use support::in_process::serve_axum;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// What the subscriber saw: each event's level, target and fields as text.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(Level, String, String)>>>);

struct Recorder {
    seen: Seen,
    spans: AtomicU64,
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.spans.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        struct Text(String);
        impl Visit for Text {
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={:?} ", field.name(), value));
            }
        }
        let mut text = Text(String::new());
        event.record(&mut text);
        let metadata = event.metadata();
        self.seen
            .0
            .lock()
            .unwrap()
            .push((*metadata.level(), metadata.target().to_owned(), text.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

// One runtime thread: the server's tasks run where the subscriber is installed.
#[tokio::test(flavor = "current_thread")]
async fn decisions_are_traced_and_a_missing_scope_is_warned_about_once() {
    let seen = Seen::default();
    let _guard = tracing::subscriber::set_default(Recorder {
        seen: seen.clone(),
        spans: AtomicU64::new(0),
    });
    let warnings = || {
        seen.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(level, target, text)| {
                *level == Level::WARN && target == "idemkit_tower" && text.contains("no scope")
            })
            .count()
    };

    let unscoped = IdempotencyLayer::new(InMemoryBackend::new());
    assert_eq!(warnings(), 1, "a layer without scope warns");
    let _again = IdempotencyLayer::new(InMemoryBackend::new());
    let _acknowledged = IdempotencyLayer::builder(InMemoryBackend::new())
        .single_tenant()
        .build()
        .unwrap();
    assert_eq!(warnings(), 1, "once per process");

    let router = Router::new()
        .fallback(|| async { (http::StatusCode::CREATED, "made") })
        .layer(unscoped);
    let served = serve_axum(router).await;
    send(served.address, Call::post("/o").key("k"))
        .await
        .unwrap();
    send(served.address, Call::post("/o").key("k"))
        .await
        .unwrap();
    send(served.address, Call::post("/o").key("k").body("changed"))
        .await
        .unwrap();
    let decisions: Vec<(Level, String)> = seen
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, target, text)| target == "idemkit_tower" && text.contains("decision="))
        .map(|(level, _, text)| (*level, text.clone()))
        .collect();
    assert_eq!(decisions.len(), 3, "{decisions:?}");
    assert!(decisions[0].1.contains("decision=\"new\""), "{decisions:?}");
    assert!(decisions[1].1.contains("decision=\"replayed\""));
    assert!(decisions[2].1.contains("decision=\"payload_mismatch\""));
    assert!(decisions[2].1.contains("status=422"));
    assert!(
        decisions
            .iter()
            .all(|(_, text)| text.contains("effective_key="))
    );
    assert!(decisions.iter().all(|(_, text)| !text.contains("\"k\"")));
}
