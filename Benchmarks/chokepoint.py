#!/usr/bin/env python3
"""Choke-point benchmark: notifications/s through POST /v1/notifications (store + broadcast + plan
+ enqueue, durable SQLite), driven by h2load over HTTP/1.1.

    python3 Benchmarks/chokepoint.py                       # builds Herald (release) first
    python3 Benchmarks/chokepoint.py --herald-bin .build/release/herald --repeat 3

Each phase is a fresh Herald (fresh SQLite file) pointed at the provider double (started once, as
Tests/ProviderDouble/fixture.py's start_double does), and one constant request body naming R
recipients (users r0 … r{R-1}); h2load --h1 -c C sends it for --warmup s, then measures for
--duration s. Shapes:
  no-device   the recipients have no devices: inbox row + `notification.created` on user:{id} +
              plan, no push
  ios-device  each recipient has one iOS device (APNs, push on by default): each notification also
              queues a push.deliver job, and the worker sends it meanwhile
--sink native (default, issue 17): the pushes go to the native sink (Benchmarks/h2sink.c, see push.py),
so the double's speed (~2,000/s) does not cap them; --sink nghttpd to `nghttpd --echo-upload` (the sink
before it); --sink double to the double.
notifications/s = h2load's calls/s x R. Pushes delivered/s (Herald's /metrics, during the window)
show how much pushing went on at the same time. Targets: >= 5 000 notifications/s with one
recipient each (issue 8); >= 10 000 notifications/s pushed with one iOS device each (issue 17).
--database postgres / --broker redis (issue 16) run every phase on a fresh database of one
PostgreSQL the driver starts, and/or on one redis-server it starts (with either sink), and add what
each engine did per notification: PostgreSQL commits, rows written, WAL bytes and CPU (read 11 s
after the window, when the backends have published their counters); Redis commands, bytes and CPU.
--perf DIR records Herald with perf during the measured window. Output: a line per phase,
the medians as a table, then one JSON summary line.
"""
import argparse
import json
import os
import secrets
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

SHAPES = ("no-device", "ios-device")


def body_for(recipients):
    return {"recipients": {"user_ids": [f"r{j}" for j in range(recipients)]}, "kind": "bench.created",
            "title": "Benchmark", "body": "A notification through the choke point", "data": {"source": "bench"}}


def register_devices(h, recipients):
    http = B.HTTP(h.port)
    try:
        for j in range(recipients):
            status, body = http.call("POST", "/v1/me/devices", {"platform": "ios", "token": secrets.token_hex(32)},
                                     {"Authorization": f"Bearer {h.token(f'r{j}', f's{j}')}"})
            if status != 201:
                raise RuntimeError(f"device registration answered {status}: {body}")
    finally:
        http.close()


def check_one(h, recipients, shape):
    """One call by hand before the load: the body is accepted, and plans what the shape says."""
    http = B.HTTP(h.port)
    try:
        status, body = http.call("POST", "/v1/notifications", body_for(recipients), h.server_headers())
    finally:
        http.close()
    if status != 201 or len(body["notifications"]) != recipients:
        raise RuntimeError(f"POST /v1/notifications answered {status}: {body}")
    want = recipients if shape == "ios-device" else 0
    if body["push_queued"] != want:
        raise RuntimeError(f"{shape}: push_queued is {body['push_queued']}, expected {want}: {body}")


def delivered(h):
    """APNs pushes Herald counted delivered so far (its /metrics)."""
    return B.metric_values(h, "herald_push_results_total").get('{outcome="delivered",provider="apns"}', 0)


def planned(h):
    """Notifications Herald stored and planned so far (its /metrics)."""
    return B.metric_values(h, "herald_notifications_total").get("", 0)


def run_phase(procs, binary, wd, double, shape, recipients, args, sink=None, engines=None):
    os.makedirs(wd, exist_ok=True)
    double.api.reset()
    wrapper = B.callgrind_wrapper(args.callgrind, f"chokepoint-{shape}-{recipients}") if args.callgrind else ()
    env = dict(double.api.herald_env())
    if sink:
        env["HERALD_APNS_URL"] = env["HERALD_APNS_SANDBOX_URL"] = sink.base_url
    engines = engines or {}
    pg, redis, database = engines.get("postgres"), engines.get("redis"), None
    if pg is not None:
        database = f"choke_{shape.replace('-', '_')}_{recipients}_{secrets.token_hex(3)}"
        pg.sql(f'CREATE DATABASE "{database}"', database="postgres")
        env["HERALD_DATABASE"] = pg.url.rsplit("/", 1)[0] + "/" + database
    if redis is not None:
        env["HERALD_BROKER"] = redis.url
    h = B.Herald(procs, binary, wd, loops=args.loops, extra_env=env, wrapper=wrapper)
    pg_cost = redis_cost = None
    h.start()
    instructions = None
    try:
        if shape == "ios-device":
            register_devices(h, recipients)
        check_one(h, recipients, shape)
        body_file = os.path.join(wd, "body.json")
        with open(body_file, "w") as f:
            json.dump(body_for(recipients), f, separators=(",", ":"))
        argv = ["--h1", "-c", str(args.c), "-t", str(args.threads), "-D", f"{args.duration:g}",
                "--warm-up-time", f"{args.warmup:g}", "-d", body_file,
                "-H", f"authorization: Bearer {h.server_key}", "-H", "content-type: application/json",
                f"http://127.0.0.1:{h.port}/v1/notifications"]
        # Herald is idle now: wait for other work on the machine to calm down.
        quiet = B.quiet_reading(args)
        # The measured window starts after h2load's warm-up: CPU and the double's counters are read
        # then, and perf (if asked) starts then.
        load = B.H2Load(procs, argv, timeout=args.warmup + args.duration + 60, outdir=wd,
                        tag=f"{shape}-{recipients}").start()
        time.sleep(args.warmup + 0.3)  # + h2load's own start and connects
        if load.p.poll() is not None:
            raise RuntimeError(f"h2load ended before its warm-up did; see {load.out_path}")
        pids = {"herald": h.p.pid, "double": double.p.pid}
        if sink:
            pids["sink"] = sink.p.pid
        sink0 = sink.stats() if sink else None
        h2_0 = B.thread_counters(h.p.pid)
        sys_0 = B.process_syscalls(h.p.pid)
        cpu = B.CPUWindow(pids, threads_of="herald").start()
        pgc = B.PostgresCounters(pg, database).start() if pg is not None else None
        rc = B.RedisCounters(redis).start() if redis is not None else None
        delivered0, t0 = delivered(h), time.monotonic()
        perf = (B.perf_start(procs, h.p.pid, os.path.join(args.perf, f"perf-chokepoint-{shape}-{recipients}.data"),
                             args.perf_call_graph) if args.perf else None)
        if args.callgrind:
            # Counted from inside the window: attaching callgrind_control takes seconds, so h2load's
            # own count of calls is larger than what the dump holds.
            B.callgrind_start(h.p.pid)
            planned0 = planned(h)
        res = load.finish()
        t1 = time.monotonic()
        if args.callgrind:
            planned1 = planned(h)
            instructions = B.callgrind_stop(h.p.pid, args.callgrind, f"chokepoint-{shape}-{recipients}")
        delivered1 = delivered(h)
        sink1 = sink.stats() if sink else None
        h2_1 = B.thread_counters(h.p.pid)
        sys_1 = B.process_syscalls(h.p.pid)
        if perf:
            B.perf_stop(procs, perf)
        # The engines' CPU (and h2load's over the window) is the phase's own work, not other work.
        engine_cpu = B.tree_cpu_seconds(pg.proc.pid) - pgc.cpu0 if pgc else 0.0
        redis_cost = rc.stop() if rc else None
        c = cpu.stop(extra_cpu_s=res["cpu_s"] * (args.duration / (args.duration + args.warmup)) + engine_cpu
                     + (redis_cost["redis_cpu_s"] if redis_cost else 0.0))
        rss = B.proc_rss_kib(h.p.pid)
        pg_cost = pgc.stop() if pgc else None
    finally:
        h.stop()
    calls = res.get("req_per_s") or 0
    out = {"shape": shape, "recipients": recipients, "connections": args.c, "duration_s": args.duration,
           "calls_per_s": round(calls), "notifications_per_s": round(calls * recipients),
           "requests": res.get("succeeded", 0), "failed": res.get("failed", 0) + res.get("errored", 0) + res.get("timeout", 0),
           "non_2xx": sum(res.get(k, 0) for k in ("3xx", "4xx", "5xx")), "mean_ms": res.get("mean_ms"),
           "max_ms": res.get("max_ms"),
           "pushes_answered_per_s": round((delivered1 - delivered0) / (t1 - t0)), "sink": sink.kind if sink else "double",
           "herald_rss_kib": rss, "h2load_cpu_s": res["cpu_s"], "other_cores_before": quiet}
    # The engines' counters span the window plus the tail of h2load's last calls: per notification
    # over the window's calls (h2load counts the measured ones).
    n_window = max(1, res.get("succeeded", 0) * recipients)
    if pg_cost:
        out.update(pg_cost)
        out["pg_commits_per_notification"] = round(pg_cost["pg_commits"] / n_window, 3)
        out["pg_rows_written_per_notification"] = round((pg_cost["pg_rows_inserted"] + pg_cost["pg_rows_updated"]
                                                        + pg_cost["pg_rows_deleted"]) / n_window, 2)
        out["pg_wal_bytes_per_notification"] = round(pg_cost["pg_wal_bytes"] / n_window)
        out["pg_cpu_us_per_notification"] = round(pg_cost["pg_cpu_s"] / n_window * 1e6)
    if redis_cost:
        out.update(redis_cost)
        out["redis_commands_per_notification"] = round(redis_cost["redis_commands"] / n_window, 2)
        out["redis_bytes_per_notification"] = round((redis_cost["redis_bytes_in"] + redis_cost["redis_bytes_out"])
                                                    / n_window)
        out["redis_cpu_us_per_notification"] = round(redis_cost["redis_cpu_s"] / n_window * 1e6, 1)
    if instructions is not None and planned1 > planned0:
        out["instructions_per_notification"] = round(instructions / (planned1 - planned0))
    out.update(c)
    out.update(B.sink_counts(sink0, sink1))
    pushes = delivered1 - delivered0
    if h2_0 and h2_1 and pushes > 0:
        # the HTTP/2 driver thread's read/write system calls and wake-ups per push (issue 17)
        out["h2_syscalls_per_push"] = round((h2_1["syscalls"] - h2_0["syscalls"]) / pushes, 3)
        out["h2_wakeups_per_push"] = round((h2_1["wakeups"] - h2_0["wakeups"]) / pushes, 3)
        out["h2_cpu_us_per_push"] = round((h2_1["cpu_s"] - h2_0["cpu_s"]) / pushes * 1e6, 1)
    n_calls = res.get("succeeded", 0) * recipients
    if n_calls:
        # every read/write system call of Herald (API, planning, pushes) per notification
        out["herald_syscalls_per_notification"] = round((sys_1 - sys_0) / n_calls, 3)
    return out


def fmt(r):
    return (f"{r['shape']:10} R={r['recipients']:<3} {r['notifications_per_s']:>7}/s notifications "
            f"({r['calls_per_s']} calls/s, mean {r['mean_ms']} ms, max {r['max_ms']} ms) failed={r['failed']} "
            f"non2xx={r['non_2xx']} pushes delivered {r['pushes_answered_per_s']}/s  cpu herald "
            f"{r['herald_user_s']}u+{r['herald_sys_s']}s double {r['double_user_s']}u+{r['double_sys_s']}s "
            + (f"sink {r['sink_user_s']}u+{r['sink_sys_s']}s " if "sink_user_s" in r else "")
            + (f"({(r['sink_user_s'] + r['sink_sys_s']) / r['sink_requests'] * 1e6:.1f} µs/request, "
               f"{r['sink_requests']} requests) " if r.get("sink_requests") else "")
            + (f"h2 thread: {r['h2_syscalls_per_push']} syscalls, {r['h2_wakeups_per_push']} wake-ups, "
               f"{r['h2_cpu_us_per_push']} µs CPU per push "
               if "h2_syscalls_per_push" in r else "")
            + (f"herald: {r['herald_syscalls_per_notification']} read/write syscalls per notification "
               if "herald_syscalls_per_notification" in r else "") +
            f"h2load {r['h2load_cpu_s']}s other={r['other_cores']} cores; busiest Herald threads "
            f"{r.get('herald_busiest_threads_cores')} cores"
            + (f"  Ir/notification={r['instructions_per_notification']}" if "instructions_per_notification" in r else "")
            + (f"  postgres per notification: {r['pg_commits_per_notification']} commits, "
               f"{r['pg_rows_written_per_notification']} rows, {r['pg_wal_bytes_per_notification']} B WAL, "
               f"{r['pg_cpu_us_per_notification']} us cpu" if "pg_commits" in r else "")
            + (f"  redis per notification: {r['redis_commands_per_notification']} cmds "
               f"{r['redis_commands_by_name']}, {r['redis_bytes_per_notification']} B, "
               f"{r['redis_cpu_us_per_notification']} us cpu" if "redis_commands" in r else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    B.add_common_arguments(ap, quiet=True, perf_call_graph=True,
                           perf_help="record Herald with perf during each measured window into DIR")
    B.add_callgrind_argument(ap)
    ap.add_argument("--recipients", default="1,100", help="recipients per call (default 1,100)")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--repeat", type=int, default=3, help="runs of every phase; the order alternates")
    ap.add_argument("-c", type=int, default=32, help="h2load connections (one request in flight each)")
    ap.add_argument("--threads", type=int, default=1, help="h2load threads")
    ap.add_argument("--duration", type=int, default=10, help="measured s per phase")
    ap.add_argument("--warmup", type=int, default=3, help="h2load warm-up s before measuring")
    ap.add_argument("--sink", choices=B.SINKS + ("double",), default="native",
                    help="where pushes go: Benchmarks/h2sink.c (native, the default), nghttpd --echo-upload, "
                         "or the Python double")
    ap.add_argument("--sink-threads", type=int, default=1, help="the native sink's worker threads (default 1)")
    ap.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite",
                    help="issue 16: PostgreSQL started by the driver")
    ap.add_argument("--broker", choices=("memory", "redis"), default="memory",
                    help="issue 16: redis-server started by the driver")
    args = ap.parse_args()
    if args.database == "postgres" or args.broker == "redis":
        B.check_engines()
    B.check_h2load()
    B.exit_on_sigterm()
    phases = [(s, int(r)) for r in args.recipients.split(",") for s in args.shapes.split(",")]
    for s, _ in phases:
        if s not in SHAPES:
            sys.exit(f"unknown shape {s}; known: {', '.join(SHAPES)}")
    start = time.monotonic()
    procs = B.Procs()
    wd = B.prepare_arguments(args, "chokepoint-results.jsonl")
    runs = []
    engines = {}
    try:
        binary = B.herald_binary(args.herald_bin)
        double = B.ProviderDouble(procs, os.path.join(wd, "double")).start()
        sink = (B.Sink(procs, os.path.join(wd, "sink"), double, kind=args.sink, workers=args.sink_threads).start()
                if args.sink in B.SINKS else None)
        if args.database == "postgres":
            engines["postgres"] = B.postgres_engine(procs)
        if args.broker == "redis":
            engines["redis"] = B.redis_engine(procs, wd)
        B.log(f"workdir {wd}; repo HEAD {B.git_commit()}; herald binary {binary}; pushes to {args.sink}; database {args.database}; broker {args.broker}; loadavg {B.loadavg()}")
        for rep in range(args.repeat):
            for shape, recipients in (phases if rep % 2 == 0 else phases[::-1]):
                if time.monotonic() - start > args.budget:
                    B.log(f"budget of {args.budget}s spent: skipping {shape}/{recipients}")
                    continue
                r = run_phase(procs, binary, os.path.join(wd, f"{shape}-{recipients}-{rep}"), double, shape,
                              recipients, args, sink=sink, engines=engines)
                B.record_run(runs, r, rep, fmt(r), args.out)
        if sink:
            sink.stop()
        double.stop()
    finally:
        if "postgres" in engines:  # also when a phase failed: the data directory goes
            engines["postgres"].cleanup()
        procs.stop_all()

    summary = {"benchmark": "chokepoint", "commit": B.git_commit(), "connections": args.c, "duration_s": args.duration,
               "sink": args.sink, "database": args.database, "broker": args.broker,
               "repeat": args.repeat, "phases": {}}
    print("\nmedians over runs (notifications/s = calls/s x recipients per call)")
    print("| shape | recipients/call | notifications/s | calls/s | runs (notifications/s) | quiet runs (other < 0.3) "
          "| mean ms | Herald CPU cores | Herald CPU µs/notification | pushes delivered/s | other cores |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for shape, recipients in phases:
        rs = [r for r in runs if r["shape"] == shape and r["recipients"] == recipients]
        if not rs:
            continue
        med = lambda k: statistics.median([r[k] or 0 for r in rs])  # noqa: E731
        cores = statistics.median([(r["herald_user_s"] + r["herald_sys_s"]) / r["wall_s"] for r in rs])
        us = statistics.median([(r["herald_user_s"] + r["herald_sys_s"]) / max(1, r["notifications_per_s"] * r["wall_s"]) * 1e6
                                for r in rs])
        s = {"notifications_per_s": med("notifications_per_s"), "calls_per_s": med("calls_per_s"),
             "runs": [r["notifications_per_s"] for r in rs], "mean_ms": round(med("mean_ms"), 2),
             "herald_cores": round(cores, 2), "herald_cpu_us_per_notification": round(us), "pushes_answered_per_s": med("pushes_answered_per_s"),
             "other_cores": max(r["other_cores"] for r in rs),
             "failed": sum(r["failed"] + r["non_2xx"] for r in rs)}
        sinks = [(r["sink_user_s"] + r["sink_sys_s"]) / r["sink_requests"] * 1e6 for r in rs if r.get("sink_requests")]
        if sinks:
            s["sink_cpu_us_per_request"] = round(statistics.median(sinks), 1)
            s["sink_cores"] = round(statistics.median([(r["sink_user_s"] + r["sink_sys_s"]) / r["wall_s"] for r in rs]), 2)
        quiet = [r["notifications_per_s"] for r in rs if r["other_cores"] < 0.3]
        s["quiet_runs"] = len(quiet)
        s["quiet_notifications_per_s"] = statistics.median(quiet) if quiet else None
        if recipients == 1:
            s["target_met"] = s["notifications_per_s"] >= 5000
        if shape == "ios-device":
            # Issue 17: notifications that were also pushed, i.e. the slower of the two rates.
            s["pushed_per_s"] = min(s["notifications_per_s"], s["pushes_answered_per_s"])
            s["target_pushed_met"] = s["pushed_per_s"] >= 10000
        summary["phases"][f"{shape}/{recipients}"] = s
        print(f"| {shape} | {recipients} | **{s['notifications_per_s']:,.0f}** | {s['calls_per_s']:,.0f} | "
              f"{' / '.join(f'{x:,}' for x in s['runs'])} | "
              f"{'-' if s['quiet_notifications_per_s'] is None else format(s['quiet_notifications_per_s'], ',.0f')} "
              f"({s['quiet_runs']}) | {s['mean_ms']} | {s['herald_cores']} | "
              f"{s['herald_cpu_us_per_notification']} | "
              f"{s['pushes_answered_per_s']:,.0f} | max {s['other_cores']} |")
    for key, s in summary["phases"].items():
        if "sink_cpu_us_per_request" in s:
            print(f"{key}: the sink ({args.sink}) used {s['sink_cores']} cores, "
                  f"{s['sink_cpu_us_per_request']} µs of CPU per request it answered (medians)")
    summary["total_s"] = round(time.monotonic() - start)
    print(f"\ntotal {summary['total_s']}s; raw results appended to {args.out}; workdir {wd}")
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
