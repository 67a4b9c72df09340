"""Black-box fixtures: start the built herald binary on a free loopback port and talk to it
with real third-party clients (httpx, httpx-sse)."""
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import jwt
import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("HERALD_BINARY", str(ROOT / ".build" / "debug" / "herald"))
JWT_SECRET = "e2e-secret-0123456789abcdef0123456789"
SERVER_KEY = "e2e-server-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Herald:
    """A running herald process and helpers to reach it."""

    def __init__(self, env: dict, tmp_path: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HERALD_HOST": "127.0.0.1",
            "HERALD_PORT": str(self.port),
            "HERALD_JWT_SECRET": JWT_SECRET,
            "HERALD_SERVER_KEY": SERVER_KEY,
            "HERALD_LOG_FORMAT": "json",
            "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE": str(tmp_path / "herald.db"),
        }
        self.env.update(env)
        self.log_path = tmp_path / f"herald-{self.port}.log"
        self.proc = None
        self.start()

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([BINARY, "serve"], env=self.env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"herald exited with {self.proc.returncode}: {self.log_path.read_text()}")
            try:
                if httpx.get(self.base + "/healthz", timeout=0.5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("herald did not become healthy in 20 s")

    def stop(self, sig=None):
        if self.proc and self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def restart(self):
        self.stop()
        self.start()

    def logs(self) -> str:
        return self.log_path.read_text()

    def token(self, sub="alice", sid="s1", channels=None, ttl=3600, **extra) -> str:
        now = int(time.time())
        claims = {"sub": sub, "exp": now + ttl, "iat": now}
        if sid is not None:
            claims["sid"] = sid
        if channels is not None:
            claims["channels"] = channels
        claims.update(extra)
        return jwt.encode(claims, JWT_SECRET, algorithm="HS256")

    def server_headers(self) -> dict:
        return {"Authorization": f"Bearer {SERVER_KEY}"}

    def publish(self, channel, data, event="update", retain=None, expect=200):
        body = {"channel": channel, "event": event, "data": data}
        if retain is not None:
            body["retain"] = retain
        r = httpx.post(self.base + "/v1/publish", json=body, headers=self.server_headers(), timeout=5)
        assert r.status_code == expect, r.text
        return r.json()


@pytest.fixture
def herald_factory(tmp_path):
    started = []

    def make(**env):
        h = Herald({k: str(v) for k, v in env.items()}, tmp_path)
        started.append(h)
        return h

    yield make
    for h in started:
        h.stop()


@pytest.fixture
def herald(herald_factory):
    return herald_factory()
