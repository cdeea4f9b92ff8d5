//! The response to each outcome of a protected request, and the event that reports it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::HeaderValue;
use http::{HeaderMap, Response, StatusCode, Uri, request, response};
use http_body::Body;
use idemkit_core::{Key, Outcome, RunError};

use crate::compat::{IDEMPOTENCY_REPLAY_UNAVAILABLE, ReplayUnavailable};
use crate::config::Config;
use crate::event::{EventKind, Report};
use crate::fingerprint::FINGERPRINT_VERSION;
use crate::problem::{Problem, ProblemType};
use crate::response_body::ResponseBody;
use crate::stored_headers::replayed_value;

/// The response the handler gave this request, read whole: what its client receives.
pub(crate) struct Delivered {
    pub(crate) parts: response::Parts,
    pub(crate) body: Bytes,
    pub(crate) trailers: Option<HeaderMap>,
}

/// Why a handler's response was not stored. It travels out of the run as the
/// operation's error, so the executor releases the claim; then it is delivered.
pub(crate) enum NotStored<ResBody: Body, E> {
    /// The inner service returned an error, not a response.
    ServiceFailed(E),
    /// An event stream, untouched.
    Streaming(response::Parts, ResBody),
    /// A body longer than the cache cap: what was read, then the rest.
    TooLarge(response::Parts, ResponseBody<ResBody>),
    /// A body that broke off: what was read, then the error.
    Broken(response::Parts, ResponseBody<ResBody>),
}

/// Answers one protected request and reports what was decided.
pub(crate) struct Answer<'a> {
    config: &'a Config,
    method: http::Method,
    /// The request's URI (a cheap, shared copy), for the event's path.
    uri: Uri,
    started: Instant,
    key: Option<&'a Key>,
}

impl<'a> Answer<'a> {
    /// The answer to the request with head `parts`, which arrived at `started`.
    ///
    /// The event's method, URI and start are kept whether or not anything listens yet:
    /// `tracing` hands events on to the `log` crate when no subscriber takes them, and
    /// whether a subscriber takes an event is only known once it is sent.
    pub(crate) fn new(config: &'a Config, parts: &request::Parts, started: Instant) -> Self {
        Answer {
            config,
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            started,
            key: None,
        }
    }

    /// This answer, for the request whose effective key is `key`.
    pub(crate) fn with_key(mut self, key: &'a Key) -> Self {
        self.key = Some(key);
        self
    }

    /// A refusal.
    pub(crate) fn refuse<B: Body>(
        self,
        problem: Problem,
        kind: EventKind,
    ) -> Response<ResponseBody<B>> {
        self.emit(kind, Some(problem.status()));
        problem.into_response().map(ResponseBody::whole)
    }

    /// The refusal for a run whose effect was rolled back after the handler answered
    /// (its completion was fenced out, or its commit failed).
    pub(crate) fn lease_lost<B: Body>(self) -> Response<ResponseBody<B>> {
        let problem = Problem::new(
            ProblemType::LeaseLost,
            self.config.compat,
            "The request's claim on its idempotency key was taken over before its result \
             could be committed, so its changes were rolled back and nothing was stored. \
             Retry after the Retry-After delay.",
        )
        .retry_after(self.config.storage_retry_after);
        self.refuse(problem, EventKind::LeaseLost)
    }

    /// The response to the executor's outcome; `delivered` is the handler's response if
    /// it ran for this request; `in_flight` is, for a payload mismatch in the Stripe
    /// dialect, what is left of the lease of the other request holding the key if it is
    /// still running.
    pub(crate) fn finish<B: Body, E>(
        self,
        result: Result<Outcome, RunError<Box<NotStored<B, E>>>>,
        delivered: Option<Box<Delivered>>,
        in_flight: Option<Duration>,
    ) -> Result<Response<ResponseBody<B>>, E> {
        let compat = self.config.compat;
        let retry_later = self.config.storage_retry_after;
        let problem = match result {
            Ok(outcome) => {
                // The executor's decision is the event's kind: a run (new, reclaimed,
                // not cached, fenced out, unprotected) when the handler ran here, a
                // replay (at once or after a wait) when it did not.
                let kind = EventKind::from(outcome.decision);
                return Ok(match delivered {
                    Some(delivered) => {
                        self.deliver(delivered, outcome.unstored.map(Into::into), kind)
                    }
                    None => self.replay(outcome.response, kind),
                });
            }
            Err(RunError::PayloadMismatch) if in_flight.is_some() => {
                let retry_after = in_flight.unwrap_or_default();
                (
                    Problem::new(
                        ProblemType::InProgress,
                        compat,
                        "Another request with this idempotency key is still being processed. \
                         Retry after the Retry-After delay; if your request differs from that \
                         one, it will then be refused.",
                    )
                    .retry_after(retry_after),
                    EventKind::InProgress,
                )
            }
            Err(RunError::PayloadMismatch) => (
                Problem::new(
                    ProblemType::PayloadMismatch,
                    compat,
                    "This idempotency key was already used with a different request (method, \
                     path, query or body). Do not retry as is: send the original request \
                     again, or use a new key for a new request.",
                ),
                EventKind::PayloadMismatch,
            ),
            Err(RunError::InProgress { retry_after }) => (
                Problem::new(
                    ProblemType::InProgress,
                    compat,
                    format!(
                        "A request with this idempotency key is still being processed; its \
                         lease ends in about {} s. Retry after the Retry-After delay, with \
                         a bounded number of attempts.",
                        crate::problem::retry_after_seconds(retry_after)
                    ),
                )
                .retry_after(retry_after),
                EventKind::InProgress,
            ),
            Err(RunError::StorageFailed(error)) => {
                tracing::warn!(target: "idemkit_tower", %error, "idempotency store failed");
                if let Some(delivered) = delivered {
                    // The handler ran but its response could not be stored: it happened,
                    // so its client gets it rather than a 503 that invites a second run.
                    return Ok(self.deliver(
                        delivered,
                        Some(ReplayUnavailable::StorageError),
                        EventKind::StorageFailed,
                    ));
                }
                (
                    Problem::new(
                        ProblemType::StorageError,
                        compat,
                        "The idempotency store is unavailable, so the request was not run. \
                         Retry after the Retry-After delay.",
                    )
                    .retry_after(retry_later),
                    EventKind::StorageFailed,
                )
            }
            Err(RunError::HandlerFailed(not_stored)) => {
                return match *not_stored {
                    NotStored::ServiceFailed(error) => {
                        self.emit(EventKind::HandlerFailed, None);
                        Err(error)
                    }
                    NotStored::Streaming(parts, body) => Ok(self.pass_on(
                        parts,
                        ResponseBody::inner(body),
                        Some(ReplayUnavailable::Streaming),
                        EventKind::Streaming,
                    )),
                    NotStored::TooLarge(parts, body) => Ok(self.pass_on(
                        parts,
                        body,
                        Some(ReplayUnavailable::SizeExceeded),
                        EventKind::SizeExceeded,
                    )),
                    NotStored::Broken(parts, body) => {
                        Ok(self.pass_on(parts, body, None, EventKind::HandlerFailed))
                    }
                };
            }
            Err(RunError::LeaseLost) => (
                Problem::new(
                    ProblemType::LeaseLost,
                    compat,
                    "The request's claim on its idempotency key could not be kept while it ran, \
                     so it was stopped and its result not stored. Retry after the Retry-After \
                     delay.",
                )
                .retry_after(retry_later),
                EventKind::LeaseLost,
            ),
            Err(_) => (
                Problem::new(
                    ProblemType::StorageError,
                    compat,
                    "The idempotency layer could not settle this request. Retry after the \
                     Retry-After delay.",
                )
                .retry_after(retry_later),
                EventKind::StorageFailed,
            ),
        };
        let (problem, kind) = problem;
        Ok(self.refuse(problem, kind))
    }

    /// The handler's response, read whole, for the client whose request ran it; marked
    /// with why it was not stored, if it was to be and was not.
    fn deliver<B: Body>(
        self,
        delivered: Box<Delivered>,
        unstored: Option<ReplayUnavailable>,
        kind: EventKind,
    ) -> Response<ResponseBody<B>> {
        let Delivered {
            parts,
            body,
            trailers,
        } = *delivered;
        self.pass_on(
            parts,
            ResponseBody::whole_with_trailers(body, trailers),
            unstored,
            kind,
        )
    }

    /// A response that was not stored, passed on, with the reason if there is one.
    fn pass_on<B: Body>(
        self,
        mut parts: response::Parts,
        body: ResponseBody<B>,
        reason: Option<ReplayUnavailable>,
        kind: EventKind,
    ) -> Response<ResponseBody<B>> {
        if let Some(reason) = reason {
            parts.headers.insert(
                IDEMPOTENCY_REPLAY_UNAVAILABLE,
                HeaderValue::from_static(reason.as_str()),
            );
        }
        self.emit(kind, Some(parts.status));
        Response::from_parts(parts, body)
    }

    /// The stored response, marked as a replay.
    fn replay<B: Body>(
        self,
        stored: Arc<idemkit_core::Response>,
        kind: EventKind,
    ) -> Response<ResponseBody<B>> {
        let Ok(status) = StatusCode::from_u16(stored.status) else {
            let problem = Problem::new(
                ProblemType::StorageError,
                self.config.compat,
                "The stored response for this idempotency key is unreadable.",
            )
            .retry_after(self.config.storage_retry_after);
            return self.refuse(problem, EventKind::StorageFailed);
        };
        let mut response = Response::new(ResponseBody::whole(Bytes::new()));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        for (name, value) in &stored.headers {
            // Stored headers were valid when stored; one that is not (a record written
            // by another program) is left out rather than failing the replay.
            if let (Some(name), Some(value)) = (
                self.config.stored_headers.name_of(name),
                replayed_value(value),
            ) {
                headers.append(name, value);
            }
        }
        headers.insert(
            self.config.compat.replay_header(),
            HeaderValue::from_static("true"),
        );
        // Last: the body takes the stored response over.
        *response.body_mut() = ResponseBody::stored(stored);
        self.emit(kind, Some(status));
        response
    }

    fn emit(&self, kind: EventKind, status: Option<StatusCode>) {
        Report {
            kind,
            effective_key: self.key,
            method: &self.method,
            path: self.uri.path(),
            status,
            started: self.started,
            backend: self.config.backend_name,
            fingerprint_version: FINGERPRINT_VERSION,
        }
        .emit(self.config.on_event.as_ref());
    }
}
