#!/usr/bin/env bash
# CI: each backend's runtime features compile in only the runtime they name. For every
# backend with `tokio` and `smol` features, `cargo tree` of its normal dependencies with
# one feature must not list the other runtime's crates:
#
#   --features tokio: no smol, async-io, async-executor or idemkit-smol
#   --features smol:  no idemkit-tokio, and tokio only without a runtime
#
# The one exception is the `redis` crate: its `aio` feature (which both `tokio-comp` and
# `smol-comp` turn on) always depends on `tokio` with the `sync` feature, for its codec and
# locks. That tokio has no runtime, no I/O and no timer; any other tokio feature (rt, net,
# time, ...) under `smol` fails this check.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=0

# The crates (name and enabled features, one per line) `cargo tree` lists for package $1
# with only feature $2.
crates() {
    cargo tree --quiet -p "$1" -e normal --no-default-features --features "$2" \
        --prefix none --format '{p} {f}' | sed 's/ (\*)$//' | sort -u
}

# Fails the check for package $1 / feature $2 with the offending lines $3.
forbid() {
    if [ -n "$3" ]; then
        printf 'FAIL %s --features %s pulls in:\n%s\n' "$1" "$2" "$3"
        failed=1
    else
        printf 'ok   %s --features %s\n' "$1" "$2"
    fi
}

for package in idemkit-redis idemkit-postgres idemkit-sqlite; do
    tokio_only=$(crates "$package" tokio)
    forbid "$package" tokio \
        "$(grep -E '^(smol|async-io|async-executor|idemkit-smol) ' <<<"$tokio_only" || true)"

    smol_only=$(crates "$package" smol)
    # A tokio line is allowed only when its features are a subset of {default, sync}.
    bad_tokio=$(grep -E '^tokio ' <<<"$smol_only" |
        awk '{ n = split($3, fs, ","); for (i = 1; i <= n; i++)
                   if (fs[i] != "default" && fs[i] != "sync") { print; next } }' || true)
    forbid "$package" smol \
        "$(grep -E '^idemkit-tokio ' <<<"$smol_only" || true)${bad_tokio:+$'\n'$bad_tokio}"
done

exit "$failed"
