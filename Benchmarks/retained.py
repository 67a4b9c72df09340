#!/usr/bin/env python3
"""Retained-message memory (ADR 0028): what 40,000 publishes to distinct channels leave behind.

    python3 Benchmarks/retained.py --herald-bin .build/debug/herald [--retained-ttl 20]

For `plain` then `retained` (a fresh Herald each): anonymous memory (/proc/PID/smaps_rollup) at
start, right after --channels publishes (batches of 1,000, each to its own `generation:{i}`), once
the history has aged out (HERALD_HISTORY_TTL_SECONDS=2, then two 5 s sweeps and a 10 s trim), and,
for `retained`, once --retained-ttl has passed too (HERALD_RETAINED_TTL_SECONDS; a binary without
the setting ignores it). Prints one line per reading, in MiB.
"""
import argparse
import json
import os
import tempfile
import time
import urllib.request

from benchlib import Herald, Procs, log, proc_smaps_rollup_kib


def publish_all(h, channels, retain):
    for start in range(0, channels, 1000):
        body = {"messages": [{"channel": f"generation:{i}", "event": "status",
                              "data": {"state": "done", "progress": 100, "i": i}, "retain": retain}
                             for i in range(start, min(start + 1000, channels))]}
        request = urllib.request.Request(f"http://127.0.0.1:{h.port}/v1/publish/batch", data=json.dumps(body).encode(),
                                         headers=h.server_headers(), method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--herald-bin", required=True)
    parser.add_argument("--channels", type=int, default=40_000)
    parser.add_argument("--retained-ttl", type=int, default=20)
    args = parser.parse_args()
    procs = Procs()
    try:
        for case in ("plain", "retained"):
            with tempfile.TemporaryDirectory() as work:
                h = Herald(procs, os.path.abspath(args.herald_bin), work, extra_env={
                    "HERALD_HISTORY_TTL_SECONDS": "2", "HERALD_RETAINED_TTL_SECONDS": str(args.retained_ttl)})
                h.start()
                pid = h.pids()[0]
                mib = lambda: proc_smaps_rollup_kib(pid) / 1024
                log(f"{case}: start {mib():.1f} MiB")
                published = time.monotonic()
                publish_all(h, args.channels, case == "retained")
                log(f"{case}: after {args.channels} publishes {mib():.1f} MiB")
                time.sleep(max(0.0, published + 2 + 10 + 12 - time.monotonic()))   # history aged, swept, trimmed
                log(f"{case}: history aged out {mib():.1f} MiB")
                if case == "retained":
                    time.sleep(max(0.0, published + args.retained_ttl + 10 + 12 - time.monotonic()))
                    log(f"{case}: retained TTL ({args.retained_ttl} s) passed {mib():.1f} MiB")
                h.stop()
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
