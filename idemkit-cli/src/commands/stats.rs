//! `idemkit stats URL`: counts by state, the oldest claim in flight, the nearest expiry,
//! the store's size.

use std::process::ExitCode;

use idemkit_core::Operator;
use serde::Serialize;

use crate::cli::StatsArgs;
use crate::failure::{Failure, storage};
use crate::output::{bytes, duration, print_json};
use crate::stores::{Place, Store};

#[derive(Serialize)]
struct Stats {
    store: String,
    in_flight: u64,
    lapsed: u64,
    completed: u64,
    purgeable: u64,
    oldest_claim_ms: Option<u64>,
    nearest_expiry_ms: Option<u64>,
    size_bytes: Option<u64>,
}

pub async fn run<S: Store>(place: &Place, args: &StatsArgs) -> Result<ExitCode, Failure> {
    let store = S::open(place).await?;
    let described = S::describe(place);
    let stats = store
        .backend()
        .stats()
        .await
        .map_err(|error| storage("counting the records", &described, &error))?;
    let millis = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if args.output.json {
        print_json(&Stats {
            store: described,
            in_flight: stats.in_flight,
            lapsed: stats.lapsed,
            completed: stats.completed,
            purgeable: stats.purgeable,
            oldest_claim_ms: stats.oldest_claim.map(millis),
            nearest_expiry_ms: stats.nearest_expiry.map(millis),
            size_bytes: stats.size_bytes,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("store           {described}");
    println!("in flight       {}", stats.in_flight);
    println!(
        "lapsed          {}   (lease ran out; the next claim takes over)",
        stats.lapsed
    );
    println!("completed       {}", stats.completed);
    println!(
        "purgeable       {}   (expired results, abandoned claims)",
        stats.purgeable
    );
    println!(
        "oldest claim    {}",
        stats
            .oldest_claim
            .map_or("none in flight".to_owned(), |age| format!(
                "made {} ago",
                duration(age)
            ))
    );
    println!(
        "nearest expiry  {}",
        stats
            .nearest_expiry
            .map_or("no completed records".to_owned(), |left| format!(
                "in {}",
                duration(left)
            ))
    );
    println!(
        "size            {}",
        stats
            .size_bytes
            .map_or("the store does not say".to_owned(), bytes)
    );
    Ok(ExitCode::SUCCESS)
}
