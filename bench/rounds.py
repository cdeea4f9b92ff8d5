#!/usr/bin/env python3
"""Run the figure benches in interleaved rounds and keep each round's results.

    python3 bench/rounds.py                    # 5 rounds of every figure bench
    python3 bench/rounds.py --rounds 3 steady_store steady_threads
    python3 bench/report.py --rounds           # medians over the rounds, and the spread

One round runs each bench binary once, in turn; the next round starts over. So every
figure's rounds are spread over the whole session instead of back to back, and a spell
of load from another job on this shared machine hits one round of each figure rather
than every round of one. Each figure's ratio is computed within a round, from the two
medians one bench binary measured side by side. After each bench the round's criterion
medians (`<group>/<bench>/new/estimates.json`) and custom figures (`idemkit/*.json`) are
copied to target/criterion/rounds/<round>/, and the 1-minute load average before each
bench to target/criterion/rounds/load.txt. Standard library only.
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys

# Every bench that writes a figure the report reads, in the order a round runs them.
BENCHES = [
    "steady_store",
    "steady_backend",
    "steady_threads",
    "memory_per_record",
    "store_vs_baseline",
    "backend_vs_baseline",
    "store_scaling",
    "backend_threads",
    "replay",
    "wake_latency",
]


def criterion_dir() -> pathlib.Path:
    if "CRITERION_HOME" in os.environ:
        return pathlib.Path(os.environ["CRITERION_HOME"])
    if "CARGO_TARGET_DIR" in os.environ:
        return pathlib.Path(os.environ["CARGO_TARGET_DIR"]) / "criterion"
    return pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"


def load_average() -> str:
    return pathlib.Path("/proc/loadavg").read_text().split()[0]


def keep(root: pathlib.Path, into: pathlib.Path) -> None:
    """Copies the latest results under `root` (not earlier rounds) into `into`."""
    for estimates in root.glob("**/new/estimates.json"):
        relative = estimates.parent.parent.relative_to(root)
        if relative.parts[0] == "rounds":
            continue
        target = into / relative / "estimates.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(estimates, target)
    figures = root / "idemkit"
    if figures.exists():
        shutil.copytree(figures, into / "idemkit", dirs_exist_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("benches", nargs="*", default=BENCHES)
    args = parser.parse_args()

    root = criterion_dir()
    rounds = root / "rounds"
    if rounds.exists():
        shutil.rmtree(rounds)
    rounds.mkdir(parents=True)
    cargo = ["cargo", "bench", "-p", "idemkit-core"]
    subprocess.run(cargo + ["--no-run"], check=True)
    loads = []
    for number in range(1, args.rounds + 1):
        line = [f"round {number}:"]
        for bench in args.benches:
            line.append(f"{bench} {load_average()}")
            print(f"== round {number}, {bench} (load {load_average()})", flush=True)
            subprocess.run(cargo + ["--bench", bench], check=True)
            keep(root, rounds / str(number))
        loads.append(", ".join(line))
        (rounds / "load.txt").write_text("\n".join(loads) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
