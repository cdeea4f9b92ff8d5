#!/usr/bin/env python3
"""Measure the reference Python backend the way `store_vs_baseline` measures ours.

The reference is PyPI's idemkit 1.0.2, `idemkit.backends.memory.InMemoryBackend`
(asyncio). Install it first:

    pip install idemkit==1.0.2
    python3 bench/python_reference.py

Workload, as in the Rust benches: the backend holds 1,000 COMPLETED records (18-byte
keys, fingerprint "fp", body b"ok", a 7-day TTL); each operation claims a fresh unique
18-byte key and completes it with a TTL of zero. A `ManualClock` moves one microsecond
per operation, so the next claim's garbage collection drops the record again and the
number held stays at 1,000. Prints the median time per claim+complete over several
rounds (in thread CPU time, as the Rust figures), and writes it beside the Rust figures (target/criterion/idemkit/) for
bench/report.py. Pass `--held N` to measure another store size.
"""

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import time

from idemkit.backends.memory import InMemoryBackend, ManualClock

FINGERPRINT = "fp"
BODY = b"ok"
LEASE_SECONDS = 30.0
HELD_TTL_SECONDS = 7 * 86_400.0
TICK_SECONDS = 1e-6


def key(prefix: str, number: int) -> str:
    """An 18-byte key: a 2-byte prefix and 16 decimal digits."""
    return f"{prefix}{number:016d}"


async def claim_complete(backend: InMemoryBackend, name: str, ttl: float) -> None:
    claim = await backend.claim(name, FINGERPRINT, 1, LEASE_SECONDS)
    token = claim.our_claim_token
    if token is None:
        raise RuntimeError(f"{name} was not new: {claim.result}")
    done = await backend.complete(name, token, 200, {}, BODY, ttl)
    if not done:
        raise RuntimeError(f"complete of {name} was refused")


async def measure(held: int, ops: int, rounds: int) -> list[float]:
    clock = ManualClock(start=1_000.0)
    backend = InMemoryBackend(max_size=held + 16, clock=clock)
    for number in range(held):
        await claim_complete(backend, key("h-", number), HELD_TTL_SECONDS)
    per_op = []
    fresh = 0
    for _ in range(rounds):
        # Thread CPU time, as the Rust single-threaded figures use: time the thread was
        # not running (the machine is shared) is no cost of the operation.
        start = time.thread_time()
        for _ in range(ops):
            clock.advance(TICK_SECONDS)
            await claim_complete(backend, key("u-", fresh), 0.0)
            fresh += 1
        per_op.append((time.thread_time() - start) / ops)
    held_now = len(backend._records)  # the reference exposes no public count
    if not held <= held_now <= held + 1:
        raise RuntimeError(f"the store drifted to {held_now} records")
    return per_op


def results_dir() -> pathlib.Path:
    """Where the Rust benches write the figures criterion does not record."""
    if "CRITERION_HOME" in os.environ:
        base = pathlib.Path(os.environ["CRITERION_HOME"])
    elif "CARGO_TARGET_DIR" in os.environ:
        base = pathlib.Path(os.environ["CARGO_TARGET_DIR"]) / "criterion"
    else:
        base = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"
    return base / "idemkit"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", type=int, default=1_000)
    parser.add_argument("--ops", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    per_op = asyncio.run(measure(args.held, args.ops, args.rounds))
    median = statistics.median(per_op)
    print(f"reference InMemoryBackend (idemkit 1.0.2), {args.held} records held")
    print(f"  claim+complete: median {median * 1e6:.1f} us per operation "
          f"({1 / median:,.0f} per second) over {args.rounds} rounds of {args.ops}")
    print("  rounds (us): " + ", ".join(f"{value * 1e6:.1f}" for value in per_op))
    if args.held == 1_000:
        out = results_dir()
        out.mkdir(parents=True, exist_ok=True)
        figure = {"held": args.held, "median_ns": median * 1e9}
        (out / "python_reference.json").write_text(json.dumps(figure) + "\n")
        print(f"(written to {out / 'python_reference.json'})")


if __name__ == "__main__":
    main()
