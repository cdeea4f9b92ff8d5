//! The two wire dialects: idemkit's own, and the one Stripe's clients expect.

use http::StatusCode;
use http::header::HeaderName;

/// The response header that marks a replayed response, in the default dialect.
pub const IDEMPOTENCY_REPLAYED: HeaderName = HeaderName::from_static("idempotency-replayed");

/// The response header that marks a replayed response, in the Stripe dialect.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The response header that tells a client its response was delivered but not stored,
/// so a retry runs the handler again. Its value is a [`ReplayUnavailable`] reason.
pub const IDEMPOTENCY_REPLAY_UNAVAILABLE: HeaderName =
    HeaderName::from_static("idempotency-replay-unavailable");

/// The wire dialect of the layer's answers.
///
/// | | default | Stripe |
/// |---|---|---|
/// | same key, another payload | 422, Problem Details | 400, Stripe's error object |
/// | same key, still running after the wait | 423 | 409 |
/// | replay marker | `Idempotency-Replayed: true` | `Idempotent-Replayed: true` |
///
/// In the Stripe dialect a key reused with other parameters is answered as Stripe's API
/// answers it: 400 with `{"error": {"type": "idempotency_error", "message": ..., "code":
/// "urn:idemkit:payload-mismatch"}}` (`application/json`), which Stripe's clients raise
/// at once as their idempotency error instead of retrying. A request that met its key
/// in flight gets 409 (`urn:idemkit:in-progress`, with `Retry-After`), which they
/// rightly retry; like Stripe's API, this dialect answers so whatever the parameters of
/// the request in flight, and compares them once it is done. Every other refusal is
/// Problem Details in both dialects, with the same `urn:idemkit:...` type URI.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compat {
    /// idemkit's dialect.
    #[default]
    Default,
    /// The dialect of Stripe's API, for clients written against it.
    Stripe,
}

impl Compat {
    /// The header that marks a replayed response (its value is `true`).
    pub fn replay_header(self) -> HeaderName {
        match self {
            Compat::Default => IDEMPOTENCY_REPLAYED,
            Compat::Stripe => IDEMPOTENT_REPLAYED,
        }
    }

    /// The status of a payload mismatch: 422, or 400 for Stripe (as Stripe's API
    /// answers it).
    pub fn payload_mismatch_status(self) -> StatusCode {
        match self {
            Compat::Default => StatusCode::UNPROCESSABLE_ENTITY,
            Compat::Stripe => StatusCode::BAD_REQUEST,
        }
    }

    /// The status of a request still in progress when the wait ran out: 423, or 409
    /// for Stripe.
    pub fn in_progress_status(self) -> StatusCode {
        match self {
            Compat::Default => StatusCode::LOCKED,
            Compat::Stripe => StatusCode::CONFLICT,
        }
    }
}

/// Why a response was delivered but not stored (the value of
/// `Idempotency-Replay-Unavailable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReplayUnavailable {
    /// The body was longer than the cache cap.
    SizeExceeded,
    /// The response is an event stream, delivered as it is produced.
    Streaming,
    /// The idempotency store failed when the response was to be stored (or could not
    /// be claimed, when failing open): the handler ran, and a retry may run it again.
    StorageError,
    /// The request's lease lapsed while its handler ran and another request took the key
    /// over: this response was delivered but fenced out, and a retry gets the other
    /// request's stored response.
    FencedOut,
}

impl ReplayUnavailable {
    /// The header value: `size-exceeded`, `streaming`, `storage-error` or `fenced-out`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayUnavailable::SizeExceeded => "size-exceeded",
            ReplayUnavailable::Streaming => "streaming",
            ReplayUnavailable::StorageError => "storage-error",
            ReplayUnavailable::FencedOut => "fenced-out",
        }
    }
}

impl From<idemkit_core::Unstored> for ReplayUnavailable {
    fn from(unstored: idemkit_core::Unstored) -> ReplayUnavailable {
        match unstored {
            idemkit_core::Unstored::FencedOut => ReplayUnavailable::FencedOut,
            // A reason the core adds later is, at worst, a store that did not keep it.
            _ => ReplayUnavailable::StorageError,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stripe_dialect_answers_400_and_409_and_spells_the_marker_its_way() {
        assert_eq!(Compat::default(), Compat::Default);
        assert_eq!(Compat::Default.payload_mismatch_status(), 422);
        assert_eq!(Compat::Default.in_progress_status(), 423);
        assert_eq!(Compat::Default.replay_header(), "idempotency-replayed");
        assert_eq!(Compat::Stripe.payload_mismatch_status(), 400);
        assert_eq!(Compat::Stripe.in_progress_status(), 409);
        assert_eq!(Compat::Stripe.replay_header(), "idempotent-replayed");
    }

    #[test]
    fn bypass_reasons_have_their_wire_names() {
        assert_eq!(ReplayUnavailable::SizeExceeded.as_str(), "size-exceeded");
        assert_eq!(ReplayUnavailable::Streaming.as_str(), "streaming");
        assert_eq!(ReplayUnavailable::StorageError.as_str(), "storage-error");
        assert_eq!(ReplayUnavailable::FencedOut.as_str(), "fenced-out");
        assert_eq!(
            ReplayUnavailable::from(idemkit_core::Unstored::FencedOut),
            ReplayUnavailable::FencedOut
        );
        assert_eq!(
            ReplayUnavailable::from(idemkit_core::Unstored::StorageError),
            ReplayUnavailable::StorageError
        );
        assert_eq!(
            IDEMPOTENCY_REPLAY_UNAVAILABLE,
            "idempotency-replay-unavailable"
        );
    }
}
