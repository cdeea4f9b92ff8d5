#!/usr/bin/env python3
"""Measure the reference Python Redis backend: claim+complete pairs per second.

The reference is PyPI's idemkit 1.0.2, `idemkit.backends.redis.RedisBackend` (asyncio,
redis-py). Install it first:

    pip install "idemkit[redis]==1.0.2"
    python3 bench/python_redis_reference.py --url redis://127.0.0.1:PORT/

Workload, as in the Rust Redis bench (idemkit-redis/benches/redis_pairs.rs): 64
concurrent tasks share one backend; each claims a fresh unique key, completes it with a
2-byte body and a 60 s TTL, and repeats, until the round's pairs are done. A round's
figure is pairs per second of wall time (the server's and the client's work both count,
as they do for the Rust figure). Prints one JSON object on the last line:
{"pairs_per_second": [one per round], "median": ...}. Run it against a server nobody
else is loading; the Rust bench starts its own and runs this script against it.
"""

import argparse
import asyncio
import json
import os
import statistics
import time

from idemkit.backends.redis import RedisBackend

FINGERPRINT = "fp"
BODY = b"ok"
LEASE_SECONDS = 30.0
TTL_SECONDS = 60.0


async def worker(backend: RedisBackend, prefix: str, numbers, done: list) -> None:
    for number in numbers:
        name = f"{prefix}{number:016d}"
        claim = await backend.claim(name, FINGERPRINT, 1, LEASE_SECONDS)
        token = claim.our_claim_token
        if token is None:
            raise RuntimeError(f"{name} was not new: {claim.result}")
        if not await backend.complete(name, token, 200, {}, BODY, TTL_SECONDS):
            raise RuntimeError(f"complete of {name} was refused")
        done[0] += 1


async def one_round(backend: RedisBackend, prefix: str, pairs: int, tasks: int) -> float:
    # Task i takes numbers i, i + tasks, i + 2 * tasks...: every key is fresh.
    done = [0]
    start = time.perf_counter()
    await asyncio.gather(
        *(worker(backend, prefix, range(i, pairs, tasks), done) for i in range(tasks))
    )
    elapsed = time.perf_counter() - start
    if done[0] != pairs:
        raise RuntimeError(f"{done[0]} pairs done of {pairs}")
    return pairs / elapsed


async def measure(url: str, pairs: int, rounds: int, tasks: int) -> list[float]:
    namespace = f"pyref-{os.getpid()}"
    backend = RedisBackend.from_url(url, namespace=namespace)
    try:
        # Warm up: load the scripts and open the pool's connections.
        await one_round(backend, "warm-", min(pairs, 10 * tasks), tasks)
        return [
            await one_round(backend, f"r{round_number}-", pairs, tasks)
            for round_number in range(rounds)
        ]
    finally:
        await backend.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="redis://127.0.0.1:PORT/")
    parser.add_argument("--pairs", type=int, default=5_000, help="pairs per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=64)
    args = parser.parse_args()
    per_round = asyncio.run(measure(args.url, args.pairs, args.rounds, args.tasks))
    median = statistics.median(per_round)
    print(
        f"reference RedisBackend (idemkit 1.0.2), {args.tasks} tasks: median "
        f"{median:,.0f} pairs/s over {args.rounds} rounds of {args.pairs}"
    )
    print(json.dumps({"pairs_per_second": per_round, "median": median}))


if __name__ == "__main__":
    main()
