//! `idemkit purge URL`: deletes expired results and abandoned claims in bounded batches
//! (each one short operation on the store), or with `--dry-run` only counts them.

use std::process::ExitCode;

use idemkit_core::Operator;
use serde::Serialize;

use crate::cli::PurgeArgs;
use crate::failure::{Failure, storage};
use crate::output::print_json;
use crate::progress::Progress;
use crate::stores::{Place, Store};

#[derive(Serialize)]
struct Purged {
    store: String,
    dry_run: bool,
    /// What a purge would delete now (counted before any deletion).
    purgeable: u64,
    deleted: u64,
    batches: u64,
    batch_size: u32,
}

pub async fn run<S: Store>(place: &Place, args: &PurgeArgs) -> Result<ExitCode, Failure> {
    let store = S::open(place).await?;
    let described = S::describe(place);
    let backend = store.backend();
    let purgeable = backend
        .stats()
        .await
        .map_err(|error| storage("counting the records", &described, &error))?
        .purgeable;
    let mut purged = Purged {
        store: described.clone(),
        dry_run: args.dry_run,
        purgeable,
        deleted: 0,
        batches: 0,
        batch_size: args.batch_size,
    };
    if !args.dry_run {
        let progress = Progress::new(purgeable, args.output.json);
        let limit = args.batch_size as usize;
        loop {
            let deleted = match backend.purge_batch(limit).await {
                Ok(deleted) => deleted,
                Err(error) => {
                    // The bar's line ends before the error is printed under it.
                    progress.finish();
                    let failure = storage("purging", &described, &error);
                    let what = format!(
                        "{} ({} deleted before it failed)",
                        failure.what, purged.deleted
                    );
                    return Err(Failure { what, ..failure });
                }
            };
            purged.batches += 1;
            purged.deleted += deleted;
            progress.batch(purged.batches, deleted, purged.deleted);
            if deleted < limit as u64 {
                break;
            }
        }
        progress.finish();
    }
    if args.output.json {
        print_json(&purged)?;
    } else if args.dry_run {
        println!(
            "{described}: dry run: {purgeable} record(s) would be deleted (expired results \
             and abandoned claims); nothing was deleted"
        );
    } else {
        println!(
            "{described}: deleted {} record(s) (expired results and abandoned claims) in {} \
             batch(es) of at most {}",
            purged.deleted, purged.batches, purged.batch_size
        );
    }
    Ok(ExitCode::SUCCESS)
}
