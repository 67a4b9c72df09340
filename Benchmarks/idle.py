#!/usr/bin/env python3
"""Idle-connection benchmark: what an open, quiet SSE stream costs Herald and nginx + nchan.

    python3 Benchmarks/idle.py                          # builds Herald (release) first
    python3 Benchmarks/idle.py --herald-bin .build/release/herald --conns 10000,19000

For each server and each N (a fresh server each time): RSS of the server before any stream,
then N streams from --procs loadclient processes (Herald: user i on its personal channel user:{i};
nchan: /sub/u{i}), RSS again after --settle s, then the server's CPU over --idle s of silence,
then RSS once more --after-close s after the streams closed (what a burst leaves behind).
Heartbeats every --heartbeat s on both (HERALD_HEARTBEAT_SECONDS; nchan_eventsource_ping_interval
with a comment, since nchan sends none by default). nchan's figures are summed over its worker
processes (the master holds no connections). Printed: RSS delta per stream (bytes) and CPU as a
percentage of one core. Herald alone: also RSS after one client call and one server-key call made
before the streams (what the first requests cost once: OpenSSL is opened at the first token check),
and the per-stream delta from there ("marginal"). Targets (issue 8): <= 2 KiB per stream at 10k, heartbeat CPU < 2 %.
--servers herald-redis<N> (issue 16): N nodes on one redis-server (benchlib.HeraldCluster, streams
spread over the nodes); RSS and CPU are summed over the nodes, and what Redis did during the idle
window is reported per stream and second: commands (by name), bytes in and out, Redis CPU. That is
the cost of presence and position checks that a cluster pays with no message flowing.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def measure(args, procs, exe, wd, name, binary, n):
    sd = os.path.join(wd, f"{name}-{n}")
    os.makedirs(sd)
    if name.startswith("herald-redis"):
        nodes = int(name[len("herald-redis"):] or 1)
        server = B.HeraldCluster(procs, binary, sd, nodes, name=name, heartbeat=args.heartbeat,
                                 loops=args.loops if nodes == 1 else 1)
    elif name == "herald":
        server = B.Herald(procs, binary, sd, loops=args.loops, heartbeat=args.heartbeat)
    else:
        server = B.Nchan(procs, sd, workers=args.loops, ping_interval=args.heartbeat)
    server.start()
    clients = None
    try:
        tokens = server.make_tokens(n, os.path.join(sd, "tokens.txt")) if name.startswith("herald") else None
        time.sleep(args.settle)
        pids = server.pids()
        rss0 = sum(B.proc_rss_kib(p) for p in pids)
        anon0 = sum(B.proc_rss_kib(p, "RssAnon") for p in pids)
        # What a first request costs once (Herald: OpenSSL opened at the first token check, ~1.8
        # MB), kept apart from what each stream costs: one client call and one server call, then
        # the per-stream figures are also given from here ("marginal").
        rss_warm = None
        if name == "herald":
            http = B.HTTP(server.port)
            try:
                http.call("GET", "/v1/me/devices", None, {"Authorization": f"Bearer {server.token('warm', 'warm')}"})
                http.call("GET", "/v1/users/warm/sessions/live", None, {"Authorization": f"Bearer {server.server_key}"})
            finally:
                http.close()
            time.sleep(1)
            rss_warm = B.proc_rss_kib(pids[0])
        nprocs = args.procs
        if isinstance(server, B.HeraldCluster):
            nprocs = (args.procs + len(server.nodes) - 1) // len(server.nodes) * len(server.nodes)
        clients = B.Clients(procs, exe, n, nprocs, server.client_args("personal", tokens), 0,
                            timeout=90 + args.settle + args.idle + 60, outdir=sd, tag=name)
        ready, failed = clients.wait_ready(timeout=90)
        time.sleep(args.settle)
        rss1 = sum(B.proc_rss_kib(p) for p in pids)
        anon1 = sum(B.proc_rss_kib(p, "RssAnon") for p in pids)
        load = B.loadavg()
        cpu0 = [B.proc_cpu_split(p) for p in pids]
        redis = B.RedisCounters(server.redis).start() if getattr(server, "redis", None) else None
        t0 = time.monotonic()
        time.sleep(args.idle)
        cpu1 = [B.proc_cpu_split(p) for p in pids]
        redis_cost = redis.stop() if redis else None
        dt = time.monotonic() - t0
        rss2 = sum(B.proc_rss_kib(p) for p in pids)
        res = B.merge(clients.results(timeout=0))
        clients = None
        # After the burst of closes: what the server keeps once the streams are gone (issue 17:
        # Herald's heap trimmer checks every 10 s).
        time.sleep(args.after_close)
        rss3 = sum(B.proc_rss_kib(p) for p in pids)
        user = sum(a[0] for a in cpu1) - sum(a[0] for a in cpu0)
        sys_ = sum(a[1] for a in cpu1) - sum(a[1] for a in cpu0)
        out = {
            "server": name, "streams": ready, "failed": failed,
            "closed_by_server": res["closed_by_server"], "rss_before_kib": rss0,
            "rss_connected_kib": rss1, "rss_after_idle_kib": rss2, "rss_after_close_kib": rss3,
            "after_close_s": args.after_close,
            "bytes_per_stream": round((rss1 - rss0) * 1024 / max(1, ready)),
            "rss_after_first_requests_kib": rss_warm,
            "marginal_bytes_per_stream": round((rss1 - rss_warm) * 1024 / max(1, ready)) if rss_warm else None,
            "bytes_per_stream_after_idle": round((rss2 - rss0) * 1024 / max(1, ready)),
            "rss_anon_before_kib": anon0, "rss_anon_connected_kib": anon1,
            "anon_bytes_per_stream": round((anon1 - anon0) * 1024 / max(1, ready)),
            "idle_s": round(dt, 1), "cpu_user_s": round(user, 2), "cpu_sys_s": round(sys_, 2),
            "cpu_pct_of_core": round(100 * (user + sys_) / dt, 2),
            "heartbeats_received": res["comments_after_ready"], "heartbeat_s": args.heartbeat,
            "connect_s": res["connect_s"], "loadavg_before_idle": load, "server_pids": len(pids),
        }
        if redis_cost:
            per = max(1, ready) * dt
            out.update(redis_cost)
            out["redis_commands_per_stream_per_s"] = round(redis_cost["redis_commands"] / per, 4)
            out["redis_bytes_in_per_stream_per_s"] = round(redis_cost["redis_bytes_in"] / per, 2)
            out["redis_bytes_out_per_stream_per_s"] = round(redis_cost["redis_bytes_out"] / per, 2)
            out["redis_cpu_pct_of_core"] = round(100 * redis_cost["redis_cpu_s"] / dt, 2)
        return out
    finally:
        if clients:
            clients.stop()
        server.stop()


def fmt(r):
    return (f"{r['server']:7} streams={r['streams']:>6} (failed {r['failed']}, closed {r['closed_by_server']})  "
            f"RSS {r['rss_before_kib']} -> {r['rss_connected_kib']} KiB = "
            f"{r['bytes_per_stream']} B/stream ({r['bytes_per_stream_after_idle']} after idle; "
            f"RssAnon {r['anon_bytes_per_stream']}"
            + (f"; {r['marginal_bytes_per_stream']} B/stream after the first requests' "
               f"{r['rss_after_first_requests_kib']} KiB" if r.get("marginal_bytes_per_stream") else "")
            + "), "
            f"{r['rss_after_close_kib']} KiB {r['after_close_s']:.0f} s after they closed  "
            f"CPU {r['cpu_pct_of_core']}% of a core ({r['cpu_user_s']}u+{r['cpu_sys_s']}s in "
            f"{r['idle_s']}s, {r['heartbeats_received']} heartbeats)  load {r['loadavg_before_idle']}"
            + (f"  redis per stream and s: {r['redis_commands_per_stream_per_s']} cmds, "
               f"{r['redis_bytes_in_per_stream_per_s']} B in, {r['redis_bytes_out_per_stream_per_s']} B out; "
               f"redis cpu {r['redis_cpu_pct_of_core']}% of a core {r['redis_commands_by_name']}" if "redis_commands" in r else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    B.add_common_arguments(ap, loops_help="HERALD_LOOPS (and nginx workers)", budget=None)
    ap.add_argument("--conns", default="10000", help="comma-separated stream counts (<= 19000)")
    ap.add_argument("--servers", default="herald,nchan")
    ap.add_argument("--procs", type=int, default=2, help="loadclient processes")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of silence measured")
    ap.add_argument("--heartbeat", type=int, default=15)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--after-close", type=float, default=15.0,
                    help="seconds after the streams close before RSS is read again")
    args = ap.parse_args()
    B.check_tools(nginx="nchan" in args.servers.split(","))
    if "herald-redis" in args.servers:
        B.check_engines()
    B.exit_on_sigterm()
    procs = B.Procs()
    wd = B.prepare_arguments(args, "idle-results.jsonl")
    start = time.monotonic()
    rows = []
    try:
        binary = B.herald_binary(args.herald_bin) if "herald" in args.servers else None
        exe = B.build_loadclient(wd)
        B.log(f"workdir {wd}; repo HEAD {B.git_commit()}; herald binary {binary}; loadavg {B.loadavg()}")
        for n in [int(x) for x in args.conns.split(",")]:
            for name in args.servers.split(","):
                r = measure(args, procs, exe, wd, name, binary, n)
                B.record_run(rows, r, 0, fmt(r), args.out)
    finally:
        procs.stop_all()
    for n in sorted({r["streams"] for r in rows}):
        by = {r["server"]: r for r in rows if r["streams"] == n}
        if "herald" in by and "nchan" in by and by["nchan"]["bytes_per_stream"]:
            h, c = by["herald"], by["nchan"]
            cpu = (f"{h['cpu_pct_of_core'] / c['cpu_pct_of_core']:.2f}x" if c["cpu_pct_of_core"]
                   else "- (nchan used no measurable CPU)")
            print(f"ratio at {n}: memory/stream {h['bytes_per_stream'] / c['bytes_per_stream']:.2f}x, "
                  f"idle CPU {cpu} (Herald / nchan)")
    print(f"total {time.monotonic() - start:.0f}s; raw results in {args.out}")


if __name__ == "__main__":
    main()
