#!/usr/bin/env python3
"""Where a request's time goes on the wrk path: the server sampled while wrk runs.

    python3 bench/wrk/profile.py                  # the quick start and the floor, 3 rounds
    python3 bench/wrk/profile.py --rounds 5 --seconds 8 --modes replay

run.py gives the rates; this gives the time behind them, in nanoseconds of server CPU
per request, measured on the real path rather than counted under valgrind (which runs
SHA-256 in software, about 10,000 instructions a replay where the host's SHA
instructions take about 150 ns, and counts a clock read or a contended reference count
as a few instructions where each costs 20 to 40 ns here).

Builds `axum_quick_start` and `wrk_floor` in release with frame pointers and line tables
(in target/profile, so run.py's builds are untouched), then, for each round, each server
and each mode, starts the server, stores the replay keys, and records it with
`perf record -e cpu-clock -g` (a software clock: it needs no hardware counters, which
virtual machines often lack) while `wrk -t2 -c64` sends bench/wrk/charges.lua's requests.
Each sample stands for its period of CPU time; over the requests wrk completed, that
gives per request: the server's CPU, its part in the kernel (TCP, scheduling) and in
the process; the preemptions the server suffered (involuntary context switches, from
/proc) and its system calls (`perf stat`); the time inside the layer's request future
(idemkit's `handle`, or the floor's `call`), with the functions it calls directly; and
the process's time outside that future, by function, where the two servers differ
most. Medians over the rounds.
With requests without a key among the modes, the same figures are also given as what a
keyed request costs beyond one without a key, round by round, then the median.
Needs perf (`apt-get install linux-perf`) and wrk; standard library only.
"""

import argparse
import collections
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ left beside the scripts
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import run as wrkrun  # noqa: E402  (the shared server and wrk helpers)

# The frame of each layer's request future: what a request costs inside the layer.
LAYER_FRAMES = {
    "axum_quick_start": re.compile(r"^idemkit_tower::handle::handle::\{\{closure\}\}$"),
    "wrk_floor": re.compile(r"^<\S*floor::Floor<S> as tower_service::Service<.*>>::call::\{\{closure\}\}$"),
}
SAMPLES_PER_SECOND = 2999


def build() -> pathlib.Path:
    target = wrkrun.ROOT / "target" / "profile"
    env = dict(
        os.environ,
        CARGO_TARGET_DIR=str(target),
        CARGO_PROFILE_RELEASE_DEBUG="line-tables-only",
        RUSTFLAGS="-C force-frame-pointers=yes",
    )
    subprocess.run(
        ["cargo", "build", "--release", "-p", "idemkit-tower"]
        + ["--example", "axum_quick_start", "--example", "wrk_floor"],
        cwd=wrkrun.ROOT,
        env=env,
        check=True,
    )
    return target / "release" / "examples"


def preemptions(pid: int) -> int:
    """The involuntary context switches of every thread of process `pid` so far."""
    total = 0
    for status in pathlib.Path(f"/proc/{pid}/task").glob("*/status"):
        match = re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", status.read_text(), re.M)
        total += int(match.group(1)) if match else 0
    return total


def count_system_calls(pid: int, out: pathlib.Path) -> subprocess.Popen:
    """`perf stat` counting the system calls of process `pid` into `out` until stopped
    (SIGINT); `system_calls` reads the count."""
    return subprocess.Popen(
        ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p", str(pid), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def system_calls(out: pathlib.Path) -> float:
    """The count `count_system_calls` wrote to `out`; NaN where perf could not count
    them (a kernel without the tracepoint, or without the rights to it), so the rest of
    the profile still stands."""
    lines = out.read_text().splitlines() if out.exists() else []
    for line in lines:
        fields = line.split(",")
        if len(fields) > 2 and fields[2] == "raw_syscalls:sys_enter" and fields[0].isdigit():
            return float(fields[0])
    return float("nan")


def frames(stack: str) -> list:
    """(symbol, object) of each frame of one `perf script` sample, innermost first."""
    found = []
    for line in stack.splitlines()[1:]:
        match = re.match(r"\s*[0-9a-f]+ (.*?)(?:\+0x[0-9a-f]+)? \((.*)\)$", line)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def sample(binary: pathlib.Path, mode: str, seconds: int) -> dict:
    """One server, one mode: nanoseconds of server CPU per request, by part."""
    server = subprocess.Popen([str(binary)], stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as scratch:
        data = pathlib.Path(scratch) / "perf.data"
        try:
            wrkrun.wait_listening(server)
            for warm in ["replay", mode]:
                wrkrun.wrk(warm, 0 if warm == "replay" else 1, 1, server.pid)
            switches = preemptions(server.pid)
            counter = count_system_calls(server.pid, pathlib.Path(scratch) / "calls.csv")
            perf = subprocess.Popen(
                ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(SAMPLES_PER_SECOND)]
                + ["-g", "-p", str(server.pid), "-o", str(data)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.5)  # perf attaches before the load starts
            figure = wrkrun.wrk(mode, 2, seconds, server.pid)
            switches = preemptions(server.pid) - switches
            for profiler in [perf, counter]:
                profiler.send_signal(signal.SIGINT)
                profiler.wait()
            calls = system_calls(pathlib.Path(scratch) / "calls.csv")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait()
        script = subprocess.run(
            ["perf", "script", "-i", str(data), "-F", "period,ip,sym,dso"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    requests = figure.requests
    layer = LAYER_FRAMES[binary.name]
    parts = collections.Counter()
    for stack in script.split("\n\n"):
        stack = stack.strip("\n")
        if not stack:
            continue
        period = int(stack.split(None, 1)[0])
        stack_frames = frames(stack)
        if not stack_frames:
            continue
        parts["server"] += period
        in_kernel = stack_frames[0][1].startswith("[kernel")
        parts["kernel" if in_kernel else "process"] += period
        for depth, (symbol, _) in enumerate(stack_frames):
            if layer.match(symbol):
                parts["layer"] += period
                callee = stack_frames[depth - 1][0] if depth else "(its own code)"
                parts["layer > " + callee] += period
                break
        else:
            if not in_kernel:
                # Outside the layer's future, by the function the sample fell in. The
                # allocator's samples land here too: glibc's frames do not name their
                # callers.
                parts["outside > " + stack_frames[0][0]] += period
    per_request = {name: ns / requests for name, ns in parts.items()}
    per_request["rate"] = figure.rate
    per_request["preemptions"] = switches / requests
    per_request["calls"] = calls / requests
    return per_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--modes", default="bare,replay", help="comma-separated: bare, new, replay")
    parser.add_argument("--callees", type=int, default=12, help="how many of the layer's callees to show")
    args = parser.parse_args()
    modes = args.modes.split(",")
    if unknown := set(modes) - set(wrkrun.MODES):
        sys.exit(f"unknown modes: {sorted(unknown)}")
    for tool, package in [("perf", "linux-perf"), ("wrk", "wrk")]:
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed: apt-get install {package}")
    if wrkrun.port_in_use():
        sys.exit("127.0.0.1:3000 is taken: stop what listens there first")
    examples = build()
    servers = [examples / "axum_quick_start", examples / "wrk_floor"]
    results = collections.defaultdict(list)
    for round_ in range(args.rounds):
        shift = round_ % len(servers)
        for binary in servers[shift:] + servers[:shift]:
            for mode in modes:
                figures = sample(binary, mode, args.seconds)
                results[(binary.name, mode)].append(figures)
                print(
                    f"round {round_ + 1}, {binary.name}, {mode}: {figures['rate']:,.0f}/s,"
                    f" {figures['server']:,.0f} ns of server CPU a request",
                    flush=True,
                )

    def median(runs: list, name: str) -> float:
        return statistics.median(run.get(name, 0.0) for run in runs)

    print("\n| server, mode | requests/s | server CPU ns/request: all (kernel + process) |"
          " in the layer | preemptions/request | system calls/request |")
    print("|---|---|---|---|---|---|")
    for (name, mode), runs in results.items():
        print(
            f"| {name}, {mode} | {median(runs, 'rate'):,.0f} | {median(runs, 'server'):,.0f}"
            f" ({median(runs, 'kernel'):,.0f} + {median(runs, 'process'):,.0f})"
            f" | {median(runs, 'layer'):,.0f} | {median(runs, 'preemptions'):.3f}"
            f" | {median(runs, 'calls'):.2f} |"
        )
    if "bare" in modes:
        # What a keyed request costs beyond one without a key, round by round (the
        # rounds' load moves both alike), then the median.
        print("\n| server, mode | requests/s, ratio to no key | server CPU ns/request over"
              " no key: all (kernel + process) | preemptions/request over no key |")
        print("|---|---|---|---|")
        for (name, mode), runs in results.items():
            if mode == "bare":
                continue
            pairs = list(zip(runs, results[(name, "bare")]))

            def over(part: str) -> float:
                return statistics.median(run[part] - bare[part] for run, bare in pairs)

            ratio = statistics.median(run["rate"] / bare["rate"] for run, bare in pairs)
            print(
                f"| {name}, {mode} | {ratio:.2f}x | {over('server'):+,.0f}"
                f" ({over('kernel'):+,.0f} + {over('process'):+,.0f})"
                f" | {over('preemptions'):+.3f} |"
            )
    for (name, mode), runs in results.items():
        callees = {key for run in runs for key in run if key.startswith("layer > ")}
        ranked = sorted(callees, key=lambda key: -median(runs, key))[: args.callees]
        if not ranked:
            continue
        print(f"\n{name}, {mode}: inside the layer, ns/request (medians)")
        for key in ranked:
            print(f"  {median(runs, key):6.0f}  {key[len('layer > '):][:110]}")
    quick, floor = (binary.name for binary in servers)
    for mode in modes:
        pair = results[(quick, mode)], results[(floor, mode)]
        outside = {
            key for runs in pair for run in runs for key in run if key.startswith("outside > ")
        }
        if not outside:
            continue

        def gap(key: str) -> float:
            return median(pair[0], key) - median(pair[1], key)

        totals = [sum(median(runs, key) for key in outside) for runs in pair]
        print(f"\n{mode}: the process outside the layer's future, ns/request (medians):"
              f" {quick} {totals[0]:,.0f}, {floor} {totals[1]:,.0f}; where they differ most")
        print(f"  {quick[:8]:>8} {floor[:8]:>8}  function")
        for key in sorted(outside, key=lambda key: -abs(gap(key)))[: args.callees]:
            print(f"  {median(pair[0], key):8.0f} {median(pair[1], key):8.0f}"
                  f"  {key[len('outside > '):][:100]}")


if __name__ == "__main__":
    main()
