#!/usr/bin/env python3
"""Print the issue-4 table from the latest `cargo bench` and reference run.

    cargo bench -p idemkit-core
    python3 bench/python_reference.py      # needs: pip install idemkit==1.0.2
    python3 bench/report.py

Reads criterion's medians (target/criterion/<group>/<bench>/new/estimates.json) and the
figures the custom-harness benches and the Python script write to
target/criterion/idemkit/*.json, and prints one Markdown table: each figure, what was
measured, the ratio, the goal and whether it is met. Honours CRITERION_HOME and
CARGO_TARGET_DIR as the benches do. Standard library only.
"""

import json
import os
import pathlib
import sys


def criterion_dir() -> pathlib.Path:
    if "CRITERION_HOME" in os.environ:
        return pathlib.Path(os.environ["CRITERION_HOME"])
    if "CARGO_TARGET_DIR" in os.environ:
        return pathlib.Path(os.environ["CARGO_TARGET_DIR"]) / "criterion"
    return pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"


ROOT = criterion_dir()
MISSING = []


def median_ns(bench: str) -> float | None:
    """Criterion's median time per iteration of `group/bench`, in nanoseconds."""
    path = ROOT / bench / "new" / "estimates.json"
    if not path.exists():
        MISSING.append(str(path))
        return None
    return json.loads(path.read_text())["median"]["point_estimate"]


def figure(name: str) -> dict | None:
    path = ROOT / "idemkit" / f"{name}.json"
    if not path.exists():
        MISSING.append(str(path))
        return None
    return json.loads(path.read_text())


def ns(value: float | None) -> str:
    if value is None:
        return "missing"
    if value >= 1e6:
        return f"{value / 1e6:.2f} ms"
    if value >= 1e3:
        return f"{value / 1e3:.2f} us"
    return f"{value:.0f} ns"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None:
        return None
    return numerator / denominator


def row(figure_name, measured, value, goal_text, met):
    shown = "missing" if value is None else value
    verdict = "?" if met is None else ("met" if met else "NOT met")
    return f"| {figure_name} | {measured} | {shown} | {goal_text} | {verdict} |"


def at_least(value, goal):
    return None if value is None else value >= goal


def at_most(value, goal):
    return None if value is None else value <= goal


# The figures that are the ratio of two criterion medians, both from one bench binary:
# (figure, numerator (bench, label), denominator (bench, label), unit, goal).
RATIOS = [
    ("claim+complete, `Store`, 1,000 held, vs baseline",
     ("store_vs_baseline/baseline", "baseline"), ("store_vs_baseline/store", "store"), "x", 2.0),
    ("the same through the blocking `InMemoryBackend`, one thread",
     ("backend_vs_baseline/baseline", "baseline"), ("backend_vs_baseline/backend", "backend"),
     "x", 1.5),
    ("`Store` claim+complete, 1,000,000 held vs 1,000",
     ("store_scaling/held/1000", "1k"), ("store_scaling/held/1000000", "1M"), "", 0.6),
    ("two threads on distinct keys vs one (throughput, time per operation)",
     ("backend_threads/threads/1", "1 thread"), ("backend_threads/threads/2", "2 threads"),
     "x", 1.4),
    ("replay of a 1 MiB body vs a 10-byte body",
     ("replay/body/10B", "10 B"), ("replay/body/1MiB", "1 MiB"), "", 0.9),
]


def main() -> int:
    rows = []

    for name, numerator, denominator, unit, goal in RATIOS:
        top, bottom = median_ns(numerator[0]), median_ns(denominator[0])
        value = ratio(top, bottom)
        rows.append(row(
            name,
            f"{denominator[1]} {ns(bottom)}, {numerator[1]} {ns(top)}",
            None if value is None else f"{value:.2f}{unit}",
            f">= {goal}{unit}", at_least(value, goal)))

    store = median_ns("store_vs_baseline/store")
    memory = figure("memory_per_record")
    requested = memory and memory["requested_bytes"]
    resident = memory and memory["resident_bytes"]
    rows.append(row(
        "memory per COMPLETED record (requested bytes, as tracemalloc counts)",
        "missing" if memory is None else f"{requested:.1f} B ({memory['records']:,.0f} records)",
        None if memory is None else f"{requested:.1f} B",
        "<= 200 B", at_most(requested, 200.0)))
    rows.append(row(
        "memory per COMPLETED record (resident set growth)",
        "missing" if memory is None else f"{resident:.1f} B",
        None if memory is None else f"{resident:.1f} B",
        "<= 200 B", at_most(resident, 200.0)))

    wake = figure("wake_latency")
    p99 = wake and wake["p99_us"]
    rows.append(row(
        "blocking waiter woken by `complete`, p99",
        "missing" if wake is None
        else f"p50 {wake['p50_us']:.1f} us, p99 {p99:.1f} us ({wake['wakeups']:,.0f} wake-ups)",
        None if wake is None else f"{p99:.1f} us",
        "<= 200 us", at_most(p99, 200.0)))

    python = figure("python_reference")
    python_ns = python and python["median_ns"]
    speedup = ratio(python_ns, store)
    rows.append(row(
        "`Store` vs the reference Python `InMemoryBackend` (idemkit 1.0.2), 1,000 held",
        f"Python {ns(python_ns)}, store {ns(store)}",
        None if speedup is None else f"{speedup:,.0f}x",
        ">= 1000x", at_least(speedup, 1000.0)))

    print("| figure | measured (medians) | ratio / value | goal | |")
    print("|---|---|---|---|---|")
    for line in rows:
        print(line)
    if MISSING:
        print("\nmissing results (run the benches first):", file=sys.stderr)
        for path in MISSING:
            print(f"  {path}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
