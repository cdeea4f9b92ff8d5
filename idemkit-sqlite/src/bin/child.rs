//! The child process of this crate's multi-process tests, not a tool for users. Each mode works on the file named by its first argument:
//!
//! - `race PATH N`: claims `key-0` .. `key-N-1` in turn; for each claim it wins it stores
//!   its pid and prints `won KEY`. Two of these racing on one file must win each key once.
//! - `hold PATH KEY LEASE_MS`: claims `KEY` under a lease of `LEASE_MS`, prints `claimed`,
//!   then claims and completes fresh keys without pause until it is killed, so a kill
//!   lands mid-write, printing `stored KEY` after each completion acknowledged.
//! - `complete PATH`: reads lines `KEY TOKEN` from standard input and completes each
//!   claim with that token, printing `done KEY NANOS` with the wall-clock time of the
//!   commit (nanoseconds since the Unix epoch).
#![forbid(unsafe_code)]

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use idemkit_core::{BlockingBackend, Claim, ClaimToken, Response};
use idemkit_sqlite::SqliteBackend;

const TTL: Duration = Duration::from_secs(3600);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: idemkit-sqlite-child (race PATH N | hold PATH KEY LEASE_MS | complete PATH)";
    let (mode, path) = match (args.first(), args.get(1)) {
        (Some(mode), Some(path)) => (mode.as_str(), path.as_str()),
        _ => fail(usage),
    };
    let backend = SqliteBackend::open(path).unwrap_or_else(|error| fail(&error.to_string()));
    let mut out = std::io::stdout().lock();
    match mode {
        "race" => {
            let n: usize = number(args.get(2), usage);
            let pid = std::process::id().to_string();
            for i in 0..n {
                let key = format!("key-{i}");
                let claim = BlockingBackend::claim(&backend, &key, "fp", 1, TTL)
                    .unwrap_or_else(|error| fail(&error.to_string()));
                if let Claim::New(token) = claim {
                    let response = Arc::new(Response::new(200, pid.clone()));
                    let stored = BlockingBackend::complete(&backend, &key, &token, response, TTL)
                        .unwrap_or_else(|error| fail(&error.to_string()));
                    assert!(stored, "a claim just won is held");
                    writeln!(out, "won {key}").unwrap();
                }
            }
        }
        "hold" => {
            let key = args.get(2).unwrap_or_else(|| fail(usage));
            let lease = Duration::from_millis(number(args.get(3), usage) as u64);
            match BlockingBackend::claim(&backend, key, "fp", 1, lease) {
                Ok(Claim::New(_)) => {}
                other => fail(&format!("expected a new claim, got {other:?}")),
            }
            writeln!(out, "claimed").unwrap();
            out.flush().unwrap();
            for i in 0.. {
                let busy = format!("busy-{}-{i}", std::process::id());
                if let Ok(Claim::New(token)) = BlockingBackend::claim(&backend, &busy, "fp", 1, TTL)
                {
                    let body = vec![b'x'; 4096];
                    let response = Arc::new(Response::new(200, body));
                    if let Ok(true) =
                        BlockingBackend::complete(&backend, &busy, &token, response, TTL)
                    {
                        // Acknowledged: it must survive the kill.
                        writeln!(out, "stored {busy}").unwrap();
                        out.flush().unwrap();
                    }
                }
            }
        }
        "complete" => {
            for line in std::io::stdin().lock().lines() {
                let line = line.unwrap_or_else(|error| fail(&error.to_string()));
                let Some((key, token)) = line.split_once(' ') else {
                    fail("expected `KEY TOKEN`");
                };
                let token: ClaimToken = token.parse().unwrap_or_else(|_| fail("a bad token"));
                let response = Arc::new(Response::new(200, "done"));
                let stored = BlockingBackend::complete(&backend, key, &token, response, TTL)
                    .unwrap_or_else(|error| fail(&error.to_string()));
                let at = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                writeln!(
                    out,
                    "{} {key} {at}",
                    if stored { "done" } else { "refused" }
                )
                .unwrap();
                out.flush().unwrap();
            }
        }
        _ => fail(usage),
    }
}

fn number(arg: Option<&String>, usage: &str) -> usize {
    arg.and_then(|n| n.parse().ok())
        .unwrap_or_else(|| fail(usage))
}

fn fail(why: &str) -> ! {
    eprintln!("idemkit-sqlite-child: {why}");
    std::process::exit(2)
}
