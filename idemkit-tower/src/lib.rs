//! The `Idempotency-Key` header for axum and hyper services.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod canonical;
mod compat;
mod effective_key;
mod event;
mod fingerprint;
mod key_header;
mod problem;
mod request_body;
mod response_body;
mod scope;
mod stored_headers;

pub use compat::{
    Compat, IDEMPOTENCY_REPLAY_UNAVAILABLE, IDEMPOTENCY_REPLAYED, IDEMPOTENT_REPLAYED,
    ReplayUnavailable,
};
pub use event::{EventKind, IdempotencyEvent};
pub use key_header::{IDEMPOTENCY_KEY, IdempotencyKey, KeyHeaderError, MAX_KEY_BYTES};
pub use problem::{PROBLEM_JSON, ProblemType};
pub use request_body::RequestBody;
pub use response_body::ResponseBody;
pub use stored_headers::StoredHeaders;
