"""Connection limits (RT-9) and CORS."""
import os
import resource
import socket
import time

import httpx


def open_stream(h, token):
    """A raw SSE connection; returns the socket once the response head has arrived."""
    s = socket.create_connection(("127.0.0.1", h.port), timeout=5)
    s.sendall(f"GET /v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        assert chunk, "closed before the response head"
        head += chunk
    return s, head


def test_streams_per_user_are_capped_and_freed_on_close(herald_factory):
    h = herald_factory(HERALD_MAX_STREAMS_PER_USER=2)
    token = h.token(sub="capped")
    a, head_a = open_stream(h, token)
    b, head_b = open_stream(h, token)
    assert head_a.startswith(b"HTTP/1.1 200") and head_b.startswith(b"HTTP/1.1 200")
    r = httpx.get(h.base + "/v1/stream", headers={"Authorization": f"Bearer {token}"}, timeout=5)
    assert r.status_code == 429
    assert r.json()["error"] == "too_many_streams"
    # Another user is not affected.
    other, head_other = open_stream(h, h.token(sub="someone-else"))
    assert head_other.startswith(b"HTTP/1.1 200")
    # Closing one stream frees its slot (the server notices the close on its loop).
    a.close()
    for _ in range(100):
        c, head_c = open_stream(h, token)
        if head_c.startswith(b"HTTP/1.1 200"):
            break
        assert head_c.startswith(b"HTTP/1.1 429")
        c.close()
    else:
        raise AssertionError("the closed stream's slot was never freed")
    for s in (b, c, other):
        s.close()


def test_running_out_of_descriptors_logs_once_per_30_s_and_recovers(herald_factory):
    # Idle connections past the open-file limit: every loop meets EMFILE at each 100 ms retry,
    # which wrote a warning each time (about 20 lines a second for as long as it lasted).
    h = herald_factory()
    in_use = len(os.listdir(f"/proc/{h.proc.pid}/fd"))
    limit = in_use + 24
    try:
        resource.prlimit(h.proc.pid, resource.RLIMIT_NOFILE, (limit, limit))
    except (PermissionError, OSError) as error:
        import pytest
        pytest.skip(f"cannot lower the server's open-file limit: {error}")
    line = "accept: out of file descriptors"
    sockets = []
    try:
        for _ in range(60):
            sockets.append(socket.create_connection(("127.0.0.1", h.port), timeout=5))
        deadline = time.monotonic() + 10
        while line not in h.logs() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert line in h.logs(), "the server never ran out of descriptors"
        # A window in which each loop retries about 20 times: still the one line.
        time.sleep(2)
        assert h.logs().count(line) == 1, h.logs().count(line)
    finally:
        for s in sockets:
            s.close()
    # Room again: the server accepts without a restart.
    deadline = time.monotonic() + 10
    while True:
        try:
            if httpx.get(h.base + "/healthz", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "no answer once descriptors were free again"
        time.sleep(0.1)
    assert h.proc.poll() is None


def test_connections_per_ip_are_capped(herald_factory):
    h = herald_factory(HERALD_MAX_CONNECTIONS_PER_IP=3)
    held = [socket.create_connection(("127.0.0.1", h.port), timeout=5) for _ in range(2)]
    # httpx's own connection is the third; a fourth raw one is refused with 429.
    with httpx.Client() as client:
        assert client.get(h.base + "/healthz").status_code == 200
        extra = socket.create_connection(("127.0.0.1", h.port), timeout=5)
        data = b""
        while True:
            chunk = extra.recv(4096)
            if not chunk:
                break
            data += chunk
        assert data.startswith(b"HTTP/1.1 429")
        assert b"too_many_connections" in data
        extra.close()
    for s in held:
        s.close()


def test_cors_preflight_and_simple_requests(herald_factory):
    h = herald_factory(HERALD_CORS_ORIGINS="https://app.example")
    r = httpx.options(h.base + "/v1/publish", headers={
        "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in r.headers["access-control-allow-methods"]
    assert "Authorization" in r.headers["access-control-allow-headers"]
    r = httpx.get(h.base + "/healthz", headers={"Origin": "https://app.example"})
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    r = httpx.get(h.base + "/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers
