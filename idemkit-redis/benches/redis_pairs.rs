//! Claim+complete pairs per second from 64 concurrent tasks on one Redis server, side by
//! side in one run against the same `redis-server`:
//!
//! - `idemkit_redis`: this crate's backend, 64 tokio tasks sharing one `RedisBackend`
//!   (one multiplexed connection), each claiming a fresh key and completing it (2-byte
//!   body, 60 s TTL), again and again. The tasks run on one thread, as the reference's
//!   64 run on one asyncio thread (`IDEMKIT_BENCH_WORKERS=2` gives them two: on a
//!   two-core machine the client's second thread takes the server's core);
//! - `redis_benchmark_ceiling`: the server's own ceiling for the same number of round
//!   trips: `redis-benchmark` at concurrency 64 sending `EVALSHA` of a trivial script
//!   (`return 1`) on a random key, two requests per pair;
//! - `python_reference`: the reference Python backend (PyPI `idemkit[redis]==1.0.2`,
//!   `RedisBackend`), 64 asyncio tasks doing the same pairs (`bench/python_redis_reference.py`);
//! - `anchor_trivial_fcall`: what a call costs the server before it does anything: 64
//!   tokio tasks on one multiplexed connection, as ours, each pair two `FCALL`s of a
//!   function that returns 1;
//! - `floor_plain_commands`: the fewest plain commands a pair needs, from 64 tasks on one
//!   multiplexed connection: the claim one `SET key <claim> NX PX`, the completion one
//!   `SET key <result> XX PX` and the `PUBLISH` that wakes waiters, pipelined. It has no
//!   fencing and no server clock in it, so no correct backend does less on the server;
//! - `functions_minimum`: the commands our functions cannot do without, run from Lua and
//!   nothing else: a claim function (`TIME`, `SET NX PX`) and a completion function
//!   (`TIME`, `GET`, `SET XX PX`, `PUBLISH`), from the same 64 tasks: what any Functions
//!   backend costs the server before its own logic;
//! - `plain_claim_minimum`: the commands our backend's design cannot do without: the claim
//!   one plain `SET key <claim> NX PX GET`, the completion a function running
//!   `PEXPIRETIME` (the claim's time), `TIME` and `SET XX PX GET` (the completed record
//!   in, the claim out to be checked; no `PUBLISH`: no one watches), from the same 64
//!   tasks: ours before any check, fencing or layout work.
//!
//! Every batch of every series also measures the server's CPU time (`used_cpu_sys` +
//! `used_cpu_user` from `INFO cpu`, read before and after the batch) divided by its pairs:
//! the server's microseconds per pair, the figure the issue sets its goal on (at most
//! 10 us for ours). The series this process runs itself (all but the ceiling and Python)
//! also measure the client's: the CPU time of this process's threads over the batch
//! (`/proc/self/task/*/schedstat`), per pair. The server and the client share the
//! machine's two cores, so a series' pairs per second follow the two together.
//!
//! Each criterion sample of each series runs one batch of a fixed number of pairs
//! (`BATCH`), timed from the first request to the last reply (the ceiling's and Python's
//! time is what they report for the batch, without their process start-up), and hands
//! criterion the time per pair times the iterations it asked for: a process per sample
//! could not run the tens of thousands of iterations criterion would ask of a fast
//! series, nor a slow one a single pair meaningfully. Before each timed batch, a series
//! this process runs has one batch untimed, to warm up (see `Bench::warm_up`). At the
//! end the bench prints, per series, the median pairs per second over its ten samples
//! with the slowest and fastest sample and its server CPU per pair, and the ratios of
//! the goals: idemkit_redis / ceiling (goal: at least 0.5) and idemkit_redis /
//! python_reference (goal: at least 10).
//! Then paired rounds, one batch of each series back to back per round, with the same
//! figures per round and their medians.
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
use idemkit_core::Response;
use idemkit_redis::RedisBackend;
use idemkit_redis::redis::{self, aio::ConnectionManager};
use redis_harness::RedisServer;

mod support {
    pub mod pairs;
}
use support::pairs::{
    LIBRARY, TRIVIAL_FUNCTION, bench_function, idemkit_pair, plain_claim_minimum_pair,
};

const TASKS: u64 = 64;
const SAMPLES: usize = 10;
/// Pairs per sample: enough that each batch lasts a good fraction of a second.
const BATCH: u64 = 4_000;
/// Pairs per run under `cargo test --benches`, which only checks that each series works.
const SMOKE_BATCH: u64 = 64;

/// One batch of one series: its pairs, how long they took, and the server's CPU time
/// over the batch, and this process's (the client's) when the series runs in it.
#[derive(Clone, Copy)]
struct Batch {
    series: &'static str,
    pairs: u64,
    took: Duration,
    server_cpu: Duration,
    client_cpu: Option<Duration>,
}

impl Batch {
    fn per_second(&self) -> f64 {
        self.pairs as f64 / self.took.as_secs_f64()
    }

    /// The server's CPU microseconds per pair.
    fn server_us(&self) -> f64 {
        self.server_cpu.as_secs_f64() * 1e6 / self.pairs as f64
    }

    /// The client's CPU microseconds per pair (NaN where the client is another process,
    /// or where this one's CPU time cannot be read).
    fn client_us(&self) -> f64 {
        self.client_cpu
            .map_or(f64::NAN, |cpu| cpu.as_secs_f64() * 1e6 / self.pairs as f64)
    }
}

/// Every batch each series ran, in order; the last `SAMPLES` of a series are criterion's
/// samples (the ones before are its warm-up), and the paired rounds come after.
static BATCHES: Mutex<Vec<Batch>> = Mutex::new(Vec::new());

/// The server's CPU time so far (system + user, all its threads), from `INFO cpu`.
fn server_cpu(server: &RedisServer) -> Duration {
    let info = server.cli(&["INFO", "cpu"]).expect("INFO cpu");
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|line| line.trim().strip_prefix(name))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in INFO cpu: {info}"))
    };
    Duration::from_secs_f64(field("used_cpu_sys:") + field("used_cpu_user:"))
}

/// The CPU time of this process's threads so far: the sum of each live thread's time
/// on a CPU (the first field of its `schedstat`, in nanoseconds). The bench's threads
/// (its runtime's workers and its main thread) live through every batch. `None` where
/// there is no `/proc/self/task` (not Linux) or no thread's time could be read: the
/// client's column is then left empty.
fn client_cpu() -> Option<Duration> {
    let mut times = std::fs::read_dir("/proc/self/task")
        .ok()?
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .peekable();
    times.peek()?;
    Some(Duration::from_nanos(times.sum()))
}

/// Runs one batch of `series` (`run` returns how long its pairs took), measuring the
/// server's CPU time around it, and the client's if `in_process` (the series' client
/// is this process); records it and returns it.
fn measured(
    server: &RedisServer,
    series: &'static str,
    in_process: bool,
    run: impl FnOnce() -> Duration,
) -> Batch {
    let before = server_cpu(server);
    let client_before = in_process.then(client_cpu).flatten();
    let took = run();
    let client_cpu = client_before.and_then(|before| Some(client_cpu()?.saturating_sub(before)));
    let server_cpu = server_cpu(server).saturating_sub(before);
    let batch = Batch {
        series,
        pairs: batch(),
        took,
        server_cpu,
        client_cpu,
    };
    BATCHES.lock().unwrap().push(batch);
    batch
}

/// What criterion's `iters` iterations take at a batch's pace.
fn for_criterion(batch: Batch, iters: u64) -> Duration {
    batch.took.div_f64(batch.pairs as f64).mul_f64(iters as f64)
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
fn idemkit_pairs(runtime: &tokio::runtime::Runtime, backend: &RedisBackend) -> Duration {
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
                        idemkit_pair(&backend, &response, first + n).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        start.elapsed()
    })
}

/// A batch of pairs by `TASKS` tasks on one multiplexed connection, each pair `pair`
/// (given the connection and a fresh key number).
fn connection_pairs<F, Fut>(
    runtime: &tokio::runtime::Runtime,
    connection: &ConnectionManager,
    pair: F,
) -> Duration
where
    F: Fn(ConnectionManager, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let pairs = batch();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let first = NEXT.fetch_add(pairs, Ordering::Relaxed);
    runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let connection = connection.clone();
                let pair = pair.clone();
                tokio::spawn(async move {
                    for n in (task..pairs).step_by(TASKS as usize) {
                        pair(connection.clone(), first + n).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        start.elapsed()
    })
}

/// Two `FCALL`s of a function that returns 1, on a fresh key each: the anchor.
async fn trivial_pair(mut connection: ConnectionManager, n: u64) {
    let key = format!("anchor:{{{n}}}");
    for _ in 0..2 {
        let one: i64 = redis::cmd("FCALL")
            .arg(TRIVIAL_FUNCTION)
            .arg(1)
            .arg(&key)
            .query_async(&mut connection)
            .await
            .expect("the trivial function answers");
        assert_eq!(one, 1);
    }
}

/// The fewest plain commands a pair needs: a claim that writes only if the key is free,
/// with its expiry; the result written over it, with its expiry; the wake-up.
async fn floor_pair(mut connection: ConnectionManager, n: u64) {
    let key = format!("floor:{{{n}}}");
    // Values the size of ours: the claim's fixed fields and fingerprint, then the result.
    let claim = "c".repeat(135);
    let claimed: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(&claim)
        .arg("NX")
        .arg("PX")
        .arg(90_000)
        .query_async(&mut connection)
        .await
        .expect("SET NX");
    assert!(claimed.is_some(), "{key} was not free");
    let result = format!("{claim}ok");
    let (stored, _woken): (Option<String>, i64) = redis::pipe()
        .cmd("SET")
        .arg(&key)
        .arg(&result)
        .arg("XX")
        .arg("PX")
        .arg(60_000)
        .cmd("PUBLISH")
        .arg(&key)
        .arg("completed")
        .query_async(&mut connection)
        .await
        .expect("SET XX and PUBLISH");
    assert!(stored.is_some(), "{key} was not stored");
}

/// A claim and a completion by the least functions can do: one `FCALL` each.
async fn functions_minimum_pair(mut connection: ConnectionManager, n: u64) {
    let key = format!("minimum:{{{n}}}");
    let claim = "c".repeat(135);
    bench_function(&mut connection, "idemkit_bench_claim", &key, &claim, 90_000).await;
    let result = format!("{claim}ok");
    bench_function(
        &mut connection,
        "idemkit_bench_complete",
        &key,
        &result,
        60_000,
    )
    .await;
}

/// The time `redis-benchmark` takes for two trivial script calls per pair of a batch at
/// concurrency 64 (from its own requests-per-second figure).
fn ceiling_pairs(server: &RedisServer, sha: &str) -> Duration {
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
    Duration::from_secs_f64(requests as f64 / rps)
}

/// The time the Python reference reports for one round of a batch of pairs.
fn python_pairs(script: &Path, url: &str) -> Duration {
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
    Duration::from_secs_f64(pairs as f64 / per_second)
}

fn python_reference_installed() -> bool {
    Command::new("python3")
        .args(["-c", "import idemkit.backends.redis"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The series, in the order they run and print.
const SERIES: [&str; 7] = [
    "idemkit_redis",
    "anchor_trivial_fcall",
    "floor_plain_commands",
    "functions_minimum",
    "plain_claim_minimum",
    "redis_benchmark_ceiling",
    "python_reference",
];

/// The median of `values` (not empty).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}

/// Of a series' criterion samples (its last `SAMPLES` batches before the paired rounds):
/// the median, slowest and fastest pairs per second, and the median server CPU per pair.
fn figures(series: &str) -> Option<(f64, f64, f64, f64)> {
    let batches = BATCHES.lock().unwrap();
    let runs: Vec<Batch> = batches
        .iter()
        .filter(|batch| batch.series == series)
        .copied()
        .collect();
    let samples = &runs[runs.len().saturating_sub(SAMPLES)..];
    if samples.is_empty() {
        return None;
    }
    let rates: Vec<f64> = samples.iter().map(Batch::per_second).collect();
    let slowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let fastest = rates.iter().copied().fold(0.0, f64::max);
    let server_us = median(samples.iter().map(Batch::server_us).collect());
    Some((median(rates), slowest, fastest, server_us))
}

fn summarize(python: bool) {
    let mut medians = Vec::new();
    println!(
        "\nredis_pairs: claim+complete pairs per second, {TASKS} concurrent tasks, one server"
    );
    println!(
        "  {:<26} {:>12} {:>26} {:>18}",
        "series", "median", "samples (slowest..fastest)", "server us/pair"
    );
    for name in SERIES {
        let Some((median, slowest, fastest, server_us)) = figures(name) else {
            continue;
        };
        println!(
            "  {name:<26} {median:>12.0} {slowest:>12.0} .. {fastest:<12.0} {server_us:>18.2}"
        );
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

/// Everything one batch of any series needs.
struct Bench<'a> {
    runtime: &'a tokio::runtime::Runtime,
    backend: &'a RedisBackend,
    connection: &'a ConnectionManager,
    server: &'a RedisServer,
    sha: &'a str,
    python: Option<&'a Path>,
}

/// One batch of a series, run by [`Bench::runner`]: how long its pairs took.
type Runner<'a> = Box<dyn Fn() -> Duration + 'a>;

impl Bench<'_> {
    /// How to run one batch of `series`, and whether this process is its client (`None`
    /// for the Python series without Python).
    fn runner(&self, series: &'static str) -> Option<(bool, Runner<'_>)> {
        Some(match series {
            "idemkit_redis" => (true, Box::new(|| idemkit_pairs(self.runtime, self.backend))),
            "anchor_trivial_fcall" => (
                true,
                Box::new(|| connection_pairs(self.runtime, self.connection, trivial_pair)),
            ),
            "floor_plain_commands" => (
                true,
                Box::new(|| connection_pairs(self.runtime, self.connection, floor_pair)),
            ),
            "functions_minimum" => (
                true,
                Box::new(|| {
                    connection_pairs(self.runtime, self.connection, functions_minimum_pair)
                }),
            ),
            "plain_claim_minimum" => (
                true,
                Box::new(|| {
                    connection_pairs(self.runtime, self.connection, plain_claim_minimum_pair)
                }),
            ),
            "redis_benchmark_ceiling" => (false, Box::new(|| ceiling_pairs(self.server, self.sha))),
            "python_reference" => {
                let script = self.python?;
                (
                    false,
                    Box::new(move || python_pairs(script, &self.server.url())),
                )
            }
            other => unreachable!("no series {other}"),
        })
    }

    /// One batch of `series` untimed, when this process is its client: while another
    /// process runs its batch (the reference's takes over half a second) this one's
    /// threads sleep, and the first batch after such a wait ran slower than the same
    /// series after one of this process's (BENCHMARKS.md, run M). A series in another
    /// process warms up by itself (the reference) or needs none (`redis-benchmark`).
    fn warm_up(&self, series: &'static str) {
        if let Some((true, run)) = self.runner(series) {
            run();
        }
    }

    /// One batch of `series`, measured, after its warm-up (`None` for the Python series
    /// without Python).
    fn run(&self, series: &'static str) -> Option<Batch> {
        self.warm_up(series);
        self.measure(series)
    }

    /// One batch of `series`, measured, without a warm-up.
    fn measure(&self, series: &'static str) -> Option<Batch> {
        let (in_process, run) = self.runner(series)?;
        let mut batch = measured(self.server, series, in_process, run);
        if series == "python_reference" {
            // The script warms up first (its scripts, its pool) with up to ten pairs per
            // task, on the same server: those count in its server time too.
            let warm_up = batch.pairs.min(10 * TASKS);
            batch.server_cpu = batch
                .server_cpu
                .mul_f64(batch.pairs as f64 / (batch.pairs + warm_up) as f64);
            BATCHES.lock().unwrap().last_mut().unwrap().server_cpu = batch.server_cpu;
        }
        Some(batch)
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
    server
        .cli(&["FUNCTION", "LOAD", "REPLACE", LIBRARY])
        .expect("the anchor's function loads");
    // Client threads: one by default, as the reference's asyncio loop; the server has
    // the machine's other core. (Two ran ours a fifth to a third slower here, the
    // client's threads and the server taking turns on two cores: BENCHMARKS.md, run M.)
    let workers = std::env::var("IDEMKIT_BENCH_WORKERS")
        .ok()
        .and_then(|workers| workers.parse().ok())
        .unwrap_or(1);
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
    let connection = runtime
        .block_on(async {
            let client = redis::Client::open(server.url())?;
            ConnectionManager::new(client).await
        })
        .expect("the anchor's and floor's connection");
    let script: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "bench",
        "python_redis_reference.py",
    ]
    .iter()
    .collect();
    let python = python_reference_installed();
    let bench = Bench {
        runtime: &runtime,
        backend: &backend,
        connection: &connection,
        server: &server,
        sha: &sha,
        python: python.then_some(script.as_path()),
    };

    let mut criterion = Criterion::default()
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = criterion.benchmark_group("redis_pairs");
    group.throughput(Throughput::Elements(1));
    for series in SERIES {
        if series == "python_reference" && !python {
            continue;
        }
        group.bench_function(series, |b| {
            b.iter_custom(|iters| for_criterion(bench.run(series).unwrap(), iters))
        });
    }
    group.finish();
    criterion.final_summary();
    if std::env::args().any(|arg| arg == "--bench") {
        summarize(python);
        paired_rounds(&bench);
        where_the_time_goes(&bench);
    } else {
        println!("\nredis_pairs: a smoke run ({SMOKE_BATCH} pairs per series); no figures");
    }
}

/// For one batch of each series, the server's own account of its time (`INFO
/// commandstats`, reset before the batch): per command, its calls per pair and its
/// microseconds per call. A function's figure includes the commands it runs, which are
/// also listed on their own; what the figures do not cover is reading requests and
/// writing replies (the rest of the series' server CPU time per pair).
fn where_the_time_goes(bench: &Bench<'_>) {
    println!("\nredis_pairs, where the server's time goes (INFO commandstats over one batch)");
    for series in SERIES {
        bench.warm_up(series);
        bench
            .server
            .cli(&["CONFIG", "RESETSTAT"])
            .expect("CONFIG RESETSTAT");
        let Some(batch) = bench.measure(series) else {
            continue;
        };
        let stats = bench
            .server
            .cli(&["INFO", "commandstats"])
            .expect("INFO commandstats");
        let mut commands = Vec::new();
        for line in stats.lines() {
            let Some((name, fields)) = line.trim().split_once(':') else {
                continue;
            };
            let Some(name) = name.strip_prefix("cmdstat_") else {
                continue;
            };
            if matches!(
                name,
                "info" | "config|resetstat" | "ping" | "hello" | "client|setinfo"
            ) {
                continue;
            }
            let field = |wanted: &str| -> f64 {
                fields
                    .split(',')
                    .find_map(|pair| pair.strip_prefix(wanted))
                    .and_then(|value| value.parse().ok())
                    .unwrap_or(0.0)
            };
            let calls = field("calls=");
            let usec = field("usec=");
            commands.push(format!(
                "{name} {:.2}/pair {:.2}us",
                calls / batch.pairs as f64,
                usec / calls.max(1.0)
            ));
        }
        println!(
            "  {series}: server {:.2} us/pair; {}",
            batch.server_us(),
            commands.join(", ")
        );
    }
}

/// How many interleaved rounds the paired figures come from (`REDIS_PAIRS_ROUNDS`
/// changes it).
const ROUNDS: usize = 7;

/// Figures with the load held equal: in each round one batch of each series, back to
/// back (the order turning from round to round), and the round's figures; then the
/// median and range of each. (On a shared
/// machine the load moves between criterion's series, which run one after the other;
/// within a round it moves far less.)
fn paired_rounds(bench: &Bench<'_>) {
    let rounds = std::env::var("REDIS_PAIRS_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(ROUNDS);
    if rounds == 0 {
        // `REDIS_PAIRS_ROUNDS=0`: criterion's figures only (as under a profiler).
        return;
    }
    let mut per_round: Vec<Vec<Batch>> = Vec::new();
    println!(
        "\nredis_pairs, paired: {rounds} rounds of one {BATCH}-pair batch per series, back to back"
    );
    for round in 1..=rounds {
        // Every other round runs the series backwards, so that no series always follows
        // the same one (the reference's Python process, which starts and stops an
        // interpreter around its batch, came just before ours in every round and slowed
        // it); and the order turns by one series each round, so that in every 14 rounds
        // each series runs first twice.
        let mut order = SERIES;
        if round % 2 == 0 {
            order.reverse();
        }
        order.rotate_left((round - 1) % SERIES.len());
        let batches: Vec<Batch> = order
            .iter()
            .filter_map(|series| bench.run(series))
            .collect();
        let shown: Vec<String> = batches
            .iter()
            .map(|batch| {
                let client = batch.client_us();
                format!(
                    "{} {:.0}/s {:.2}us{}",
                    batch.series,
                    batch.per_second(),
                    batch.server_us(),
                    if client.is_nan() {
                        String::new()
                    } else {
                        format!(" (client {client:.2}us)")
                    }
                )
            })
            .collect();
        println!("  round {round}: {}", shown.join(", "));
        per_round.push(batches);
    }
    let of = |series: &str, figure: fn(&Batch) -> f64| -> Vec<f64> {
        per_round
            .iter()
            .filter_map(|round| round.iter().find(|batch| batch.series == series))
            .map(figure)
            .collect()
    };
    let spread = |values: Vec<f64>| {
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(0.0, f64::max);
        (median(values), low, high)
    };
    println!(
        "  {:<26} {:>30} {:>32} {:>32}",
        "series, median of rounds",
        "pairs/s (low..high)",
        "server us/pair (low..high)",
        "client us/pair (low..high)"
    );
    for series in SERIES {
        let rates = of(series, Batch::per_second);
        if rates.is_empty() {
            continue;
        }
        let (rate, rate_low, rate_high) = spread(rates);
        let (us, us_low, us_high) = spread(of(series, Batch::server_us));
        let client: Vec<f64> = of(series, Batch::client_us)
            .into_iter()
            .filter(|us| !us.is_nan())
            .collect();
        let client = if client.is_empty() {
            format!("{:>32}", "-")
        } else {
            let (us, low, high) = spread(client);
            format!("{us:>16.2} ({low:>6.2}..{high:<6.2})")
        };
        println!(
            "  {series:<26} {rate:>10.0} ({rate_low:>8.0}..{rate_high:<8.0}) {us:>12.2} ({us_low:>6.2}..{us_high:<6.2}) {client}"
        );
    }
    let ratios = |other: &str, figure: fn(&Batch) -> f64| -> Vec<f64> {
        per_round
            .iter()
            .filter_map(|round| {
                let ours = round.iter().find(|batch| batch.series == "idemkit_redis")?;
                let other = round.iter().find(|batch| batch.series == other)?;
                Some(figure(ours) / figure(other))
            })
            // A figure a round did not measure (the client's CPU without `/proc`).
            .filter(|ratio| !ratio.is_nan())
            .collect()
    };
    for (other, figure, what, goal) in [
        (
            "redis_benchmark_ceiling",
            Batch::per_second as fn(&Batch) -> f64,
            "pairs/s",
            "goal >= 0.5x",
        ),
        (
            "python_reference",
            Batch::per_second,
            "pairs/s",
            "goal >= 10x",
        ),
        (
            "python_reference",
            Batch::server_us,
            "server us/pair",
            "lower is better",
        ),
        (
            "anchor_trivial_fcall",
            Batch::server_us,
            "server us/pair",
            "-",
        ),
        (
            "floor_plain_commands",
            Batch::server_us,
            "server us/pair",
            "-",
        ),
        ("functions_minimum", Batch::server_us, "server us/pair", "-"),
        (
            "plain_claim_minimum",
            Batch::server_us,
            "server us/pair",
            "-",
        ),
        (
            "plain_claim_minimum",
            Batch::client_us,
            "client us/pair",
            "-",
        ),
    ] {
        let values = ratios(other, figure);
        if values.is_empty() {
            continue;
        }
        let (median, low, high) = spread(values);
        println!(
            "  idemkit_redis / {other}, {what}: median {median:.2}x (rounds {low:.2}x .. {high:.2}x; {goal})"
        );
    }
    let (ours_us, ..) = spread(of("idemkit_redis", Batch::server_us));
    println!(
        "  idemkit_redis server CPU per pair: median {ours_us:.2} us (goal <= 10 us: {})",
        if ours_us <= 10.0 { "met" } else { "NOT met" }
    );
}
