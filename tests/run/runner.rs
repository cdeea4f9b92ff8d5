//! The run-time runner: the same vectors as the `#[test]` macros, run one by one and
//! reported as each finishes; a failing vector is reported with its message and the run
//! goes on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit_conformance::backend::Async;
use idemkit_conformance::runner::{Report, Suite};
use idemkit_conformance::runtimes::TokioRuntime;
use idemkit_conformance::targets::InMemoryTokio;
use idemkit_conformance::{Settings, Target};
use idemkit_core::{
    AsyncIdempotency, Backend, Claim, ClaimToken, Error, InMemoryBackend, Record, Response, Timer,
};
use idemkit_tokio::TokioTimer;

/// Every vector of every group the in-memory backend supports, listed in suite order,
/// each passes, and each report arrives as its vector finishes.
#[test]
fn every_vector_runs_and_passes_on_the_in_memory_backend() {
    let suite = Suite::core::<InMemoryTokio>()
        .manual_time::<InMemoryTokio>()
        .exact_capacity::<InMemoryTokio>()
        .async_waits::<InMemoryTokio>()
        .purger::<InMemoryTokio>();
    let names: Vec<&str> = suite.vectors().iter().map(|vector| vector.name()).collect();
    assert_eq!(names.first(), Some(&"atomic_claim"));
    assert!(names.contains(&"manual_clock_never_expires_duration_max"));
    assert!(names.contains(&"purger_drops_expired_records_of_an_idle_backend"));
    // 9 claims + 4 waits + 3 real time + 15 executor; 11 + 4 manual time; 2 + 1
    // capacity; 1 dropped wait; 1 purger.
    assert_eq!(names.len(), 51);

    let mut streamed = Vec::new();
    let reports = suite.run(|report| streamed.push((report.name, Instant::now())));
    assert_eq!(reports.len(), names.len());
    let failed: Vec<&Report> = reports.iter().filter(|report| !report.passed()).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(
        streamed.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        names
    );
    assert!(
        streamed.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "reported in order, as each finished"
    );
}

/// A backend that says it stored a response but forgets it: a replay finds nothing.
#[derive(Clone)]
struct Forgetful(InMemoryBackend);

impl Backend for Forgetful {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        version: u32,
        lease_ttl: Duration,
    ) -> Result<Claim, Error> {
        Backend::claim(&self.0, key, fingerprint, version, lease_ttl).await
    }

    async fn complete(
        &self,
        key: &str,
        token: &ClaimToken,
        _response: Arc<Response>,
        _expires_after: Duration,
    ) -> Result<bool, Error> {
        // Says stored, but drops the key instead.
        Backend::release(&self.0, key, token).await
    }

    async fn release(&self, key: &str, token: &ClaimToken) -> Result<bool, Error> {
        Backend::release(&self.0, key, token).await
    }

    async fn renew(
        &self,
        key: &str,
        token: &ClaimToken,
        lease_ttl: Duration,
    ) -> Result<bool, Error> {
        Backend::renew(&self.0, key, token, lease_ttl).await
    }

    async fn wait_for_completion(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Record>, Error> {
        Backend::wait_for_completion(&self.0, key, timeout).await
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, Error> {
        Backend::get(&self.0, key).await
    }

    fn now(&self) -> Instant {
        Backend::now(&self.0)
    }

    fn timer(&self) -> Arc<dyn Timer> {
        Backend::timer(&self.0)
    }
}

struct ForgetfulTokio;

impl Target for ForgetfulTokio {
    type Runtime = TokioRuntime;
    type Backend = Async<Forgetful>;
    type Executor = AsyncIdempotency<Forgetful>;

    fn build(settings: Settings) -> Async<Forgetful> {
        Async::new(Forgetful(
            InMemoryBackend::builder()
                .reclaim_grace(settings.reclaim_grace)
                .timer(TokioTimer)
                .build(),
        ))
    }
}

/// A backend that loses results fails the vectors that replay one, each reported with
/// the assertion that failed and where; the vectors after a failure still run.
#[test]
fn a_backend_that_loses_results_is_reported_failing_vector_by_vector() {
    let suite = Suite::core::<ForgetfulTokio>();
    let vectors: Vec<_> = suite
        .vectors()
        .iter()
        .filter(|vector| ["complete_then_replay", "atomic_claim"].contains(&vector.name()))
        .copied()
        .collect();
    assert_eq!(vectors.len(), 2);
    let replay = vectors
        .iter()
        .find(|vector| vector.name() == "complete_then_replay")
        .unwrap()
        .run();
    assert_eq!(replay.group, "claims");
    let message = replay.outcome.expect_err("a lost result fails the replay");
    assert!(message.contains(".rs:"), "says where: {message}");
    let claim = vectors
        .iter()
        .find(|vector| vector.name() == "atomic_claim")
        .unwrap()
        .run();
    assert!(claim.passed(), "claims alone still work: {claim:?}");
}
