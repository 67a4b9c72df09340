"""Web Push end to end (issue 15, PU-8b): browsers register their push subscription as a device of
platform `web`; Herald encrypts each push with RFC 8291 (aes128gcm), signs for it with RFC 8292
(VAPID) and POSTs it to the subscription's endpoint: the push-service side of the provider double
(Tests/ProviderDouble/webpush.py), which checks the VAPID JWT, the RFC 8030 headers and the
encoding, decrypts with the subscription's private key and answers as told.

The encryption is cross-checked with an independent implementation: PyPI `http-ece` decrypts, with
a key pair this test made, what Herald sent to an endpoint of the double.
"""
import base64
import json
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import http_ece
import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import BINARY, assert_error, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import provider_double, provider_double_module, random_apns_token  # noqa: E402,F401

HTTP = httpx.Client(timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


def auth(access) -> dict:
    return {"Authorization": f"Bearer {access}"}


def device_ids(h, device) -> list:
    r = HTTP.get(h.url("/v1/me/devices"), headers=auth(device.access))
    assert r.status_code == 200, r.text
    return [d["id"] for d in r.json()["devices"]]


def push_one(h, device, notification=None) -> int:
    r = HTTP.post(h.url("/v1/push"), json={"device_ids": [device.id], "notification": notification or {"title": "Hi", "body": "there"}},
                  headers=h.server_headers())
    assert r.status_code == 202 and r.json()["queued"] == 1, r.text
    return r.json()["jobs"][0]["job_id"]


def find_job(h, job_id, state):
    cursor = None
    while True:
        params = {"state": state, "limit": 500, **({"cursor": cursor} if cursor else {})}
        r = HTTP.get(h.url("/v1/jobs"), params=params, headers=h.server_headers())
        assert r.status_code == 200, r.text
        for job in r.json()["jobs"]:
            if job["id"] == job_id:
                return job
        cursor = r.json()["next_cursor"]
        if not cursor:
            return None


def wait_job(h, job_id, state, timeout=10.0, check=lambda job: True) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = find_job(h, job_id, state)
        if job is not None and check(job):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} not {state} within {timeout}s")


def ts(value: str) -> float:
    """An API timestamp (RFC 3339, ms) as unix seconds."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Browser:
    """A web device: a subscription registered by one session."""

    def __init__(self, h, subscription: dict, user=None):
        self.user = user or f"u-{uuid.uuid4().hex[:8]}"
        self.subscription = subscription
        self.sub_id = subscription["endpoint"].rsplit("/", 1)[1]
        self.access = h.token(sub=self.user, sid=f"s-{uuid.uuid4().hex[:10]}")
        r = register(h, self.access, subscription)
        assert r.status_code == 201, r.text
        self.record = r.json()
        self.id = self.record["id"]


def register(h, access, subscription, **extra):
    body = {"platform": "web", "subscription": subscription, **extra}
    return HTTP.post(h.url("/v1/me/devices"), json=body, headers=auth(access))


def webpush_requests(double, sub_id: str, count: int = 1, timeout=10.0) -> list:
    deadline = time.monotonic() + timeout
    while True:
        got = [e for e in double.requests("webpush") if e["subscription"] == sub_id and e["outcome"] is not None]
        if len(got) >= count or time.monotonic() > deadline:
            assert len(got) >= count, f"{len(got)} of {count} Web Push requests for {sub_id}: {got}"
            return got
        time.sleep(0.02)


@pytest.fixture
def herald_wp(herald_factory, provider_double):
    return lambda **extra: herald_factory(**provider_double.herald_env(), **extra)


def test_a_push_reaches_the_browser_encrypted_and_signed(herald_wp, provider_double):
    double = provider_double
    h = herald_wp()
    config = double._call("GET", "/config")["webpush"]
    r = HTTP.get(h.url("/v1/push/vapid-public-key"))
    assert r.status_code == 200 and r.json() == {"public_key": config["vapid_public_key"]}, r.text

    browser = Browser(h, double.webpush_subscription())
    assert browser.record["platform"] == "web" and browser.record["provider"] == "webpush", browser.record
    sub = browser.subscription
    assert browser.record["token"] == f"{sub['endpoint']}#p256dh={sub['keys']['p256dh']}&auth={sub['keys']['auth']}"
    # Registering the same subscription again is the same device.
    again = register(h, browser.access, dict(sub, expirationTime=None))
    assert again.status_code == 200 and again.json()["id"] == browser.id, again.text
    # So is the same endpoint spelled with another scheme case (RFC 3986 §6.2.2.1): not a second device.
    scheme, rest = sub["endpoint"].split("://", 1)
    upper = register(h, browser.access, dict(sub, endpoint=scheme.upper() + "://" + rest))
    assert upper.status_code == 200 and upper.json()["id"] == browser.id, upper.text
    assert upper.json()["token"] == browser.record["token"], upper.text

    r = HTTP.post(h.url("/v1/push"), headers=h.server_headers(), json={"device_ids": [browser.id], "notification": {
        "title": "Order shipped", "body": "Arrives Friday", "data": {"order_id": "77"}, "priority": "high",
        "ttl_seconds": 900, "collapse_key": "order-77"}})
    assert r.status_code == 202, r.text
    job = wait_job(h, r.json()["jobs"][0]["job_id"], "done")
    [entry] = webpush_requests(double, browser.sub_id)
    assert entry["status"] == 201 and entry["known_subscription"] and not entry["notes"], entry
    assert entry["body"] == {"kind": "alert", "title": "Order shipped", "body": "Arrives Friday", "priority": "high",
                             "data": {"order_id": "77"}, "tag": "order-77", "push_id": job["payload"]["apns_id"]}, entry
    headers = entry["headers"]
    assert headers["ttl"] == "900" and headers["urgency"] == "high" and headers["topic"] == "order-77", headers
    assert headers["content-encoding"] == "aes128gcm", headers
    assert entry["vapid"]["k"] == config["vapid_public_key"], entry
    claims = entry["vapid"]["claims"]
    assert claims["aud"] == double.base_url and claims["sub"] == config["vapid_subject"], claims
    assert time.time() + 11 * 3600 < claims["exp"] <= time.time() + 24 * 3600, claims
    assert entry["jwt"]["header"]["alg"] == "ES256", entry


def test_http_ece_decrypts_what_herald_sent(herald_wp, provider_double):
    """The independent check: our own key pair and auth secret, http-ece's decryption."""
    double = provider_double
    h = herald_wp()
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    secret = uuid.uuid4().bytes
    endpoint = double.base_url + "/wp/ece-" + uuid.uuid4().hex
    browser = Browser(h, {"endpoint": endpoint, "keys": {"p256dh": b64url(public), "auth": b64url(secret)}})
    text = "Grüße — " + "x" * 3000
    job = wait_job(h, push_one(h, browser, {"title": "Hello", "body": text, "data": {"k": "v"}}), "done")
    [entry] = webpush_requests(double, browser.sub_id)
    assert entry["status"] == 201 and not entry["known_subscription"], entry
    body = unb64url(entry["encrypted_body"])
    assert len(body) <= 4096 and body[20] == 65 and int.from_bytes(body[16:20], "big") == 4096, len(body)
    plaintext = http_ece.decrypt(body, private_key=private, auth_secret=secret, version="aes128gcm")
    payload = json.loads(plaintext)
    assert payload["title"] == "Hello" and payload["body"] == text and payload["data"] == {"k": "v"}, payload
    # No collapse key: the call's notification id is the Topic and the tag (ADR 0020), so a resend
    # replaces its first copy at the push service and in the service worker.
    notification_id = job["payload"]["notification"]["notification_id"]
    assert payload["tag"] == notification_id and entry["headers"]["topic"] == notification_id, (payload, entry["headers"])
    # Every message has its own salt and key: a second push is a different body.
    wait_job(h, push_one(h, browser, {"title": "Hello", "body": text, "data": {"k": "v"}}), "done")
    first, second = webpush_requests(double, browser.sub_id, 2)
    assert first["encrypted_body"][:22] != second["encrypted_body"][:22]
    again = json.loads(http_ece.decrypt(unb64url(second["encrypted_body"]), private_key=private, auth_secret=secret,
                                        version="aes128gcm"))
    assert again["push_id"] != payload["push_id"] and again["tag"] != payload["tag"], again
    assert {**again, "push_id": None, "tag": None} == {**payload, "push_id": None, "tag": None}, again
    assert second["headers"]["topic"] == again["tag"], second["headers"]


def test_subscriptions_are_checked_field_by_field(herald_wp, herald_factory, provider_double):
    h = herald_wp()
    access = h.token(sub="v", sid="v-1")
    good = provider_double.webpush_subscription()
    p256dh, secret = good["keys"]["p256dh"], good["keys"]["auth"]
    off_curve = bytearray(unb64url(p256dh))
    off_curve[64] ^= 1
    cases = [
        ({"endpoint": "http://push.example/x"}, "subscription.endpoint"),
        ({"endpoint": "http://127.0.0.1:9/wp/x"}, "subscription.endpoint"),   # loopback http: dev mode or setting only
        ({"endpoint": "https://push.example/x#frag"}, "subscription.endpoint"),
        ({"endpoint": "push.example/x"}, "subscription.endpoint"),
        ({"keys": {"p256dh": p256dh[:-2], "auth": secret}}, "subscription.keys.p256dh"),
        ({"keys": {"p256dh": b64url(bytes(off_curve)), "auth": secret}}, "subscription.keys.p256dh"),
        ({"keys": {"p256dh": p256dh, "auth": secret + "AA"}}, "subscription.keys.auth"),
        ({"keys": {"p256dh": p256dh}}, "subscription.keys.auth"),
        ({"keys": None}, "subscription.keys"),
    ]
    for change, field in cases:
        r = register(h, access, {**good, **change})
        assert_error(r, 400, "invalid_request", field=field)
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "web", "subscription": good, "token": "x"}, headers=auth(access))
    assert_error(r, 400, "invalid_request", field="token")
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "ios", "subscription": good}, headers=auth(access))
    assert_error(r, 400, "invalid_request", field="subscription")
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "web"}, headers=auth(access))
    assert_error(r, 400, "invalid_request", field="token")
    # A bare endpoint is no subscription: nothing could be encrypted to it.
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "web", "token": good["endpoint"]}, headers=auth(access))
    assert_error(r, 400, "invalid_request", field="token")
    r = HTTP.get(h.url("/v1/me/devices"), headers=auth(access))
    assert r.json()["devices"] == [], r.text

    # With HERALD_WEBPUSH_ALLOW_HTTP=1 a loopback http endpoint registers (dev mode's default).
    local = herald_factory(**provider_double.herald_env(), HERALD_WEBPUSH_ALLOW_HTTP=1)
    r = register(local, local.token(sub="v", sid="v-2"), {**good, "endpoint": "http://127.0.0.1:9/wp/x"})
    assert r.status_code == 201 and r.json()["token"].startswith("http://127.0.0.1:9/wp/x#p256dh="), r.text


def test_endpoints_that_are_not_public_are_refused_and_never_sent_to(herald_factory, provider_double):
    """The SSRF guard (HERALD_WEBPUSH_ALLOW_PRIVATE=0, the default outside dev mode): a client cannot
    make Herald POST to the host's own services, the metadata service or the private network."""
    import os

    double = provider_double
    env = {**double.herald_env(), "HERALD_WEBPUSH_ALLOW_HTTP": "0"}
    # A subscription on 127.0.0.1 stored while the deployment allowed it (the double's own).
    allowing = herald_factory(**env)
    stored = Browser(allowing, double.webpush_subscription())
    allowing.stop()
    h = herald_factory(**{**env, "HERALD_WEBPUSH_ALLOW_PRIVATE": "0"})
    keys = double.webpush_subscription()["keys"]
    access = h.token(sub="mallory", sid="s-mallory")
    before = len(double.requests())
    for endpoint, shown in [(f"https://127.0.0.1:{double.port}/_double/reset", "127.0.0.1"),
                            ("https://169.254.169.254/latest/api/token", "169.254.169.254"), ("https://10.0.0.1:6379/", "10.0.0.1"),
                            ("https://[::1]:5432/", "::1"), ("https://[::ffff:7f00:1]/x", "::ffff:7f00:1"), ("https://100.64.0.1/x", "100.64.0.1"),
                            ("https://2130706433/x", "127.0.0.1"), ("https://0x7f.1/x", "127.0.0.1"), ("https://[fd00::1]/x", "fd00::1"),
                            ("https://localhost:8443/x", "localhost"), ("https://metadata/x", "metadata"),
                            ("https://metadata.google.internal/x", "metadata.google.internal")]:
        r = register(h, access, {"endpoint": endpoint, "keys": keys})
        body = assert_error(r, 400, "endpoint_not_public", field="subscription.endpoint")
        assert shown in body["message"] and "HERALD_WEBPUSH_ALLOW_PRIVATE" in body["message"], body
        # The stored form as `token` is held to the same rule.
        token = f"{endpoint}#p256dh={keys['p256dh']}&auth={keys['auth']}"
        r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "web", "token": token}, headers=auth(access))
        assert_error(r, 400, "endpoint_not_public", field="token")
    assert HTTP.get(h.url("/v1/me/devices"), headers=auth(access)).json()["devices"] == []
    # A public push service's endpoint still registers.
    r = register(h, access, {"endpoint": "https://fcm.googleapis.com/fcm/send/abc:def", "keys": keys})
    assert r.status_code == 201, r.text

    # The stored subscription is dead-lettered without a connection; the device is kept.
    job = wait_job(h, push_one(h, stored), "dead")
    assert job["dead_reason"] == "endpoint_not_public" and "127.0.0.1" in job["last_error"], job
    assert len(double.requests()) == before, "nothing reached the double"
    assert stored.id in device_ids(h, stored)

    # The operator's check says so too; http on loopback cannot be allowed without private hosts.
    sub = double.webpush_subscription()
    token = f"{sub['endpoint']}#p256dh={sub['keys']['p256dh']}&auth={sub['keys']['auth']}"
    base = {**os.environ, **env, "HERALD_DATABASE": ":memory:", "HERALD_WEBPUSH_ALLOW_PRIVATE": "0"}
    run = subprocess.run([BINARY, "send-test", "--device-token", token, "--platform", "web"],
                         capture_output=True, text=True, timeout=30, env=base)
    assert "endpoint_not_public" in run.stdout, (run.stdout, run.stderr)
    assert len(double.requests()) == before
    start = subprocess.run([BINARY, "serve"], capture_output=True, text=True, timeout=30,
                           env={**base, "HERALD_WEBPUSH_ALLOW_HTTP": "1"})
    assert start.returncode == 2 and "HERALD_WEBPUSH_ALLOW_PRIVATE" in start.stderr, start


@pytest.mark.parametrize("outcome,reason", [
    ("unsubscribe", "subscription_gone"),
    ({"status": 404}, "subscription_not_found"),
    ({"status": 410}, "subscription_gone"),
], ids=["unsubscribed-410", "injected-404", "injected-410"])
def test_a_gone_subscription_deletes_the_device(herald_wp, provider_double, outcome, reason):
    double = provider_double
    h = herald_wp()
    browser = Browser(h, double.webpush_subscription())
    bystander = Browser(h, double.webpush_subscription(), user=browser.user)
    if outcome == "unsubscribe":
        double.delete_webpush_subscription(browser.sub_id)
    else:
        double.set_outcomes("webpush", browser.sub_id, [outcome])
    job = wait_job(h, push_one(h, browser), "done")
    assert job["attempts"] == 1 and reason in (job["last_error"] or ""), job
    [entry] = webpush_requests(double, browser.sub_id)
    assert entry["status"] == outcome.get("status", 410) if isinstance(outcome, dict) else entry["status"] == 410
    remaining = device_ids(h, bystander)
    assert browser.id not in remaining and bystander.id in remaining, remaining


def test_too_large_dead_letters_and_keeps_the_device(herald_wp, provider_double):
    double = provider_double
    h = herald_wp()
    browser = Browser(h, double.webpush_subscription())
    double.set_outcomes("webpush", browser.sub_id, [{"status": 413}])
    job = wait_job(h, push_one(h, browser), "dead")
    assert job["attempts"] == 1 and job["dead_reason"] == "payload_too_large" and job["dead_provider"] == "webpush", job
    assert browser.id in device_ids(h, browser)
    # Data that does not fit the 4096-byte body with no text at all never leaves Herald.
    before = len(double.requests("webpush"))
    big = wait_job(h, push_one(h, browser, {"title": "t", "body": "b", "data": {"k": "x" * 3990}}), "dead")
    assert big["dead_reason"] == "payload_too_large", big
    assert len(double.requests("webpush")) == before


def test_an_alert_over_the_record_arrives_with_its_texts_shortened(herald_wp, provider_double):
    """Texts within the API's limits but over the 4096-byte record once encrypted: the body, then the
    title, is cut at a whole character with "…" (as on iOS), not dead-lettered after the 201."""
    double = provider_double
    h = herald_wp()
    browser = Browser(h, double.webpush_subscription())
    data = {f"k{i}": "v" * 80 for i in range(20)}
    body = "Olá 👩‍👩‍👧‍👦 " * 300
    job = wait_job(h, push_one(h, browser, {"title": "T" * 1000, "body": body, "data": data}), "done")
    [entry] = webpush_requests(double, browser.sub_id)
    assert entry["status"] == 201, entry
    got = entry["body"]
    assert got["title"] == "T" * 1000 and got["data"] == data, "the title fits once the body is cut; data is never cut"
    assert got["body"].endswith("…") and body.startswith(got["body"][:-1]), got["body"][-20:]
    assert len(json.dumps(got, ensure_ascii=False, separators=(",", ":")).encode()) <= 3993
    assert len(unb64url(entry["encrypted_body"])) <= 4096
    # The whole of the family emoji or none of it: the cut is at a character.
    assert not got["body"][:-1].endswith("\u200d") and job["attempts"] == 1, job
    # No body left to cut: the title is.
    browser2 = Browser(h, double.webpush_subscription())
    wait_job(h, push_one(h, browser2, {"title": "😀" * 1200, "data": data}), "done")
    [entry] = webpush_requests(double, browser2.sub_id)
    assert entry["body"]["title"].endswith("😀…") and "body" not in entry["body"], entry["body"].get("title", "")[-5:]


@pytest.mark.parametrize("outcome,floor", [
    ({"status": 429, "retry_after": 30}, 30),
    ({"status": 503, "retry_after": 45}, 45),
], ids=["429-retry-after-30", "503-retry-after-45"])
def test_retry_after_is_honoured(herald_wp, provider_double, outcome, floor):
    double = provider_double
    h = herald_wp(HERALD_PUSH_RETRY_BASE_MS=100)
    browser = Browser(h, double.webpush_subscription())
    double.set_outcomes("webpush", browser.sub_id, [outcome])
    job_id = push_one(h, browser)
    [entry] = webpush_requests(double, browser.sub_id)
    job = wait_job(h, job_id, "queued", check=lambda j: j["attempts"] == 1)
    delay = ts(job["run_at"]) - (entry["time"] + entry["duration_ms"] / 1000)
    assert floor - 0.01 <= delay <= floor + 2, (delay, job)
    assert browser.id in device_ids(h, browser)


def test_server_errors_back_off_then_deliver(herald_wp, provider_double):
    double = provider_double
    h = herald_wp(HERALD_PUSH_RETRY_BASE_MS=50, HERALD_PUSH_RETRY_CAP_MS=100)
    browser = Browser(h, double.webpush_subscription())
    double.set_outcomes("webpush", browser.sub_id, [{"status": 500}, {"status": 502}])
    job = wait_job(h, push_one(h, browser), "done")
    assert job["attempts"] == 3, job
    statuses = [e["status"] for e in webpush_requests(double, browser.sub_id, 3)]
    assert statuses == [500, 502, 201], statuses


def test_a_push_service_that_does_not_answer_holds_at_most_half_the_slots(herald_wp, provider_double):
    """ADR 0024 (breaker12): 270 pushes owed to a Web Push service answering in 8 s took all 256 of
    the worker's slots, so an APNs push made after them left only when the service answered. Now
    128 wait for that service's answers, the rest wait at most 1 s for a place and are then sent
    back to the queue (`origin_busy`, retried, not counted), and the APNs push leaves in time."""
    double = provider_double
    h = herald_wp()
    browser = Browser(h, double.webpush_subscription())
    double.set_outcomes("webpush", browser.sub_id, [{"status": 201, "delay_ms": 8000, "forever": True}])
    jobs = [push_one(h, browser, {"title": f"slow {i}"}) for i in range(270)]
    wait_until(lambda: len(double.requests("webpush")) >= 128, 10, "128 pushes at the slow service")
    token = random_apns_token()
    phone = h.token(sub=f"u-{uuid.uuid4().hex[:8]}", sid="phone")
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "ios", "token": token}, headers=auth(phone))
    assert r.status_code == 201, r.text
    started = time.monotonic()
    r = HTTP.post(h.url("/v1/push"), json={"device_ids": [r.json()["id"]], "notification": {"title": "not held"}},
                  headers=h.server_headers())
    assert r.status_code == 202, r.text
    double.wait_for_requests(1, provider="apns", timeout=6)
    assert time.monotonic() - started < 4, "the APNs push waited for the slow Web Push service"
    assert len(double.requests("webpush")) == 128, "no more than the gate's 128 reached the silent service"
    # Turned away after its second in the waiting room, it is queued again for a later try.
    busy = wait_job(h, jobs[-1], "queued", timeout=5, check=lambda j: (j["last_error"] or "").startswith("origin_busy"))
    assert busy["last_error"].startswith("origin_busy: 128 pushes in flight to https://127.0.0.1:"), busy
    assert busy["last_error"].endswith(", none ended within 1000 ms"), busy
    assert busy["attempts"] >= 1


def test_a_subscription_made_for_another_key_is_a_configuration_dead_letter(herald_wp, provider_double):
    double = provider_double
    h = herald_wp()
    other = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    browser = Browser(h, double.webpush_subscription(application_server_key=b64url(other)))
    job = wait_job(h, push_one(h, browser), "dead")
    assert job["dead_reason"] == "vapid_forbidden", job
    [entry] = webpush_requests(double, browser.sub_id)
    assert entry["status"] == 403 and entry["outcome"] == "vapid_key_mismatch", entry
    assert browser.id in device_ids(h, browser)


def test_vapid_keys_from_the_command_and_the_public_key_route(herald_factory, tmp_path):
    h = herald_factory()
    r = HTTP.get(h.url("/v1/push/vapid-public-key"))
    assert_error(r, 404, "webpush_not_configured")

    made = subprocess.run([BINARY, "vapid", "generate"], capture_output=True, text=True, timeout=10)
    assert made.returncode == 0, made.stderr
    values = dict(line.split("=", 1) for line in made.stdout.strip().splitlines())
    assert set(values) == {"HERALD_VAPID_PUBLIC_KEY", "HERALD_VAPID_PRIVATE_KEY"}, made.stdout
    public, private = values["HERALD_VAPID_PUBLIC_KEY"], values["HERALD_VAPID_PRIVATE_KEY"]
    key = ec.derive_private_key(int.from_bytes(unb64url(private), "big"), ec.SECP256R1())
    assert key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint) == unb64url(public)

    h = herald_factory(HERALD_VAPID_PRIVATE_KEY=private, HERALD_VAPID_PUBLIC_KEY=public, HERALD_VAPID_SUBJECT="mailto:ops@example.com")
    r = HTTP.get(h.url("/v1/push/vapid-public-key"))
    assert r.status_code == 200 and r.json() == {"public_key": public}, r.text

    pem = subprocess.run([BINARY, "vapid", "generate", "--pem"], capture_output=True, text=True, timeout=10)
    assert pem.returncode == 0 and pem.stdout.startswith("-----BEGIN PRIVATE KEY-----"), pem
    path = tmp_path / "vapid.pem"
    path.write_text(pem.stdout)
    pem_public = pem.stderr.strip().split("=", 1)[1]
    h = herald_factory(HERALD_VAPID_KEY_PATH=str(path), HERALD_VAPID_SUBJECT="https://example.com/ops")
    assert HTTP.get(h.url("/v1/push/vapid-public-key")).json() == {"public_key": pem_public}

    bad = subprocess.run([BINARY, "vapid", "generate", "--jwk"], capture_output=True, text=True, timeout=10)
    assert bad.returncode == 2 and "--jwk" in bad.stderr, bad
    # A mismatching public key turns Web Push off, naming the variable, and the server still runs.
    h = herald_factory(HERALD_VAPID_PRIVATE_KEY=private, HERALD_VAPID_PUBLIC_KEY=pem_public, HERALD_VAPID_SUBJECT="mailto:ops@example.com")
    assert_error(HTTP.get(h.url("/v1/push/vapid-public-key")), 404, "webpush_not_configured")
    assert "HERALD_VAPID_PUBLIC_KEY" in h.logs() and private not in h.logs()


def test_send_test_pushes_to_a_subscription(provider_double):
    """`herald send-test --platform web` with the stored subscription form: the operator's check."""
    import os

    double = provider_double
    sub = double.webpush_subscription()
    token = f"{sub['endpoint']}#p256dh={sub['keys']['p256dh']}&auth={sub['keys']['auth']}"
    env = {**os.environ, **double.herald_env(), "HERALD_DATABASE": ":memory:"}
    run = subprocess.run([BINARY, "send-test", "--device-token", token, "--platform", "web", "--title", "Keys work"],
                         capture_output=True, text=True, timeout=30, env=env)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["provider"] == "webpush" and answer["outcome"] == "delivered" and answer["status"] == 201, answer
    [entry] = webpush_requests(double, sub["id"])
    assert entry["body"]["title"] == "Keys work", entry
    bad = subprocess.run([BINARY, "send-test", "--device-token", sub["endpoint"], "--platform", "web"],
                         capture_output=True, text=True, timeout=30, env=env)
    assert bad.returncode == 2 and "--device-token" in bad.stderr, bad
