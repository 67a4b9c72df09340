"""Liveness and reconnect hardening (issue 18): a WebSocket whose app stopped answering pings loses
the foreground and its device is pushed; SSE's lease counts app-level calls only; reconnect advice
is spread per connection; a resumed stream gets the retained state of a channel it adds; WebSocket
messages in endless fragments are refused; a refreshed token's lost grants end those channels; a
duplicated JWT claim is refused; a stream whose peer stops acknowledging is ended by the kernel
within the dead-peer bound and its slot freed (ADR 0021).

The WebSocket client here is a few lines over a raw socket so it can do what no library does on
purpose: leave the server's pings unanswered, as a suspended (SIGSTOP) app does.
"""
import base64
import json
import os
import re
import signal
import socket
import struct
import sys
import time
import uuid
from pathlib import Path

import httpx
import jwt
import pytest

from conftest import assert_error, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import provider_double, provider_double_module, random_apns_token  # noqa: E402,F401

HTTP = httpx.Client(timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


def auth(access) -> dict:
    return {"Authorization": f"Bearer {access}"}


class RawWebSocket:
    """A minimal RFC 6455 client: masked frames out, whole frames in, pings answered only while
    `auto_pong` is on."""

    def __init__(self, h, access_token=None, query="", auto_pong=True):
        self.auto_pong = auto_pong
        self.pings = 0
        self.sock = socket.create_connection(("127.0.0.1", h.port), timeout=5)
        key = base64.b64encode(os.urandom(16)).decode()
        target = "/v1/ws?" + "&".join(p for p in [f"access_token={access_token}" if access_token else "", query] if p)
        self.sock.sendall((f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            assert chunk, "closed during the handshake"
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def _read(self, n, deadline):
        while len(self.buffer) < n:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def frame(self, timeout=5.0):
        """The next frame as (opcode, payload)."""
        deadline = time.monotonic() + timeout
        b0, b1 = self._read(2, deadline)
        length = b1 & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._read(2, deadline))[0]
        elif length == 127:
            length = struct.unpack("!Q", self._read(8, deadline))[0]
        return b0 & 0x0F, self._read(length, deadline)

    def send_frame(self, opcode, payload=b"", fin=True):
        mask = os.urandom(4)
        header = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        header += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack("!H", n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, message: dict):
        self.send_frame(0x1, json.dumps(message).encode())

    def _next(self, timeout):
        """One frame: a JSON text message, ("close", code, reason), or None for a ping (answered
        while `auto_pong` is on)."""
        opcode, payload = self.frame(timeout)
        if opcode == 0x9:
            self.pings += 1
            if self.auto_pong:
                self.send_frame(0xA, payload)
            return None
        if opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            return ("close", code, payload[2:].decode())
        assert opcode == 0x1, opcode
        return json.loads(payload)

    def recv(self, timeout=5.0):
        """The next JSON text message (pings answered or not on the way), or ("close", code, reason)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(max(deadline - time.monotonic(), 0.01))
            if message is not None:
                return message

    def await_pings(self, count, timeout=5.0):
        """Reads until `count` more pings came; fails on anything but pings."""
        deadline = time.monotonic() + timeout
        target = self.pings + count
        while self.pings < target:
            message = self._next(max(deadline - time.monotonic(), 0.01))
            assert message is None, message

    def recv_until(self, predicate, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            message = self.recv(max(deadline - time.monotonic(), 0.01))
            if isinstance(message, tuple) or predicate(message):
                return message

    def close(self):
        self.sock.close()


def live_sessions(h, user) -> list:
    r = HTTP.get(h.url(f"/v1/users/{user}/sessions/live"), headers=h.server_headers())
    assert r.status_code == 200, r.text
    return r.json()["sessions"]


def reachability(h, user) -> dict:
    r = HTTP.get(h.url(f"/v1/users/{user}/reachability"), headers=h.server_headers())
    assert r.status_code == 200, r.text
    return r.json()


def notify(h, user) -> dict:
    r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": [user]}, "kind": "chat.message",
                                                   "title": "New message"}, headers=h.server_headers())
    assert r.status_code == 201, r.text
    return r.json()["notifications"][0]


def outcome(h, notification_id, device_id, wanted, timeout=10.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        r = HTTP.get(h.url(f"/v1/notifications/{notification_id}/deliveries"), headers=h.server_headers())
        assert r.status_code == 200, r.text
        got = next((t["outcome"] for t in r.json()["targets"] if t.get("device_id") == device_id), None)
        if got in wanted or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def register_ios(h, user):
    sid = f"s-{uuid.uuid4().hex[:10]}"
    access = h.token(sub=user, sid=sid)
    token = random_apns_token()
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "ios", "token": token}, headers=auth(access))
    assert r.status_code == 201, r.text
    return access, sid, r.json()["id"], token


# --- a frozen WebSocket app ---------------------------------------------------------------------


def test_a_websocket_that_stops_answering_pings_loses_foreground_and_its_device_is_pushed(herald_factory, provider_double):
    h = herald_factory(**provider_double.herald_env(), HERALD_HEARTBEAT_SECONDS="1", HERALD_WS_PONG_TIMEOUT_SECONDS="2")
    user = f"u-{uuid.uuid4().hex[:8]}"
    access, sid, device_id, token = register_ios(h, user)
    ws = RawWebSocket(h, access)
    assert ws.recv()["type"] == "ready"

    # Answering pings: foreground, so the notification is live only.
    first = notify(h, user)
    assert ws.recv_until(lambda m: m.get("event") == "notification.created")["data"]["id"] == first["id"]
    assert outcome(h, first["id"], device_id, {"suppressed_foreground"}) == "suppressed_foreground"
    ws.await_pings(3, timeout=6)      # answered in turn: the socket stays open past the pong timeout
    [session] = live_sessions(h, user)
    assert session["foreground"] is True and session["connections"][0]["transport"] == "websocket"

    # Frozen: the next ping goes unanswered. Within the pong timeout (+ the 1 s tick) the server
    # closes with 1001 "pong timeout" and the connection is out of presence.
    ws.auto_pong = False
    frozen_at = time.monotonic()
    pings_before = ws.pings
    closed = None
    deadline = time.monotonic() + 8
    while closed is None:
        message = ws.recv(max(deadline - time.monotonic(), 0.01))
        if isinstance(message, tuple):
            closed = message
    assert ws.pings > pings_before, "a ping was sent"
    assert closed[:2] == ("close", 1001) and closed[2] == "pong timeout", closed
    # the next ping within the 1 s heartbeat, then the 2 s timeout, then at most one tick
    assert time.monotonic() - frozen_at <= 5.5
    assert live_sessions(h, user) == []
    reach = reachability(h, user)
    assert reach["reachability"] == "push_only" and reach["devices"][0]["reachability"] == "push_only", reach

    # The next notification reaches the device.
    second = notify(h, user)
    assert outcome(h, second["id"], device_id, {"sent"}) == "sent"
    pushed = [e for e in provider_double.requests("apns") if e["path"].endswith("/3/device/" + token) and e["outcome"]]
    assert len(pushed) == 1, pushed
    ws.close()


def test_the_pong_timeout_is_measured_from_the_unanswered_ping(herald_factory):
    h = herald_factory(HERALD_HEARTBEAT_SECONDS="1", HERALD_WS_PONG_TIMEOUT_SECONDS="3")
    ws = RawWebSocket(h, h.token(sub="frozen"), auto_pong=False)
    assert ws.recv()["type"] == "ready"
    assert ws.frame(timeout=3)[0] == 0x9, "a ping within the heartbeat"
    pinged = time.monotonic()
    # Only a pong answers the ping: an application message (answered with a `pong` message) does not.
    ws.send({"type": "ping"})
    closed = ws.recv_until(lambda m: False, timeout=8)
    waited = time.monotonic() - pinged
    assert closed[:2] == ("close", 1001), closed
    assert 2.5 <= waited <= 5.5, waited   # 3 s, give or take the once-a-second tick


# --- SSE: the lease counts app-level calls only ---------------------------------------------------


def test_sse_foreground_lease_is_renewed_by_calls_not_by_bytes(herald_factory):
    h = herald_factory(HERALD_HEARTBEAT_SECONDS="1", HERALD_FOREGROUND_LEASE_SECONDS="2")
    access = h.token(sub="lease", sid="s-lease")
    s = h.stream(access)
    s.ready()
    [session] = live_sessions(h, "lease")
    assert session["foreground"] is True
    # Heartbeats keep flowing (bytes written and taken by the client), yet the lease runs out.
    deadline = time.monotonic() + 6
    while live_sessions(h, "lease")[0]["foreground"]:
        assert time.monotonic() < deadline, "the lease never ran out"
        s.wait_comment(timeout=2)
    [session] = live_sessions(h, "lease")
    assert session["live"] is True and session["connections"][0]["lease_fresh"] is False
    assert reachability(h, "lease")["reachability"] == "live_background"
    # An explicit state report is app-level life: foreground again.
    r = HTTP.put(h.url("/v1/me/sessions/current/state"), json={"state": "foreground"}, headers=auth(access))
    assert r.status_code == 200, r.text
    assert live_sessions(h, "lease")[0]["foreground"] is True
    assert reachability(h, "lease")["reachability"] == "live_foreground"
    s.close()


# --- reconnect advice ----------------------------------------------------------------------------


def _retry_of(stream) -> int:
    found = re.findall(rb"^retry: (\d+)$", bytes(stream.raw), re.M)
    assert found, bytes(stream.raw)[:200]
    return int(found[0])


def test_retry_advice_is_spread_per_connection(herald):
    streams = [herald.stream(herald.token(sub=f"r{i}")) for i in range(12)]
    for s in streams:
        s.ready()
    delays = [_retry_of(s) for s in streams]
    assert all(1500 <= d <= 4500 for d in delays), delays
    assert len(set(delays)) >= 8, delays
    for s in streams:
        s.close()


def test_shutdown_advice_is_spread_on_sse_and_websocket(herald):
    a, b = herald.stream(herald.token(sub="a")), herald.stream(herald.token(sub="b"))
    a.ready()
    b.ready()
    ws = RawWebSocket(herald, herald.token(sub="w"))
    assert ws.recv()["type"] == "ready"
    herald.proc.send_signal(signal.SIGTERM)
    advised = []
    for s in (a, b):
        [shutdown] = s.wait_closed(timeout=5)
        data = shutdown.json()
        assert data["reconnect"] is True and 1500 <= data["retry_ms"] <= 4500, data
        # the shutdown block sets `retry:` to the same delay, for EventSource's own reconnect
        blocks = re.findall(rb"retry: (\d+)\nevent: shutdown\n", bytes(s.raw))
        assert [int(x) for x in blocks] == [data["retry_ms"]], bytes(s.raw)[-200:]
        advised.append(data["retry_ms"])
    message = ws.recv_until(lambda m: m.get("type") == "shutdown")
    assert message["reconnect"] is True and 1500 <= message["retry_ms"] <= 4500, message
    assert ws.recv_until(lambda m: False)[:2] == ("close", 1001)
    assert herald.wait_exit(timeout=5) == 0
    ws.close()


# --- retained state for a channel added on resume --------------------------------------------------


def test_a_channel_added_on_resume_gets_its_retained_message(herald):
    token = herald.token(channels=["a:*"])
    herald.publish("a:c", {"state": "ready"}, retain=True)
    s = herald.stream(token, channels="a:a,a:b")
    s.ready()
    seen = herald.publish("a:a", {"n": 1})
    cursor = s.next().id
    assert cursor == seen["id"]
    s.close()
    missed = herald.publish("a:c", {"n": 2})

    s2 = herald.stream(token, channels="a:a,a:b,a:c", last_event_id=cursor)
    assert s2.expect("ready").id == cursor
    snap = s2.next()
    assert snap.has_id is False and snap.json() == {"channel": "a:c", "offset": 1, "data": {"state": "ready"}}, snap
    replayed = s2.next()
    assert replayed.id == missed["id"]
    live = herald.publish("a:b", {"n": 3})
    assert s2.next().id == live["id"]
    assert s2.last_event_id == live["id"], "the snapshot did not move the position"

    # The WebSocket's subscribe with a cursor does the same.
    ws = RawWebSocket(herald, token)
    assert ws.recv()["type"] == "ready"
    ws.send({"type": "subscribe", "channels": ["a:c"], "last_event_id": cursor})
    assert ws.recv()["type"] == "subscribed"
    snap = ws.recv()
    assert snap["retained"] is True and snap["id"] is None and snap["data"] == {"state": "ready"}, snap
    assert ws.recv()["id"] == missed["id"]
    ws.close()
    s2.close()


# --- WebSocket fragments ---------------------------------------------------------------------------


def test_a_message_in_endless_empty_fragments_is_closed_with_1008(herald):
    ws = RawWebSocket(herald, herald.token(sub="frag"))
    assert ws.recv()["type"] == "ready"
    ws.send_frame(0x1, b'{"type":', fin=False)
    try:
        for _ in range(10_000):
            ws.send_frame(0x0, b"", fin=False)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed mid-flood: that is the point
    closed = ws.recv_until(lambda m: False)
    assert closed[:2] == ("close", 1008) and "fragments" in closed[2], closed
    ws.close()


def test_a_message_within_the_fragment_limit_is_accepted(herald):
    ws = RawWebSocket(herald, herald.token(sub="frag2"))
    assert ws.recv()["type"] == "ready"
    ws.send_frame(0x1, b'{"type":', fin=False)
    for _ in range(100):
        ws.send_frame(0x0, b"", fin=False)
    ws.send_frame(0x0, b'"ping"}')
    assert ws.recv() == {"type": "pong"}
    ws.close()


def test_a_fragmented_message_not_finished_in_time_is_closed_with_1008(herald_factory):
    h = herald_factory(HERALD_WS_ASSEMBLY_TIMEOUT_SECONDS="1", HERALD_HEARTBEAT_SECONDS="30")
    ws = RawWebSocket(h, h.token(sub="slowfrag"))
    assert ws.recv()["type"] == "ready"
    started = time.monotonic()
    ws.send_frame(0x1, b'{"type":', fin=False)
    closed = None
    while closed is None:   # keep trickling fragments: bytes arrive, but the message never ends
        ws.send_frame(0x0, b" ", fin=False)
        try:
            closed = ws.recv(timeout=0.3)
        except socket.timeout:
            pass
        assert time.monotonic() - started < 6, "not closed"
    assert closed == ("close", 1008, "message not completed in time"), closed
    ws.close()


# --- refresh drops channels the new token no longer grants -----------------------------------------


def test_refresh_unsubscribes_channels_the_new_token_does_not_grant(herald):
    old = herald.token(sub="r", sid="s", channels=["order:*", "generation:7"])
    ws = RawWebSocket(herald, old, query="channels=order:1,generation:7")
    assert ws.recv()["channels"] == ["user:r", "order:1", "generation:7"]
    new = herald.token(sub="r", sid="s", channels=["order:*"])
    ws.send({"type": "refresh", "access_token": new})
    refreshed = ws.recv()
    assert refreshed["type"] == "refreshed" and refreshed["revoked_channels"] == ["generation:7"], refreshed
    herald.publish("generation:7", {"n": 1})       # no longer delivered
    live = herald.publish("order:1", {"n": 2})
    assert ws.recv()["id"] == live["id"]
    [session] = live_sessions(herald, "r")
    assert session["connections"][0]["channels"] == ["order:1", "user:r"]
    # and it cannot subscribe again
    ws.send({"type": "subscribe", "channels": ["generation:7"]})
    assert ws.recv()["error"] == "forbidden_channel"
    # a refresh that keeps every grant revokes nothing
    ws.send({"type": "refresh", "access_token": herald.token(sub="r", sid="s", channels=["order:*"])})
    assert ws.recv()["revoked_channels"] == []
    ws.close()


# --- JWT: duplicate claim names ----------------------------------------------------------------------


def _raw_hs256(herald, payload_json: str) -> str:
    secret = herald.env["HERALD_JWT_SECRET"]
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(payload_json.encode()).rstrip(b"=")
    signing_input = header + b"." + body
    import hashlib
    import hmac
    signature = base64.urlsafe_b64encode(hmac.new(secret.encode(), signing_input, hashlib.sha256).digest()).rstrip(b"=")
    return (signing_input + b"." + signature).decode()


def test_a_token_with_a_duplicated_claim_is_refused(herald):
    now = int(time.time())
    # The first exp is in the future, the second long past: a first-wins reader would accept it.
    token = _raw_hs256(herald, f'{{"sub":"dup","exp":{now + 3600},"exp":{now - 3600}}}')
    body = assert_error(HTTP.get(herald.url("/v1/me/notifications"), headers=auth(token)), 401, "invalid_token")
    assert '"exp" twice' in body["message"], body
    r = HTTP.get(herald.url("/v1/stream"), headers=auth(token))
    assert_error(r, 401, "invalid_token")
    # the same claims, once each, are fine
    good = _raw_hs256(herald, f'{{"sub":"dup","exp":{now + 3600}}}')
    assert HTTP.get(herald.url("/v1/me/notifications"), headers=auth(good)).status_code == 200
    assert jwt.decode(good, herald.env["HERALD_JWT_SECRET"], algorithms=["HS256"])["sub"] == "dup"


def _metric(h, name) -> float:
    line = next(l for l in httpx.get(h.base + "/metrics", timeout=10).text.splitlines() if l.startswith(name + " "))
    return float(line.split()[-1])


def test_a_stream_whose_peer_stops_acknowledging_is_ended_and_its_slot_freed(herald_factory, raw):
    """ADR 0021: a client gone without FIN or RST held its SSE stream, and one of its user's stream
    slots, for TCP's ~15 min of retransmissions. On loopback the kernel always acknowledges, so
    the vanished peer is played by one whose window is shut: a tiny receive buffer, never read, so
    Herald's bytes stay unsent and unacknowledged, which TCP_USER_TIMEOUT bounds as it bounds
    unanswered retransmissions (Linux 5.11+). Heartbeat 1 s × 2: ended within about 3 s."""
    h = herald_factory(HERALD_HEARTBEAT_SECONDS=1, HERALD_DEAD_PEER_HEARTBEATS=2, HERALD_MAX_STREAMS_PER_USER=1)
    token = h.token(sub="gone", channels=["room:*"])
    gone = raw(h, timeout=5, rcvbuf=2048)
    gone.send(f"GET /v1/stream?channels=room:1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    assert gone.read_response(head=True).status == 200
    gone.read_until(b"event: ready\n")
    assert_error(httpx.get(h.url("/v1/stream"), headers=auth(token), timeout=5), 429, "too_many_streams")

    # More than its window and Herald's send buffer take at once, far less than the slow-reader bound.
    started = time.monotonic()
    h.publish_batch([{"channel": "room:1", "event": "chunk", "data": {"i": i, "pad": "p" * 4096}} for i in range(40)])

    def reopened():
        s = h.stream(token, channels="room:1", expect=None)
        return s if s.status == 200 else None

    stream = wait_until(reopened, timeout=30, interval=0.2, what="the vanished reader's slot freed")
    elapsed = time.monotonic() - started
    assert stream.ready()["user_id"] == "gone"
    # Within the bound (3 s) plus the time it takes to notice, not TCP's minutes; and not as a slow reader.
    assert elapsed < 15, f"the dead stream lasted {elapsed:.1f} s"
    assert _metric(h, "herald_slow_consumer_disconnects_total") == 0
