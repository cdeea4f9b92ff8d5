//! What the layer decided for each request it handled, reported as a `tracing` event
//! and to the user's own callback.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use idemkit_core::{Decision, Key};

/// What the layer did with one request that carried a key (or needed one).
///
/// Requests the layer lets through untouched (a method it does not protect, no key
/// where none is required) produce no event.
///
/// The kinds that are a decision of the core's executor bear its name and come from it
/// ([`From<Decision>`](#impl-From%3CDecision%3E-for-EventKind)); the others are the
/// layer's own (a refusal before the executor runs, a response too large or streamed).
/// [`as_str`](EventKind::as_str) gives the name dashboards read, which is the
/// specification's and not always the variant's (`Reclaimed` is `lease_reclaimed`,
/// `InProgress` is `conflict`, `StorageFailed` is `storage_error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// The key was claimed and the handler ran; its response is stored.
    New,
    /// The key's previous holder let its lease lapse; this request took the key over,
    /// ran the handler and stored its response.
    Reclaimed,
    /// A stored response was replayed.
    Replayed,
    /// A request with the key was running; this one waited for it and replayed its
    /// response.
    ReplayedAfterWait,
    /// The handler ran; its response is not cacheable (a 5xx, or refused by the
    /// cacheable predicate), so it was delivered, not stored, and the key released.
    NotCached,
    /// The handler ran; its body was longer than the response cap, so it was delivered
    /// with `Idempotency-Replay-Unavailable: size-exceeded`, not stored, and the key
    /// released.
    SizeExceeded,
    /// The handler answered with an event stream: delivered as it streams with
    /// `Idempotency-Replay-Unavailable: streaming`, never stored, the key released.
    Streaming,
    /// The handler ran, but its lease had lapsed and another request had taken the key
    /// over: this response was delivered (marked `Idempotency-Replay-Unavailable:
    /// fenced-out`), the other request's result is the one kept.
    ReclaimedLoss,
    /// The store failed and the layer fails open: the handler ran without protection
    /// (its response marked `Idempotency-Replay-Unavailable: storage-error`).
    RanUnprotected,
    /// A request with the key was still running when the wait ran out: 423 (409 in the
    /// Stripe dialect, which also answers so a request with other parameters that met
    /// the key in flight).
    InProgress,
    /// The key was used before with another request: 422 (400 in the Stripe dialect).
    PayloadMismatch,
    /// The store failed and the layer fails closed: 503; or it failed to store the
    /// response of a handler that ran, which is delivered marked
    /// `Idempotency-Replay-Unavailable: storage-error`.
    StorageFailed,
    /// The handler failed (the inner service returned an error, or its response body
    /// broke off): the key was released.
    HandlerFailed,
    /// The run lost its claim before it finished: 503.
    LeaseLost,
    /// A key is required and the request had none: 400.
    MissingKey,
    /// The `Idempotency-Key` header was unusable (empty, too long, badly quoted, sent
    /// twice): 400.
    InvalidKey,
    /// The request body was longer than the request cap: 413.
    RequestTooLarge,
    /// The request body could not be read to its end: 400.
    RequestBodyUnreadable,
    /// The scope function found no caller identity: 500.
    IdentityUnavailable,
}

impl EventKind {
    /// The decision's name on the wire, in `snake_case` (`new`, `replayed`,
    /// `payload_mismatch`, ...): the idemkit specification's event names, which logs
    /// and dashboards read, so they do not follow the variants' names.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::New => "new",
            EventKind::Reclaimed => "lease_reclaimed",
            EventKind::Replayed => "replayed",
            EventKind::ReplayedAfterWait => "replayed_after_wait",
            EventKind::NotCached => "not_cached",
            EventKind::SizeExceeded => "size_exceeded",
            EventKind::Streaming => "streaming",
            EventKind::ReclaimedLoss => "lease_reclaimed_loss",
            EventKind::RanUnprotected => "ran_unprotected",
            EventKind::InProgress => "conflict",
            EventKind::PayloadMismatch => "payload_mismatch",
            EventKind::StorageFailed => "storage_error",
            EventKind::HandlerFailed => "handler_failed",
            EventKind::LeaseLost => "lease_lost",
            EventKind::MissingKey => "missing_key",
            EventKind::InvalidKey => "invalid_key",
            EventKind::RequestTooLarge => "request_too_large",
            EventKind::RequestBodyUnreadable => "request_body_unreadable",
            EventKind::IdentityUnavailable => "identity_unavailable",
        }
    }

    /// Whether this decision points at a fault an operator should look at (a failing
    /// store, a lost lease, a missing identity, a handler error). These are logged at
    /// `WARN`; the rest at `DEBUG` or `INFO`.
    pub fn is_trouble(self) -> bool {
        matches!(
            self,
            EventKind::StorageFailed
                | EventKind::RanUnprotected
                | EventKind::LeaseLost
                | EventKind::ReclaimedLoss
                | EventKind::IdentityUnavailable
                | EventKind::HandlerFailed
        )
    }

    /// Whether this decision is the everyday path (a run stored, a replay). Logged at
    /// `DEBUG`.
    fn is_routine(self) -> bool {
        matches!(
            self,
            EventKind::New | EventKind::Replayed | EventKind::ReplayedAfterWait
        )
    }
}

impl From<Decision> for EventKind {
    /// The kind of the same name. A decision a newer core adds is reported as
    /// [`EventKind::StorageFailed`] (the layer could not settle the request) until this
    /// crate names it.
    fn from(decision: Decision) -> EventKind {
        match decision {
            Decision::New => EventKind::New,
            Decision::Reclaimed => EventKind::Reclaimed,
            Decision::Replayed => EventKind::Replayed,
            Decision::ReplayedAfterWait => EventKind::ReplayedAfterWait,
            Decision::NotCached => EventKind::NotCached,
            Decision::ReclaimedLoss => EventKind::ReclaimedLoss,
            Decision::RanUnprotected => EventKind::RanUnprotected,
            Decision::PayloadMismatch => EventKind::PayloadMismatch,
            Decision::InProgress => EventKind::InProgress,
            Decision::StorageFailed => EventKind::StorageFailed,
            Decision::LeaseLost => EventKind::LeaseLost,
            Decision::HandlerFailed => EventKind::HandlerFailed,
            _ => EventKind::StorageFailed,
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One decision of the layer, as handed to
/// [`on_event`](crate::IdempotencyLayerBuilder::on_event)
/// and logged through `tracing`.
///
/// It never carries the client's raw key: only the effective key, a hash.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct IdempotencyEvent {
    /// What was decided.
    pub kind: EventKind,
    /// The effective key (a SHA-256, see [`Layer::effective_key`](crate::IdempotencyLayer::effective_key)),
    /// or `None` when the request was refused before one could be formed (no key, an
    /// unusable key, no identity).
    pub effective_key: Option<Key>,
    /// The request's method.
    pub method: Method,
    /// The request's path, as sent.
    pub path: String,
    /// The status sent to the client; `None` when the inner service returned an error
    /// instead of a response.
    pub status: Option<StatusCode>,
    /// From the moment the layer received the request to the moment it handed the
    /// response head back (a delivered body may still be streaming).
    pub latency: Duration,
    /// The backend's name, as it names itself ([`Backend::name`](idemkit_core::Backend::name):
    /// `"memory"`, `"redis"`, `"sqlite"`, `"postgres"`).
    pub backend: &'static str,
    /// The version of the fingerprint scheme.
    pub fingerprint_version: u32,
}

/// The user's callback.
pub(crate) type EventCallback = Arc<dyn Fn(&IdempotencyEvent) + Send + Sync>;

/// What an event says, borrowed from the request: the event itself is built only when
/// a callback wants one.
pub(crate) struct Report<'a> {
    pub(crate) kind: EventKind,
    pub(crate) effective_key: Option<&'a Key>,
    pub(crate) method: &'a Method,
    pub(crate) path: &'a str,
    pub(crate) status: Option<StatusCode>,
    /// When the request arrived: the latency is read off the clock only for a log line
    /// a subscriber records or for a callback.
    pub(crate) started: Instant,
    pub(crate) backend: &'static str,
    pub(crate) fingerprint_version: u32,
}

impl Report<'_> {
    /// Logs the decision through `tracing` and hands it to `callback`, if any.
    pub(crate) fn emit(&self, callback: Option<&EventCallback>) {
        let key = self.effective_key.map_or("", |key| key.as_str());
        let status = self.status.map_or(0, |status| status.as_u16());
        // Read off the clock once, and only for a log line or a callback that takes it:
        // both then report the same latency.
        let latency = std::cell::OnceCell::new();
        let latency = || *latency.get_or_init(|| self.started.elapsed());
        macro_rules! log {
            ($level:expr) => {
                tracing::event!(
                    target: "idemkit_tower",
                    $level,
                    decision = self.kind.as_str(),
                    effective_key = key,
                    method = self.method.as_str(),
                    path = self.path,
                    status,
                    latency_us = u64::try_from(latency().as_micros()).unwrap_or(u64::MAX),
                    backend = self.backend,
                    fingerprint_version = self.fingerprint_version,
                    "idempotency.{}",
                    self.kind.as_str(),
                )
            };
        }
        if self.kind.is_trouble() {
            log!(tracing::Level::WARN);
        } else if self.kind.is_routine() {
            log!(tracing::Level::DEBUG);
        } else {
            log!(tracing::Level::INFO);
        }
        if let Some(callback) = callback {
            callback(&IdempotencyEvent {
                kind: self.kind,
                effective_key: self.effective_key.cloned(),
                method: self.method.clone(),
                path: self.path.to_owned(),
                status: self.status,
                latency: latency(),
                backend: self.backend,
                fingerprint_version: self.fingerprint_version,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn names_are_distinct_snake_case() {
        let kinds = [
            EventKind::New,
            EventKind::Reclaimed,
            EventKind::Replayed,
            EventKind::ReplayedAfterWait,
            EventKind::NotCached,
            EventKind::SizeExceeded,
            EventKind::Streaming,
            EventKind::ReclaimedLoss,
            EventKind::RanUnprotected,
            EventKind::InProgress,
            EventKind::PayloadMismatch,
            EventKind::StorageFailed,
            EventKind::HandlerFailed,
            EventKind::LeaseLost,
            EventKind::MissingKey,
            EventKind::InvalidKey,
            EventKind::RequestTooLarge,
            EventKind::RequestBodyUnreadable,
            EventKind::IdentityUnavailable,
        ];
        let names: std::collections::HashSet<&str> =
            kinds.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(names.len(), kinds.len());
        assert!(names.iter().all(|name| {
            name.bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte == b'_')
        }));
        assert_eq!(EventKind::PayloadMismatch.to_string(), "payload_mismatch");
        assert!(EventKind::StorageFailed.is_trouble());
        assert!(!EventKind::Replayed.is_trouble());
    }

    /// Every decision the core names (the list `Decision` has today).
    const DECISIONS: [Decision; 12] = [
        Decision::New,
        Decision::Reclaimed,
        Decision::Replayed,
        Decision::ReplayedAfterWait,
        Decision::NotCached,
        Decision::ReclaimedLoss,
        Decision::RanUnprotected,
        Decision::PayloadMismatch,
        Decision::InProgress,
        Decision::StorageFailed,
        Decision::LeaseLost,
        Decision::HandlerFailed,
    ];

    #[test]
    fn every_decision_maps_to_the_kind_of_its_name() {
        for decision in DECISIONS {
            let kind = EventKind::from(decision);
            assert_eq!(format!("{kind:?}"), format!("{decision:?}"));
        }
    }

    #[test]
    fn wire_names_stay_the_specifications() {
        // Dashboards read these: a variant's rename must not change them.
        let names = [
            (EventKind::New, "new"),
            (EventKind::Reclaimed, "lease_reclaimed"),
            (EventKind::Replayed, "replayed"),
            (EventKind::ReplayedAfterWait, "replayed_after_wait"),
            (EventKind::NotCached, "not_cached"),
            (EventKind::ReclaimedLoss, "lease_reclaimed_loss"),
            (EventKind::RanUnprotected, "ran_unprotected"),
            (EventKind::PayloadMismatch, "payload_mismatch"),
            (EventKind::InProgress, "conflict"),
            (EventKind::StorageFailed, "storage_error"),
            (EventKind::LeaseLost, "lease_lost"),
            (EventKind::HandlerFailed, "handler_failed"),
        ];
        for (kind, name) in names {
            assert_eq!(kind.as_str(), name);
        }
    }

    #[test]
    fn the_callback_sees_every_reported_event() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let callback: EventCallback = Arc::new(move |event: &IdempotencyEvent| {
            sink.lock().unwrap().push((event.kind, event.status));
        });
        let key = Key::new(["k"]);
        let report = Report {
            kind: EventKind::InProgress,
            effective_key: Some(&key),
            method: &Method::POST,
            path: "/r",
            status: Some(StatusCode::LOCKED),
            started: Instant::now(),
            backend: "memory",
            fingerprint_version: 1,
        };
        report.emit(Some(&callback));
        report.emit(None);
        assert_eq!(
            *seen.lock().unwrap(),
            [(EventKind::InProgress, Some(StatusCode::LOCKED))]
        );
    }
}
