//! `idemkit migrate URL`: creates or upgrades what the store needs, and says what it did.

use std::process::ExitCode;

use serde::Serialize;

use crate::cli::MigrateArgs;
use crate::failure::Failure;
use crate::output::print_json;
use crate::stores::{Migration, Place, Store};

#[derive(Serialize)]
struct Migrated {
    store: String,
    /// `nothing_to_do`, `created`, `upgraded` or `current`.
    action: &'static str,
    from_version: Option<u32>,
    version: Option<u32>,
    message: String,
}

pub async fn run<S: Store>(place: &Place, args: &MigrateArgs) -> Result<ExitCode, Failure> {
    let migration = S::migrate(place).await?;
    let store = S::describe(place);
    let table = place.table();
    let (action, from_version, version, message) = match migration {
        Migration::NothingToDo(why) => (
            "nothing_to_do",
            None,
            None,
            format!("nothing to migrate: {why}"),
        ),
        Migration::Created { version } => (
            "created",
            None,
            Some(version),
            format!("created table {table} (schema version {version})"),
        ),
        Migration::Upgraded { from, to } => (
            "upgraded",
            Some(from),
            Some(to),
            format!("upgraded table {table} from schema version {from} to {to}"),
        ),
        Migration::Current { version } => (
            "current",
            None,
            Some(version),
            format!("table {table} is already at schema version {version}: nothing changed"),
        ),
    };
    if args.output.json {
        print_json(&Migrated {
            store,
            action,
            from_version,
            version,
            message,
        })?;
    } else {
        println!("{store}: {message}");
    }
    Ok(ExitCode::SUCCESS)
}
