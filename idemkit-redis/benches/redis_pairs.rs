//! Claim+complete pairs per second from 64 concurrent tasks on one Redis server, side by
//! side in one run against the same `redis-server`:
//!
//! - `idemkit_redis`: this crate's backend, 64 tokio tasks sharing one `RedisBackend`
//!   (one multiplexed connection), each claiming a fresh key and completing it (2-byte
//!   body, 60 s TTL), again and again;
//! - `redis_benchmark_ceiling`: the server's own ceiling for the same number of round
//!   trips: `redis-benchmark` at concurrency 64 sending `EVALSHA` of a trivial script
//!   (`return 1`) on a random key, two requests per pair;
//! - `python_reference`: the reference Python backend (PyPI `idemkit[redis]==1.0.2`,
//!   `RedisBackend`), 64 asyncio tasks doing the same pairs (`bench/python_redis_reference.py`).
//!
//! Each criterion sample of each series runs one batch of a fixed number of pairs
//! (`BATCH`), timed from the first request to the last reply (the ceiling's and Python's
//! time is what they report for the batch, without their process start-up), and hands
//! criterion the time per pair times the iterations it asked for: a process per sample
//! could not run the tens of thousands of iterations criterion would ask of a fast
//! series, nor a slow one a single pair meaningfully. At the end the bench prints, per
//! series, the median pairs per second over its ten samples with the slowest and fastest
//! sample, and the two ratios of the goals: idemkit_redis / ceiling (goal: at least 0.5)
//! and idemkit_redis / python_reference (goal: at least 10).
//!
//! Run: `cargo bench -p idemkit-redis --bench redis_pairs` (starts its own server on a
//! free loopback port; needs `redis-server` and `redis-benchmark`, and for the Python
//! series `pip install "idemkit[redis]==1.0.2"`). `cargo test --benches` runs each
//! series once on a tiny batch, timing nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use idemkit_core::{Backend, Claim, Response};
use idemkit_redis::RedisBackend;
use redis_harness::RedisServer;

const TASKS: u64 = 64;
const SAMPLES: usize = 10;
/// Pairs per sample: enough that each batch lasts a good fraction of a second.
const BATCH: u64 = 4_000;
/// Pairs per run under `cargo test --benches`, which only checks that each series works.
const SMOKE_BATCH: u64 = 64;
const LEASE: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(60);

/// Every (pairs, time) batch each series ran, in order; the last `SAMPLES` are
/// criterion's samples (the ones before are its warm-up).
static BATCHES: Mutex<Vec<(&'static str, u64, Duration)>> = Mutex::new(Vec::new());

/// Records that `pairs` pairs of `series` took `took`, and returns what criterion's
/// `iters` iterations take at that pace.
fn record(series: &'static str, pairs: u64, took: Duration, iters: u64) -> Duration {
    BATCHES.lock().unwrap().push((series, pairs, took));
    took.div_f64(pairs as f64).mul_f64(iters as f64)
}

/// The pairs of one batch: [`BATCH`] when benchmarking, [`SMOKE_BATCH`] in test mode.
fn batch() -> u64 {
    if std::env::args().any(|arg| arg == "--bench") {
        BATCH
    } else {
        SMOKE_BATCH
    }
}

/// A batch of claim+complete pairs by `TASKS` tasks on `backend`, each on a fresh key.
fn idemkit_pairs(
    runtime: &tokio::runtime::Runtime,
    backend: &RedisBackend,
    iters: u64,
) -> Duration {
    let pairs = batch();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let first = NEXT.fetch_add(pairs, Ordering::Relaxed);
    let body = Response::new(200, "ok");
    runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let backend = backend.clone();
                let response = std::sync::Arc::new(body.clone());
                tokio::spawn(async move {
                    for n in (task..pairs).step_by(TASKS as usize) {
                        let key = format!("pair-{}", first + n);
                        let Ok(Claim::New(token)) = backend.claim(&key, "fp", 1, LEASE).await
                        else {
                            panic!("{key} was not claimed as new");
                        };
                        let stored = backend.complete(&key, &token, response.clone(), TTL).await;
                        assert!(matches!(stored, Ok(true)), "{key} was not stored");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        record("idemkit_redis", pairs, start.elapsed(), iters)
    })
}

/// The time `redis-benchmark` takes for two trivial script calls per pair of a batch at
/// concurrency 64 (from its own requests-per-second figure).
fn ceiling_pairs(server: &RedisServer, sha: &str, iters: u64) -> Duration {
    let pairs = batch();
    let requests = 2 * pairs;
    let output = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-c", &TASKS.to_string(), "-n", &requests.to_string()])
        .args(["-r", "100000000", "-q", "--csv"])
        .args(["EVALSHA", sha, "1", "ceiling:{__rand_int__}"])
        .stdin(Stdio::null())
        .output()
        .expect("redis-benchmark runs");
    let csv = String::from_utf8_lossy(&output.stdout);
    // The last line: "EVALSHA ...","<rps>","<avg ms>",...
    let rps: f64 = csv
        .lines()
        .last()
        .and_then(|line| line.split("\",\"").nth(1))
        .and_then(|rps| rps.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("no requests per second in redis-benchmark's output: {csv}"));
    let took = Duration::from_secs_f64(requests as f64 / rps);
    record("redis_benchmark_ceiling", pairs, took, iters)
}

/// The time the Python reference reports for one round of a batch of pairs.
fn python_pairs(script: &Path, url: &str, iters: u64) -> Duration {
    let pairs = batch();
    let output = Command::new("python3")
        .arg(script)
        .args(["--url", url, "--pairs", &pairs.to_string(), "--rounds", "1"])
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python reference failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("its JSON line");
    let per_second = summary["median"].as_f64().expect("a median");
    let took = Duration::from_secs_f64(pairs as f64 / per_second);
    record("python_reference", pairs, took, iters)
}

fn python_reference_installed() -> bool {
    Command::new("python3")
        .args(["-c", "import idemkit.backends.redis"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Median, slowest and fastest sample of a series, in pairs per second.
fn figures(series: &str) -> Option<(f64, f64, f64)> {
    let batches = BATCHES.lock().unwrap();
    let runs: Vec<f64> = batches
        .iter()
        .filter(|(name, ..)| *name == series)
        .map(|(_, pairs, took)| *pairs as f64 / took.as_secs_f64())
        .collect();
    let mut samples = runs[runs.len().saturating_sub(SAMPLES)..].to_vec();
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    let middle = samples.len() / 2;
    let median = if samples.len().is_multiple_of(2) {
        (samples[middle - 1] + samples[middle]) / 2.0
    } else {
        samples[middle]
    };
    Some((median, samples[0], samples[samples.len() - 1]))
}

fn summarize(python: bool) {
    let series = [
        "idemkit_redis",
        "redis_benchmark_ceiling",
        "python_reference",
    ];
    let mut medians = Vec::new();
    println!(
        "\nredis_pairs: claim+complete pairs per second, {TASKS} concurrent tasks, one server"
    );
    println!(
        "  {:<26} {:>12} {:>24}",
        "series", "median", "samples (slowest..fastest)"
    );
    for name in series {
        let Some((median, slowest, fastest)) = figures(name) else {
            continue;
        };
        println!("  {name:<26} {median:>12.0} {slowest:>11.0} .. {fastest:<11.0}");
        medians.push((name, median));
    }
    let median_of = |wanted: &str| {
        medians
            .iter()
            .find(|(name, _)| *name == wanted)
            .map(|(_, m)| *m)
    };
    if let (Some(ours), Some(ceiling)) = (
        median_of("idemkit_redis"),
        median_of("redis_benchmark_ceiling"),
    ) {
        println!(
            "  idemkit_redis / ceiling:          {:.2}x (goal >= 0.5x)",
            ours / ceiling
        );
    }
    match (median_of("idemkit_redis"), median_of("python_reference")) {
        (Some(ours), Some(reference)) => {
            println!(
                "  idemkit_redis / python_reference: {:.1}x (goal >= 10x)",
                ours / reference
            )
        }
        _ if !python => println!(
            "  python_reference skipped: pip install \"idemkit[redis]==1.0.2\" to measure it"
        ),
        _ => {}
    }
}

fn main() {
    if !redis_harness::available() {
        return;
    }
    let server = RedisServer::start().expect("a bench server starts");
    let sha = server
        .cli(&["SCRIPT", "LOAD", "return 1"])
        .expect("the ceiling's script loads")
        .trim()
        .to_owned();
    // Client threads: 2 by default, the machine's cores (the client is light: under
    // perf it took about 4% of the samples during its series, the server 22%).
    let workers = std::env::var("IDEMKIT_BENCH_WORKERS")
        .ok()
        .and_then(|workers| workers.parse().ok())
        .unwrap_or(2);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    let backend = runtime
        .block_on(
            RedisBackend::builder()
                .url(&server.url())
                .namespace("bench")
                .build(),
        )
        .expect("the backend connects");
    let script: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "bench",
        "python_redis_reference.py",
    ]
    .iter()
    .collect();
    let python = python_reference_installed();

    let mut criterion = Criterion::default()
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = criterion.benchmark_group("redis_pairs");
    group.throughput(Throughput::Elements(1));
    group.bench_function("idemkit_redis", |b| {
        b.iter_custom(|iters| idemkit_pairs(&runtime, &backend, iters))
    });
    group.bench_function("redis_benchmark_ceiling", |b| {
        b.iter_custom(|iters| ceiling_pairs(&server, &sha, iters))
    });
    if python {
        group.bench_function("python_reference", |b| {
            b.iter_custom(|iters| python_pairs(&script, &server.url(), iters))
        });
    }
    group.finish();
    criterion.final_summary();
    if std::env::args().any(|arg| arg == "--bench") {
        summarize(python);
        paired_rounds(
            &runtime,
            &backend,
            &server,
            &sha,
            python.then_some(script.as_path()),
        );
    } else {
        println!("\nredis_pairs: a smoke run ({SMOKE_BATCH} pairs per series); no figures");
    }
}

/// How many interleaved rounds the paired ratios come from.
const ROUNDS: usize = 7;

/// Ratios with the load held equal: in each round one batch of each series, back to
/// back, and the round's ratios; then the median and the range of each ratio. (On a
/// shared machine the load moves between criterion's series, which run one after the
/// other; within a round it moves far less.)
fn paired_rounds(
    runtime: &tokio::runtime::Runtime,
    backend: &RedisBackend,
    server: &RedisServer,
    sha: &str,
    python: Option<&Path>,
) {
    let per_second = |took: Duration| BATCH as f64 / took.as_secs_f64();
    let mut to_ceiling = Vec::new();
    let mut to_python = Vec::new();
    println!(
        "\nredis_pairs, paired: {ROUNDS} rounds of one {BATCH}-pair batch per series, back to back"
    );
    for round in 1..=ROUNDS {
        let ours = per_second(idemkit_pairs(runtime, backend, BATCH));
        let ceiling = per_second(ceiling_pairs(server, sha, BATCH));
        let reference = python.map(|script| per_second(python_pairs(script, &server.url(), BATCH)));
        to_ceiling.push(ours / ceiling);
        let against_python = reference.map(|reference| ours / reference);
        to_python.extend(against_python);
        println!(
            "  round {round}: idemkit_redis {ours:.0}/s, ceiling {ceiling:.0}/s, python {}; ours/ceiling {:.2}x, ours/python {}",
            reference.map_or("-".to_owned(), |reference| format!("{reference:.0}/s")),
            ours / ceiling,
            against_python.map_or("-".to_owned(), |ratio| format!("{ratio:.1}x")),
        );
    }
    let spread = |mut ratios: Vec<f64>| {
        ratios.sort_by(f64::total_cmp);
        (
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
        )
    };
    let (median, low, high) = spread(to_ceiling);
    println!(
        "  idemkit_redis / ceiling: median {median:.2}x (rounds {low:.2}x .. {high:.2}x; goal >= 0.5x)"
    );
    if !to_python.is_empty() {
        let (median, low, high) = spread(to_python);
        println!(
            "  idemkit_redis / python_reference: median {median:.1}x (rounds {low:.1}x .. {high:.1}x; goal >= 10x)"
        );
    }
}
