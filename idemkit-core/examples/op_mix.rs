//! A fixed mix of runs for counting instructions: `n` new keys, then a replay of each,
//! through the blocking executor (`blocking`) or the async one (`async`), on the
//! in-memory backend; `keys` only builds the keys, the part of the count to subtract. Nothing is timed: run it under `valgrind --tool=callgrind`, whose
//! instruction counts do not move with the machine's load, to compare two versions of the
//! code side by side (BENCHMARKS.md, "The one-trait seam").
//!
//! ```sh
//! cargo build --release -p idemkit-core --example op_mix
//! valgrind --tool=callgrind target/release/examples/op_mix blocking 50000
//! ```

use std::convert::Infallible;

use idemkit_core::{AsyncIdempotency, Fingerprint, Idempotency, InMemoryBackend, Key, Response};

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "blocking".to_owned());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(50_000);
    let keys: Vec<Key> = (0..n)
        .map(|i| Key::new(["op-mix", &i.to_string()]))
        .collect();
    let request = Fingerprint::new(["POST", "/charges"]);
    let backend = InMemoryBackend::builder().max_size(n * 2).build();
    let charge = || Response::new(201, "charged");
    let mut statuses = 0u64;
    match mode.as_str() {
        "blocking" => {
            let executor = Idempotency::new(backend);
            for key in keys.iter().chain(&keys) {
                let outcome = executor.run(key, &request, |_lease| Ok::<_, Infallible>(charge()));
                statuses += u64::from(outcome.expect("the in-memory backend").response.status);
            }
        }
        "async" => {
            let executor = AsyncIdempotency::new(backend);
            futures_lite::future::block_on(async {
                for key in keys.iter().chain(&keys) {
                    let run =
                        executor.run(key, &request, || async { Ok::<_, Infallible>(charge()) });
                    statuses +=
                        u64::from(run.await.expect("the in-memory backend").response.status);
                }
            });
        }
        "keys" => statuses = keys.len() as u64,
        other => {
            eprintln!("op_mix: the mode is `blocking`, `async` or `keys`, not {other:?}");
            std::process::exit(2);
        }
    }
    // Printed so that the runs cannot be optimized away.
    println!("{statuses}");
}
