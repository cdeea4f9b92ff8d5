//! Claim+complete pairs per second from 64 tasks on one server, in batches of 4,000
//! pairs as `benches/redis_pairs.rs` runs them, but alone: no other series between two
//! batches, and a server emptied first. Beside the bench, it tells a rate that the
//! backend's own work sets from one that the bench's conditions set (other series' keys
//! expiring on the server, other processes between batches).
//!
//! ```sh
//! redis-server --port 6391 --save '' --appendonly no --daemonize yes
//! cargo run --release -p idemkit-redis --example pairs_loop -- redis://127.0.0.1:6391 1 ours
//! cargo run --release -p idemkit-redis --example pairs_loop -- redis://127.0.0.1:6391 1 minimum
//! ```
//!
//! The arguments: the server's URL (it is emptied with `FLUSHALL`: never point it at a
//! server that holds anything), the client's tokio worker threads, and the series:
//! `ours` (a `RedisBackend`, as the bench's `idemkit_redis`) or `minimum` (the bench's
//! `plain_claim_minimum`: a plain `SET NX PX GET` and a function that reads the claim's
//! expiry and the time and writes the result, with no checks); each pair is the bench's
//! own code. It prints the median of 20 batches' pairs per second, with the slowest and
//! the fastest.

use std::sync::Arc;
use std::time::Instant;

use idemkit_core::Response;
use idemkit_redis::RedisBackend;
use idemkit_redis::redis::{self, aio::ConnectionManager};

// The bench's pairs, its very code; the anchor's function goes unused here.
#[allow(dead_code)]
#[path = "../benches/support/pairs.rs"]
mod pairs;

const TASKS: u64 = 64;
const BATCH: u64 = 4_000;
const BATCHES: usize = 20;

/// One series' pair: what each task runs for the key numbered `n`.
#[derive(Clone)]
enum Series {
    Ours(RedisBackend, Arc<Response>),
    Minimum(ConnectionManager),
}

impl Series {
    async fn pair(&self, n: u64) {
        match self {
            Series::Ours(backend, response) => pairs::idemkit_pair(backend, response, n).await,
            Series::Minimum(connection) => {
                pairs::plain_claim_minimum_pair(connection.clone(), n).await;
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "pairs_loop URL WORKERS ours|minimum";
    let url = args.next().expect(usage);
    let workers: usize = args.next().and_then(|n| n.parse().ok()).expect(usage);
    let name = args.next().expect(usage);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let client = redis::Client::open(url.as_str()).expect("a Redis URL");
    let mut connection = runtime
        .block_on(ConnectionManager::new(client))
        .expect("the server answers");
    runtime.block_on(async {
        let _: () = redis::cmd("FLUSHALL")
            .query_async(&mut connection)
            .await
            .expect("FLUSHALL");
    });
    let series = match name.as_str() {
        "ours" => {
            let backend = runtime
                .block_on(RedisBackend::builder().url(&url).namespace("loop").build())
                .expect("the backend connects");
            Series::Ours(backend, Arc::new(Response::new(200, "ok")))
        }
        "minimum" => {
            runtime.block_on(async {
                let _: String = redis::cmd("FUNCTION")
                    .arg("LOAD")
                    .arg("REPLACE")
                    .arg(pairs::LIBRARY)
                    .query_async(&mut connection)
                    .await
                    .expect("the minimum's function loads");
            });
            Series::Minimum(connection)
        }
        other => panic!("{usage}: no series {other:?}"),
    };
    let mut rates: Vec<f64> = (0..BATCHES as u64)
        .map(|batch| {
            let first = batch * BATCH;
            let elapsed = runtime.block_on(async {
                let start = Instant::now();
                let tasks: Vec<_> = (0..TASKS)
                    .map(|task| {
                        let series = series.clone();
                        tokio::spawn(async move {
                            for n in (task..BATCH).step_by(TASKS as usize) {
                                series.pair(first + n).await;
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("a task of pairs");
                }
                start.elapsed()
            });
            BATCH as f64 / elapsed.as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!(
        "{name}, {workers} client thread(s): median {:.0} pairs/s ({:.0} .. {:.0}) over {BATCHES} batches of {BATCH}",
        rates[BATCHES / 2],
        rates[0],
        rates[BATCHES - 1]
    );
}
