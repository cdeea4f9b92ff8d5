//! The conformance server's command line.

use std::time::Duration;

use idemkit_tower::Compat;

/// The usage text printed by `--help` and after a bad option.
pub const USAGE: &str = "\
usage: conformance_server [options]

  --listen ADDR          address to listen on (default 127.0.0.1:8080); once it accepts
                         connections the server prints `listening on ADDR`
  --backend BACKEND      `memory` (default), `redis://HOST:PORT`, `sqlite://PATH` (a
                         file, created if missing; servers on one file act as replicas)
                         or `postgres://USER@HOST:PORT/DB` (or postgresql://; its table
                         migrated at start)
  --namespace NAME       key namespace in Redis (default `idemkit`); servers that share a
                         Redis and a namespace share their records (on PostgreSQL: the
                         table, unless --table names one; a name that is not a valid
                         table name becomes `idemkit_<name, other characters as _>_<hash>`)
  --table NAME           the table of an SQL store (default `idemkit_records`)
  --effects              (PostgreSQL) each handler call first inserts a row (the raw
                         Idempotency-Key, the server id, the call number) into
                         `idemkit_test_effects` inside the request's transaction, which
                         the layer commits with the stored response; GET /_effects?key=K
                         answers {\"rows\":N}, the committed rows for that raw key
  --require-key          refuse a POST or PATCH without an Idempotency-Key (400)
  --wait-timeout-ms N    how long a duplicate waits for the request in flight
  --lease-ttl-ms N       the lease of a claim
  --max-body-bytes N     the largest response body stored for replay
  --compat stripe        answer in Stripe's dialect (a reused key: 400 idempotency_error;
                         in flight: 409; replays: Idempotent-Replayed)
  --help                 print this text";

/// Where records are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// This process's memory.
    Memory,
    /// A Redis server, by URL (`redis://HOST:PORT`).
    Redis(String),
    /// An SQLite file, by path (from `sqlite://PATH`).
    Sqlite(String),
    /// A PostgreSQL database, by URL (`postgres://USER@HOST:PORT/DB`).
    Postgres(String),
}

/// What the command line asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub listen: String,
    pub backend: BackendChoice,
    pub namespace: Option<String>,
    pub table: Option<String>,
    pub effects: bool,
    pub require_key: bool,
    pub wait_timeout: Option<Duration>,
    pub lease_ttl: Option<Duration>,
    pub max_body_bytes: Option<usize>,
    pub compat: Compat,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: "127.0.0.1:8080".to_owned(),
            backend: BackendChoice::Memory,
            namespace: None,
            table: None,
            effects: false,
            require_key: false,
            wait_timeout: None,
            lease_ttl: None,
            max_body_bytes: None,
            compat: Compat::Default,
        }
    }
}

/// What to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Serve(Options),
    Help,
}

/// Reads the options (without the program name). `--name value` and `--name=value`
/// are both accepted.
pub fn parse<I>(args: I) -> Result<Command, String>
where
    I: IntoIterator<Item = String>,
{
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs {what}"))
        };
        match name.as_str() {
            "--help" | "-h" => return Ok(Command::Help),
            "--listen" => options.listen = value("an address")?,
            "--backend" => options.backend = backend(&value("a backend")?)?,
            "--namespace" => {
                let namespace = value("a name")?;
                if namespace.is_empty() {
                    return Err("--namespace needs a non-empty name".to_owned());
                }
                options.namespace = Some(namespace);
            }
            "--table" => {
                let table = value("a name")?;
                if table.is_empty() {
                    return Err("--table needs a non-empty name".to_owned());
                }
                options.table = Some(table);
            }
            "--effects" => {
                if inline.is_some() {
                    return Err("--effects takes no value".to_owned());
                }
                options.effects = true;
            }
            "--require-key" => {
                if inline.is_some() {
                    return Err("--require-key takes no value".to_owned());
                }
                options.require_key = true;
            }
            "--wait-timeout-ms" => options.wait_timeout = Some(millis(&name, &value("N")?)?),
            "--lease-ttl-ms" => {
                let lease = millis(&name, &value("N")?)?;
                if lease.is_zero() {
                    return Err("--lease-ttl-ms must be at least 1".to_owned());
                }
                options.lease_ttl = Some(lease);
            }
            "--max-body-bytes" => {
                let text = value("N")?;
                let bytes = text
                    .parse()
                    .map_err(|_| format!("--max-body-bytes: `{text}` is not a byte count"))?;
                options.max_body_bytes = Some(bytes);
            }
            "--compat" => {
                let dialect = value("a dialect")?;
                options.compat = match dialect.as_str() {
                    "stripe" => Compat::Stripe,
                    "default" => Compat::Default,
                    _ => {
                        return Err(format!(
                            "--compat: unknown dialect `{dialect}` (try `stripe`)"
                        ));
                    }
                };
            }
            _ => return Err(format!("unknown option `{arg}`")),
        }
    }
    if options.effects && !matches!(options.backend, BackendChoice::Postgres(_)) {
        return Err("--effects needs a postgres:// backend".to_owned());
    }
    Ok(Command::Serve(options))
}

fn backend(text: &str) -> Result<BackendChoice, String> {
    if text == "memory" {
        Ok(BackendChoice::Memory)
    } else if text.starts_with("redis://") && text.len() > "redis://".len() {
        Ok(BackendChoice::Redis(text.to_owned()))
    } else if let Some(path) = text
        .strip_prefix("sqlite://")
        .filter(|path| !path.is_empty())
    {
        Ok(BackendChoice::Sqlite(path.to_owned()))
    } else if ["postgres://", "postgresql://"]
        .iter()
        .any(|scheme| text.starts_with(scheme) && text.len() > scheme.len())
    {
        Ok(BackendChoice::Postgres(text.to_owned()))
    } else {
        Err(format!(
            "--backend: `{text}` is neither `memory`, `redis://HOST:PORT`, `sqlite://PATH` \
             nor `postgres://USER@HOST:PORT/DB`"
        ))
    }
}

fn millis(name: &str, text: &str) -> Result<Duration, String> {
    text.parse()
        .map(Duration::from_millis)
        .map_err(|_| format!("{name}: `{text}` is not a number of milliseconds"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(args: &[&str]) -> Options {
        match parse(args.iter().map(|arg| arg.to_string())) {
            Ok(Command::Serve(options)) => options,
            other => panic!("{args:?} gave {other:?}"),
        }
    }

    fn error(args: &[&str]) -> String {
        parse(args.iter().map(|arg| arg.to_string())).unwrap_err()
    }

    #[test]
    fn defaults() {
        let options = serve(&[]);
        assert_eq!(options, Options::default());
        assert_eq!(options.listen, "127.0.0.1:8080");
        assert_eq!(options.backend, BackendChoice::Memory);
    }

    #[test]
    fn every_option() {
        let options = serve(&[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "redis://127.0.0.1:6390",
            "--namespace",
            "ns",
            "--require-key",
            "--wait-timeout-ms",
            "200",
            "--lease-ttl-ms=300",
            "--max-body-bytes",
            "1024",
            "--compat",
            "stripe",
        ]);
        assert_eq!(options.listen, "127.0.0.1:0");
        assert_eq!(
            options.backend,
            BackendChoice::Redis("redis://127.0.0.1:6390".to_owned())
        );
        assert_eq!(options.namespace.as_deref(), Some("ns"));
        assert!(options.require_key);
        assert_eq!(options.wait_timeout, Some(Duration::from_millis(200)));
        assert_eq!(options.lease_ttl, Some(Duration::from_millis(300)));
        assert_eq!(options.max_body_bytes, Some(1024));
        assert_eq!(options.compat, Compat::Stripe);
        assert_eq!(serve(&["--backend=memory"]).backend, BackendChoice::Memory);
        let sqlite = serve(&["--backend", "sqlite:///tmp/x.db", "--table", "t1"]);
        assert_eq!(
            sqlite.backend,
            BackendChoice::Sqlite("/tmp/x.db".to_owned())
        );
        assert_eq!(sqlite.table.as_deref(), Some("t1"));
        assert_eq!(
            serve(&["--backend=sqlite://records.db"]).backend,
            BackendChoice::Sqlite("records.db".to_owned())
        );
        let postgres = serve(&[
            "--backend",
            "postgres://app@127.0.0.1:5432/app",
            "--table",
            "t",
            "--effects",
        ]);
        assert_eq!(
            postgres.backend,
            BackendChoice::Postgres("postgres://app@127.0.0.1:5432/app".to_owned())
        );
        assert_eq!(postgres.table.as_deref(), Some("t"));
        assert!(postgres.effects);
    }

    #[test]
    fn help() {
        assert_eq!(parse(["--help".to_owned()]), Ok(Command::Help));
    }

    #[test]
    fn mistakes_are_named() {
        assert!(error(&["--listen"]).contains("--listen needs"));
        assert!(error(&["--backend", "mysql://x"]).contains("neither"));
        assert!(error(&["--backend", "postgres://"]).contains("neither"));
        // libpq's other scheme names the same kind of URL.
        assert_eq!(
            serve(&["--backend", "postgresql://app@db/app"]).backend,
            BackendChoice::Postgres("postgresql://app@db/app".to_owned())
        );
        assert!(error(&["--effects"]).contains("needs a postgres"));
        assert!(error(&["--table", ""]).contains("non-empty"));
        assert!(error(&["--backend", "redis://"]).contains("neither"));
        assert!(error(&["--backend", "sqlite://"]).contains("neither"));
        assert!(error(&["--wait-timeout-ms", "soon"]).contains("milliseconds"));
        assert!(error(&["--lease-ttl-ms", "0"]).contains("at least 1"));
        assert!(error(&["--max-body-bytes", "-1"]).contains("byte count"));
        assert!(error(&["--compat", "paypal"]).contains("unknown dialect"));
        assert!(error(&["--verbose"]).contains("unknown option"));
        assert!(error(&["--require-key=yes"]).contains("no value"));
        assert!(error(&["--namespace", ""]).contains("non-empty"));
    }
}
