//! A small HTTP/1.1 client for tests: one loopback connection per request, through
//! hyper, or raw bytes written to a socket.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any one exchange may take before the test gives up on it. Generous: the
/// machine is small and shared.
pub const EXCHANGE_LIMIT: Duration = Duration::from_secs(60);

/// A request to send.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: Method,
    pub path: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
}

impl Call {
    pub fn new(method: Method, path: &str) -> Call {
        Call {
            method,
            path: path.to_owned(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    pub fn post(path: &str) -> Call {
        Call::new(Method::POST, path)
    }

    pub fn get(path: &str) -> Call {
        Call::new(Method::GET, path)
    }

    pub fn header(mut self, name: &str, value: &str) -> Call {
        self.headers.push((
            HeaderName::from_bytes(name.as_bytes()).expect("a valid header name"),
            HeaderValue::from_str(value).expect("a valid header value"),
        ));
        self
    }

    pub fn key(self, key: &str) -> Call {
        self.header("Idempotency-Key", key)
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> Call {
        self.body = body.into();
        self
    }
}

/// A response received.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// The header's value as text, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The body as JSON (panics if it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "the body is not JSON ({error}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The Problem Details `type` of a refusal (panics if the body is not one).
    pub fn problem_type(&self) -> String {
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "a refusal is problem+json"
        );
        self.json()["type"].as_str().expect("a type URI").to_owned()
    }
}

/// Sends `call` to `address` on a fresh connection and reads the whole response.
pub async fn send(address: SocketAddr, call: Call) -> std::io::Result<Reply> {
    tokio::time::timeout(EXCHANGE_LIMIT, exchange(address, call))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"))?
}

async fn exchange(address: SocketAddr, call: Call) -> std::io::Result<Reply> {
    let stream = TcpStream::connect(address).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(call.method)
        .uri(call.path)
        .header(http::header::HOST, address.to_string())
        .body(Full::new(call.body))
        .map_err(std::io::Error::other)?;
    for (name, value) in call.headers {
        request.headers_mut().append(name, value);
    }
    let response = sender
        .send_request(request)
        .await
        .map_err(std::io::Error::other)?;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    Ok(Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

/// Writes `request` as it is (it should say `Connection: close`) and returns every
/// byte the server sends until it closes the connection.
pub async fn send_raw(address: SocketAddr, request: &[u8]) -> std::io::Result<Vec<u8>> {
    tokio::time::timeout(EXCHANGE_LIMIT, async {
        let mut stream = TcpStream::connect(address).await?;
        stream.write_all(request).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok(answer)
    })
    .await
    .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"))?
}

/// Sends `call` and gives up on it (closes the connection) once `started` says the
/// server is running its handler, or after `EXCHANGE_LIMIT`.
pub async fn send_then_abandon<F, Fut>(address: SocketAddr, call: Call, mut started: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let request = tokio::spawn(async move { send(address, call).await });
    let deadline = tokio::time::Instant::now() + EXCHANGE_LIMIT;
    while !started().await && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Dropping the exchange drops its connection.
    request.abort();
    let _ = request.await;
}
