"""Dev mode's second app (issue 14: "the demo can switch between two apps"; docs/operations.md
"Dev mode's second app", docs/api.md `POST /v1/dev/token`).

With `HERALD_DEV=1`, Herald stores the app `demo-b` at start (an ES256 public key for its tokens,
whose private key the dev token route holds; a German catalog; default locale `de`; root key
`demo`), and `POST /v1/dev/token` takes `"app": "demo-b"`. The same demo user in the two apps is
two users: inbox, preferences, presence and streams of one never show the other's. Nothing of
this exists outside dev mode, and a demo app that cannot be loaded leaves the demo on `default`.
"""
import base64
import json
import time

import jwt
import pytest

from conftest import JWT_SECRET, assert_error, wait_until
from test_apps import HTTP, bearer  # the shared client lives for the session

ADMIN_KEY = "e2e-admin-key-0123456789"
SECRET_KEY = base64.b64encode(bytes(range(32))).decode()

def dev_token(h, user="carol", sid="s1", app=None, expect=200, **extra) -> dict:
    body = {"user_id": user, "session_id": sid, "channels": ["room:*"], **extra}
    if app is not None:
        body["app"] = app
    r = HTTP.post(h.url("/v1/dev/token"), json=body)
    assert r.status_code == expect, r.text
    return r.json()


def claims_of(token) -> tuple:
    header = jwt.get_unverified_header(token)
    return header, jwt.decode(token, options={"verify_signature": False})


def send(h, token, **body) -> str:
    body.setdefault("kind", "demo.message")
    r = HTTP.post(h.url("/v1/dev/notifications"), json=body, headers=bearer(token))
    assert r.status_code == 201, r.text
    [n] = r.json()["notifications"]
    return n["id"]


def inbox(h, token) -> list:
    r = HTTP.get(h.url("/v1/me/notifications"), headers=bearer(token))
    assert r.status_code == 200, r.text
    return r.json()["notifications"]


def log_lines(h, message) -> list:
    return [json.loads(line) for line in h.logs().splitlines() if line.startswith("{") and message in line]


@pytest.fixture
def dev(herald_factory):
    return herald_factory(HERALD_DEV=1, HERALD_ADMIN_KEY=ADMIN_KEY)


def test_a_dev_token_routes_to_the_app_it_names(dev):
    default = dev_token(dev)
    assert default["app"] == "default" and default["apps"] == ["default", "demo-b"], default
    header, claims = claims_of(default["access_token"])
    assert header["alg"] == "HS256" and "app" not in claims, (header, claims)

    demo = dev_token(dev, app="demo-b")
    assert demo["app"] == "demo-b" and demo["apps"] == ["default", "demo-b"] and demo["token_type"] == "Bearer", demo
    header, claims = claims_of(demo["access_token"])
    assert header["alg"] == "ES256" and claims["app"] == "demo-b" and claims["sub"] == "carol" and claims["sid"] == "s1", claims
    assert claims["exp"] == demo["expires_at"]
    assert dev_token(dev, app="default")["app"] == "default"

    # The stored app, as the admin API shows it: verified by the dev key's public half, with its
    # own catalog, locale and root key; no secret was needed.
    r = HTTP.get(dev.url("/v1/apps/demo-b"), headers=bearer(ADMIN_KEY))
    assert r.status_code == 200, r.text
    app = r.json()
    assert app["source"] == "api" and app["default_locale"] == "de" and app["payload"] == {"root_key": "demo"}, app
    assert app["tokens"]["algorithms"] == ["ES256"] and app["tokens"]["hs256_secret"] is None, app["tokens"]
    [pem] = app["tokens"]["public_keys"]
    assert pem.startswith("-----BEGIN PUBLIC KEY-----"), pem
    jwt.decode(demo["access_token"], pem, algorithms=["ES256"])  # verifies with the stored public key
    assert set(app["catalog"]["kinds"]) == {"demo.message", "demo.shipped"}, app["catalog"]
    [ready] = log_lines(dev, "dev mode: demo app ready")
    assert ready["app"] == "demo-b" and ready["stored"] == "created", ready

    # Only the demo app's key opens it: a token naming demo-b signed with the default secret is
    # refused, never tried with the default app's keys.
    forged = jwt.encode({**claims, "exp": int(time.time()) + 600}, JWT_SECRET, algorithm="HS256")
    assert_error(HTTP.get(dev.url("/v1/me/notifications"), headers=bearer(forged)), 401, "invalid_token")


@pytest.mark.parametrize("app", ["nope", "Demo-B", "", "x" * 70])
def test_an_app_dev_tokens_are_not_minted_for_is_refused(dev, app):
    r = HTTP.post(dev.url("/v1/dev/token"), json={"user_id": "carol", "app": app})
    body = assert_error(r, 400, "invalid_request", field="app")
    assert body["message"].endswith("they are: default, demo-b"), body


@pytest.mark.parametrize("sid", ["~demo-b~carol", "~"])
def test_no_dev_token_is_minted_for_a_sid_spelled_like_a_standing_session(dev, sid):
    # breaker10: a token with such a sid is refused at verification, so none is minted.
    r = HTTP.post(dev.url("/v1/dev/token"), json={"user_id": "carol", "session_id": sid})
    assert_error(r, 400, "invalid_request", field="session_id")
    assert dev_token(dev, sid="web~1")["access_token"]


def test_the_same_user_in_the_two_apps_is_two_users(dev):
    demo = dev_token(dev, app="demo-b")["access_token"]
    default = dev_token(dev)["access_token"]
    demo_stream = dev.stream(token=demo)
    default_stream = dev.stream(token=default)
    assert demo_stream.ready()["channels"] == ["user:carol"]
    default_stream.ready()

    # demo-b: no title or body, so the catalog's German texts (its default locale).
    demo_id = send(dev, demo)
    created = demo_stream.expect("notification.created").json()
    assert created["channel"] == "user:carol" and created["data"]["id"] == demo_id, created
    default_id = send(dev, default, title="Hello from default", body="plain")
    # The default stream's next event is its own notification: demo-b's never reached it.
    created = default_stream.expect("notification.created").json()
    assert created["data"]["id"] == default_id, created

    [mine] = inbox(dev, demo)
    assert mine["id"] == demo_id and mine["title"] == "Deine Generierung ist fertig", mine
    assert mine["body"] == "Tippe, um das Ergebnis zu sehen." and mine["locale"] == "de", mine
    [theirs] = inbox(dev, default)
    assert theirs["id"] == default_id and theirs["title"] == "Hello from default", theirs
    # Without a catalog the default app needs the call's texts; demo-b's catalog gives them.
    r = HTTP.post(dev.url("/v1/dev/notifications"), json={"kind": "demo.message"}, headers=bearer(default))
    assert_error(r, 400, "invalid_request")
    # Each app's notification is its own: the other app's token does not find it.
    assert_error(HTTP.get(dev.url(f"/v1/dev/notifications/{demo_id}/deliveries"), headers=bearer(default)), 404)
    r = HTTP.get(dev.url(f"/v1/dev/notifications/{demo_id}/deliveries"), headers=bearer(demo))
    assert r.status_code == 200 and r.json()["notification_id"] == demo_id, r.text

    # Preferences: demo-b's kinds are its catalog's; the default app has no catalog.
    r = HTTP.get(dev.url("/v1/me/push-preferences"), headers=bearer(demo))
    assert r.status_code == 200 and r.json()["available_events"] == ["demo.message", "demo.shipped"], r.text
    r = HTTP.put(dev.url("/v1/me/push-preferences"), json={"is_enabled": False}, headers=bearer(demo))
    assert r.status_code == 200 and r.json()["is_enabled"] is False, r.text
    r = HTTP.get(dev.url("/v1/me/push-preferences"), headers=bearer(default))
    assert r.status_code == 200 and r.json()["is_enabled"] is True and r.json()["available_events"] == [], r.text

    # Presence: each app sees its own connection of carol only.
    for token in (demo, default):
        r = HTTP.get(dev.url("/v1/dev/channels/user:carol/presence"), headers=bearer(token))
        assert r.status_code == 200, r.text
        assert r.json()["connections"] == 1, r.json()


def test_the_demo_app_survives_a_restart_and_keeps_what_the_admin_api_changed(herald_factory):
    h = herald_factory(HERALD_DEV=1, HERALD_ADMIN_KEY=ADMIN_KEY)
    token = dev_token(h, app="demo-b")["access_token"]
    notification = send(h, token)
    # Members dev mode does not own stay as the admin API set them; those it owns come back.
    r = HTTP.patch(h.url("/v1/apps/demo-b"), json={"cors_origins": ["http://demo.example"], "default_locale": "en",
                                                    "catalog": None}, headers=bearer(ADMIN_KEY))
    assert r.status_code == 200 and r.json()["default_locale"] == "en", r.text

    h.restart()
    updated = [line for line in log_lines(h, "dev mode: demo app ready") if line["stored"] == "updated"]
    assert len(updated) == 1, h.logs()
    app = HTTP.get(h.url("/v1/apps/demo-b"), headers=bearer(ADMIN_KEY)).json()
    assert app["cors_origins"] == ["http://demo.example"] and app["default_locale"] == "de" and app["catalog"] is not None, app
    # The key is derived from HERALD_JWT_SECRET: a token minted before the restart still works.
    assert [n["id"] for n in inbox(h, token)] == [notification]

    h.restart()
    assert [line["stored"] for line in log_lines(h, "dev mode: demo app ready")] == ["created", "updated", "unchanged"]


def test_outside_dev_mode_there_is_no_demo_app(herald_factory):
    h = herald_factory(HERALD_ADMIN_KEY=ADMIN_KEY)
    r = HTTP.get(h.url("/v1/apps"), headers=bearer(ADMIN_KEY))
    assert [app["id"] for app in r.json()["apps"]] == ["default"], r.text
    assert HTTP.post(h.url("/v1/dev/token"), json={"user_id": "carol", "app": "demo-b"}).status_code == 404
    assert not log_lines(h, "demo app")


def test_a_demo_app_that_does_not_load_leaves_the_demo_on_default(herald_factory):
    """demo-b was given a sealed secret through the admin API; started again without
    HERALD_SECRET_KEY it cannot be opened: dev mode says so, and serves `default` alone."""
    h = herald_factory(HERALD_DEV=1, HERALD_ADMIN_KEY=ADMIN_KEY, HERALD_SECRET_KEY=SECRET_KEY)
    r = HTTP.patch(h.url("/v1/apps/demo-b"), json={"tokens": {"hs256_secret": "demo-b-secret-0123456789abcdef01"}},
                   headers=bearer(ADMIN_KEY))
    assert r.status_code == 200, r.text
    h.stop()
    del h.env["HERALD_SECRET_KEY"]
    h.start()

    [warning] = log_lines(h, "dev mode: the demo app is not available")
    assert warning["app"] == "demo-b" and warning["level"] == "warning", warning
    answer = dev_token(h)
    assert answer["apps"] == ["default"], answer
    r = HTTP.post(h.url("/v1/dev/token"), json={"user_id": "carol", "app": "demo-b"})
    assert assert_error(r, 400, "invalid_request", field="app")["message"].endswith("they are: default")
    # The demo goes on with the default app.
    send(h, answer["access_token"], title="still here")
    assert [n["title"] for n in inbox(h, answer["access_token"])] == ["still here"]


def test_a_demo_app_another_node_stored_meanwhile_is_taken_not_given_up(herald_factory):
    """fresh14: two dev nodes started together on one PostgreSQL; both found no `demo-b`, one
    stored it, and the other's insert hit the primary key: it served `default` alone ("the demo
    app is not available … duplicate key"). Made certain here: another session has inserted the
    app and not committed when this node starts, so its insert waits and then finds the key."""
    import subprocess
    import threading

    from engines import PostgresServer, engines_missing

    missing = engines_missing()
    if missing:
        pytest.skip(missing)
    pg = PostgresServer().start()
    holder = None
    try:
        h = herald_factory(HERALD_DEV=1, HERALD_DATABASE=pg.url, HERALD_NODE_ID="demo-race")
        h.stop()
        pg.sql("CREATE TABLE demo_b_copy AS SELECT * FROM apps WHERE id = 'demo-b'")
        pg.sql("DELETE FROM apps WHERE id = 'demo-b'")
        holder = subprocess.Popen(["psql", "-h", "127.0.0.1", "-p", str(pg.port), "-U", pg.user, "-d", pg.database,
                                   "-v", "ON_ERROR_STOP=1", "-q"], stdin=subprocess.PIPE, text=True)
        holder.stdin.write("BEGIN; INSERT INTO apps SELECT * FROM demo_b_copy;\n")
        holder.stdin.flush()
        wait_until(lambda: pg.sql("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'") == [["1"]],
                   15.0, "the other session's uncommitted insert")
        starting = threading.Thread(target=h.start)
        starting.start()
        wait_until(lambda: pg.sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") == [["1"]],
                   15.0, "this node's insert waiting on the other session's")
        holder.stdin.write("COMMIT;\n")
        holder.stdin.close()
        holder.wait(10)
        starting.join(30)
        lines = [line for line in log_lines(h, "demo app") if line["msg"].startswith("dev mode:")]
        assert len(lines) == 2 and lines[-1]["msg"].startswith("dev mode: demo app ready"), lines
        assert lines[-1]["stored"] in ("unchanged", "updated"), lines[-1]
        assert dev_token(h, app="demo-b")["apps"] == ["default", "demo-b"]
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        pg.cleanup()

