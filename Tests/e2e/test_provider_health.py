"""A provider that accepts connections and never answers shows as degraded on /readyz and
/metrics, and turns ok on its first answer (OP-3, ADR 0015; found by the eighth session's testers:
`/readyz` said `apns: ok` while every push timed out and was retried).

The black hole is a listener here that accepts every connection (and, for APNs, completes TLS with
the provider double's certificate and ALPN h2) and never sends a byte. A 4 s lease keeps each
push's send deadline at 3 s (ADR 0008). A degraded provider does not make the node unready.
"""
import socket
import ssl
import sys
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

import httpx

from conftest import wait_until
from test_push import HTTP, all_jobs, android, auth, ios, jobs_in, json_log_lines, push, wait_job  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from credentials import CA_CERT, SERVER_CERT, SERVER_KEY, _make_ca  # noqa: E402
from fixture import provider_double, provider_double_module, start_double  # noqa: E402,F401

LEASE = {"HERALD_PUSH_LEASE_SECONDS": "4"}


class BlackHole:
    """Accepts TCP connections on 127.0.0.1 (completing TLS when given a context) and never answers."""

    def __init__(self, tls: ssl.SSLContext = None):
        self.tls = tls
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.held = []
        self.handshakes = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.tls:
                threading.Thread(target=self._handshake, args=(conn,), daemon=True).start()

    def _handshake(self, conn):
        try:
            wrapped = self.tls.wrap_socket(conn, server_side=True)
            self.held.append(wrapped)
            self.handshakes += 1
        except (OSError, ssl.SSLError):
            pass

    def close(self):
        self.closed = True
        self.server.close()
        for conn in self.held:
            try:
                conn.close()
            except OSError:
                pass


def readiness(h) -> tuple:
    r = HTTP.get(h.url("/readyz"))
    return r.status_code, r.json()


def wait_readiness(h, provider, predicate, timeout=30.0) -> dict:
    """`/readyz` once `provider`'s entry under `push` satisfies `predicate`; the node stays ready."""
    def matched():
        status, body = readiness(h)
        return (status, body) if predicate(body["push"].get(provider, "")) else None
    status, body = wait_until(matched, timeout, f"/readyz's push.{provider} as expected", interval=0.1)
    assert status == 200 and body["status"] == "ready", (status, body)
    return body


def metric(h, name, provider) -> float:
    text = HTTP.get(h.url("/metrics")).text
    for line in text.splitlines():
        if line.startswith(f'{name}{{provider="{provider}"}} '):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} for {provider} not in /metrics")


def ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def test_a_web_push_service_that_never_answers_is_degraded_until_one_answers(herald_factory, provider_double):
    double = provider_double
    hole = BlackHole()
    h = herald_factory(**double.herald_env(), **LEASE)
    try:
        assert readiness(h)[1]["push"]["webpush"] == "ok"
        started = time.time()
        user = f"u-{uuid.uuid4().hex[:8]}"
        lost = {}   # device id → the access token of the session (one device each) that registered it
        for _ in range(3):
            access = h.token(sub=user, sid=f"s-{uuid.uuid4().hex[:10]}")
            keys = double.webpush_subscription()["keys"]
            endpoint = f"https://127.0.0.1:{hole.port}/wp/{uuid.uuid4().hex}"
            r = HTTP.post(h.url("/v1/me/devices"), headers=auth(access),
                          json={"platform": "web", "subscription": {"endpoint": endpoint, "keys": keys}})
            assert r.status_code == 201, r.text
            lost[r.json()["id"]] = access
        r = HTTP.post(h.url("/v1/push"), headers=h.server_headers(),
                      json={"device_ids": list(lost), "notification": {"title": "Hi", "body": "into the void"}})
        assert r.status_code == 202 and r.json()["queued"] == 3, r.text
        jobs = [j["job_id"] for j in r.json()["jobs"]]

        body = wait_readiness(h, "webpush", lambda v: v.startswith("degraded: "))
        degraded = body["push_degraded"]["webpush"]
        assert "timeout" in degraded["reason"] and degraded["reason"] in body["push"]["webpush"], body
        assert degraded["unanswered_requests"] >= 3, body
        assert started - 1 <= ts(degraded["since"]) <= time.time(), (started, degraded)
        assert body["problems"] == [], body
        assert metric(h, "herald_push_provider_degraded", "webpush") == 1
        assert metric(h, "herald_push_provider_degraded", "apns") == 0
        assert readiness(h)[1]["push"]["apns"] == "ok"

        # The lost subscriptions go; their jobs end (skipped) once their sends timed out.
        for device_id, access in lost.items():
            assert HTTP.delete(h.url(f"/v1/me/devices/{device_id}"), headers=auth(access)).status_code == 204
        for job in jobs:
            wait_job(h, job, "done", timeout=30)
        assert readiness(h)[1]["push"]["webpush"].startswith("degraded: "), "nothing answered yet"

        # The first answer clears it.
        browser = double.webpush_subscription()
        access = h.token(sub=user, sid=f"s-{uuid.uuid4().hex[:10]}")
        r = HTTP.post(h.url("/v1/me/devices"), headers=auth(access), json={"platform": "web", "subscription": browser})
        assert r.status_code == 201, r.text
        r = HTTP.post(h.url("/v1/push"), headers=h.server_headers(),
                      json={"device_ids": [r.json()["id"]], "notification": {"title": "Hi", "body": "there"}})
        assert r.status_code == 202, r.text
        wait_job(h, r.json()["jobs"][0]["job_id"], "done")
        body = wait_readiness(h, "webpush", lambda v: v == "ok", timeout=5)
        assert body["push_degraded"] == {}, body
        assert metric(h, "herald_push_provider_degraded", "webpush") == 0
    finally:
        h.stop(wait=False)
        hole.close()


def test_an_apns_gateway_that_completes_tls_and_never_answers_is_degraded(herald_factory, tmp_path):
    double = start_double(tmp_path / "double")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(tmp_path / "double" / SERVER_CERT), str(tmp_path / "double" / SERVER_KEY))
    tls.set_alpn_protocols(["h2"])
    hole = BlackHole(tls)
    env = {**double.herald_env(), **LEASE, "HERALD_APNS_URL": f"https://127.0.0.1:{hole.port}/production"}
    h = herald_factory(**env)
    try:
        devices = [ios(h) for _ in range(3)]
        jobs = [j["job_id"] for j in push(h, {"title": "Hi", "body": "into the void"}, devices)["jobs"]]
        body = wait_readiness(h, "apns", lambda v: v.startswith("degraded: "))
        assert hole.handshakes >= 1, "TLS completed: the gateway is there and silent"
        degraded = body["push_degraded"]["apns"]
        assert degraded["reason"].startswith("provider_unreachable: ") or degraded["reason"].startswith("transport_error: "), degraded
        assert degraded["unanswered_requests"] >= 3, body
        assert metric(h, "herald_push_provider_degraded", "apns") == 1
        # Nothing was given up: the pushes wait for the gateway (retried, not dead).
        states = {all_jobs(h)[j]["state"] for j in jobs}
        assert states <= {"queued", "leased"}, states
    finally:
        h.stop(wait=False)
        hole.close()
        double.stop()


def test_a_refused_certificate_degrades_the_provider_with_its_own_reason_and_keeps_the_pushes(herald_factory, tmp_path):
    """ADR 0018: the double serves a certificate from a CA Herald is not given (HERALD_CA_FILE names
    another): nothing is sent, the pushes are kept (not dead, the attempt not counted) and retried
    no sooner than a minute, /readyz shows the provider degraded with `tls_certificate_rejected`
    and the verifier's words, and one error line names the likely causes."""
    double = start_double(tmp_path / "double")
    other = tmp_path / "other-ca"
    other.mkdir()
    _make_ca(other)
    env = {**double.herald_env(), "HERALD_CA_FILE": str(other / CA_CERT)}
    h = herald_factory(**env)
    try:
        devices = [ios(h) for _ in range(3)]
        started = time.time()
        jobs = [j["job_id"] for j in push(h, {"title": "Hi", "body": "through a stranger"}, devices)["jobs"]]
        body = wait_readiness(h, "apns", lambda v: v.startswith("degraded: "))
        degraded = body["push_degraded"]["apns"]
        reason = degraded["reason"]
        assert reason.startswith("tls_certificate_rejected: ") and f"(127.0.0.1 port {double.port})" in reason, degraded
        assert "certificate" in reason.split(": ", 1)[1], degraded          # the verifier's words
        assert body["push"]["apns"] == "degraded: " + degraded["reason"], body
        assert degraded["unanswered_requests"] >= 3, body
        assert double.requests("apns") == [], "nothing reached the gateway"
        for job_id in jobs:
            job = wait_job(h, job_id, "queued", check=lambda j: (j["last_error"] or "").startswith("tls_certificate_rejected"))
            assert job["attempts"] == 1, job
            assert ts(job["run_at"]) >= started + 60 - 1, job       # a minute at least
        lines = [line for line in json_log_lines(h) if "TLS certificate was refused" in line.get("msg", "")]
        assert len(lines) == 1 and lines[0]["level"] == "error" and "HERALD_CA_FILE" in lines[0]["msg"], h.logs()
        assert lines[0]["provider"] == "apns" and lines[0]["reason"] == degraded["reason"], lines
    finally:
        h.stop(wait=False)
        double.stop()


def test_test_pushes_count_toward_the_providers_health(herald_factory, provider_double):
    """ADR 0015 as amended: the device test push is one of the provider's requests. Three sent to a
    gateway that refuses connections make APNs degraded; FCM's answer to one keeps FCM ok."""
    double = provider_double
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    h = herald_factory(**{**double.herald_env(), "HERALD_APNS_URL": f"https://127.0.0.1:{port}/production",
                          "HERALD_APNS_SANDBOX_URL": f"https://127.0.0.1:{port}/sandbox"})
    try:
        phone = ios(h)
        for _ in range(3):
            r = HTTP.post(h.url(f"/v1/me/devices/{phone.id}/test"), headers=auth(phone.access))
            assert r.status_code == 502 and r.json()["reason"].startswith("provider_unreachable: "), r.text
        body = wait_readiness(h, "apns", lambda v: v.startswith("degraded: "), timeout=5)
        assert body["push_degraded"]["apns"]["unanswered_requests"] == 3, body
        pixel = android(h)
        r = HTTP.post(h.url(f"/v1/me/devices/{pixel.id}/test"), headers=auth(pixel.access))
        assert r.status_code == 200, r.text
        assert readiness(h)[1]["push"]["fcm"] == "ok"
        assert jobs_in(h, "queued") == [] and jobs_in(h, "done") == []
    finally:
        h.stop(wait=False)
