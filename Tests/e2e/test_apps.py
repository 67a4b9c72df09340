"""Apps as tenants (issue 14, SPEC AP-1, AP-2, AP-3, AP-5; docs/adr/0006-app-routing.md).

One Herald process serves the environment's `default` app and apps created through the admin API
(`/v1/apps`, `HERALD_ADMIN_KEY`). Against the provider double: the two apps push with their own
APNs topics and FCM projects; tokens and server keys reach only their own app; secrets are
sealed at rest and never answered; changes take effect without a restart; deleting an app removes
its data and closes its streams; an app without a session claim binds devices to the user.
"""
import base64
import json
import sqlite3
import sys
import time
import uuid
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import assert_error, wait_until, ws_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import provider_double, provider_double_module, random_apns_token  # noqa: E402,F401

ADMIN_KEY = "e2e-admin-key-0123456789"
SECRET_KEY = base64.b64encode(bytes(range(32))).decode()
CHAT_SECRET = "chat-secret-0123456789abcdef0123"
CHAT_ISSUER = "https://auth.chat.example"
CHAT_TOPIC = "com.example.chat"
CHAT_SERVER_KEY = "chat-server-key-0123456789"
# No keep-alive: each test starts its own Herald, possibly on a port an earlier one used.
HTTP = httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0))


# Session-scoped: the other apps test files use this client and its helpers too.
@pytest.fixture(scope="session", autouse=True)
def _close_client():
    yield
    HTTP.close()


def admin(key=ADMIN_KEY) -> dict:
    return {"Authorization": f"Bearer {key}"}


def bearer(token) -> dict:
    return {"Authorization": f"Bearer {token}"}


def fcm_token() -> str:
    return f"f{uuid.uuid4().hex[:12]}:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7_B338q"


def chat_token(sub="carol", sid="cs1", secret=CHAT_SECRET, **extra) -> str:
    claims = {"sub": sub, "exp": int(time.time()) + 3600, "iss": CHAT_ISSUER, **extra}
    if sid is not None:
        claims["sid"] = sid
    return jwt.encode(claims, secret, algorithm="HS256")


def wait_for(predicate, timeout=10.0, what="condition"):
    return wait_until(predicate, timeout, what)


@pytest.fixture
def herald_apps(herald_factory, provider_double):
    """Herald with the double's credentials as the `default` app, and the admin API on."""
    return herald_factory(**provider_double.herald_env(), HERALD_ADMIN_KEY=ADMIN_KEY, HERALD_SECRET_KEY=SECRET_KEY)


def chat_app_body(double, **overrides) -> dict:
    """App `chat`: its own token secret and issuer, server key, APNs topic and FCM project."""
    apns_key = Path(double.apns["key_path"]).read_text()
    account = json.loads(Path(double.fcm["service_account_path"]).read_text())
    body = {
        "id": "chat",
        "tokens": {"hs256_secret": CHAT_SECRET, "issuer": CHAT_ISSUER},
        "server_keys": [CHAT_SERVER_KEY],
        "payload": {"root_key": "respondo"},
        "default_locale": "pt-BR",
        "push": {
            "apns": {"key_p8": apns_key, "key_id": double.apns["key_id"], "team_id": double.apns["team_id"], "topic": CHAT_TOPIC},
            "fcm": {"service_account": account, "project_id": "chat-project"},
        },
    }
    body.update(overrides)
    return body


def create_chat(h, double, **overrides) -> dict:
    r = HTTP.post(h.url("/v1/apps"), json=chat_app_body(double, **overrides), headers=admin())
    assert r.status_code == 201, r.text
    return r.json()


def register(h, token, platform, device_token, expect=201, **extra) -> dict:
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": platform, "token": device_token, **extra}, headers=bearer(token))
    assert r.status_code == expect, r.text
    return r.json()


def push(h, server_key, device_ids) -> dict:
    r = HTTP.post(h.url("/v1/push"), json={"device_ids": device_ids, "notification": {"title": "Hi", "body": "there"}},
                  headers=bearer(server_key))
    assert r.status_code == 202, r.text
    return r.json()


# --- the admin API --------------------------------------------------------------------------


def test_admin_api_needs_its_own_key(herald_apps):
    h = herald_apps
    for headers in ({}, admin("wrong-admin-key-000000"), h.server_headers()):
        assert_error(HTTP.get(h.url("/v1/apps"), headers=headers), 401, "unauthorized")
    r = HTTP.get(h.url("/v1/apps"), headers=admin())
    assert r.status_code == 200
    apps = r.json()["apps"]
    assert [a["id"] for a in apps] == ["default"]
    assert apps[0]["source"] == "environment" and apps[0]["server_key_set"] is True
    assert set(apps[0]["push_providers"]) >= {"apns", "fcm"}


def test_admin_api_is_off_without_admin_key(herald_factory):
    h = herald_factory()
    assert_error(HTTP.get(h.url("/v1/apps"), headers=admin()), 401, "unauthorized")


def test_create_get_patch_delete_and_secrets_never_answered(herald_apps, provider_double):
    h = herald_apps
    created = create_chat(h, provider_double)
    text = json.dumps(created)
    assert CHAT_SECRET not in text and "PRIVATE KEY" not in text and CHAT_SERVER_KEY not in text
    assert created["source"] == "api"
    assert set(created["tokens"]["hs256_secret"]) == {"fingerprint", "set_at"}
    assert len(created["tokens"]["hs256_secret"]["fingerprint"]) == 16
    assert created["push"]["apns"]["topic"] == CHAT_TOPIC
    assert set(created["push"]["apns"]["key_p8"]) == {"fingerprint", "set_at"}
    assert created["push"]["fcm"]["project_id"] == "chat-project"
    assert created["payload"] == {"root_key": "respondo"} and created["default_locale"] == "pt-BR"
    assert len(created["server_keys"]) == 1 and "server_key" not in created

    got = HTTP.get(h.url("/v1/apps/chat"), headers=admin())
    # GET says as well whether this node serves the app.
    assert got.status_code == 200 and got.json() == {**created, "loaded": True}, got.text
    assert [a["id"] for a in HTTP.get(h.url("/v1/apps"), headers=admin()).json()["apps"]] == ["default", "chat"]

    # Secrets are sealed in the database, bound to app and field.
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    (secrets,) = db.execute("SELECT secrets_json FROM apps WHERE id = 'chat'").fetchone()
    db.close()
    assert CHAT_SECRET not in secrets and "PRIVATE KEY" not in secrets and "v1." in secrets

    r = HTTP.patch(h.url("/v1/apps/chat"), json={"default_locale": "de", "exclusions": {"audiences": ["STAFF"]}}, headers=admin())
    assert r.status_code == 200, r.text
    assert r.json()["default_locale"] == "de" and r.json()["exclusions"]["audiences"] == ["STAFF"]
    # Spelled as devices may spell it, kept in the usual case (the rule devices' locales follow).
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"default_locale": "pt_br"}, headers=admin())
    assert r.status_code == 200 and r.json()["default_locale"] == "pt-BR", r.text
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"default_locale": "de"}, headers=admin())
    assert r.status_code == 200 and r.json()["default_locale"] == "de", r.text
    assert r.json()["tokens"]["hs256_secret"] == created["tokens"]["hs256_secret"]  # untouched secrets stay

    assert_error(HTTP.post(h.url("/v1/apps"), json=chat_app_body(provider_double), headers=admin()), 409, "app_exists")
    assert_error(HTTP.patch(h.url("/v1/apps/default"), json={"default_locale": "de"}, headers=admin()), 409, "app_from_environment")
    assert_error(HTTP.delete(h.url("/v1/apps/default"), headers=admin()), 409, "app_from_environment")
    assert_error(HTTP.get(h.url("/v1/apps/nope"), headers=admin()), 404, "not_found")
    assert HTTP.delete(h.url("/v1/apps/chat"), headers=admin()).status_code == 204
    assert_error(HTTP.delete(h.url("/v1/apps/chat"), headers=admin()), 404, "not_found")


def test_a_post_without_server_keys_gets_one_generated_once(herald_apps):
    h = herald_apps
    r = HTTP.post(h.url("/v1/apps"), json={"id": "gen", "tokens": {"hs256_secret": CHAT_SECRET}}, headers=admin())
    assert r.status_code == 201, r.text
    key = r.json()["server_key"]
    assert key.startswith("hk_") and len(r.json()["server_keys"]) == 1
    assert "server_key" not in HTTP.get(h.url("/v1/apps/gen"), headers=admin()).json()
    r = HTTP.post(h.url("/v1/publish"), json={"channel": "orders:1", "event": "x", "data": {}}, headers=bearer(key))
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("body, field", [
    ({"id": "Bad_Id"}, "id"),
    ({"id": "chat-"}, "id"),
    ({"id": "-chat"}, "id"),
    ({"id": "a" * 64}, "id"),
    ({}, "id"),
    ({"id": "x", "colour": 1}, "colour"),
    ({"id": "x", "tokens": {"hs256_secret": "short"}}, "tokens.hs256_secret"),
    ({"id": "x", "tokens": {"public_keys": ["not a pem"]}}, "tokens.public_keys[0]"),
    ({"id": "x", "tokens": {"jwks": {"keys": [{"kty": "oct"}]}}}, "tokens.jwks"),
    ({"id": "x", "tokens": {"algorithms": ["none"]}}, "tokens.algorithms"),
    ({"id": "x", "server_keys": ["short"]}, "server_keys"),
    ({"id": "x", "push": {"apns": {"key_p8": "garbage", "key_id": "K", "team_id": "T", "topic": "t"}}}, "push.apns.key_p8"),
    ({"id": "x", "push": {"apns": {"key_id": "K", "team_id": "T", "topic": "t"}}}, "push.apns.key_p8"),
    ({"id": "x", "push": {"fcm": {"service_account": {"type": "service_account"}}}}, "push.fcm.service_account"),
    ({"id": "x", "push": {"webpush": {"vapid_private_key": "nope", "subject": "mailto:a@b.c"}}}, "push.webpush.vapid_private_key"),
    ({"id": "x", "catalog": {"kinds": 3}}, "catalog"),
    ({"id": "x", "default_locale": "no way"}, "default_locale"),
    ({"id": "x", "default_locale": "xx_YY_zz"}, "default_locale"),
    ({"id": "x", "default_locale": "en-US-Latn"}, "default_locale"),
])
def test_bad_settings_are_400_naming_the_field_and_store_nothing(herald_apps, body, field):
    h = herald_apps
    assert_error(HTTP.post(h.url("/v1/apps"), json=body, headers=admin()), 400, "invalid_request", field=field)
    assert [a["id"] for a in HTTP.get(h.url("/v1/apps"), headers=admin()).json()["apps"]] == ["default"]


def test_secrets_need_a_secret_key(herald_factory, provider_double):
    h = herald_factory(**provider_double.herald_env(), HERALD_ADMIN_KEY=ADMIN_KEY)
    assert_error(HTTP.post(h.url("/v1/apps"), json=chat_app_body(provider_double), headers=admin()), 503, "secret_key_missing")
    # Settings without secrets work without it.
    r = HTTP.post(h.url("/v1/apps"), json={"id": "pem", "server_keys": [CHAT_SERVER_KEY]}, headers=admin())
    assert r.status_code == 201, r.text


# --- routing and isolation (AP-3) -------------------------------------------------------------


def test_tokens_and_server_keys_reach_their_own_app_only(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    default_user = h.token(sub="carol", sid="ds1")
    chat_user = chat_token(sub="carol", sid="cs1")
    ios_default = register(h, default_user, "ios", random_apns_token())
    ios_chat = register(h, chat_user, "ios", random_apns_token())
    # Same user id in both apps: each sees only its own devices.
    mine = HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_user)).json()["devices"]
    assert [d["id"] for d in mine] == [ios_chat["id"]]
    mine = HTTP.get(h.url("/v1/me/devices"), headers=bearer(default_user)).json()["devices"]
    assert [d["id"] for d in mine] == [ios_default["id"]]
    # Neither can delete or test the other's device.
    assert_error(HTTP.delete(h.url(f"/v1/me/devices/{ios_default['id']}"), headers=bearer(chat_user)), 404, "not_found")
    assert_error(HTTP.post(h.url(f"/v1/me/devices/{ios_default['id']}/test"), headers=bearer(chat_user)), 404, "not_found")
    # A chat-issued token signed with the default secret does not verify (routed by iss to chat's keys).
    forged = chat_token(secret=h.env["HERALD_JWT_SECRET"])
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(forged)), 401, "invalid_token")
    # An app claim naming no app is refused; naming chat routes there.
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_token(app="nope"))), 401, "invalid_token")
    by_claim = jwt.encode({"sub": "carol", "sid": "cs1", "exp": int(time.time()) + 600, "app": "chat", "iss": CHAT_ISSUER},
                          CHAT_SECRET, algorithm="HS256")
    assert [d["id"] for d in HTTP.get(h.url("/v1/me/devices"), headers=bearer(by_claim)).json()["devices"]] == [ios_chat["id"]]
    # The chat server key cannot queue pushes to the default app's devices.
    answer = push(h, CHAT_SERVER_KEY, [ios_default["id"], ios_chat["id"]])
    assert answer["queued"] == 1 and answer["jobs"][0]["device_id"] == ios_chat["id"]
    assert answer["skipped"] == [{"device_id": ios_default["id"], "reason": "not_found"}]


def test_each_app_pushes_with_its_own_topic_and_project(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    default_user = h.token(sub="dave", sid="ds2")
    chat_user = chat_token(sub="erin", sid="cs2")
    chat_apns = random_apns_token()
    provider_double.register_apns_device(chat_apns, topic=CHAT_TOPIC)
    ios_default = register(h, default_user, "ios", random_apns_token())
    android_default = register(h, default_user, "android", fcm_token())
    ios_chat = register(h, chat_user, "ios", chat_apns)
    android_chat = register(h, chat_user, "android", fcm_token())

    push(h, h.env["HERALD_SERVER_KEY"], [ios_default["id"], android_default["id"]])
    push(h, CHAT_SERVER_KEY, [ios_chat["id"], android_chat["id"]])
    # Only this test's requests: an earlier test's Herald may still be sending to the shared double.
    mine = {ios_default["token"], chat_apns, android_default["token"], android_chat["token"]}

    def sent(provider, token_of):
        return [e for e in provider_double.requests(provider=provider) if token_of(e) in mine]
    apns_token = lambda e: e["path"].rsplit("/", 1)[-1]
    fcm_token_of = lambda e: ((e.get("body") or {}).get("message") or {}).get("token")
    apns = wait_for(lambda: (lambda found: found if len(found) == 2 else None)(sent("apns", apns_token)), what="two APNs requests")
    fcm = wait_for(lambda: (lambda found: found if len(found) == 2 else None)(sent("fcm", fcm_token_of)), what="two FCM requests")
    topics = {apns_token(e): e["headers"].get("apns-topic") for e in apns}
    assert topics[chat_apns] == CHAT_TOPIC
    assert topics[ios_default["token"]] == provider_double.apns["topic"]
    assert all(e["status"] == 200 for e in apns), [(e["status"], e["notes"]) for e in apns]
    projects = sorted(e["project"] for e in fcm)
    assert projects == sorted(["chat-project", provider_double.fcm["project_id"]])
    # The double knows one project: chat's request is refused there, which proves it went to chat's.
    for entry in fcm:
        assert (entry["status"] == 200) == (entry["project"] == provider_double.fcm["project_id"]), entry


def test_a_device_of_an_app_without_credentials_is_never_pushed_with_anothers(herald_apps, provider_double):
    h = herald_apps
    r = HTTP.post(h.url("/v1/apps"), json={"id": "bare", "tokens": {"hs256_secret": CHAT_SECRET, "issuer": "https://bare"},
                                           "server_keys": ["bare-server-key-0123456789"]}, headers=admin())
    assert r.status_code == 201, r.text
    user = chat_token(iss="https://bare")
    device = register(h, user, "ios", random_apns_token())
    answer = push(h, "bare-server-key-0123456789", [device["id"]])
    job = answer["jobs"][0]["job_id"]

    def dead():
        r = HTTP.get(h.url("/v1/jobs"), params={"state": "dead"}, headers=bearer("bare-server-key-0123456789"))
        return [j for j in r.json()["jobs"] if j["id"] == job]
    jobs = wait_for(dead, what="the job to be dead-lettered")
    assert "push_not_configured" in jobs[0]["last_error"]
    assert provider_double.requests(provider="apns") == []
    assert_error(HTTP.post(h.url(f"/v1/me/devices/{device['id']}/test"), headers=bearer(user)), 503, "push_not_configured")


def test_changes_take_effect_without_a_restart(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    old = chat_token()
    assert HTTP.get(h.url("/v1/me/devices"), headers=bearer(old)).status_code == 200
    new_secret = "rotated-secret-0123456789abcdef0"
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"tokens": {"hs256_secret": new_secret}, "server_keys": ["chat-key-two-0123456789"]},
                   headers=admin())
    assert r.status_code == 200, r.text
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(old)), 401, "invalid_token")
    assert HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_token(secret=new_secret))).status_code == 200
    body = {"channel": "c", "event": "e", "data": {}}
    assert_error(HTTP.post(h.url("/v1/publish"), json=body, headers=bearer(CHAT_SERVER_KEY)), 401, "unauthorized")
    assert HTTP.post(h.url("/v1/publish"), json=body, headers=bearer("chat-key-two-0123456789")).status_code == 200
    # A server key is one app's.
    taken = HTTP.post(h.url("/v1/apps"), json={"id": "other", "server_keys": ["chat-key-two-0123456789"]}, headers=admin())
    assert_error(taken, 409, "server_key_taken")


def test_apns_credentials_set_again_while_pushing_keep_apns_accepting_the_apps_pushes(herald_apps, provider_double):
    # APNs refuses a provider token changed on a connection less than 20 min after the previous
    # one (429 TooManyProviderTokenUpdates, the double as Apple). A PATCH of push.apns builds a
    # provider with a new token: on the app's old connection every later push was refused for
    # those 20 minutes (breaker8: a rotation, even re-sending the same key, stopped the app's iOS pushes).
    h = herald_apps
    body = chat_app_body(provider_double)
    create_chat(h, provider_double)
    device_token = random_apns_token()
    provider_double.register_apns_device(device_token, topic=CHAT_TOPIC)
    device = register(h, chat_token(sub="gina", sid="cs9"), "ios", device_token)

    def answers():
        return [e["status"] for e in provider_double.requests(provider="apns") if e["path"].endswith(device_token)]
    push(h, CHAT_SERVER_KEY, [device["id"]])
    assert wait_for(lambda: answers() or None, what="the first push") == [200]
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"push": {"apns": body["push"]["apns"]}}, headers=admin())
    assert r.status_code == 200, r.text
    job = push(h, CHAT_SERVER_KEY, [device["id"]])["jobs"][0]["job_id"]
    wait_for(lambda: len(answers()) >= 2, what="the second push to reach APNs")
    assert answers()[1] == 200, [(e["status"], e["notes"]) for e in provider_double.requests(provider="apns")]

    def done():
        r = HTTP.get(h.url("/v1/jobs"), params={"state": "done"}, headers=bearer(CHAT_SERVER_KEY))
        return [j for j in r.json()["jobs"] if j["id"] == job]
    wait_for(done, what="the second push's job to be done")


def test_apps_survive_a_restart(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    h.restart()
    assert HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_token())).status_code == 200
    r = HTTP.get(h.url("/v1/apps/chat"), headers=admin())
    assert r.status_code == 200 and r.json()["push"]["apns"]["topic"] == CHAT_TOPIC


def test_deleting_an_app_removes_its_data_and_closes_its_streams(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    chat_user = chat_token(sub="gina", sid="cs9")
    default_user = h.token(sub="gina", sid="ds9")
    register(h, chat_user, "android", fcm_token())
    kept = register(h, default_user, "android", fcm_token())
    stream = h.stream(token=chat_user)
    stream.expect("ready")
    other = h.stream(token=default_user)
    other.expect("ready")
    assert HTTP.delete(h.url("/v1/apps/chat"), headers=admin()).status_code == 204
    error = stream.expect("error")
    assert json.loads(error.data)["error"] == "app_deleted"
    stream.wait_closed()
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    assert db.execute("SELECT count(*) FROM devices WHERE app = 'chat'").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM sessions WHERE app = 'chat'").fetchone() == (0,)
    db.close()
    # The app's tokens and keys are gone; the default app is untouched.
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_user)), 401, "invalid_token")
    assert_error(HTTP.post(h.url("/v1/publish"), json={"channel": "c", "event": "e", "data": {}}, headers=bearer(CHAT_SERVER_KEY)),
                 401, "unauthorized")
    assert [d["id"] for d in HTTP.get(h.url("/v1/me/devices"), headers=bearer(default_user)).json()["devices"]] == [kept["id"]]
    h.publish("user:gina", {"still": "here"})
    assert other.expect("update")


def test_a_change_of_an_apps_token_keys_ends_the_streams_its_old_keys_opened(herald_apps):
    """A new user's report (breaker6): PATCH `tokens.hs256_secret` is how a leaked secret is
    retired, and REST refused its tokens at once, but a stream opened with one (its `exp` chosen
    by whoever holds the secret: year 2100 here) kept receiving the user's events. A change of
    `tokens` now ends the app's open streams as an expired token does (SSE `error`
    `token_expired`, WebSocket close 4003): clients reconnect with a fresh token and their last
    id. Another app's streams, and a change of anything else, leave streams alone."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect as ws_connect

    h = herald_apps
    r = HTTP.post(h.url("/v1/apps"), json={"id": "chat", "tokens": {"hs256_secret": CHAT_SECRET, "issuer": CHAT_ISSUER},
                                           "server_keys": [CHAT_SERVER_KEY]}, headers=admin())
    assert r.status_code == 201, r.text
    forged = chat_token(sub="vic", sid="v1", exp=4102444800)
    sse = h.stream(token=forged)
    sse.expect("ready")
    with ws_connect(ws_url(h, access_token=forged)) as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "ready"
        bystander = h.stream(token=h.token(sub="vic", sid="d1"))
        bystander.expect("ready")

        r = HTTP.patch(h.url("/v1/apps/chat"), json={"cors_origins": ["https://chat.example"]}, headers=admin())
        assert r.status_code == 200, r.text
        publish = HTTP.post(h.url("/v1/publish"), json={"channel": "user:vic", "event": "note", "data": {"n": 1}}, headers=bearer(CHAT_SERVER_KEY))
        assert publish.status_code == 200, publish.text
        assert sse.expect("note").json()["data"] == {"n": 1}, "a change of anything else leaves the streams open"
        assert json.loads(ws.recv(timeout=10))["data"] == {"n": 1}

        r = HTTP.patch(h.url("/v1/apps/chat"), json={"tokens": {"hs256_secret": "chat-secret-NEW-0123456789abcdef"}}, headers=admin())
        assert r.status_code == 200, r.text
        error = sse.expect("error")
        assert json.loads(error.data)["error"] == "token_expired", error.data
        sse.wait_closed()
        message = json.loads(ws.recv(timeout=10))
        assert message["type"] == "error" and message["error"] == "token_expired", message
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4003, closed.value
        assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(forged)), 401, "invalid_token")
        h.publish("user:vic", {"still": "here"})
        assert bystander.expect("update"), "the default app's stream goes on"


# --- token verification per app ----------------------------------------------------------------


def _ec_jwk(kid):
    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    b64 = lambda n: base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()
    return key, {"kty": "EC", "crv": "P-256", "x": b64(numbers.x), "y": b64(numbers.y), "kid": kid, "use": "sig", "alg": "ES256"}


def test_jwks_rotation_by_kid_and_claim_names(herald_apps):
    h = herald_apps
    key1, jwk1 = _ec_jwk("k1")
    key2, jwk2 = _ec_jwk("k2")
    r = HTTP.post(h.url("/v1/apps"), json={
        "id": "idp", "server_keys": ["idp-server-key-0123456789"],
        "tokens": {"jwks": {"keys": [jwk1]}, "algorithms": ["ES256"], "issuer": "https://idp.example", "audience": "herald",
                   "user_claim": "uid", "session_claim": "session"},
    }, headers=admin())
    assert r.status_code == 201, r.text

    def token(key, kid, **claims):
        body = {"uid": "ivan", "session": "S1", "exp": int(time.time()) + 600, "iss": "https://idp.example", "aud": ["herald", "x"]}
        body.update(claims)
        return jwt.encode(body, key, algorithm="ES256", headers={"kid": kid})

    assert HTTP.get(h.url("/v1/me/devices"), headers=bearer(token(key1, "k1"))).status_code == 200
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(token(key2, "k2"))), 401, "invalid_token")
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(token(key1, "k1", aud="other"))), 401, "invalid_token")
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(token(key2, "k1"))), 401, "invalid_token")
    # The user claim is `uid`: a device registers under it, bound to the `session` claim.
    device = register(h, token(key1, "k1"), "android", fcm_token())
    assert device["current"] is True
    # Rotation: the new document lists k2 only.
    r = HTTP.patch(h.url("/v1/apps/idp"), json={"tokens": {"jwks": {"keys": [jwk2]}}}, headers=admin())
    assert r.status_code == 200, r.text
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(token(key1, "k1"))), 401, "invalid_token")
    devices = HTTP.get(h.url("/v1/me/devices"), headers=bearer(token(key2, "k2"))).json()["devices"]
    assert [d["id"] for d in devices] == [device["id"]]
    # A PEM key beside the JWKS, refused when its algorithm is not accepted.
    pem = key1.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    r = HTTP.patch(h.url("/v1/apps/idp"), json={"tokens": {"public_keys": [pem], "algorithms": ["RS256"], "jwks": None}},
                   headers=admin())
    assert_error(r, 400, "invalid_request", field="tokens.algorithms")


# --- sessions per app (AP-5) -------------------------------------------------------------------


def test_an_app_without_session_claim_binds_devices_to_the_user(herald_apps):
    h = herald_apps
    r = HTTP.post(h.url("/v1/apps"), json={"id": "plain", "server_keys": ["plain-server-key-0123456789"],
                                           "tokens": {"hs256_secret": CHAT_SECRET, "issuer": "https://plain", "session_claim": None}},
                  headers=admin())
    assert r.status_code == 201, r.text
    assert r.json()["tokens"]["session_claim"] is None
    # Plain bearer tokens with no sid register devices (the default app still says session_required).
    plain = chat_token(sub="pat", sid=None, iss="https://plain")
    phone = register(h, plain, "android", fcm_token(), installation_id="inst-1")
    tablet = register(h, plain, "android", fcm_token(), installation_id="inst-2")
    assert phone["current"] and tablet["current"]
    ids = {d["id"] for d in HTTP.get(h.url("/v1/me/devices"), headers=bearer(plain)).json()["devices"]}
    assert ids == {phone["id"], tablet["id"]}  # no session rotation: both stay
    # Rotation by installation id: the phone's new token replaces its old one.
    new_phone = register(h, plain, "android", fcm_token(), installation_id="inst-1")
    ids = {d["id"] for d in HTTP.get(h.url("/v1/me/devices"), headers=bearer(plain)).json()["devices"]}
    assert ids == {new_phone["id"], tablet["id"]}
    # Pushes reach them (the user's standing session is alive).
    answer = push(h, "plain-server-key-0123456789", [new_phone["id"], tablet["id"]])
    assert answer["queued"] == 2 and answer["skipped"] == []
    assert_error(HTTP.post(h.url("/v1/me/devices"), json={"platform": "android", "token": fcm_token()},
                           headers=bearer(h.token(sub="pat", sid=None))), 403, "session_required")


# --- channels per app (AP-3) ---------------------------------------------------------------


def test_channels_are_per_app(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    chat_stream = h.stream(token=chat_token(sub="carol", channels=["orders:*"]), channels=["orders:1"])
    ready = chat_stream.ready()
    assert ready["channels"] == ["user:carol", "orders:1"]
    default_stream = h.stream(token=h.token(sub="carol", channels=["orders:*"]), channels=["orders:1"])
    default_stream.ready()

    def chat_publish(channel, data):
        r = HTTP.post(h.url("/v1/publish"), json={"channel": channel, "event": "update", "data": data}, headers=bearer(CHAT_SERVER_KEY))
        assert r.status_code == 200, r.text
        assert r.json()["channel"] == channel  # answered as the backend names it
        return r.json()

    # Same names, two apps: the default app's publishes reach only its streams, and chat's only chat's.
    h.publish("user:carol", {"n": "default-1"})
    h.publish("orders:1", {"n": "default-2"})
    chat_publish("user:carol", {"n": "chat-1"})
    chat_publish("orders:1", {"n": "chat-2"})
    h.publish("orders:1", {"n": "default-3"})
    got = [json.loads(e.data) for e in chat_stream.take(2)]
    assert [(g["channel"], g["data"]["n"]) for g in got] == [("user:carol", "chat-1"), ("orders:1", "chat-2")]
    got = [json.loads(e.data) for e in default_stream.take(3)]
    assert [g["data"]["n"] for g in got] == ["default-1", "default-2", "default-3"]
    # A chat token cannot name another app's namespace: `~` is not a channel character.
    r = HTTP.get(h.url("/v1/stream"), params={"channels": "~default~orders:1", "access_token": chat_token(channels=["orders:*"])})
    assert_error(r, 400, "invalid_request", field="channels")


def test_an_apps_expo_pushes_and_receipts_use_its_access_token(herald_factory, provider_double):
    provider_double.expo_access_token("chat-expo-token")
    h = herald_factory(**provider_double.herald_env(), HERALD_ADMIN_KEY=ADMIN_KEY, HERALD_SECRET_KEY=SECRET_KEY,
                       HERALD_PUSH_RECEIPT_DELAY_MS="200", HERALD_PUSH_RECEIPT_RECHECK_MS="200")
    create_chat(h, provider_double, push={"expo": {"access_token": "chat-expo-token"}})
    token = f"ExponentPushToken[{uuid.uuid4().hex[:22]}]"
    device = register(h, chat_token(sub="hana", sid="cs5"), "android", token)
    assert device["provider"] == "expo"
    push(h, CHAT_SERVER_KEY, [device["id"]])
    sent = wait_for(lambda: [e for e in provider_double.requests(provider="expo") if e["outcome"] is not None
                             and any(m.get("to") == token for m in e["body"])], what="the Expo send")
    assert sent[0]["headers"]["authorization"] == "Bearer chat-expo-token" and sent[0]["status"] == 200
    ticket = sent[0]["response_body"]["data"][0]["id"]
    asked = wait_for(lambda: [e for e in provider_double.requests("expo_receipts") if e["outcome"] is not None
                              and ticket in (e["body"] or {}).get("ids", [])], what="the receipt check")
    assert asked[0]["headers"]["authorization"] == "Bearer chat-expo-token"


def test_an_apps_cors_origins_apply_without_a_restart(herald_apps, provider_double):
    h = herald_apps
    preflight = {"Origin": "https://chat.example", "Access-Control-Request-Method": "GET"}
    assert "access-control-allow-origin" not in httpx.options(h.url("/v1/stream"), headers=preflight).headers
    create_chat(h, provider_double, cors_origins=["https://chat.example"])
    r = httpx.options(h.url("/v1/stream"), headers=preflight)
    assert r.headers["access-control-allow-origin"] == "https://chat.example"
    r = HTTP.get(h.url("/v1/me/devices"), headers={**bearer(chat_token()), "Origin": "https://chat.example"})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://chat.example"
    assert HTTP.patch(h.url("/v1/apps/chat"), json={"cors_origins": []}, headers=admin()).status_code == 200
    assert "access-control-allow-origin" not in httpx.options(h.url("/v1/stream"), headers=preflight).headers


def test_concurrent_changes_to_one_app_lose_nothing(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    import concurrent.futures
    changes = [{"default_locale": "de"}, {"payload": {"root_key": "x"}}, {"cors_origins": ["https://c.example"]},
               {"exclusions": {"kinds": ["k"]}}, {"tokens": {"audience": "herald"}}]

    def patch(body):
        with httpx.Client(timeout=10) as client:
            return client.patch(h.url("/v1/apps/chat"), json=body, headers=admin()).status_code
    with concurrent.futures.ThreadPoolExecutor(len(changes)) as pool:
        assert list(pool.map(patch, changes)) == [200] * len(changes)
    app = HTTP.get(h.url("/v1/apps/chat"), headers=admin()).json()
    assert app["default_locale"] == "de" and app["payload"]["root_key"] == "x" and app["cors_origins"] == ["https://c.example"]
    assert app["exclusions"]["kinds"] == ["k"] and app["tokens"]["audience"] == "herald"
    assert app["tokens"]["issuer"] == CHAT_ISSUER and app["push"]["apns"]["topic"] == CHAT_TOPIC


def test_two_apps_sessions_of_one_sid_are_two_sessions(herald_apps, provider_double):
    # ADR 0019 (breaker11): sessions were keyed by sid alone, so the first app to use a sid held it:
    # the other app's registrations with it answered 409 session_conflict, and a DELETE of it by
    # the other app's key answered 404. Backends that number their sessions collided at once.
    h = herald_apps
    create_chat(h, provider_double)
    sid = "17"
    tokens = {"chat": chat_token(sub="kim", sid=sid), "default": h.token(sub="kim", sid=sid)}
    keys = {"chat": CHAT_SERVER_KEY, "default": h.env["HERALD_SERVER_KEY"]}
    chat_apns = random_apns_token()
    provider_double.register_apns_device(chat_apns, topic=CHAT_TOPIC)
    devices = {"chat": register(h, tokens["chat"], "ios", chat_apns), "default": register(h, tokens["default"], "ios", random_apns_token())}

    def listed(app):
        r = HTTP.get(h.url("/v1/me/devices"), headers=bearer(tokens[app]))
        return r.status_code, [(d["id"], d["active"], d["current"]) for d in r.json().get("devices", [])]

    for app in ("chat", "default"):
        assert listed(app) == (200, [(devices[app]["id"], True, True)])

    # A live foreground session of chat's 17 suppresses chat's device only.
    chat_stream = h.stream(token=tokens["chat"])
    chat_stream.ready()

    def notify(app):
        r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": ["kim"]}, "kind": "ticket.update", "title": "Hi"},
                      headers=bearer(keys[app]))
        assert r.status_code == 201, r.text
        return r.json()
    mine = notify("chat")
    assert (mine["live_delivered"], mine["push_suppressed"], mine["push_queued"]) == (1, 1, 0), mine
    assert chat_stream.expect("notification.created").json()["data"]["id"] == mine["notifications"][0]["id"]
    theirs = notify("default")
    assert (theirs["live_delivered"], theirs["push_suppressed"], theirs["push_queued"]) == (0, 0, 1), theirs

    # PUT: the default app expires its 17; chat's stays active.
    r = HTTP.put(h.url(f"/v1/sessions/{sid}"), json={"expires_at": int(time.time()) - 60}, headers=bearer(keys["default"]))
    assert r.status_code == 200 and r.json()["active"] is False, r.text
    assert listed("default") == (200, [(devices["default"]["id"], False, True)])
    assert listed("chat") == (200, [(devices["chat"]["id"], True, True)])
    # A sid an app never used is 404 to that app, whoever else uses it.
    assert_error(HTTP.put(h.url("/v1/sessions/18"), json={"expires_at": None}, headers=bearer(keys["chat"])), 404, "not_found")

    # DELETE: the default app ends its 17: its device and tokens go; chat's session, device and stream stay.
    r = HTTP.delete(h.url(f"/v1/sessions/{sid}"), headers=bearer(keys["default"]))
    assert r.status_code == 200 and r.json() == {"session_id": sid, "ended": True, "devices_deleted": 1}, r.text
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(tokens["default"])), 401, "session_ended")
    assert listed("chat") == (200, [(devices["chat"]["id"], True, True)])
    r = HTTP.post(h.url("/v1/publish"), json={"channel": "user:kim", "event": "update", "data": {"n": 1}}, headers=bearer(CHAT_SERVER_KEY))
    assert r.status_code == 200, r.text
    assert json.loads(chat_stream.expect("update").data)["data"] == {"n": 1}
    # Then chat ends its own 17.
    r = HTTP.delete(h.url(f"/v1/sessions/{sid}"), headers=bearer(keys["chat"]))
    assert r.status_code == 200 and r.json() == {"session_id": sid, "ended": True, "devices_deleted": 1}, r.text
    events = chat_stream.wait_closed()
    assert events and events[-1].event == "error" and events[-1].json()["error"] == "session_ended", events

    # A sid one app ended before the other ever used it is still free for the other (it answered
    # 409 until now, breaker10): ending an unseen sid records it for the caller's app only.
    assert HTTP.delete(h.url("/v1/sessions/gone"), headers=bearer(keys["default"])).status_code == 200
    register(h, chat_token(sub="kim", sid="gone"), "android", fcm_token())
    assert_error(HTTP.post(h.url("/v1/me/devices"), json={"platform": "android", "token": fcm_token()},
                           headers=bearer(h.token(sub="kim", sid="gone"))), 401, "session_ended")
    # Another user of the same app still may not share a sid.
    assert register(h, chat_token(sub="lee", sid="gone"), "android", fcm_token(), expect=409)["error"] == "session_conflict"
