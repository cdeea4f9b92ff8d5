//! The stores the command knows, each one file implementing [`Store`]: open one by URL,
//! migrate it, and run the conformance vectors against a namespace or table of its own.
//! Inspect, stats and purge need nothing more: they go through the backend's
//! `Backend::get` and `Operator`, the same for every store.

mod check_places;
mod postgres;
mod redis;
mod sqlite;

use idemkit_conformance::runner::Report;
use idemkit_core::{Backend, Operator};

use crate::failure::Failure;

pub use self::postgres::PostgresStore;
pub use self::redis::RedisStore;
pub use self::sqlite::SqliteStore;

/// The store schemes the command understands, as the URL's scheme names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `redis://HOST:PORT[/DB]`
    Redis,
    /// `postgres://USER@HOST:PORT/DB` (or `postgresql://`)
    Postgres,
    /// `sqlite://PATH`
    Sqlite,
}

/// What every URL form looks like, for error messages.
pub const URL_FORMS: &str = "redis://HOST:PORT[/DB], postgres://USER@HOST:PORT/DB or sqlite://PATH";

/// The default table of the SQL stores.
pub const DEFAULT_TABLE: &str = "idemkit_records";

impl Scheme {
    /// The scheme of `url`, or why it is not one the command knows.
    pub fn of(url: &str) -> Result<Scheme, Failure> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(Failure::usage(format!("`{url}` is not a store URL"))
                .remedy(format!("give the store as a URL: {URL_FORMS}")));
        };
        let scheme_lower = scheme.to_ascii_lowercase();
        let known = match scheme_lower.as_str() {
            "redis" => Scheme::Redis,
            "postgres" | "postgresql" => Scheme::Postgres,
            "sqlite" => Scheme::Sqlite,
            _ => {
                return Err(
                    Failure::usage(format!("unknown store URL scheme `{scheme}://`"))
                        .remedy(format!("use one of {URL_FORMS}")),
                );
            }
        };
        if rest.is_empty() {
            return Err(Failure::usage(format!("`{url}` names no server or file"))
                .remedy(format!("use one of {URL_FORMS}")));
        }
        Ok(known)
    }

    /// Whether the store keeps its records in a SQL table (and so takes `--table`).
    pub fn is_sql(self) -> bool {
        matches!(self, Scheme::Postgres | Scheme::Sqlite)
    }
}

/// Where the records are: the store's URL, and the namespace (Redis) or table (SQL).
#[derive(Clone, Debug)]
pub struct Place {
    pub url: String,
    pub scheme: Scheme,
    /// `--namespace`, for Redis.
    pub namespace: Option<String>,
    /// `--table`, for the SQL stores (their default when not given).
    pub table: Option<String>,
}

impl Place {
    /// The place the command line names, its options checked against the scheme.
    pub fn new(
        url: &str,
        namespace: Option<String>,
        table: Option<String>,
    ) -> Result<Place, Failure> {
        let scheme = Scheme::of(url)?;
        if scheme.is_sql() && namespace.is_some() {
            return Err(Failure::usage(
                "--namespace is for Redis stores; a SQL store keeps its records in a table",
            )
            .remedy("use --table NAME instead"));
        }
        if !scheme.is_sql() && table.is_some() {
            return Err(Failure::usage(
                "--table is for SQL stores; a Redis store keeps its records under a namespace",
            )
            .remedy("use --namespace NAME instead"));
        }
        Ok(Place {
            url: url.to_owned(),
            scheme,
            namespace,
            table,
        })
    }

    /// The table, the default one when none was given.
    pub fn table(&self) -> &str {
        self.table.as_deref().unwrap_or(DEFAULT_TABLE)
    }

    /// The URL as it may be printed: any password replaced by `***`.
    pub fn shown_url(&self) -> String {
        redact(&self.url)
    }
}

/// `url` with the password of its user info (`user:password@`), if any, hidden.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// What `migrate` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Migration {
    /// The store has no schema (Redis): there was nothing to do.
    NothingToDo(String),
    /// The table did not exist and was created, at this schema version.
    Created { version: u32 },
    /// The table was upgraded from one schema version to another.
    Upgraded { from: u32, to: u32 },
    /// The table was already at the current schema version: nothing changed.
    Current { version: u32 },
}

/// How `check` went: each vector's report, and what it used and cleaned up.
#[derive(Debug)]
pub struct Checked {
    pub reports: Vec<Report>,
    /// The namespace or table the vectors ran in (its prefix, for many).
    pub ran_in: String,
    /// What was left after the cleanup (0 when it cleaned up everything).
    pub left_behind: u64,
}

/// A store the command can work on.
///
/// `open` is for the commands that read and purge records; `migrate` and `check` work
/// without opening the deployment's records, since there may be no table yet, and since
/// `check` never touches them.
pub trait Store: Sized {
    /// The backend of the store: its records through `Backend::get`, its counts and
    /// purge through `Operator`.
    type Backend: Backend + Operator;

    /// Connects to the store at `place`, checking that its records can be read (a SQL
    /// table exists at the schema this version knows).
    async fn open(place: &Place) -> Result<Self, Failure>;

    /// The backend, connected.
    fn backend(&self) -> &Self::Backend;

    /// Where the records are, in words: the URL and the namespace or table.
    fn describe(place: &Place) -> String;

    /// The raw key under which the store keeps the record of `key`, to show an operator
    /// where to look with the store's own tools.
    fn storage_key(&self, key: &str) -> String;

    /// Creates or upgrades what the store needs (a SQL table); idempotent.
    async fn migrate(place: &Place) -> Result<Migration, Failure>;

    /// Runs the conformance vectors against the store at `place`, in a namespace or
    /// table of the check's own, each report handed to `on_report` as its vector
    /// finishes; then removes everything it wrote. Called outside any async runtime:
    /// every vector runs on a runtime of its own.
    fn check(place: &Place, on_report: &mut dyn FnMut(&Report)) -> Result<Checked, Failure>;
}

/// A unique tag for this run of `check`: the process and the time.
pub fn check_tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    format!("check-{}-{nanos:x}", std::process::id())
}

/// The name prefix of this run of `check`'s SQL tables: a plain identifier (letters,
/// digits, `_`) that no other run shares.
pub fn check_table_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    format!(
        "idemkit_check_{}_{:x}",
        std::process::id(),
        nanos & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Kind;

    #[test]
    fn schemes_are_known_by_their_url() {
        assert_eq!(Scheme::of("redis://127.0.0.1:6379").unwrap(), Scheme::Redis);
        assert_eq!(Scheme::of("postgres://u@h/db").unwrap(), Scheme::Postgres);
        assert_eq!(Scheme::of("postgresql://u@h/db").unwrap(), Scheme::Postgres);
        assert_eq!(Scheme::of("sqlite:///tmp/x.db").unwrap(), Scheme::Sqlite);
        for bad in ["mysql://h/db", "127.0.0.1:6379", "redis://", ""] {
            let failure = Scheme::of(bad).unwrap_err();
            assert_eq!(failure.kind, Kind::Usage, "{bad}");
            assert!(failure.remedy.unwrap().contains("redis://"), "{bad}");
        }
    }

    #[test]
    fn namespace_and_table_go_with_their_stores() {
        assert!(Place::new("redis://h", Some("ns".into()), None).is_ok());
        assert!(Place::new("redis://h", None, Some("t".into())).is_err());
        assert!(Place::new("sqlite://x.db", None, Some("t".into())).is_ok());
        assert!(Place::new("postgres://u@h/db", Some("ns".into()), None).is_err());
        assert_eq!(
            Place::new("sqlite://x.db", None, None).unwrap().table(),
            DEFAULT_TABLE
        );
    }

    #[test]
    fn passwords_are_never_shown() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("redis://:secret@h:6379/0"), "redis://:***@h:6379/0");
        assert_eq!(redact("redis://h:6379"), "redis://h:6379");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite:///tmp/a@b.db"), "sqlite:///tmp/a@b.db");
    }
}
