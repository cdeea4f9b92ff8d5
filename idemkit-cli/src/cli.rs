//! The command line: the subcommands, their arguments, and the help text with an
//! example for each.

use clap::{Args, Parser, Subcommand};

/// What `idemkit --help` ends with: how to read the exit code.
const EXIT_CODES: &str = "\
Stores:
  redis://[:PASSWORD@]HOST:PORT[/DB]   records under --namespace (default idemkit)
  postgres://USER@HOST:PORT/DB         records in --table (default idemkit_records)
  sqlite://PATH                        records in --table (default idemkit_records)

Exit codes:
  0  done
  1  `check`: at least one conformance vector failed
  2  the command line or the URL cannot work (unknown scheme, bad option)
  3  the store could not be reached, or failed while answering
  4  the store is not ready (no table yet: run `idemkit migrate URL`)

Example:
  idemkit stats redis://127.0.0.1:6379
  idemkit inspect redis://127.0.0.1:6379 order-17 --scope tenant-a --path /charges";

/// Operate an idemkit store: create its table, look up records by the client's key,
/// count and purge them, and check that the store behaves.
#[derive(Debug, Parser)]
#[command(name = "idemkit", version, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or upgrade the records table (SQL stores); idempotent, says what it did
    #[command(after_help = "\
Example:
  idemkit migrate sqlite:///var/lib/app/idemkit.db
  idemkit migrate postgres://app@db.internal:5432/app --table idemkit_records

Redis needs no migration: the command connects, and says so.")]
    Migrate(MigrateArgs),

    /// Show records by the client's raw key (as the HTTP layer computes the effective
    /// key) or by effective key: state, lease, expiry, response status, headers, body size
    #[command(after_help = "\
Example:
  idemkit inspect redis://127.0.0.1:6379 order-17 --scope tenant-a --method POST --path /charges
  idemkit inspect sqlite://idemkit.db 5f1c...e9 --effective --json

A raw key is turned into the record's name exactly as the HTTP layer does it: from the
key, the caller's scope (what the layer's scope function returns for the request, or the
value of its scope header; leave --scope out for a layer without one), the method and
the path. With --json: an array with one object per key, in the order given; `state` is
`absent`, `in_flight` or `completed`.")]
    Inspect(InspectArgs),

    /// Count records by state; the oldest claim in flight, the nearest expiry, the size
    #[command(after_help = "\
Example:
  idemkit stats redis://127.0.0.1:6379 --namespace payments
  idemkit stats postgres://app@db.internal:5432/app --json")]
    Stats(StatsArgs),

    /// Delete expired results and abandoned claims, in bounded batches
    #[command(after_help = "\
Example:
  idemkit purge postgres://app@db.internal:5432/app --batch-size 1000
  idemkit purge sqlite:///var/lib/app/idemkit.db --dry-run

A progress bar is drawn when the output is a terminal; otherwise one line per batch.")]
    Purge(PurgeArgs),

    /// Run the conformance vectors against the store, in a namespace or table of the
    /// check's own; cleans up, exits 1 if any vector fails
    #[command(after_help = "\
Example:
  idemkit check redis://127.0.0.1:6379
  idemkit check postgres://app@db.internal:5432/app --json

The deployment's own records are never read or written.")]
    Check(CheckArgs),
}

/// Which store, and where in it the records are.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The store: redis://HOST:PORT[/DB], postgres://USER@HOST:PORT/DB or sqlite://PATH
    #[arg(value_name = "URL")]
    pub url: String,

    /// Redis: the key namespace the records are under [default: idemkit]
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,

    /// PostgreSQL and SQLite: the records table [default: idemkit_records]
    #[arg(long, value_name = "NAME")]
    pub table: Option<String>,
}

/// How to print the result.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Print the result as JSON, for scripts (errors too, on standard output)
    #[arg(long)]
    pub json: bool,
}

/// `idemkit migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `idemkit inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The keys: clients' Idempotency-Key values, or effective keys with --effective
    #[arg(value_name = "KEY", required = true)]
    pub keys: Vec<String>,

    /// The caller's scope, as the layer's scope function returns it for the request, or
    /// the value of its scope header (leave it out for a layer without one, or a
    /// single-tenant one)
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,

    /// The request's method
    #[arg(long, value_name = "METHOD", default_value = "POST")]
    pub method: String,

    /// The request's path (its query is not part of the key)
    #[arg(long, value_name = "PATH", required_unless_present = "effective")]
    pub path: Option<String>,

    /// The keys are effective keys (the records' names), not clients' keys
    #[arg(long, conflicts_with_all = ["scope", "path"])]
    pub effective: bool,

    /// Also print the stored response body
    #[arg(long)]
    pub body: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// `idemkit stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `idemkit purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The most records one batch deletes (each batch is one short operation)
    #[arg(long, value_name = "N", default_value_t = 500,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch_size: u32,

    /// Count what would be deleted; delete nothing
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// `idemkit check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl Command {
    /// The store arguments of any subcommand.
    pub fn store(&self) -> &StoreArgs {
        match self {
            Command::Migrate(args) => &args.store,
            Command::Inspect(args) => &args.store,
            Command::Stats(args) => &args.store,
            Command::Purge(args) => &args.store,
            Command::Check(args) => &args.store,
        }
    }

    /// Whether the output is JSON.
    pub fn json(&self) -> bool {
        match self {
            Command::Migrate(args) => args.output.json,
            Command::Inspect(args) => args.output.json,
            Command::Stats(args) => args.output.json,
            Command::Purge(args) => args.output.json,
            Command::Check(args) => args.output.json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_subcommand_has_an_example() {
        let command = Cli::command();
        for sub in command.get_subcommands() {
            let help = sub
                .get_after_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(
                help.contains(&format!("idemkit {} ", sub.get_name())),
                "{}",
                sub.get_name()
            );
        }
    }
}
