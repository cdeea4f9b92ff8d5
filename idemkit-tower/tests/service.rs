//! The service's access to the service it wraps: `get_ref`, `get_mut`, `into_inner`.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use idemkit_core::InMemoryBackend;
use idemkit_tower::{IdempotencyLayer, RequestBody, ResponseBody};
use tower::{Layer, Service, ServiceExt};

/// A handler with a setting of its own, to change through the layer's service.
#[derive(Clone)]
struct Greeter {
    greeting: String,
}

impl Service<Request<RequestBody<Full<Bytes>>>> for Greeter {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Response<Full<Bytes>>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<RequestBody<Full<Bytes>>>) -> Self::Future {
        ready(Ok(Response::new(Full::new(Bytes::from(
            self.greeting.clone(),
        )))))
    }
}

async fn greet<S>(service: &mut S, key: &str) -> String
where
    S: Service<Request<Full<Bytes>>, Response = Response<ResponseBody<Full<Bytes>>>>,
    S::Error: std::fmt::Debug,
{
    let request = Request::post("/greet")
        .header("idempotency-key", key)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test]
async fn the_wrapped_service_can_be_read_changed_and_taken_back() {
    let layer = IdempotencyLayer::builder(InMemoryBackend::new())
        .single_tenant()
        .build()
        .unwrap();
    let mut service = layer.layer(Greeter {
        greeting: "hello".to_owned(),
    });
    assert_eq!(service.get_ref().greeting, "hello");
    assert_eq!(greet(&mut service, "a").await, "hello");

    service.get_mut().greeting = "bonjour".to_owned();
    assert_eq!(service.get_ref().greeting, "bonjour");
    assert_eq!(
        greet(&mut service, "b").await,
        "bonjour",
        "a new key runs the changed service"
    );
    assert_eq!(
        greet(&mut service, "a").await,
        "hello",
        "a stored response is replayed as it was"
    );

    let greeter = service.into_inner();
    assert_eq!(greeter.greeting, "bonjour");
}
