#!/usr/bin/env python3
"""Peak benchmark: the memory a large peak of streams leaves behind once they have all closed.

    python3 Benchmarks/peak.py --herald-bin .build/release/herald
    python3 Benchmarks/peak.py --herald-bin .build/release/herald --cases sse:1000x64,ws:1000x64 --cycles 3

For each case (a fresh Herald each time): the server's memory at start, then --cycles times: open
the case's streams (--procs loadclient processes), read the memory at the peak, close them all,
wait until /metrics counts no stream, then --after-close s of silence (Herald's heap trimmer checks
every 10 s), and read it again. A case is TRANSPORT:STREAMSxCHANNELS: `sse:1000x64` is 1,000 SSE
streams, each asking for 64 channels of its own (`r:{i}.0` … `r:{i}.63`, granted by `r:*`) beside
its personal channel `user:{i}`; `ws:10000x0` is 10,000 WebSockets on their personal channel only;
a trailing `s` (`sse:1000x64s`) gives every stream the same 64 channels (`r:0` … `r:63`).

Each reading: VmRSS and RssAnon (/proc/PID/status) and Anonymous (/proc/PID/smaps_rollup: every
anonymous page, heap arenas and thread stacks). Printed per case: the readings in MiB and what the
process keeps after each cycle above its start (anonymous memory), the figure a node that rode out
a reconnect storm keeps. --malloc-stats attaches gdb after each reading to call glibc's
malloc_stats(), whose per-arena lines land in the server's log (a diagnosis: it stops the process
for a moment). --bound-mib N checks that no cycle leaves more than N MiB of anonymous memory above
the start (exit status 1 otherwise): a figure, not a timed test.
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def parse_case(text):
    """"sse:1000x64" -> ("sse", 1000, 64, False); a trailing "s" shares the channels."""
    m = re.fullmatch(r"(sse|ws):(\d+)x(\d+)(s?)", text.strip())
    if not m:
        sys.exit(f"bad case {text!r}: TRANSPORT:STREAMSxCHANNELS, e.g. sse:1000x64 or ws:10000x0")
    channels = int(m.group(3))
    if channels > 64:
        sys.exit(f"case {text!r}: a stream takes at most 64 channels besides its personal one")
    return m.group(1), int(m.group(2)), channels, m.group(4) == "s"


def reading(pid):
    return {"rss_kib": B.proc_rss_kib(pid), "rss_anon_kib": B.proc_rss_kib(pid, "RssAnon"),
            "anonymous_kib": B.proc_smaps_rollup_kib(pid)}


def open_streams(port):
    """Open streams by /metrics (`herald_connections` of kinds sse and websocket)."""
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0
    for line in text.splitlines():
        if line.startswith("herald_connections{") and ('kind="sse"' in line or 'kind="websocket"' in line):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def wait_no_streams(port, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if open_streams(port) == 0:
            return True
        time.sleep(0.2)
    return False


def malloc_stats(pid, label, log):
    """glibc's malloc_stats() in the server (its stderr, the server log), marked with `label`."""
    with open(log, "a") as f:
        f.write(f"--- malloc_stats {label}\n")
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (void)malloc_stats()"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def measure(args, procs, exe, wd, binary, case):
    transport, n, channels, shared = case
    tag = f"{transport}-{n}x{channels}{'s' if shared else ''}"
    sd = os.path.join(wd, tag)
    os.makedirs(sd)
    server = B.Herald(procs, binary, sd, loops=args.loops, heartbeat=args.heartbeat)
    server.start()
    clients = None
    try:
        tokens = server.make_tokens(n, os.path.join(sd, "tokens.txt"), grants=("bench", "r:*"))
        path = "/v1/ws" if transport == "ws" else "/v1/stream"
        if channels:
            names = [f"r:{j}" if shared else f"r:%d.{j}" for j in range(channels)]
            path += "?channels=" + ",".join(names)
        client_args = ["--port", str(server.port), "--path", path, "--tokens", tokens,
                       "--ready-event", "ready", *(["--ws"] if transport == "ws" else [])]
        time.sleep(args.settle)
        pid = server.pids()[0]
        log = os.path.join(sd, "herald.log")
        out = {"case": tag, "transport": transport, "streams_asked": n, "channels": channels,
               "shared_channels": shared, "start": reading(pid), "cycles": []}
        if args.malloc_stats:
            malloc_stats(pid, "start", log)
        for cycle in range(args.cycles):
            clients = B.Clients(procs, exe, n, args.procs, client_args, 0, timeout=600, outdir=sd,
                                tag=f"{tag}-{cycle}")
            ready, failed = clients.wait_ready(timeout=120)
            time.sleep(args.settle)
            peak = reading(pid)
            if args.malloc_stats:
                malloc_stats(pid, f"peak {cycle + 1}", log)
            t0 = time.monotonic()
            clients.stop()
            clients = None
            if not wait_no_streams(server.port):
                raise RuntimeError(f"{tag}: streams still open 60 s after the clients stopped")
            closed_s = time.monotonic() - t0
            time.sleep(args.after_close)
            after = reading(pid)
            if args.malloc_stats:
                malloc_stats(pid, f"after {cycle + 1}", log)
            out["cycles"].append({"streams": ready, "failed": failed, "peak": peak, "after": after,
                                  "closed_s": round(closed_s, 1)})
        out["after_close_s"] = args.after_close
        out["loadavg"] = B.loadavg()
        return out
    finally:
        if clients:
            clients.stop()
        server.stop()


def mib(kib):
    return f"{kib / 1024:.1f}"


def fmt(r):
    s = r["start"]
    parts = [f"{r['case']:16} start RSS {mib(s['rss_kib'])} anon {mib(s['anonymous_kib'])} MiB"]
    for i, c in enumerate(r["cycles"], 1):
        p, a = c["peak"], c["after"]
        parts.append(f"| cycle {i} ({c['streams']} streams, {c['failed']} failed): peak RSS {mib(p['rss_kib'])} "
                     f"anon {mib(p['anonymous_kib'])}; after RSS {mib(a['rss_kib'])} anon {mib(a['anonymous_kib'])} "
                     f"(+{mib(a['anonymous_kib'] - s['anonymous_kib'])} over start, "
                     f"{100 * (a['anonymous_kib'] - s['anonymous_kib']) / max(1, p['anonymous_kib'] - s['anonymous_kib']):.0f} % of the peak's growth)")
    return " ".join(parts) + f"  [{r['after_close_s']:.0f} s after close; load {r['loadavg']}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    B.add_common_arguments(ap, budget=None)
    ap.add_argument("--cases", default="sse:1000x64,ws:1000x64,sse:10000x0,ws:10000x0",
                    help="comma-separated TRANSPORT:STREAMSxCHANNELS[s] (see above)")
    ap.add_argument("--cycles", type=int, default=2, help="peaks per case, each closed before the next")
    ap.add_argument("--procs", type=int, default=2, help="loadclient processes")
    ap.add_argument("--heartbeat", type=int, default=60)
    ap.add_argument("--settle", type=float, default=3.0, help="s after start and after the streams opened")
    ap.add_argument("--after-close", type=float, default=25.0,
                    help="s of silence after the last stream closed before the memory is read")
    ap.add_argument("--bound-mib", type=float,
                    help="check: anonymous memory after every cycle at most this many MiB above the "
                         "start (exit status 1 when a case is over it)")
    ap.add_argument("--malloc-stats", action="store_true",
                    help="call malloc_stats() in the server with gdb after each reading (its log)")
    args = ap.parse_args()
    cases = [parse_case(c) for c in args.cases.split(",")]
    B.check_tools(nginx=False)
    B.exit_on_sigterm()
    procs = B.Procs()
    wd = B.prepare_arguments(args, "peak-results.jsonl")
    start = time.monotonic()
    rows = []
    try:
        binary = B.herald_binary(args.herald_bin)
        exe = B.build_loadclient(wd)
        B.log(f"workdir {wd}; repo HEAD {B.git_commit()}; herald binary {binary}; loadavg {B.loadavg()}")
        for case in cases:
            r = measure(args, procs, exe, wd, binary, case)
            B.record_run(rows, r, 0, fmt(r), args.out)
    finally:
        procs.stop_all()
    over = []
    if args.bound_mib is not None:
        for r in rows:
            kept = max(c["after"]["anonymous_kib"] for c in r["cycles"]) - r["start"]["anonymous_kib"]
            verdict = "within" if kept <= args.bound_mib * 1024 else "OVER"
            if verdict == "OVER":
                over.append(r["case"])
            print(f"{r['case']}: keeps at most {mib(kept)} MiB above the start after a cycle: "
                  f"{verdict} the bound of {args.bound_mib:g} MiB")
    print(f"total {time.monotonic() - start:.0f}s; raw results in {args.out}")
    if over:
        sys.exit(1)


if __name__ == "__main__":
    main()
