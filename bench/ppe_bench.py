#!/usr/bin/env python3
"""ppe_bench.py - baseline: what a user would pick instead of sipc.

concurrent.futures.ProcessPoolExecutor with an echo function and 64-byte
payloads (every byte value).  Two figures:

  ppe_64_reqs       requests/s with many requests in flight
                    (Executor.map over batches, chunksize=1: one task per
                    request, as a request/response service would use it)
  ppe_64_sync_reqs  requests/s one at a time (submit().result())

Prints "metric <name> <value> <unit>" lines like the C programs.
Usage: ppe_bench.py [--quick] [--workers N]
"""
import concurrent.futures as cf
import os
import statistics
import sys
import time


def echo(payload):
    return payload


def metric(name, value, unit):
    print("metric %s %.6g %s" % (name, value, unit), flush=True)


def main():
    quick = "--quick" in sys.argv or os.environ.get("BENCH_QUICK", "0") not in ("", "0")
    workers = 2
    if "--workers" in sys.argv:
        workers = int(sys.argv[sys.argv.index("--workers") + 1])
    dur = 0.5 if quick else 2.0
    payload = bytes((i * 37 + 11) & 0xFF for i in range(64))
    batch = [payload] * 1000

    with cf.ProcessPoolExecutor(max_workers=workers) as ex:
        # Warm up: start every worker process before timing.
        list(ex.map(echo, [payload] * 200, chunksize=1))

        n = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < dur:
            for r in ex.map(echo, batch, chunksize=1):
                if r != payload:
                    raise SystemExit("ppe_bench: echo mismatch")
            n += len(batch)
        metric("ppe_64_reqs", n / (time.monotonic() - t0), "req/s")

        lat = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < dur / 2:
            t1 = time.perf_counter()
            ex.submit(echo, payload).result()
            lat.append(time.perf_counter() - t1)
        metric("ppe_64_sync_reqs", len(lat) / (time.monotonic() - t0), "req/s")
        metric("ppe_64_sync_p50", statistics.median(lat) * 1e6, "us")
    metric("ppe_workers", workers, "workers")


if __name__ == "__main__":
    main()
