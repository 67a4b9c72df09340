"""Expo push end to end (issue 15, PU-8a): Expo tokens registered on every route, pushes sent to
the Expo side of the provider double (Tests/ProviderDouble/expo.py) in requests of at most 100
messages, tickets and receipts classified, receipts fetched through the job queue.

Observed from outside: the HTTP API (`/v1/users/me/device-tokens`, `/v1/me/devices`, `/v1/push`,
`/v1/jobs`, `/readyz`) and the double's request log. Receipt delays are shortened through
HERALD_PUSH_RECEIPT_DELAY_MS; waits poll with bounded timeouts.
"""
import json
import time
import uuid

import pytest

from test_push import HTTP, auth, find_job, herald_with_push, jobs_in, push, wait_job
from test_push import provider_double, provider_double_module  # noqa: F401

FAST_RECEIPTS = {"HERALD_PUSH_RECEIPT_DELAY_MS": 200, "HERALD_PUSH_RECEIPT_RECHECK_MS": 200}
# Retries far away, so a retried job is seen waiting in the queue.
SLOW_RETRY = {"HERALD_PUSH_RETRY_BASE_MS": 600_000, "HERALD_PUSH_RETRY_CAP_MS": 600_000}


def expo_token() -> str:
    return f"ExponentPushToken[{uuid.uuid4().hex[:22]}]"


class ExpoDevice:
    """A phone of seed 002's app: registered through `/v1/users/me/device-tokens`."""

    def __init__(self, h, platform="ios", token=None):
        self.user = f"u-{uuid.uuid4().hex[:8]}"
        self.token = token or expo_token()
        self.access = h.token(sub=self.user, sid=f"s-{uuid.uuid4().hex[:10]}")
        r = HTTP.post(h.url("/v1/users/me/device-tokens"), json={"token": self.token, "platform": platform},
                      headers=auth(self.access))
        assert r.status_code == 201, r.text
        self.record = r.json()
        self.id = self.record["id"]


def devices_of(h, device) -> list:
    r = HTTP.get(h.url("/v1/me/devices"), headers=auth(device.access))
    assert r.status_code == 200, r.text
    return r.json()["devices"]


def expo_sends(double, token=None, count=1, timeout=10.0) -> list:
    """Finished Expo send requests (those carrying `token` when given), once there are `count`."""
    deadline = time.monotonic() + timeout
    while True:
        got = [e for e in double.requests("expo") if e["outcome"] is not None]
        if token is not None:
            got = [e for e in got if isinstance(e["body"], list) and any(m.get("to") == token for m in e["body"])]
        if len(got) >= count or time.monotonic() > deadline:
            assert len(got) >= count, f"{len(got)} of {count} Expo requests: {got}"
            return got
        time.sleep(0.02)


def receipt_jobs(h, states=("queued", "leased", "done", "dead")) -> list:
    return [j for s in states for j in jobs_in(h, s) if j["kind"] == "push.receipt"]


def wait_receipt_job(h, receipt_id, state, timeout=10.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for job in receipt_jobs(h, (state,)):
            if job["payload"]["receipt_id"] == receipt_id:
                return job
        time.sleep(0.05)
    raise AssertionError(f"no {state} receipt job for {receipt_id}: {receipt_jobs(h)}")


def push_one(h, device, notification=None) -> str:
    answer = push(h, notification or {"kind": "alert", "title": "Envío 88", "body": "En camino"}, [device])
    assert answer["queued"] == 1, answer
    return answer["jobs"][0]["job_id"]


def readyz_push(h) -> dict:
    r = HTTP.get(h.url("/readyz"))
    assert r.status_code == 200, r.text
    return r.json()["push"]


# --- registration -------------------------------------------------------------------------------


def test_expo_tokens_are_recognised_on_every_registration_route(herald):
    h = herald
    seed002 = ExpoDevice(h, platform="android")
    assert seed002.record["provider"] == "expo" and seed002.record["platform"] == "android"
    assert seed002.record["environment"] is None

    access = h.token(sub="u-main", sid="s-main")
    token = f"ExpoPushToken[{uuid.uuid4().hex}]"
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "ios", "token": token}, headers=auth(access))
    assert r.status_code == 201 and r.json()["provider"] == "expo" and r.json()["environment"] is None, r.text
    # The SDK's bare UUID form, when the client names the provider.
    bare = str(uuid.uuid4())
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "android", "token": bare, "provider": "expo"},
                  headers=auth(h.token(sub="u-bare", sid="s-bare")))
    assert r.status_code == 201 and r.json()["provider"] == "expo", r.text

    legacy = h.token(sub="u-legacy", sid="s-legacy")
    r = HTTP.post(h.url("/v1/devices"), json={"token": expo_token(), "platform": "apns"}, headers=auth(legacy))
    assert r.status_code == 204, r.text
    [listed] = devices_of(h, type("D", (), {"access": legacy})())
    assert listed["provider"] == "expo" and listed["platform"] == "ios"


@pytest.mark.parametrize("body,field", [
    ({"platform": "ios", "token": "ExponentPushToken[abc]", "provider": "apns"}, "provider"),
    ({"platform": "android", "token": "ExponentPushToken[abc]", "provider": "fcm"}, "provider"),
    ({"platform": "web", "token": "x", "provider": "expo"}, "provider"),
    ({"platform": "ios", "token": "not-an-expo-token", "provider": "expo"}, "token"),
    ({"platform": "ios", "token": "ExponentPushToken[abc]", "environment": "sandbox"}, "environment"),
])
def test_bad_expo_registrations_are_400_and_store_nothing(herald, body, field):
    access = herald.token(sub=f"u-{uuid.uuid4().hex[:8]}", sid=f"s-{uuid.uuid4().hex[:8]}")
    r = HTTP.post(herald.url("/v1/me/devices"), json=body, headers=auth(access))
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_request" and field in r.json()["message"], r.text
    assert HTTP.get(herald.url("/v1/me/devices"), headers=auth(access)).json()["devices"] == []


# --- delivery -----------------------------------------------------------------------------------


def test_an_expo_alert_field_by_field_then_its_receipt_through_the_queue(herald_factory, provider_double):
    double = provider_double
    double.expo_access_token("expo-access-1")
    h = herald_with_push(herald_factory, double, HERALD_EXPO_ACCESS_TOKEN="expo-access-1", **FAST_RECEIPTS)
    phone = ExpoDevice(h)
    job_id = push_one(h, phone, {"kind": "alert", "title": "Envío 88", "subtitle": "Mogos", "body": "En camino",
                                 "sound": "default", "badge": 2, "data": {"notificationId": "n-1", "actionUrl": "/envios/88"},
                                 "priority": "urgent", "ttl_seconds": 600, "collapse_key": "shipment-88",
                                 "android_channel_id": "envios"})
    job = wait_job(h, job_id, "done")
    [entry] = expo_sends(double, phone.token)
    assert entry["path"] == "/--/api/v2/push/send" and entry["status"] == 200 and entry["outcome"] == "ok", entry
    assert entry["headers"]["authorization"] == "Bearer expo-access-1"
    assert "gzip" in entry["headers"]["accept-encoding"] and entry["headers"]["accept"] == "application/json"
    # Expo's answer came gzipped; Herald read the ticket all the same.
    assert entry["response_headers"].get("content-encoding") == "gzip"
    [message] = entry["body"]
    assert message == {"to": phone.token, "title": "Envío 88", "subtitle": "Mogos", "body": "En camino",
                       "sound": "default", "badge": 2, "ttl": 600, "priority": "high", "channelId": "envios",
                       "interruptionLevel": "time-sensitive", "collapseId": "shipment-88", "tag": "shipment-88",
                       "data": {"notificationId": "n-1", "actionUrl": "/envios/88"}}, message
    ticket = entry["response_body"]["data"][0]["id"]
    assert job["last_error"] == f"delivered: {ticket}", job
    # The receipt check is a job of its own, asked for after the (shortened) delay.
    receipt = wait_receipt_job(h, ticket, "done")
    assert receipt["last_error"] == "receipt_ok" and receipt["payload"]["provider"] == "expo", receipt
    [asked] = [e for e in double.requests("expo_receipts") if e["outcome"] is not None]
    assert asked["body"] == {"ids": [ticket]} and asked["headers"]["authorization"] == "Bearer expo-access-1"
    assert readyz_push(h)["expo"] == "ok"

    # A wake-up: _contentAvailable at normal priority, the ids in data, nothing to show.
    job_id = push_one(h, phone, {"kind": "wakeup", "data": {"shipment_id": "88"}})
    wait_job(h, job_id, "done")
    [message] = expo_sends(double, phone.token, 2)[1]["body"]
    assert message == {"to": phone.token, "_contentAvailable": True, "priority": "normal", "ttl": 3600,
                       "data": {"shipment_id": "88"}}, message


def test_a_long_non_ascii_alert_is_counted_in_utf8_bytes_by_herald_and_the_double(herald_factory, provider_double):
    # api14: Expo limits the payload to 4096 bytes of JSON as Apple and Google read it, UTF-8
    # (Expo's sending-notifications docs; its SDK sends JSON.stringify's UTF-8). Herald counted
    # UTF-8, the double ASCII escapes (6 bytes an "é"): a 3,000-byte accented body Expo takes was
    # MessageTooBig here. Over the limit, Herald cuts it to fit in UTF-8 bytes, and the double agrees.
    double = provider_double
    h = herald_with_push(herald_factory, double)
    phone = ExpoDevice(h)
    whole = "é" * 1500
    job = wait_job(h, push_one(h, phone, {"kind": "alert", "title": "Pedido", "body": whole}), "done")
    [entry] = expo_sends(double, phone.token)
    [message] = entry["body"]
    assert message["body"] == whole and entry["response_body"]["data"][0]["status"] == "ok", entry["response_body"]
    assert job["last_error"].startswith("delivered: "), job
    wait_job(h, push_one(h, phone, {"kind": "alert", "title": "Pedido", "body": "ã" * 2100}), "done")
    [message] = expo_sends(double, phone.token, 2)[1]["body"]
    size = len(json.dumps({k: v for k, v in message.items() if k != "to"}, separators=(",", ":"), ensure_ascii=False).encode())
    assert message["body"].endswith("…") and 4000 < size <= 4096 and len(message["body"]) > 1900, (size, len(message["body"]))


def test_pushes_due_together_share_requests_of_at_most_100_gzipped(herald_factory, provider_double):
    double = provider_double
    h = herald_with_push(herald_factory, double, HERALD_EXPO_BATCH_MS=200)
    devices = [ExpoDevice(h) for _ in range(130)]
    answer = push(h, {"kind": "alert", "title": "Promo", "body": "x" * 60}, devices)
    assert answer["queued"] == 130
    deadline = time.monotonic() + 20
    while sum(e.get("messages", 0) for e in double.requests("expo") if e["outcome"]) < 130:
        assert time.monotonic() < deadline, [(e["messages"], e["status"], e["outcome"], e["notes"]) for e in double.requests("expo")]
        time.sleep(0.05)
    sends = [e for e in double.requests("expo") if e["outcome"] is not None]
    sizes = [e["messages"] for e in sends]
    assert sum(sizes) == 130 and max(sizes) <= 100, sizes
    assert len(sends) < 130 and max(sizes) > 1, sizes   # batched, not one request per push
    # Bodies over 1 KiB travel gzipped; the double inflated and checked them.
    big = [e for e in sends if e["body_bytes_inflated"] > 1024]
    assert big and all(e["content_encoding"] == "gzip" and e["body_bytes"] < e["body_bytes_inflated"] for e in big), big
    assert {t for e in sends for t in e["tickets"]} == {"ok"}


@pytest.mark.parametrize("code,outcome", [
    ("DeviceNotRegistered", "deleted"),
    ("MessageTooBig", "dead"),
    ("MessageRateExceeded", "retried"),
    ("InvalidCredentials", "misconfigured"),
    ("MismatchSenderId", "misconfigured"),
])
def test_ticket_errors(herald_factory, provider_double, code, outcome):
    double = provider_double
    h = herald_with_push(herald_factory, double, **SLOW_RETRY)
    phone = ExpoDevice(h)
    double.set_outcomes("expo", phone.token, [{"ticket_error": code}])
    job_id = push_one(h, phone)
    if outcome == "deleted":
        job = wait_job(h, job_id, "done")
        assert job["last_error"] == "device_deleted: DeviceNotRegistered", job
        assert devices_of(h, phone) == []
    elif outcome == "retried":
        job = wait_job(h, job_id, "queued", check=lambda j: j["attempts"] == 1)
        assert job["last_error"] == "MessageRateExceeded", job
        assert [d["id"] for d in devices_of(h, phone)] == [phone.id]
    else:
        job = wait_job(h, job_id, "dead")
        assert job["dead_provider"] == "expo" and job["dead_reason"] == code, job
        assert [d["id"] for d in devices_of(h, phone)] == [phone.id]
        assert readyz_push(h)["expo"] == ("ok" if outcome == "dead" else f"provider_misconfigured: {code}")
    assert receipt_jobs(h) == []   # no ticket, no receipt to ask for


@pytest.mark.parametrize("code", ["DeviceNotRegistered", "MessageTooBig", "MessageRateExceeded", "InvalidCredentials",
                                  "MismatchSenderId"])
def test_receipt_errors(herald_factory, provider_double, code):
    double = provider_double
    h = herald_with_push(herald_factory, double, **FAST_RECEIPTS, HERALD_PUSH_RETRY_BASE_MS=100, HERALD_PUSH_RETRY_CAP_MS=100)
    phone = ExpoDevice(h)
    double.set_outcomes("expo", phone.token, [{"receipt_error": code}])
    job = wait_job(h, push_one(h, phone), "done")
    ticket = job["last_error"].removeprefix("delivered: ")
    if code == "DeviceNotRegistered":
        receipt = wait_receipt_job(h, ticket, "done")
        assert receipt["last_error"] == "device_deleted: DeviceNotRegistered", receipt
        assert devices_of(h, phone) == []
    elif code == "MessageRateExceeded":
        # Not delivered: the same push goes again after a backoff, and its own receipt is ok.
        receipt = wait_receipt_job(h, ticket, "done")
        assert receipt["last_error"] == "resent: MessageRateExceeded", receipt
        sends = expo_sends(double, phone.token, 2)
        # The resent job's send was seen, so it is leased, or done if its outcome was written
        # since. Listed leased first, then done: one that moves between the two listings is in
        # both (counted once by id), never in neither.
        again = list({j["id"]: j for state in ("leased", "done") for j in jobs_in(h, state)
                      if j["kind"] == "push.deliver" and j["payload"].get("resends") == 1}.values())
        assert len(again) == 1 and again[0]["payload"]["apns_id"] == job["payload"]["apns_id"], again
        wait_job(h, again[0]["id"], "done")
        second = sends[1]["response_body"]["data"][0]["id"]
        assert wait_receipt_job(h, second, "done")["last_error"] == "receipt_ok"
    else:
        receipt = wait_receipt_job(h, ticket, "dead")
        assert receipt["dead_provider"] == "expo" and receipt["dead_reason"] == code, receipt
        assert [d["id"] for d in devices_of(h, phone)] == [phone.id]
        expected = "ok" if code == "MessageTooBig" else f"provider_misconfigured: {code}"
        assert readyz_push(h)["expo"] == expected


@pytest.mark.parametrize("code", ["MessageRateExceeded", "DeviceNotRegistered"])
def test_a_receipt_due_when_its_token_rotates_resends_to_the_new_token_and_keeps_it(herald_factory, provider_double, code):
    """rotation10 (ADR 0014's gap): the receipt check of a push named the device the push went
    to; when the app registered a new token before the receipt came, a `MessageRateExceeded`
    resend ended `device_gone`. The receipt job moves with the rotation: the resend goes to the new
    token (same push id), and a `DeviceNotRegistered` about the old token leaves the new device."""
    double = provider_double
    # Time to rotate before the receipt is asked for (the rotation itself takes milliseconds).
    h = herald_with_push(herald_factory, double, HERALD_PUSH_RECEIPT_DELAY_MS=3_000, HERALD_PUSH_RECEIPT_RECHECK_MS=200,
                         HERALD_PUSH_RETRY_BASE_MS=100, HERALD_PUSH_RETRY_CAP_MS=100)
    phone = ExpoDevice(h)
    double.set_outcomes("expo", phone.token, [{"receipt_error": code}])
    job = wait_job(h, push_one(h, phone), "done")
    ticket = job["last_error"].removeprefix("delivered: ")

    new_token = expo_token()
    r = HTTP.post(h.url("/v1/users/me/device-tokens"), json={"token": new_token, "platform": "ios"}, headers=auth(phone.access))
    assert r.status_code == 201, r.text
    new_id = r.json()["id"]
    assert [d["id"] for d in devices_of(h, phone)] == [new_id]
    [moved] = [j for j in receipt_jobs(h, ("queued",)) if j["payload"]["receipt_id"] == ticket]
    assert moved["payload"]["delivery"]["device_id"] == new_id and moved["payload"]["sent_device_id"] == phone.id, moved

    receipt = wait_receipt_job(h, ticket, "done")
    if code == "DeviceNotRegistered":
        assert receipt["last_error"] == "token_rejected_but_reregistered: DeviceNotRegistered", receipt
        assert [d["id"] for d in devices_of(h, phone)] == [new_id]
    else:
        assert receipt["last_error"] == "resent: MessageRateExceeded", receipt
        [again] = expo_sends(double, new_token, 1)
        assert [m["to"] for m in again["body"]] == [new_token], again["body"]
        resent = [j for state in ("leased", "done") for j in jobs_in(h, state)
                  if j["kind"] == "push.deliver" and j["payload"].get("resends") == 1]
        assert resent and resent[0]["payload"]["device_id"] == new_id, resent
        assert resent[0]["payload"]["apns_id"] == job["payload"]["apns_id"]
        assert wait_job(h, resent[0]["id"], "done")["last_error"].startswith("delivered: ")
        assert len(expo_sends(double, phone.token, 1)) == 1   # the old token got the push once, before


def test_a_receipt_not_ready_is_asked_for_again(herald_factory, provider_double):
    double = provider_double
    h = herald_with_push(herald_factory, double, **FAST_RECEIPTS)
    phone = ExpoDevice(h)
    double.set_outcomes("expo", phone.token, [{"receipt_missing_times": 2}])
    ticket = wait_job(h, push_one(h, phone), "done")["last_error"].removeprefix("delivered: ")
    assert wait_receipt_job(h, ticket, "done")["last_error"] == "receipt_ok"
    asked = [e for e in double.requests("expo_receipts") if e["outcome"] is not None]
    assert [e["receipts"] for e in asked] == [{}, {}, {ticket: "ok"}], asked


def test_a_failed_receipt_request_is_retried(herald_factory, provider_double):
    double = provider_double
    h = herald_with_push(herald_factory, double, **FAST_RECEIPTS, HERALD_PUSH_RETRY_BASE_MS=100, HERALD_PUSH_RETRY_CAP_MS=100)
    double.fail_expo_receipts([{"status": 503}])
    phone = ExpoDevice(h)
    ticket = wait_job(h, push_one(h, phone), "done")["last_error"].removeprefix("delivered: ")
    assert wait_receipt_job(h, ticket, "done")["last_error"] == "receipt_ok"
    asked = [e for e in double.requests("expo_receipts") if e["outcome"] is not None]
    assert [e["status"] for e in asked] == [503, 200], asked
    assert len(expo_sends(double, phone.token)) == 1   # the push itself went once


@pytest.mark.parametrize("answer,state,reason", [
    ({"status": 429, "retry_after": 300}, "queued", "TOO_MANY_REQUESTS"),
    ({"status": 503}, "queued", "SERVICE_UNAVAILABLE"),
    ({"status": 400, "code": "PUSH_TOO_MANY_EXPERIENCE_IDS"}, "dead", "PUSH_TOO_MANY_EXPERIENCE_IDS"),
])
def test_request_level_answers(herald_factory, provider_double, answer, state, reason):
    double = provider_double
    h = herald_with_push(herald_factory, double, **SLOW_RETRY)
    phone = ExpoDevice(h)
    double.set_outcomes("expo", phone.token, [answer])
    queued_at = time.time()
    job = wait_job(h, push_one(h, phone), state, check=lambda j: j["attempts"] >= 1)
    assert (job["dead_reason"] if state == "dead" else job["last_error"]) == reason, job
    if answer.get("retry_after"):
        from test_push import ts
        assert ts(job["run_at"]) >= queued_at + 300 - 1, job   # Retry-After is a floor under the backoff
    assert [d["id"] for d in devices_of(h, phone)] == [phone.id]


def test_a_device_of_another_expo_project_does_not_cost_the_pushes_batched_with_it(herald_factory, provider_double):
    """breaker11: Expo refuses a whole request whose tokens belong to more than one Expo project
    (PUSH_TOO_MANY_EXPERIENCE_IDS). One client registering a token of another project (a
    development build, a misconfigured app) dead-lettered every push batched with it; now each
    project's pushes go again in a request of their own."""
    double = provider_double
    h = herald_with_push(herald_factory, double, HERALD_EXPO_BATCH_MS=300, **SLOW_RETRY)
    phones = [ExpoDevice(h) for _ in range(5)]
    stray = ExpoDevice(h)
    double.expo_project(stray.token, "@someone-else/dev-build")
    answer = push(h, {"kind": "alert", "title": "Pedido 77", "body": "Pago"}, phones + [stray])
    jobs = {j["device_id"]: j["job_id"] for j in answer["jobs"]}
    for phone in phones:
        assert wait_job(h, jobs[phone.id], "done")["attempts"] == 1
    assert wait_job(h, jobs[stray.id], "done")["attempts"] == 1
    sends = expo_sends(double, count=3)
    refused = [e for e in sends if e["status"] == 400]
    assert len(refused) == 1 and refused[0]["outcome"] == "PUSH_TOO_MANY_EXPERIENCE_IDS", sends
    # Each push was accepted once, in a request of its project alone.
    accepted = [[m["to"] for m in e["body"]] for e in sends if e["status"] == 200]
    assert sorted(map(sorted, accepted)) == sorted([sorted(p.token for p in phones), [stray.token]]), accepted
    assert [d["id"] for d in devices_of(h, stray)] == [stray.id]


def test_a_missing_access_token_is_a_configuration_dead_letter(herald_factory, provider_double):
    double = provider_double
    double.expo_access_token("required-token")
    h = herald_with_push(herald_factory, double)
    phone = ExpoDevice(h)
    job = wait_job(h, push_one(h, phone), "dead")
    assert job["dead_provider"] == "expo" and job["dead_reason"] == "UNAUTHORIZED", job
    assert [d["id"] for d in devices_of(h, phone)] == [phone.id]
    assert readyz_push(h)["expo"] == "provider_misconfigured: UNAUTHORIZED"
    [entry] = expo_sends(double)
    assert entry["status"] == 401 and "authorization" not in entry["headers"], entry


def test_send_test_takes_an_expo_token_as_registration_does(provider_double):
    """`herald send-test` with an `ExponentPushToken[…]` on ios or android sends through Expo, as
    `POST /v1/me/devices` registers it without a `provider`; it went to APNs or FCM instead (or
    stopped: "apns has no usable credentials"). With `--provider expo` a token that is not an Expo
    token is a usage error (exit 2), as a bad Web Push token is, instead of a push Expo refuses."""
    import os
    import subprocess
    from conftest import BINARY
    double = provider_double
    env = {**os.environ, **double.herald_env(), "HERALD_DATABASE": ":memory:"}
    for platform in ("ios", "android"):
        token = expo_token()
        run = subprocess.run([BINARY, "send-test", "--device-token", token, "--platform", platform],
                             capture_output=True, text=True, timeout=30, env=env)
        assert run.returncode == 0, run.stderr
        answer = __import__("json").loads(run.stdout)
        assert answer["provider"] == "expo" and answer["outcome"] == "delivered", run.stdout
        expo_sends(double, token)
    before = len(double.requests("expo"))
    bad = subprocess.run([BINARY, "send-test", "--device-token", "not-an-expo-token", "--platform", "ios", "--provider", "expo"],
                         capture_output=True, text=True, timeout=30, env=env)
    assert bad.returncode == 2 and "--device-token" in bad.stderr and "ExponentPushToken" in bad.stderr, bad
    assert len(double.requests("expo")) == before, "nothing sent for a bad token"
