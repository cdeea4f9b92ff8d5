//! Each subcommand, written once against the [`Store`] trait; this module picks the
//! store by the URL's scheme and runs the subcommand on it.

mod check;
mod inspect;
mod migrate;
mod purge;
mod stats;

use std::process::ExitCode;

use crate::cli::Command;
use crate::failure::Failure;
use crate::stores::{Place, PostgresStore, RedisStore, Scheme, SqliteStore, Store};

/// Runs `command`; the exit code on success, the failure otherwise.
pub fn run(command: Command) -> Result<ExitCode, Failure> {
    let store = command.store();
    let place = Place::new(&store.url, store.namespace.clone(), store.table.clone())?;
    match place.scheme {
        Scheme::Redis => run_on::<RedisStore>(command, &place),
        Scheme::Postgres => run_on::<PostgresStore>(command, &place),
        Scheme::Sqlite => run_on::<SqliteStore>(command, &place),
    }
}

fn run_on<S: Store>(command: Command, place: &Place) -> Result<ExitCode, Failure> {
    // The check runs each vector on a runtime of its own, so it runs outside one.
    if let Command::Check(args) = &command {
        return check::run::<S>(place, args);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::unreachable(format!("cannot start an async runtime: {error}")))?;
    runtime.block_on(async {
        match &command {
            Command::Migrate(args) => migrate::run::<S>(place, args).await,
            Command::Inspect(args) => inspect::run::<S>(place, args).await,
            Command::Stats(args) => stats::run::<S>(place, args).await,
            Command::Purge(args) => purge::run::<S>(place, args).await,
            Command::Check(_) => unreachable!("handled above"),
        }
    })
}
