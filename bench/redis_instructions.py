#!/usr/bin/env python3
"""Count the instructions a Redis server spends per completion, by callgrind.

The server's CPU time per pair (idemkit-redis/benches/redis_pairs.rs) moves with the
host from minute to minute; the instructions it executes for the same commands do not.
This starts `redis-server` under `valgrind --tool=callgrind` on a free loopback port,
loads idemkit's library (and a small one of anchors), and for each series writes a
batch of client claims (layout 3, the plain `SET ... NX PX ... GET` the backend sends),
dumps the counters, completes them all through the series' function (pipelined), and
dumps again. Each dump's total over the batch is the instructions per call, in user
space (the kernel's share of sending and receiving is not counted).

Series:
  claim         the plain `SET` that writes a client's claim (each series' first half)
  general       `idemkit_complete`, which cuts the completed record's parts out of the claim
  own_claim     `idemkit_complete_own_claim`, handed those parts by the client that wrote it
  minimum       a function running only `PEXPIRETIME`, `TIME` and `SET ... PX ... GET`
                (the bench's `plain_claim_minimum` completion): this design's floor
  no_time       `minimum` without its `TIME`; no_expiry: without its `PEXPIRETIME`
                (what each of the floor's reads costs, and what a layout that needed
                one of them less would save)
  trivial       a function that returns 1: what any `FCALL` costs
  before_*      with --before LIBRARY: `general` and `own_claim` (if it has one) of another
                checkout's library, loaded beside this one under other names (an
                `own_claim` handed no `PX`, as the function's first version was, if its
                code does not subtract one from the claim's expiry)

Needs redis-server, valgrind (callgrind_control) and redis-py (`pip install redis`):

    python3 bench/redis_instructions.py
    python3 bench/redis_instructions.py --before /tmp/before/idemkit-redis/src/scripts/library.lua
"""

import argparse
import glob
import os
import re
import socket
import subprocess
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.path.join(HERE, "..", "idemkit-redis", "src", "scripts", "library.lua")

ANCHORS = """#!lua name=idemkit_instructions
redis.register_function('instructions_minimum', function(keys, args)
  redis.call('PEXPIRETIME', keys[1])
  local time = redis.call('TIME')
  redis.call('SET', keys[1], args[1], 'XX', 'PX', args[2], 'GET')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end)
redis.register_function('instructions_no_time', function(keys, args)
  local expires = redis.call('PEXPIRETIME', keys[1])
  redis.call('SET', keys[1], args[1], 'XX', 'PX', args[2], 'GET')
  return expires
end)
redis.register_function('instructions_no_expiry', function(keys, args)
  local time = redis.call('TIME')
  redis.call('SET', keys[1], args[1], 'XX', 'PX', args[2], 'GET')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end)
redis.register_function('instructions_trivial', function() return 1 end)
"""

TOKEN = "0123456789abcdef0123456789abcdef"
FINGERPRINT = "f" * 64
LEASE_US, GRACE_US = 30_000_000, 60_000_000
TTL_US = 60_000_000
HEADERS = b"\x00\x00\x00\x0ccontent-type\x00\x00\x00\x0atext/plain"
BODY = b"ok"


def library(path, version, rename=None):
    text = open(path).read().replace("__IDEMKIT_LIBRARY_VERSION__", version)
    if rename:
        text = text.replace("#!lua name=idemkit", f"#!lua name={rename}")
        text = re.sub(r"'idemkit_(\w+)'", rf"'{rename}_\1'", text)
    return text


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="completions per series")
    parser.add_argument("--rounds", type=int, default=2, help="times each series runs")
    parser.add_argument("--before", help="another checkout's library.lua, to compare")
    options = parser.parse_args()

    expires = (LEASE_US + GRACE_US + 999) // 1000 + 1
    kept = expires * 1000 - 999 - LEASE_US
    fields = "%016d%016d%035d%010d%010d%010d%s" % (
        LEASE_US, kept, 0, 7, len(FINGERPRINT), 0, FINGERPRINT)
    claim = "ik3c" + TOKEN + "%016d" % expires + fields
    ttl_and_status = "%016d200" % TTL_US
    headers_len = "%010d" % len(HEADERS)
    result_fields = ttl_and_status + fields[67:87] + headers_len + FINGERPRINT
    key_ttl = str(TTL_US // 1000 + 1)
    completed = ("ik2d" + TOKEN + "0" * 16 + fields[:32] + "0" * 16 + result_fields).encode()
    general_args = [TOKEN, ttl_and_status, headers_len, HEADERS + BODY, key_ttl]
    own_args = [TOKEN, str(expires), fields[:32], result_fields, HEADERS + BODY, key_ttl]
    series = {
        "general": ("idemkit_complete", general_args),
        "own_claim": ("idemkit_complete_own_claim", own_args),
        "minimum": ("instructions_minimum", [completed + HEADERS + BODY, key_ttl]),
        "no_time": ("instructions_no_time", [completed + HEADERS + BODY, key_ttl]),
        "no_expiry": ("instructions_no_expiry", [completed + HEADERS + BODY, key_ttl]),
        "trivial": ("instructions_trivial", []),
    }
    if options.before:
        before = library(options.before, "before", rename="before")
        series["before_general"] = ("before_complete", general_args)
        if "expires - args[2]" in before:
            series["before_own_claim"] = ("before_complete_own_claim", own_args)
        elif "complete_own_claim" in before:
            first_args = own_args[:1] + own_args[2:]
            series["before_own_claim"] = ("before_complete_own_claim", first_args)

    workdir = tempfile.mkdtemp(prefix="redis-instructions-")
    port = free_port()
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={workdir}/out.%p",
         "redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    try:
        for _ in range(300):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.2)
        client.function_load(library(LIBRARY, "this"), replace=True)
        client.function_load(ANCHORS, replace=True)
        if options.before:
            client.function_load(before, replace=True)

        def dump(tag):
            subprocess.run(["callgrind_control", "-d", tag, str(server.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

        dump("start")
        for round_ in range(options.rounds):
            for index, (name, (function, args)) in enumerate(series.items()):
                # Keys of one length in every series: a key's length changes the count.
                keys = [f"{{{index}-{round_}-{n:06}}}" for n in range(options.pairs)]
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.set(key, claim, nx=True, px=expires)
                pipe.execute()
                dump("claim")
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.fcall(function, 1, key, *args)
                replies = pipe.execute()
                # A completion answers its time (a number, or its digits): never below 1.
                if not all(isinstance(r, bytes) or r > 0 for r in replies):
                    raise SystemExit(f"{name}: not every completion took effect: {replies[:3]}")
                dump(name)
                client.flushall()
                dump("flush")
    finally:
        try:
            client.shutdown(nosave=True)
        except redis.ConnectionError:
            pass  # it closes the connection as it stops
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            raise

    per_call = {}
    dumps = sorted(glob.glob(f"{workdir}/out.*.*"), key=lambda f: int(f.rsplit(".", 1)[1]))
    for path in dumps:
        text = open(path).read()
        tag = re.search(r"^desc: Trigger: dump (\S+)", text, re.M).group(1)
        total = int(re.search(r"^summary: (\d+)", text, re.M).group(1))
        if tag not in ("start", "flush"):
            per_call.setdefault(tag, []).append(total / options.pairs)
    print(f"instructions per call, user space ({options.pairs} calls, {options.rounds} rounds)")
    for tag, counts in per_call.items():
        print(f"  {tag:18s} " + "  ".join(f"{count:9,.0f}" for count in counts))


if __name__ == "__main__":
    main()
