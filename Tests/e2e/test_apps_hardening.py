"""Apps against a user who tries to break them (issue 14; a new user's report): user ids that name
another app's user, two apps claiming one issuer, rows a deleted app leaves behind, provider tokens
renewed by unrelated changes, and an app that cannot load at start.
"""
import base64
import sqlite3
import time
import uuid

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import assert_error
from test_apps import (ADMIN_KEY, CHAT_ISSUER, CHAT_SECRET, CHAT_SERVER_KEY, CHAT_TOPIC, HTTP, admin, bearer, chat_app_body, chat_token,  # noqa: F401
                       create_chat, herald_apps, provider_double, provider_double_module, random_apns_token, register, wait_for)


def test_a_user_id_cannot_name_another_apps_user(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    sid = f"cs-{uuid.uuid4().hex[:8]}"
    chat = chat_token(sub="carol", sid=sid)
    stream = h.stream(token=chat, params={"state": "background"})
    stream.ready()
    # Presence files chat's carol as ~chat~carol; the default app's routes cannot reach that key.
    assert_error(HTTP.get(h.url("/v1/users/~chat~carol/sessions/live"), headers=h.server_headers()), 400, "invalid_request", field="id")
    assert_error(HTTP.get(h.url("/v1/users/%7Echat%7Ecarol/sessions/live"), headers=h.server_headers()), 400, "invalid_request", field="id")
    # A default-app token whose sub looks like the key is refused (`~` cannot form `user:{sub}`)
    # and changes nothing of chat's carol.
    impostor = h.token(sub="~chat~carol", sid=sid)
    r = HTTP.put(h.url("/v1/me/sessions/current/state"), json={"state": "foreground"}, headers=bearer(impostor))
    assert_error(r, 401, "invalid_token")
    live = HTTP.get(h.url("/v1/users/carol/sessions/live"), headers=bearer(CHAT_SERVER_KEY)).json()
    assert [s["state"] for s in live["sessions"]] == ["background"], live


def test_an_issuer_routes_to_one_app_only(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    body = {"id": "zeta", "tokens": {"hs256_secret": "zeta-secret-0123456789abcdef012", "issuer": CHAT_ISSUER},
            "server_keys": ["zeta-server-key-0123456789"]}
    assert_error(HTTP.post(h.url("/v1/apps"), json=body, headers=admin()), 409, "issuer_taken", field="tokens.issuer")
    body["tokens"]["issuer"] = "https://auth.zeta.example"
    assert HTTP.post(h.url("/v1/apps"), json=body, headers=admin()).status_code == 201
    r = HTTP.patch(h.url("/v1/apps/zeta"), json={"tokens": {"issuer": CHAT_ISSUER}}, headers=admin())
    assert_error(r, 409, "issuer_taken", field="tokens.issuer")
    assert_error(HTTP.patch(h.url("/v1/apps/zeta"), json={"tokens": {"issuer": ""}}, headers=admin()), 400, "invalid_request",
                 field="tokens.issuer")
    # An empty audience would refuse every token of the app: refused like an empty issuer, nothing changed.
    assert_error(HTTP.patch(h.url("/v1/apps/zeta"), json={"tokens": {"audience": ""}}, headers=admin()), 400, "invalid_request",
                 field="tokens.audience")
    assert HTTP.get(h.url("/v1/apps/zeta"), headers=admin()).json()["tokens"].get("audience") is None
    # Chat's tokens still reach chat.
    assert HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_token())).status_code == 200


def test_a_new_app_never_inherits_what_a_deleted_app_of_its_id_left(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    assert HTTP.delete(h.url("/v1/apps/chat"), headers=admin()).status_code == 204
    # What a request authorised just before the delete could still write after it.
    db = sqlite3.connect(h.env["HERALD_DATABASE"], timeout=10)
    db.execute("INSERT INTO notifications (id, app, user_id, kind, data_json, priority, created_at) "
               "VALUES ('ntf_left', 'chat', 'carol', 'k', '{}', 'normal', 1)")
    db.execute("INSERT INTO scope_members (app, scope, user_id, permissions_json, updated_at) VALUES ('chat', 'room:1', 'carol', '[]', 1)")
    db.commit()
    db.close()
    create_chat(h, provider_double)
    r = HTTP.get(h.url("/v1/me/notifications"), headers=bearer(chat_token()))
    assert r.status_code == 200 and r.json()["notifications"] == [], r.text
    r = HTTP.get(h.url("/v1/scopes/room:1/members"), headers=bearer(CHAT_SERVER_KEY))
    assert r.json()["members"] == [], r.text


def test_changing_an_apps_rules_keeps_its_provider_token(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    token = random_apns_token()
    provider_double.register_apns_device(token, topic=CHAT_TOPIC)
    user = chat_token(sub="carol", sid=f"cs-{uuid.uuid4().hex[:8]}")
    device = register(h, user, "ios", token)

    def test_push():
        return HTTP.post(h.url(f"/v1/me/devices/{device['id']}/test"), headers=bearer(user))
    assert test_push().status_code == 200
    for change in ({}, {"exclusions": {"kinds": ["nothing"]}}, {"default_locale": "en"}, {"cors_origins": ["https://a.example"]}):
        assert HTTP.patch(h.url("/v1/apps/chat"), json=change, headers=admin()).status_code == 200
        r = test_push()
        assert r.status_code == 200, (change, r.text)   # APNs refuses a token renewed within 20 min (429)
    sent = [e for e in provider_double.requests(provider="apns") if e["path"].endswith(token)]
    assert len(sent) == 5 and all(e["status"] == 200 for e in sent), [(e["status"], e["notes"]) for e in sent]


def test_an_app_that_cannot_load_keeps_its_pushes_and_shows_on_readyz(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    token = random_apns_token()
    provider_double.register_apns_device(token, topic=CHAT_TOPIC)
    device = register(h, chat_token(sub="carol", sid="cs-load"), "ios", token)
    provider_double.set_outcomes("apns", token, [{"status": 503, "reason": "ServiceUnavailable"}])
    r = HTTP.post(h.url("/v1/push"), json={"device_ids": [device["id"]], "notification": {"title": "Hi"}}, headers=bearer(CHAT_SERVER_KEY))
    job = r.json()["jobs"][0]["job_id"]
    db = sqlite3.connect(h.env["HERALD_DATABASE"], timeout=10)

    def state():
        return db.execute("SELECT state, last_error, attempts FROM jobs WHERE id = ?", (int(job),)).fetchone()
    wait_for(lambda: state()[1], what="the first attempt's 503")
    # A start with another secret key: chat does not load, and its push waits instead of dying.
    right = h.env["HERALD_SECRET_KEY"]
    h.env["HERALD_SECRET_KEY"] = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
    h.restart()
    ready = HTTP.get(h.url("/readyz")).json()
    assert ready["status"] == "ready" and ready["apps_not_loaded"] == {"chat": "secrets_unreadable"}, ready
    assert_error(HTTP.post(h.url("/v1/push"), json={"device_ids": [device["id"]], "notification": {"title": "Hi"}},
                           headers=bearer(CHAT_SERVER_KEY)), 401, "unauthorized")
    waiting = wait_for(lambda: (lambda s: s if (s[1] or "").startswith("app_not_loaded") else None)(state()), timeout=30,
                       what="an attempt while the app is not loaded")
    assert waiting[0] == "queued", waiting
    h.env["HERALD_SECRET_KEY"] = right
    h.restart()
    assert HTTP.get(h.url("/readyz")).json()["apps_not_loaded"] == {}
    wait_for(lambda: state()[0] == "done", timeout=45, what="the push once the app loads")
    db.close()


def test_an_app_that_cannot_load_is_repaired_by_sending_its_secrets_again(herald_apps, provider_double):
    h = herald_apps
    body = chat_app_body(provider_double)
    create_chat(h, provider_double)
    h.env["HERALD_SECRET_KEY"] = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
    h.restart()
    assert HTTP.get(h.url("/readyz")).json()["apps_not_loaded"] == {"chat": "secrets_unreadable"}
    # Stored, and this node says it does not serve it, and why.
    shown = HTTP.get(h.url("/v1/apps/chat"), headers=admin()).json()
    assert shown["loaded"] is False and shown["not_loaded_reason"] == "secrets_unreadable", shown
    listed = {a["id"]: a for a in HTTP.get(h.url("/v1/apps"), headers=admin()).json()["apps"]}
    assert listed["chat"]["loaded"] is False and listed["default"]["loaded"] is True, listed
    # A change that keeps the sealed secrets is a client error naming them and the ways out, never a 500.
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"default_locale": "en"}, headers=admin())
    assert_error(r, 409, "secret_unreadable", field="tokens.hs256_secret")
    message = r.json()["message"]
    for named in ("tokens.hs256_secret", "push.apns.key_p8", "push.fcm.service_account", "HERALD_SECRET_KEY_PREVIOUS", "delete"):
        assert named in message, message
    # Replacing some of them is not enough: the rest are still named.
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"tokens": {"hs256_secret": CHAT_SECRET}}, headers=admin())
    assert_error(r, 409, "secret_unreadable", field="push.apns.key_p8")
    assert "tokens.hs256_secret" not in r.json()["message"]
    assert HTTP.get(h.url("/v1/apps/chat"), headers=admin()).json()["default_locale"] == "pt-BR"   # nothing changed
    # Every secret again: stored under this key, and the app loads without a restart.
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"tokens": {"hs256_secret": CHAT_SECRET}, "push": body["push"], "default_locale": "en"},
                   headers=admin())
    assert r.status_code == 200 and r.json()["default_locale"] == "en", r.text
    assert HTTP.get(h.url("/readyz")).json()["apps_not_loaded"] == {}
    shown = HTTP.get(h.url("/v1/apps/chat"), headers=admin()).json()
    assert shown["loaded"] is True and "not_loaded_reason" not in shown, shown
    assert HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_token())).status_code == 200
    assert HTTP.get(h.url("/v1/jobs"), headers=bearer(CHAT_SERVER_KEY)).status_code == 200
    h.restart()
    assert HTTP.get(h.url("/readyz")).json()["apps_not_loaded"] == {}


def test_one_apps_cors_origins_open_only_its_own_answers(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double, cors_origins=["*"])
    zeta_key = "zeta-server-key-0123456789"
    r = HTTP.post(h.url("/v1/apps"), json={"id": "zeta", "tokens": {"hs256_secret": "zeta-secret-0123456789abcdef0123"},
                                           "server_keys": [zeta_key], "cors_origins": ["https://zeta.example"]}, headers=admin())
    assert r.status_code == 201, r.text
    zeta = jwt.encode({"sub": "zed", "sid": "zs1", "app": "zeta", "exp": int(time.time()) + 600},
                      "zeta-secret-0123456789abcdef0123", algorithm="HS256")

    def allowed(path, origin, headers=None, params=None):
        r = HTTP.get(h.url(path), headers={"Origin": origin, **(headers or {})}, params=params)
        return r.headers.get("access-control-allow-origin")
    evil = "https://evil.example"
    # Chat's "*" lets any page read chat's answers ...
    assert allowed("/v1/me/devices", evil, bearer(chat_token())) == evil
    assert allowed("/v1/jobs", evil, bearer(CHAT_SERVER_KEY)) == evil
    # ... and nobody else's: zeta's, the default app's, or an unauthenticated request's.
    assert allowed("/v1/me/devices", evil, bearer(zeta)) is None
    assert allowed("/v1/jobs", evil, bearer(zeta_key)) is None
    assert allowed("/v1/me/devices", evil, bearer(h.token(sub="dana", sid="ds1"))) is None
    assert allowed("/v1/jobs", evil, h.server_headers()) is None
    assert allowed("/healthz", evil) is None
    # Zeta's own origin, with zeta's credentials (header or query), still reads zeta's answers.
    assert allowed("/v1/me/devices", "https://zeta.example", bearer(zeta)) == "https://zeta.example"
    assert allowed("/v1/me/devices", "https://zeta.example", params={"access_token": zeta}) == "https://zeta.example"
    assert allowed("/v1/jobs", "https://zeta.example", bearer(zeta_key)) == "https://zeta.example"
    assert allowed("/v1/me/devices", "https://zeta.example", bearer(h.token(sub="dana", sid="ds1"))) is None
    # A preflight names no app: any app's list answers it; the request after it is judged by its app.
    r = HTTP.options(h.url("/v1/me/devices"), headers={"Origin": evil, "Access-Control-Request-Method": "GET"})
    assert r.status_code == 204 and r.headers.get("access-control-allow-origin") == evil


def test_the_vapid_public_key_route_serves_the_named_apps_key(herald_apps, provider_double):
    h = herald_apps
    key = ec.generate_private_key(ec.SECP256R1())
    scalar = base64.urlsafe_b64encode(key.private_numbers().private_value.to_bytes(32, "big")).rstrip(b"=").decode()
    public = base64.urlsafe_b64encode(key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)).rstrip(b"=").decode()
    create_chat(h, provider_double, push={"webpush": {"vapid_private_key": scalar, "subject": "mailto:ops@chat.example"}})
    r = HTTP.get(h.url("/v1/push/vapid-public-key"), params={"app": "chat"})
    assert r.status_code == 200 and r.json() == {"public_key": public}, r.text
    # The default app's key is HERALD_VAPID_*'s (the double's environment sets none): not chat's.
    default = HTTP.get(h.url("/v1/push/vapid-public-key"))
    assert default.status_code in (200, 404) and default.json().get("public_key") != public, default.text
    r = HTTP.post(h.url("/v1/apps"), json={"id": "zeta", "server_keys": ["zeta-server-key-0123456789"]}, headers=admin())
    assert r.status_code == 201, r.text
    assert_error(HTTP.get(h.url("/v1/push/vapid-public-key"), params={"app": "zeta"}), 404, "webpush_not_configured")
    assert_error(HTTP.get(h.url("/v1/push/vapid-public-key"), params={"app": "nope"}), 404, "not_found")
    assert_error(HTTP.get(h.url("/v1/push/vapid-public-key"), params={"app": "Bad_App"}), 400, "invalid_request", field="app")
    # Removing the key takes effect without a restart.
    assert HTTP.patch(h.url("/v1/apps/chat"), json={"push": {"webpush": None}}, headers=admin()).status_code == 200
    assert_error(HTTP.get(h.url("/v1/push/vapid-public-key"), params={"app": "chat"}), 404, "webpush_not_configured")


def test_a_sessionless_apps_standing_session_is_never_shown(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double, tokens={"hs256_secret": CHAT_SECRET, "issuer": CHAT_ISSUER, "session_claim": None})
    user = chat_token(sub="pat", sid=None)
    device = register(h, user, "ios", random_apns_token())
    stream = h.stream(token=user, params={"state": "background"})
    stream.ready()
    reach = HTTP.get(h.url("/v1/users/pat/reachability"), headers=bearer(CHAT_SERVER_KEY))
    assert reach.status_code == 200, reach.text
    assert [(d["device_id"], d["session_id"]) for d in reach.json()["devices"]] == [(device["id"], None)], reach.text
    assert all(s["session_id"] is None for s in reach.json()["sessions"]), reach.text
    r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": ["pat"]}, "kind": "k", "title": "Hi"},
                  headers=bearer(CHAT_SERVER_KEY))
    assert r.status_code == 201, r.text
    nid = r.json()["notifications"][0]["id"]

    def deliveries():
        answer = HTTP.get(h.url(f"/v1/notifications/{nid}/deliveries"), headers=bearer(CHAT_SERVER_KEY)).json()
        return answer if any(e.get("device_id") == device["id"] for e in answer["deliveries"]) else None
    answer = wait_for(deliveries, what="the device's delivery record")
    shown = [e["session_id"] for e in answer["deliveries"] + answer["targets"]]
    assert not any(s and "~" in s for s in shown), answer


def test_no_token_or_backend_of_another_app_can_take_a_sessionless_apps_standing_session(herald_apps, provider_double):
    # breaker10: a sessionless app's user binds to the standing session `~{app}~{user}`, a name a
    # token's sid could spell. A default-app token with sid `~chat~pat` registered a device under
    # it first, and chat's pat got 409 session_conflict on every registration from then on; the
    # default app's backend ending `~chat~quinn` (a sid Herald never saw) made every registration of
    # chat's quinn 401 session_ended ("sign in again", which gives a sessionless user no new sid).
    h = herald_apps
    create_chat(h, provider_double, tokens={"hs256_secret": CHAT_SECRET, "issuer": CHAT_ISSUER, "session_claim": None})
    squatter = h.token(sub="mallory", sid="~chat~pat")
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "ios", "token": random_apns_token()}, headers=bearer(squatter))
    assert_error(r, 401, "invalid_token")
    assert "~" in r.json()["message"], r.text
    r = HTTP.delete(h.url("/v1/sessions/~chat~quinn"), headers=h.server_headers())
    assert_error(r, 400, "invalid_request", field="sid")
    assert_error(HTTP.put(h.url("/v1/sessions/%7Echat%7Equinn"), json={"expires_at": None}, headers=h.server_headers()),
                 400, "invalid_request", field="sid")
    # Chat's users register as if nothing had been tried.
    register(h, chat_token(sub="pat", sid=None), "ios", random_apns_token())
    register(h, chat_token(sub="quinn", sid=None), "ios", random_apns_token())
    # A sid with a ~ further on is an ordinary sid.
    register(h, h.token(sub="mallory", sid="web~1"), "ios", random_apns_token())


def test_a_deleted_apps_providers_leave_readyz_and_metrics(herald_apps, provider_double):
    """breaker11: deleting an app closes its connections under the pushes still on them; those
    failures (and any degradation before) kept `webpush@chat` degraded on /readyz and /metrics
    until a restart, with nothing left that could clear it, and a new app of the id inherited it."""
    h, double = herald_apps, provider_double
    key = ec.generate_private_key(ec.SECP256R1())
    scalar = base64.urlsafe_b64encode(key.private_numbers().private_value.to_bytes(32, "big")).rstrip(b"=").decode()
    public = base64.urlsafe_b64encode(key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)).rstrip(b"=").decode()
    webpush = {"webpush": {"vapid_private_key": scalar, "subject": "mailto:ops@chat.example"}}

    def browsers(n):
        ids = []
        for i in range(n):
            sub = double.webpush_subscription(application_server_key=public)
            user = chat_token(sub=f"w{i}-{uuid.uuid4().hex[:6]}", sid=f"ws-{uuid.uuid4().hex[:8]}")
            r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "web", "subscription": {"endpoint": sub["endpoint"], "keys": sub["keys"]}},
                          headers=bearer(user))
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        return ids

    def push_to(ids):
        r = HTTP.post(h.url("/v1/push"), json={"device_ids": ids, "notification": {"title": "Pedido 77", "body": "Pago"}},
                      headers=bearer(CHAT_SERVER_KEY))
        assert r.status_code == 202 and r.json()["queued"] == len(ids), r.text

    def listed():
        body = HTTP.get(h.url("/readyz")).json()
        metrics = [line for line in HTTP.get(h.url("/metrics")).text.splitlines() if "@chat" in line]
        return {k: v for k, v in body["push"].items() if k.endswith("@chat")}, body["push_degraded"], metrics

    # A provider of the app degraded for good reasons: every connection dropped.
    create_chat(h, double, push=webpush)
    double.set_outcomes_all("webpush", [{"close": True, "forever": True}])
    push_to(browsers(3))
    wait_for(lambda: listed()[0].get("webpush@chat", "").startswith("degraded: "), 30, "webpush@chat degraded")
    assert HTTP.delete(h.url("/v1/apps/chat"), headers=admin()).status_code == 204
    assert listed() == ({}, {}, []), listed()

    # The same id again; its pushes are on the wire (answered 2 s late) when it is deleted.
    double.reset()
    logged = len(h.logs())
    create_chat(h, double, push=webpush)
    double.set_outcomes_all("webpush", [{"status": 201, "delay_ms": 2000, "forever": True}])
    push_to(browsers(4))
    wait_for(lambda: len(double.requests("webpush")) == 4, 10, "four pushes on the wire")
    assert HTTP.delete(h.url("/v1/apps/chat"), headers=admin()).status_code == 204
    # Herald's side of those requests ended at the delete; the double's ends 2 s after the send.
    wait_for(lambda: all(e["outcome"] is not None for e in double.requests("webpush")), 10, "the double answered")
    assert listed() == ({}, {}, []), listed()
    assert "the provider does not answer" not in h.logs()[logged:]


def test_an_app_sends_to_expo_without_an_access_token(herald_apps, provider_double):
    """breaker11: Expo needs no credential unless the project turned on enhanced push security,
    yet a stored app could only turn Expo on with an access token (400 push.expo.access_token)."""
    h, double = herald_apps, provider_double
    created = create_chat(h, double, push={"expo": {}})
    assert created["push"]["expo"] == {"access_token": None}, created
    assert HTTP.get(h.url("/v1/apps/chat"), headers=admin()).json()["push"]["expo"] == {"access_token": None}
    token = f"ExponentPushToken[{uuid.uuid4().hex[:20]}]"
    phone = register(h, chat_token(sub="ana", sid=f"cs-{uuid.uuid4().hex[:8]}"), "android", token)

    def push_and_wait(expected_state):
        r = HTTP.post(h.url("/v1/push"), json={"device_ids": [phone["id"]], "notification": {"title": "Pedido 77", "body": "Pago"}},
                      headers=bearer(CHAT_SERVER_KEY))
        assert r.status_code == 202, r.text
        job_id = r.json()["jobs"][0]["job_id"]

        def job():
            got = [j for s in ("done", "dead") for j in HTTP.get(h.url("/v1/jobs"), params={"state": s}, headers=bearer(CHAT_SERVER_KEY)).json()["jobs"]
                   if str(j["id"]) == str(job_id)]
            return got[0] if got and got[0]["state"] == expected_state else None
        return wait_for(job, 10, f"job {job_id} {expected_state}")

    push_and_wait("done")
    [sent] = [e for e in double.requests("expo") if isinstance(e["body"], list) and e["body"][0]["to"] == token]
    assert sent["status"] == 200 and "authorization" not in sent["headers"], sent
    # A token later is sent as the bearer; null turns Expo off for the app (never the environment's).
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"push": {"expo": {"access_token": "expo-robot-token-0123"}}}, headers=admin())
    assert r.status_code == 200 and set(r.json()["push"]["expo"]["access_token"]) == {"fingerprint", "set_at"}, r.text
    push_and_wait("done")
    sent = [e for e in double.requests("expo") if isinstance(e["body"], list) and e["body"][0]["to"] == token][-1]
    assert sent["headers"].get("authorization") == "Bearer expo-robot-token-0123", sent
    r = HTTP.patch(h.url("/v1/apps/chat"), json={"push": {"expo": None}}, headers=admin())
    assert r.status_code == 200 and r.json()["push"]["expo"] is None, r.text
    assert push_and_wait("dead")["dead_reason"].startswith("push_not_configured"), "no fallback to the environment's Expo"
    assert_error(HTTP.patch(h.url("/v1/apps/chat"), json={"push": {"expo": {"access_token": ""}}}, headers=admin()), 400, "invalid_request",
                 field="push.expo.access_token")
    assert_error(HTTP.patch(h.url("/v1/apps/chat"), json={"push": {"expo": {"token": "x"}}}, headers=admin()), 400, "invalid_request")
