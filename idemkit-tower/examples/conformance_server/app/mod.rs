//! The conformance server: a hyper 1 server whose every route but two runs a counting
//! handler behind the idempotency layer.

pub mod handler;
pub mod options;

use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use handler::HandlerState;
use options::{BackendChoice, Command, Options, USAGE};

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
    if let BackendChoice::Redis(url) = &options.backend {
        return Err(format!(
            "backend {url}: Redis is not available in this build yet"
        ));
    }
    let listener = TcpListener::bind(&options.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", options.listen))?;
    let address = listener
        .local_addr()
        .map_err(|error| format!("cannot read the bound address: {error}"))?;
    let state = Arc::new(HandlerState::new());
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
        let state = Arc::clone(&state);
        let service = tower::service_fn(move |request: Request<hyper::body::Incoming>| {
            let state = Arc::clone(&state);
            async move { route(&state, request).await }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                .await;
        });
    }
}

/// The two routes outside the layer, then the handler.
async fn route<B>(
    state: &HandlerState,
    request: Request<B>,
) -> Result<Response<ServerBody>, Infallible>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if request.method() == Method::GET && request.uri().path() == "/_stats" {
        let json = serde_json::json!({ "handler_calls": state.calls() });
        return Ok(text(StatusCode::OK, "application/json", json.to_string()));
    }
    let response = handler::handle(state, request).await?;
    Ok(response.map(BodyExt::boxed_unsync))
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
