"""Drives the conformance server (`--compat stripe`) with stripe-python itself.

Usage: drive.py BASE_URL SCENARIO. Prints one JSON object: what each call returned or
raised, and how long it took. The Rust test (`tests/stripe_python.rs`) starts the
server, runs this, and checks the result against the server's own event lines.
"""

import json
import sys
import threading
import time

import stripe


def client(base):
    return stripe.StripeClient(
        "sk_test_idemkit",
        base_addresses={"api": base},
        max_network_retries=4,
    )


def attempt(charges, amount, key, headers=None):
    """One create call: its result, or the error it raised, and its duration."""
    options = {"idempotency_key": key}
    if headers:
        options["headers"] = headers
    started = time.monotonic()
    try:
        charge = charges.create(params={"amount": amount, "currency": "usd"}, options=options)
        response = charge.last_response
        return {
            "ok": True,
            "call": charge["call"],
            "status": response.code,
            "replayed": response.headers.get("Idempotent-Replayed"),
            "elapsed": time.monotonic() - started,
        }
    except stripe.StripeError as error:
        details = (error.json_body or {}).get("error") or {}
        return {
            "ok": False,
            "error": type(error).__name__,
            "status": error.http_status,
            "type": details.get("type"),
            "code": details.get("code"),
            "message": error.user_message,
            "elapsed": time.monotonic() - started,
        }


def in_background(charges, amount, key, headers):
    """Starts a create call on a thread; returns a function that waits for its result."""
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(attempt(charges, amount, key, headers))
    )
    thread.start()

    def join():
        thread.join()
        return result

    return join


def main():
    base, scenario = sys.argv[1], sys.argv[2]
    charges = client(base).v1.charges
    if scenario == "reused":
        out = {
            "first": attempt(charges, 100, "reused-key"),
            "reused": attempt(charges, 200, "reused-key"),
            "retry": attempt(charges, 100, "reused-key"),
        }
    elif scenario in ("in_flight", "in_flight_other"):
        # The first request runs for two seconds; the second meets it in flight.
        first = in_background(charges, 100, "busy-key", {"X-Test-Delay-Ms": "2000"})
        time.sleep(0.5)
        amount = 100 if scenario == "in_flight" else 999
        second = attempt(charges, amount, "busy-key")
        out = {"first": first(), "second": second}
    else:
        raise SystemExit("unknown scenario " + scenario)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
