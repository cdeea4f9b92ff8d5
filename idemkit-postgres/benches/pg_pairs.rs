//! Claim+complete pairs per second on new keys, 64 concurrent tasks, side by side in one
//! run on the machine's PostgreSQL (BENCHMARKS.md at the repository root):
//!
//! - `ceiling`: `pgbench` with 64 clients running only the two statements a pair needs
//!   at the least, each its own transaction: an `INSERT ... ON CONFLICT DO NOTHING` and a
//!   fenced `UPDATE`.
//! - `idemkit_postgres`: this crate's backend, 64 tokio tasks, claim then complete.
//! - `python_reference`: PyPI `idemkit[postgres]==1.0.2`'s `PostgresBackend`, 64 asyncio
//!   tasks (`bench/python_postgres_reference.py`), when installed.
//!
//! Rounds interleave the three, so each round's figures share the machine's state.
//! `cargo bench -p idemkit-postgres --bench pg_pairs` measures (10 s a figure, 3 rounds;
//! `PG_PAIRS_SECONDS` and `PG_PAIRS_ROUNDS` change that). Run without `--bench` (as
//! `cargo test --benches` does) it only checks, briefly, that our side works.
//! `PG_PAIRS_CPU=1` also prints this process's CPU time per pair.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use idemkit_core::{Backend, Claim, Response};
use idemkit_postgres::PostgresBackend;

const TASKS: usize = 64;
const POOL: u32 = 64;

fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-XAtqc", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Ours: 64 tasks on one backend, each claiming fresh keys and completing them.
fn ours(url: &str, table: &str, seconds: f64, round: usize) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let backend = PostgresBackend::builder()
            .url(url)
            .table(table)
            .max_connections(POOL)
            .build()
            .await
            .unwrap();
        let response = Arc::new(Response::new(200, "ok"));
        let cpu_before = cpu_seconds();
        let done = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let stop = started + Duration::from_secs_f64(seconds);
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let (backend, response, done) = (backend.clone(), response.clone(), done.clone());
                tokio::spawn(async move {
                    let mut number = 0u64;
                    while Instant::now() < stop {
                        let key = format!("r{round}-{task}-{number}");
                        number += 1;
                        let Claim::New(token) = backend
                            .claim(&key, "fp", 1, Duration::from_secs(30))
                            .await
                            .unwrap()
                        else {
                            panic!("{key} was not new");
                        };
                        let stored = backend
                            .complete(&key, &token, response.clone(), Duration::from_secs(60))
                            .await
                            .unwrap();
                        assert!(stored);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
        if std::env::var("PG_PAIRS_CPU").is_ok() {
            let pairs = done.load(Ordering::Relaxed) as f64;
            println!(
                "  client CPU: {:.1} us per pair",
                (cpu_seconds() - cpu_before) * 1e6 / pairs
            );
        }
        rate
    })
}

/// The ceiling: pgbench running the two least statements of a pair, 64 clients.
fn ceiling(url: &str, table: &str, seconds: f64, dir: &std::path::Path) -> Option<f64> {
    let script = dir.join("pair.sql");
    std::fs::write(
        &script,
        format!(
            "\\set k random(1, 1000000000000000)\n\
             INSERT INTO {table} (key, token, fingerprint, fingerprint_version, claimed_at, lease_until, purge_after) \
             VALUES ('pgb' || :client_id || '-' || :k, '\\x00112233445566778899aabbccddeeff', 'fp', 1, \
             clock_timestamp(), clock_timestamp() + interval '30 seconds', clock_timestamp() + interval '90 seconds') \
             ON CONFLICT DO NOTHING;\n\
             UPDATE {table} SET completed = true, completed_at = clock_timestamp(), status = 200, body = '\\x6f6b', \
             lease_until = clock_timestamp() + interval '60 seconds', purge_after = clock_timestamp() + interval '60 seconds' \
             WHERE key = 'pgb' || :client_id || '-' || :k AND token = '\\x00112233445566778899aabbccddeeff' AND NOT completed;\n"
        ),
    )
    .ok()?;
    let out = Command::new("pgbench")
        .args([
            "-n",
            "-c",
            &TASKS.to_string(),
            "-j",
            "2",
            "-T",
            &format!("{}", seconds.ceil() as u64),
            "-f",
            &script.to_string_lossy(),
            url,
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|line| line.starts_with("tps = "))
        .and_then(|line| line[6..].split_whitespace().next()?.parse().ok())
}

fn python(url: &str, seconds: f64) -> Option<f64> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bench/python_postgres_reference.py"
    );
    let out = Command::new("python3")
        .args([script, "--url", url, "--seconds", &seconds.to_string()])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last()?;
    let start = last.find("\"median\": ")? + 10;
    last[start..].trim_end_matches('}').trim().parse().ok()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let Some(url) = pg_harness::machine() else {
        return;
    };
    let table = pg_harness::unique_name("bench_pairs");
    create_table(&url, &table);
    if !measuring {
        let rate = ours(&url, &table, 0.5, 0);
        assert!(rate > 0.0);
        psql(&url, &format!("DROP TABLE {table}"));
        println!("pg_pairs smoke: {rate:.0} pairs/s (not a measurement)");
        return;
    }
    let seconds: f64 = std::env::var("PG_PAIRS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let rounds: usize = std::env::var("PG_PAIRS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dir = std::env::temp_dir().join(pg_harness::unique_name("pg_pairs"));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut ceilings, mut oursv, mut pythons) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        if let Some(rate) = ceiling(&url, &table, seconds, &dir) {
            ceilings.push(rate);
        }
        oursv.push(ours(&url, &table, seconds, round));
        if let Some(rate) = python(&url, seconds) {
            pythons.push(rate);
        }
        println!(
            "round {round}: ceiling {:?}, idemkit_postgres {:.0}, python_reference {:?}",
            ceilings.last().map(|r| r.round()),
            oursv.last().unwrap(),
            pythons.last().map(|r| r.round())
        );
        // Each round starts from an empty table.
        psql(&url, &format!("TRUNCATE {table}"));
    }
    psql(&url, &format!("DROP TABLE {table}"));
    let _ = std::fs::remove_dir_all(&dir);
    let ours_median = median(&mut oursv);
    println!("medians over {rounds} rounds of {seconds} s, 64 tasks:");
    println!("  idemkit_postgres: {ours_median:.0} pairs/s");
    if !ceilings.is_empty() {
        let c = median(&mut ceilings);
        println!(
            "  ceiling (pgbench): {c:.0} pairs/s; ours / ceiling = {:.2} (goal >= 0.8)",
            ours_median / c
        );
    } else {
        println!("  ceiling skipped: pgbench did not run");
    }
    if !pythons.is_empty() {
        let p = median(&mut pythons);
        println!(
            "  python_reference: {p:.0} pairs/s; ours / reference = {:.1}x (goal >= 4x)",
            ours_median / p
        );
    } else {
        println!(
            "  python_reference skipped: pip install \"idemkit[postgres]==1.0.2\" to measure it"
        );
    }
}

/// Creates the bench's table with this crate's schema.
fn create_table(url: &str, table: &str) {
    psql(url, &idemkit_postgres::schema_sql(table).unwrap());
}

/// This process's CPU time so far (user + system), from /proc (Linux; zero elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap_or(0) + 2..]
        .split(' ')
        .collect();
    let ticks: f64 =
        fields[11].parse::<f64>().unwrap_or(0.0) + fields[12].parse::<f64>().unwrap_or(0.0);
    ticks / 100.0
}
