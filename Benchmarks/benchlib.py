"""Shared pieces of the benchmark drivers (fanout.py, idle.py, push.py, chokepoint.py): the
servers, the provider double, the load client, the publisher, h2load and /proc readings. Standard
library plus PyJWT; the provider double also needs what Tests/ProviderDouble needs (cryptography,
h2, h11, httpx).

Every process started here is remembered by pid and stopped by pid (Procs.stop_all), also when a
driver is interrupted; every wait has a timeout.
"""
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CLK_TCK = os.sysconf("SC_CLK_TCK")
NCHAN_MODULE = "/usr/lib/nginx/modules/ngx_nchan_module.so"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


# Loaded here, not in the child: a child that changed user (PostgreSQL's) may not read Python's files.
_LIBC = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    _LIBC.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def exit_on_sigterm():
    """SIGTERM/SIGHUP raise SystemExit so that `finally` blocks stop the children."""
    def h(sig, frame):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, h)
    signal.signal(signal.SIGHUP, h)


class Procs:
    """Every child we start, so that all of them are stopped by pid on any exit."""

    def __init__(self):
        self.items = []  # (Popen, name)

    def start(self, name, argv, **kw):
        # If the driver dies without cleaning up, the kernel sends the child SIGTERM (herald and
        # nginx shut down on it, loadclient prints and exits), so nothing is left running.
        # A `preexec_fn` of the caller (PostgreSQL's switch to its user) runs first: changing
        # credentials clears the parent-death signal.
        extra = kw.pop("preexec_fn", None)

        def pre():
            if extra:
                extra()
            _die_with_parent()
        p = subprocess.Popen(argv, preexec_fn=pre, **kw)
        self.items.append((p, name))
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=10.0):
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        self.items = [(q, n) for q, n in self.items if q is not p]

    def stop_all(self):
        for p, _ in list(self.items):
            self.stop(p, timeout=5)


# ---------------------------------------------------------------- /proc readings

def proc_cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_kib(pid, field="VmRSS"):
    """A process's resident memory in KiB: `VmRSS`, or `RssAnon` (its own heap and stacks, without
    the code pages that the kernel maps 64 KiB at a time) from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def proc_smaps_rollup_kib(pid, field="Anonymous"):
    """A field of /proc/<pid>/smaps_rollup in KiB: `Anonymous` counts every anonymous page the
    process has resident (heap arenas, thread stacks, private copies of library data)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def proc_cpu_split(pid):
    """(user, system) CPU seconds of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def thread_cpu(pid):
    """{thread name/tid: (user, system) cpu seconds} for every thread of pid (where the CPU goes)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        out[f"{name}/{tid}"] = (int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK)
    return out


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine_busy_seconds():
    """Busy CPU seconds of the whole machine (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    v = [int(x) for x in parts]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / CLK_TCK


def wait_quiet(max_cores, timeout, sample=1.0):
    """Waits (at most `timeout` s) until the machine's busy CPU over `sample` s is below
    `max_cores`, and returns the last reading. Call it between phases, when this driver's own
    children are idle: the reading is then other work on a shared machine."""
    end = time.monotonic() + timeout
    while True:
        b0, t0 = machine_busy_seconds(), time.monotonic()
        time.sleep(sample)
        busy = (machine_busy_seconds() - b0) / (time.monotonic() - t0)
        if busy < max_cores or time.monotonic() >= end:
            return round(busy, 2)


# ---------------------------------------------------------------- servers

class Herald:
    name = "herald"

    def __init__(self, procs, binary, workdir, loops=2, heartbeat=60, extra_env=None, wrapper=()):
        self.procs, self.binary, self.workdir = procs, binary, workdir
        self.wrapper = list(wrapper)  # e.g. valgrind's argv: Herald then runs inside it, same pid
        self.port = free_port()
        self.server_key = secrets.token_hex(24)
        self.jwt_secret = secrets.token_hex(32)
        self.env = dict(os.environ)
        self.env.update({
            "HERALD_DEV": "0", "HERALD_HOST": "127.0.0.1", "HERALD_PORT": str(self.port),
            "HERALD_DATABASE": os.path.join(workdir, "herald.db"),
            "HERALD_JWT_SECRET": self.jwt_secret, "HERALD_SERVER_KEY": self.server_key,
            "HERALD_MAX_STREAMS_PER_USER": "0", "HERALD_HEARTBEAT_SECONDS": str(heartbeat),
            "HERALD_LOOPS": str(loops),
        })
        self.env.update(extra_env or {})
        self.p = None

    def start(self):
        self.logf = open(os.path.join(self.workdir, "herald.log"), "w")
        self.p = self.procs.start("herald", [*self.wrapper, self.binary], env=self.env, cwd=self.workdir,
                                  stdout=self.logf, stderr=subprocess.STDOUT)
        if not wait_port(self.port, timeout=120 if self.wrapper else 15):
            raise RuntimeError("herald did not listen; see " + self.logf.name)

    def stop(self):
        if self.p:
            self.procs.stop(self.p)
            self.p = None
            self.logf.close()

    def pids(self):
        return [self.p.pid]

    def make_tokens(self, n, path, grants=("bench",)):
        """Line i: an HS256 token for user str(i), session s{i}, granted the channels `grants`
        (names or `prefix:*` patterns; default the channel 'bench')."""
        import jwt  # PyJWT
        exp = int(time.time()) + 3 * 3600
        with open(path, "w") as f:
            for i in range(n):
                f.write(jwt.encode({"sub": str(i), "sid": f"s{i}", "exp": exp, "channels": list(grants)},
                                   self.jwt_secret, algorithm="HS256") + "\n")
        return path

    def token(self, sub, sid, ttl=3 * 3600):
        """An HS256 access token for user `sub`, session `sid` (devices are bound to a session)."""
        import jwt  # PyJWT
        return jwt.encode({"sub": sub, "sid": sid, "exp": int(time.time()) + ttl}, self.jwt_secret,
                          algorithm="HS256")

    def server_headers(self):
        return {"Authorization": f"Bearer {self.server_key}", "Content-Type": "application/json"}

    def client_args(self, shape, tokens, transport="sse"):
        """loadclient options for `shape` ("shared": channel bench, else the personal channel) over
        `transport` ("sse": /v1/stream, "ws": /v1/ws); a stream is ready at Herald's ready event."""
        path = "/v1/ws" if transport == "ws" else "/v1/stream"
        if shape == "shared":
            path += "?channels=bench"
        ws = ["--ws"] if transport == "ws" else []
        return ["--port", str(self.port), "--path", path, "--tokens", tokens, "--ready-event", "ready", *ws]

    def publish_request(self, channel_index, t_ns, k, batch=1):
        """HTTP request bytes publishing one message (or a batch of `batch` consecutive ones)."""
        if batch == 1:
            ch = "bench" if channel_index is None else f"user:{channel_index}"
            body = f'{{"channel":"{ch}","data":{{"t":{t_ns},"i":{k}}}}}'
            target = "/v1/publish"
        else:
            msgs = []
            for j in range(batch):
                ch = "bench" if channel_index is None else f"user:{channel_index + j}"
                msgs.append(f'{{"channel":"{ch}","data":{{"t":{t_ns},"i":{k + j}}}}}')
            body = '{"messages":[' + ",".join(msgs) + "]}"
            target = "/v1/publish/batch"
        b = body.encode()
        return (f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                f"Authorization: Bearer {self.server_key}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(b)}\r\n\r\n").encode() + b

    @property
    def publish_port(self):
        return self.port


class Nchan:
    name = "nchan"

    def __init__(self, procs, workdir, workers=2, ping_interval=0):
        self.procs, self.workdir, self.workers = procs, workdir, workers
        self.pub_port, self.sub_port = free_port(), free_port()
        self.ping_interval = ping_interval
        self.p = None

    def start(self):
        w = self.workdir
        for d in ("logs", "tmp"):
            os.makedirs(os.path.join(w, d), exist_ok=True)
        # nchan sends no keep-alive by default; for the idle comparison it sends a comment
        # ":heartbeat" like Herald's ": heartbeat".
        ping = (f'nchan_eventsource_ping_interval {self.ping_interval}; nchan_eventsource_ping_event ""; '
                f'nchan_eventsource_ping_comment "heartbeat"; nchan_eventsource_ping_data "";'
                if self.ping_interval else "")
        conf = f"""
load_module {NCHAN_MODULE};
worker_processes {self.workers};
worker_rlimit_nofile 20000;
daemon off;
pid {w}/nginx.pid;
error_log {w}/logs/error.log warn;
events {{ worker_connections 19500; }}
http {{
  access_log off;
  client_body_temp_path {w}/tmp/body; proxy_temp_path {w}/tmp/proxy;
  fastcgi_temp_path {w}/tmp/fcgi; uwsgi_temp_path {w}/tmp/uwsgi; scgi_temp_path {w}/tmp/scgi;
  nchan_shared_memory_size 256m;
  server {{ listen 127.0.0.1:{self.pub_port};
    keepalive_requests 1000000;  # nginx closes a keep-alive connection after 1000 by default
    location ~ ^/pub/(\\w+)$ {{ nchan_publisher; nchan_channel_id $1;
      nchan_message_buffer_length 100; nchan_message_timeout 5m; }} }}
  server {{ listen 127.0.0.1:{self.sub_port} reuseport backlog=4096;
    location ~ ^/sub/(\\w+)$ {{ nchan_subscriber; nchan_channel_id $1;
      nchan_subscriber_first_message newest; {ping} }} }}
}}
"""
        path = os.path.join(w, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        # daemon off: the master stays our child, so it is stopped by pid like everything else.
        self.logf = open(os.path.join(w, "nginx.out"), "w")
        self.p = self.procs.start("nginx", ["nginx", "-p", w, "-c", path], stdout=self.logf,
                                  stderr=subprocess.STDOUT)
        if not (wait_port(self.pub_port) and wait_port(self.sub_port)):
            raise RuntimeError("nginx did not listen; see " + self.logf.name)
        end = time.monotonic() + 10
        while len(self.pids()) < self.workers and time.monotonic() < end:
            time.sleep(0.05)

    def stop(self):
        if self.p:
            self.procs.stop(self.p, sig=signal.SIGQUIT)  # graceful; SIGKILL after 10 s
            self.p = None
            self.logf.close()

    def pids(self):
        """The worker processes (they hold the connections and do the work)."""
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            if ppid == self.p.pid:
                out.append(int(pid))
        return sorted(out)

    def client_args(self, shape, tokens=None, transport="sse"):
        """loadclient options; nchan's subscriber location serves EventSource and WebSocket alike."""
        path = "/sub/bench" if shape == "shared" else "/sub/u%d"
        ws = ["--ws"] if transport == "ws" else []
        return ["--port", str(self.sub_port), "--path", path, *ws]

    def publish_request(self, channel_index, t_ns, k, batch=1):
        assert batch == 1, "nchan has no batch publish"
        ch = "bench" if channel_index is None else f"u{channel_index}"
        b = f'{{"t":{t_ns},"i":{k}}}'.encode()
        return (f"POST /pub/{ch} HTTP/1.1\r\nHost: 127.0.0.1:{self.pub_port}\r\n"
                f"Accept: application/json\r\nContent-Length: {len(b)}\r\n\r\n").encode() + b

    @property
    def publish_port(self):
        return self.pub_port


# ---------------------------------------------------------------- cluster engines (issue 16)

def _engines():
    """Tests/e2e/engines.py: the same redis-server / PostgreSQL start-up the cluster tests use."""
    sys.path.insert(0, os.path.join(REPO, "Tests", "e2e"))
    import engines  # noqa: E402
    return engines


def check_engines():
    missing = _engines().engines_missing()
    if missing:
        sys.exit("missing: " + missing)


def redis_engine(procs, workdir):
    """A started `redis-server` (nothing persisted) as a child of `procs`: `.url`, `.command()`,
    `.info(section)`, `.commandstats()`, `.proc.pid`."""
    from pathlib import Path
    return _engines().RedisServer(Path(workdir), popen=lambda argv, **kw: procs.start("redis", argv, **kw)).start()


def postgres_engine(procs):
    """A started PostgreSQL (initdb in a temp dir, as the postgres user when root, fsync off) as a
    child of `procs`: `.url`, `.sql()`, `.proc.pid`; `.cleanup()` removes its files."""
    return _engines().PostgresServer(popen=lambda argv, **kw: procs.start("postgres", argv, **kw)).start()


def children_of(pid):
    """PIDs whose parent is `pid` (PostgreSQL's backends, nginx's workers)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == pid:
            out.append(int(p))
    return out


def tree_cpu_seconds(pid):
    """CPU seconds of `pid`, of its children that it reaped (cutime + cstime: PostgreSQL's ended
    backends) and of its live children."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    total = (int(fields[13]) + int(fields[14])) / CLK_TCK
    for p in [pid] + children_of(pid):
        try:
            total += proc_cpu_seconds(p)
        except OSError:
            pass
    return total


class RedisCounters:
    """What Redis did between start() and stop(): commands by name (INFO commandstats, without
    the INFO calls themselves), bytes in and out (INFO stats), and its CPU seconds."""

    def __init__(self, redis):
        self.redis = redis

    def _read(self):
        stats = self.redis.info("stats")
        return (self.redis.commandstats(), int(stats["total_net_input_bytes"]),
                int(stats["total_net_output_bytes"]), proc_cpu_seconds(self.redis.proc.pid))

    def start(self):
        # The readings are INFO calls themselves: measure one reading's bytes and take it off.
        first = self._read()
        self.before = self._read()
        self.overhead = (self.before[1] - first[1], self.before[2] - first[2])
        return self

    def stop(self):
        cmds1, in1, out1, cpu1 = self._read()
        cmds0, in0, out0, cpu0 = self.before
        by = {k: v - cmds0.get(k, 0) for k, v in cmds1.items() if k != "info" and v - cmds0.get(k, 0) > 0}
        return {"redis_commands": sum(by.values()), "redis_commands_by_name": by,
                "redis_bytes_in": max(0, in1 - in0 - self.overhead[0]),
                "redis_bytes_out": max(0, out1 - out0 - self.overhead[1]),
                "redis_cpu_s": round(cpu1 - cpu0, 3)}


class PostgresCounters:
    """What PostgreSQL did for one database between start() and stop(): commits and rows written
    (pg_stat_database), WAL bytes (pg_current_wal_lsn) and the CPU of the server's processes.
    PostgreSQL 15 backends publish their statistics when idle, at the latest 10 s later:
    stop() waits `settle` s for them first (after the CPU reading)."""

    def __init__(self, pg, database, settle=11.0):
        self.pg, self.database, self.settle = pg, database, settle

    def _stats(self):
        row = self.pg.sql("SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, "
                          "pg_current_wal_lsn() - '0/0'::pg_lsn FROM pg_stat_database "
                          f"WHERE datname = '{self.database}'", database="postgres")[0]
        return [int(float(x)) for x in row]

    def start(self):
        self.cpu0 = tree_cpu_seconds(self.pg.proc.pid)
        self.before = self._stats()
        return self

    def stop(self):
        cpu = tree_cpu_seconds(self.pg.proc.pid) - self.cpu0
        wal = self._stats()[4] - self.before[4]
        time.sleep(self.settle)
        after = self._stats()
        d = [a - b for a, b in zip(after, self.before)]
        return {"pg_commits": d[0], "pg_rows_inserted": d[1], "pg_rows_updated": d[2], "pg_rows_deleted": d[3],
                "pg_wal_bytes": wal, "pg_cpu_s": round(cpu, 2)}


class HeraldCluster:
    """`nodes` Herald processes on one Redis (`HERALD_BROKER`), sharing the JWT secret and the
    server key: the fan-out benchmark's clients are spread over the nodes (load client process k
    on node k % nodes) and the publisher talks to node 0. Each node keeps its own SQLite file
    (streams do not need a shared database). `name` labels its results."""

    def __init__(self, procs, binary, workdir, nodes, loops=1, heartbeat=60, extra_env=None, name=None):
        self.procs, self.workdir = procs, workdir
        self.name = name or f"herald-redis{nodes}"
        self.redis = None
        self.nodes = []
        for i in range(nodes):
            d = os.path.join(workdir, f"node{i}")
            os.makedirs(d, exist_ok=True)
            h = Herald(procs, binary, d, loops=loops, heartbeat=heartbeat, extra_env=extra_env)
            if self.nodes:
                h.jwt_secret, h.server_key = self.nodes[0].jwt_secret, self.nodes[0].server_key
                h.env.update(HERALD_JWT_SECRET=h.jwt_secret, HERALD_SERVER_KEY=h.server_key)
            self.nodes.append(h)

    def start(self):
        self.redis = redis_engine(self.procs, self.workdir)
        for h in self.nodes:
            h.env["HERALD_BROKER"] = self.redis.url
            h.start()

    def stop(self):
        for h in self.nodes:
            h.stop()
        if self.redis is not None:
            self.redis.stop()
            self.procs.items = [(q, n) for q, n in self.procs.items if q is not self.redis.proc]
            self.redis = None

    def pids(self):
        return [h.p.pid for h in self.nodes]

    def make_tokens(self, n, path):
        return self.nodes[0].make_tokens(n, path)

    def client_args(self, shape, tokens, transport="sse"):
        """A function of the load client's index: process k connects to node k % nodes."""
        return lambda k: self.nodes[k % len(self.nodes)].client_args(shape, tokens, transport)

    def publish_request(self, channel_index, t_ns, k, batch=1):
        return self.nodes[0].publish_request(channel_index, t_ns, k, batch)

    @property
    def publish_port(self):
        return self.nodes[0].port


# ---------------------------------------------------------------- load clients

def build_loadclient(outdir):
    exe = os.path.join(outdir, "loadclient")
    subprocess.run(["cc", "-O2", "-Wall", "-o", exe, os.path.join(HERE, "loadclient.c")], check=True,
                   timeout=60)
    return exe


class Clients:
    """`procs` loadclient processes sharing `n` connections; indices are global (tokens, %d)."""

    def __init__(self, procs, exe, n, nprocs, server_args, expect, timeout, outdir, tag):
        self.procs = procs
        self.ps = []
        per = (n + nprocs - 1) // nprocs
        for k in range(nprocs):
            base, cnt = k * per, min(per, n - k * per)
            if cnt <= 0:
                break
            # server_args may be a function of the process index (a cluster spreads them over nodes)
            argv = [exe, "-n", str(cnt), "--base", str(base), "--expect", str(expect),
                    "--timeout", str(timeout), "--connect-timeout", "60"] + (
                        server_args(k) if callable(server_args) else server_args)
            err = open(os.path.join(outdir, f"client-{tag}-{k}.err"), "w")
            p = procs.start(f"loadclient{k}", argv, stdout=subprocess.PIPE, stderr=err, text=True)
            self.ps.append((p, err))

    def wait_ready(self, timeout=90.0):
        """Reads each client's READY line. Returns (ready, failed)."""
        ready = failed = 0
        end = time.monotonic() + timeout
        for p, _ in self.ps:
            line = readline_timeout(p.stdout, end - time.monotonic())
            if not line.startswith("READY"):
                raise RuntimeError(f"load client said {line!r} instead of READY")
            _, r, f = line.split()
            ready += int(r)
            failed += int(f)
        return ready, failed

    def results(self, timeout):
        """Waits up to `timeout` s for the clients to finish by themselves, then SIGTERMs them."""
        end = time.monotonic() + timeout
        out = []
        for p, err in self.ps:
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
        for p, err in self.ps:
            line = readline_timeout(p.stdout, 15.0)
            self.procs.stop(p)
            err.close()
            if line.strip():
                out.append(json.loads(line))
        return out

    def stop(self):
        for p, err in self.ps:
            self.procs.stop(p)
            err.close()


def readline_timeout(f, timeout):
    import select
    r, _, _ = select.select([f], [], [], max(0.0, timeout))
    if not r:
        raise RuntimeError("timed out waiting for a load client line")
    return f.readline()


def merge(results):
    """Combines the clients' JSON lines: sums, and percentiles from the merged histograms."""
    tot = {k: sum(r[k] for r in results) for k in
           ("connections", "requested", "failed", "closed_by_server", "deliveries", "expected",
            "losses", "extra", "cpu_user_s", "cpu_sys_s", "comments_after_ready")}
    hist = {}
    for r in results:
        for lo, c in r["hist"]:
            hist[lo] = hist.get(lo, 0) + c
    n = sum(hist.values())

    def pct(q):
        want, seen = max(1, int(q * n + 0.5)), 0
        for lo in sorted(hist):
            seen += hist[lo]
            if seen >= want:
                return lo / 1000.0
        return 0.0

    tot["p50_ms"] = pct(0.50) if n else None
    tot["p99_ms"] = pct(0.99) if n else None
    tot["max_ms"] = max(r["max_us"] for r in results) / 1000.0 if n else None
    # Per message (by its "i"), the slowest delivery over every client process, in ms.
    per_msg = [r.get("msg_max_us", []) for r in results]
    top = max((len(m) for m in per_msg), default=0)
    tot["msg_max_ms"] = [max((m[k] for m in per_msg if k < len(m)), default=0) / 1000.0 for k in range(top)]
    firsts = [r["first_rx_ns"] for r in results if r["first_rx_ns"]]
    tot["first_rx_ns"] = min(firsts) if firsts else 0
    tot["last_rx_ns"] = max(r["last_rx_ns"] for r in results)
    tot["connect_s"] = max(r["connect_s"] for r in results)
    return tot


# ---------------------------------------------------------------- publisher

def publish(server, count, rate=0.0, channel_of=None, conns=4, window=32, batch=1, timeout=60.0):
    """Publishes `count` messages carrying {"t": CLOCK_REALTIME ns at send, "i": k}.

    rate > 0: one keep-alive connection, message k sent at start + k/rate (each request is built
    just before it is sent, so "t" is the send time). rate == 0: full speed, pipelined over `conns`
    keep-alive connections with up to `window` requests in flight each. channel_of(k) gives the
    channel index for message k (None = the shared channel). Returns a summary dict.
    """
    import selectors
    if rate > 0:
        conns, window = 1, 1 << 30
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", server.publish_port), timeout=5)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        st = {"sock": s, "buf": b"", "out": 0, "pending": b""}
        sel.register(s, selectors.EVENT_READ, st)
        socks.append(st)
    statuses = {}
    sent = answered = 0
    nreq = (count + batch - 1) // batch
    first_send = last_send = 0
    start = time.monotonic()
    deadline = start + timeout
    rr = 0

    def parse(st):
        nonlocal answered
        while True:
            h = st["buf"].find(b"\r\n\r\n")
            if h < 0:
                return
            head = st["buf"][:h].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v)
            if len(st["buf"]) < h + 4 + length:
                return
            code = head.split(" ", 2)[1]
            statuses[code] = statuses.get(code, 0) + 1
            st["buf"] = st["buf"][h + 4 + length:]
            st["out"] -= 1
            answered += 1

    while answered < nreq and time.monotonic() < deadline:
        # Send what the rate (or the windows) allow.
        while sent < nreq:
            if rate > 0 and time.monotonic() < start + sent / rate:
                break
            st = socks[rr % conns]
            if st["out"] >= window:
                if all(x["out"] >= window for x in socks):
                    break
                rr += 1
                continue
            k = sent * batch
            t = time.time_ns()
            req = server.publish_request(channel_of(k) if channel_of else None, t, k,
                                         batch=min(batch, count - k))
            if not first_send:
                first_send = t
            last_send = t
            st["pending"] += req
            st["out"] += 1
            sent += 1
            rr += 1
            if rate > 0:
                break
        for st in socks:
            if st["pending"]:
                try:
                    n = st["sock"].send(st["pending"])
                    st["pending"] = st["pending"][n:]
                except BlockingIOError:
                    pass
        if rate > 0 and sent < nreq:
            wait = max(0.0, start + sent / rate - time.monotonic())
        else:
            wait = 0.05
        for key, _ in sel.select(timeout=min(wait, 0.05)):
            st = key.data
            try:
                data = st["sock"].recv(65536)
            except BlockingIOError:
                continue
            if not data:
                raise RuntimeError("publisher connection closed by the server")
            st["buf"] += data
            parse(st)
    for st in socks:
        sel.unregister(st["sock"])
        st["sock"].close()
    return {"requests": nreq, "answered": answered, "statuses": statuses, "first_send_ns": first_send,
            "last_send_ns": last_send, "publish_s": time.monotonic() - start}


# ---------------------------------------------------------------- HTTP, h2load

class HTTP:
    """One keep-alive HTTP/1.1 connection to a loopback port, JSON in and out (set-up calls:
    device registration, enqueueing). Every call has a timeout."""

    def __init__(self, port, timeout=30.0):
        import http.client
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, method, path, body=None, headers=None):
        """(status, parsed JSON or None)."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        self.conn.request(method, path, body=data, headers=h)
        r = self.conn.getresponse()
        raw = r.read()
        try:
            return r.status, json.loads(raw) if raw else None
        except ValueError:
            return r.status, {"_raw": raw[:500].decode("utf-8", "replace")}

    def close(self):
        self.conn.close()


def check_h2load():
    if not shutil.which("h2load"):
        sys.exit("missing: apt-get install nghttp2-client   # h2load")


class H2Load:
    """One h2load run: start() returns at once, finish() waits (SIGTERM, then SIGKILL, at
    `timeout` s from start) and returns its parsed summary plus its own CPU seconds (from the
    rusage of reaped children). Start it from the main thread: PR_SET_PDEATHSIG fires when the
    *thread* that forked the child ends."""

    def __init__(self, procs, argv, timeout, outdir, tag):
        self.procs, self.argv, self.timeout = procs, argv, timeout
        self.out_path = os.path.join(outdir, f"h2load-{tag}.out")

    def start(self):
        import resource
        self.before = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.out = open(self.out_path, "w")
        self.end = time.monotonic() + self.timeout
        self.p = self.procs.start("h2load", ["h2load"] + self.argv, stdout=self.out, stderr=subprocess.STDOUT)
        return self

    def finish(self):
        import resource
        try:
            self.p.wait(timeout=max(0.1, self.end - time.monotonic()))
        except subprocess.TimeoutExpired:
            log(f"h2load ran past {self.timeout:.0f} s: stopping it")
        self.procs.stop(self.p)
        self.out.close()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(self.out_path) as f:
            res = parse_h2load(f.read())
        res["cpu_s"] = round(after.ru_utime - self.before.ru_utime + after.ru_stime - self.before.ru_stime, 2)
        res["output"] = self.out_path
        return res


def run_h2load(procs, argv, timeout, outdir, tag):
    """Runs `h2load argv` to completion; see H2Load."""
    return H2Load(procs, argv, timeout, outdir, tag).start().finish()


def parse_h2load(text):
    """The figures of h2load's summary: finished_s, req_per_s, requests (total, done, succeeded,
    failed, errored, timeout), status classes (2xx…5xx) and min/max/mean_ms per request."""
    import re
    res = {"finished_s": None, "req_per_s": None}
    m = re.search(r"finished in ([\d.]+)(ms|s), ([\d.]+) req/s", text)
    if m:
        res["finished_s"] = float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)
        res["req_per_s"] = float(m.group(3))
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text)
    if m:
        for k, v in zip(("total", "started", "done", "succeeded", "failed", "errored", "timeout"), m.groups()):
            res[k] = int(v)
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if m:
        for k, v in zip(("2xx", "3xx", "4xx", "5xx"), m.groups()):
            res[k] = int(v)
    m = re.search(r"time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)", text)
    if m:
        ms = lambda v, u: round(float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[u], 2)  # noqa: E731
        res["min_ms"], res["max_ms"], res["mean_ms"] = ms(*m.group(1, 2)), ms(*m.group(3, 4)), ms(*m.group(5, 6))
    return res


# ---------------------------------------------------------------- provider double (push)

DOUBLE_DIR = os.path.join(REPO, "Tests", "ProviderDouble")


class ProviderDouble:
    """Tests/ProviderDouble (APNs + FCM over HTTP/2+TLS) started as its fixture's `start_double`
    does (same script and flags, then it waits for double.json), but as a child of Procs: stopped by
    pid and given PR_SET_PDEATHSIG. `api` is the fixture's `Double`: herald_env(), apns_jwt(),
    fcm_assertion(), stats(), requests(), reset(). `--quiet` drops its line per request on stdout
    (the same for every client of the double)."""

    name = "double"

    def __init__(self, procs, state_dir, *args):
        self.procs, self.state_dir, self.args = procs, state_dir, list(args)
        self.p = None
        self.api = None

    def start(self, timeout=30.0):
        sys.path.insert(0, DOUBLE_DIR)
        import fixture  # Tests/ProviderDouble/fixture.py
        from pathlib import Path
        os.makedirs(self.state_dir, exist_ok=True)
        ready = os.path.join(self.state_dir, "double.json")
        if os.path.exists(ready):
            os.unlink(ready)
        log_path = os.path.join(self.state_dir, "double.log")
        self.logf = open(log_path, "ab")
        self.p = self.procs.start("double", [sys.executable, os.path.join(DOUBLE_DIR, "provider_double.py"),
                                             "--state-dir", self.state_dir, "--port", "0", "--exit-with-parent",
                                             "--quiet", *self.args],
                                  stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        end = time.monotonic() + timeout
        while True:
            if self.p.poll() is not None:
                raise RuntimeError(f"provider double exited with {self.p.returncode}; see {log_path}")
            try:
                with open(ready) as f:
                    config = json.load(f)
                if config.get("pid") == self.p.pid:
                    break
            except (OSError, ValueError):
                pass
            if time.monotonic() > end:
                raise RuntimeError(f"provider double did not write double.json in {timeout:.0f} s; see {log_path}")
            time.sleep(0.05)
        self.api = fixture.Double(self.p, Path(self.state_dir), config, Path(log_path))
        self.port = config["port"]
        return self

    def fcm_access_token(self):
        """An OAuth access token from the double's /token (the JWT-bearer grant FCM clients use)."""
        with self.api.client(http2=False) as c:
            r = c.post("/token", data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                       "assertion": self.api.fcm_assertion()})
            r.raise_for_status()
            return r.json()["access_token"]

    def pids(self):
        return [self.p.pid]

    def stop(self):
        if self.p:
            self.api._client.close()
            self.procs.stop(self.p)
            self.p = None
            self.logf.close()


def perf_start(procs, pid, data, call_graph="fp"):
    """`perf record -e cpu-clock --call-graph fp|dwarf` of `pid` into `data` (no hardware counters
    in this VM); call it from the main thread (see H2Load). Frame-pointer stacks break in parts of Swift's runtime and in libsqlite3; dwarf
    unwinds them at a higher cost per sample."""
    graph = ["--call-graph", "dwarf,16384"] if call_graph == "dwarf" else ["-g"]
    freq = "499" if call_graph == "dwarf" else "999"
    p = procs.start("perf", ["perf", "record", "-q", "-e", "cpu-clock", "-F", freq, *graph, "-p", str(pid),
                             "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return p


def perf_stop(procs, p):
    procs.stop(p, sig=signal.SIGINT, timeout=60)


class CPUWindow:
    """CPU used by some pids and by the whole machine between start() and stop(); `other_cores`
    is the machine's busy CPU minus those pids and the driver itself (the noise indicator)."""

    def __init__(self, pids, threads_of=None):
        self.pids = {k: v for k, v in pids.items() if v}
        self.threads_of = threads_of  # a key of pids: also report its busiest threads

    def start(self):
        self.c0 = {k: proc_cpu_split(p) for k, p in self.pids.items()}
        self.thr0 = thread_cpu(self.pids[self.threads_of]) if self.threads_of else {}
        self.busy0, self.own0, self.t0 = machine_busy_seconds(), time.process_time(), time.monotonic()
        return self

    def stop(self, extra_cpu_s=0.0):
        c1 = {k: proc_cpu_split(p) for k, p in self.pids.items()}
        busy1, own1, t1 = machine_busy_seconds(), time.process_time(), time.monotonic()
        wall = t1 - self.t0
        out = {"wall_s": round(wall, 3), "driver_cpu_s": round(own1 - self.own0, 2)}
        known = own1 - self.own0 + extra_cpu_s
        for k in self.pids:
            u, s_ = c1[k][0] - self.c0[k][0], c1[k][1] - self.c0[k][1]
            out[f"{k}_user_s"], out[f"{k}_sys_s"] = round(u, 2), round(s_, 2)
            known += u + s_
        out["other_cores"] = round(max(0.0, (busy1 - self.busy0) - known) / wall, 2) if wall > 0 else 0.0
        if self.threads_of and wall > 0:
            # The event loops are named herald-loop-N; libdispatch workers change. A thread near
            # 1.0 core is a serial bottleneck.
            thr1 = thread_cpu(self.pids[self.threads_of])
            # A thread started during the window (libdispatch makes and retires workers) counts from zero.
            busy = sorted(((sum(v) - sum(self.thr0.get(k, (0, 0)))) / wall for k, v in thr1.items()), reverse=True)
            out[f"{self.threads_of}_busiest_threads_cores"] = [round(x, 2) for x in busy[:4]]
        return out


# ---------------------------------------------------------------- building Herald

def herald_binary(arg):
    """The release binary: `arg` when given, else scripts/build-release's (`swift build -c release
    --product herald` with the static Swift runtime and the link options of issue 17's footprint)."""
    if arg:
        return os.path.abspath(arg)
    log("building herald (scripts/build-release) ...")
    subprocess.run([os.path.join(REPO, "scripts", "build-release")], cwd=REPO, check=True, timeout=1200)
    bindir = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO,
                            check=True, timeout=120, capture_output=True, text=True).stdout.strip()
    return os.path.join(bindir, "herald")


def git_commit():
    try:
        c = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "Sources"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return c + ("+dirty-Sources" if dirty else "")
    except Exception:
        return "unknown"


def check_tools(nginx=True):
    """Exits naming what is missing: gcc and PyJWT, and with `nginx` nginx + nchan."""
    missing = []
    if nginx and (not shutil.which("nginx") or not os.path.exists(NCHAN_MODULE)):
        missing.append("apt-get install nginx libnginx-mod-nchan")
    if not shutil.which("cc"):
        missing.append("apt-get install gcc")
    try:
        import jwt  # noqa: F401
    except ImportError:
        missing.append("pip install pyjwt")
    if missing:
        sys.exit("missing: " + "; ".join(missing))


def workdir():
    return tempfile.mkdtemp(prefix="herald-bench-")


def callgrind_wrapper(directory, tag):
    """valgrind's argv to run Herald under callgrind with instrumentation off until
    `callgrind_start`, its dumps in `directory/callgrind-<tag>.out.<n>`."""
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no",
            "--callgrind-out-file=" + os.path.join(directory, f"callgrind-{tag}.out")]


def callgrind_start(pid):
    """Zeroes the counters of the callgrind run `pid` and starts counting."""
    subprocess.run(["callgrind_control", "--zero", str(pid)], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "--instr=on", str(pid)], check=True, capture_output=True)


def callgrind_stop(pid, directory, label):
    """Stops counting, dumps (named `label`) and returns the instructions (Ir) counted since
    `callgrind_start`: the dump's `totals:` line (its `summary:` is 0 once counting is off)."""
    subprocess.run(["callgrind_control", "--instr=off", str(pid)], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "--dump=" + label, str(pid)], check=True, capture_output=True)
    dumps = [os.path.join(directory, f) for f in os.listdir(directory) if ".out." in f]
    with open(max(dumps, key=os.path.getmtime)) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    return None


def add_callgrind_argument(ap):
    ap.add_argument("--callgrind", metavar="DIR",
                    help="run Herald in valgrind's callgrind and count its instructions during each phase "
                         "(give a binary without debug info: objcopy --strip-debug; see README)")


def add_common_arguments(ap, loops_help="HERALD_LOOPS", perf_help=None, budget=900.0, quiet=False,
                         perf_call_graph=False):
    """The options every driver shares: --herald-bin, --loops, --out, and on request --budget,
    --quiet-below/--quiet-wait and --perf (with --perf-call-graph). `budget` is --budget's default in
    s (None omits it); `perf_help=None` omits --perf."""
    ap.add_argument("--herald-bin", help="release binary to use (default: build it)")
    ap.add_argument("--loops", type=int, default=2, help=loops_help)
    if budget is not None:
        ap.add_argument("--budget", type=float, default=budget, help="stop starting phases after this many s")
    if quiet:
        ap.add_argument("--quiet-below", type=float, default=0.3,
                        help="before each phase, wait until other work uses less than this many cores ...")
        ap.add_argument("--quiet-wait", type=float, default=20.0,
                        help="... for at most this many s (0: do not wait)")
    if perf_help:
        ap.add_argument("--perf", metavar="DIR", help=perf_help)
        if perf_call_graph:
            ap.add_argument("--perf-call-graph", choices=("fp", "dwarf"), default="fp",
                            help="perf's stack unwinding")
    ap.add_argument("--out", help="raw results, JSON lines (default: in the temp workdir)")


def prepare_arguments(args, results_name):
    """Makes the run's work directory and returns it, completing the shared options: --out
    defaults to `<workdir>/results_name`, and the --perf and --callgrind directories are made
    absolute and created."""
    wd = workdir()
    args.out = args.out or os.path.join(wd, results_name)
    for option in ("perf", "callgrind"):
        if getattr(args, option, None):
            setattr(args, option, os.path.abspath(getattr(args, option)))
            os.makedirs(getattr(args, option), exist_ok=True)
    return wd


def quiet_reading(args):
    """Just before a timed window (the driver's children idle): waits, per --quiet-below and
    --quiet-wait, for other work to calm down, and returns the last reading in cores (None: no wait)."""
    return wait_quiet(args.quiet_below, args.quiet_wait) if args.quiet_wait > 0 else None


def record_run(runs, result, rep, line, out):
    """Keeps one phase's result: tagged with its repeat, printed as `line`, appended to `out` (JSON lines)."""
    result["repeat"] = rep
    runs.append(result)
    print(line, flush=True)
    with open(out, "a") as f:
        f.write(json.dumps(result) + "\n")


# ---------------------------------------------------------------- native push sink (issue 17)

SINKS = ("native", "nghttpd")


def build_h2sink(outdir):
    """Compiles Benchmarks/h2sink.c (`cc -O2`, libnghttp2 + OpenSSL) into `outdir`; returns its path."""
    exe = os.path.join(outdir, "h2sink")
    try:
        subprocess.run(["cc", "-O2", "-Wall", "-o", exe, os.path.join(HERE, "h2sink.c"),
                        "-lnghttp2", "-lssl", "-lcrypto", "-lpthread"], check=True, timeout=120)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"cannot build Benchmarks/h2sink.c ({e}); needs: apt-get install gcc libnghttp2-dev libssl-dev")
    return exe


class Sink:
    """The native ceiling (issue 17) on 127.0.0.1 over TLS with the double's loopback certificate
    (signed by the CA Herald is given in HERALD_CA_FILE), with APNs' stream limit (1,000 per
    connection), so the client's own limits decide.

    `kind` "native" (the default): Benchmarks/h2sink.c, compiled here into the run's work dir. It
    answers like the providers (APNs 200 with an `apns-id`, FCM 200 with the message name, anything
    else 404), runs `workers` epoll threads, and counts its requests: `stats()` asks it (SIGUSR1) for
    requests by kind and its CPU. `kind` "nghttpd": `nghttpd --echo-upload` (Debian nghttp2-server),
    the ceiling before h2sink: one thread, 200 to every POST whatever the path, no counts
    (`stats()` is None)."""

    name = "sink"

    def __init__(self, procs, wd, double, kind="native", workers=1, max_streams=1000):
        if kind not in SINKS:
            raise ValueError(f"unknown sink {kind}; known: {', '.join(SINKS)}")
        self.procs, self.wd, self.double, self.kind = procs, wd, double, kind
        self.workers, self.max_streams = workers, max_streams
        self.p = None

    def start(self):
        state = self.double.api.state_dir
        cert, key = str(state / "server.pem"), str(state / "server-key.pem")
        os.makedirs(self.wd, exist_ok=True)
        self.port = free_port()
        self.logf = open(os.path.join(self.wd, f"{self.kind}.log"), "w")
        if self.kind == "native":
            self.stats_path = os.path.join(self.wd, "h2sink-stats.json")
            argv = [build_h2sink(self.wd), "--port", str(self.port), "--cert", cert, "--key", key,
                    "--threads", str(self.workers), "--max-streams", str(self.max_streams),
                    "--stats", self.stats_path]
        else:
            if not shutil.which("nghttpd"):
                sys.exit("missing: apt-get install nghttp2-server   # nghttpd, the old native sink")
            os.makedirs(os.path.join(self.wd, "htdocs"), exist_ok=True)
            argv = ["nghttpd", "--echo-upload", "-a", "127.0.0.1", "-n", str(self.workers),
                    "-m", str(self.max_streams), "-d", os.path.join(self.wd, "htdocs"), str(self.port), key, cert]
        self.p = self.procs.start(self.kind, argv, stdout=self.logf, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
        if not wait_port(self.port):
            raise RuntimeError(f"{self.kind} sink did not listen; see {self.logf.name}")
        self.base_url = f"https://127.0.0.1:{self.port}"
        return self

    def stats(self, timeout=5.0):
        """h2sink's counters now: {requests, apns, fcm, not_found, connections, body_bytes, user_s,
        sys_s, …} (SIGUSR1, then its stats file's next line); None for nghttpd."""
        if self.kind != "native" or not self.p:
            return None
        before = self._read_stats()
        seq = before["seq"] if before else 0
        self.p.send_signal(signal.SIGUSR1)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = self._read_stats()
            if st and st["seq"] > seq:
                return st
            time.sleep(0.01)
        raise RuntimeError(f"h2sink did not answer SIGUSR1 within {timeout:.0f} s; see {self.logf.name}")

    def _read_stats(self):
        try:
            with open(self.stats_path) as f:
                return json.loads(f.read())
        except (OSError, ValueError):
            return None

    def stop(self):
        if self.p:
            self.procs.stop(self.p)
            self.p = None
            self.logf.close()


def sink_counts(before, after):
    """What h2sink answered between two `Sink.stats()` readings: `sink_requests` and by kind
    (`sink_apns`, `sink_fcm`, `sink_not_found`), and its CPU from its own getrusage (`sink_user_s`,
    `sink_sys_s`, to the µs: /proc's clock ticks of 10 ms are a good part of a window's sink CPU);
    {} for nghttpd (no readings). Apply it after CPUWindow's figures, which it refines."""
    if not before or not after:
        return {}
    return {"sink_requests": after["requests"] - before["requests"], "sink_apns": after["apns"] - before["apns"],
            "sink_fcm": after["fcm"] - before["fcm"], "sink_not_found": after["not_found"] - before["not_found"],
            "sink_user_s": round(after["user_s"] - before["user_s"], 4),
            "sink_sys_s": round(after["sys_s"] - before["sys_s"], 4)}


def thread_counters(pid, name="herald-h2"):
    """{syscalls, wakeups, cpu_s} summed over `pid`'s threads called `name` (the native HTTP/2 client's
    driver): read + write system calls (/proc/…/io syscr + syscw), voluntary context switches (each one
    a sleep in epoll_wait and a wake-up) and user + system CPU seconds (clock ticks), so that a phase
    can report them per push. {} without such a thread."""
    out = {"syscalls": 0, "wakeups": 0, "cpu_s": 0.0}
    found = False
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != name:
                    continue
            with open(f"/proc/{pid}/task/{tid}/io") as f:
                io = dict(line.split(": ") for line in f.read().splitlines())
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                ctx = [line for line in f if line.startswith("voluntary_ctxt_switches")]
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found = True
        out["cpu_s"] += (int(fields[11]) + int(fields[12])) / CLK_TCK
        out["syscalls"] += int(io["syscr"]) + int(io["syscw"])
        out["wakeups"] += int(ctx[0].split()[1]) if ctx else 0
    return out if found else {}


def process_syscalls(pid):
    """Read + write system calls of a whole process so far (/proc/<pid>/io syscr + syscw: every thread,
    ended ones included); the other system calls (epoll_wait, futex, …) are not counted."""
    with open(f"/proc/{pid}/io") as f:
        io = dict(line.split(": ") for line in f.read().splitlines())
    return int(io["syscr"]) + int(io["syscw"])


def metric_values(h, name):
    """{labels text: value} of one metric in Herald's /metrics."""
    import http.client
    # 60 s: under callgrind on a busy machine one scrape took more than 10 s.
    conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=60)
    try:
        conn.request("GET", "/metrics", headers=h.server_headers())
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            key, _, value = line.rpartition(" ")
            out[key[len(name):]] = float(value)
    return out
