"""Bad input refused where it enters, with one rule per kind of input (issue: a new user's run).

- A JSON body's members are fixed: an unknown or misspelt one is 400 `invalid_request` naming it,
  and nothing changes (docs/api.md "Limits on bodies").
- A token's `sub` must form the personal channel `user:{sub}`, and its `sid` must be one
  `DELETE /v1/sessions/{sid}` can name (1-200 bytes): any other is 401 on every route, REST as
  well as streams (docs/protocol.md, docs/api.md).
- Starting on a read-only database volume says so and what to do (exit 2).
- NUL, which a PostgreSQL text value cannot hold, is refused naming the member wherever a name
  is taken (sid, idempotency key, a payload's thread_id/sound/android_channel_id, an app's
  issuer/audience), on SQLite and PostgreSQL alike.
"""
import base64
import subprocess
from urllib.parse import quote

import httpx
import pytest

from conftest import BINARY, JWT_SECRET, SERVER_KEY, assert_error, free_port
from engines import PostgresServer, engines_missing

SERVER = {"Authorization": f"Bearer {SERVER_KEY}"}
FCM_TOKEN = "esid0123456789:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7"


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_publish_with_a_misspelt_member_is_refused_and_retains_nothing(herald):
    r = httpx.post(herald.url("/v1/publish"), json={"channel": "g:1", "data": {"v": 1}, "retian": True}, headers=SERVER)
    body = assert_error(r, 400, "invalid_request", "retian")
    assert "retain" in body["message"], body
    r = httpx.post(herald.url("/v1/publish/batch"), headers=SERVER,
                   json={"messages": [{"channel": "g:1", "data": 1}, {"channel": "g:1", "data": 2, "retian": True}]})
    assert_error(r, 400, "invalid_request", "messages[1].retian")
    # Nothing was published: a new subscriber of g:1 gets no retained message, and the first
    # message published afterwards is the channel's first.
    first = herald.publish("g:1", {"v": 2})
    assert first["offset"] == 1, first


def test_notifications_push_devices_and_preferences_refuse_unknown_members(herald):
    user = "strict-u1"
    token = herald.token(sub=user, sid="s1")
    for body, field in [
        ({"recipients": {"user_ids": [user]}, "kind": "k", "tilte": "x"}, "tilte"),
        ({"recipients": {"user_ids": [user]}, "kind": "k", "title": "t", "pirority": "high"}, "pirority"),
        ({"recipients": {"user_ids": [user], "users": ["x"]}, "kind": "k", "title": "t"}, "recipients.users"),
        ({"recipients": {"user_ids": [user]}, "kind": "k", "title": "t", "push": {"polcy": "always"}}, "push.polcy"),
        ({"recipients": {"user_ids": [user]}, "kind": "k", "title": "t", "live": {"channel": "c", "retian": True}}, "live.retian"),
    ]:
        r = httpx.post(herald.url("/v1/notifications"), json=body, headers=SERVER)
        assert_error(r, 400, "invalid_request", field)
    inbox = httpx.get(herald.url("/v1/me/notifications"), headers=bearer(token))
    assert inbox.status_code == 200 and inbox.json()["notifications"] == [], inbox.text

    # (`POST /v1/push` answers 503 before reading the body on a server without push credentials;
    # its body's members are checked in UnknownMemberTests.)
    r = httpx.post(herald.url("/v1/me/devices"), headers=bearer(token),
                   json={"platform": "android", "token": "fcm-tok-1", "provider": "fcm", "lcoale": "pt-BR"})
    assert_error(r, 400, "invalid_request", "lcoale")
    devices = httpx.get(herald.url("/v1/me/devices"), headers=bearer(token))
    assert devices.status_code == 200 and devices.json()["devices"] == [], devices.text

    r = httpx.put(herald.url("/v1/me/push-preferences"), headers=bearer(token), json={"is_enabled": False, "enabeld_events": []})
    assert_error(r, 400, "invalid_request", "enabeld_events")
    prefs = httpx.get(herald.url("/v1/me/push-preferences"), headers=bearer(token))
    assert prefs.status_code == 200 and prefs.json()["is_enabled"] is True, prefs.text


@pytest.mark.parametrize("sub", ["u" * 196, "a b", "x/y", "é", "u" * 300])
def test_a_sub_that_cannot_name_a_channel_is_refused_on_every_route(herald, sub):
    token = herald.token(sub=sub)
    for path in ["/v1/me/notifications", "/v1/me/devices", "/v1/stream"]:
        r = httpx.get(herald.url(path), headers=bearer(token), timeout=5)
        body = assert_error(r, 401, "invalid_token")
        assert "1-195 characters" in body["message"], (path, body)


def test_a_sub_of_195_channel_characters_is_served(herald):
    token = herald.token(sub="u" * 195)
    r = httpx.get(herald.url("/v1/me/notifications"), headers=bearer(token))
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("sid", ["s" * 201, "s" * 1000, "é" * 101, "", "a\u0000b"])
def test_a_sid_no_session_route_can_name_is_refused_on_every_route(herald, sid):
    # DV-4: DELETE /v1/sessions/{sid} takes 1-200 bytes; a token whose session it could not end
    # would register devices and streams that no logout reaches.
    token = herald.token(sub="strict-sid", sid=sid)
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    for method, path, body, extra in [("POST", "/v1/me/devices", {"platform": "android", "token": FCM_TOKEN}, {}),
                                      ("GET", "/v1/me/notifications", None, {}), ("GET", "/v1/stream", None, {}),
                                      ("GET", "/v1/ws", None, upgrade)]:
        r = httpx.request(method, herald.url(path), json=body, headers={**bearer(token), **extra}, timeout=5)
        body = assert_error(r, 401, "invalid_token")
        assert "1-200 bytes" in body["message"] and "sid" in body["message"], (path, body)


def test_nul_is_refused_where_postgresql_would_cut_the_value_at_it(herald):
    # libpq ends a text parameter at NUL: on PostgreSQL the session "a\u0000b" was stored, ended
    # and conflicted as "a", and the idempotency key "k\u0000x" answered the calls of key "k".
    r = httpx.delete(herald.url("/v1/sessions/a%00b"), headers=SERVER)
    assert "NUL" in assert_error(r, 400, "invalid_request", "sid")["message"]
    body = {"recipients": {"user_ids": ["strict-nul"]}, "kind": "t", "title": "x", "idempotency_key": "k\u0000x"}
    r = httpx.post(herald.url("/v1/notifications"), json=body, headers=SERVER)
    assert "NUL" in assert_error(r, 400, "invalid_request", "idempotency_key")["message"]
    inbox = httpx.get(herald.url("/v1/me/notifications"), headers=bearer(herald.token(sub="strict-nul", sid="s-nul")))
    assert inbox.status_code == 200 and inbox.json()["notifications"] == [], inbox.text


@pytest.fixture(scope="module")
def postgres_server():
    missing = engines_missing()
    if missing:
        pytest.skip(missing)
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()
        server.cleanup()


@pytest.mark.parametrize("storage", ["embedded", "postgres"])
def test_nul_in_payload_names_and_an_apps_issuer_is_400_on_every_storage(request, herald_factory, storage):
    # api14: a notification's thread_id has a PostgreSQL text column of its own, where libpq would
    # store "t\u0000x" as "t"; the payload's other names and an app's issuer/audience follow the
    # same rule, on SQLite too, so both storages accept the same calls.
    env = {"HERALD_ADMIN_KEY": "e2e-admin-key-0123456789", "HERALD_SECRET_KEY": base64.b64encode(bytes(range(32))).decode()}
    pg = None
    if storage == "postgres":
        pg = request.getfixturevalue("postgres_server")
        env.update(HERALD_DATABASE=pg.url, HERALD_NODE_ID="strict-nul-pg")
    h = herald_factory(**env)
    user = "strict-nul-names"
    base = {"recipients": {"user_ids": [user]}, "kind": "t", "title": "x"}
    for member in ("thread_id", "sound", "android_channel_id"):
        r = httpx.post(h.url("/v1/notifications"), json={**base, member: "t\u0000x"}, headers=SERVER)
        assert "NUL" in assert_error(r, 400, "invalid_request", member)["message"]
        push = {"user_id": user, "notification": {"kind": "alert", "title": "x", member: "t\u0000x"}}
        r = httpx.post(h.url("/v1/push"), json=push, headers=SERVER)
        if r.status_code != 503:  # push_not_configured is answered before the notification is read
            assert "NUL" in assert_error(r, 400, "invalid_request", f"notification.{member}")["message"]
    inbox = httpx.get(h.url("/v1/me/notifications"), headers=bearer(h.token(sub=user, sid="s-nul-names")))
    assert inbox.status_code == 200 and inbox.json()["notifications"] == [], inbox.text
    # Another control character is kept whole, on PostgreSQL too.
    r = httpx.post(h.url("/v1/notifications"), json={**base, "thread_id": "t\u0001x"}, headers=SERVER)
    assert r.status_code == 201, r.text
    if pg is not None:
        assert pg.sql("SELECT octet_length(thread_id) FROM notifications WHERE user_id = 'strict-nul-names'") == [["3"]]
    admin = {"Authorization": "Bearer e2e-admin-key-0123456789"}
    app = {"id": "nul", "tokens": {"hs256_secret": "nul-secret-0123456789abcdef012345"}, "server_keys": ["nul-server-key-0123456789"]}
    for member in ("issuer", "audience"):
        bad = {**app, "tokens": {**app["tokens"], member: "https://auth.example\u0000x"}}
        r = httpx.post(h.url("/v1/apps"), json=bad, headers=admin)
        assert "NUL" in assert_error(r, 400, "invalid_request", f"tokens.{member}")["message"]
    r = httpx.post(h.url("/v1/apps"), json={**app, "tokens": {**app["tokens"], "issuer": "https://auth.example"}}, headers=admin)
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("key", ["c\u0000k", "c\nk", "c\r\nk", "\u007f", " ck", "ck\t"])
def test_a_collapse_key_that_cannot_be_an_http_header_is_400(herald, key):
    # It is sent as APNs's apns-collapse-id header: the HTTP/2 client refused every such push as a
    # transport error, retried for the whole budget, and /readyz showed APNs degraded.
    user = "strict-collapse"
    body = {"recipients": {"user_ids": [user]}, "kind": "t", "title": "x", "collapse_key": key}
    assert_error(httpx.post(herald.url("/v1/notifications"), json=body, headers=SERVER), 400, "invalid_request", "collapse_key")
    push = {"user_id": user, "notification": {"kind": "alert", "title": "x", "collapse_key": key}}
    r = httpx.post(herald.url("/v1/push"), json=push, headers=SERVER)
    if r.status_code != 503:  # push_not_configured is answered before the notification is read
        assert_error(r, 400, "invalid_request", "notification.collapse_key")
    inbox = httpx.get(herald.url("/v1/me/notifications"), headers=bearer(herald.token(sub=user, sid="s-collapse")))
    assert inbox.status_code == 200 and inbox.json()["notifications"] == [], inbox.text
    # A space inside, and non-ASCII, are fine.
    for fine in ["c k", "pedido-é"]:
        r = httpx.post(herald.url("/v1/notifications"), json={**body, "collapse_key": fine, "persist": False}, headers=SERVER)
        assert r.status_code == 201, r.text


def test_a_sid_of_200_bytes_is_served_and_its_session_can_be_ended(herald):
    sid = "é" * 99 + "ss"
    assert len(sid.encode()) == 200
    token = herald.token(sub="strict-sid200", sid=sid)
    r = httpx.post(herald.url("/v1/me/devices"), json={"platform": "android", "token": FCM_TOKEN}, headers=bearer(token))
    assert r.status_code == 201, r.text
    r = httpx.delete(herald.url("/v1/sessions/" + quote(sid, safe="")), headers=SERVER)
    assert r.status_code == 200 and r.json()["devices_deleted"] == 1, r.text
    assert_error(httpx.get(herald.url("/v1/me/devices"), headers=bearer(token)), 401, "session_ended")


@pytest.fixture
def read_only_volume(tmp_path):
    """A tmpfs holding an (empty) database file, remounted read-only; unmounted afterwards."""
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")
    try:
        (mount_point / "herald.db").write_bytes(b"")
        subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True, capture_output=True)
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


@pytest.mark.parametrize("name", ["herald.db", "new.db"])
def test_a_read_only_database_volume_stops_the_start_saying_so(read_only_volume, name):
    env = {"PATH": "/usr/bin:/bin", "HERALD_HOST": "127.0.0.1", "HERALD_PORT": str(free_port()),
           "HERALD_JWT_SECRET": JWT_SECRET, "HERALD_SERVER_KEY": SERVER_KEY,
           "HERALD_DATABASE": str(read_only_volume / name)}
    result = subprocess.run([BINARY, "serve"], env=env, capture_output=True, text=True, timeout=20)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "read-only" in result.stderr and "HERALD_DATABASE" in result.stderr, result.stderr


@pytest.mark.parametrize("path,query,field", [
    (path, f"{name}={value}", name)
    for path, name in [("/v1/me/notifications", "limit"), ("/v1/me/notifications", "cursor"), ("/v1/jobs", "limit"),
                       ("/v1/jobs", "cursor"), ("/v1/scopes/store:1/members", "limit")]
    for value in ["%2B5", "+5", "-0", "5.0", ""]
])
def test_a_number_in_the_query_is_digits_only(herald, path, query, field):
    # edges14: `limit` and `cursor` were read with Int(), which takes "+5" (sent as %2B5) and "-0".
    headers = herald.server_headers() if path != "/v1/me/notifications" else {"Authorization": f"Bearer {herald.token()}"}
    assert_error(httpx.get(herald.url(path + "?" + query), headers=headers), 400, "invalid_request", field)
    fine = "05" if field == "limit" else "5"
    r = httpx.get(herald.url(f"{path}?{field}={fine}"), headers=headers)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("path,query,field", [
    ("/v1/push/vapid-public-key", "app=default&app=chat", "app"),
    ("/v1/me/notifications", "limit=1&limit=2", "limit"),
    ("/v1/me/notifications", "unread=true&unread=true", "unread"),
    ("/v1/stream", "state=foreground&state=background", "state"),
    ("/v1/stream", "access_token={t}&access_token={t}", "access_token"),
])
def test_a_single_valued_query_parameter_given_twice_is_400_naming_it(herald, path, query, field):
    token = herald.token()
    headers = {} if "access_token" in query else {"Authorization": f"Bearer {token}"}
    r = httpx.get(herald.url(path + "?" + query.format(t=token)), headers=headers)
    assert_error(r, 400, "invalid_request", field)

