//! Claim+complete pairs per second on new keys, from one thread and from 64 tasks, side by
//! side in one run against the ceiling of the same client library (rusqlite) running
//! only the statements a pair needs at the least, with the same pragmas:
//!
//! - `idemkit_thread`: one thread, `BlockingBackend` on a `SqliteBackend`, each pair a
//!   claim of a fresh key and its completion (2-byte body, 60 s TTL);
//! - `ceiling_thread`: one thread, one rusqlite connection (WAL, `synchronous=FULL`, the
//!   same busy timeout), each pair one `INSERT` of a claim row and one `UPDATE ... WHERE
//!   key = ? AND token = ?` storing the response, each in its own transaction, on a
//!   table with only the columns those need;
//! - `idemkit_64_tasks` and `ceiling_64_tasks`: the same from 64 tokio tasks on two
//!   worker threads, ours through `Backend`, the ceiling's statements on tokio's blocking
//!   pool over one connection behind a mutex (SQLite writes one transaction at a time).
//!
//! Every series runs on a file of its own in one directory, on the same disk. The bench
//! runs `ROUNDS` rounds; in each, ours and the ceiling alternate in slices of a few
//! dozen pairs (32 from one thread, 128 from 64 tasks) until each has run its batch,
//! and it prints each round's pairs per second and the ratios idemkit / ceiling (goal:
//! at least 0.8), then the medians. On a shared machine the time a flush takes swings
//! by several times from one second to the next; slices that alternate see the same
//! swings. `SYNC=normal` runs every series with `synchronous=NORMAL` instead.
//!
//! Then it measures the cross-process wake-up: a waiter here, on a key claimed here, and
//! this crate's child process completing it (`idemkit-sqlite-child complete`), printing
//! the wall-clock time of its commit; the waiter notes when it woke. It prints the
//! median and the 99th percentile over `WAKES` completions (goal: p99 under 100 ms).
//!
//! Run: `cargo bench -p idemkit-sqlite --bench sqlite_pairs`. `cargo test --benches` runs
//! each series once on a tiny batch, timing nothing.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idemkit_core::{Backend, BlockingBackend, Claim, Response};
use idemkit_sqlite::{SqliteBackend, Synchronous};
use parking_lot::Mutex;
use rusqlite::{Connection, params};

const TASKS: u64 = 64;
const ROUNDS: usize = 9;
const LEASE: Duration = Duration::from_secs(30);
const TTL: Duration = Duration::from_secs(60);
const WAKES: usize = 200;

fn benchmarking() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// Pairs per series per round.
fn batch() -> u64 {
    if benchmarking() { 640 } else { SLICE }
}

/// Pairs per slice of the 64-task series (a quarter of it for the one-thread series,
/// which is slower): ours and the ceiling alternate slice by slice within a round.
const SLICE: u64 = 128;

fn synchronous() -> Synchronous {
    match std::env::var("SYNC").as_deref() {
        Ok("normal") => Synchronous::Normal,
        _ => Synchronous::Full,
    }
}

fn sync_pragma() -> &'static str {
    match synchronous() {
        Synchronous::Normal => "NORMAL",
        _ => "FULL",
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// `pairs` fresh key numbers.
fn keys(pairs: u64) -> u64 {
    NEXT.fetch_add(pairs, Ordering::Relaxed)
}

fn token() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("randomness");
    bytes
}

fn idemkit_backend(path: &Path) -> SqliteBackend {
    SqliteBackend::builder(path)
        .synchronous(synchronous())
        .build()
        .expect("the bench file opens")
}

fn idemkit_pair(backend: &SqliteBackend, key: &str, response: &Arc<Response>) {
    let Claim::New(token) = BlockingBackend::claim(backend, key, "fp", 1, LEASE).expect("claim")
    else {
        panic!("a fresh key");
    };
    assert!(
        BlockingBackend::complete(backend, key, &token, Arc::clone(response), TTL)
            .expect("complete")
    );
}

fn idemkit_thread(backend: &SqliteBackend, pairs: u64) -> (u64, Duration) {
    let first = keys(pairs);
    let response = Arc::new(Response::new(200, "ok"));
    let start = Instant::now();
    for n in first..first + pairs {
        idemkit_pair(backend, &format!("key-{n}"), &response);
    }
    (pairs, start.elapsed())
}

fn idemkit_tasks(
    runtime: &tokio::runtime::Runtime,
    backend: &SqliteBackend,
    pairs: u64,
) -> (u64, Duration) {
    let first = keys(pairs);
    let per_task = pairs / TASKS;
    let response = Arc::new(Response::new(200, "ok"));
    runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let (backend, response) = (backend.clone(), Arc::clone(&response));
                tokio::spawn(async move {
                    for i in 0..per_task {
                        let key = format!("key-{}", first + task * per_task + i);
                        let Claim::New(token) = Backend::claim(&backend, &key, "fp", 1, LEASE)
                            .await
                            .expect("claim")
                        else {
                            panic!("a fresh key");
                        };
                        let stored =
                            Backend::complete(&backend, &key, &token, Arc::clone(&response), TTL)
                                .await
                                .expect("complete");
                        assert!(stored);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (per_task * TASKS, start.elapsed())
    })
}

/// The ceiling's connection: the same pragmas as the backend's.
fn ceiling_connection(path: &Path) -> Connection {
    let connection = Connection::open(path).expect("the ceiling's file opens");
    connection.busy_timeout(Duration::from_secs(5)).unwrap();
    let _: String = connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .unwrap();
    connection
        .pragma_update(None, "synchronous", sync_pragma())
        .unwrap();
    connection
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS pairs (
                key TEXT PRIMARY KEY NOT NULL,
                token BLOB NOT NULL,
                deadline INTEGER NOT NULL,
                status INTEGER,
                body BLOB
            ) WITHOUT ROWID",
        )
        .unwrap();
    connection
}

/// The least a pair needs: the claim's insert, and the update fenced by its token.
fn ceiling_pair(connection: &Connection, key: &str) {
    let token = token();
    connection
        .prepare_cached("INSERT INTO pairs (key, token, deadline) VALUES (?1, ?2, ?3)")
        .unwrap()
        .execute(params![key, &token[..], 1_i64])
        .unwrap();
    let stored = connection
        .prepare_cached(
            "UPDATE pairs SET status = ?3, body = ?4, deadline = ?5 WHERE key = ?1 AND token = ?2",
        )
        .unwrap()
        .execute(params![key, &token[..], 200_i64, &b"ok"[..], 2_i64])
        .unwrap();
    assert_eq!(stored, 1);
}

fn ceiling_thread(connection: &Connection, pairs: u64) -> (u64, Duration) {
    let first = keys(pairs);
    let start = Instant::now();
    for n in first..first + pairs {
        ceiling_pair(connection, &format!("key-{n}"));
    }
    (pairs, start.elapsed())
}

fn ceiling_tasks(
    runtime: &tokio::runtime::Runtime,
    connection: &Arc<Mutex<Connection>>,
    pairs: u64,
) -> (u64, Duration) {
    let first = keys(pairs);
    let per_task = pairs / TASKS;
    runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let connection = Arc::clone(connection);
                tokio::spawn(async move {
                    for i in 0..per_task {
                        let key = format!("key-{}", first + task * per_task + i);
                        let connection = Arc::clone(&connection);
                        tokio::task::spawn_blocking(move || ceiling_pair(&connection.lock(), &key))
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        (per_task * TASKS, start.elapsed())
    })
}

/// Latencies from a commit in the child process to the wake-up of a waiter here.
fn cross_process_wakes(path: &Path, count: usize) -> Vec<Duration> {
    let backend = idemkit_backend(path);
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemkit-sqlite-child"))
        .arg("complete")
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the child starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut latencies = Vec::with_capacity(count);
    for round in 0..count {
        let key = format!("wake-{round}");
        let Claim::New(token) = BlockingBackend::claim(&backend, &key, "fp", 1, TTL).unwrap()
        else {
            panic!("a fresh key");
        };
        let waiter = {
            let (backend, key) = (backend.clone(), key.clone());
            std::thread::spawn(move || {
                let record = BlockingBackend::wait_for_completion(&backend, &key, TTL).unwrap();
                assert!(record.is_some());
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        writeln!(stdin, "{key} {token}").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let committed: u128 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        let woke = waiter.join().unwrap();
        latencies.push(Duration::from_nanos(woke.saturating_sub(committed) as u64));
    }
    drop(stdin);
    child.wait().unwrap();
    latencies.sort();
    latencies
}

fn rate((pairs, took): (u64, Duration)) -> f64 {
    pairs as f64 / took.as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/sqlite-pairs")
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ours_thread = idemkit_backend(&dir.join("idemkit-thread.db"));
    let ours_tasks = runtime.block_on(async { idemkit_backend(&dir.join("idemkit-tasks.db")) });
    let ceiling_one = ceiling_connection(&dir.join("ceiling-thread.db"));
    let ceiling_many = Arc::new(Mutex::new(ceiling_connection(
        &dir.join("ceiling-tasks.db"),
    )));

    let rounds = if benchmarking() { ROUNDS } else { 1 };
    let mut ratios_thread = Vec::new();
    let mut ratios_tasks = Vec::new();
    let mut seen: [Vec<f64>; 4] = Default::default();
    println!(
        "synchronous={}; pairs per second (round: idemkit / ceiling = ratio)",
        sync_pragma()
    );
    for round in 1..=rounds {
        // A round is a batch of each series, run in slices that alternate between ours
        // and the ceiling, so that both see the same spells of load.
        let mut totals = [(0u64, Duration::ZERO); 4];
        let add = |total: &mut (u64, Duration), (pairs, took): (u64, Duration)| {
            total.0 += pairs;
            total.1 += took;
        };
        let slices = batch() / SLICE;
        for _ in 0..slices {
            add(&mut totals[0], idemkit_thread(&ours_thread, SLICE / 4));
            add(&mut totals[1], ceiling_thread(&ceiling_one, SLICE / 4));
        }
        for _ in 0..slices {
            add(
                &mut totals[3],
                ceiling_tasks(&runtime, &ceiling_many, SLICE),
            );
            add(&mut totals[2], idemkit_tasks(&runtime, &ours_tasks, SLICE));
        }
        let [ours_1, ceiling_1, ours_64, ceiling_64] = totals.map(rate);
        println!(
            "round {round}: one thread {ours_1:.0} / {ceiling_1:.0} = {:.2}x; 64 tasks {ours_64:.0} / {ceiling_64:.0} = {:.2}x",
            ours_1 / ceiling_1,
            ours_64 / ceiling_64
        );
        ratios_thread.push(ours_1 / ceiling_1);
        ratios_tasks.push(ours_64 / ceiling_64);
        for (series, value) in seen
            .iter_mut()
            .zip([ours_1, ceiling_1, ours_64, ceiling_64])
        {
            series.push(value);
        }
    }
    let [ours_1, ceiling_1, ours_64, ceiling_64] = seen.map(median);
    println!(
        "median: one thread {ours_1:.0} / {ceiling_1:.0} (ratio median {:.2}x); 64 tasks {ours_64:.0} / {ceiling_64:.0} (ratio median {:.2}x); goal >= 0.8x",
        median(ratios_thread),
        median(ratios_tasks)
    );
    drop((ours_thread, ours_tasks, ceiling_one, ceiling_many));
    let wakes = cross_process_wakes(
        &dir.join("wakes.db"),
        if benchmarking() { WAKES } else { 5 },
    );
    println!(
        "cross-process wake-up over {} completions: median {:.1} ms, p99 {:.1} ms, slowest {:.1} ms (goal: p99 < 100 ms)",
        wakes.len(),
        wakes[wakes.len() / 2].as_secs_f64() * 1e3,
        wakes[wakes.len() * 99 / 100].as_secs_f64() * 1e3,
        wakes[wakes.len() - 1].as_secs_f64() * 1e3,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
