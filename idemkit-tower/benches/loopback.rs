//! Requests per second over loopback HTTP, 64 connections at once: an axum server with
//! the idempotency layer (in-memory backend) against the same server without it, for
//! requests with new keys and for replays. All three run in one process: first each as
//! a criterion figure, then in interleaved rounds whose per-round ratios give the
//! figures of BENCHMARKS.md (a shared machine's load changes within a run; rounds that
//! alternate the three servers see the same load).
//!
//! `cargo bench -p idemkit-tower --bench loopback`. Under `cargo test --benches` each
//! figure runs once, on a few requests (no timing is checked).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use bytes::Bytes;
use criterion::{Criterion, Throughput};
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use idemkit_core::{InMemoryBackend, Policy};
use idemkit_tower::IdempotencyLayer;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// Connections open at once, each sending its requests one after the other.
const CONNECTIONS: usize = 64;
/// Keys stored before the replay figure, replayed in turn.
const STORED_KEYS: u64 = 1_000;
/// The request body: a small JSON order.
const BODY: &str = r#"{"sku":"A1","qty":2}"#;
/// The criterion group; its results are under `target/criterion/<GROUP>/`.
const GROUP: &str = "loopback_64_connections";
/// The criterion group of the same figures without sockets.
const IN_PROCESS_GROUP: &str = "in_process_64_tasks";

/// The app measured: a small JSON answer, as a create endpoint would give.
fn app() -> Router {
    Router::new().fallback(|body: Bytes| async move {
        (
            http::StatusCode::CREATED,
            [(http::header::CONTENT_TYPE, "application/json")],
            format!(r#"{{"id":"order-1","received":{}}}"#, body.len()),
        )
    })
}

/// The app behind the layer, storing responses for `expires_after`.
fn layered(expires_after: Duration) -> Router {
    let backend = InMemoryBackend::builder().max_size(2_000_000).build();
    let layer = IdempotencyLayer::builder(backend)
        .single_tenant()
        .policy(
            Policy::builder()
                .expires_after(expires_after)
                .build()
                .expect("a valid policy"),
        )
        .build()
        .expect("valid settings");
    app().layer(layer)
}

/// For new keys, stored responses expire after 5 s, so the store holds a steady number
/// of records, as in a service that has run for longer than its TTL (rather than
/// growing for the whole run, which would measure the growth of a hash table).
const NEW_KEYS_TTL: Duration = Duration::from_secs(5);
/// For replays, the stored keys outlive the run.
const REPLAYS_TTL: Duration = Duration::from_secs(24 * 60 * 60);

async fn serve(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("the bound address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

/// `CONNECTIONS` open HTTP/1.1 connections to one server.
struct Clients {
    address: SocketAddr,
    senders: Vec<SendRequest<Full<Bytes>>>,
}

impl Clients {
    async fn connect(address: SocketAddr) -> Clients {
        let mut senders = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let stream = TcpStream::connect(address).await.expect("connect");
            stream.set_nodelay(true).expect("no delay");
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
            tokio::spawn(connection);
            senders.push(sender);
        }
        Clients { address, senders }
    }

    /// Sends `total` requests spread over the connections; `key` names the key of the
    /// n-th request. Returns the time they took.
    async fn send(&mut self, total: u64, key: Arc<dyn Fn(u64) -> u64 + Send + Sync>) -> Duration {
        let next = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = Vec::with_capacity(CONNECTIONS);
        for mut sender in self.senders.drain(..) {
            let next = Arc::clone(&next);
            let key = Arc::clone(&key);
            let host = self.address.to_string();
            tasks.push(tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        return sender;
                    }
                    sender.ready().await.expect("the connection stays open");
                    let request = Request::post("/orders")
                        .header(http::header::HOST, &host)
                        .header("content-type", "application/json")
                        .header("idempotency-key", format!("bench-{}", key(n)))
                        .body(Full::new(Bytes::from_static(BODY.as_bytes())))
                        .expect("a valid request");
                    let response = sender.send_request(request).await.expect("an answer");
                    assert_eq!(response.status(), 201);
                    response.into_body().collect().await.expect("a body");
                }
            }));
        }
        for task in tasks {
            self.senders.push(task.await.expect("a client task"));
        }
        started.elapsed()
    }
}

/// The three servers' connections, opened once for the whole run.
struct Setup {
    plain: Clients,
    layered_new: Clients,
    layered_replay: Clients,
    /// The next key never used before, for the new-key figure.
    fresh: Arc<AtomicU64>,
}

impl Setup {
    async fn start() -> Setup {
        let plain = Clients::connect(serve(app()).await).await;
        let layered_new = Clients::connect(serve(layered(NEW_KEYS_TTL)).await).await;
        let mut layered_replay = Clients::connect(serve(layered(REPLAYS_TTL)).await).await;
        layered_replay.send(STORED_KEYS, Arc::new(|n| n)).await;
        Setup {
            plain,
            layered_new,
            layered_replay,
            fresh: Arc::new(AtomicU64::new(STORED_KEYS)),
        }
    }

    /// Sends `total` requests to one of the three servers; returns the time taken.
    async fn run(&mut self, figure: Figure, total: u64) -> Duration {
        match figure {
            Figure::WithoutLayer => self.plain.send(total, Arc::new(|n| n)).await,
            Figure::NewKeys => {
                let first = self.fresh.fetch_add(total, Ordering::Relaxed);
                self.layered_new
                    .send(total, Arc::new(move |n| first + n))
                    .await
            }
            Figure::Replays => {
                self.layered_replay
                    .send(total, Arc::new(|n| n % STORED_KEYS))
                    .await
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Figure {
    WithoutLayer,
    NewKeys,
    Replays,
}

const FIGURES: [(Figure, &str); 3] = [
    (Figure::WithoutLayer, "without_layer"),
    (Figure::NewKeys, "layer_new_keys"),
    (Figure::Replays, "layer_replays"),
];

/// The criterion figures: each one's distribution of time per request.
fn criterion_figures(criterion: &mut Criterion, runtime: &Runtime, setup: &mut Setup) {
    let mut group = criterion.benchmark_group(GROUP);
    group.throughput(Throughput::Elements(1));
    for (figure, name) in FIGURES {
        group.bench_function(name, |bench| {
            bench.iter_custom(|iters| runtime.block_on(setup.run(figure, iters)))
        });
    }
    group.finish();
}

/// The same three figures without sockets: 64 tasks call each router directly, so
/// what is left is the layer's own work (and the app's), not the network's.
fn in_process_figures(criterion: &mut Criterion, runtime: &Runtime) {
    let (plain, new_keys, replays) = runtime.block_on(async {
        let replays = layered(REPLAYS_TTL);
        direct(&replays, STORED_KEYS, Arc::new(|n| n)).await;
        (app(), layered(NEW_KEYS_TTL), replays)
    });
    let fresh = Arc::new(AtomicU64::new(0));
    let mut group = criterion.benchmark_group(IN_PROCESS_GROUP);
    group.throughput(Throughput::Elements(1));
    group.bench_function("without_layer", |bench| {
        bench.iter_custom(|iters| runtime.block_on(direct(&plain, iters, Arc::new(|n| n))))
    });
    group.bench_function("layer_new_keys", |bench| {
        bench.iter_custom(|iters| {
            let first = fresh.fetch_add(iters, Ordering::Relaxed) + 1_000_000_000;
            runtime.block_on(direct(&new_keys, iters, Arc::new(move |n| first + n)))
        })
    });
    group.bench_function("layer_replays", |bench| {
        bench.iter_custom(|iters| {
            runtime.block_on(direct(&replays, iters, Arc::new(|n| n % STORED_KEYS)))
        })
    });
    group.finish();
}

/// Sends `total` requests straight to `router` from `CONNECTIONS` tasks; returns the
/// time taken.
async fn direct(
    router: &Router,
    total: u64,
    key: Arc<dyn Fn(u64) -> u64 + Send + Sync>,
) -> Duration {
    use tower::ServiceExt;
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let (router, next, key) = (router.clone(), Arc::clone(&next), Arc::clone(&key));
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return;
                }
                let request = Request::post("/orders")
                    .header("content-type", "application/json")
                    .header("idempotency-key", format!("bench-{}", key(n)))
                    .body(axum::body::Body::from(BODY))
                    .expect("a valid request");
                let response = router.clone().oneshot(request).await.expect("an answer");
                assert_eq!(response.status(), 201);
                response.into_body().collect().await.expect("a body");
            }
        }));
    }
    for task in tasks {
        task.await.expect("a task");
    }
    started.elapsed()
}

/// The CPU time this process has used so far, in nanoseconds: the sum over its threads
/// (server, client and runtime alike) of the time the kernel ran them
/// (`/proc/self/task/*/schedstat`). `None` where the kernel does not say.
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// One figure's measurements, a round each: requests per second of wall time, and
/// requests per second of this process's CPU time.
#[derive(Default)]
struct Rates {
    wall: Vec<f64>,
    cpu: Vec<f64>,
}

/// The ratios, measured side by side: `rounds` rounds, each sending `per_round`
/// requests to each server in turn (the order rotating from round to round), so a
/// change in the machine's load weighs on all three alike.
///
/// Two rates per round: by wall time (what a client sees, but on a shared machine it
/// also measures the other jobs) and by this process's CPU time (the server's and the
/// client's work per request, which other jobs do not change).
fn interleaved(runtime: &Runtime, setup: &mut Setup, rounds: usize, per_round: u64) -> [Rates; 3] {
    let mut rates: [Rates; 3] = Default::default();
    for round in 0..rounds {
        for offset in 0..3 {
            let index = (round + offset) % 3;
            let cpu_before = process_cpu_ns();
            let elapsed = runtime.block_on(setup.run(FIGURES[index].0, per_round));
            let cpu = cpu_before
                .zip(process_cpu_ns())
                .map(|(b, a)| a.saturating_sub(b));
            rates[index]
                .wall
                .push(per_round as f64 / elapsed.as_secs_f64());
            if let Some(cpu) = cpu.filter(|&ns| ns > 0) {
                rates[index].cpu.push(per_round as f64 / (cpu as f64 / 1e9));
            }
        }
    }
    rates
}

fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 0 => (values[middle - 1] + values[middle]) / 2.0,
        _ => values[middle],
    }
}

/// The median, the lowest and the highest of `values`.
fn spread(values: &[f64]) -> serde_json::Value {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    serde_json::json!({ "median": median(values), "min": min, "max": max })
}

/// Round by round, `layer / plain`.
fn ratios(layer: &[f64], plain: &[f64]) -> Vec<f64> {
    layer.iter().zip(plain).map(|(l, p)| l / p).collect()
}

/// Prints the interleaved figures and writes them next to criterion's results.
fn report(rates: [Rates; 3], per_round: u64) {
    let [plain, new, replay] = rates;
    let summary = serde_json::json!({
        "connections": CONNECTIONS,
        "rounds": plain.wall.len(),
        "requests_per_round": per_round,
        "wall": {
            "requests_per_second": {
                "without_layer": spread(&plain.wall),
                "layer_new_keys": spread(&new.wall),
                "layer_replays": spread(&replay.wall),
            },
            "ratio_new_keys": spread(&ratios(&new.wall, &plain.wall)),
            "ratio_replays": spread(&ratios(&replay.wall, &plain.wall)),
        },
        "cpu": {
            "requests_per_cpu_second": {
                "without_layer": spread(&plain.cpu),
                "layer_new_keys": spread(&new.cpu),
                "layer_replays": spread(&replay.cpu),
            },
            "ratio_new_keys": spread(&ratios(&new.cpu, &plain.cpu)),
            "ratio_replays": spread(&ratios(&replay.cpu, &plain.cpu)),
        },
    });
    println!(
        "\n{} interleaved rounds of {per_round} requests per server, {CONNECTIONS} connections \
         (median, and lowest to highest round):",
        plain.wall.len()
    );
    for (clock, unit, rates) in [
        ("wall", "requests/s", "requests_per_second"),
        ("cpu", "requests per CPU-second", "requests_per_cpu_second"),
    ] {
        let figures = &summary[clock];
        let line = |value: &serde_json::Value| {
            format!(
                "{:.2} ({:.2} to {:.2})",
                value["median"].as_f64().unwrap_or(f64::NAN),
                value["min"].as_f64().unwrap_or(f64::NAN),
                value["max"].as_f64().unwrap_or(f64::NAN)
            )
        };
        println!(
            "  by {clock} time, {unit}: without the layer {:.0}, new keys {:.0}, replays {:.0}",
            figures[rates]["without_layer"]["median"]
                .as_f64()
                .unwrap_or(f64::NAN),
            figures[rates]["layer_new_keys"]["median"]
                .as_f64()
                .unwrap_or(f64::NAN),
            figures[rates]["layer_replays"]["median"]
                .as_f64()
                .unwrap_or(f64::NAN),
        );
        println!(
            "    ratios: new keys {}x (goal >= 0.8x), replays {}x (goal >= 0.9x)",
            line(&figures["ratio_new_keys"]),
            line(&figures["ratio_replays"])
        );
    }
    if let Some(target) = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).parent() {
        let directory = target.join("criterion").join("idemkit-tower");
        if std::fs::create_dir_all(&directory).is_ok() {
            let _ = std::fs::write(directory.join("loopback.json"), summary.to_string());
        }
    }
}

/// Median time per request and its median absolute deviation, in nanoseconds, from
/// criterion's estimates of `id`; `None` when this run did not measure it.
fn estimate(group: &str, id: &str) -> Option<(f64, f64)> {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()?
        .join("criterion")
        .join(group)
        .join(id)
        .join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    Some((
        json["median"]["point_estimate"].as_f64()?,
        json["median_abs_dev"]["point_estimate"].as_f64()?,
    ))
}

/// Criterion's figures of this run, side by side.
fn criterion_summary() {
    for (group, title) in [
        (GROUP, "over loopback, 64 connections"),
        (IN_PROCESS_GROUP, "in process, 64 tasks"),
    ] {
        let (Some(plain), Some(new), Some(replay)) = (
            estimate(group, "without_layer"),
            estimate(group, "layer_new_keys"),
            estimate(group, "layer_replays"),
        ) else {
            continue;
        };
        println!("\ncriterion, {title} (median time per request +- median absolute deviation):");
        for (name, (median, deviation)) in [
            ("without the layer", plain),
            ("layer, new keys", new),
            ("layer, replays", replay),
        ] {
            println!(
                "  {name:<18} {:>9.0} req/s  ({:.2} us +- {:.2} us)",
                1e9 / median,
                median / 1e3,
                deviation / 1e3
            );
        }
        println!(
            "  ratios: new keys {:.2}x, replays {:.2}x",
            plain.0 / new.0,
            plain.0 / replay.0
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and then every
    // figure runs once, on a few requests.
    let measuring = std::env::args().any(|arg| arg == "--bench");
    // Profiling one figure (`--profile-time`) runs that figure alone.
    let profiling = std::env::args().any(|arg| arg.starts_with("--profile-time"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut setup = runtime.block_on(Setup::start());
    let mut criterion = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8))
        .configure_from_args();
    criterion_figures(&mut criterion, &runtime, &mut setup);
    in_process_figures(&mut criterion, &runtime);
    criterion.final_summary();
    if profiling {
        return;
    }
    let (rounds, per_round) = if measuring { (40, 5_000) } else { (1, 100) };
    let rates = interleaved(&runtime, &mut setup, rounds, per_round);
    if measuring {
        criterion_summary();
        report(rates, per_round);
    }
}
