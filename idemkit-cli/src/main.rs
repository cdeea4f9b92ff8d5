//! `idemkit`: operate a deployment's idempotency store.
//!
//! - `idemkit migrate URL` creates or upgrades the records table (SQL stores).
//! - `idemkit inspect URL KEY...` shows the records of clients' keys (computed into
//!   effective keys exactly as the HTTP layer does) or of effective keys.
//! - `idemkit stats URL` counts records by state.
//! - `idemkit purge URL` deletes expired results and abandoned claims in batches.
//! - `idemkit check URL` runs the conformance vectors against the store.
//!
//! Every store is one file under `stores/` implementing the `Store` trait; inspect,
//! stats and purge go through the core's `Backend::get` and `Operator`, so a store only
//! says how to open, migrate and check itself.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cli;
mod commands;
mod effective;
mod failure;
mod output;
mod progress;
mod stores;

use std::process::ExitCode;

use clap::Parser;

use crate::output::{JsonFailure, print_json};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let json = cli.command.json();
    match commands::run(cli.command) {
        Ok(code) => code,
        Err(failure) => {
            if json {
                let _ = print_json(&JsonFailure {
                    error: &failure.what,
                    remedy: failure.remedy.as_deref(),
                    exit_code: failure.kind.code(),
                });
            }
            eprintln!("{failure}");
            failure.exit_code()
        }
    }
}
