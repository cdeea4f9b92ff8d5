#!/usr/bin/env python3
"""Measure the reference Python PostgreSQL backend: claim+complete pairs per second.

The reference is PyPI's idemkit 1.0.2, `idemkit.backends.postgres.PostgresBackend`
(asyncio, asyncpg). Install it first:

    pip install "idemkit[postgres]==1.0.2"
    python3 bench/python_postgres_reference.py --url postgres://postgres@127.0.0.1:5432/test

Workload, as in the Rust bench (idemkit-postgres/benches/pg_pairs.rs): 64 concurrent
tasks share one backend; each claims a fresh key, completes it with a 2-byte body and a
60 s TTL, and repeats for the round's duration. The script creates its own table (with
the reference's `init_pg`) and drops it at the end. Prints one JSON object on the last
line: {"pairs_per_second": [one per round], "median": ...}.
"""

import argparse
import asyncio
import json
import os
import statistics
import time

import asyncpg
from idemkit.backends.postgres import PostgresBackend, init_pg

LEASE_SECONDS = 30.0
TTL_SECONDS = 60.0


async def worker(backend, prefix, task, stop_at, done):
    number = 0
    while time.perf_counter() < stop_at:
        name = f"{prefix}{task}-{number}"
        number += 1
        claim = await backend.claim(name, "fp", 1, LEASE_SECONDS)
        token = claim.our_claim_token
        if token is None:
            raise RuntimeError(f"{name} was not new")
        if not await backend.complete(name, token, 200, {}, b"ok", TTL_SECONDS):
            raise RuntimeError(f"complete of {name} was refused")
        done[0] += 1


async def one_round(backend, prefix, seconds, tasks):
    done = [0]
    start = time.perf_counter()
    await asyncio.gather(
        *(worker(backend, prefix, i, start + seconds, done) for i in range(tasks))
    )
    return done[0] / (time.perf_counter() - start)


async def measure(url, seconds, rounds, tasks, pool):
    table = f"pyref_{os.getpid()}"
    await init_pg(url, table=table)
    backend = PostgresBackend.from_url(url, table=table, min_size=pool, max_size=pool)
    try:
        await one_round(backend, "warm-", min(1.0, seconds), tasks)
        return [
            await one_round(backend, f"r{n}-", seconds, tasks) for n in range(rounds)
        ]
    finally:
        await backend.aclose()
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(f"DROP TABLE IF EXISTS {table}")
        finally:
            await conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--seconds", type=float, default=10.0, help="per round")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--pool", type=int, default=64)
    args = parser.parse_args()
    per_round = asyncio.run(
        measure(args.url, args.seconds, args.rounds, args.tasks, args.pool)
    )
    print(json.dumps({"pairs_per_second": per_round, "median": statistics.median(per_round)}))


if __name__ == "__main__":
    main()
