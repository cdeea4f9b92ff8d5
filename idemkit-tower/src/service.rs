//! [`IdempotencyService`]: the tower `Service` the layer wraps around the inner one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use idemkit_core::Backend;
use tower_service::Service;

use crate::config::Shared;
use crate::handle::{handle, pass_through, protected_key_header};
use crate::request_body::{BoxError, RequestBody};
use crate::response_body::ResponseBody;

/// The service an [`IdempotencyLayer`](crate::IdempotencyLayer) puts in front of the
/// inner one.
///
/// The inner service receives `Request<RequestBody<ReqBody>>` (with axum that is
/// automatic); this one answers `Response<ResponseBody<ResBody>>`, and passes the inner
/// service's errors through.
pub struct IdempotencyService<S, B: Backend> {
    inner: S,
    shared: Arc<Shared<B>>,
}

impl<S, B: Backend> IdempotencyService<S, B> {
    pub(crate) fn new(inner: S, shared: Arc<Shared<B>>) -> Self {
        IdempotencyService { inner, shared }
    }

    /// The wrapped service.
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use http::{Request, Response};
    /// use idemkit_core::InMemoryBackend;
    /// use idemkit_tower::{IdempotencyLayer, RequestBody};
    /// use tower::{Layer, service_fn};
    ///
    /// let handler = service_fn(|_: Request<RequestBody<String>>| async {
    ///     Ok::<_, Infallible>(Response::new(String::from("done")))
    /// });
    /// let layer = IdempotencyLayer::builder(InMemoryBackend::new()).single_tenant().build()?;
    /// let mut service = layer.layer(handler);
    /// let _handler: &_ = service.get_ref();
    /// let _handler: &mut _ = service.get_mut();
    /// let _handler = service.into_inner();
    /// # Ok::<(), idemkit_core::ConfigError>(())
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, to change it in place. Requests already handed on keep the
    /// instance they were given (each call clones the service it was polled ready with).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service, without the layer.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Clone, B: Backend> Clone for IdempotencyService<S, B> {
    fn clone(&self) -> Self {
        IdempotencyService {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: fmt::Debug, B: Backend> fmt::Debug for IdempotencyService<S, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdempotencyService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, B, ReqBody, ResBody> Service<Request<ReqBody>> for IdempotencyService<S, B>
where
    S: Service<Request<RequestBody<ReqBody>>, Response = Response<ResBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    S::Error: Send,
    B: Backend,
    ReqBody: Body<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<BoxError>,
    ResBody: Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Send,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The instance polled ready goes with this request; a clone stays for the next.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        match protected_key_header(&self.shared.config, &request) {
            Some(key_header) => {
                Box::pin(handle(Arc::clone(&self.shared), inner, request, key_header))
            }
            None => Box::pin(pass_through(inner, request)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::Full;
    use idemkit_core::InMemoryBackend;
    use tower::service_fn;
    use tower_layer::Layer;

    use super::*;
    use crate::IdempotencyLayer;

    /// The largest request glibc serves from each thread's own cache (64 sizes, 16
    /// bytes apart, the smallest 24): a larger box takes its slower path, which takes
    /// the arena's lock, once per protected request.
    const THREAD_CACHE_LIMIT: usize = 1032;

    #[test]
    fn a_protected_request_s_future_stays_in_the_allocator_s_thread_cache() {
        let handler = service_fn(|_: Request<RequestBody<Full<Bytes>>>| async {
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"done"))))
        });
        let layer = IdempotencyLayer::builder(InMemoryBackend::new())
            .single_tenant()
            .build()
            .unwrap();
        let service = layer.layer(handler);
        let request = Request::post("/orders")
            .header("idempotency-key", "k-1")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let key_header =
            protected_key_header(&service.shared.config, &request).expect("a keyed POST");
        let future = handle(
            Arc::clone(&service.shared),
            service.inner,
            request,
            key_header,
        );
        let size = std::mem::size_of_val(&future);
        // The request's head is kept once (it was kept four times, 1,896 bytes with
        // axum's types): a head moved into one more local is 224 bytes more.
        assert!(
            size <= THREAD_CACHE_LIMIT,
            "the request future is {size} bytes"
        );
    }
}
