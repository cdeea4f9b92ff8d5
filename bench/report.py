#!/usr/bin/env python3
"""Print the table of every figure from the latest `cargo bench` and reference run.

    cargo bench -p idemkit-core
    python3 bench/python_reference.py      # needs: pip install idemkit==1.0.2
    python3 bench/report.py
    python3 bench/report.py --rounds       # after bench/rounds.py: medians and spread

Reads criterion's medians (target/criterion/<group>/<bench>/new/estimates.json) and the
figures the custom-harness benches and the Python script write to
target/criterion/idemkit/*.json, and prints one Markdown table: each figure, what was
measured, the ratio, the goal and whether it is met. With `--rounds` it reads instead the
copies bench/rounds.py kept of each round (target/criterion/rounds/<n>/), computes every
figure within each round (so each ratio still comes from one run of one bench binary),
and prints the median over the rounds, the lowest and highest, and each round's value.
Honours CRITERION_HOME and CARGO_TARGET_DIR as the benches do. Standard library only.
"""

import json
import os
import pathlib
import statistics
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
        # A round's copy keeps the file without criterion's `new/` level.
        path = ROOT / bench / "estimates.json"
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
    ("steady state: `Store` vs FIFO baseline, 1,000 held",
     ("steady_store/baseline/1000", "baseline"), ("steady_store/store/1000", "store"), "x", 2.0),
    ("steady state: `Store` vs FIFO baseline, 1,000,000 held",
     ("steady_store/baseline/1000000", "baseline"), ("steady_store/store/1000000", "store"),
     "x", 2.0),
    ("steady state: blocking backend vs FIFO baseline, system clock, 1 ms TTL",
     ("steady_backend/baseline", "baseline"), ("steady_backend/backend", "backend"), "x", 1.5),
]


class Figure:
    """One row: what was measured, its value (a number, for medians over rounds), the
    goal and the test of it."""

    def __init__(self, name, measured, value, fmt, goal_text, met):
        self.name, self.measured, self.value = name, measured, value
        self.fmt, self.goal_text, self.met = fmt, goal_text, met

    def shown(self, value=None):
        value = self.value if value is None else value
        return "missing" if value is None else self.fmt(value)


def figures() -> list[Figure]:
    """Every figure, from the results under ROOT."""
    rows = []
    for name, numerator, denominator, unit, goal in RATIOS:
        top, bottom = median_ns(numerator[0]), median_ns(denominator[0])
        rows.append(Figure(
            name, f"{denominator[1]} {ns(bottom)}, {numerator[1]} {ns(top)}",
            ratio(top, bottom), lambda v, unit=unit: f"{v:.2f}{unit}",
            f">= {goal}{unit}", lambda v, goal=goal: at_least(v, goal)))

    # Two threads on one backend vs one, as a share of what two threads with nothing
    # shared gain over one on this machine: each scaling, and the figure, from one run.
    backend_1, backend_2 = median_ns("steady_threads/backend/1"), median_ns(
        "steady_threads/backend/2")
    ceiling_1, ceiling_2 = median_ns("steady_threads/ceiling/1"), median_ns(
        "steady_threads/ceiling/2")
    scaling, ceiling = ratio(backend_1, backend_2), ratio(ceiling_1, ceiling_2)
    rows.append(Figure(
        "steady state: two threads on one backend vs one, share of the machine's ceiling",
        "backend 1 thread {}, 2 threads {} ({}); ceiling 1 thread {}, 2 threads {} ({})".format(
            ns(backend_1), ns(backend_2),
            "missing" if scaling is None else f"{scaling:.2f}x",
            ns(ceiling_1), ns(ceiling_2),
            "missing" if ceiling is None else f"{ceiling:.2f}x"),
        ratio(scaling, ceiling), lambda v: f"{v:.2f}", ">= 0.9",
        lambda v: at_least(v, 0.9)))

    # Two threads on one backend against two on the shared-store ceiling: 64 bare
    # mutexed maps doing the baseline's work, every key hashed to one, measured in the
    # same run. Throughput share (ceiling time / backend time per operation), and the
    # share of the ceiling's own gain from a second thread.
    shared_1, shared_2 = median_ns("steady_threads/shared/1"), median_ns(
        "steady_threads/shared/2")
    rows.append(Figure(
        "steady state: two threads on one backend, share of the shared-store ceiling",
        f"backend 2 threads {ns(backend_2)}, shared ceiling 2 threads {ns(shared_2)}",
        ratio(shared_2, backend_2), lambda v: f"{v:.2f}", ">= 0.9",
        lambda v: at_least(v, 0.9)))
    shared_scaling = ratio(shared_1, shared_2)
    rows.append(Figure(
        "(scaling) two threads vs one on one backend, share of the shared ceiling's",
        "backend {}; shared ceiling 1 thread {}, 2 threads {} ({})".format(
            "missing" if scaling is None else f"{scaling:.2f}x",
            ns(shared_1), ns(shared_2),
            "missing" if shared_scaling is None else f"{shared_scaling:.2f}x"),
        ratio(scaling, shared_scaling), lambda v: f"{v:.2f}", "(none)", lambda v: None))

    # Where the two-thread limit is: the same backend code with nothing shared, and
    # what one cache line costs to move between the cores.
    private_2 = median_ns("steady_threads/private/2")
    handoff = median_ns("steady_threads/line_handoff")
    rows.append(Figure(
        "(limit) two threads each on a backend of its own vs one thread on one backend",
        f"1 thread {ns(backend_1)}, 2 private backends {ns(private_2)}",
        ratio(backend_1, private_2), lambda v: f"{v:.2f}x", "(none)", lambda v: None))
    rows.append(Figure(
        "(limit) one cache line's round trip between the two cores",
        f"{ns(handoff)}", handoff, lambda v: f"{v:.0f} ns", "(none)", lambda v: None))

    store = median_ns("store_vs_baseline/store")
    memory = figure("memory_per_record")

    def field(name):
        return None if memory is None else memory.get(name)

    requested, resident = field("requested_bytes"), field("resident_bytes")
    static, alone = field("static_body_resident"), field("responses_alone_resident")
    formatted = field("formatted_body_resident")
    rows.append(Figure(
        "memory per COMPLETED record (requested bytes, as tracemalloc counts)",
        "missing" if memory is None
        else f"{requested:.1f} B ({memory['records']:,.0f} records, body built from a Vec)",
        requested, lambda v: f"{v:.1f} B", "<= 200 B", lambda v: at_most(v, 200.0)))
    rows.append(Figure(
        "memory per COMPLETED record (resident set growth)",
        "missing" if resident is None else
        f"{resident:.1f} B; static body {static:.1f} B; "
        f"the caller's Arc<Response> and body alone {alone:.1f} B"
        + ("" if formatted is None else f"; a 71-byte formatted body {formatted:.1f} B"),
        resident, lambda v: f"{v:.1f} B", "<= 200 B", lambda v: at_most(v, 200.0)))

    wake = figure("wake_latency")
    p99 = wake and wake["p99_us"]
    rows.append(Figure(
        "blocking waiter woken by `complete`, p99",
        "missing" if wake is None
        else f"p50 {wake['p50_us']:.1f} us, p99 {p99:.1f} us ({wake['wakeups']:,.0f} wake-ups)",
        p99, lambda v: f"{v:.1f} us", "<= 200 us", lambda v: at_most(v, 200.0)))

    python = figure("python_reference")
    python_ns = python and python["median_ns"]
    rows.append(Figure(
        "`Store` vs the reference Python `InMemoryBackend` (idemkit 1.0.2), 1,000 held",
        f"Python {ns(python_ns)}, store {ns(store)}",
        ratio(python_ns, store), lambda v: f"{v:,.0f}x", ">= 1000x",
        lambda v: at_least(v, 1000.0)))
    return rows


def verdict(met):
    return "?" if met is None else ("met" if met else "NOT met")


def latest() -> int:
    print("| figure | measured (medians) | ratio / value | goal | |")
    print("|---|---|---|---|---|")
    for fig in figures():
        print(f"| {fig.name} | {fig.measured} | {fig.shown()} | {fig.goal_text} "
              f"| {verdict(fig.met(fig.value))} |")
    return 0


def rounds() -> int:
    """The median of each figure over the rounds bench/rounds.py kept, and its spread."""
    global ROOT
    base = ROOT / "rounds"
    dirs = sorted((d for d in base.iterdir() if d.is_dir()), key=lambda d: int(d.name)) \
        if base.exists() else []
    if not dirs:
        print(f"no rounds under {base}: run bench/rounds.py first", file=sys.stderr)
        return 1
    per_round = []
    for directory in dirs:
        ROOT = directory
        per_round.append(figures())
    MISSING.clear()
    print(f"| figure | median of {len(dirs)} rounds | lowest - highest | each round "
          "| goal | |")
    print("|---|---|---|---|---|---|")
    for index, fig in enumerate(per_round[0]):
        values = [r[index].value for r in per_round]
        present = [v for v in values if v is not None]
        if not present:
            print(f"| {fig.name} | missing | | | {fig.goal_text} | ? |")
            continue
        middle = statistics.median(present)
        each = ", ".join(fig.shown(v) if v is not None else "-" for v in values)
        print(f"| {fig.name} | {fig.shown(middle)} | {fig.shown(min(present))} - "
              f"{fig.shown(max(present))} | {each} | {fig.goal_text} "
              f"| {verdict(fig.met(middle))} |")
    load = base / "load.txt"
    if load.exists():
        print("\nload average (1 min) before each bench, per round:")
        print(load.read_text().rstrip())
    return 0


def main() -> int:
    status = rounds() if "--rounds" in sys.argv[1:] else latest()
    if MISSING:
        print("\nmissing results (run the benches first):", file=sys.stderr)
        for path in MISSING:
            print(f"  {path}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
