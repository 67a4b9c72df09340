#!/usr/bin/env python3
"""Fan-out benchmark: Herald against nginx + nchan, same machine, same run, same client.

    python3 Benchmarks/fanout.py                      # builds Herald (release) first
    python3 Benchmarks/fanout.py --herald-bin .build/release/herald --repeat 3

Phases, each with fresh subscribers (N SSE streams over --procs loadclient processes):
  shared/rate     N subscribers on one channel; M messages at a fixed rate (latency under load)
  shared/burst    the same; M messages at full speed (throughput: deliveries/s)
  shared/closed   the same; a closed-loop publisher: one message per request, the next sent when
                  the previous publish is answered (one connection, one request in flight)
  personal/burst  N subscribers each on its own channel (Herald user:{i}, nchan u{i});
                  N publishes, one per channel, at full speed
  personal/batch  Herald only: the same N publishes through POST /v1/publish/batch (1000 each)
Cluster (issue 16): --servers takes herald-redis<N> too: N Herald nodes on one redis-server started
by the driver (HERALD_BROKER=redis://…), load client process k on node k % N (--procs rounded up
to a multiple of N), the publisher on node 0. N=1 runs HERALD_LOOPS=--loops like the memory broker;
N>1 gives each node --cluster-loops (1) event loops. Each phase then also reports what Redis did:
commands per publish (INFO commandstats, by name), bytes in/out per publish (INFO stats), Redis
CPU per publish, and every server's CPU per delivery (cost figures that other work on a shared
machine moves less than the timed ones).
--perf DIR records Herald with `perf record -e cpu-clock -g` during each phase (read it with
`perf report -i DIR/perf-shared-burst.data --no-children --sort dso,symbol`).
--callgrind DIR runs Herald inside valgrind's callgrind, counting instructions only while each phase
publishes and delivers: a figure that does not move with other work on the machine (this VM has
no hardware counters), for comparing two builds at a small --subs (valgrind is ~50x slower).
Each phase prints Ir/delivery; read a dump with `callgrind_annotate DIR/callgrind-<run>.out.<n>`.
--rss-after S reads the server's RSS before the phase and S seconds after its streams closed.
Every message carries {"t": send time in ns}; the clients record latency = receive - t.
deliveries/s = deliveries / (last receive - first send). Output: a table per run, medians over
--repeat runs with the Herald/nchan ratios, and every raw figure as JSON lines in --out.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402


def run_phase(args, procs, server, exe, wd, transport, shape, phase, tokens):
    n = args.subs
    if shape == "shared":
        expect, count = args.msgs, args.msgs
        channel_of = None
    else:
        expect, count = 1, n
        channel_of = (lambda k: k)
    rate = args.rate if phase == "rate" else 0.0
    batch = 1000 if phase == "batch" else 1
    # closed: one connection, one request in flight, so a publish is sent only once the previous
    # one is answered and the publisher's rate is whatever the server's answers allow.
    conns, window = (1, 1) if phase == "closed" else (4, 32)
    nprocs = args.procs
    if isinstance(server, B.HeraldCluster):
        k = len(server.nodes)
        nprocs = (args.procs + k - 1) // k * k
    publish_bound = (count / rate if rate else 0) + 60
    # What the connect burst costs Redis (subscriptions, presence): per connection.
    connect_redis = B.RedisCounters(server.redis).start() if getattr(server, "redis", None) else None
    clients = B.Clients(procs, exe, n, nprocs, server.client_args(shape, tokens, transport), expect,
                        timeout=60 + publish_bound + args.grace + 30, outdir=wd,
                        tag=f"{server.name}-{transport}-{shape}-{phase}")
    try:
        ready, failed = clients.wait_ready(timeout=90)
        if ready < n:
            B.log(f"  {server.name} {shape}/{phase}: only {ready}/{n} connected ({failed} failed)")
        time.sleep(args.settle)  # let the connect burst's after-effects (acks, timers) pass
        connect_cost = connect_redis.stop() if connect_redis else None
        pids = server.pids()
        rss0 = sum(B.proc_rss_kib(p) for p in pids)
        cpu0 = [B.proc_cpu_split(p) for p in pids]
        thr0 = B.thread_cpu(pids[0]) if server.name.startswith("herald") else {}
        redis = B.RedisCounters(server.redis).start() if getattr(server, "redis", None) else None
        busy0, load, own0, t0 = B.machine_busy_seconds(), B.loadavg(), time.process_time(), time.monotonic()
        perf = None
        if args.callgrind and server.name == "herald":
            B.callgrind_start(pids[0])
        if args.perf and server.name == "herald":
            # cpu-clock sampling (no hardware counters in this VM), call graphs, Herald only.
            data = os.path.join(args.perf, f"perf-{transport}-{shape}-{phase}.data")
            perf = procs.start("perf", ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g",
                                        "-p", str(pids[0]), "-o", data],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        pub = B.publish(server, count, rate=rate, channel_of=channel_of, batch=batch,
                        conns=conns, window=window, timeout=publish_bound)
        res = B.merge(clients.results(timeout=args.grace))
        cpu1 = [B.proc_cpu_split(p) for p in pids]
        thr1 = B.thread_cpu(pids[0]) if server.name.startswith("herald") else {}
        redis_cost = redis.stop() if redis else None
        busy1, own1, t1 = B.machine_busy_seconds(), time.process_time(), time.monotonic()
        if perf:
            procs.stop(perf, sig=signal.SIGINT, timeout=30)
        instructions = (B.callgrind_stop(pids[0], args.callgrind, f"{transport}-{shape}-{phase}")
                        if args.callgrind and server.name == "herald" else None)
    finally:
        clients.stop()
    rss1 = None
    if args.rss_after:
        # What the server keeps once the phase's streams are gone (issue 17: a burst's memory).
        time.sleep(args.rss_after)
        rss1 = sum(B.proc_rss_kib(p) for p in pids)
    window = (res["last_rx_ns"] - pub["first_send_ns"]) / 1e9 if res["last_rx_ns"] else 0
    out = {
        "server": server.name, "transport": transport, "shape": shape, "phase": phase, "subscribers": n, "messages": count,
        "rate": rate, **{k: res[k] for k in ("connections", "failed", "closed_by_server", "deliveries",
                                             "expected", "losses", "extra", "p50_ms", "p99_ms",
                                             "max_ms", "connect_s")},
        "deliveries_per_s": round(res["deliveries"] / window) if window > 0 else 0,
        "window_s": round(window, 3), "publish_s": round(pub["publish_s"], 3),
        "publish_statuses": pub["statuses"],
        "server_cpu_s": round(sum(a[0] + a[1] for a in cpu1) - sum(a[0] + a[1] for a in cpu0), 2),
        "server_user_s": round(sum(a[0] for a in cpu1) - sum(a[0] for a in cpu0), 2),
        "server_sys_s": round(sum(a[1] for a in cpu1) - sum(a[1] for a in cpu0), 2),
        "clients_cpu_s": round(res["cpu_user_s"] + res["cpu_sys_s"], 2),
        "publisher_cpu_s": round(own1 - own0, 2), "loadavg_before": load,
        "rss_before_kib": rss0, "rss_after_kib": rss1,
        "machine_busy_cores": round((busy1 - busy0) / (t1 - t0), 2),
    }
    if shape == "shared" and res.get("msg_max_ms"):
        # Each message's slowest delivery (ms, by publish order): a high p99 from every message or a few.
        out["msg_max_ms"] = res["msg_max_ms"]
    if res["deliveries"]:
        out["server_cpu_us_per_delivery"] = round(out["server_cpu_s"] / res["deliveries"] * 1e6, 2)
    if isinstance(server, B.HeraldCluster):
        out["nodes"] = len(server.nodes)
    if connect_cost and ready:
        out["redis_commands_per_connect"] = round(connect_cost["redis_commands"] / ready, 2)
        out["redis_connect_commands_by_name"] = connect_cost["redis_commands_by_name"]
        out["redis_bytes_per_connect"] = round((connect_cost["redis_bytes_in"] + connect_cost["redis_bytes_out"]) / ready)
    if redis_cost:
        out.update(redis_cost)
        out["redis_commands_per_publish"] = round(redis_cost["redis_commands"] / count, 2)
        out["redis_bytes_in_per_publish"] = round(redis_cost["redis_bytes_in"] / count)
        out["redis_bytes_out_per_publish"] = round(redis_cost["redis_bytes_out"] / count)
        out["redis_cpu_us_per_publish"] = round(redis_cost["redis_cpu_s"] / count * 1e6, 1)
        if res["deliveries"]:
            out["redis_cpu_us_per_delivery"] = round(redis_cost["redis_cpu_s"] / res["deliveries"] * 1e6, 3)
    if instructions is not None:
        out["instructions"] = instructions
        out["instructions_per_delivery"] = round(instructions / res["deliveries"]) if res["deliveries"] else None
    # CPU the machine spent on anything but this server, the clients and the publisher (other
    # work on a shared machine, plus softirq time charged to no process): the noise indicator.
    own = out["server_cpu_s"] + out["clients_cpu_s"] + out["publisher_cpu_s"]
    out["other_cores"] = round(max(0.0, (busy1 - busy0) - own) / (t1 - t0), 2)
    if thr0:
        # per thread: [user, system] seconds during the phase
        out["herald_threads_cpu_s"] = {
            k: [round(thr1[k][0] - v[0], 2), round(thr1[k][1] - v[1], 2)] for k, v in thr0.items()
            if k in thr1 and sum(thr1[k]) - sum(v) >= 0.01}
    return out


def fmt(r):
    def f(x, nd=1):
        return "-" if x is None else f"{x:.{nd}f}"
    redis = (f"  redis: {r['redis_commands_per_publish']} cmds/publish "
             f"{r['redis_bytes_in_per_publish']}B in {r['redis_bytes_out_per_publish']}B out/publish "
             f"cpu {r['redis_cpu_us_per_publish']} us/publish {r['redis_commands_by_name']}; "
             f"connect: {r.get('redis_commands_per_connect')} cmds, {r.get('redis_bytes_per_connect')} B per connection"
             if "redis_commands" in r else "")
    return (f"{r['server']:7} {r['transport']:3} {r['shape']:8} {r['phase']:6} conns={r['connections']:>6} "
            f"deliv={r['deliveries']:>8}/{r['expected']:<8} loss={r['losses']:<6} "
            f"{r['deliveries_per_s']:>8}/s p50={f(r['p50_ms'])} p99={f(r['p99_ms'])} "
            f"max={f(r['max_ms'])} ms  cpu srv={r['server_user_s']}u+{r['server_sys_s']}s "
            f"clients={r['clients_cpu_s']}s pub={r['publisher_cpu_s']}s  other={r['other_cores']} cores"
            + (f"  srv {r['server_cpu_us_per_delivery']} us/delivery" if "server_cpu_us_per_delivery" in r else "")
            + redis
            + (f"  Ir/delivery={r['instructions_per_delivery']}" if "instructions_per_delivery" in r else "")
            + (f"  RSS {r['rss_before_kib']} -> {r['rss_after_kib']} KiB after" if r.get("rss_after_kib") else "")
            + (slowest(r["msg_max_ms"]) if r.get("msg_max_ms") else ""))


def slowest(per_msg):
    """The messages whose slowest delivery took longest, and the median of those maxima."""
    top = sorted(range(len(per_msg)), key=lambda k: -per_msg[k])[:5]
    return (f"\n        per message, slowest delivery: median {statistics.median(per_msg):.1f} ms; worst "
            + ", ".join(f"#{k} {per_msg[k]:.1f}" for k in top) + " ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    B.add_common_arguments(ap, loops_help="HERALD_LOOPS (and nginx workers)", budget=1800.0,
                           perf_help="record Herald with perf during each phase into DIR")
    ap.add_argument("--subs", type=int, default=10000, help="subscribers (default 10000)")
    ap.add_argument("--procs", type=int, default=2, help="loadclient processes (<=19k conns each)")
    ap.add_argument("--msgs", type=int, default=100, help="messages per shared phase (default 100)")
    ap.add_argument("--rate", type=float, default=10.0, help="messages/s in the rate phase")
    ap.add_argument("--phases", default="shared/rate,shared/burst,shared/closed,personal/burst,personal/batch")
    ap.add_argument("--transports", default="sse,ws",
                    help="client transports, each runs every phase (batch: SSE only, it measures publishing)")
    ap.add_argument("--servers", default="herald,nchan",
                    help="herald (memory broker), herald-redis<N> (N nodes on Redis, e.g. herald-redis1,herald-redis3), nchan")
    ap.add_argument("--cluster-loops", type=int, default=1, help="HERALD_LOOPS of each node when N > 1")
    ap.add_argument("--repeat", type=int, default=1, help="runs per server, interleaved")
    ap.add_argument("--grace", type=float, default=15.0, help="s to wait for stragglers after publishing")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--rss-after", type=float, default=0.0,
                    help="s to wait after a phase's streams close before reading the server's RSS (0: not read)")
    B.add_callgrind_argument(ap)
    args = ap.parse_args()
    B.check_tools(nginx="nchan" in args.servers.split(","))
    if "herald-redis" in args.servers:
        B.check_engines()
    B.exit_on_sigterm()
    start = time.monotonic()
    procs = B.Procs()
    runs = []
    wd = B.prepare_arguments(args, "fanout-results.jsonl")
    try:
        binary = B.herald_binary(args.herald_bin) if "herald" in args.servers else None
        exe = B.build_loadclient(wd)
        phases = [(t, *p.split("/")) for t in args.transports.split(",") for p in args.phases.split(",")
                  if not (t == "ws" and p.endswith("/batch"))]
        servers = args.servers.split(",")
        B.log(f"workdir {wd}; repo HEAD {B.git_commit()}; herald binary {binary}; loadavg {B.loadavg()}")
        for rep in range(args.repeat):
            order = servers if rep % 2 == 0 else servers[::-1]  # alternate who goes first
            for name in order:
                sd = os.path.join(wd, f"{name}-{rep}")
                os.makedirs(sd)
                if name.startswith("herald-redis"):
                    n_nodes = int(name[len("herald-redis"):] or 1)
                    server = B.HeraldCluster(procs, binary, sd, n_nodes, name=name, heartbeat=60,
                                             loops=args.loops if n_nodes == 1 else args.cluster_loops,
                                             extra_env={"HERALD_WS_IDLE_TIMEOUT_SECONDS": "600"})
                elif name == "herald":
                    # A benchmark WebSocket sends nothing but pongs: keep the idle timeout out of the way.
                    wrapper = B.callgrind_wrapper(args.callgrind, rep) if args.callgrind else []
                    server = B.Herald(procs, binary, sd, loops=args.loops, heartbeat=60,
                                      extra_env={"HERALD_WS_IDLE_TIMEOUT_SECONDS": "600"}, wrapper=wrapper)
                else:
                    server = B.Nchan(procs, sd, workers=args.loops)
                server.start()
                try:
                    tokens = (server.make_tokens(args.subs, os.path.join(sd, "tokens.txt"))
                              if name.startswith("herald") else None)
                    for transport, shape, phase in phases:
                        if phase == "batch" and not name.startswith("herald"):
                            continue
                        if time.monotonic() - start > args.budget:
                            B.log(f"budget of {args.budget}s spent: skipping {name} {transport} {shape}/{phase}")
                            continue
                        r = run_phase(args, procs, server, exe, sd, transport, shape, phase, tokens)
                        B.record_run(runs, r, rep, fmt(r), args.out)
                finally:
                    server.stop()
    finally:
        procs.stop_all()

    print("\nmedians over runs (ratio = Herald / nchan; deliveries/s higher is better, latency lower)")
    for transport, shape, phase in phases:
        rows = {}
        label = f"{transport} {shape}/{phase:6}"
        for name in servers:
            rs = [r for r in runs if r["server"] == name and r["transport"] == transport
                  and r["shape"] == shape and r["phase"] == phase]
            if rs:
                rows[name] = {k: statistics.median([r[k] for r in rs if r.get(k) is not None] or [0])
                              for k in ("deliveries_per_s", "p50_ms", "p99_ms", "max_ms", "other_cores",
                                        "server_cpu_us_per_delivery", "redis_commands_per_publish",
                                        "redis_bytes_in_per_publish", "redis_bytes_out_per_publish",
                                        "redis_cpu_us_per_publish")}
                rows[name]["losses"] = sum(r["losses"] for r in rs)
                rows[name]["runs"] = len(rs)
        for name, m in rows.items():
            print(f"  {label} {name:7} runs={m['runs']} {m['deliveries_per_s']:>9.0f} deliv/s  "
                  f"p50 {m['p50_ms']:.1f}  p99 {m['p99_ms']:.1f}  max {m['max_ms']:.1f} ms  "
                  f"losses {m['losses']}  (other load {m['other_cores']:.2f} cores)  "
                  f"cpu {m['server_cpu_us_per_delivery']:.2f} us/delivery"
                  + (f"  redis {m['redis_commands_per_publish']:.2f} cmds, {m['redis_bytes_in_per_publish']:.0f} B in, "
                     f"{m['redis_bytes_out_per_publish']:.0f} B out, {m['redis_cpu_us_per_publish']:.1f} us cpu per publish"
                     if name.startswith("herald-redis") else ""))
        for name in rows:
            if name.startswith("herald-redis") and "nchan" in rows and rows["nchan"]["deliveries_per_s"]:
                print(f"  {label} {name} / nchan deliveries/s "
                      f"{rows[name]['deliveries_per_s'] / rows['nchan']['deliveries_per_s']:.2f}x")
            if name.startswith("herald-redis") and "herald" in rows and rows["herald"]["deliveries_per_s"]:
                print(f"  {label} {name} / herald (memory) deliveries/s "
                      f"{rows[name]['deliveries_per_s'] / rows['herald']['deliveries_per_s']:.2f}x")
        if "herald" in rows and "nchan" in rows:
            h, n = rows["herald"], rows["nchan"]
            ratio = lambda a, b: f"{a / b:.2f}x" if b else "-"  # noqa: E731
            print(f"  {label} ratio   deliveries/s {ratio(h['deliveries_per_s'], n['deliveries_per_s'])}"
                  f"  p50 {ratio(h['p50_ms'], n['p50_ms'])}  p99 {ratio(h['p99_ms'], n['p99_ms'])}")
        elif "herald" in rows and phase == "batch":
            n = [r for r in runs if r["server"] == "nchan" and r["transport"] == transport
                 and r["shape"] == shape and r["phase"] == "burst"]
            if n:
                nd = statistics.median(r["deliveries_per_s"] for r in n)
                np99 = statistics.median(r["p99_ms"] for r in n)
                print(f"  {transport} {shape}/batch  vs nchan {shape}/burst: deliveries/s "
                      f"{rows['herald']['deliveries_per_s'] / nd:.2f}x  p99 {rows['herald']['p99_ms'] / np99:.2f}x")
    print(f"\ntotal {time.monotonic() - start:.0f}s; raw results appended to {args.out}; workdir {wd}")


if __name__ == "__main__":
    main()
