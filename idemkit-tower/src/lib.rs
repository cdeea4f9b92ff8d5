//! The `Idempotency-Key` header for axum and hyper services: a tower layer that runs
//! each keyed request once, stores its response, and replays that response to every
//! retry.
//!
//! A client that retries a `POST` after a time-out cannot know whether the first attempt
//! took effect. If it sends the same `Idempotency-Key` header with each attempt, this
//! layer makes the retries safe: the first attempt claims the key (atomically, under a
//! lease), the handler runs once, its response is stored, and every later attempt gets
//! that response back, marked `Idempotency-Replayed: true`. A retry that arrives while
//! the first attempt still runs waits for it. It runs over any
//! [`Backend`](idemkit_core::Backend) of `idemkit-core`: the in-memory one for a single
//! process, a shared one (Redis) for several replicas, or one chosen at run time
//! ([`DynBackend`](idemkit_core::DynBackend)).
//!
//! # With axum
//!
//! ```
//! use axum::{Router, http::HeaderName, routing::post};
//! use idemkit_core::InMemoryBackend;
//! use idemkit_tower::IdempotencyLayer;
//!
//! let idempotency = IdempotencyLayer::builder(InMemoryBackend::new())
//!     // Who is calling: part of the key, so two tenants never share a record.
//!     .scope_header(HeaderName::from_static("x-api-key"))
//!     .build()
//!     .unwrap();
//! let app: Router = Router::new()
//!     .route("/charges", post(|body: String| async move { format!("charged {body}") }))
//!     .layer(idempotency);
//! ```
//!
//! `Router::route_layer` works too, to protect some routes only.
//!
//! # With hyper
//!
//! The layer wraps any tower service; hyper 1 takes it through one adapter,
//! `hyper_util::service::TowerToHyperService`:
//!
//! ```no_run
//! use std::convert::Infallible;
//! use bytes::Bytes;
//! use http::{Request, Response};
//! use http_body_util::Full;
//! use hyper::body::Incoming;
//! use hyper_util::{rt::TokioIo, service::TowerToHyperService};
//! use idemkit_core::InMemoryBackend;
//! use idemkit_tower::{IdempotencyLayer, RequestBody};
//!
//! async fn handler(_: Request<RequestBody<Incoming>>) -> Result<Response<Full<Bytes>>, Infallible> {
//!     Ok(Response::new(Full::new(Bytes::from("created"))))
//! }
//!
//! # async fn serve() -> std::io::Result<()> {
//! let layer = IdempotencyLayer::builder(InMemoryBackend::new()).single_tenant().build().unwrap();
//! let service = tower::ServiceBuilder::new().layer(layer).service_fn(handler);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! loop {
//!     let (stream, _) = listener.accept().await?;
//!     let service = TowerToHyperService::new(service.clone()); // the one line
//!     tokio::spawn(hyper::server::conn::http1::Builder::new()
//!         .serve_connection(TokioIo::new(stream), service));
//! }
//! # }
//! ```
//!
//! # What it does
//!
//! - **Which requests.** `POST` and `PATCH` by default ([`IdempotencyLayerBuilder::methods`]); others pass
//!   through untouched. A protected request without a key passes through too, unless keys
//!   are required ([`IdempotencyLayerBuilder::require_key`]): then it is a 400.
//! - **The key.** The `Idempotency-Key` header, its name matched without regard to case;
//!   a quoted structured-field string (`"abc"`) and a bare value (`abc`) are the same
//!   key. 1 to 255 bytes; an empty, longer, badly quoted or repeated header is a 400.
//! - **The record's name** (the effective key) is a SHA-256 of the client's key, the
//!   caller's scope (a function of the request head, [`IdempotencyLayerBuilder::scope`],
//!   or one header's value, [`IdempotencyLayerBuilder::scope_header`]), the method and
//!   the path, each length-prefixed: the same key from two tenants, or to two endpoints,
//!   names two records. The raw key is never stored or logged. With no scope, every
//!   caller shares one namespace, and the layer says so loudly when it is built.
//! - **The fingerprint** is a SHA-256 of the method, the path, the query (parameters
//!   sorted) and the body, plus the headers named with [`IdempotencyLayerBuilder::fingerprint_headers`].
//!   JSON bodies are compared with their members sorted, form bodies with their fields
//!   sorted, multipart bodies with their parts sorted: a client library that
//!   re-serializes a retry still matches. A key reused with another fingerprint is a 422
//!   and the stored response is never handed out. Its rules are in
//!   [The fingerprint](#the-fingerprint) below.
//! - **Request bodies** are read whole before the handler runs (they are part of the
//!   fingerprint), up to 1 MiB by default
//!   ([`IdempotencyLayerBuilder::max_request_body_bytes`]).
//! - **The handler runs once.** A 2xx response is stored (by default: the policy's
//!   `cacheable` chooses, see [`IdempotencyLayerBuilder::policy`]); a 5xx never is,
//!   whatever the predicate says, since a replayed transient failure would fail every
//!   retry. A response that is not stored is delivered and its key released, so a
//!   retry runs again.
//! - **Response bodies** are counted as they stream, never by `Content-Length`. Up to
//!   1 MiB by default ([`IdempotencyLayerBuilder::max_response_body_bytes`]) they are
//!   stored; a longer one is delivered whole, marked
//!   `Idempotency-Replay-Unavailable: size-exceeded`, and not stored. An event stream (`text/event-stream`) is delivered as it streams, marked
//!   `Idempotency-Replay-Unavailable: streaming`, and never stored.
//! - **A response delivered but not stored** says why in `Idempotency-Replay-Unavailable`
//!   ([`ReplayUnavailable`]): besides the two above, `storage-error` when the store failed
//!   to keep it (or, failing open, could not claim the key), and `fenced-out` when the
//!   request's lease lapsed while its handler ran and another request took the key over
//!   (a retry then gets that request's response).
//! - **Stored headers** follow an allow list and a deny list ([`StoredHeaders`]):
//!   `Location`, `ETag`, `Content-Type` and the like are replayed; `Set-Cookie`,
//!   `Authorization` and connection headers never are. The first client gets every
//!   header its handler set.
//! - **A duplicate in flight** waits (the policy's `wait_timeout`, 10 s by default) and
//!   replays the result; if the wait runs out, 423 with `Retry-After` (what remains of
//!   the running request's lease, at least one second). A client should retry after it,
//!   a bounded number of times.
//! - **A failing store** is a 503 with `Retry-After` when failing closed (the default),
//!   or an unprotected run when failing open (the policy's `on_storage_error`). If the
//!   store fails only when the response is to be stored, the handler has run: its
//!   response is delivered rather than a 503 that would invite a second run.
//! - **A client that goes away mid-run.** hyper drops the request's future, which
//!   cancels the handler at its next `.await` and releases the key at once (on a
//!   networked store whose release cannot complete in that instant, the lease lapses
//!   instead): a retry runs again, never waits out a stuck key. A handler whose side
//!   effect must not be cut short should hand it to a spawned task.
//! - **Leases.** While the handler runs its lease is renewed (the policy's `heartbeat`);
//!   if the process dies, the lease lapses (the policy's `lease_ttl`, 30 s by default) and
//!   the next retry takes the key over. A stalled run whose lease was taken over keeps
//!   its own response; the new run's result is the one stored.
//!
//! # Refusals
//!
//! Every answer the layer makes itself is `application/problem+json` with a `type` URI a
//! client can branch on ([`ProblemType`]), but one: in the Stripe dialect a reused key is
//! answered in Stripe's error shape, its `type` URI in the error's `code`.
//!
//! | condition | status | Stripe dialect | `type` |
//! |---|---|---|---|
//! | key reused with another request | 422 | 400, Stripe's error object | `urn:idemkit:payload-mismatch` |
//! | still in progress after the wait | 423 + `Retry-After` | 409 + `Retry-After` | `urn:idemkit:in-progress` |
//! | key missing (when required) or unusable | 400 | 400 | `urn:idemkit:missing-key` |
//! | store failing, failing closed | 503 + `Retry-After` | 503 + `Retry-After` | `urn:idemkit:storage-error` |
//! | scope function found no identity | 500 | 500 | `urn:idemkit:identity-unavailable` |
//! | request body over the cap | 413 | 413 | `urn:idemkit:request-too-large` |
//! | request body broke off | 400 | 400 | `urn:idemkit:request-body-unreadable` |
//! | lease lost while running | 503 + `Retry-After` | 503 + `Retry-After` | `urn:idemkit:lease-lost` |
//!
//! [`Compat::Stripe`] answers in the dialect of Stripe's API: a key reused with other
//! parameters is a 400 with Stripe's error object (`{"error": {"type":
//! "idempotency_error", "message": ..., "code": "urn:idemkit:payload-mismatch"}}`), which
//! Stripe's clients raise at once as their idempotency error; a request that meets its
//! key in flight is a 409 (whatever its parameters, as Stripe answers), which they
//! retry; replays are marked `Idempotent-Replayed: true`.
//!
//! # The fingerprint
//!
//! Fingerprint version 2. A retry matches its first request when, after
//! canonicalization, they agree on the method (uppercase), the path, the query (decoded,
//! parameters sorted, encoded again), the body and the named headers. The body is read
//! as its `Content-Type` says:
//!
//! - **`application/json`**: parsed and written with every object's members sorted by
//!   name and no whitespace; strings are compared after unescaping (`"\u0041"` is
//!   `"A"`).
//!   - **Numbers are compared exactly**, never through `f64`: two numbers match only
//!     when they are the same decimal value. An integer (no fraction, no exponent) keeps
//!     all its digits (`18446744073709551616` and `18446744073709551617` differ; `-0` is
//!     `0`); any other number is reduced to its exact decimal value (`1.5`, `1.50`,
//!     `15e-1` match; `0.1` and `0.10000000000000000001` do not). An integer and a
//!     number written with a fraction or an exponent never match, even of equal value:
//!     `1` and `1.0` differ, as do `100` and `1e2`, and `18446744073709551616` and
//!     `1.8446744073709552e19`. A number whose exponent has more than 36 digits is not
//!     reduced; its body is compared by its raw bytes.
//!   - **Repeated member names never collapse**: a body with an object that repeats a
//!     name (`{"a":1,"a":2}`) is compared by its raw bytes, so it matches only itself,
//!     never `{"a":2}` nor `{"a":1}`, whichever member a parser would keep.
//!   - A body that is not JSON (RFC 8259: UTF-8, no leading zeros, no lone surrogates,
//!     nothing after the value), or nests deeper than 128 levels, is compared by its raw
//!     bytes too.
//! - **`application/x-www-form-urlencoded`**: fields sorted, like the query.
//! - **`multipart/form-data`**: parts sorted; each part is its field name, its
//!   `filename`, its `filename*`, its `Content-Type` and the SHA-256 of its content, so a
//!   part that says it is another thing is another part. A part that repeats its
//!   `Content-Disposition` or `Content-Type` header, or a body that is not well-formed
//!   multipart, is compared by its raw bytes.
//! - **Anything else**: the raw bytes, with the media type (`text/plain`,
//!   `application/octet-stream`..., without parameters, case aside).
//!
//! **What a body is, is part of it**: the fingerprint records which of the four
//! canonicalizations (JSON, form, multipart, raw) the body went through, so a JSON body
//! never matches a `text/plain` one whose bytes happen to be its canonical form.
//!
//! The version is stored with each record and is part of the effective key: records
//! written by a layer of fingerprint version 1 are not found by this one (they expire on
//! their own), so a retry that spans an upgrade runs once more rather than being refused
//! as another request (the executor cannot compare fingerprints of two versions) or
//! given a response it cannot be proven to match.
//!
//! # Where this layer is stricter than idemkit's Python middleware
//!
//! - **A request body over the cap is refused with a 413**, where the Python middleware
//!   runs such a request without protection. A request that carries a key asks for
//!   protection; running it unprotected would silently break that promise.
//! - **Server errors are never stored**, even if the cacheable predicate allows them.
//! - **A repeated `Idempotency-Key` header is a 400**, not one of its values picked.
//!
//! # Where this layer differs from the Python specification
//!
//! - **Fingerprint version 2 is not RFC 8785.** The specification reserves version 2 for
//!   the JSON Canonicalization Scheme; this layer's version 2 is its own: numbers exact
//!   (JCS rounds them through `f64`, which is what made `2^64` and `2^64 + 1` match),
//!   repeated names read by raw bytes (JCS refuses them), and the body's kind and its
//!   multipart parts' headers included.
//! - **A record of another fingerprint version is never read**, rather than read and
//!   treated as absent: the version is part of the effective key, so the outcome (a
//!   fresh run) is the same, and a record of one version is never overwritten by a claim
//!   of another.
//! - **In the Stripe dialect** a key reused with other parameters is a 400 (Stripe's
//!   answer), not the specification's 409.
//!
//! # Observability
//!
//! Every decision on a protected request (a new run, a replay, a refusal, a bypass...)
//! is one [`IdempotencyEvent`]: logged through `tracing` (target `idemkit_tower`; `WARN`
//! for faults, `INFO` for refusals and bypasses, `DEBUG` for runs and replays) and
//! handed to your callback ([`IdempotencyLayerBuilder::on_event`]). An event carries the effective key
//! (a hash), never the client's key.
//!
//! # The handler's writes and the stored response in one transaction
//!
//! A [`RunHook`] set with [`IdempotencyLayerBuilder::run_hook`] works around each protected run: before
//! it, it puts what the handler needs into the request's extensions; after it, it says
//! whether the handler's effect was rolled back, and the layer then answers a
//! `urn:idemkit:lease-lost` problem instead of the handler's response. With the
//! `postgres` feature, `PostgresTransactions` is the hook of `idemkit-postgres`: the
//! handler takes the request's transaction (`Extension<RunTransaction>` with axum) and
//! the layer commits it together with the stored response, fenced by the claim.
//!
//! # Limits
//!
//! - The fingerprint is taken over the body as the layer receives it: put a
//!   decompression layer outside this one if clients compress their bodies.
//! - The JSON canonical form sorts members and compares numbers exactly, but does not
//!   normalize Unicode (NFC and NFD spellings of one string differ), and keeps an integer
//!   apart from a decimal of equal value (`1` and `1.0` differ).
//! - Trailers of a stored response are delivered to the first client, not replayed.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod answer;
mod builder;
mod canonical;
mod compat;
mod config;
mod effective_key;
mod event;
mod fingerprint;
mod handle;
mod key_header;
mod layer;
#[cfg(feature = "postgres")]
mod postgres;
mod problem;
mod request_body;
mod response_body;
mod run_hook;
mod scope;
mod service;
mod stored_headers;

pub use builder::{
    DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_MAX_RESPONSE_BODY_BYTES, IdempotencyLayerBuilder,
};
pub use compat::{
    Compat, IDEMPOTENCY_REPLAY_UNAVAILABLE, IDEMPOTENCY_REPLAYED, IDEMPOTENT_REPLAYED,
    ReplayUnavailable,
};
pub use event::{EventKind, IdempotencyEvent};
pub use key_header::{IDEMPOTENCY_KEY, IdempotencyKey, KeyHeaderError, MAX_KEY_BYTES};
pub use layer::{IdempotencyLayer, KeyError};
#[cfg(feature = "postgres")]
pub use postgres::PostgresTransactions;
pub use problem::{PROBLEM_JSON, ProblemType};
pub use request_body::RequestBody;
pub use response_body::ResponseBody;
pub use run_hook::{RunGuard, RunHook};
pub use service::IdempotencyService;
pub use stored_headers::StoredHeaders;

/// This crate's README, whose example is compiled as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
