//! What `redis_pairs` and the `pairs_loop` example both run: a pair of ours through the
//! backend, the pair of `plain_claim_minimum`, and the bench's own Lua functions (the
//! anchor and the minimums) in a library of their own.

use std::sync::Arc;
use std::time::Duration;

use idemkit_core::{Backend, Claim, Response};
use idemkit_redis::RedisBackend;
use idemkit_redis::redis::{self, aio::ConnectionManager};

/// The lease of every claim of ours.
pub const LEASE: Duration = Duration::from_secs(30);
/// How long each completed record of ours is kept.
pub const TTL: Duration = Duration::from_secs(60);

/// A pair of ours: `backend` claims the fresh key numbered `n` and completes it with
/// `response`.
pub async fn idemkit_pair(backend: &RedisBackend, response: &Arc<Response>, n: u64) {
    let key = format!("pair-{n}");
    let Ok(Claim::New(token)) = backend.claim(&key, "fp", 1, LEASE).await else {
        panic!("{key} was not claimed as new");
    };
    let stored = backend.complete(&key, &token, response.clone(), TTL).await;
    assert!(matches!(stored, Ok(true)), "{key} was not stored");
}

/// `FCALL function 1 key value px` of one of the bench's own functions, which answer the
/// server's time.
pub async fn bench_function(
    connection: &mut ConnectionManager,
    function: &str,
    key: &str,
    value: &str,
    px: u64,
) {
    let now: i64 = redis::cmd("FCALL")
        .arg(function)
        .arg(1)
        .arg(key)
        .arg(value)
        .arg(px)
        .query_async(connection)
        .await
        .unwrap_or_else(|error| panic!("{function}: {error}"));
    assert!(now > 0, "{function} answered {now}");
}

/// A claim by one plain `SET NX PX GET` and a completion by the least a function of our
/// design can do (the claim's time read from its key's expiry, no one to wake).
pub async fn plain_claim_minimum_pair(mut connection: ConnectionManager, n: u64) {
    let key = format!("plain-minimum:{{{n}}}");
    let claim = "c".repeat(135);
    let found: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(&claim)
        .arg("NX")
        .arg("PX")
        .arg(90_000)
        .arg("GET")
        .query_async(&mut connection)
        .await
        .expect("SET NX GET");
    assert!(found.is_none(), "{key} was not free");
    let result = format!("{claim}ok");
    bench_function(
        &mut connection,
        "idemkit_bench_complete_client_claim",
        &key,
        &result,
        60_000,
    )
    .await;
}

/// The anchor's function: it returns 1 and does nothing else.
pub const TRIVIAL_FUNCTION: &str = "idemkit_bench_trivial";
/// The anchor's function and the minimum functions, in a library of the bench's own.
pub const LIBRARY: &str = r"#!lua name=idemkit_bench
redis.register_function('idemkit_bench_trivial', function() return 1 end)
redis.register_function('idemkit_bench_claim', function(keys, args)
  local time = redis.call('TIME')
  redis.call('SET', keys[1], args[1], 'NX', 'PX', args[2])
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end)
redis.register_function('idemkit_bench_complete', function(keys, args)
  local time = redis.call('TIME')
  redis.call('GET', keys[1])
  redis.call('SET', keys[1], args[1], 'XX', 'PX', args[2])
  redis.call('PUBLISH', keys[1], 'completed')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end)
redis.register_function('idemkit_bench_complete_client_claim', function(keys, args)
  redis.call('PEXPIRETIME', keys[1])
  local time = redis.call('TIME')
  redis.call('SET', keys[1], args[1], 'XX', 'PX', args[2], 'GET')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end)";
