#!/usr/bin/env python3
"""wrk against the README's axum quick start: new keys and replays against no key.

    python3 bench/wrk/run.py                     # 9 rounds of 5 s per figure
    python3 bench/wrk/run.py --rounds 15 --seconds 4
    python3 bench/wrk/run.py --binary /tmp/axum_quick_start_before   # a build kept aside
    python3 bench/wrk/run.py --binary before --binary after          # side by side
    python3 bench/wrk/run.py --floor             # the floor beside it, in the same rounds

Builds `idemkit-tower`'s `axum_quick_start` example in release (the README's quick
start, unchanged: an in-memory backend of a million records, 127.0.0.1:3000, POST
/charges) and sends it `wrk -t2 -c64` (2 threads, 64 keep-alive connections) with
bench/wrk/charges.lua in three modes: requests without a key, each with a new key, and
replays of 1,000 stored keys. A round starts a fresh server, warms it (storing the
replay keys), and runs each mode once, the order rotating from round to round, so load
from other jobs weighs on the three alike; each round gives one ratio per figure, and
the median over the rounds is the figure (lowest and highest round its spread). The CPU
time each request cost the server and the client (from /proc and getrusage) is printed
beside it: less moved by other jobs than the rate, it shows where the difference lies.
So is the server's resident memory growth per request (VmRSS): under new keys, what a
stored record costs, all included (the store's own bookkeeping, the stored response,
the allocator's overhead).
With --floor, each round also measures the same three modes against the `wrk_floor`
example (the quick start with the least a run-once layer does in place of idemkit's;
see its source), on its own fresh server: the ratios it reaches are the most any layer
could reach here. Its tables grow as keys arrive; `IDEMKIT_FLOOR_CAPACITY=16384`
(passed on to the servers) gives them room for a round from the start, as the floor of
the figures before the sixteenth session had.
With --floor-extra NS (repeatable), each round also measures the floor made to spend NS
nanoseconds more on every keyed request (`IDEMKIT_FLOOR_EXTRA_NS`): what a layer that
costs that much more than the floor would reach, so the ratios can be read as
nanoseconds of server work per request.
wrk reporting any failed request or non-2xx answer stops the run.
Client and server share the machine's cores, as wrk on loopback does. Needs wrk
(`apt-get install wrk`); standard library only.
"""

import argparse
import os
import pathlib
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
from typing import NamedTuple

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCRIPT = pathlib.Path(__file__).resolve().parent / "charges.lua"
ADDRESS = ("127.0.0.1", 3000)
URL = "http://127.0.0.1:3000/charges"
MODES = ["bare", "new", "replay"]


def build(example: str) -> pathlib.Path:
    subprocess.run(
        ["cargo", "build", "--release", "-p", "idemkit-tower", "--example", example],
        cwd=ROOT,
        check=True,
    )
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "examples" / example


def port_in_use() -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(ADDRESS) == 0


def wait_listening(server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while not port_in_use():
        if server.poll() is not None or time.monotonic() > deadline:
            sys.exit("the server did not start listening on 127.0.0.1:3000")
        time.sleep(0.05)


class Figure(NamedTuple):
    """One wrk run: requests per second, CPU time per request in microseconds, how many
    requests wrk completed, and the server's resident memory growth per request."""

    rate: float
    server_us: float
    client_us: float
    requests: int
    resident_bytes: float


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time of process `pid` so far."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_bytes(pid: int) -> int:
    """The resident memory of process `pid` (VmRSS)."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    sys.exit(f"no VmRSS for process {pid}")


def wrk(mode: str, run: int, seconds: int, server: int) -> Figure:
    env = dict(os.environ, IDEMKIT_WRK_MODE=mode, IDEMKIT_WRK_RUN=str(run))
    resident_before = resident_bytes(server)
    server_before = cpu_seconds(server)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        ["wrk", "-t2", "-c64", f"-d{seconds}s", "-s", str(SCRIPT), URL],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    server_cpu = cpu_seconds(server) - server_before
    resident = resident_bytes(server) - resident_before
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    if "Non-2xx" in out or "Socket errors" in out:
        sys.exit(f"wrk saw failed requests in mode {mode}:\n{out}")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return Figure(
        rate=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        server_us=server_cpu / requests * 1e6,
        client_us=client_cpu / requests * 1e6,
        requests=requests,
        resident_bytes=resident / requests,
    )


def measure_round(binary: pathlib.Path, round_: int, seconds: int, env: dict) -> dict:
    """One round on a fresh server (started with `env` added to this process's
    environment): each mode once, the order rotating by round."""
    # A fresh server each round: its store holds one round's new keys, and each round
    # starts from the same state.
    server = subprocess.Popen([str(binary)], env=dict(os.environ, **env))
    try:
        wait_listening(server)
        # Warm-up: stores the 1,000 replay keys, and warms every path once.
        for mode in ["replay", "bare", "new"]:
            wrk(mode, 0, 1, server.pid)
        order = MODES[round_ % 3 :] + MODES[: round_ % 3]
        return {mode: wrk(mode, round_ + 1, seconds, server.pid) for mode in order}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()


def table(name: str, rates: dict) -> None:
    print(
        f"\n| {name}, wrk -t2 -c64 | requests/s, median | ratio to no key, median (lowest"
        " to highest round) | CPU us per request, server + wrk, medians | server's resident"
        " growth per request, B, median |"
    )
    print("|---|---|---|---|---|")
    for mode, goal in [("bare", None), ("new", 0.85), ("replay", 0.9)]:
        median = statistics.median(figure.rate for figure in rates[mode])
        server = statistics.median(figure.server_us for figure in rates[mode])
        client = statistics.median(figure.client_us for figure in rates[mode])
        cpu = f"{server:.1f} + {client:.1f}"
        resident = statistics.median(figure.resident_bytes for figure in rates[mode])
        if goal is None:
            print(f"| no key | {median:,.0f} | 1 | {cpu} | {resident:.0f} |")
            continue
        ratios = [r.rate / b.rate for r, b in zip(rates[mode], rates["bare"])]
        label = "new keys" if mode == "new" else "replays"
        print(
            f"| {label} (goal >= {goal}x) | {median:,.0f} | **{statistics.median(ratios):.2f}x**"
            f" ({min(ratios):.2f} to {max(ratios):.2f}) | {cpu} | {resident:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument(
        "--binary",
        type=pathlib.Path,
        action="append",
        help="a quick start built earlier, instead of building one; repeat it to measure"
        " several builds in the same rounds",
    )
    parser.add_argument(
        "--floor", action="store_true", help="measure the wrk_floor example in the same rounds"
    )
    parser.add_argument(
        "--floor-extra",
        type=int,
        action="append",
        default=[],
        metavar="NS",
        help="also measure the floor spending NS nanoseconds more on every keyed request;"
        " repeat it for several",
    )
    args = parser.parse_args()
    # (name, binary, environment) triples: a path without a slash is a file here, not a
    # command on PATH.
    if args.binary:
        servers = [(str(binary), binary.resolve(), {}) for binary in args.binary]
    else:
        servers = [("quick start", build("axum_quick_start"), {})]
    if args.floor or args.floor_extra:
        floor = build("wrk_floor")
        if args.floor:
            servers.append(("floor", floor, {}))
        for extra in args.floor_extra:
            servers.append(
                (f"floor + {extra} ns", floor, {"IDEMKIT_FLOOR_EXTRA_NS": str(extra)})
            )
    names = [name for name, _, _ in servers]
    if len(set(names)) != len(names):
        sys.exit(f"each server is measured once per round: {names} repeats one")
    if port_in_use():
        sys.exit("127.0.0.1:3000 is taken: stop what listens there first")
    rates = {name: {mode: [] for mode in MODES} for name in names}
    for round_ in range(args.rounds):
        # The servers take turns in an order that rotates by round, as the modes do.
        shift = round_ % len(servers)
        for name, binary, env in servers[shift:] + servers[:shift]:
            figures = measure_round(binary, round_, args.seconds, env)
            for mode in MODES:
                rates[name][mode].append(figures[mode])
            print(
                f"round {round_ + 1}, {name}: "
                + ", ".join(f"{mode} {figures[mode].rate:,.0f}/s" for mode in MODES)
                + f" (load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    for name in names:
        table(name, rates[name])


if __name__ == "__main__":
    main()
