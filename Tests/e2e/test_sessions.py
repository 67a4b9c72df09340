"""Sessions (DV-4) from the server API: `DELETE /v1/sessions/{sid}` and `PUT /v1/sessions/{sid}`,
what they do to devices, tokens and live streams; persistence across restarts; concurrent
registrations; `herald migrate`."""
import asyncio
import json
import sqlite3
import subprocess
import time
import uuid
from urllib.parse import quote

import httpx
import pytest
import websockets

from conftest import BINARY, SERVER_KEY
from conftest import assert_error, web_push_token

TIMEOUT = 5
HTTP = httpx.Client(timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


def auth(token) -> dict:
    return {"Authorization": f"Bearer {token}"}


def fcm(tag="") -> str:
    return f"e{tag}{uuid.uuid4().hex[:10]}:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7"


def apns() -> str:
    return uuid.uuid4().hex * 2


def register(h, access, expect=None, /, **body):
    r = HTTP.post(h.url("/v1/me/devices"), json=body, headers=auth(access))
    if expect is not None:
        assert r.status_code == expect, r.text
    return r


def devices(h, token) -> list:
    r = HTTP.get(h.url("/v1/me/devices"), headers=auth(token))
    assert r.status_code == 200, r.text
    body = r.json()
    return body["devices"] if isinstance(body, dict) else body


def end_session(h, sid, headers=None):
    return HTTP.delete(h.url(f"/v1/sessions/{sid}"), headers=h.server_headers() if headers is None else headers)


def set_expiry(h, sid, body, headers=None):
    return HTTP.put(h.url(f"/v1/sessions/{sid}"), json=body, headers=h.server_headers() if headers is None else headers)




def ws_url(h, token):
    return f"ws://127.0.0.1:{h.port}/v1/ws?access_token={token}"


from conftest import recv_json, recv_until, run_async as run


def client_calls(h, token):
    """Every client route, each with a request that would succeed for a live session."""
    hdrs = auth(token)
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
               "Sec-WebSocket-Version": "13"}
    return {
        "GET /v1/me/devices": lambda: HTTP.get(h.url("/v1/me/devices"), headers=hdrs),
        "POST /v1/me/devices": lambda: HTTP.post(h.url("/v1/me/devices"), headers=hdrs,
                                                 json={"platform": "android", "token": fcm()}),
        "DELETE /v1/me/devices/{id}": lambda: HTTP.delete(h.url(f"/v1/me/devices/{uuid.uuid4()}"), headers=hdrs),
        "POST /v1/devices": lambda: HTTP.post(h.url("/v1/devices"), headers=hdrs,
                                              json={"platform": "fcm", "token": fcm(), "device_id": "d"}),
        "DELETE /v1/devices/{token}": lambda: HTTP.delete(h.url("/v1/devices/some-token"), headers=hdrs),
        "POST /v1/users/me/device-tokens": lambda: HTTP.post(h.url("/v1/users/me/device-tokens"), headers=hdrs,
                                                             json={"platform": "ios", "token": fcm()}),
        "DELETE /v1/users/me/device-tokens": lambda: HTTP.request("DELETE", h.url("/v1/users/me/device-tokens"),
                                                                  headers=hdrs, json={"token": "some-token"}),
        "GET /v1/stream": lambda: HTTP.get(h.url("/v1/stream"), headers=hdrs, timeout=3),
        "GET /v1/stream?access_token=": lambda: HTTP.get(h.url(f"/v1/stream?access_token={token}"), timeout=3),
        "GET /v1/ws": lambda: HTTP.get(h.url(f"/v1/ws?access_token={token}"), headers=upgrade, timeout=3),
        "PUT /v1/me/sessions/current/state": lambda: HTTP.put(h.url("/v1/me/sessions/current/state"), headers=hdrs,
                                                              json={"state": "background"}),
        "POST /v1/me/acks": lambda: HTTP.post(h.url("/v1/me/acks"), headers=hdrs, json={"ids": ["a-1"]}),
    }


def live_calls(h, token):
    """The client routes that answer at once for a live session (streams stay open)."""
    return {k: v for k, v in client_calls(h, token).items() if not k.startswith(("GET /v1/stream", "GET /v1/ws"))}


# --- DELETE /v1/sessions/{sid} --------------------------------------------------------------------


def test_ending_a_session_deletes_its_devices_only(herald):
    s1, s2 = herald.token(sub="alice", sid="s1"), herald.token(sub="alice", sid="s2")
    bob = herald.token(sub="bob", sid="b1")
    register(herald, s1, 201, platform="android", token=fcm())
    register(herald, s1, 201, platform="ios", token=apns())
    kept = register(herald, s2, 201, platform="android", token=fcm()).json()
    bobs = register(herald, bob, 201, platform="android", token=fcm()).json()

    r = end_session(herald, "s1")
    assert r.status_code == 200, r.text
    assert r.json() == {"session_id": "s1", "ended": True, "devices_deleted": 2}
    listed = devices(herald, s2)
    assert [d["id"] for d in listed] == [kept["id"]]
    assert listed[0]["active"] is True and listed[0]["current"] is True
    assert [d["id"] for d in devices(herald, bob)] == [bobs["id"]]
    # the other session goes on: it can still register
    register(herald, s2, 201, platform="ios", token=apns())


def test_a_sid_that_is_not_percent_encoded_utf8_is_a_400_naming_it(herald):
    s1 = herald.token(sub="alice", sid="s1")
    register(herald, s1, 201, platform="android", token=fcm())
    for raw in ("%FF", "%", "abc%C3"):
        r = HTTP.delete(herald.url("/v1/sessions/") + raw, headers=herald.server_headers())
        assert r.status_code == 400, r.text
        assert r.json()["error"] == "invalid_request" and r.json()["field"] == "sid", r.text
    assert len(devices(herald, s1)) == 1   # nothing ended


def test_a_sid_not_in_nfc_is_refused_so_memory_and_storage_name_one_session(herald):
    # ADR 0019: "café" spelled with U+00E9 and with "e" + U+0301 (or KELVIN SIGN and "K") were one
    # session in memory, where Swift compares by canonical equivalence, and two in the database,
    # which compares bytes. Only NFC sids are taken, so both compare the same way.
    nfc = "caf\u00e9"
    token = herald.token(sub="alice", sid=nfc)
    register(herald, token, 201, platform="android", token=fcm())
    for sid in ("cafe\u0301", "\u212a"):
        body = assert_error(HTTP.get(herald.url("/v1/me/devices"), headers=auth(herald.token(sub="alice", sid=sid))), 401, "invalid_token")
        assert "NFC" in body["message"], body
        for r in (end_session(herald, quote(sid, safe="")), set_expiry(herald, quote(sid, safe=""), {"expires_at": None})):
            assert_error(r, 400, "invalid_request")
            assert r.json()["field"] == "sid", r.text
    assert len(devices(herald, token)) == 1   # nothing ended
    r = end_session(herald, quote(nfc, safe=""))
    assert r.status_code == 200 and r.json() == {"session_id": nfc, "ended": True, "devices_deleted": 1}, r.text
    assert_error(HTTP.get(herald.url("/v1/me/devices"), headers=auth(token)), 401, "session_ended")


def test_ended_session_tokens_are_refused_on_every_client_route(herald):
    s1, s2 = herald.token(sub="alice", sid="s1"), herald.token(sub="alice", sid="s2")
    register(herald, s1, 201, platform="android", token=fcm())
    for name, call in live_calls(herald, s1).items():
        r = call()
        assert r.status_code not in (401, 403), (name, r.status_code, r.text)
    assert end_session(herald, "s1").status_code == 200
    fresh = herald.token(sub="alice", sid="s1")                 # minted after the end: refused too
    for token in (s1, fresh):
        for name, call in client_calls(herald, token).items():
            r = call()
            assert r.status_code == 401, (name, r.status_code, r.text)
            assert r.json()["error"] == "session_ended", (name, r.text)
    # nothing was registered by the refused calls, and the other session is untouched
    assert devices(herald, s2) == []
    for name, call in live_calls(herald, s2).items():
        r = call()
        assert r.status_code not in (401, 403), (name, r.status_code, r.text)


def test_session_end_closes_its_sse_streams_only(herald):
    s1, s2 = herald.token(sub="alice", sid="s1"), herald.token(sub="alice", sid="s2")
    a = herald.stream(s1)
    b = herald.stream(s2)
    a.ready()
    b.ready()
    assert end_session(herald, "s1").status_code == 200
    events = a.wait_closed(timeout=TIMEOUT)
    assert [e.event for e in events] == ["error"], events
    assert events[0].json()["error"] == "session_ended"
    # the other session's stream is still open and receiving
    sent = herald.publish("user:alice", {"n": 1})
    m = b.next()
    assert m.id == sent["id"] and m.json()["data"] == {"n": 1}
    # and reopening with the ended session is refused
    refused = herald.stream(herald.token(sub="alice", sid="s1"), expect=401)
    assert refused.json_body()["error"] == "session_ended"


def test_session_end_closes_its_websocket_with_4001(herald):
    s1, s2 = herald.token(sub="alice", sid="s1"), herald.token(sub="alice", sid="s2")

    async def scenario():
        async with websockets.connect(ws_url(herald, s1)) as ended, websockets.connect(ws_url(herald, s2)) as other:
            assert (await recv_json(ended))["type"] == "ready"
            assert (await recv_json(other))["type"] == "ready"
            r = await asyncio.to_thread(end_session, herald, "s1")
            assert r.status_code == 200, r.text
            error = await recv_until(ended, lambda m: m.get("type") == "error")
            assert error["error"] == "session_ended"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ended.recv(), TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
            # the other session's socket lives on
            sent = await asyncio.to_thread(herald.publish, "user:alice", {"n": 2})
            message = await recv_until(other, lambda m: m.get("type") == "event")
            assert message["id"] == sent["id"] and message["data"] == {"n": 2}
            await other.send(json.dumps({"type": "ping"}))
            assert (await recv_until(other, lambda m: m.get("type") == "pong"))["type"] == "pong"
        # an `auth` frame with the ended session's token is refused too
        async with websockets.connect(f"ws://127.0.0.1:{herald.port}/v1/ws") as late:
            await late.send(json.dumps({"type": "auth", "access_token": herald.token(sub="alice", sid="s1")}))
            error = await recv_json(late)
            assert error["type"] == "error" and error["error"] == "session_ended"
            with pytest.raises(websockets.ConnectionClosed):
                while True:
                    await asyncio.wait_for(late.recv(), TIMEOUT)

    run(scenario())


def test_ending_a_session_herald_never_saw_refuses_its_tokens(herald):
    r = end_session(herald, "never-seen")
    assert r.status_code == 200, r.text
    assert r.json() == {"session_id": "never-seen", "ended": True, "devices_deleted": 0}
    assert_error(register(herald, herald.token(sub="carol", sid="never-seen"), platform="android", token=fcm()),
                 401, "session_ended")


@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": "Bearer wrong-key"},
    {"Authorization": f"Bearer {SERVER_KEY}x"},
    {"Authorization": SERVER_KEY},
    "client-token",
])
def test_session_api_needs_the_server_key(herald, headers):
    s1 = herald.token(sub="alice", sid="s1")
    if headers == "client-token":
        headers = auth(s1)
    device = register(herald, s1, 201, platform="android", token=fcm()).json()
    assert_error(end_session(herald, "s1", headers=headers), 401, "unauthorized")
    assert_error(set_expiry(herald, "s1", {"expires_at": int(time.time()) - 60}, headers=headers), 401, "unauthorized")
    # nothing changed: the device is there and active, the session's token still works
    listed = devices(herald, s1)
    assert [d["id"] for d in listed] == [device["id"]] and listed[0]["active"] is True


# --- PUT /v1/sessions/{sid} and session_exp --------------------------------------------------------


def test_expired_session_keeps_its_devices_as_inactive(herald):
    s1, s2 = herald.token(sub="alice", sid="s1"), herald.token(sub="alice", sid="s2")
    d1 = register(herald, s1, 201, platform="android", token=fcm()).json()
    d1b = register(herald, s1, 201, platform="ios", token=apns()).json()
    d2 = register(herald, s2, 201, platform="android", token=fcm()).json()

    r = set_expiry(herald, "s1", {"expires_at": int(time.time()) - 60})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["active"] is False and body.get("session_id") == "s1", body
    listed = {d["id"]: d for d in devices(herald, s2)}
    assert set(listed) == {d1["id"], d1b["id"], d2["id"]}          # rows kept
    assert listed[d1["id"]]["active"] is False and listed[d1b["id"]]["active"] is False
    assert listed[d2["id"]]["active"] is True

    # a later expiry makes it active again
    r = set_expiry(herald, "s1", {"expires_at": int(time.time()) + 3600})
    assert r.status_code == 200 and r.json()["active"] is True, r.text
    assert all(d["active"] for d in devices(herald, s2))


def test_set_expiry_of_an_unknown_session_is_404(herald):
    assert_error(set_expiry(herald, "nobody", {"expires_at": int(time.time()) - 60}), 404)


@pytest.mark.parametrize("content,field", [
    (b'{"expires_at": "yesterday"}', "expires_at"),
    (b'{"expires_at": true}', "expires_at"),
    (b'{"expires_at": [1]}', "expires_at"),
    (b'{"expires_at": -1}', "expires_at"),
    (b'{"expires_at": 1795980715123}', "expires_at"),       # milliseconds, not seconds
    (b'{"expires_at": 1700000000.5}', "expires_at"),   # whole seconds only
    (b'{}', "expires_at"),                             # required: null clears, absence does not
    (b'{"expires_at": ', None),
    (b'[]', None),
    (b"", None),
])
def test_set_expiry_with_a_bad_body_is_400(herald, content, field):
    s1 = herald.token(sub="alice", sid="s1")
    register(herald, s1, 201, platform="android", token=fcm())
    assert set_expiry(herald, "s1", {"expires_at": int(time.time()) - 60}).json()["active"] is False
    r = HTTP.put(herald.url("/v1/sessions/s1"), content=content,
                 headers={**herald.server_headers(), "Content-Type": "application/json"})
    assert_error(r, 400, "invalid_request", field)
    # the expiry set before is untouched
    assert devices(herald, s1)[0]["active"] is False


# A session expiry is judged when devices are listed: StorageSQLiteTests/DeviceStoreTests (sessionActive at
# an explicit now) and HeraldCoreTests/NotifierTests (skipped_session once the manual clock passes it).


def test_session_exp_claim_in_the_past_lists_the_device_inactive(herald):
    past = herald.token(sub="alice", sid="s1", session_exp=int(time.time()) - 60)
    r = register(herald, past, 201, platform="android", token=fcm())
    assert r.json()["active"] is False
    assert devices(herald, past)[0]["active"] is False

    future = herald.token(sub="alice", sid="s2", session_exp=int(time.time()) + 3600)
    d = register(herald, future, 201, platform="android", token=fcm()).json()
    assert d["active"] is True
    listed = {x["id"]: x["active"] for x in devices(herald, future)}
    assert listed[d["id"]] is True and sorted(listed.values()) == [False, True]


def test_server_set_expiry_is_not_undone_by_an_older_tokens_session_exp(herald):
    tok = herald.token(sub="alice", sid="s1", session_exp=int(time.time()) + 86400)
    register(herald, tok, 201, platform="android", token=(device_token := fcm()))
    assert set_expiry(herald, "s1", {"expires_at": int(time.time()) - 60}).json()["active"] is False
    again = register(herald, tok, 200, platform="android", token=device_token).json()
    assert again["active"] is False
    assert devices(herald, tok)[0]["active"] is False


# --- persistence -------------------------------------------------------------------------------


def test_devices_and_ended_sessions_survive_a_restart(herald):
    s1, s2, s3 = (herald.token(sub="alice", sid=s) for s in ("s1", "s2", "s3"))
    d1 = register(herald, s1, 201, platform="android", token=fcm(), locale="pt_br", installation_id="i-1").json()
    d1b = register(herald, s1, 201, platform="ios", token=apns(), environment="sandbox").json()
    register(herald, s2, 201, platform="android", token=fcm())
    d3 = register(herald, s3, 201, platform="web", token=web_push_token()).json()
    assert end_session(herald, "s2").status_code == 200
    assert set_expiry(herald, "s3", {"expires_at": int(time.time()) - 60}).status_code == 200
    before = sorted(devices(herald, s1), key=lambda d: d["id"])
    assert {d["id"] for d in before} == {d1["id"], d1b["id"], d3["id"]}

    herald.restart()

    after = sorted(devices(herald, s1), key=lambda d: d["id"])
    assert after == before
    assert {d["id"]: d["active"] for d in after} == {d1["id"]: True, d1b["id"]: True, d3["id"]: False}
    # the ended session's tokens are still refused, on the API and the stream
    assert_error(register(herald, s2, platform="android", token=fcm()), 401, "session_ended")
    assert_error(HTTP.get(herald.url("/v1/me/devices"), headers=auth(s2)), 401, "session_ended")
    stream = herald.stream(s2, expect=401)
    assert stream.json_body()["error"] == "session_ended"
    # and the live session re-registers its token as an update of the same row
    again = register(herald, s1, 200, platform="android", token=d1["token"]).json()
    assert again["id"] == d1["id"] and again["created_at"] == d1["created_at"]


# --- concurrency -------------------------------------------------------------------------------


async def _parallel_registrations(h, bodies, token):
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        return await asyncio.gather(*[client.post(h.url("/v1/me/devices"), json=body, headers=auth(token))
                                      for body in bodies])


def test_200_parallel_registrations_of_one_token_end_with_one_row(herald):
    token = herald.token(sub="alice", sid="s1")
    device_token = fcm()
    answers = run(_parallel_registrations(herald, [{"platform": "android", "token": device_token}] * 200, token))
    statuses = [r.status_code for r in answers]
    assert set(statuses) <= {200, 201}, sorted(set(statuses))
    assert statuses.count(201) == 1, statuses.count(201)
    assert len({r.json()["id"] for r in answers}) == 1
    listed = devices(herald, token)
    assert len(listed) == 1 and listed[0]["id"] == answers[0].json()["id"]


def test_parallel_rotations_in_one_session_leave_one_device(herald):
    token = herald.token(sub="alice", sid="s1")
    tokens = [fcm(str(i)) for i in range(100)]
    answers = run(_parallel_registrations(herald, [{"platform": "android", "token": t} for t in tokens], token))
    assert [r.status_code for r in answers] == [201] * 100
    listed = devices(herald, token)
    assert len(listed) == 1
    assert listed[0]["id"] in {r.json()["id"] for r in answers}


# --- herald migrate ----------------------------------------------------------------------------


def _schema(path):
    with sqlite3.connect(path) as db:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        objects = db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    return version, objects


def test_migrate_creates_the_database_and_is_idempotent(tmp_path, herald_factory):
    path = tmp_path / "migrated" / "herald.db"
    path.parent.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HERALD_DATABASE": str(path)}
    first = subprocess.run([BINARY, "migrate"], env=env, capture_output=True, timeout=30)
    assert first.returncode == 0, first.stderr
    assert path.exists()
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    schema = _schema(path)
    assert any(kind == "table" for kind, _, _ in schema[1]), schema
    second = subprocess.run([BINARY, "migrate"], env=env, capture_output=True, timeout=30)
    assert second.returncode == 0, second.stderr
    assert _schema(path) == schema
    # a stray argument is refused before anything is opened (exit 2, the file untouched)
    stray = subprocess.run([BINARY, "migrate", "extra-arg"], env=env, capture_output=True, timeout=30)
    assert stray.returncode == 2, stray
    assert b"takes no arguments" in stray.stderr and b"extra-arg" in stray.stderr
    assert _schema(path) == schema
    other = tmp_path / "never" / "herald.db"
    served = subprocess.run([BINARY, "serve", "--port=1"], env={**env, "HERALD_DATABASE": str(other)}, capture_output=True, timeout=30)
    assert served.returncode == 2 and b"takes no arguments" in served.stderr, served
    assert not other.parent.exists()
    # a server on the migrated file works
    h = herald_factory(HERALD_DATABASE=str(path))
    tok = h.token()
    register(h, tok, 201, platform="android", token=fcm())
    assert len(devices(h, tok)) == 1
