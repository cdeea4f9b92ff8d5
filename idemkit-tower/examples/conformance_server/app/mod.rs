//! The conformance server: a hyper 1 server whose every route but two runs a counting
//! handler behind the idempotency layer.

pub mod effects;
pub mod handler;
pub mod options;
pub mod store;

use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use idemkit_core::{DynBackend, Policy};
use idemkit_tower::{
    IDEMPOTENCY_KEY, IdempotencyEvent, IdempotencyLayer, RequestBody, ResponseBody,
};
use tower::{Layer, ServiceExt};

use handler::{HandlerBody, HandlerState};
use options::{Command, Options, USAGE};

/// The body of every response the server sends.
pub type ServerBody = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// Runs the server with the command line `args` (without the program name); returns
/// the process's exit status.
pub fn main_with_args<I>(args: I) -> std::process::ExitCode
where
    I: IntoIterator<Item = String>,
{
    let options = match options::parse(args) {
        Ok(Command::Serve(options)) => options,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("conformance_server: {message}\n\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("conformance_server: cannot start the runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(options)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("conformance_server: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Binds, says where, and serves until the process is stopped.
pub async fn serve(options: Options) -> Result<(), String> {
    let store = store::Store::open(&options).await?;
    let layer = layer(&options, &store)?;
    let listener = TcpListener::bind(&options.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", options.listen))?;
    let address = listener
        .local_addr()
        .map_err(|error| format!("cannot read the bound address: {error}"))?;
    let effects_pool = store
        .postgres()
        .filter(|_| options.effects)
        .map(|backend| backend.pool().clone());
    let state = Arc::new(HandlerState::new().with_effects(effects_pool));
    let handler = {
        let state = Arc::clone(&state);
        tower::service_fn(move |request: Request<RequestBody<Incoming>>| {
            let state = Arc::clone(&state);
            async move { handler::handle(&state, request).await }
        })
    };
    let protected = layer.layer(handler);
    let app = Arc::new(App {
        state,
        layer,
        store,
    });
    {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "listening on {address}");
        let _ = stdout.flush();
    }
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(connection) => connection,
            // A connection that failed before it was accepted concerns only its client.
            Err(_) => continue,
        };
        let app = Arc::clone(&app);
        let protected = protected.clone();
        let service = tower::service_fn(move |request: Request<Incoming>| {
            let app = Arc::clone(&app);
            let protected = protected.clone();
            async move { app.route(protected, request).await }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                .await;
        });
    }
}

/// The idempotency layer the options describe. Its scope is the `X-Identity` header; a
/// request without one is an anonymous caller, in a namespace of its own.
fn layer(options: &Options, store: &store::Store) -> Result<IdempotencyLayer<DynBackend>, String> {
    let mut policy = Policy::builder();
    if let Some(wait) = options.wait_timeout {
        policy = policy.wait_timeout(wait);
    }
    if let Some(lease) = options.lease_ttl {
        policy = policy.lease_ttl(lease);
    }
    let policy = policy.build().map_err(|error| error.to_string())?;
    let mut builder = IdempotencyLayer::builder(store.backend())
        .require_key(options.require_key)
        .compat(options.compat)
        .scope(|parts| Some(scope_of(parts.headers.get(handler::IDENTITY))))
        .policy(policy)
        .on_event(print_event);
    if let Some(bytes) = options.max_body_bytes {
        builder = builder.max_response_body_bytes(bytes);
    }
    if options.effects
        && let Some(backend) = store.postgres()
    {
        builder = builder.run_hook(effects::EffectsHook(backend.clone()));
    }
    builder
        .build()
        .map_err(|error| format!("invalid settings: {error}"))
}

/// The scope of a request whose `X-Identity` header is `identity`: its bytes, every one
/// of them, in hex. A header value need not be UTF-8, and a lossy conversion would give
/// two different identities one scope (and one's records to the other); hex keeps each
/// byte, so two identities share a scope only if they are the same bytes.
fn scope_of(identity: Option<&HeaderValue>) -> String {
    match identity {
        Some(identity) => {
            let bytes = identity.as_bytes();
            let mut scope = String::with_capacity("identity:".len() + 2 * bytes.len());
            scope.push_str("identity:");
            for byte in bytes {
                scope.push_str(&format!("{byte:02x}"));
            }
            scope
        }
        None => "anonymous".to_owned(),
    }
}

/// One JSON line on standard output per event.
fn print_event(event: &IdempotencyEvent) {
    let line = serde_json::json!({
        "event": format!("idempotency.{}", event.kind),
        "decision": event.kind.as_str(),
        "effective_key": event.effective_key.as_ref().map(|key| key.as_str()),
        "method": event.method.as_str(),
        "path": event.path,
        "status": event.status.map(|status| status.as_u16()),
        "latency_ms": event.latency.as_secs_f64() * 1000.0,
        "backend": event.backend,
        "fingerprint_version": event.fingerprint_version,
    });
    print_line(&line);
}

/// Writes one line on standard output, whole.
pub fn print_line(line: &serde_json::Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// What the connections share.
struct App {
    state: Arc<HandlerState>,
    layer: IdempotencyLayer<DynBackend>,
    store: store::Store,
}

impl App {
    /// The two routes outside the layer, then the protected handler.
    async fn route<S>(
        &self,
        protected: S,
        request: Request<Incoming>,
    ) -> Result<Response<ServerBody>, Infallible>
    where
        S: tower::Service<
                Request<Incoming>,
                Response = Response<ResponseBody<HandlerBody>>,
                Error = Infallible,
            >,
    {
        if request.method() == Method::GET {
            match request.uri().path() {
                "/_stats" => {
                    let json = serde_json::json!({ "handler_calls": self.state.calls() });
                    return Ok(text(StatusCode::OK, "application/json", json.to_string()));
                }
                "/_storage_key" => return Ok(self.storage_key(&request)),
                "/_effects" => return Ok(self.effects(&request).await),
                _ => {}
            }
        }
        let response = protected.oneshot(request).await?;
        Ok(response.map(BodyExt::boxed_unsync))
    }

    /// `GET /_effects?key=K`: `{"rows":N}`, the committed effect rows of the raw key `K`
    /// (with `--effects`).
    async fn effects(&self, request: &Request<Incoming>) -> Response<ServerBody> {
        let Some(backend) = self.store.postgres().filter(|_| self.state.effects()) else {
            return text(
                StatusCode::NOT_FOUND,
                "text/plain",
                "start the server with a postgres:// backend and --effects".to_owned(),
            );
        };
        let Some(key) = query_value(request.uri().query().unwrap_or(""), "key") else {
            return text(
                StatusCode::BAD_REQUEST,
                "text/plain",
                "give ?key=K".to_owned(),
            );
        };
        match effects::committed_rows(backend, &key).await {
            Ok(rows) => text(
                StatusCode::OK,
                "application/json",
                serde_json::json!({ "rows": rows }).to_string(),
            ),
            Err(error) => text(StatusCode::SERVICE_UNAVAILABLE, "text/plain", error),
        }
    }

    /// `GET /_storage_key?method=M&path=P`: the key under which the backend stores the
    /// record of `M P` sent with this request's `Idempotency-Key` and `X-Identity`.
    fn storage_key(&self, request: &Request<Incoming>) -> Response<ServerBody> {
        let query = request.uri().query().unwrap_or("");
        let (Some(method), Some(path)) = (query_value(query, "method"), query_value(query, "path"))
        else {
            return text(
                StatusCode::BAD_REQUEST,
                "text/plain",
                "give ?method=M&path=P".to_owned(),
            );
        };
        let mut target = match Request::builder()
            .method(method.as_str())
            .uri(path.as_str())
            .body(())
        {
            Ok(target) => target,
            Err(error) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    "text/plain",
                    format!("bad method or path: {error}"),
                );
            }
        };
        for name in [IDEMPOTENCY_KEY, HeaderName::from_static(handler::IDENTITY)] {
            for value in request.headers().get_all(&name) {
                target.headers_mut().append(name.clone(), value.clone());
            }
        }
        match self.layer.effective_key(&target.into_parts().0) {
            Ok(key) => text(StatusCode::OK, "text/plain", self.store.storage_key(&key)),
            Err(error) => text(StatusCode::BAD_REQUEST, "text/plain", error.to_string()),
        }
    }
}

/// The decoded value of `name` in a query string.
fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(key) == name).then(|| decode(value))
    })
}

/// `%XX` escapes and `+` decoded; a `%` not followed by two hex digits is kept.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = match bytes[index..] {
            [b'%', high, low, ..] => hex(high).zip(hex(low)),
            _ => None,
        };
        match (escaped, bytes[index]) {
            (Some((high, low)), _) => {
                out.push(high << 4 | low);
                index += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, byte) => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit).to_digit(16).map(|value| value as u8)
}

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<ServerBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scope_keeps_every_byte_of_the_identity() {
        let value = |bytes: &[u8]| HeaderValue::from_bytes(bytes).unwrap();
        // Two identities a lossy conversion would make one.
        let a = scope_of(Some(&value(b"tenant-\xff")));
        let b = scope_of(Some(&value(b"tenant-\xfe")));
        assert_ne!(a, b);
        assert_eq!(a, "identity:74656e616e742dff");
        assert_ne!(
            scope_of(Some(&value("tenant-\u{fffd}".as_bytes()))),
            a,
            "nor is a byte its replacement character"
        );
        assert_eq!(scope_of(None), "anonymous");
        assert_ne!(scope_of(Some(&value(b""))), scope_of(None));
    }

    #[test]
    fn query_values_are_decoded() {
        let query = "method=POST&path=%2Fresources%2Fa+b&x";
        assert_eq!(query_value(query, "method").as_deref(), Some("POST"));
        assert_eq!(
            query_value(query, "path").as_deref(),
            Some("/resources/a b")
        );
        assert_eq!(query_value(query, "x").as_deref(), Some(""));
        assert_eq!(query_value(query, "y"), None);
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert_eq!(decode("%+1"), "% 1");
    }
}
