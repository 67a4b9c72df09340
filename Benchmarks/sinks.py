#!/usr/bin/env python3
"""The push sinks alone (issue 17): h2load against Benchmarks/h2sink.c ("native") and against
`nghttpd --echo-upload` ("nghttpd"), the same requests to each, to show how steady each ceiling is
and what it costs per request.

    python3 Benchmarks/sinks.py                        # 5 runs per sink and provider, 10,000 requests each
    python3 Benchmarks/sinks.py --repeat 5 --conns 2,8 --providers apns,fcm

Each run: h2load -n K -c C -m 256/C (push.py's h2load phase) to one sink, APNs-shaped
(POST /3/device/<64 hex>, Herald's APNs headers, an 84-byte body) or FCM-shaped
(POST /v1/projects/bench/messages:send, 345 bytes). The sinks get a self-signed loopback
certificate (h2load does not verify it). Sink CPU per request: h2sink's own getrusage (µs), nghttpd's
/proc clock ticks (10 ms; its runs last seconds). The order of the sinks alternates between repeats.
Output: a line per run, then per sink and provider the median, min and max requests/s and CPU per
request, then one JSON summary line.
"""
import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

HEADERS = {"apns": {"apns-topic": "com.example.bench", "apns-push-type": "alert", "apns-priority": "10",
                    "apns-expiration": "0", "content-type": "application/json", "authorization": "bearer x.y.z"},
           "fcm": {"content-type": "application/json; charset=UTF-8", "authorization": "Bearer ya29.bench"}}
BODY_BYTES = {"apns": 84, "fcm": 345}


def certificate(wd):
    """A self-signed P-256 certificate for 127.0.0.1 as server.pem / server-key.pem in `wd`, the
    names Sink reads from the double's state directory."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", os.path.join(wd, "server-key.pem"), "-out", os.path.join(wd, "server.pem"),
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True, timeout=30)
    return SimpleNamespace(api=SimpleNamespace(state_dir=Path(wd)))


def run(procs, sink, provider, conns, args, wd, tag):
    uris = os.path.join(wd, f"uris-{provider}.txt")
    if not os.path.exists(uris):
        with open(uris, "w") as f:
            if provider == "apns":
                f.write("".join(f"{sink.base_url}/3/device/{secrets.token_hex(32)}\n" for _ in range(args.k)))
            else:
                f.write(f"{sink.base_url}/v1/projects/bench/messages:send\n")
    body = os.path.join(wd, f"body-{provider}.json")
    with open(body, "w") as f:
        f.write(json.dumps({"p": "x" * (BODY_BYTES[provider] - 8)}))
    argv = ["-n", str(args.k), "-c", str(conns), "-m", str(max(1, 256 // conns)), "-t", "1", "-i", uris, "-d", body]
    for k, v in HEADERS[provider].items():
        argv += ["-H", f"{k}: {v}"]
    quiet = B.quiet_reading(args)
    s0 = sink.stats()
    cpu = B.CPUWindow({"sink": sink.p.pid}).start()
    res = B.run_h2load(procs, argv, timeout=120, outdir=wd, tag=tag)
    c = cpu.stop(extra_cpu_s=res["cpu_s"])
    c.update(B.sink_counts(s0, sink.stats()))
    requests = c.get("sink_requests") or res.get("done", 0)
    return {"sink": sink.kind, "provider": provider, "conns": conns, "k": args.k, "ok": res.get("2xx", 0),
            "req_per_s": round(res.get("req_per_s") or 0), "h2load_cpu_s": res["cpu_s"],
            "sink_cpu_us_per_request": round((c["sink_user_s"] + c["sink_sys_s"]) / max(1, requests) * 1e6, 1),
            "other_cores_before": quiet, **c}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--k", type=int, default=10000, help="requests per run")
    ap.add_argument("--conns", default="2", help="h2load connections, comma-separated")
    ap.add_argument("--providers", default="apns,fcm")
    ap.add_argument("--sinks", default="native,nghttpd")
    ap.add_argument("--sink-threads", type=int, default=1, help="worker threads of either sink")
    ap.add_argument("--quiet-below", type=float, default=0.3)
    ap.add_argument("--quiet-wait", type=float, default=10.0)
    ap.add_argument("--out", help="raw results, JSON lines (default: in the temp workdir)")
    args = ap.parse_args()
    B.check_h2load()
    B.exit_on_sigterm()
    wd = B.prepare_arguments(args, "sinks-results.jsonl")
    procs = B.Procs()
    kinds = args.sinks.split(",")
    runs = []
    try:
        cert = certificate(wd)
        sinks = {k: B.Sink(procs, os.path.join(wd, k), cert, kind=k, workers=args.sink_threads).start() for k in kinds}
        B.log(f"workdir {wd}; sinks {', '.join(f'{k} {s.base_url}' for k, s in sinks.items())}; loadavg {B.loadavg()}")
        for rep in range(args.repeat):
            for conns in (int(c) for c in args.conns.split(",")):
                for provider in args.providers.split(","):
                    for kind in (kinds if rep % 2 == 0 else kinds[::-1]):
                        r = run(procs, sinks[kind], provider, conns, args, os.path.join(wd, kind),
                                f"{provider}-c{conns}-{rep}")
                        B.record_run(runs, r, rep, f"{kind:8} {provider:4} c={conns} ok={r['ok']}/{r['k']} "
                                     f"{r['req_per_s']:>7}/s sink {r['sink_user_s']}u+{r['sink_sys_s']}s = "
                                     f"{r['sink_cpu_us_per_request']} µs/request other={r['other_cores']}", args.out)
                        time.sleep(0.2)
        for s in sinks.values():
            s.stop()
    finally:
        procs.stop_all()
    summary = {"benchmark": "sinks", "k": args.k, "repeat": args.repeat, "cells": {}}
    print("\n| sink | provider | conns | requests/s median | min – max | sink CPU µs/request median | min – max | other cores max |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in kinds:
        for conns in (int(c) for c in args.conns.split(",")):
            for provider in args.providers.split(","):
                rs = [r for r in runs if r["sink"] == kind and r["provider"] == provider and r["conns"] == conns]
                if not rs:
                    continue
                rate = [r["req_per_s"] for r in rs]
                us = [r["sink_cpu_us_per_request"] for r in rs]
                cell = {"req_per_s": statistics.median(rate), "req_per_s_range": [min(rate), max(rate)],
                        "sink_cpu_us_per_request": statistics.median(us), "sink_cpu_us_range": [min(us), max(us)],
                        "other_cores": max(r["other_cores"] for r in rs),
                        "failures": sum(r["k"] - r["ok"] for r in rs)}
                summary["cells"][f"{kind}-{provider}-c{conns}"] = cell
                print(f"| {kind} | {provider} | {conns} | {cell['req_per_s']:,.0f} | {min(rate):,} – {max(rate):,} | "
                      f"{cell['sink_cpu_us_per_request']} | {min(us)} – {max(us)} | {cell['other_cores']} |")
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
