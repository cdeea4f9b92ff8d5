//! Redis: a server by `redis://HOST:PORT[/DB]`, records under `--namespace` (default
//! `idemkit`). Nothing to migrate: each record is one value of its own that expires by
//! itself, and the backend loads its functions into the server when it connects.

use std::time::Duration;

use idemkit_conformance::backend::Async;
use idemkit_conformance::runner::{Report, Suite};
use idemkit_conformance::runtimes::TokioRuntime;
use idemkit_conformance::{Settings, Target};
use idemkit_core::AsyncIdempotency;
use idemkit_redis::{BuildError, RedisBackend, RedisBuilder};

use super::check_places::CheckPlaces;
use super::{Checked, Migration, Place, Store, check_tag};
use crate::failure::Failure;

/// The namespace the backend uses when none is given.
const DEFAULT_NAMESPACE: &str = "idemkit";

/// How long connecting may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one command may take: generous, for a busy server or a slow link.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// A Redis store, connected.
pub struct RedisStore {
    backend: RedisBackend,
}

fn builder(url: &str, namespace: &str) -> RedisBuilder {
    RedisBackend::builder()
        .url(url)
        .namespace(namespace)
        .connect_timeout(CONNECT_TIMEOUT)
        .command_timeout(COMMAND_TIMEOUT)
}

fn namespace(place: &Place) -> &str {
    place.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE)
}

/// What a builder's error means to an operator.
fn build_failure(place: &Place, error: BuildError) -> Failure {
    let url = place.shown_url();
    match error {
        BuildError::Config(why) => Failure::usage(format!("cannot use {url}: {why}")).remedy(
            "give a URL of the form redis://[:PASSWORD@]HOST:PORT[/DB] and a namespace \
             without braces",
        ),
        // Loading the backend's functions is a write, which a server at its memory limit
        // refuses: it answered, so the URL is not what is wrong.
        BuildError::Connect(error) if error.is_out_of_memory() => Failure::unreachable(format!(
            "the Redis server at {url} refused to load idemkit's functions: {error}"
        ))
        .remedy(
            "the server is at its memory limit (maxmemory): free memory or raise \
                 maxmemory, then run this again",
        ),
        BuildError::Connect(error) => Failure::unreachable(format!(
            "cannot reach the Redis server at {url}: {error}"
        ))
        .remedy(format!(
            "check that redis-server runs there and that the URL's host, port, \
                     database and password are right (try `redis-cli -u {url} ping`)"
        )),
        other => Failure::unreachable(format!("cannot use the Redis server at {url}: {other}")),
    }
}

impl Store for RedisStore {
    type Backend = RedisBackend;

    async fn open(place: &Place) -> Result<RedisStore, Failure> {
        let backend = builder(&place.url, namespace(place))
            .build()
            .await
            .map_err(|error| build_failure(place, error))?;
        Ok(RedisStore { backend })
    }

    fn backend(&self) -> &RedisBackend {
        &self.backend
    }

    fn describe(place: &Place) -> String {
        format!("{} (namespace {})", place.shown_url(), namespace(place))
    }

    fn storage_key(&self, key: &str) -> String {
        self.backend.storage_key(key)
    }

    async fn migrate(place: &Place) -> Result<Migration, Failure> {
        // Connecting still checks the URL, so a wrong one is not reported as done.
        RedisStore::open(place).await?;
        Ok(Migration::NothingToDo(
            "Redis keeps each record in a value of its own that expires by itself: there is \
             no table to create or upgrade"
                .to_owned(),
        ))
    }

    fn check(place: &Place, on_report: &mut dyn FnMut(&Report)) -> Result<Checked, Failure> {
        // The vectors' namespaces start with the deployment's namespace (an ACL that
        // allows it allows them), then a tag no other run shares.
        let base = format!("{}:{}", namespace(place), check_tag());
        {
            let runtime = runtime()?;
            runtime.block_on(async {
                builder(&place.url, &base)
                    .build()
                    .await
                    .map_err(|error| build_failure(place, error))
            })?;
        }
        CHECK_PLACES.begin(place.url.clone(), base.clone());
        let suite = Suite::core::<RedisCheck>().async_waits::<RedisCheck>();
        let reports = suite.run(on_report);
        CHECK_PLACES.end();
        let left_behind = clean_up(place, &base)?;
        Ok(Checked {
            reports,
            ran_in: format!("namespaces {base}-*"),
            left_behind,
        })
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::unreachable(format!("cannot start an async runtime: {error}")))
}

/// Deletes every key of the check's namespaces; how many are left after (0 unless the
/// server failed meanwhile or another client writes there).
fn clean_up(place: &Place, base: &str) -> Result<u64, Failure> {
    let failed = |error: redis::RedisError| {
        Failure::unreachable(format!(
            "the check ran, but cleaning up its keys ({base}-*) on {} failed: {error}",
            place.shown_url()
        ))
        .remedy(format!(
            "delete them by hand: redis-cli -u URL --scan --pattern '{base}-*' | xargs redis-cli -u URL del"
        ))
    };
    let client = redis::Client::open(place.url.as_str()).map_err(failed)?;
    let mut connection = client
        .get_connection_with_timeout(CONNECT_TIMEOUT)
        .map_err(failed)?;
    connection
        .set_read_timeout(Some(COMMAND_TIMEOUT))
        .map_err(failed)?;
    let pattern = format!("{}-*", escape_glob(base));
    let keys = |connection: &mut redis::Connection| -> redis::RedisResult<Vec<String>> {
        let mut cursor = 0u64;
        let mut keys = Vec::new();
        loop {
            let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(connection)?;
            keys.extend(found);
            if next == 0 {
                return Ok(keys);
            }
            cursor = next;
        }
    };
    for chunk in keys(&mut connection).map_err(failed)?.chunks(500) {
        let () = redis::cmd("DEL")
            .arg(chunk)
            .query::<u64>(&mut connection)
            .map(drop)
            .map_err(failed)?;
    }
    Ok(keys(&mut connection).map_err(failed)?.len() as u64)
}

/// `text` with Redis glob characters escaped, to match only itself.
fn escape_glob(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        if matches!(character, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(character);
    }
    escaped
}

/// Where the check in progress builds its vectors' backends.
static CHECK_PLACES: CheckPlaces<String> = CheckPlaces::new();

/// The Redis backend as the check drives it: through its async trait, on tokio, each
/// vector in a fresh namespace under the check's tag.
struct RedisCheck;

impl Target for RedisCheck {
    type Runtime = TokioRuntime;
    type Backend = Async<RedisBackend>;
    type Executor = AsyncIdempotency<RedisBackend>;

    fn build(settings: Settings) -> Async<RedisBackend> {
        let (url, namespace) = CHECK_PLACES.next('-');
        let builder = builder(&url, &namespace).reclaim_grace(settings.reclaim_grace);
        // Built inside the vector's runtime, so its connections run there.
        let handle = tokio::runtime::Handle::current();
        let backend = tokio::task::block_in_place(|| handle.block_on(builder.build()))
            .unwrap_or_else(|error| panic!("cannot connect to the Redis server: {error}"));
        // The vectors see its waiters' subscriptions (records held cannot be counted
        // exactly: Redis expires keys on its own schedule).
        Async::new(backend).watched_keys(RedisBackend::watched_keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_characters_match_only_themselves() {
        assert_eq!(escape_glob("idemkit:check-1"), "idemkit:check-1");
        assert_eq!(escape_glob("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
