//! The layer's own answers: Problem Details (`application/problem+json`) bodies, each
//! with a `urn:idemkit:...` type URI a client can branch on whatever the status.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};

use crate::compat::Compat;

/// The media type of every refusal body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// A kind of refusal, named by its Problem Details `type` URI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemType {
    /// The key was used before with another request (method, path, query, body or a
    /// named header differ): 422, or 400 in the Stripe dialect (in Stripe's error
    /// shape, see [`Compat`]). Never retried as is.
    PayloadMismatch,
    /// A request with the key is still running and the wait ran out: 423, or 409 in the
    /// Stripe dialect, with `Retry-After`.
    InProgress,
    /// The key is required and absent, or present but unusable: 400.
    MissingKey,
    /// The idempotency store failed and the layer fails closed: 503, with
    /// `Retry-After`.
    StorageError,
    /// The configured scope function found no caller identity: 500. The request is
    /// refused rather than run in a namespace shared with other callers.
    IdentityUnavailable,
    /// The request body is longer than the request cap: 413. The request is refused
    /// rather than run without protection.
    RequestTooLarge,
    /// The request body could not be read to its end (the client went away, or sent a
    /// broken body): 400.
    RequestBodyUnreadable,
    /// The run lost its claim on the key before it finished (its lease could not be
    /// renewed), so its result could not be stored: 503, with `Retry-After`.
    LeaseLost,
}

impl ProblemType {
    /// The `type` URI.
    pub fn uri(self) -> &'static str {
        match self {
            ProblemType::PayloadMismatch => "urn:idemkit:payload-mismatch",
            ProblemType::InProgress => "urn:idemkit:in-progress",
            ProblemType::MissingKey => "urn:idemkit:missing-key",
            ProblemType::StorageError => "urn:idemkit:storage-error",
            ProblemType::IdentityUnavailable => "urn:idemkit:identity-unavailable",
            ProblemType::RequestTooLarge => "urn:idemkit:request-too-large",
            ProblemType::RequestBodyUnreadable => "urn:idemkit:request-body-unreadable",
            ProblemType::LeaseLost => "urn:idemkit:lease-lost",
        }
    }

    /// The `title`: one line, the same for every occurrence.
    pub fn title(self) -> &'static str {
        match self {
            ProblemType::PayloadMismatch => "Idempotency key reused with a different request",
            ProblemType::InProgress => "A request with this idempotency key is in progress",
            ProblemType::MissingKey => "Missing or invalid Idempotency-Key header",
            ProblemType::StorageError => "Idempotency store unavailable",
            ProblemType::IdentityUnavailable => "Caller identity unavailable",
            ProblemType::RequestTooLarge => "Request body too large for idempotent handling",
            ProblemType::RequestBodyUnreadable => "Request body could not be read",
            ProblemType::LeaseLost => "Claim on the idempotency key lost",
        }
    }

    /// The `type` of the error object Stripe's API answers this refusal with, if it
    /// makes it: `idempotency_error` for a key reused with other parameters.
    fn stripe_error_type(self) -> Option<&'static str> {
        match self {
            ProblemType::PayloadMismatch => Some("idempotency_error"),
            _ => None,
        }
    }

    /// The status this refusal gets in `compat`'s dialect.
    pub fn status(self, compat: Compat) -> StatusCode {
        match self {
            ProblemType::PayloadMismatch => compat.payload_mismatch_status(),
            ProblemType::InProgress => compat.in_progress_status(),
            ProblemType::MissingKey | ProblemType::RequestBodyUnreadable => StatusCode::BAD_REQUEST,
            ProblemType::StorageError | ProblemType::LeaseLost => StatusCode::SERVICE_UNAVAILABLE,
            ProblemType::IdentityUnavailable => StatusCode::INTERNAL_SERVER_ERROR,
            ProblemType::RequestTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        }
    }
}

/// One refusal, ready to be written as a response.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    kind: ProblemType,
    compat: Compat,
    status: StatusCode,
    detail: String,
    retry_after: Option<Duration>,
}

impl Problem {
    /// A refusal of `kind` in `compat`'s dialect; `detail` says what happened to this
    /// request and what the client should do.
    pub(crate) fn new(kind: ProblemType, compat: Compat, detail: impl Into<String>) -> Problem {
        Problem {
            kind,
            compat,
            status: kind.status(compat),
            detail: detail.into(),
            retry_after: None,
        }
    }

    /// This refusal with a `Retry-After` of `after`, rounded up to whole seconds, at
    /// least one.
    pub(crate) fn retry_after(mut self, after: Duration) -> Problem {
        self.retry_after = Some(after);
        self
    }

    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The response: the status, `Retry-After` if set, and a body. The body is
    /// `application/problem+json` with `type`, `title`, `status` and `detail`; in the
    /// Stripe dialect, a refusal Stripe's API makes itself is in Stripe's error shape
    /// instead (`application/json`, `{"error": {"type", "message", "code"}}`, the
    /// `urn:idemkit:...` type in `code`).
    pub(crate) fn into_response(self) -> Response<Bytes> {
        let stripe_type = match self.compat {
            Compat::Stripe => self.kind.stripe_error_type(),
            _ => None,
        };
        let (body, content_type) = match stripe_type {
            Some(error_type) => (
                serde_json::json!({
                    "error": {
                        "type": error_type,
                        "message": self.detail,
                        "code": self.kind.uri(),
                    }
                }),
                "application/json",
            ),
            None => (
                serde_json::json!({
                    "type": self.kind.uri(),
                    "title": self.kind.title(),
                    "status": self.status.as_u16(),
                    "detail": self.detail,
                }),
                PROBLEM_JSON,
            ),
        };
        let mut response = Response::new(Bytes::from(body.to_string()));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        if let Some(after) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(retry_after_seconds(after)));
        }
        response
    }
}

/// Whole seconds to wait, rounded up, at least one: a client told `0` would retry at
/// once and find the same answer.
pub(crate) fn retry_after_seconds(after: Duration) -> u64 {
    let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
    seconds.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ProblemType; 8] = [
        ProblemType::PayloadMismatch,
        ProblemType::InProgress,
        ProblemType::MissingKey,
        ProblemType::StorageError,
        ProblemType::IdentityUnavailable,
        ProblemType::RequestTooLarge,
        ProblemType::RequestBodyUnreadable,
        ProblemType::LeaseLost,
    ];

    fn body(response: &Response<Bytes>) -> serde_json::Value {
        serde_json::from_slice(response.body()).unwrap()
    }

    #[test]
    fn statuses_follow_the_dialect() {
        let expected = [
            (ProblemType::PayloadMismatch, 422, 400),
            (ProblemType::InProgress, 423, 409),
            (ProblemType::MissingKey, 400, 400),
            (ProblemType::StorageError, 503, 503),
            (ProblemType::IdentityUnavailable, 500, 500),
            (ProblemType::RequestTooLarge, 413, 413),
            (ProblemType::RequestBodyUnreadable, 400, 400),
            (ProblemType::LeaseLost, 503, 503),
        ];
        for (kind, default, stripe) in expected {
            assert_eq!(kind.status(Compat::Default), default, "{kind:?}");
            assert_eq!(kind.status(Compat::Stripe), stripe, "{kind:?}");
        }
    }

    #[test]
    fn uris_are_distinct_idemkit_urns() {
        let uris: std::collections::HashSet<&str> = ALL.iter().map(|kind| kind.uri()).collect();
        assert_eq!(uris.len(), ALL.len());
        assert!(uris.iter().all(|uri| uri.starts_with("urn:idemkit:")));
        assert_eq!(
            ProblemType::PayloadMismatch.uri(),
            "urn:idemkit:payload-mismatch"
        );
        assert_eq!(ProblemType::InProgress.uri(), "urn:idemkit:in-progress");
        assert_eq!(ProblemType::MissingKey.uri(), "urn:idemkit:missing-key");
        assert_eq!(ProblemType::StorageError.uri(), "urn:idemkit:storage-error");
    }

    #[test]
    fn the_response_is_problem_json_with_the_four_members() {
        for compat in [Compat::Default, Compat::Stripe] {
            let response =
                Problem::new(ProblemType::InProgress, compat, "wait for it").into_response();
            assert_eq!(response.status(), ProblemType::InProgress.status(compat));
            assert_eq!(response.headers()[CONTENT_TYPE], PROBLEM_JSON);
            assert!(response.headers().get(RETRY_AFTER).is_none());
            let json = body(&response);
            assert_eq!(json["type"], "urn:idemkit:in-progress");
            assert_eq!(json["title"], ProblemType::InProgress.title());
            assert_eq!(json["status"], response.status().as_u16());
            assert_eq!(json["detail"], "wait for it");
        }
        let response = Problem::new(ProblemType::PayloadMismatch, Compat::Default, "resend it")
            .into_response();
        assert_eq!(response.status(), 422);
        assert_eq!(body(&response)["type"], "urn:idemkit:payload-mismatch");
    }

    #[test]
    fn a_payload_mismatch_in_the_stripe_dialect_is_stripes_error_object() {
        let response =
            Problem::new(ProblemType::PayloadMismatch, Compat::Stripe, "resend it").into_response();
        assert_eq!(response.status(), 400);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        let json = body(&response);
        assert_eq!(
            json,
            serde_json::json!({
                "error": {
                    "type": "idempotency_error",
                    "message": "resend it",
                    "code": "urn:idemkit:payload-mismatch",
                }
            })
        );
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up_and_never_zero() {
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1_000)), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1_001)), 2);
        assert_eq!(retry_after_seconds(Duration::from_secs(30)), 30);
        let response = Problem::new(ProblemType::InProgress, Compat::Default, "wait")
            .retry_after(Duration::from_millis(2_500))
            .into_response();
        assert_eq!(response.status(), 423);
        assert_eq!(response.headers()[RETRY_AFTER], "3");
    }

    #[test]
    fn details_with_quotes_stay_valid_json() {
        let response = Problem::new(
            ProblemType::MissingKey,
            Compat::Default,
            "a \"quoted\" word\nand a line",
        )
        .into_response();
        assert_eq!(body(&response)["detail"], "a \"quoted\" word\nand a line");
    }
}
