"""The seed apps' findings of issue 14, end to end against the provider double:

- AP-4 (seed 004): `HERALD_PAYLOAD_ROOT_KEY` puts every push's data, Herald's own keys included,
  under one key — an object on APNs, one JSON string in `data[root]` on FCM; a call may send its
  data already namespaced;
- AP-6 (seed 002): audiences compare without case and staff-only destinations (`actionUrl`
  prefixes) are never pushed;
- seed 000: `PUT /v1/users/{id}` sets a user's language, durable, the language of a device that
  registered without one (notifications and the test push), before the catalog's default;
- seed 003: the compatibility route's installation conflict is 403 `forbidden`.
"""
import json
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, Herald, assert_error, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import provider_double, provider_double_module, random_apns_token  # noqa: E402,F401

HTTP = httpx.Client(timeout=10)
LOGISTICS = ROOT / "examples" / "catalogs" / "logistics.json"


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


def auth(access) -> dict:
    return {"Authorization": f"Bearer {access}"}


def fcm_token() -> str:
    return f"f{uuid.uuid4().hex[:12]}:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7_B338q"


class Device:
    """A sign-in of `user` that registered a push device (no stream: every notification pushes)."""

    def __init__(self, h: Herald, user: str, platform: str = "ios", **extra):
        self.user, self.platform = user, platform
        self.access = h.token(sub=user, sid=f"s-{uuid.uuid4().hex[:10]}")
        self.token = random_apns_token() if platform == "ios" else fcm_token()
        r = HTTP.post(h.url("/v1/me/devices"), json={"platform": platform, "token": self.token, **extra},
                      headers=auth(self.access))
        assert r.status_code == 201, r.text
        self.id = r.json()["id"]

    def requests(self, double, count=1, timeout=10.0) -> list:
        """This device's finished requests at the double, once there are `count`."""
        provider = "apns" if self.platform == "ios" else "fcm"
        deadline = time.monotonic() + timeout
        while True:
            got = [e for e in double.requests(provider) if e["outcome"] is not None and (
                e["path"].endswith("/3/device/" + self.token) if provider == "apns"
                else ((e.get("body") or {}).get("message") or {}).get("token") == self.token)]
            if len(got) >= count or time.monotonic() > deadline:
                assert len(got) >= count, got
                return got
            time.sleep(0.03)


def user_id() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def notify(h, users, expect=201, **body):
    body.setdefault("kind", "chat.message")
    body.setdefault("title", "New message")
    r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": users}, **body}, headers=h.server_headers())
    assert r.status_code == expect, r.text
    return r.json()


def outcome(h, notification_id, device_id, wanted, timeout=10.0) -> dict:
    """The delivery record once the device's outcome is one of `wanted`."""
    deadline = time.monotonic() + timeout
    while True:
        r = HTTP.get(h.url(f"/v1/notifications/{notification_id}/deliveries"), headers=h.server_headers())
        assert r.status_code == 200, r.text
        target = next((t for t in r.json()["targets"] if t.get("device_id") == device_id), None)
        if (target and target["outcome"] in wanted) or time.monotonic() > deadline:
            assert target and target["outcome"] in wanted, (wanted, r.json())
            return r.json()
        time.sleep(0.05)


def put_user(h, uid, body, headers=None):
    return HTTP.put(h.url(f"/v1/users/{uid}"), json=body, headers=h.server_headers() if headers is None else headers)


# --- AP-4: the payload root key ------------------------------------------------------------------


def test_root_key_holds_the_data_and_heralds_own_keys_on_apns_and_fcm(herald_factory, provider_double):
    double = provider_double
    h = herald_factory(**double.herald_env(), HERALD_PAYLOAD_ROOT_KEY="respondo")
    user = user_id()
    phone, pixel = Device(h, user, "ios"), Device(h, user, "android")
    link = "respondo://conversation/a1"
    answer = notify(h, [user], kind="message", title="Operatore", body="Ciao", track_opens=True,
                    data={"type": "message", "conversation_id": "a1", "deep_link": link})
    [n] = answer["notifications"]
    for device in (phone, pixel):
        outcome(h, n["id"], device.id, {"sent"})

    [apns] = phone.requests(double)
    body = apns["body"]
    # Seed 004: userInfo["respondo"] is an object; only aps beside it.
    assert set(body) == {"aps", "respondo"}, body
    assert body["aps"]["alert"] == {"title": "Operatore", "body": "Ciao"}, body
    inner = body["respondo"]
    assert inner["type"] == "message" and inner["conversation_id"] == "a1" and inner["deep_link"] == link, inner
    assert inner["kind"] == "message" and inner["notification_id"] == n["id"], inner
    assert inner["delivery_id"].startswith("dlv"), inner

    [fcm] = pixel.requests(double)
    message = fcm["body"]["message"]
    assert message["notification"] == {"title": "Operatore", "body": "Ciao"}, message
    # FCM data values are strings: the whole object is one JSON string under the root key.
    assert set(message["data"]) == {"respondo"}, message["data"]
    fcm_inner = json.loads(message["data"]["respondo"])
    assert {k: v for k, v in fcm_inner.items() if k != "delivery_id"} == \
        {k: v for k, v in inner.items() if k != "delivery_id"}, (fcm_inner, inner)
    assert fcm_inner["delivery_id"].startswith("dlv") and fcm_inner["delivery_id"] != inner["delivery_id"]

    # The open beacon takes the delivery id the app found under the root key.
    r = HTTP.post(h.url(f"/v1/deliveries/{inner['delivery_id']}/opened"), headers=auth(phone.access))
    assert r.status_code == 200, r.text


def test_a_wakeup_carries_the_cursor_inside_the_root_key(herald_factory, provider_double):
    double = provider_double
    h = herald_factory(**double.herald_env(), HERALD_PAYLOAD_ROOT_KEY="respondo")
    user = user_id()
    phone = Device(h, user, "ios")
    n = notify(h, [user], push={"type": "wakeup"}, data={"message_id": "m1"})["notifications"][0]
    outcome(h, n["id"], phone.id, {"sent"})
    [entry] = phone.requests(double)
    assert entry["headers"]["apns-push-type"] == "background", entry["headers"]
    assert entry["body"] == {"aps": {"content-available": 1},
                             "respondo": {"message_id": "m1", "kind": "chat.message", "notification_id": n["id"],
                                          "cursor": n["event_id"]}}, entry["body"]


def test_data_sent_already_namespaced_is_accepted_and_objects_elsewhere_are_400(herald_factory, provider_double):
    double = provider_double
    h = herald_factory(**double.herald_env(), HERALD_PAYLOAD_ROOT_KEY="respondo")
    user = user_id()
    phone = Device(h, user, "ios")
    n = notify(h, [user], data={"respondo": {"type": "message", "message_id": "m1"}, "campaign": "c9"})["notifications"][0]
    outcome(h, n["id"], phone.id, {"sent"})
    [entry] = phone.requests(double)
    assert entry["body"]["respondo"] == {"type": "message", "message_id": "m1", "campaign": "c9", "kind": "chat.message",
                                         "notification_id": n["id"]}, entry["body"]
    # The inbox keeps the flat data the push carried.
    r = HTTP.get(h.url("/v1/me/notifications"), headers=auth(phone.access))
    assert r.status_code == 200 and r.json()["notifications"][0]["data"] == {"type": "message", "message_id": "m1",
                                                                           "campaign": "c9"}, r.text
    for data, field in [({"other": {"a": "b"}}, "data.other"),
                        ({"respondo": {"type": "a"}, "type": "b"}, "data.respondo.type"),
                        ({"respondo": {"a": 1}}, None)]:
        r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": [user]}, "kind": "k", "title": "t",
                                                       "data": data}, headers=h.server_headers())
        assert_error(r, 400, "invalid_request", field)
    # Without a root key, an object is refused wherever it is.
    plain = herald_factory(**double.herald_env())
    r = HTTP.post(plain.url("/v1/notifications"), json={"recipients": {"user_ids": [user]}, "kind": "k", "title": "t",
                                                       "data": {"respondo": {"a": "b"}}}, headers=plain.server_headers())
    assert_error(r, 400, "invalid_request", "data.respondo")


def test_the_test_push_and_direct_pushes_use_the_root_key_too(herald_factory, provider_double):
    double = provider_double
    h = herald_factory(**double.herald_env(), HERALD_PAYLOAD_ROOT_KEY="respondo")
    phone = Device(h, user_id(), "ios", locale="en-US")
    r = HTTP.post(h.url(f"/v1/me/devices/{phone.id}/test"), headers=auth(phone.access))
    assert r.status_code == 200, r.text
    [entry] = phone.requests(double)
    assert entry["body"]["respondo"] == {"kind": "test"} and set(entry["body"]) == {"aps", "respondo"}, entry["body"]
    r = HTTP.post(h.url("/v1/push"), json={"device_ids": [phone.id], "notification": {"body": "hi", "data": {"x": "1"}}},
                  headers=h.server_headers())
    assert r.status_code == 202, r.text
    _, direct = phone.requests(double, count=2)
    assert direct["body"] == {"aps": {"alert": {"body": "hi"}}, "respondo": {"x": "1"}}, direct["body"]


# --- AP-6: exclusions ---------------------------------------------------------------------------


def test_staff_audiences_in_any_case_and_staff_destinations_are_never_pushed(herald_factory, provider_double):
    double = provider_double
    h = herald_factory(**double.herald_env(), HERALD_CATALOG_PATH=LOGISTICS)
    user = user_id()
    phone = Device(h, user, "ios", locale="es")
    pushed = []
    for audience, url, wanted in [("STAFF", "/account/freights/7", "skipped_audience"),
                                  ("Staff", "/account/freights/7", "skipped_audience"),
                                  ("everyone", "/orders/1528", "skipped_audience"),
                                  ("everyone", "/inbox?conversation=4", "skipped_audience"),
                                  ("everyone", "/finanzas/fuentes", "skipped_audience"),
                                  ("everyone", "/account/storage/3", "sent"),
                                  ("everyone", "/account/freights/7", "sent")]:
        n = notify(h, [user], kind="CLIENT_NOTICE", title="Aviso", audience=audience,
                   data={"actionUrl": url})["notifications"][0]
        record = outcome(h, n["id"], phone.id, {wanted})
        if wanted == "sent":
            pushed.append(url)
        else:
            [skip] = [d for d in record["deliveries"] if d.get("device_id") == phone.id]
            assert "not pushed by this app" in (skip.get("detail") or ""), record
        # Excluded or not, the notification is in the inbox.
        r = HTTP.get(h.url("/v1/me/notifications"), params={"limit": 1}, headers=auth(phone.access))
        assert r.status_code == 200 and r.json()["notifications"][0]["id"] == n["id"], r.text
    got = [e["body"]["actionUrl"] for e in phone.requests(double, count=len(pushed))]
    assert got == pushed, got


# --- seed 000: the user's language --------------------------------------------------------------


def test_users_language_is_set_read_cleared_and_survives_a_restart(herald_factory):
    h = herald_factory()
    uid = user_id()
    r = HTTP.get(h.url(f"/v1/users/{uid}"), headers=h.server_headers())
    assert r.status_code == 200 and r.json() == {"user_id": uid, "locale": None, "updated_at": None}, r.text
    r = put_user(h, uid, {"locale": "pt-br"})
    assert r.status_code == 201 and r.json()["locale"] == "pt-BR" and r.json()["user_id"] == uid, r.text
    r = put_user(h, uid, {"locale": "es-419"})
    assert r.status_code == 200 and r.json()["locale"] == "es-419", r.text
    h.restart()
    r = HTTP.get(h.url(f"/v1/users/{uid}"), headers=h.server_headers())
    assert r.status_code == 200 and r.json()["locale"] == "es-419" and r.json()["updated_at"], r.text
    r = put_user(h, uid, {"locale": None})
    assert r.status_code == 200 and r.json()["locale"] is None, r.text


@pytest.mark.parametrize("body,field", [
    ({}, "locale"),
    ({"locale": "not a tag"}, "locale"),
    ({"locale": 7}, "locale"),
    ({"locale": "pt-BR", "lang": "pt"}, "lang"),
])
def test_bad_user_bodies_are_400_and_change_nothing(herald_factory, body, field):
    h = herald_factory()
    uid = user_id()
    assert put_user(h, uid, {"locale": "en"}).status_code == 201
    assert_error(put_user(h, uid, body), 400, "invalid_request", field)
    assert HTTP.get(h.url(f"/v1/users/{uid}"), headers=h.server_headers()).json()["locale"] == "en"


def test_user_routes_need_the_server_key_and_a_valid_id(herald_factory):
    h = herald_factory()
    assert_error(put_user(h, "u1", {"locale": "en"}, headers={}), 401)
    assert_error(HTTP.get(h.url("/v1/users/u1"), headers=auth(h.token(sub="u1"))), 401)
    assert_error(put_user(h, "has%20space", {"locale": "en"}), 400, "invalid_request", "id")


def test_a_device_without_a_locale_gets_the_users_language_before_the_default(herald_factory, provider_double):
    double = provider_double
    h = herald_factory(**double.herald_env())   # no catalog: default language en
    user, other = user_id(), user_id()
    bare, spanish, stranger = Device(h, user, "ios"), Device(h, user, "android", locale="es"), Device(h, other, "ios")
    assert put_user(h, user, {"locale": "pt-BR"}).status_code == 201
    title = {"en": "Order paid", "pt-BR": "Pedido pago", "es": "Pedido pagado"}
    n = notify(h, [user, other], kind="custom.notice", title=title)["notifications"]
    for record, device in [(n[0], bare), (n[0], spanish), (n[1], stranger)]:
        outcome(h, record["id"], device.id, {"sent"})
    assert bare.requests(double)[0]["body"]["aps"]["alert"]["title"] == "Pedido pago"
    assert spanish.requests(double)[0]["body"]["message"]["notification"]["title"] == "Pedido pagado"
    assert stranger.requests(double)[0]["body"]["aps"]["alert"]["title"] == "Order paid"   # the default language

    # The test push too (seed 000: "without it, the user's profile language").
    r = HTTP.post(h.url(f"/v1/me/devices/{bare.id}/test"), headers=auth(bare.access))
    assert r.status_code == 200, r.text
    _, test = bare.requests(double, count=2)
    assert test["body"]["aps"]["alert"]["body"].startswith("As notificações estão funcionando"), test["body"]


# --- seed 003: compatibility error codes --------------------------------------------------------


def test_seed003_installation_conflict_is_403_forbidden(herald_factory):
    h = herald_factory()
    alice, bob = h.token(sub="alice", sid="a1"), h.token(sub="bob", sid="b1")
    token = fcm_token()
    r = HTTP.post(h.url("/v1/devices"), json={"token": token, "platform": "fcm", "device_id": "dev-A"}, headers=auth(alice))
    assert r.status_code == 204, r.text
    r = HTTP.post(h.url("/v1/devices"), json={"token": token, "platform": "fcm", "device_id": "dev-B"}, headers=auth(bob))
    assert_error(r, 403, "forbidden")
    # Herald's own route keeps its precise code.
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "android", "token": token, "installation_id": "dev-B"},
                  headers=auth(bob))
    assert_error(r, 403, "installation_mismatch")


def test_expo_pushes_nest_the_data_under_the_root_key(herald_factory, provider_double):
    double = provider_double
    double.expo_access_token("expo-access-seeds")
    h = herald_factory(**double.herald_env(), HERALD_EXPO_ACCESS_TOKEN="expo-access-seeds", HERALD_PAYLOAD_ROOT_KEY="respondo")
    user = user_id()
    access = h.token(sub=user, sid=f"s-{uuid.uuid4().hex[:10]}")
    token = f"ExponentPushToken[{uuid.uuid4().hex[:22]}]"
    r = HTTP.post(h.url("/v1/users/me/device-tokens"), json={"token": token, "platform": "android"}, headers=auth(access))
    assert r.status_code == 201, r.text
    device_id = r.json()["id"]
    n = notify(h, [user], title="Operatore", data={"conversation_id": "a1"})["notifications"][0]
    outcome(h, n["id"], device_id, {"sent"})
    sent = wait_until(lambda: [m for e in double.requests("expo") if e["outcome"] is not None and isinstance(e["body"], list)
                               for m in e["body"] if m.get("to") == token], what="the Expo push", interval=0.03)
    [message] = sent
    assert message["data"] == {"respondo": {"conversation_id": "a1", "kind": "chat.message",
                                            "notification_id": n["id"]}}, message


def test_the_inbox_falls_back_to_the_users_language_too(herald_factory):
    h = herald_factory()
    user = user_id()
    access = h.token(sub=user, sid="s1")
    notify(h, [user], title={"en": "Order paid", "pt-BR": "Pedido pago"})

    def title(**kwargs):
        r = HTTP.get(h.url("/v1/me/notifications"), headers={**auth(access), **kwargs.pop("headers", {})}, params=kwargs)
        assert r.status_code == 200, r.text
        return r.json()["notifications"][0]["title"]

    assert title() == "Order paid"
    assert put_user(h, user, {"locale": "pt-BR"}).status_code == 201
    assert title() == "Pedido pago"
    # What the client asks for still wins.
    assert title(locale="en") == "Order paid"
    assert title(headers={"Accept-Language": "en-US"}) == "Order paid"
