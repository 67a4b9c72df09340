"""Black-box fixtures: start the built herald binary on a free loopback port and talk to it
with real third-party clients (httpx, httpx-sse).

Shared helpers for the suite:

- `Herald`: one running process (`herald` fixture, or `herald_factory(**env)` for settings);
  `token()`, `publish()`, `publish_batch()`, `stream()`, `restart()`, `stop()`.
- `SSEStream` (`herald.stream(...)`): an open `GET /v1/stream` read on a background thread and
  parsed by a WHATWG-conformant event-stream parser (or by httpx-sse with `client="httpx-sse"`);
  the test awaits events with bounded timeouts (`next`, `expect`, `take`, `wait_closed`).
- `RawHTTP`: a plain TCP socket for malformed HTTP, with a small response reader.

Every JSON answer a herald gives an httpx client (`Client` or `AsyncClient`, streams excepted)
is checked against `GET /openapi.json` (SPEC OP-7): the operation is found by method and path
template, and the body must match the schema documented for its status; an answer whose status
the operation does not document fails as well. Mismatches fail the test at its teardown.
"""
import itertools
import json
import os
import queue
import re
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import httpx
import httpx_sse
import jsonschema
import jwt
import pytest
import referencing
import referencing.jsonschema

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("HERALD_BINARY", str(ROOT / ".build" / "debug" / "herald"))
JWT_SECRET = "e2e-secret-0123456789abcdef0123456789"
SERVER_KEY = "e2e-server-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readiness(h):
    """`GET /readyz` of `h`: (status, body)."""
    r = httpx.get(h.url("/readyz"), timeout=30)
    return r.status_code, r.json()


def wait_readiness(h, status, timeout=10.0):
    """Polls `/readyz` until it answers `status` or `timeout` seconds passed; the last (status, body)."""
    deadline = time.monotonic() + timeout
    while True:
        code, body = readiness(h)
        if code == status or time.monotonic() > deadline:
            return code, body
        time.sleep(0.2)  # the probe's answer is kept 1 s: poll below that


_UNREAPED = []


def _reap(proc, timeout=10):
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# The `listening` line names the port the server bound (json: "url":"http://…:PORT"; text: url=…).
_LISTENING = re.compile(rb'listening\W.*?http://[^\s"]*:(\d+)')
_SERIAL = itertools.count()


# The herald last given each default database file (`Herald._default_database`).
_DATABASE_HOLDERS = {}


class Herald:
    """A running herald process and helpers to reach it.

    It binds port 0 and the port is read from its `listening` log line: a port picked here and
    bound later by the server could be taken meanwhile by another suite running at once (and a
    healthz probe would then reach someone else's server). `restart()` keeps that port."""

    def __init__(self, env: dict, tmp_path: Path):
        # Names that must be unique per process before the port is known.
        self.name = f"{os.getpid()}x{next(_SERIAL)}"
        self.port = None
        self.base = None
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HERALD_HOST": "127.0.0.1",
            "HERALD_PORT": "0",
            "HERALD_JWT_SECRET": JWT_SECRET,
            "HERALD_SERVER_KEY": SERVER_KEY,
            "HERALD_LOG_FORMAT": "json",
            "HERALD_LOG_LEVEL": "info",
            "HERALD_DATABASE": str(tmp_path / "herald.db" if "HERALD_DATABASE" in env else self._default_database(tmp_path)),
        }
        if os.environ.get("HERALD_E2E_BROKER"):
            # Opt-in: the one-node suite on a Redis broker (redis://…), each Herald in a
            # namespace of its own so tests share no history.
            self.env["HERALD_BROKER"] = os.environ["HERALD_E2E_BROKER"]
            self.env["HERALD_BROKER_NAMESPACE"] = f"e2e{self.name}"
        self.env.update(env)
        # Opt-in: run against PostgreSQL (HERALD_E2E_POSTGRES=postgres://user@host:port), one new
        # database per herald, for the tests that do not read the SQLite file themselves.
        postgres = os.environ.get("HERALD_E2E_POSTGRES")
        if postgres and "HERALD_DATABASE" not in env:
            name = f"herald_e2e_{self.name}_{int(time.time() * 1000) % 1000000}"
            server = postgres.split("://", 1)[1].rstrip("/")
            user, _, hostport = server.rpartition("@")
            host, _, port = hostport.partition(":")
            subprocess.run(["createdb", "-h", host, "-p", port or "5432", "-U", user or "postgres", name], check=True)
            self.env["HERALD_DATABASE"] = f"{postgres.rstrip('/')}/{name}"
            # Stable across restart(): a restarted herald takes back at once the jobs it held.
            self.env.setdefault("HERALD_NODE_ID", f"e2e-{self.name}")
        self.log_path = tmp_path / f"herald-{self.name}.log"
        self.proc = None
        self.streams = []
        self.start()

    def _default_database(self, tmp_path: Path) -> Path:
        """The test's `herald.db`, shared by the heralds a test starts one after another; one
        started while another still runs on it gets a file of its own: one server per SQLite
        file (ADR 0017, a second exits 3)."""
        path = tmp_path / "herald.db"
        holder = _DATABASE_HOLDERS.get(path)
        if holder is not None and holder.proc is not None and holder.proc.poll() is None:
            path = tmp_path / f"herald-{self.name}.db"
        _DATABASE_HOLDERS[path] = self
        return path

    def start(self):
        self.log = open(self.log_path, "ab")
        started_at = self.log.tell()
        self.proc = subprocess.Popen([BINARY, "serve"], env=self.env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"herald exited with {self.proc.returncode}: {self.log_path.read_text()}")
            if self.port is None:
                with open(self.log_path, "rb") as f:
                    f.seek(started_at)
                    found = _LISTENING.search(f.read())
                if not found:
                    time.sleep(0.01)
                    continue
                self._bound(int(found.group(1)))
            try:
                if httpx.get(self.base + "/healthz", timeout=0.5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.01)
        raise RuntimeError("herald did not become healthy in 20 s")

    def _bound(self, port: int):
        """The port the first start bound: every later start (restart) asks for it again."""
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.env["HERALD_PORT"] = str(port)
        _HERALD_ORIGINS.add(("127.0.0.1", port))

    def stop(self, sig=None, wait=True):
        """Stops the process (SIGTERM unless `sig`). `wait=False` leaves the exit to be reaped
        at the end of the session, so test teardown does not sit through the graceful stop."""
        if self.proc and self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            if wait:
                _reap(self.proc)
            else:
                _UNREAPED.append(self.proc)
        if not self.log.closed:
            self.log.close()

    def restart(self):
        self.stop()
        self.start()

    def logs(self) -> str:
        return self.log_path.read_text()

    def url(self, path: str) -> str:
        return self.base + path

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

    def publish_batch(self, messages, expect=200):
        r = httpx.post(self.base + "/v1/publish/batch", json={"messages": messages},
                       headers=self.server_headers(), timeout=10)
        assert r.status_code == expect, r.text
        return r.json()

    def stream(self, token=None, channels=None, last_event_id=None, params=None, headers=None,
               expect=200, client="raw", via_query=False) -> "SSEStream":
        """Opens `GET /v1/stream`. `token=None` uses a default token for alice; `token=""` sends
        none. `channels` is a list (joined with commas) or a string. `last_event_id` goes in the
        `Last-Event-ID` header, or in `?last_event_id=` with `via_query=True`."""
        if token is None:
            token = self.token()
        query = dict(params or {})
        if channels:
            query["channels"] = channels if isinstance(channels, str) else ",".join(channels)
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = f"Bearer {token}"
        if last_event_id is not None:
            if via_query:
                query["last_event_id"] = last_event_id
            else:
                hdrs["Last-Event-ID"] = last_event_id
        s = SSEStream(self.base + "/v1/stream", query, hdrs, client=client)
        self.streams.append(s)
        if expect is not None:
            assert s.status == expect, f"stream status {s.status}, expected {expect}: {s.body!r}"
        return s

    def wait_exit(self, timeout=10) -> int:
        return self.proc.wait(timeout=timeout)


# --- SSE -----------------------------------------------------------------------------------


@dataclass
class Event:
    """One dispatched SSE event (WHATWG HTML §9.2.6)."""
    event: str
    data: str
    id: Optional[str]          # the last event ID in effect when the event was dispatched
    has_id: Optional[bool]     # whether the event block itself carried an `id:` line (raw parser only)

    def json(self):
        return json.loads(self.data)


class StreamClosed(AssertionError):
    """The stream ended (EOF or connection error) while an event was awaited."""


_EOF = object()


class EventStreamParser:
    """Incremental parser of `text/event-stream` bytes (WHATWG HTML "event stream
    interpretation"): CR, LF and CRLF line ends; comments; `id`, `event`, `data`, `retry`."""

    def __init__(self, on_event, on_comment, on_id):
        self.buffer = b""
        self.pending_cr = False
        self.data: list = []
        self.event_type = ""
        self.last_event_id = ""
        self.block_has_id = False
        self.retry = None
        self.on_event, self.on_comment, self.on_id = on_event, on_comment, on_id

    def feed(self, chunk: bytes):
        if self.pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self.pending_cr = False
        self.buffer += chunk
        while True:
            cr, lf = self.buffer.find(b"\r"), self.buffer.find(b"\n")
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                return
            i = min(ends)
            line = self.buffer[:i]
            if self.buffer[i:i + 1] == b"\r":
                if i + 1 == len(self.buffer):
                    self.pending_cr = True
                    self.buffer = b""
                elif self.buffer[i + 1:i + 2] == b"\n":
                    self.buffer = self.buffer[i + 2:]
                else:
                    self.buffer = self.buffer[i + 1:]
            else:
                self.buffer = self.buffer[i + 1:]
            self.line(line.decode("utf-8", errors="replace"))

    def line(self, line: str):
        if line == "":
            self.dispatch()
            return
        if line.startswith(":"):
            text = line[1:]
            self.on_comment(text[1:] if text.startswith(" ") else text)
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self.event_type = value
        elif name == "data":
            self.data.append(value)
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
                self.block_has_id = True
        elif name == "retry":
            if value.isdigit():
                self.retry = int(value)

    def dispatch(self):
        has_id, self.block_has_id = self.block_has_id, False
        if not self.data:
            if has_id:
                self.on_id(self.last_event_id)
            self.event_type = ""
            return
        event = Event(self.event_type or "message", "\n".join(self.data), self.last_event_id, has_id)
        self.data, self.event_type = [], ""
        self.on_event(event)


class SSEStream:
    """An open SSE response read on a daemon thread; events are awaited with bounded timeouts."""

    def __init__(self, url, params, headers, client="raw", read_timeout=30.0):
        self.client = httpx.Client(timeout=httpx.Timeout(10.0, read=read_timeout))
        self.kind = client
        if client == "httpx-sse":
            headers = dict(headers, Accept="text/event-stream")
        request = self.client.build_request("GET", url, params=params, headers=headers)
        self.response = self.client.send(request, stream=True)
        self.status = self.response.status_code
        self.headers = self.response.headers
        self.body = None
        self.raw = bytearray()
        self.comments: "queue.Queue[str]" = queue.Queue()
        self.ids: list = []                 # bare `id:` blocks (no data), in order
        self.events: list = []              # every dispatched event, in order
        self.last_event_id = ""
        self.retry = None
        self.end_reason = None
        self._queue: "queue.Queue" = queue.Queue()
        self._thread = None
        self._closed = False
        if self.status != 200:
            self.body = self.response.read()
            self.close()
            return
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def json_body(self):
        return json.loads(self.body)

    # reader thread
    def _push_event(self, event: Event):
        self.events.append(event)
        if event.id is not None:
            self.last_event_id = event.id
        self._queue.put(event)

    def _push_id(self, value):
        self.ids.append(value)
        self.last_event_id = value

    def _run(self):
        try:
            if self.kind == "httpx-sse":
                for sse in httpx_sse.EventSource(self.response).iter_sse():
                    if sse.retry is not None:
                        self.retry = sse.retry
                    if sse.data == "":
                        # id-only or retry-only block: WHATWG dispatches nothing
                        if sse.id:
                            self._push_id(sse.id)
                        continue
                    self._push_event(Event(sse.event or "message", sse.data, sse.id, None))
            else:
                parser = EventStreamParser(self._push_event, self.comments.put, self._push_id)
                for chunk in self.response.iter_raw():
                    self.raw += chunk
                    parser.feed(chunk)
                    self.retry = parser.retry
            self.end_reason = "eof"
        except Exception as exc:  # connection reset, closed by us, …
            self.end_reason = f"{type(exc).__name__}: {exc}"
        finally:
            self._queue.put(_EOF)

    # test side
    def next(self, timeout=5.0) -> Event:
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no SSE event within {timeout}s; last bytes: {bytes(self.raw[-300:])!r}") from None
        if item is _EOF:
            self._queue.put(_EOF)
            raise StreamClosed(f"stream ended ({self.end_reason}); last bytes: {bytes(self.raw[-300:])!r}")
        return item

    def expect(self, name, timeout=5.0) -> Event:
        event = self.next(timeout)
        assert event.event == name, f"expected event {name!r}, got {event}"
        return event

    def ready(self, timeout=5.0) -> dict:
        return self.expect("ready", timeout).json()

    def take(self, n, timeout=5.0) -> list:
        deadline = time.monotonic() + timeout
        return [self.next(max(0.01, deadline - time.monotonic())) for _ in range(n)]

    def wait_closed(self, timeout=5.0) -> list:
        """Events received until the stream ends; fails if it does not end within `timeout`."""
        deadline = time.monotonic() + timeout
        got = []
        while True:
            try:
                got.append(self.next(max(0.01, deadline - time.monotonic())))
            except StreamClosed:
                return got

    def wait_comment(self, timeout=5.0) -> str:
        try:
            return self.comments.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no SSE comment within {timeout}s; last bytes: {bytes(self.raw[-300:])!r}") from None

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            sock = self.response.extensions["network_stream"].get_extra_info("socket")
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass
        if self._thread is not None:
            self._thread.join(timeout=3)
        try:
            self.response.close()
        except Exception:
            pass
        self.client.close()


# --- Messages ------------------------------------------------------------------------------


def envelope(event: Event) -> dict:
    """The `{channel, offset, data}` of a message event, checked for shape."""
    body = event.json()
    assert set(body) == {"channel", "offset", "data"}, body
    return body


def summary(events) -> list:
    """(channel, data) pairs of message events, for order comparisons."""
    return [(envelope(e)["channel"], envelope(e)["data"]) for e in events]


# --- Raw HTTP ------------------------------------------------------------------------------


@dataclass
class RawResponse:
    status: int
    reason: str
    version: str
    headers: list = field(default_factory=list)
    body: bytes = b""

    def header(self, name) -> Optional[str]:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self):
        return json.loads(self.body)


class RawHTTP:
    """A plain TCP connection for requests httpx would refuse to send."""

    def __init__(self, herald: Herald, timeout=5.0, rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", herald.port))
        self.buffer = b""
        self.eof = False

    def send(self, data: bytes):
        self.sock.sendall(data)

    def send_lenient(self, data: bytes):
        """Sends, ignoring a peer that already answered and closed (it may refuse early)."""
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _fill(self, deadline) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self.eof:
            return False
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return False
        except ConnectionResetError:
            self.eof = True
            return False
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def read_until(self, marker: bytes, timeout=5.0) -> bytes:
        deadline = time.monotonic() + timeout
        while marker not in self.buffer:
            if not self._fill(deadline):
                raise AssertionError(f"{marker!r} not received within {timeout}s (eof={self.eof}); got {self.buffer[:500]!r}")
        i = self.buffer.index(marker) + len(marker)
        out, self.buffer = self.buffer[:i], self.buffer[i:]
        return out

    def read_response(self, head=False, timeout=5.0) -> RawResponse:
        """One response framed by Content-Length (no body for HEAD, 1xx, 204, 304)."""
        raw = self.read_until(b"\r\n\r\n", timeout).decode("latin-1")
        lines = raw[:-4].split("\r\n")
        version, status, reason = (lines[0].split(" ", 2) + [""])[:3]
        headers = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.append((name, value.strip()))
        response = RawResponse(int(status), reason, version, headers)
        length = response.header("Content-Length")
        if not head and length is not None and not (100 <= response.status < 200 or response.status in (204, 304)):
            n = int(length)
            deadline = time.monotonic() + timeout
            while len(self.buffer) < n:
                if not self._fill(deadline):
                    raise AssertionError(f"body of {n} bytes not received; got {self.buffer!r}")
            response.body, self.buffer = self.buffer[:n], self.buffer[n:]
        return response

    def closed_by_peer(self, timeout=3.0) -> bool:
        """True when the server closes the connection (EOF or reset) within `timeout` with no
        further bytes; bytes that do arrive are kept in `buffer` (and make this False)."""
        deadline = time.monotonic() + timeout
        before = len(self.buffer)
        while not self.eof:
            if not self._fill(deadline) and not self.eof:
                return False
        return len(self.buffer) == before

    def read_all(self, timeout=5.0) -> bytes:
        """Everything until EOF/reset; fails if the connection stays open past `timeout`."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            if not self._fill(deadline) and not self.eof:
                raise AssertionError(f"connection still open after {timeout}s; got {self.buffer[-300:]!r}")
        out, self.buffer = self.buffer, b""
        return out

    def close(self):
        self.sock.close()


# --- Fixtures ------------------------------------------------------------------------------


# --- Responses checked against the OpenAPI document ----------------------------------------

_HERALD_ORIGINS = set()


class OpenAPIResponseChecker:
    """Validates herald's JSON answers against its own document (fetched once per session)."""

    DOCUMENT_URI = "urn:herald:openapi"

    def __init__(self):
        self.lock = threading.Lock()
        self.document = None
        self.registry = None
        self.templates = []  # (segments, path template), most literal segments first
        self.validators = {}
        self.failures = []
        self.checked = 0

    def load(self, origin):
        with self.lock:
            if self.document is not None:
                return
            host, port = origin
            document = _ORIGINAL_SEND(httpx.Client(timeout=10), httpx.Request("GET", f"http://{host}:{port}/openapi.json")).json()
            self.registry = referencing.Registry().with_resource(
                self.DOCUMENT_URI, referencing.Resource(document, referencing.jsonschema.DRAFT202012))
            templates = [([part for part in path.split("/") if part], path) for path in document["paths"]]
            templates.sort(key=lambda item: -sum(not part.startswith("{") for part in item[0]))
            self.templates = templates
            self.document = document

    def operation(self, method, path):
        parts = [part for part in path.split("/") if part]
        for segments, template in self.templates:
            if len(segments) == len(parts) and all(s.startswith("{") or s == p for s, p in zip(segments, parts)):
                operation = self.document["paths"][template].get(method.lower())
                if operation is not None:
                    return template, operation
        return None, None

    @staticmethod
    def pointer(*tokens):
        return "/" + "/".join(str(t).replace("~", "~0").replace("/", "~1") for t in tokens)

    def schema_pointer(self, template, method, status, response):
        """The JSON pointer of the `application/json` schema of that response, or None."""
        base = ("paths", template, method.lower(), "responses", str(status))
        if "$ref" in response:
            ref = response["$ref"]
            base = tuple(ref[2:].split("/"))
            response = self.document
            for token in base:
                response = response[token]
        if "schema" not in response.get("content", {}).get("application/json", {}):
            return None
        return self.pointer(*base, "content", "application/json", "schema")

    def check(self, response: httpx.Response):
        request = response.request
        origin = (request.url.host, request.url.port)
        if origin not in _HERALD_ORIGINS or request.method == "HEAD":
            return
        if not response.headers.get("content-type", "").startswith("application/json") or not response.content:
            return
        self.load(origin)
        template, operation = self.operation(request.method, request.url.path)
        if operation is None:
            return
        what = f"{request.method} {request.url.path} -> {response.status_code}"
        documented = operation["responses"].get(str(response.status_code))
        if documented is None:
            self.fail(f"{what}: status not documented for {request.method} {template} (body {response.text[:200]})")
            return
        pointer = self.schema_pointer(template, request.method, response.status_code, documented)
        if pointer is None:
            return
        try:
            body = response.json()
        except ValueError as error:
            self.fail(f"{what}: not JSON ({error})")
            return
        with self.lock:
            validator = self.validators.get(pointer)
            if validator is None:
                validator = jsonschema.Draft202012Validator({"$ref": self.DOCUMENT_URI + "#" + pointer}, registry=self.registry)
                self.validators[pointer] = validator
            self.checked += 1
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        if errors:
            detail = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message[:200]}" for e in errors[:3])
            self.fail(f"{what} does not match {pointer}: {detail} (body {response.text[:300]})")

    def fail(self, message):
        with self.lock:
            self.failures.append(message)

    def take_failures(self):
        with self.lock:
            failures, self.failures = self.failures, []
        return failures


OPENAPI_CHECKER = OpenAPIResponseChecker()
_ORIGINAL_SEND = httpx.Client.send
_ORIGINAL_ASYNC_SEND = httpx.AsyncClient.send


def _checked_send(self, request, *args, stream=False, **kwargs):
    response = _ORIGINAL_SEND(self, request, *args, stream=stream, **kwargs)
    if not stream:
        OPENAPI_CHECKER.check(response)
    return response


async def _checked_async_send(self, request, *args, stream=False, **kwargs):
    response = await _ORIGINAL_ASYNC_SEND(self, request, *args, stream=stream, **kwargs)
    if not stream:
        OPENAPI_CHECKER.check(response)
    return response


httpx.Client.send = _checked_send
httpx.AsyncClient.send = _checked_async_send


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"openapi: {OPENAPI_CHECKER.checked} JSON responses matched their documented schema")


@pytest.fixture(autouse=True)
def _responses_match_openapi():
    OPENAPI_CHECKER.take_failures()
    yield
    failures = OPENAPI_CHECKER.take_failures()
    if failures:
        pytest.fail(f"{len(failures)} response(s) contradict /openapi.json:\n" + "\n".join(failures[:20]), pytrace=False)



@pytest.fixture
def herald_factory(tmp_path):
    started = []

    def make(**env):
        h = Herald({k: str(v) for k, v in env.items()}, tmp_path)
        started.append(h)
        return h

    yield make
    for h in started:
        h.stop(wait=False)
        for s in h.streams:
            s.close()


@pytest.fixture(scope="session", autouse=True)
def _reap_heralds():
    yield
    while _UNREAPED:
        _reap(_UNREAPED.pop())


@pytest.fixture
def herald(herald_factory):
    return herald_factory()


@pytest.fixture(scope="module")
def _module_heralds(tmp_path_factory):
    started = {}

    def get(**env):
        env = {k: str(v) for k, v in env.items()}
        key = tuple(sorted(env.items()))
        h = started.get(key)
        if h is None or h.proc.poll() is not None:
            # a process that died is replaced, so one crash fails one test, not the module
            h = Herald(env, tmp_path_factory.mktemp("shared"))
            started[key] = h
        return h

    yield get
    for h in started.values():
        h.stop(wait=False)
        for s in h.streams:
            s.close()


@pytest.fixture
def shared_herald_factory(_module_heralds):
    """Like `herald_factory`, but one process per test module and settings, for tests that need
    no fresh server state (they use their own channel and user names, or state that repeats
    harmlessly). Streams a test opens are closed after it."""
    used = {}

    def get(**env):
        h = _module_heralds(**env)
        used.setdefault(id(h), (h, len(h.streams)))
        return h

    yield get
    for h, before in used.values():
        for s in h.streams[before:]:
            s.close()
        del h.streams[before:]


@pytest.fixture
def shared_herald(shared_herald_factory):
    return shared_herald_factory()


@pytest.fixture
def raw():
    """`raw(herald)` opens a raw TCP connection to that herald; all are closed at teardown."""
    opened = []

    def connect(target: Herald, timeout=5.0, **kwargs) -> RawHTTP:
        c = RawHTTP(target, timeout=timeout, **kwargs)
        opened.append(c)
        return c

    yield connect
    for c in opened:
        c.close()


# --- WebSocket helpers shared by the WebSocket and session tests -------------------------------

WS_TIMEOUT = 5


def ws_url(h, path="/v1/ws", **query):
    """The WebSocket URL of herald `h`, with query parameters."""
    q = "&".join(f"{k}={v}" for k, v in query.items())
    return f"ws://127.0.0.1:{h.port}{path}" + (f"?{q}" if q else "")


async def recv_json(ws, timeout=WS_TIMEOUT):
    """The next WebSocket message as JSON, within `timeout` seconds."""
    import asyncio
    import json
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def recv_until(ws, predicate, timeout=WS_TIMEOUT):
    """The first message for which `predicate` holds, within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        message = await recv_json(ws, max(deadline - time.monotonic(), 0.01))
        if predicate(message):
            return message


def run_async(coro, timeout=30):
    """Runs a test scenario coroutine with an overall bound."""
    import asyncio
    return asyncio.run(asyncio.wait_for(coro, timeout))


def web_push_token(endpoint=None) -> str:
    """A Web Push device token as Herald stores a browser subscription (issue 15):
    `<endpoint>#p256dh=<base64url>&auth=<base64url>` with a fresh P-256 key and auth secret."""
    import base64
    import secrets

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    endpoint = endpoint or f"https://fcm.googleapis.com/fcm/send/{secrets.token_urlsafe(12)}:APA91b{secrets.token_urlsafe(24)}"
    return f"{endpoint}#p256dh={b64(point)}&auth={b64(secrets.token_bytes(16))}"


def wait_until(predicate, timeout=10.0, what="condition", interval=0.05):
    """Polls `predicate` (a request to another process: there is no event to await) until it
    returns something true, and returns that; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(interval)


def assert_error(r, status, code=None, field=None):
    """The one JSON error shape: `status`, a JSON body with a non-empty `error` (= `code` when given)
    and `field` when given. Returns the body."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert isinstance(body.get("error"), str) and body["error"], body
    if code is not None:
        assert body["error"] == code, body
    if field is not None:
        assert body.get("field") == field, body
    return body
