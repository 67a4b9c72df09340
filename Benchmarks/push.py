#!/usr/bin/env python3
"""Push throughput benchmark: Herald's durable queue to a provider over HTTP/2+TLS, against
h2load sending the same requests to the same server (the ceiling of the set-up).

    python3 Benchmarks/push.py                       # builds Herald (release) first
    python3 Benchmarks/push.py --herald-bin .build/release/herald --repeat 3 --conns 2,8
    python3 Benchmarks/push.py --sink double         # the old set-up: sends go to the Python double

--sink native (the default for apns and fcm, issue 17): the sends go to Benchmarks/h2sink.c, a
native HTTP/2 sink over TLS (libnghttp2 + OpenSSL, compiled into the work dir) with the double's
loopback certificate, which answers like the providers (APNs: 200 with an apns-id; FCM: 200 with
the message name) and counts what it answered. Only the OAuth token (FCM) still comes from the
double. Herald's clock then runs from the first enqueue call until its own /metrics counts K jobs
done (polled every --poll s); h2load's is its own run time. --sink nghttpd is the sink before it,
`nghttpd --echo-upload` (Debian nghttp2-server: one thread, 200 to every POST, no counts).
--sink double: every request goes to the provider double (Tests/ProviderDouble), which checks it;
its speed (~2,000 requests/s) is then the ceiling. Correctness lives in the e2e tests, not here.

For each provider (apns, fcm) and each repeat, two phases against one provider double
(Tests/ProviderDouble, started once; its log and counters are reset before each phase):
  herald  a fresh Herald (fresh SQLite file) with double.herald_env(); K devices registered
          (user u{i}, session s{i}); a warm-up of --warmup pushes to other devices opens the
          HTTP/2 connections (and, for FCM, fetches the OAuth token). Then K jobs are queued with
          POST /v1/push {device_ids} (1000 per call), and the clock runs from the first enqueue
          call until the double has answered all K.
  h2load  h2load sends K requests to the double: the same method, path (APNs: one URI per device
          token), headers and JSON body as Herald's (captured from the double's log of a probe
          push at start), with a valid bearer (APNs: double.apns_jwt(); FCM: an access token from
          the double's /token). -c = Herald's connections per provider, -m = in-flight / -c.
pushes/s = K / (time to the last answer). ratio = Herald / h2load. Target (issue 17): >= 0.8x
against the native sink, <= 50 µs of Herald CPU per push. --conns 2,8 runs every phase per count.
--providers expo (issue 15) runs the Herald phase only, against the double's Expo side: Herald
batches pushes into requests of up to 100 messages, so there is no one-request-per-push h2load
replay to compare with; it reports pushes/s (accepted tickets), CPU per push and messages per request.
--providers webpush (issue 15): browser subscriptions whose endpoints are open subscriptions of the
double (it checks VAPID, headers and the aes128gcm record, all but decryption); Herald encrypts
each push to its subscription's key (RFC 8291); h2load replays one encrypted body with Herald's
VAPID header to every endpoint.
--databases sqlite,postgres (issue 16) runs Herald's phase once per database: "herald" on a fresh
SQLite file, "herald-pg" on a fresh database of one PostgreSQL server the driver starts (initdb in
a temp dir, as the postgres user, fsync=off as in the tests: the figures are the queue's own cost,
not a disk's), with either sink. A PostgreSQL phase also reports commits, rows written and WAL bytes
per push (pg_stat_database, read after the backends published them: +11 s per phase) and the
server's CPU, and the summary adds a PostgreSQL-against-SQLite table per provider and --conns.
Both also get a "send window" rate: K / (first request seen by the double -> last answer).
Against h2sink each phase also reports the sink's requests (by kind) and CPU per request, Herald's
pushes counted delivered, and the read/write system calls and wake-ups of Herald's HTTP/2 driver
thread per push. --perf DIR records Herald with perf during its phases; --callgrind DIR counts its instructions per push
(valgrind; see README). Output: a line per phase, the medians with
the ratios as a table, then one JSON summary line.
"""
import argparse
import base64
import json
import os
import secrets
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

NOTIFICATION = {"kind": "alert", "title": "Benchmark", "body": "One of many pushes", "data": {"source": "bench"}}
# Headers not replayed from Herald's request: h2load sets its own length, and the bearer is ours.
NOT_REPLAYED = {"authorization", "content-length", "host"}


def apns_token():
    return secrets.token_hex(32)


def fcm_token():
    return f"f{uuid.uuid4().hex[:12]}:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7_B338q"


def expo_token():
    return f"ExponentPushToken[{uuid.uuid4().hex[:22]}]"


# The double's origin, set once it runs: Web Push endpoints point at it.
WEBPUSH_ORIGIN = None


def webpush_token():
    """A browser subscription in Herald's stored form, `<endpoint>#p256dh=…&auth=…`, whose endpoint
    is an *open* subscription of the double (it checks everything but decryption: it does not hold
    the key) and whose key is a real P-256 point (Herald encrypts to it)."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives import serialization
    key = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    return f"{WEBPUSH_ORIGIN}/wp/{uuid.uuid4().hex}#p256dh={b64(key)}&auth={b64(secrets.token_bytes(16))}"


PLATFORM = {"apns": ("ios", apns_token), "fcm": ("android", fcm_token), "expo": ("ios", expo_token),
            "webpush": ("web", webpush_token)}
# The status a provider answers an accepted push with.
ACCEPTED = {"apns": 200, "fcm": 200, "webpush": 201}


def jobs_done(h):
    return int(B.metric_values(h, "herald_push_jobs").get('{state="done"}', 0))


def delivered(h, provider):
    """Pushes to `provider` that Herald counted delivered (its /metrics): the answers it classified."""
    return int(B.metric_values(h, "herald_push_results_total").get(f'{{outcome="delivered",provider="{provider}"}}', 0))


def wait_done(h, count, timeout, poll):
    """Polls Herald's /metrics until `count` push jobs are done; returns (done, time it was seen)."""
    end = time.monotonic() + timeout
    while True:
        done = jobs_done(h)
        if done >= count or time.monotonic() > end:
            return done, time.time()
        time.sleep(poll)


def start_herald(procs, binary, wd, double, args, wrapper=(), sink=None, conns=None, database_url=None):
    env = dict(double.api.herald_env())
    env["HERALD_PUSH_MAX_CONNECTIONS"] = str(conns or args.conns[0])
    if database_url:
        env["HERALD_DATABASE"] = database_url
    if sink:
        env["HERALD_APNS_URL"] = env["HERALD_APNS_SANDBOX_URL"] = env["HERALD_FCM_URL"] = sink.base_url
    os.makedirs(wd, exist_ok=True)
    h = B.Herald(procs, binary, wd, loops=args.loops, extra_env=env, wrapper=wrapper)
    h.start()
    return h


def register(h, provider, n, prefix):
    """Registers n devices of `provider`, user {prefix}{i} with session {prefix}s{i} (a sid names one
    user's session); returns [(device id, token)]."""
    platform, make = PLATFORM[provider]
    http = B.HTTP(h.port)
    out = []
    try:
        for i in range(n):
            token = make()
            status, body = http.call("POST", "/v1/me/devices", {"platform": platform, "token": token},
                                     {"Authorization": f"Bearer {h.token(f'{prefix}{i}', f'{prefix}s{i}')}"})
            if status != 201:
                raise RuntimeError(f"device registration answered {status}: {body}")
            out.append((body["id"], token))
    finally:
        http.close()
    return out


def enqueue(h, device_ids, per_call=1000):
    """POST /v1/push {device_ids} in calls of `per_call`; returns the jobs queued."""
    http = B.HTTP(h.port, timeout=60)
    queued = 0
    try:
        for k in range(0, len(device_ids), per_call):
            status, body = http.call("POST", "/v1/push", {"device_ids": device_ids[k:k + per_call],
                                                          "notification": NOTIFICATION}, h.server_headers())
            if status != 202:
                raise RuntimeError(f"POST /v1/push answered {status}: {body}")
            queued += body["queued"]
    finally:
        http.close()
    return queued


def wait_answered(double, provider, count, timeout):
    """Polls the double's counters until `count` requests of `provider` were answered (any status);
    for Expo, `count` messages (one ticket each, many per request)."""
    end = time.monotonic() + timeout
    while True:
        st = double.api.stats()
        done = st["expo_messages"] if provider == "expo" else sum(st["by_status"].get(provider, {}).values())
        if done >= count or time.monotonic() > end:
            return done, st
        time.sleep(0.05)


def log_window(double, provider):
    """(entries, first arrival, last answer) of the double's finished requests of `provider`."""
    entries = [e for e in double.api.requests(provider) if e["outcome"] is not None]
    if not entries:
        return entries, None, None
    return (entries, min(e["time"] for e in entries),
            max(e["time"] + e["duration_ms"] / 1000.0 for e in entries))


def probe(procs, binary, wd, double, args):
    """One push per provider through a throw-away Herald: the exact request h2load must replay."""
    h = start_herald(procs, binary, os.path.join(wd, "probe"), double, args)
    shapes = {}
    try:
        for provider in args.providers:
            if provider == "expo":
                continue  # no h2load replay for batched requests
            double.api.reset()
            (dev, token), = register(h, provider, 1, f"probe-{provider}-")
            enqueue(h, [dev])
            done, _ = wait_answered(double, provider, 1, 30)
            entries, _, _ = log_window(double, provider)
            if not entries or entries[0]["status"] != ACCEPTED[provider]:
                raise RuntimeError(f"probe push to {provider} failed: {entries[:1]}")
            e = entries[0]
            headers = {k: v for k, v in e["headers"].items() if k not in NOT_REPLAYED}
            if provider == "webpush":
                # The body is encrypted to one subscription's key: h2load replays those bytes to every
                # endpoint (open subscriptions: the double checks all but decryption), with Herald's
                # own VAPID authorization (valid 12 h).
                body = base64.urlsafe_b64decode(e["encrypted_body"] + "=" * (-len(e["encrypted_body"]) % 4))
                headers["authorization"] = e["headers"]["authorization"]
            else:
                body = json.dumps(e["body"], separators=(",", ":"), ensure_ascii=False).encode()
            if len(body) != e["body_bytes"]:
                B.log(f"  note: the replayed {provider} body is {len(body)} bytes, Herald's was {e['body_bytes']}")
            path = e["path"]
            if provider in ("apns", "webpush"):  # the token (subscription id) is the last path segment
                path = path.rsplit("/", 1)[0] + "/{token}"
            if provider == "apns":  # the double's gateway prefix (/production) is not the sink's
                path = path[path.index("/3/device/"):]
            shapes[provider] = {"method": e["method"], "path": path, "headers": headers, "body": body}
            B.log(f"  {provider} request: {e['method']} {path} headers {sorted(headers)} body {len(body)} B")
    finally:
        h.stop()
    return shapes


def herald_phase(procs, binary, wd, double, provider, args, sink=None, conns=2, pg=None, rep=0):
    """Herald's phase; with `pg` (a started PostgreSQL) on a fresh database of it ("herald-pg")."""
    double.api.reset()
    client = "herald-pg" if pg is not None else "herald"
    tag = f"push-{provider}-c{conns}" + ("-pg" if pg is not None else "")
    wrapper = B.callgrind_wrapper(args.callgrind, tag) if args.callgrind else ()
    url = database = None
    if pg is not None:
        database = f"bench_{provider}_c{conns}_{rep}_{secrets.token_hex(3)}"
        pg.sql(f'CREATE DATABASE "{database}"', database="postgres")
        url = pg.url.rsplit("/", 1)[0] + "/" + database
    h = start_herald(procs, binary, wd, double, args, wrapper=wrapper, sink=sink, conns=conns, database_url=url)
    pg_cost = None
    instructions = None
    try:
        warm = register(h, provider, args.warmup, "warm")
        devices = register(h, provider, args.k, "u")
        if warm:
            enqueue(h, [d for d, _ in warm])
            if sink:
                done, _ = wait_done(h, len(warm), 60, args.poll)
            else:
                done, _ = wait_answered(double, provider, len(warm), 60)
            if done < len(warm):
                raise RuntimeError(f"warm-up: {done}/{len(warm)} pushes answered")
        time.sleep(args.settle)
        double.api.reset()
        done_before = jobs_done(h) if sink else 0
        delivered_before = delivered(h, provider) if sink else 0
        quiet = B.quiet_reading(args)
        perf = B.perf_start(procs, h.p.pid, os.path.join(args.perf, f"perf-{tag}.data"),
                             args.perf_call_graph) if args.perf else None
        if args.callgrind:
            B.callgrind_start(h.p.pid)
        pids = {"herald": h.p.pid, "double": double.p.pid}
        if sink:
            pids["sink"] = sink.p.pid
        cpu = B.CPUWindow(pids, threads_of="herald").start()
        sink0 = sink.stats() if sink else None
        h2_0 = B.thread_counters(h.p.pid)
        sys_0 = B.process_syscalls(h.p.pid)
        pgc = B.PostgresCounters(pg, database).start() if pg is not None else None
        t0 = time.time()
        queued = enqueue(h, [d for d, _ in devices])
        t_enq = time.time()
        if sink:
            done, t_done = wait_done(h, done_before + args.k, args.timeout, args.poll)
            done -= done_before
        else:
            done, st = wait_answered(double, provider, args.k, args.timeout)
        # PostgreSQL's CPU is the phase's own work, not other work on the machine.
        c = cpu.stop(extra_cpu_s=B.tree_cpu_seconds(pg.proc.pid) - pgc.cpu0 if pgc else 0.0)
        sink1 = sink.stats() if sink else None
        h2_1 = B.thread_counters(h.p.pid)
        sys_1 = B.process_syscalls(h.p.pid)
        if pgc:
            if not sink:
                # The double's answer comes before the worker records the outcome: let it record
                # the last ones before the database's counters are read. (With the sink the clock
                # stops on Herald's own done count, which is read after the outcome is stored.)
                time.sleep(1.0)
            pg_cost = pgc.stop()
        if args.callgrind:
            instructions = B.callgrind_stop(h.p.pid, args.callgrind, tag)
        if perf:
            B.perf_stop(procs, perf)
        if sink:
            results = B.metric_values(h, "herald_push_results_total")
            delivered_after = delivered(h, provider)
    finally:
        h.stop()
    if sink:
        # The sink keeps no log: Herald's own records say what was sent and how it ended.
        # Classification: the jobs Herald counted delivered to this provider in the window.
        out = {"provider": provider, "client": client, "target": sink.kind, "conns": conns, "k": args.k,
               "queued": queued, "answered": done, "ok": done, "statuses": {k: int(v) for k, v in results.items()},
               "delivered": int(delivered_after - delivered_before),
               "connections": conns, "enqueue_s": round(t_enq - t0, 3), "other_cores_before": quiet,
               "total_s": round(t_done - t0, 3), "pushes_per_s": round(done / (t_done - t0))}
        if instructions is not None:
            out["instructions"] = instructions
            out["instructions_per_push"] = round(instructions / done) if done else None
        out.update(c)
        out.update(B.sink_counts(sink0, sink1))
        if h2_0 and h2_1 and done:
            # the HTTP/2 driver thread's read/write system calls and wake-ups per push (issue 17)
            out["h2_syscalls_per_push"] = round((h2_1["syscalls"] - h2_0["syscalls"]) / done, 3)
            out["h2_wakeups_per_push"] = round((h2_1["wakeups"] - h2_0["wakeups"]) / done, 3)
            out["h2_cpu_us_per_push"] = round((h2_1["cpu_s"] - h2_0["cpu_s"]) / done * 1e6, 1)
        if done:
            out["herald_syscalls_per_push"] = round((sys_1 - sys_0) / done, 3)
        add_pg_cost(out, pg_cost, args.k)
        return out
    entries, first, last = log_window(double, provider)
    if provider == "expo":
        ok = sum(1 for e in entries for t in e.get("tickets") or [] if t == "ok")
    else:
        ok = sum(1 for e in entries if e["status"] == ACCEPTED.get(provider, 200))
    out = {"provider": provider, "client": client, "target": "double", "conns": conns, "k": args.k, "queued": queued, "answered": done,
           "ok": ok, "statuses": st["by_status"].get(provider, {}), "connections": st["connections_distinct"],
           "enqueue_s": round(t_enq - t0, 3), "other_cores_before": quiet}
    if provider == "expo":
        out["requests"] = len(entries)
        out["messages_per_request"] = round(done / len(entries), 1) if entries else None
    if instructions is not None:
        out["instructions"] = instructions
        out["instructions_per_push"] = round(instructions / done) if done else None
    if last:
        out["total_s"] = round(last - t0, 3)
        out["pushes_per_s"] = round(ok / (last - t0))
        out["send_window_s"] = round(last - first, 3)
        out["send_window_per_s"] = round(ok / (last - first)) if last > first else None
        out["first_request_after_s"] = round(first - t0, 3)
    out.update(c)
    add_pg_cost(out, pg_cost, args.k)
    return out


def add_pg_cost(out, pg_cost, k):
    """Adds PostgresCounters' reading and its per-push figures (commits, rows, WAL bytes, µs of
    the server's CPU) to a phase's result; nothing for a SQLite phase."""
    if not pg_cost:
        return
    out.update(pg_cost)
    for key in ("pg_commits", "pg_rows_inserted", "pg_rows_updated", "pg_rows_deleted", "pg_wal_bytes"):
        out[key + "_per_push"] = round(pg_cost[key] / k, 2)
    out["pg_cpu_us_per_push"] = round(pg_cost["pg_cpu_s"] / k * 1e6)


def h2load_phase(procs, wd, double, provider, shape, tokens, args, sink=None, conns=2):
    os.makedirs(wd, exist_ok=True)
    double.api.reset()
    base = sink.base_url if sink else double.api.base_url
    if provider == "apns":
        bearer = "bearer " + double.api.apns_jwt()
        uris = [base + shape["path"].replace("{token}", t) for t in tokens]
    elif provider == "webpush":
        bearer = None  # the shape's own VAPID authorization header
        uris = [t.split("#", 1)[0] for t in tokens]
    else:
        bearer = "Bearer " + double.fcm_access_token()
        uris = [base + shape["path"]]
        double.api.reset()  # the token request is not part of the phase
    uri_file = os.path.join(wd, f"uris-{provider}.txt")
    with open(uri_file, "w") as f:
        f.write("\n".join(uris) + "\n")
    body_file = os.path.join(wd, f"body-{provider}.json")
    with open(body_file, "wb") as f:
        f.write(shape["body"])
    streams = args.h2load_m or max(1, 256 // conns)
    argv = ["-n", str(args.k), "-c", str(args.h2load_c or conns), "-m", str(streams), "-t", "1",
            "-i", uri_file, "-d", body_file] + (["-H", f"authorization: {bearer}"] if bearer else [])
    for k, v in shape["headers"].items():
        argv += ["-H", f"{k}: {v}"]
    quiet = B.quiet_reading(args)
    pids = {"double": double.p.pid}
    if sink:
        pids["sink"] = sink.p.pid
    sink0 = sink.stats() if sink else None
    cpu = B.CPUWindow(pids).start()
    t0 = time.time()
    res = B.run_h2load(procs, argv, timeout=args.timeout, outdir=wd, tag=provider)
    c = cpu.stop(extra_cpu_s=res["cpu_s"])
    sink1 = sink.stats() if sink else None
    if sink:
        ok = res.get("2xx", 0)
        out = {"provider": provider, "client": "h2load", "target": sink.kind, "conns": conns, "k": args.k,
               "answered": res.get("done", 0), "ok": ok, "statuses": {"2xx": ok, "failed": res.get("failed", 0)},
               "connections": conns, "h2load": {k: v for k, v in res.items() if k != "output"},
               "other_cores_before": quiet, "h2load_cpu_s": res["cpu_s"]}
        if res["finished_s"]:
            out["total_s"] = round(res["finished_s"], 3)
            out["pushes_per_s"] = round(ok / res["finished_s"])
        out.update(c)
        out.update(B.sink_counts(sink0, sink1))
        return out
    st = double.api.stats()
    entries, first, last = log_window(double, provider)
    ok = sum(1 for e in entries if e["status"] == ACCEPTED.get(provider, 200))
    out = {"provider": provider, "client": "h2load", "target": "double", "conns": conns, "k": args.k, "answered": len(entries), "ok": ok,
           "statuses": st["by_status"].get(provider, {}), "connections": st["connections_distinct"],
           "h2load": {k: v for k, v in res.items() if k != "output"}, "other_cores_before": quiet}
    if res["finished_s"]:
        out["total_s"] = round(res["finished_s"], 3)
        out["pushes_per_s"] = round(ok / res["finished_s"])
    if last:
        out["send_window_s"] = round(last - first, 3)
        out["send_window_per_s"] = round(ok / (last - first)) if last > first else None
        out["first_request_after_s"] = round(first - t0, 3)
    out["h2load_cpu_s"] = res["cpu_s"]
    out.update(c)
    return out


def quiet_ratio(rows, limit=0.3):
    h = [r["pushes_per_s"] for r in rows["herald"] if r["other_cores"] < limit and r.get("pushes_per_s")]
    c = [r["pushes_per_s"] for r in rows["h2load"] if r["other_cores"] < limit and r.get("pushes_per_s")]
    if not h or not c:
        return {"quiet_runs": [len(h), len(c)], "quiet_ratio": None}
    return {"quiet_runs": [len(h), len(c)], "quiet_herald_pushes_per_s": statistics.median(h),
            "quiet_h2load_pushes_per_s": statistics.median(c),
            "quiet_ratio": round(statistics.median(h) / statistics.median(c), 2)}


def paired_ratios(rows):
    """Herald / h2load per repeat: the two runs of a repeat are back to back, so they share the
    machine's state (the double's speed drifts between runs on this VM; see RESULTS.md)."""
    h2 = {r["repeat"]: r.get("pushes_per_s") for r in rows["h2load"]}
    return [round(r["pushes_per_s"] / h2[r["repeat"]], 2) for r in rows["herald"]
            if r.get("pushes_per_s") and h2.get(r["repeat"])]


def fmt(r):
    cpu = f"herald {r['herald_user_s']}u+{r['herald_sys_s']}s " if "herald_user_s" in r else f"h2load {r['h2load_cpu_s']}s "
    if "herald_user_s" in r:
        cpu += f"({(r['herald_user_s'] + r['herald_sys_s']) / r['k'] * 1e6:.0f} µs/push) "
    peer = (f"sink {r['sink_user_s']}u+{r['sink_sys_s']}s " if "sink_user_s" in r
            else f"double {r['double_user_s']}u+{r['double_sys_s']}s ")
    if r.get("sink_requests"):
        peer += (f"({(r['sink_user_s'] + r['sink_sys_s']) / r['sink_requests'] * 1e6:.1f} µs/request, "
                 f"{r['sink_requests']} requests) ")
    if "delivered" in r:
        peer += f"delivered={r['delivered']} "
    if "h2_syscalls_per_push" in r:
        peer += (f"h2 thread: {r['h2_syscalls_per_push']} syscalls, {r['h2_wakeups_per_push']} wake-ups, "
                 f"{r['h2_cpu_us_per_push']} µs CPU per push ")
    if "herald_syscalls_per_push" in r:
        peer += f"herald: {r['herald_syscalls_per_push']} read/write syscalls per push "
    return (f"{r['provider']:4} {r['client']:6} c={r['conns']} ok={r['ok']}/{r['k']} {r.get('pushes_per_s', 0):>6}/s "
            f"(total {r.get('total_s', '-')} s; send window {r.get('send_window_per_s', '-')}/s) "
            f"conns={r['connections']} cpu {cpu}{peer}"
            f"other={r['other_cores']} cores statuses={r['statuses']}"
            + (f" busiest Herald threads {r['herald_busiest_threads_cores']} cores" if "herald_busiest_threads_cores" in r else "")
            + (f" Ir/push={r['instructions_per_push']}" if "instructions_per_push" in r else "")
            + (f" postgres: {r['pg_commits_per_push']} commits, {r['pg_rows_inserted_per_push']} ins + "
               f"{r['pg_rows_updated_per_push']} upd + {r['pg_rows_deleted_per_push']} del rows, "
               f"{r['pg_wal_bytes_per_push']:.0f} B WAL, {r['pg_cpu_us_per_push']} us cpu per push" if "pg_commits" in r else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    B.add_common_arguments(ap, quiet=True, perf_call_graph=True,
                           perf_help="record Herald with perf during its phases into DIR")
    B.add_callgrind_argument(ap)
    ap.add_argument("--k", type=int, default=10000, help="pushes (and devices) per phase (default 10000)")
    ap.add_argument("--providers", default="apns,fcm", help="comma-separated apns, fcm, webpush, expo (expo: Herald only)")
    ap.add_argument("--sink", choices=B.SINKS + ("double",), default="native",
                    help="where sends go: Benchmarks/h2sink.c (native, the default; apns and fcm only), "
                         "nghttpd --echo-upload, or the Python double")
    ap.add_argument("--sink-threads", type=int, default=1, help="the native sink's worker threads (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per provider; the order alternates")
    ap.add_argument("--conns", default="2", help="HERALD_PUSH_MAX_CONNECTIONS, comma-separated: one set of phases each "
                                                 "(default 2, Herald's; issue 17 reports 2,8)")
    ap.add_argument("--h2load-c", type=int, default=0, help="h2load connections (default: the phase's --conns)")
    ap.add_argument("--h2load-m", type=int, default=0,
                    help="h2load streams per connection (default: 256 / connections, the worker's in-flight limit)")
    ap.add_argument("--warmup", type=int, default=200, help="warm-up pushes before Herald's timed phase")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--databases", default="sqlite", help="Herald's phase once per database: sqlite, postgres (issue 16)")
    ap.add_argument("--poll", type=float, default=0.05, help="s between two reads of Herald's /metrics (sink)")
    ap.add_argument("--timeout", type=float, default=180.0, help="s a phase may take")
    args = ap.parse_args()
    args.providers = args.providers.split(",")
    args.conns = [int(c) for c in args.conns.split(",")]
    args.databases = args.databases.split(",")
    unknown = set(args.databases) - {"sqlite", "postgres"}
    if unknown or not args.databases:
        sys.exit(f"unknown --databases {','.join(sorted(unknown))}; known: sqlite, postgres")
    if "postgres" in args.databases:
        B.check_engines()
    B.check_h2load()
    B.exit_on_sigterm()
    start = time.monotonic()
    procs = B.Procs()
    wd = B.prepare_arguments(args, "push-results.jsonl")
    runs = []
    pg = None
    try:
        binary = B.herald_binary(args.herald_bin)
        double = B.ProviderDouble(procs, os.path.join(wd, "double")).start()
        global WEBPUSH_ORIGIN
        WEBPUSH_ORIGIN = double.api.base_url
        sink = (B.Sink(procs, os.path.join(wd, "sink"), double, kind=args.sink, workers=args.sink_threads).start()
                if args.sink in B.SINKS else None)
        B.log(f"workdir {wd}; repo HEAD {B.git_commit()}; herald binary {binary}; double {double.api.base_url}; "
              f"sink {sink.base_url if sink else '-'}; loadavg {B.loadavg()}")
        shapes = probe(procs, binary, wd, double, args)
        pg = B.postgres_engine(procs) if "postgres" in args.databases else None
        heralds = ["herald" if db == "sqlite" else "herald-pg" for db in args.databases]
        tokens = {p: [PLATFORM[p][1]() for _ in range(args.k)] for p in args.providers}
        for rep in range(args.repeat):
            for conns in args.conns:
                for provider in args.providers:
                    order = heralds + ["h2load"] if rep % 2 == 0 else ["h2load"] + heralds[::-1]
                    if provider == "expo":
                        order = heralds
                    # Expo and Web Push have no single native endpoint: they keep the double.
                    target = sink if provider in ("apns", "fcm") else None
                    for client in order:
                        if time.monotonic() - start > args.budget:
                            B.log(f"budget of {args.budget}s spent: skipping {provider} {client}")
                            continue
                        pd = os.path.join(wd, f"{provider}-c{conns}-{client}-{rep}")
                        if client == "herald":
                            r = herald_phase(procs, binary, pd, double, provider, args, sink=target, conns=conns)
                        elif client == "herald-pg":
                            r = herald_phase(procs, binary, pd, double, provider, args, sink=target, conns=conns,
                                             pg=pg, rep=rep)
                        else:
                            r = h2load_phase(procs, pd, double, provider, shapes[provider], tokens[provider], args,
                                             sink=target, conns=conns)
                        B.record_run(runs, r, rep, fmt(r), args.out)
        if sink:
            sink.stop()
        double.stop()
    finally:
        if pg is not None:  # also when a phase failed: the data directory goes
            pg.cleanup()
        procs.stop_all()

    summary = {"benchmark": "push", "commit": B.git_commit(), "k": args.k, "repeat": args.repeat, "sink": args.sink,
               "databases": args.databases, "herald_connections": args.conns, "providers": {}}
    peer = "sink" if args.sink in B.SINKS else "double"
    print(f"\nmedians over runs (pushes/s from the first enqueue / h2load start to the last answer; peer: {peer}"
          f"{'' if peer == 'double' else ' ' + args.sink})")
    print(f"| provider | conns | Herald pushes/s | h2load pushes/s | **ratio** | Herald runs | h2load runs "
          f"| Herald CPU µs/push | {peer} CPU µs/request (H / h2) | other cores |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for conns in args.conns:
        for provider in args.providers:
            rows = {c: [r for r in runs if r["provider"] == provider and r["client"] == c and r["conns"] == conns]
                    for c in ("herald", "h2load")}
            if not rows["herald"] or not rows["h2load"]:
                continue
            med = lambda rs, k: statistics.median([r.get(k) or 0 for r in rs])  # noqa: E731
            h, c = med(rows["herald"], "pushes_per_s"), med(rows["h2load"], "pushes_per_s")
            ratio = h / c if c else 0
            pk = "sink" if "sink_user_s" in rows["herald"][0] else "double"
            s = {"conns": conns, "herald_pushes_per_s": h, "h2load_pushes_per_s": c, "ratio": round(ratio, 2),
                 "herald_runs": [r.get("pushes_per_s") for r in rows["herald"]],
                 "h2load_runs": [r.get("pushes_per_s") for r in rows["h2load"]],
                 "herald_cpu_us_per_push": round(statistics.median(
                     [(r["herald_user_s"] + r["herald_sys_s"]) / r["k"] * 1e6 for r in rows["herald"]])),
                 # per request the sink counted (h2sink), else per push of the phase
                 "peer_cpu_us_per_request_herald": round(statistics.median(
                     [(r[f"{pk}_user_s"] + r[f"{pk}_sys_s"]) / (r.get("sink_requests") or r["k"]) * 1e6
                      for r in rows["herald"]]), 1),
                 "peer_cpu_us_per_request_h2load": round(statistics.median(
                     [(r[f"{pk}_user_s"] + r[f"{pk}_sys_s"]) / (r.get("sink_requests") or r["k"]) * 1e6
                      for r in rows["h2load"]]), 1),
                 "delivered": [r.get("delivered") for r in rows["herald"]],
                 "other_cores": max(r["other_cores"] for r in rows["herald"] + rows["h2load"]),
                 "failures": sum(r["k"] - r["ok"] for r in rows["herald"] + rows["h2load"]),
                 # The same over the runs that other work left alone (other < 0.3 cores in the window):
                 # on a shared machine Herald's phase, which needs more CPU, suffers most from it.
                 **quiet_ratio(rows),
                 "paired_ratios": paired_ratios(rows),
                 "target_met": ratio >= 0.8}
            if pk == "double":
                s["herald_send_window_per_s"] = med(rows["herald"], "send_window_per_s")
                s["h2load_send_window_per_s"] = med(rows["h2load"], "send_window_per_s")
            s["paired_ratio"] = statistics.median(s["paired_ratios"]) if s["paired_ratios"] else None
            summary["providers"][f"{provider}-c{conns}"] = s
            runs_of = lambda xs: " / ".join(f"{x:,}" for x in xs)  # noqa: E731
            print(f"| {provider} | {conns} | {h:,.0f} | {c:,.0f} | **{ratio:.2f}x** | {runs_of(s['herald_runs'])} | "
                  f"{runs_of(s['h2load_runs'])} | {s['herald_cpu_us_per_push']} | {s['peer_cpu_us_per_request_herald']} / "
                  f"{s['peer_cpu_us_per_request_h2load']} | max {s['other_cores']} |")
    pg_rows = [r for r in runs if r["client"] == "herald-pg"]
    if pg_rows:
        print("\nPostgreSQL against SQLite (medians; issue 16)")
        print("| provider | conns | SQLite pushes/s | PostgreSQL pushes/s | PG / SQLite | Herald CPU µs/push (SQLite / PG) "
              "| PG CPU µs/push | commits/push | rows written/push | WAL B/push |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        med = lambda rs, f: statistics.median([f(r) for r in rs]) if rs else 0  # noqa: E731
        cpu = lambda r: (r["herald_user_s"] + r["herald_sys_s"]) / r["k"] * 1e6  # noqa: E731
        for conns in args.conns:
            for provider in args.providers:
                pr = [r for r in pg_rows if r["provider"] == provider and r["conns"] == conns]
                sr = [r for r in runs if r["provider"] == provider and r["client"] == "herald" and r["conns"] == conns]
                if not pr:
                    continue
                p_rate, s_rate = med(pr, lambda r: r.get("pushes_per_s") or 0), med(sr, lambda r: r.get("pushes_per_s") or 0)
                rows_written = med(pr, lambda r: r["pg_rows_inserted_per_push"] + r["pg_rows_updated_per_push"]
                                   + r["pg_rows_deleted_per_push"])
                pg_summary = {"conns": conns, "sqlite_pushes_per_s": s_rate, "postgres_pushes_per_s": p_rate,
                              "ratio": round(p_rate / s_rate, 2) if s_rate else None,
                              "herald_cpu_us_per_push_sqlite": round(med(sr, cpu)) if sr else None,
                              "herald_cpu_us_per_push_postgres": round(med(pr, cpu)),
                              "pg_cpu_us_per_push": med(pr, lambda r: r["pg_cpu_us_per_push"]),
                              "pg_commits_per_push": med(pr, lambda r: r["pg_commits_per_push"]),
                              "pg_rows_written_per_push": rows_written,
                              "pg_wal_bytes_per_push": med(pr, lambda r: r["pg_wal_bytes_per_push"]),
                              "failures": sum(r["k"] - r["ok"] for r in pr)}
                summary.setdefault("postgres", {})[f"{provider}-c{conns}"] = pg_summary
                ratio = "-" if pg_summary["ratio"] is None else f"{pg_summary['ratio']}x"  # no SQLite run
                print(f"| {provider} | {conns} | {s_rate:,.0f} | {p_rate:,.0f} | {ratio} | "
                      f"{pg_summary['herald_cpu_us_per_push_sqlite']} / {pg_summary['herald_cpu_us_per_push_postgres']} | "
                      f"{pg_summary['pg_cpu_us_per_push']} | {pg_summary['pg_commits_per_push']} | {rows_written} | "
                      f"{pg_summary['pg_wal_bytes_per_push']:.0f} |")
    expo = [r for r in runs if r["provider"] == "expo"]
    if expo:
        med = lambda k: statistics.median([r.get(k) or 0 for r in expo])  # noqa: E731
        cpu = statistics.median([(r["herald_user_s"] + r["herald_sys_s"]) / r["k"] * 1e6 for r in expo])
        summary["expo"] = {"herald_pushes_per_s": med("pushes_per_s"), "herald_runs": [r.get("pushes_per_s") for r in expo],
                           "herald_cpu_us_per_push": round(cpu), "messages_per_request": med("messages_per_request"),
                           "failures": sum(r["k"] - r["ok"] for r in expo)}
        print(f"\nexpo (Herald only): {summary['expo']['herald_pushes_per_s']:,.0f} pushes/s "
              f"(runs {' / '.join(str(x) for x in summary['expo']['herald_runs'])}), {round(cpu)} µs CPU per push, "
              f"{summary['expo']['messages_per_request']} messages per request")
    for key, s in summary["providers"].items():
        if s["paired_ratio"] is not None:
            print(f"{key}: Herald / h2load per repeat (back-to-back runs): "
                  f"{' / '.join(f'{x:.2f}' for x in s['paired_ratios'])}; median {s['paired_ratio']:.2f}x")
        if s["quiet_ratio"] is not None:
            print(f"{key}: runs with other work < 0.3 cores ({s['quiet_runs'][0]} Herald, {s['quiet_runs'][1]} h2load): "
                  f"{s['quiet_herald_pushes_per_s']:,.0f} / {s['quiet_h2load_pushes_per_s']:,.0f} pushes/s = {s['quiet_ratio']:.2f}x")
        else:
            print(f"{key}: too few runs with other work < 0.3 cores ({s['quiet_runs'][0]} Herald, {s['quiet_runs'][1]} h2load)")
    summary["total_s"] = round(time.monotonic() - start)
    print(f"\ntotal {summary['total_s']}s; raw results appended to {args.out}; workdir {wd}")
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
