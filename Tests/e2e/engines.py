"""Real engines for the cluster tests (issue 16, SPEC SC-1..SC-3): a `redis-server` and a
PostgreSQL server started by the test itself on free 127.0.0.1 ports, with their data in temp
directories, plus a `Cluster` of Herald nodes sharing them.

- `RedisServer`: `redis-server --save '' --appendonly no` (nothing persists, so a restart is a
  real loss of every key: new epochs). `command(...)` speaks RESP over a plain socket (no Python
  Redis client needed): `INFO`, `DBSIZE`, ... . `restart()` keeps the port and the directory.
- `PostgresServer`: `initdb` + `postgres` as the `postgres` user when run as root (PostgreSQL
  refuses root), data and socket in a temp directory, `fsync=off` (tests only), listening on
  127.0.0.1 only. `synchronous_commit` stays on, as in production: a commit is in the WAL
  (the OS's cache, fsync being off) before PostgreSQL answers it, so an immediate shutdown or a
  SIGKILL of the server loses nothing Herald acknowledged, and the cluster tests can catch a loss.
  (With it off, such a stop drops the last commits whatever Herald does.) `sql(...)` runs `psql`. `restart()` keeps the port and the data directory.
- Every process is a direct child, recorded by PID and stopped by that PID (SIGTERM/SIGINT, then
  SIGKILL after a bound); nothing is ever killed by name. `stop_all()` runs in the fixtures'
  finalizers.

`engines_missing()` says why the engines cannot run here (None when they can): the cluster tests
skip with that message, and only then.
"""
from __future__ import annotations

import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

PG_BIN = Path(os.environ.get("HERALD_PG_BIN", "/usr/lib/postgresql/15/bin"))
# Loaded here: a child that switched to the postgres user may not read Python's own files.
_LIBC = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    """preexec_fn: the engine gets SIGTERM if the test process dies without its finalizers
    (PR_SET_PDEATHSIG; set after any user change, which clears it)."""
    _LIBC.prctl(1, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(RuntimeError):
    """The engine could not bind its port: another process (a suite running at once) took it
    between `free_port()` and the engine's bind."""


# Tries at a new port when the first start finds its port taken.
_PORT_TRIES = 5


def _start_retrying_ports(server, start, restarting: bool):
    """`start()`; a first start whose port was taken meanwhile tries again at another, a restart
    keeps its port (clients reconnect to it)."""
    for attempt in range(_PORT_TRIES):
        try:
            return start()
        except PortTaken:
            if restarting or attempt == _PORT_TRIES - 1:
                raise
            server.port = free_port()
    raise AssertionError("unreachable")


def engines_missing() -> Optional[str]:
    """Why Redis or PostgreSQL cannot be started on this machine, or None."""
    if not shutil.which("redis-server"):
        return "redis-server is not installed (scripts/bootstrap --test installs redis-server)"
    for tool in ("initdb", "postgres"):
        if not (PG_BIN / tool).exists():
            return f"{PG_BIN / tool} is missing (scripts/bootstrap --test installs postgresql)"
    if not shutil.which("psql"):
        return "psql is not installed (scripts/bootstrap --test installs postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root but there is no 'postgres' user to run PostgreSQL as (install postgresql)"
    return None


def _stop_pid(proc: subprocess.Popen, sig: int, timeout: float) -> None:
    """Sends `sig` to this child (by its PID) and reaps it; SIGKILL after `timeout`."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


# --- Redis -------------------------------------------------------------------------------------


class RedisError(RuntimeError):
    pass


def _resp_encode(args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class _RespReader:
    def __init__(self, sock: socket.socket):
        self.sock, self.buf = sock, b""

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n + 2:]
        return out

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RedisError(f"unexpected RESP reply {line!r}")


class RedisServer:
    """A `redis-server` child on a free loopback port, nothing persisted."""

    def __init__(self, base: Path, popen=subprocess.Popen):
        self.popen = popen  # the benchmarks pass their own (a child that dies with its driver)
        self.dir = base / "redis"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: Optional[subprocess.Popen] = None
        self.log_path = self.dir / "redis.log"
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout=15.0) -> "RedisServer":
        """Starts and waits for PING (`_start_retrying_ports`)."""
        return _start_retrying_ports(self, lambda: self._start(timeout), restarting=self.starts > 0)

    def _start(self, timeout) -> "RedisServer":
        self.log = open(self.log_path, "ab")
        started_at = self.log.tell()
        self.proc = self.popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir), "--protected-mode", "no"],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                self.log.close()
                if b"Address already in use" in self.log_path.read_bytes()[started_at:]:
                    raise PortTaken(f"redis-server: port {self.port} taken")
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            try:
                # Ours, not another suite's server on the same port.
                if self.command("PING") == "PONG" and self.info("server").get("process_id") == str(self.proc.pid):
                    self.starts += 1
                    return self
            except (OSError, RedisError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not answer PING in {timeout} s")
            time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc is not None:
            _stop_pid(self.proc, sig, 10)
        if getattr(self, "log", None) and not self.log.closed:
            self.log.close()

    def kill(self) -> None:
        """kill -9: every key is gone (nothing is persisted)."""
        self.stop(signal.SIGKILL)

    def restart(self) -> None:
        """Same port, same directory; since nothing persists, Redis comes back empty."""
        self.kill()
        self.start()

    def command(self, *args, timeout=5.0):
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(_resp_encode(args))
            return _RespReader(s).read()

    def info(self, section: str) -> dict:
        """`INFO section` as {key: value} (values as strings)."""
        raw = self.command("INFO", section)
        out = {}
        for line in raw.decode().splitlines():
            if line and not line.startswith("#") and ":" in line:
                k, _, v = line.partition(":")
                out[k] = v
        return out

    def commandstats(self) -> dict:
        """{command: calls} from `INFO commandstats`."""
        out = {}
        for k, v in self.info("commandstats").items():
            if k.startswith("cmdstat_"):
                fields = dict(p.split("=", 1) for p in v.split(","))
                out[k[len("cmdstat_"):]] = int(fields["calls"])
        return out


# --- PostgreSQL --------------------------------------------------------------------------------


def _as_postgres(die_with_parent=False):
    """preexec_fn: drop from root to the `postgres` user (PostgreSQL refuses to run as root),
    then, if asked, set the parent-death signal."""
    pw = pwd.getpwnam("postgres") if os.geteuid() == 0 else None

    def drop():
        if pw is not None:
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
        if die_with_parent:
            _die_with_parent()
    return drop


class PostgresServer:
    """A PostgreSQL 15 server as a direct child: `initdb` once, `postgres -D` in the foreground
    (so its PID is the postmaster's), data and socket in a temp directory owned by `postgres`."""

    def __init__(self, database="herald", popen=subprocess.Popen):
        self.popen = popen
        # Not under pytest's tmp_path: that is root-only (0700), and postgres must reach its files.
        self.base = Path(tempfile.mkdtemp(prefix="herald-pg-"))
        self.data = self.base / "data"
        self.socket_dir = self.base / "sock"
        self.log_path = self.base / "postgres.log"
        self.port = free_port()
        self.database = database
        self.proc: Optional[subprocess.Popen] = None
        self.created = False
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chmod(self.base, 0o755)
            for d in (self.data, self.socket_dir):
                # install -d -o postgres -m 700
                d.mkdir(mode=0o700)
                os.chown(d, pw.pw_uid, pw.pw_gid)
        else:
            self.data.mkdir(mode=0o700)
            self.socket_dir.mkdir(mode=0o700)
        self._initdb()

    @property
    def url(self) -> str:
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{self.database}"

    def _initdb(self):
        r = subprocess.run([str(PG_BIN / "initdb"), "-D", str(self.data), "-U", self.user, "-A", "trust",
                            "-E", "UTF8", "--locale", "C", "--no-sync"],
                           preexec_fn=_as_postgres(), capture_output=True, text=True, timeout=120,
                           cwd=str(self.base))
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed ({r.returncode}): {r.stdout[-1000:]} {r.stderr[-2000:]}")

    def start(self, timeout=30.0) -> "PostgresServer":
        """Starts and waits for a query (`_start_retrying_ports`)."""
        return _start_retrying_ports(self, lambda: self._start(timeout), restarting=self.created)

    def _start(self, timeout) -> "PostgresServer":
        self.log = open(self.log_path, "ab")
        started_at = self.log.tell()
        os.chmod(self.log_path, 0o666)
        self.proc = self.popen(
            [str(PG_BIN / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.socket_dir),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=on",
             "-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "logging_collector=off"],
            preexec_fn=_as_postgres(die_with_parent=True), stdout=self.log, stderr=self.log,
            stdin=subprocess.DEVNULL, cwd=str(self.base))
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                self.log.close()
                if b"Address already in use" in self.log_path.read_bytes()[started_at:]:
                    raise PortTaken(f"postgres: port {self.port} taken")
                raise RuntimeError(f"postgres exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            # Ours (its data directory), not another suite's server on the same port.
            r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", "postgres",
                                "-Atc", "SHOW data_directory"], capture_output=True, text=True, timeout=10)
            if r.returncode == 0 and os.path.realpath(r.stdout.strip()) == os.path.realpath(self.data):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not accept connections in {timeout} s: {r.stderr}")
            time.sleep(0.05)
        if not self.created:
            self.sql(f'CREATE DATABASE "{self.database}"', database="postgres")
            self.created = True
        return self

    def sql(self, statement: str, database: Optional[str] = None) -> list:
        """Runs one statement through psql; rows as lists of strings (unaligned, `|`-separated)."""
        r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                            "-d", database or self.database, "-v", "ON_ERROR_STOP=1", "-AtF", "\x1f",
                            "-c", statement], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"psql: {r.stderr.strip()}")
        return [line.split("\x1f") for line in r.stdout.splitlines() if line]

    def stop(self, sig=signal.SIGINT) -> None:
        """SIGINT is PostgreSQL's fast shutdown: open sessions are ended, committed data kept."""
        if self.proc is not None:
            _stop_pid(self.proc, sig, 30)
        if getattr(self, "log", None) and not self.log.closed:
            self.log.close()

    def restart(self) -> None:
        """Same port, same data directory: everything committed is still there."""
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
