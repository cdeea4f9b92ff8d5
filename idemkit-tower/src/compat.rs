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
/// | same key, another payload | 422 | 409 |
/// | same key, still running after the wait | 423 | 409 |
/// | replay marker | `Idempotency-Replayed: true` | `Idempotent-Replayed: true` |
///
/// Both dialects put the same `urn:idemkit:...` type URI in the Problem Details body,
/// so a client can tell the two 409s apart by their `type`.
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

    /// The status of a payload mismatch: 422, or 409 for Stripe.
    pub fn payload_mismatch_status(self) -> StatusCode {
        match self {
            Compat::Default => StatusCode::UNPROCESSABLE_ENTITY,
            Compat::Stripe => StatusCode::CONFLICT,
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
}

impl ReplayUnavailable {
    /// The header value: `size-exceeded` or `streaming`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayUnavailable::SizeExceeded => "size-exceeded",
            ReplayUnavailable::Streaming => "streaming",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stripe_dialect_answers_409_and_spells_the_marker_its_way() {
        assert_eq!(Compat::default(), Compat::Default);
        assert_eq!(Compat::Default.payload_mismatch_status(), 422);
        assert_eq!(Compat::Default.in_progress_status(), 423);
        assert_eq!(Compat::Default.replay_header(), "idempotency-replayed");
        assert_eq!(Compat::Stripe.payload_mismatch_status(), 409);
        assert_eq!(Compat::Stripe.in_progress_status(), 409);
        assert_eq!(Compat::Stripe.replay_header(), "idempotent-replayed");
    }

    #[test]
    fn bypass_reasons_have_their_wire_names() {
        assert_eq!(ReplayUnavailable::SizeExceeded.as_str(), "size-exceeded");
        assert_eq!(ReplayUnavailable::Streaming.as_str(), "streaming");
        assert_eq!(
            IDEMPOTENCY_REPLAY_UNAVAILABLE,
            "idempotency-replay-unavailable"
        );
    }
}
