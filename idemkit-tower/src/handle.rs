//! What happens to one request: checked, read, keyed, fingerprinted, then run once
//! through the core's executor, whose outcome [`answer`](crate::answer) turns into the
//! response.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Request, Response, response};
use http_body::Body;
use idemkit_core::{Backend, Key, RunError, State};
use tower_service::Service;

use crate::answer::{Answer, Delivered, NotStored};
use crate::canonical::{Target, media_type_is};
use crate::compat::Compat;
use crate::config::{Config, Shared};
use crate::effective_key::effective_key;
use crate::event::EventKind;
use crate::fingerprint::request_fingerprint;
use crate::key_header::KeyHeader;
use crate::problem::{Problem, ProblemType};
use crate::request_body::{BoxError, ReadBody, RequestBody, read_capped};
use crate::response_body::{Captured, ResponseBody, capture};

/// The `Idempotency-Key` header of `request` if the layer protects it: a method it
/// covers, carrying a key or sent where a key is required. `None` for any other
/// request, handed on untouched; for a method the layer does not cover, its headers are
/// not looked at.
pub(crate) fn protected_key_header<ReqBody>(
    config: &Config,
    request: &Request<ReqBody>,
) -> Option<KeyHeader<HeaderValue>> {
    if !config.methods.contains(request.method()) {
        return None;
    }
    let key_header = KeyHeader::of(request.headers());
    (config.require_key || key_header.is_present()).then(|| key_header.cloned())
}

/// Handles one request that the layer protects, with the ready service `inner`;
/// `key_header` is its `Idempotency-Key` header, as [`protected_key_header`] found it.
///
/// The request's head is kept in one place for the whole request (`head`, taken by the
/// run that hands it to the handler) rather than moved from local to local: each move
/// would be one more copy of it in the future, which `call` boxes for every protected
/// request and which is best kept under glibc's thread-cache limit (1,032 bytes).
pub(crate) fn handle<S, B, ReqBody, ResBody>(
    shared: Arc<Shared<B>>,
    mut inner: S,
    request: Request<ReqBody>,
    key_header: KeyHeader<HeaderValue>,
) -> impl Future<Output = Result<Response<ResponseBody<ResBody>>, S::Error>>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>,
    B: Backend,
    ReqBody: Body<Data = Bytes>,
    ReqBody::Error: Into<BoxError>,
    ResBody: Body<Data = Bytes>,
{
    let (head, body) = request.into_parts();
    let mut head = Some(head);
    async move {
        let config = &shared.config;
        let parts = head.as_ref().expect("the head is taken only by the run");
        let answer = Answer::new(config, parts, Instant::now());
        let compat = config.compat;
        let key = match key_header.borrowed().key() {
            Ok(Some(key)) => key,
            // Without a key, a protected request is one sent where keys are required.
            Ok(None) => {
                let problem = Problem::new(
                    ProblemType::MissingKey,
                    compat,
                    "This endpoint requires an Idempotency-Key header: send a unique key (a \
                     UUID, say) with the request, and the same key with each retry of it.",
                );
                return Ok(answer.refuse(problem, EventKind::MissingKey));
            }
            Err(error) => {
                let problem = Problem::new(
                    ProblemType::MissingKey,
                    compat,
                    format!("{error}. Send one key of 1 to 255 bytes, bare or as a quoted string."),
                );
                return Ok(answer.refuse(problem, EventKind::InvalidKey));
            }
        };
        let Some(scope) = config.scope.of(parts) else {
            let problem = Problem::new(
                ProblemType::IdentityUnavailable,
                compat,
                "The server could not tell who sent this request, so it cannot keep its \
                 idempotency key apart from other callers' keys. This is a server-side \
                 configuration problem.",
            );
            return Ok(answer.refuse(problem, EventKind::IdentityUnavailable));
        };
        let body = match read_capped(body, config.max_request_body_bytes).await {
            ReadBody::Complete(body) => body,
            ReadBody::TooLarge => {
                let problem = Problem::new(
                    ProblemType::RequestTooLarge,
                    compat,
                    format!(
                        "Requests with an Idempotency-Key may carry at most {} bytes of body.",
                        config.max_request_body_bytes
                    ),
                );
                return Ok(answer.refuse(problem, EventKind::RequestTooLarge));
            }
            ReadBody::Failed(error) => {
                tracing::debug!(target: "idemkit_tower", %error, "request body broke off");
                let problem = Problem::new(
                    ProblemType::RequestBodyUnreadable,
                    compat,
                    "The request body ended before it was complete. Send the request again.",
                );
                return Ok(answer.refuse(problem, EventKind::RequestBodyUnreadable));
            }
        };
        let target = Target::of(&parts.method, parts.uri.path());
        let key = effective_key(&key, &scope, &target);
        let fingerprint = request_fingerprint(&target, parts, &body, &config.fingerprint_headers);
        let answer = answer.with_key(&key);
        let guard = config.run_hook.as_ref().map(|hook| {
            let parts = head.as_mut().expect("the head is taken only by the run");
            hook.before(&key, &mut parts.extensions)
        });

        // Filled by the handler's run, if it runs here: what the first client receives.
        // Boxed: only a new key's run fills it.
        let mut delivered: Option<Box<Delivered>> = None;
        let slot = &mut delivered;
        let head = &mut head;
        let inner = &mut inner;
        // Boxed: large, and inline it would make every protected request's future as
        // large, refusals included, and be copied whole each time it moves.
        let run = shared.executor.run(&key, &fingerprint, move || async move {
            let head = head.take().expect("the executor runs the operation once");
            let request = Request::from_parts(head, RequestBody::read(body));
            Box::pin(run_handler(inner, request, config, slot)).await
        });
        let result = Box::pin(run).await;
        if guard.is_some_and(|guard| guard.rolled_back()) {
            // The handler's effect was rolled back after it answered: never a success.
            return Ok(answer.lease_lost());
        }
        // Stripe answers a key in use by a request still in flight with 409 (retried by
        // its clients), whatever its parameters; only a finished one is compared with
        // them. Boxed: the rare path's future stays out of every request's.
        let in_flight = match (&result, compat) {
            (Err(RunError::PayloadMismatch), Compat::Stripe) => {
                Box::pin(lease_left(shared.executor.backend(), &key)).await
            }
            _ => None,
        };
        answer.finish(result, delivered, in_flight)
    }
}

/// What is left of the lease of the claim that holds `key`, if a live claim holds it;
/// `None` if the key is completed, free, or cannot be read.
async fn lease_left<B: Backend>(backend: &B, key: &Key) -> Option<std::time::Duration> {
    let record = backend.get(key.as_str()).await.ok()??;
    let now = backend.now();
    (record.state() == State::Claimed && record.lease_until() >= now)
        .then(|| record.lease_until().saturating_duration_since(now))
}

/// Runs the inner service and reads its response: a response that can be stored is
/// returned (with the stored headers) and kept in `delivered` for this client; one that
/// cannot is returned as the error, to be delivered as it is once the claim is released.
///
/// The error is boxed: it holds a response's head, and every state of the executor's
/// run future that may hold the operation's result would otherwise be that large.
async fn run_handler<S, ReqBody, ResBody>(
    inner: &mut S,
    request: Request<RequestBody<ReqBody>>,
    config: &Config,
    delivered: &mut Option<Box<Delivered>>,
) -> Result<idemkit_core::Response, Box<NotStored<ResBody, S::Error>>>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>,
    ResBody: Body<Data = Bytes>,
{
    let response = match inner.call(request).await {
        Ok(response) => response,
        Err(error) => return Err(Box::new(NotStored::ServiceFailed(error))),
    };
    let (parts, body) = response.into_parts();
    if is_event_stream(&parts) {
        return Err(Box::new(NotStored::Streaming(parts, body)));
    }
    match capture(body, config.max_response_body_bytes).await {
        Captured::Whole { bytes, trailers } => {
            let stored = idemkit_core::Response {
                status: parts.status.as_u16(),
                headers: config.stored_headers.select(&parts.headers),
                // Not `bytes` itself: the handler's buffer may be far larger than its
                // body (a `String`'s spare capacity), and the record keeps it for a day.
                body: idemkit_core::Body::compact(&bytes),
            };
            *delivered = Some(Box::new(Delivered {
                parts,
                body: bytes,
                trailers,
            }));
            Ok(stored)
        }
        Captured::TooLarge { body } => Err(Box::new(NotStored::TooLarge(parts, body))),
        Captured::Broken { body } => Err(Box::new(NotStored::Broken(parts, body))),
    }
}

/// A request the layer does not protect: handed on untouched. Its future is apart from
/// [`handle`]'s, so such a request carries none of the protected path's state.
pub(crate) async fn pass_through<S, ReqBody, ResBody>(
    mut inner: S,
    request: Request<ReqBody>,
) -> Result<Response<ResponseBody<ResBody>>, S::Error>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>,
    ResBody: Body,
{
    let response = inner.call(request.map(RequestBody::untouched)).await?;
    Ok(response.map(ResponseBody::inner))
}

/// Whether the response is a stream of server-sent events, delivered as it is produced
/// and never stored.
fn is_event_stream(parts: &response::Parts) -> bool {
    content_type_is(&parts.headers, "text/event-stream")
}

fn content_type_is(headers: &HeaderMap, media_type: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|value| media_type_is(value.as_bytes(), media_type))
}
