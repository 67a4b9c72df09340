"""Connection limits (RT-9) and CORS."""
import socket

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
