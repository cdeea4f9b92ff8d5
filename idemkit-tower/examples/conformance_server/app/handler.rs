//! The handler behind the layer: it counts its runs and does what the request's test
//! headers ask (sleep, a status, a long chunked body, extra headers, a crash).

use std::convert::Infallible;
use std::hash::BuildHasher;
use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Either, Full};

/// Sleep this many milliseconds before anything else.
pub const TEST_DELAY_MS: &str = "x-test-delay-ms";
/// Answer with this status (default 201).
pub const TEST_STATUS: &str = "x-test-status";
/// Answer with a body of this many bytes, in chunks, without `Content-Length`.
pub const TEST_BODY_BYTES: &str = "x-test-body-bytes";
/// `Name: value`, repeatable: add this header to the response.
pub const TEST_RESPONSE_HEADER: &str = "x-test-response-header";
/// `1`: abort the process inside the handler (after the claim, before answering).
pub const TEST_CRASH: &str = "x-test-crash";
/// The caller's identity: the layer's scope, echoed in the body.
pub const IDENTITY: &str = "x-identity";

/// The handler's response body: JSON, or the long chunked body.
pub type HandlerBody = Either<Full<Bytes>, PatternBody>;

/// What the handler keeps between requests.
#[derive(Debug)]
pub struct HandlerState {
    server_id: String,
    calls: AtomicU64,
    /// With `--effects`: the pool to write effect rows with when a request has no
    /// transaction (it passed the layer unprotected).
    effects: Option<sqlx::PgPool>,
}

impl HandlerState {
    /// A handler with a fresh server id and no runs yet.
    pub fn new() -> HandlerState {
        // RandomState is seeded from the OS at random: a different id per process.
        let seed = std::collections::hash_map::RandomState::new();
        let id = seed.hash_one((std::process::id(), std::time::SystemTime::now()));
        HandlerState {
            server_id: format!("{id:016x}"),
            calls: AtomicU64::new(0),
            effects: None,
        }
    }

    /// This handler, writing an effect row per call: in the request's transaction, or
    /// on `pool` for a request the layer does not protect.
    pub fn with_effects(mut self, pool: Option<sqlx::PgPool>) -> HandlerState {
        self.effects = pool;
        self
    }

    /// Whether each call writes an effect row.
    pub fn effects(&self) -> bool {
        self.effects.is_some()
    }

    /// How many times the handler has run in this process.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

/// One run of the handler.
pub async fn handle<B>(
    state: &HandlerState,
    request: Request<B>,
) -> Result<Response<HandlerBody>, Infallible>
where
    B: Body,
{
    let call = state.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let (parts, body) = request.into_parts();
    let instructions = match Instructions::read(&parts.headers) {
        Ok(instructions) => instructions,
        Err(message) => return Ok(plain(StatusCode::BAD_REQUEST, message)),
    };
    // With --effects: the effect row first, inside the request's transaction, which
    // stays open through the delay and the crash below.
    let mut effect = None;
    if let Some(pool) = &state.effects {
        match write_effect(state, pool, &parts, call).await {
            Ok(connection) => effect = connection,
            Err(message) => return Ok(plain(StatusCode::SERVICE_UNAVAILABLE, message)),
        }
    }
    if let Some(delay) = instructions.delay {
        tokio::time::sleep(delay).await;
    }
    if instructions.crash {
        // Whatever was printed is out before the process goes.
        let _ = std::io::stdout().flush();
        std::process::abort();
    }
    // Parked for the layer, which commits it with the stored response.
    drop(effect);
    let Ok(body) = body.collect().await.map(|collected| collected.to_bytes()) else {
        return Ok(plain(
            StatusCode::BAD_REQUEST,
            "the request body broke off".to_owned(),
        ));
    };
    let mut response = match instructions.body_bytes {
        Some(length) => {
            let mut response = Response::new(Either::Right(PatternBody::new(length)));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            response
        }
        None => {
            let identity = parts
                .headers
                .get(IDENTITY)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
                .unwrap_or_default();
            // Written by hand to keep the members in the documented order.
            let text = |value: &str| serde_json::Value::from(value).to_string();
            let json = format!(
                r#"{{"server":{},"call":{call},"identity":{},"body":{}}}"#,
                text(&state.server_id),
                text(&identity),
                text(&String::from_utf8_lossy(&body)),
            );
            let mut response = Response::new(Either::Left(Full::new(Bytes::from(json))));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
    };
    *response.status_mut() = instructions.status;
    // A test header replaces what the handler set under its name (Content-Type, say);
    // repeated, it adds a value each time.
    let mut replaced = Vec::new();
    for (name, value) in instructions.headers {
        if replaced.contains(&name) {
            response.headers_mut().append(name, value);
        } else {
            response.headers_mut().insert(name.clone(), value);
            replaced.push(name);
        }
    }
    Ok(response)
}

/// Inserts this call's effect row (the raw `Idempotency-Key`, the server id, the call
/// number) in the request's transaction, whose connection it returns (keeping the
/// transaction open); a request without one (unprotected) writes it on `pool` at once.
async fn write_effect(
    state: &HandlerState,
    pool: &sqlx::PgPool,
    parts: &http::request::Parts,
    call: u64,
) -> Result<Option<idemkit_postgres::RunConnection>, String> {
    let raw_key = parts
        .headers
        .get(idemkit_tower::IDEMPOTENCY_KEY)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    let insert =
        sqlx::query("INSERT INTO idemkit_test_effects (key, server, call) VALUES ($1, $2, $3)")
            .bind(raw_key)
            .bind(&state.server_id)
            .bind(i64::try_from(call).unwrap_or(i64::MAX));
    let failed = |error: sqlx::Error| format!("inserting the effect row: {error}");
    let Some(run) = parts.extensions.get::<idemkit_postgres::RunTransaction>() else {
        insert.execute(pool).await.map_err(failed)?;
        return Ok(None);
    };
    let mut connection = run.begin().await.map_err(|error| error.to_string())?;
    insert.execute(&mut *connection).await.map_err(failed)?;
    Ok(Some(connection))
}

/// What the test headers of one request ask for.
#[derive(Debug, PartialEq)]
struct Instructions {
    delay: Option<Duration>,
    status: StatusCode,
    body_bytes: Option<u64>,
    headers: Vec<(HeaderName, HeaderValue)>,
    crash: bool,
}

impl Instructions {
    fn read(headers: &HeaderMap) -> Result<Instructions, String> {
        let number = |name: &str| -> Result<Option<u64>, String> {
            headers
                .get(name)
                .map(|value| {
                    value
                        .to_str()
                        .ok()
                        .and_then(|text| text.trim().parse().ok())
                        .ok_or_else(|| format!("{name} must be a whole number"))
                })
                .transpose()
        };
        let status = match number(TEST_STATUS)? {
            None => StatusCode::CREATED,
            Some(code) => u16::try_from(code)
                .ok()
                .and_then(|code| StatusCode::from_u16(code).ok())
                .ok_or_else(|| format!("{TEST_STATUS} must be a status code"))?,
        };
        let mut extra = Vec::new();
        for value in headers.get_all(TEST_RESPONSE_HEADER) {
            let line = value.as_bytes();
            let colon = line
                .iter()
                .position(|&byte| byte == b':')
                .ok_or_else(|| format!("{TEST_RESPONSE_HEADER} must read `Name: value`"))?;
            let name = HeaderName::from_bytes(line[..colon].trim_ascii())
                .map_err(|_| format!("{TEST_RESPONSE_HEADER}: bad header name"))?;
            let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii())
                .map_err(|_| format!("{TEST_RESPONSE_HEADER}: bad header value"))?;
            extra.push((name, value));
        }
        Ok(Instructions {
            delay: number(TEST_DELAY_MS)?.map(Duration::from_millis),
            status,
            body_bytes: number(TEST_BODY_BYTES)?,
            headers: extra,
            crash: headers
                .get(TEST_CRASH)
                .is_some_and(|value| value.as_bytes().trim_ascii() == b"1"),
        })
    }
}

fn plain(status: StatusCode, message: String) -> Response<HandlerBody> {
    let mut response = Response::new(Either::Left(Full::new(Bytes::from(message))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// A body of a given length, `abc...xyzabc...`, sent in chunks of at most 1 KiB,
/// declaring no length (so it goes out chunked, without `Content-Length`).
#[derive(Debug)]
pub struct PatternBody {
    sent: u64,
    length: u64,
}

const CHUNK: u64 = 1024;

impl PatternBody {
    fn new(length: u64) -> PatternBody {
        PatternBody { sent: 0, length }
    }
}

impl Body for PatternBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let remaining = self.length - self.sent;
        if remaining == 0 {
            return Poll::Ready(None);
        }
        let take = remaining.min(CHUNK);
        let chunk: Vec<u8> = (self.sent..self.sent + take)
            .map(|index| b'a' + (index % 26) as u8)
            .collect();
        self.sent += take;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }

    fn is_end_stream(&self) -> bool {
        self.sent == self.length
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
        let mut builder = Request::builder().method("POST").uri("/resources");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap()
    }

    async fn run(
        state: &HandlerState,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (StatusCode, HeaderMap, Bytes) {
        let response = handle(state, request(headers, body)).await.unwrap();
        let (parts, body) = response.into_parts();
        (
            parts.status,
            parts.headers,
            body.collect().await.unwrap().to_bytes(),
        )
    }

    #[tokio::test]
    async fn the_default_answer_is_201_and_the_json_of_the_run() {
        let state = HandlerState::new();
        let (status, headers, body) = run(
            &state,
            &[("x-identity", "tenant-A:user-1")],
            r#"{"name": "x"}"#,
        )
        .await;
        assert_eq!(status, 201);
        assert_eq!(headers[CONTENT_TYPE], "application/json");
        let text = std::str::from_utf8(&body).unwrap();
        assert!(
            text.starts_with(r#"{"server":""#),
            "members in order: {text}"
        );
        let order: Vec<usize> = ["\"server\"", "\"call\"", "\"identity\"", "\"body\""]
            .iter()
            .map(|member| text.find(member).unwrap())
            .collect();
        assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{text}");
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["server"], state.server_id.as_str());
        assert_eq!(json["call"], 1);
        assert_eq!(json["identity"], "tenant-A:user-1");
        assert_eq!(json["body"], r#"{"name": "x"}"#);
        let (_, _, body) = run(&state, &[], "").await;
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["call"], 2);
        assert_eq!(json["identity"], "");
        assert_eq!(state.calls(), 2);
        assert_ne!(HandlerState::new().server_id, state.server_id);
    }

    #[tokio::test]
    async fn test_headers_set_status_headers_and_body_length() {
        let state = HandlerState::new();
        let (status, headers, _) = run(
            &state,
            &[
                ("x-test-status", "500"),
                ("x-test-response-header", "Location: /resources/abc123"),
                ("x-test-response-header", "Set-Cookie: session=secret-value"),
                ("x-test-response-header", "ETag: \"v1\""),
                ("x-test-response-header", "Content-Type: text/event-stream"),
                ("x-test-response-header", "Link: </a>"),
                ("x-test-response-header", "Link: </b>"),
            ],
            "",
        )
        .await;
        assert_eq!(status, 500);
        assert_eq!(headers["location"], "/resources/abc123");
        assert_eq!(headers["set-cookie"], "session=secret-value");
        assert_eq!(headers["etag"], "\"v1\"");
        assert_eq!(headers[CONTENT_TYPE], "text/event-stream", "replaced");
        assert_eq!(headers.get_all("link").iter().count(), 2, "repeated");

        let response = handle(&state, request(&[("x-test-body-bytes", "2048")], ""))
            .await
            .unwrap();
        assert_eq!(
            response.body().size_hint().exact(),
            None,
            "no declared length"
        );
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body.len(), 2048);
        assert_eq!(&body[..3], b"abc");
        assert_eq!(body[26], b'a');
    }

    // Paused time: the runtime jumps the clock when idle, so the check is exact.
    #[tokio::test(start_paused = true)]
    async fn a_delay_is_slept_first() {
        let state = HandlerState::new();
        let started = tokio::time::Instant::now();
        run(&state, &[("x-test-delay-ms", "50")], "").await;
        assert!(started.elapsed() >= Duration::from_millis(50));
    }

    #[tokio::test]
    async fn malformed_test_headers_are_a_400_that_names_them() {
        let state = HandlerState::new();
        for (name, value) in [
            ("x-test-status", "abc"),
            ("x-test-status", "99999"),
            ("x-test-delay-ms", "-1"),
            ("x-test-body-bytes", "many"),
            ("x-test-response-header", "no colon"),
        ] {
            let (status, _, body) = run(&state, &[(name, value)], "").await;
            assert_eq!(status, 400, "{name}: {value}");
            assert!(String::from_utf8_lossy(&body).contains(name), "{name}");
        }
    }
}
