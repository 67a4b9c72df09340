"""HTTP/1.1 hardening and behaviour over raw sockets (docs/api.md, "HTTP behaviour")."""
import json
import socket
import time

import httpx
import pytest

from conftest import SERVER_KEY, RawHTTP, wait_until

REFUSED = {
    "malformed request line": (b"GARBAGE\r\n\r\n", 400),
    "request line with two spaces": (b"GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "bad version": (b"GET /healthz HTTP/1.x\r\nHost: x\r\n\r\n", 400),
    "target without slash": (b"GET healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "control character in target": (b"GET /heal\x01thz HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "fragment in target": (b"GET /healthz#top HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "http/0.9": (b"GET /healthz\r\n\r\n", 400),
    "http/0.9 named": (b"GET /healthz HTTP/0.9\r\n\r\n", 505),
    "space before colon": (b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    "tab before colon": (b"GET /healthz HTTP/1.1\r\nHost\t: x\r\n\r\n", 400),
    "header without colon": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400),
    "obs-fold": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n", 400),
    "content-length and transfer-encoding": (
        b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    "conflicting content-lengths": (
        b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
    "conflicting content-length list": (
        b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello!", 400),
    "negative content-length": (b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
    "huge content-length": (b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", (400, 413)),
    "non-numeric content-length": (b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n", 400),
    "bad chunk size": (b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400),
    "chunk size overflow": (
        b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\nhello\r\n0\r\n\r\n",
        (400, 413)),
    "chunked twice": (b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400),
    "final coding not chunked": (b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    "missing host on 1.1": (b"GET /healthz HTTP/1.1\r\n\r\n", 400),
    "two host headers": (b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    "nul in header": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400),
    "bare CR in header value": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400),
    "unknown transfer coding": (
        b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
    "http/2 preface": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    "http/2 version": (b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505),
}


@pytest.fixture
def herald(shared_herald):
    """Most tests here need no fresh state: one server per module (see conftest)."""
    return shared_herald


def assert_json_error(response, status):
    allowed = status if isinstance(status, tuple) else (status,)
    assert response.status in allowed, (response.status, response.body)
    assert response.header("Content-Type").startswith("application/json")
    body = response.json()
    assert isinstance(body["error"], str) and body["error"], body
    assert isinstance(body["message"], str)
    return body


def assert_healthy(herald):
    assert herald.proc.poll() is None, "herald exited"
    r = httpx.get(herald.url("/healthz"), timeout=5)
    assert r.status_code == 200 and r.json() == {"status": "ok"}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_and_closed(herald, raw, name):
    request, status = REFUSED[name]
    c = raw(herald)
    c.send_lenient(request)
    response = c.read_response()
    assert_json_error(response, status)
    assert response.header("Connection") == "close"
    # the server closes: nothing more is answered, even a valid request sent after
    c.send_lenient(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.closed_by_peer(timeout=3.5), f"connection left open; extra bytes {c.buffer[:200]!r}"
    assert_healthy(herald)


def test_head_over_limit_is_431(herald, raw):
    c = raw(herald)
    c.send_lenient(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (17 * 1024) + b"\r\n\r\n")
    response = c.read_response()
    assert_json_error(response, 431)
    assert c.closed_by_peer(3.5)
    # a head just under the limit is fine
    c2 = raw(herald)
    c2.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (15 * 1024) + b"\r\n\r\n")
    assert c2.read_response().status == 200
    assert_healthy(herald)


def test_many_headers_over_limit_is_431(herald, raw):
    c = raw(herald)
    c.send_lenient(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: %d\r\n" % (i, i) for i in range(3000)) + b"\r\n")
    assert_json_error(c.read_response(), 431)
    assert_healthy(herald)


def test_body_over_limit_by_content_length_is_413(herald, raw):
    c = raw(herald)
    c.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {2 * 1024 * 1024}\r\n\r\n".encode())
    # answered from the head alone, without waiting for the body
    response = c.read_response(timeout=3)
    body = assert_json_error(response, 413)
    assert body["error"] == "payload_too_large"
    assert c.closed_by_peer(3.5)
    assert_healthy(herald)


def test_chunked_body_over_limit_is_413(herald, raw):
    c = raw(herald)
    c.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
           f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
    chunk = b"x" * 65536
    for _ in range(20):
        c.send_lenient(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    assert_json_error(c.read_response(), 413)
    assert_healthy(herald)


def test_chunked_publish_is_accepted(herald_factory, raw):
    herald = herald_factory()  # counts on a fresh server
    body = json.dumps({"channel": "c:1", "data": {"via": "chunked"}}).encode()
    c = raw(herald)
    c.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
           f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
           + b"%x\r\n%s\r\n" % (10, body[:10]) + b"%x;ext=1\r\n%s\r\n" % (len(body) - 10, body[10:]) + b"0\r\n\r\n")
    response = c.read_response()
    assert response.status == 200, response.body
    assert response.json()["offset"] == 1
    # the connection stays usable
    c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.read_response().status == 200


def test_expect_100_continue(herald, raw):
    body = json.dumps({"channel": "c:1", "data": 1}).encode()
    c = raw(herald)
    c.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode())
    interim = c.read_response(timeout=3)
    assert interim.status == 100
    c.send(body)
    assert c.read_response().status == 200


def test_an_expectation_other_than_100_continue_is_417(herald, raw):
    body = json.dumps({"channel": "c:417", "data": 1}).encode()
    c = raw(herald)
    c.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nExpect: 200-ok\r\n\r\n".encode() + body)
    answer = c.read_response(timeout=3)
    assert answer.status == 417, answer.status
    assert json.loads(answer.body)["error"] == "expectation_failed", answer.body


def test_request_timeout_is_408(herald_factory, raw):
    """A partial head, and a complete head with a partial body, both get 408 and a close."""
    h = herald_factory(HERALD_REQUEST_TIMEOUT_SECONDS=1)
    head_only, partial_body = raw(h), raw(h)
    started = time.monotonic()
    head_only.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    partial_body.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{".encode())
    for c in (head_only, partial_body):
        response = c.read_response(timeout=4)
        elapsed = time.monotonic() - started
        body = assert_json_error(response, 408)
        assert body["error"] == "request_timeout"
        assert 0.9 <= elapsed <= 3.5, elapsed
        assert c.closed_by_peer(3)
    assert_healthy(h)


def test_silent_new_connection_times_out(herald_factory, raw):
    """A connection that opens and sends nothing is a request that never arrives: 408."""
    h = herald_factory(HERALD_REQUEST_TIMEOUT_SECONDS=1)
    c = raw(h)
    started = time.monotonic()
    assert_json_error(c.read_response(timeout=4), 408)
    assert 0.9 <= time.monotonic() - started <= 3.5
    assert c.closed_by_peer(3)


def test_idle_keepalive_connection_is_not_a_timeout(herald_factory, raw):
    """Between requests there is no 408: the request timer starts at a request's first byte."""
    h = herald_factory(HERALD_REQUEST_TIMEOUT_SECONDS=1)
    c = raw(h)
    c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.read_response().status == 200
    assert not c.closed_by_peer(timeout=2.2), "idle connection was closed or answered"
    c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.read_response().status == 200


def test_idle_timeout_closes_keepalive_connection(herald_factory, raw):
    h = herald_factory(HERALD_IDLE_TIMEOUT_SECONDS=1)
    c = raw(h)
    c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.read_response().status == 200
    assert c.closed_by_peer(timeout=4)


def test_keepalive_and_pipelining(herald, raw):
    c = raw(herald)
    c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
           b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
           b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    statuses = [c.read_response().status for _ in range(4)]
    assert statuses == [200, 404, 405, 200]
    # still open for more
    c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    r = c.read_response()
    assert r.status == 200 and r.json() == {"status": "ok"}
    assert r.header("Connection") is None


def test_pipelined_publishes_keep_order(herald_factory, raw):
    herald = herald_factory()  # counts on a fresh server
    s = herald.stream()
    s.ready()
    reqs = b""
    for i in range(20):
        body = json.dumps({"channel": "user:alice", "data": i}).encode()
        reqs += (f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    c = raw(herald)
    c.send(reqs)
    offsets = [c.read_response().json()["offset"] for _ in range(20)]
    assert offsets == list(range(1, 21))
    assert [json.loads(e.data)["data"] for e in s.take(20)] == list(range(20))


def test_connection_close_is_honoured(herald, raw):
    c = raw(herald)
    c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    r = c.read_response()
    assert r.status == 200 and r.header("Connection") == "close"
    assert c.closed_by_peer(3)


def test_http_1_0(herald, raw):
    c = raw(herald)
    c.send(b"GET /healthz HTTP/1.0\r\n\r\n")
    r = c.read_response()
    assert r.status == 200 and r.json() == {"status": "ok"}
    assert c.closed_by_peer(3)
    c2 = raw(herald)
    c2.send(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    r = c2.read_response()
    assert r.status == 200 and r.header("Connection").lower() == "keep-alive"
    c2.send(b"GET /healthz HTTP/1.0\r\n\r\n")
    assert c2.read_response().status == 200


def test_head_has_length_and_no_body(herald, raw):
    c = raw(herald)
    c.send(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    head = c.read_response(head=True)
    assert head.status == 200
    assert int(head.header("Content-Length")) == len(b'{"status":"ok"}')
    # no body follows: the next bytes on the connection are the next response
    c.send(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
    nxt = c.read_response()
    assert nxt.status == 404, (nxt, c.buffer)


def test_head_of_404(herald, raw):
    c = raw(herald)
    c.send(b"HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    head = c.read_response(head=True)
    assert head.status == 404 and int(head.header("Content-Length")) > 0
    assert c.read_response().status == 200


def test_404_and_405_with_allow(herald):
    r = httpx.get(herald.url("/v1/nothing-here"))
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    r = httpx.post(herald.url("/healthz"))
    assert r.status_code == 405 and r.json()["error"] == "method_not_allowed"
    assert {m.strip() for m in r.headers["allow"].split(",")} == {"GET", "HEAD"}
    r = httpx.get(herald.url("/v1/publish"), headers=herald.server_headers())
    assert r.status_code == 405 and r.headers["allow"].replace(" ", "") == "POST"
    r = httpx.delete(herald.url("/v1/stream"))
    assert r.status_code == 405 and "GET" in r.headers["allow"]
    r = httpx.get(herald.url("/v1/dev/token"))
    assert r.status_code in (404, 405)


def test_an_empty_path_segment_matches_no_route(herald, raw):
    """`POST /v1/jobs//retry` (a client's empty id) once reached the bulk retry; now no route."""
    for method, path in (("POST", "/v1/jobs//retry"), ("GET", "//healthz"), ("GET", "/v1/users//reachability")):
        c = raw(herald)
        c.send(f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
               f"Content-Length: 0\r\n\r\n".encode())
        r = c.read_response()
        assert r.status == 404 and json.loads(r.body)["error"] == "not_found", (path, r.status)
    # One trailing slash still matches.
    assert httpx.get(herald.url("/healthz/")).status_code == 200


def test_bearer_is_read_alike_for_keys_and_tokens(herald):
    for spelling in ("Bearer ", "bearer ", "Bearer  "):
        r = httpx.get(herald.url("/v1/users/u-1/sessions/live"), headers={"Authorization": spelling + SERVER_KEY})
        assert r.status_code == 200, (spelling, r.text)


def test_absolute_form_and_query_on_healthz(herald, raw):
    c = raw(herald)
    c.send(f"GET http://127.0.0.1:{herald.port}/healthz?x=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert c.read_response().status == 200


def test_many_connections_and_bad_input_do_not_crash(herald):
    """Every refused request from the table on one server, then it still serves."""
    for request, status in REFUSED.values():
        c = RawHTTP(herald, timeout=5)
        try:
            c.send_lenient(request)
            assert_json_error(c.read_response(), status)
        finally:
            c.close()
    # half-sent requests and abrupt resets
    for i in range(20):
        with socket.create_connection(("127.0.0.1", herald.port), timeout=2) as s:
            s.sendall(b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"[: 10 + i * 3])
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    assert_healthy(herald)
    herald.publish("c:1", 1)


def test_connections_per_ip_limit_is_429(herald_factory, raw):
    h = herald_factory(HERALD_MAX_CONNECTIONS_PER_IP=2)

    def held_connection():
        # the start-up health checks' connections are released asynchronously: retry briefly
        deadline = time.monotonic() + 5
        while True:
            c = raw(h)
            c.send_lenient(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            status = c.read_response().status
            if status == 200:
                return c
            assert status == 429 and time.monotonic() < deadline, status
            c.close()
            time.sleep(0.05)

    a = held_connection()
    held_connection()
    third = raw(h)
    third.send_lenient(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_json_error(third.read_response(), 429)
    assert third.closed_by_peer(3)
    a.close()
    # a slot frees up once a connection closes
    deadline = time.monotonic() + 5
    while True:
        c = RawHTTP(h)
        try:
            c.send_lenient(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            if c.read_response().status == 200:
                break
        finally:
            c.close()
        assert time.monotonic() < deadline, "closed connection never released its slot"
        time.sleep(0.05)


def test_cors_preflight_and_headers(herald_factory):
    h = herald_factory(HERALD_CORS_ORIGINS="https://app.example")
    r = httpx.options(h.url("/v1/stream"), headers={"Origin": "https://app.example",
                                                    "Access-Control-Request-Method": "GET",
                                                    "Access-Control-Request-Headers": "authorization,last-event-id"})
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert "GET" in r.headers["access-control-allow-methods"]
    allowed = r.headers["access-control-allow-headers"].lower()
    assert "authorization" in allowed and "last-event-id" in allowed
    r = httpx.get(h.url("/healthz"), headers={"Origin": "https://app.example"})
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    r = httpx.get(h.url("/healthz"), headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    s = h.stream(headers={"Origin": "https://app.example"})
    assert s.headers["access-control-allow-origin"] == "https://app.example"
    s.ready()


def test_head_of_stream_sends_headers_only(herald_factory, raw):
    herald = herald_factory()  # counts on a fresh server
    c = raw(herald)
    c.send(f"HEAD /v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {herald.token()}\r\n\r\n".encode())
    head = c.read_response(head=True)
    assert head.status == 200
    assert head.header("Content-Type").startswith("text/event-stream")
    assert c.closed_by_peer(3), f"bytes after a HEAD response: {c.buffer[:200]!r}"
    # and it did not leave a subscriber behind
    assert herald.publish("user:alice", 1)["delivered"] == 0


def test_head_of_stream_still_authenticates(herald, raw):
    c = raw(herald)
    c.send(b"HEAD /v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
    assert c.read_response(head=True).status == 401


def test_expect_continue_with_oversized_body_is_413_without_continue(herald, raw):
    c = raw(herald)
    c.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {2 * 1024 * 1024}\r\nExpect: 100-continue\r\n\r\n".encode())
    assert_json_error(c.read_response(timeout=3), 413)


def test_long_pipeline_answered_in_order(herald, raw):
    c = raw(herald)
    n = 300
    c.send(b"".join(b"GET /healthz?n=%d HTTP/1.1\r\nHost: x\r\n\r\n" % i if i % 3 else
                    b"GET /nope-%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(n)))
    statuses = [c.read_response().status for _ in range(n)]
    assert statuses == [404 if i % 3 == 0 else 200 for i in range(n)]


def _read_to_eof(sock, timeout=5.0) -> bytes:
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


@pytest.mark.parametrize("pipelined", [1, 3])
def test_half_closed_client_still_gets_every_answer(herald, pipelined):
    """A client may shut down its sending side once its requests are out (RFC 9112 §9.6): the
    answers, which wait for the end of the loop turn, must still be sent before the close."""
    for _ in range(10):
        sock = socket.create_connection(("127.0.0.1", herald.port))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * pipelined)
        sock.shutdown(socket.SHUT_WR)
        data = _read_to_eof(sock)
        sock.close()
        assert data.count(b"HTTP/1.1 200 ") == pipelined, data[:200]


def test_half_closed_client_gets_a_deferred_answer(herald):
    """The same for an answer that comes later from another thread (a stored notification call)."""
    body = json.dumps({"recipients": {"user_ids": ["half-close"]}, "kind": "k", "title": "T"}).encode()
    sock = socket.create_connection(("127.0.0.1", herald.port))
    sock.sendall(b"POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer " + SERVER_KEY.encode() + b"\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    sock.shutdown(socket.SHUT_WR)
    data = _read_to_eof(sock)
    sock.close()
    assert data.startswith(b"HTTP/1.1 201 "), data[:200]
    assert b"Connection: close" in data or b"connection: close" in data.lower()


def _open_streams(h) -> float:
    """The sum of `herald_streams` (every transport and state) in `GET /metrics`."""
    text = httpx.get(h.url("/metrics")).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("herald_streams{"))


def test_half_closed_stream_client_gets_its_stream_until_it_is_gone(herald_factory):
    """`GET /v1/stream` then `shutdown(SHUT_WR)` (some HTTP tools and proxies): the read of 0 bytes
    that follows the request must not drop the stream's answer (RFC 9112 §9.6). The head,
    `ready` and later events arrive; once the client closes for good, the next write (at worst
    the heartbeat) fails and the stream ends."""
    h = herald_factory(HERALD_HEARTBEAT_SECONDS=1)
    socks = []
    for i in range(30):
        sock = socket.create_connection(("127.0.0.1", h.port))
        sock.sendall(f"GET /v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {h.token(sub=f'half-{i}', sid=f'h{i}')}"
                     f"\r\n\r\n".encode())
        sock.shutdown(socket.SHUT_WR)
        socks.append(sock)
    for i, sock in enumerate(socks):
        data = _read_until(sock, b"event: ready\n")
        assert data.startswith(b"HTTP/1.1 200 ") and b"text/event-stream" in data, (i, data[:200])
    for i, sock in enumerate(socks):
        h.publish(f"user:half-{i}", {"n": i})
        _read_until(sock, b"event: update\n")
        block = _read_until(sock, b"\n\n").decode()
        assert json.loads(block.split("data: ", 1)[1].split("\n", 1)[0])["data"] == {"n": i}, block
    # Still open across a heartbeat: a half-closed client is a reader, not a client that left.
    _read_until(socks[0], b": heartbeat\n\n")
    assert _open_streams(h) == 30
    for sock in socks:
        sock.close()
    wait_until(lambda: _open_streams(h) == 0, timeout=10, what="the closed clients' streams ended")


def _read_until(sock, marker: bytes, timeout=5.0) -> bytes:
    """What `sock` receives up to and including `marker`; fails on EOF or after `timeout` s."""
    deadline = time.monotonic() + timeout
    data = b""
    while marker not in data:
        assert time.monotonic() < deadline, f"no {marker!r} within {timeout} s: {data[-300:]!r}"
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(1)
        assert chunk, f"closed before {marker!r}: {data[:300]!r}"
        data += chunk
    return data


def test_404_and_405_repeat_at_most_200_bytes_of_the_path(herald):
    long = "/v1/" + "a" * 15_000
    r = httpx.get(herald.url(long))
    assert r.status_code == 404 and len(r.content) < 400, len(r.content)
    message = r.json()["message"]
    assert message.endswith("…") and "/v1/" + "a" * 196 + "…" in message, message
    r = httpx.get(herald.url("/v1/jobs/" + "7" * 10_000 + "/retry"))
    assert r.status_code == 405 and len(r.content) < 400, len(r.content)
    assert r.json()["message"].endswith("…"), r.text
    short = httpx.get(herald.url("/v1/nothing-here"))
    assert short.json()["message"] == "no route for GET /v1/nothing-here"


def test_another_scheme_or_a_second_authorization_is_named(herald, raw):
    for path, code in (("/v1/users/u-1/sessions/live", "unauthorized"), ("/v1/me/devices", "invalid_token")):
        r = httpx.get(herald.url(path), headers={"Authorization": "Basic dXNlcjpwYXNz"})
        body = r.json()
        assert r.status_code == 401 and body["error"] == code, r.text
        assert "Basic" in body["message"] and "Bearer" in body["message"] and "wrong" not in body["message"], body
    # Two Authorization headers: which one counts would be a guess.
    for path in ("/v1/users/u-1/sessions/live", "/v1/me/devices"):
        c = raw(herald)
        c.send(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SERVER_KEY}\r\n"
               f"Authorization: Bearer {SERVER_KEY}\r\n\r\n".encode())
        r = c.read_response()
        body = assert_json_error(r, 400)
        assert body["error"] == "invalid_request" and body["field"] == "Authorization", body


def test_expect_100_continue_with_a_wrong_key_gets_401_not_100(herald, raw):
    """RFC 9110 §10.1.1: a final status instead of 100 when the request would be refused anyway."""
    for key in ("wrong-key", None):
        c = raw(herald)
        auth = f"Authorization: Bearer {key}\r\n" if key else ""
        c.send(f"POST /v1/publish HTTP/1.1\r\nHost: x\r\n{auth}"
               f"Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n".encode())
        r = c.read_response(timeout=3)
        assert r.status == 401 and json.loads(r.body)["error"] == "unauthorized", (r.status, r.body)


def test_every_operation_of_the_openapi_document_is_in_api_md(herald):
    # fresh14: api.md says it lists "every HTTP route", yet the web demo's dev-mode routes
    # (`POST /v1/dev/notifications`, `GET /v1/dev/push-double`, …) were in /openapi.json only.
    import re
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    text = (docs / "api.md").read_text() + (docs / "protocol.md").read_text()

    def shape(path):
        return re.sub(r"\{[^}]+\}", "{}", path.rstrip("/") or "/")

    named = set()
    for methods, path in re.findall(r"`((?:GET|POST|PUT|PATCH|DELETE)(?:\|(?:GET|POST|PUT|PATCH|DELETE))*) (/[^`\s?\[]*)", text):
        for method in methods.split("|"):
            named.add((method, shape(path)))
    document = httpx.get(herald.url("/openapi.json")).json()
    missing = sorted(f"{method.upper()} {path}" for path, operations in document["paths"].items()
                     for method in operations if method in ("get", "post", "put", "patch", "delete")
                     and (method.upper(), shape(path)) not in named)
    assert not missing, f"in /openapi.json but not in docs/api.md or docs/protocol.md: {missing}"
