//! The floor layer: the least a run-once layer does for a keyed request, measured
//! against idemkit's layer by `wrk_floor` (over loopback) and `layer_mix` (instructions
//! in process). Not for use: it exists to be measured.
//!
//! Per keyed request it reads the key, the scope (`x-api-key`, empty without one) and
//! the whole body; hashes an effective key (scope, key, method, path) and a fingerprint
//! (method, path, query, body as sent: no canonical JSON) with SHA-256; claims the key
//! in one of 64 `Mutex<HashMap>` shards (picked by the digest's last byte and hashed by
//! its first eight; they grow as keys arrive, or start with room for
//! `IDEMKIT_FLOOR_CAPACITY` records each); runs the handler, reads its body and stores
//! status, headers and body under the claim; a retry gets them back with the replay
//! header. None of the layer's other duties: no canonical JSON, no scope or body
//! limits, no leases, fencing, expiry or bound on the records, no events; a duplicate
//! in flight (only the warm-up sends them) yields until the first is done.
//!
//! `IDEMKIT_FLOOR_EXTRA_NS` makes it spend that many nanoseconds more on every keyed
//! request (spinning on the clock, before its claim): the floor plus a known cost, which
//! measures what each nanosecond a layer adds costs the wrk figures (BENCHMARKS.md).
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::convert::Infallible;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};
use tower::{Layer, Service};

const SHARDS: usize = 64;

/// A key's record: claimed while its handler runs, then its response.
enum Record {
    Running,
    Done {
        fingerprint: [u8; 32],
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
    },
}

type Shards = Arc<[Mutex<HashMap<[u8; 32], Record, BuildHasherDefault<Prefix>>>]>;

/// Records each shard has room for from the start: none unless `IDEMKIT_FLOOR_CAPACITY`
/// says, so the tables grow as keys arrive. In the sixteenth session's longer runs room
/// reserved ahead cost more than the rehashes it saves: every new key then writes into
/// memory never touched before (with 16,384 a shard, the floor of the first fifteen
/// sessions' figures, the server grew by about 1,950 bytes a new key against 600, and ran
/// new keys at 0.76x of no key against 0.87x; BENCHMARKS.md).
fn shard_capacity() -> usize {
    match std::env::var("IDEMKIT_FLOOR_CAPACITY") {
        Ok(capacity) => capacity
            .parse()
            .expect("IDEMKIT_FLOOR_CAPACITY is a number of records"),
        Err(_) => 0,
    }
}

/// The keys are SHA-256 digests already: their first eight bytes are their hash.
#[derive(Default)]
struct Prefix(u64);

impl Hasher for Prefix {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut word = [0u8; 8];
        let n = bytes.len().min(8);
        word[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_le_bytes(word);
    }
}

/// Puts the floor in front of a service; its clones share one store.
#[derive(Clone)]
pub struct FloorLayer {
    shards: Shards,
}

impl Default for FloorLayer {
    fn default() -> Self {
        let capacity = shard_capacity();
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(HashMap::with_capacity_and_hasher(
                    capacity,
                    Default::default(),
                ))
            })
            .collect();
        FloorLayer { shards }
    }
}

impl<S> Layer<S> for FloorLayer {
    type Service = Floor<S>;

    fn layer(&self, inner: S) -> Floor<S> {
        Floor {
            inner,
            shards: Arc::clone(&self.shards),
        }
    }
}

/// The floor in front of `S`.
#[derive(Clone)]
pub struct Floor<S> {
    inner: S,
    shards: Shards,
}

impl<S> Service<Request> for Floor<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let Some(key) = request.headers().get("idempotency-key").cloned() else {
            return Box::pin(inner.call(request));
        };
        let shards = Arc::clone(&self.shards);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let Ok(body) = body.collect().await.map(|body| body.to_bytes()) else {
                return Ok(status(StatusCode::BAD_REQUEST));
            };
            // The quick start's scope, which `layer_mix`'s requests carry too.
            let scope = parts
                .headers
                .get("x-api-key")
                .map_or(&b""[..], |scope| scope.as_bytes());
            let (method, path) = (parts.method.as_str(), parts.uri.path());
            let query = parts.uri.query().unwrap_or("");
            let effective = hash(&[scope, key.as_bytes(), method.as_bytes(), path.as_bytes()]);
            let fingerprint = hash(&[method.as_bytes(), path.as_bytes(), query.as_bytes(), &body]);
            // The shard from the digest's last byte, the table's hash from its first eight: two
            // independent parts, so each shard's table spreads its keys over all its buckets.
            let shard = &shards[usize::from(effective[31]) % SHARDS];
            spend_extra();
            // A duplicate of a request in flight (only the warm-up sends them) yields
            // until it is done: the floor does not count waiting.
            loop {
                match shard.lock().unwrap().entry(effective) {
                    Entry::Occupied(entry) => match entry.get() {
                        Record::Done {
                            fingerprint: stored,
                            status,
                            headers,
                            body,
                        } => {
                            if *stored != fingerprint {
                                return Ok(self::status(StatusCode::UNPROCESSABLE_ENTITY));
                            }
                            let mut response = Response::new(Body::from(body.clone()));
                            *response.status_mut() = *status;
                            *response.headers_mut() = headers.clone();
                            response
                                .headers_mut()
                                .insert("idempotency-replayed", HeaderValue::from_static("true"));
                            return Ok(response);
                        }
                        Record::Running => {}
                    },
                    Entry::Vacant(entry) => {
                        entry.insert(Record::Running);
                        break;
                    }
                }
                tokio::task::yield_now().await;
            }
            let response = inner
                .call(Request::from_parts(parts, Body::from(body)))
                .await?;
            let (parts, body) = response.into_parts();
            let Ok(body) = body.collect().await.map(|body| body.to_bytes()) else {
                shard.lock().unwrap().remove(&effective);
                return Ok(status(StatusCode::INTERNAL_SERVER_ERROR));
            };
            shard.lock().unwrap().insert(
                effective,
                Record::Done {
                    fingerprint,
                    status: parts.status,
                    headers: parts.headers.clone(),
                    body: body.clone(),
                },
            );
            Ok(Response::from_parts(parts, Body::from(body)))
        })
    }
}

/// Spends `IDEMKIT_FLOOR_EXTRA_NS` nanoseconds (none unless set) on the CPU: a layer
/// that costs the floor plus exactly that much.
fn spend_extra() {
    static EXTRA: OnceLock<Duration> = OnceLock::new();
    let extra = *EXTRA.get_or_init(|| match std::env::var("IDEMKIT_FLOOR_EXTRA_NS") {
        Ok(ns) => Duration::from_nanos(
            ns.parse()
                .expect("IDEMKIT_FLOOR_EXTRA_NS is a number of nanoseconds"),
        ),
        Err(_) => Duration::ZERO,
    });
    if extra.is_zero() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < extra {
        std::hint::spin_loop();
    }
}

/// SHA-256 of the fields, each after its length in 4 bytes (as idemkit's names are
/// built, so both layers hash as many blocks for the same request).
fn hash(fields: &[&[u8]]) -> [u8; 32] {
    let mut sha = Sha256::new();
    for field in fields {
        sha.update((field.len() as u32).to_be_bytes());
        sha.update(field);
    }
    sha.finalize().into()
}

fn status(status: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}
