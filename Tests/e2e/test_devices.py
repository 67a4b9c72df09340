"""The device registry (DV-1, DV-2, DV-3, DV-5): `POST|GET /v1/me/devices`,
`DELETE /v1/me/devices/{id}`, and the compatibility routes of seeds 002 and 003."""
import json
import re
import time
import uuid
from datetime import datetime, timezone

import httpx
import pytest

from conftest import Herald
from conftest import assert_error, web_push_token

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
DEVICE_KEYS = {"id", "platform", "provider", "token", "environment", "locale", "app_version", "device_name",
               "installation_id", "created_at", "last_seen_at", "current", "active"}
APNS = "a1b2c3d4e5f60718" * 4          # 64 hex digits, as iOS hands them out

# One client for the module: a new httpx client per request costs ~50 ms (its TLS context).
HTTP = httpx.Client(timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One herald for the many stateless validation cases; each case is its own user."""
    h = Herald({}, tmp_path_factory.mktemp("shared-herald"))
    yield h
    h.stop(wait=False)


def fresh_user(h, sid=None):
    # Each user its own sid: a sid names one user's session (another user's is 409 session_conflict).
    return h.token(sub=f"u-{uuid.uuid4().hex[:12]}", sid=sid or f"s-{uuid.uuid4().hex[:10]}")


def fcm(tag="") -> str:
    """A realistic, unique FCM registration token (printable ASCII with `:`, `-`, `_`)."""
    return f"d{tag}{uuid.uuid4().hex[:10]}:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7_B338qju59zJMjw2D"


def auth(token) -> dict:
    return {"Authorization": f"Bearer {token}"}


def register(h, access, expect=None, /, path="/v1/me/devices", **body):
    r = HTTP.post(h.url(path), json=body, headers=auth(access), timeout=10)
    if expect is not None:
        assert r.status_code == expect, r.text
    return r


def devices(h, token) -> list:
    r = HTTP.get(h.url("/v1/me/devices"), headers=auth(token), timeout=10)
    assert r.status_code == 200, r.text
    body = r.json()
    return body["devices"] if isinstance(body, dict) else body


def delete(h, token, path, **kwargs):
    return HTTP.request("DELETE", h.url(path), headers=auth(token), timeout=10, **kwargs)




def parse_time(value) -> datetime:
    assert isinstance(value, str) and RFC3339.match(value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def assert_device(d):
    assert DEVICE_KEYS <= set(d), d
    assert isinstance(d["id"], str) and d["id"]
    now = datetime.now(timezone.utc)
    for key in ("created_at", "last_seen_at"):
        assert abs((parse_time(d[key]) - now).total_seconds()) < 120, d
    assert parse_time(d["last_seen_at"]) >= parse_time(d["created_at"]), d
    assert isinstance(d["current"], bool) and isinstance(d["active"], bool)
    return d


def by_id(items) -> dict:
    return {d["id"]: d for d in items}


def masked(token: str) -> str:
    return f"{token[:4]}…{token[-4:]}"


# --- DV-1: registration ---------------------------------------------------------------------


def test_first_registration_is_201_then_200_for_the_same_token(herald):
    tok = herald.token(sub="alice", sid="phone-1")
    body = {"platform": "ios", "token": APNS, "locale": "en-US", "app_version": "3.2.0",
            "device_name": "Alice's iPhone", "installation_id": "inst-1"}
    r = register(herald, tok, 201, **body)
    assert r.headers["content-type"].startswith("application/json")
    first = assert_device(r.json())
    assert first["platform"] == "ios" and first["provider"] == "apns"
    assert first["token"] == APNS                       # in full in the registration answer
    assert first["environment"] == "production"          # the iOS default
    assert (first["locale"], first["app_version"], first["device_name"], first["installation_id"]) == \
        ("en-US", "3.2.0", "Alice's iPhone", "inst-1")
    assert first["current"] is True and first["active"] is True

    time.sleep(0.05)
    r = register(herald, tok, 200, **dict(body, app_version="3.3.0", locale="de-DE"))
    second = assert_device(r.json())
    assert second["id"] == first["id"]
    assert second["created_at"] == first["created_at"]
    assert parse_time(second["last_seen_at"]) > parse_time(first["last_seen_at"])
    assert second["app_version"] == "3.3.0" and second["locale"] == "de-DE"
    assert second["token"] == APNS and second["current"] is True

    listed = devices(herald, tok)
    assert len(listed) == 1 and listed[0]["id"] == first["id"]


def test_same_token_from_another_session_of_the_same_user_is_one_row(herald):
    token = fcm()
    first = register(herald, herald.token(sid="s1"), 201, platform="android", token=token).json()
    second = register(herald, herald.token(sid="s2"), 200, platform="android", token=token).json()
    assert second["id"] == first["id"] and second["current"] is True
    listed = devices(herald, herald.token(sid="s2"))
    assert [d["id"] for d in listed] == [first["id"]] and listed[0]["current"] is True
    # it is now bound to s2, so s1 no longer sees it as its own
    assert devices(herald, herald.token(sid="s1"))[0]["current"] is False


@pytest.mark.parametrize("platform,token,provider,environment", [
    ("ios", APNS, "apns", "production"),
    ("android", "fcm-token-android-0001", "fcm", None),
    ("web", web_push_token("https://fcm.googleapis.com/fcm/send/abc123:def"), "webpush", None),
])
def test_provider_defaults_per_platform(shared, platform, token, provider, environment):
    d = register(shared, fresh_user(shared), 201, platform=platform, token=token).json()
    assert (d["platform"], d["provider"], d["environment"]) == (platform, provider, environment)
    assert d["token"] == token
    assert (d["locale"], d["app_version"], d["device_name"], d["installation_id"]) == (None, None, None, None)


def test_ios_app_may_register_an_fcm_token(herald):
    token = fcm("ios")                                   # not hex: only valid because provider is fcm
    d = register(herald, herald.token(), 201, platform="ios", provider="fcm", token=token).json()
    assert (d["platform"], d["provider"], d["token"]) == ("ios", "fcm", token)
    assert d["environment"] == "production"
    # without provider the same token is an APNs token, and not hex: the 400 names the fix
    access = herald.token(sub="ios-fcm", sid="s2")
    body = assert_error(register(herald, access, platform="ios", token=token), 400, "invalid_request", "token")
    assert '"provider": "fcm"' in body["message"] and "FCM registration token" in body["message"], body
    # the same with provider apns said outright; nothing is stored either way
    body = assert_error(register(herald, access, platform="ios", provider="apns", token=token), 400, "invalid_request", "token")
    assert '"provider": "fcm"' in body["message"], body
    assert devices(herald, access) == []
    # a token that is merely not hex gets the APNs rule, not the FCM hint
    body = assert_error(register(herald, access, platform="ios", token="zz" * 40), 400, "invalid_request", "token")
    assert "fcm" not in body["message"].lower() and "hex" in body["message"], body


def test_one_fcm_token_under_two_platform_labels_is_one_device(herald):
    # The provider's address is the device: labelled ios, then android, it is one row, pushed once,
    # and another user's app must pass the installation check to take it.
    alice = herald.token(sub="alice", sid="a1")
    token = fcm("relabelled")
    first = register(herald, alice, 201, platform="ios", provider="fcm", token=token, installation_id="inst-1").json()
    r = register(herald, herald.token(sub="bob", sid="b1"), platform="android", token=token, installation_id="inst-2")
    assert_error(r, 403, "installation_mismatch")
    again = register(herald, alice, 200, platform="android", token=token, installation_id="inst-1").json()
    assert again["id"] == first["id"] and again["platform"] == "android"
    assert [d["id"] for d in devices(herald, alice)] == [first["id"]]


def test_a_token_moving_from_apns_to_fcm_on_ios_is_relabelled(herald):
    # The same string, first as an APNs token, then (the app moved to Firebase) as an FCM token on
    # the same platform: one device, its provider changed, never a 500 from the old unique key.
    access = herald.token(sub="mover", sid="m1")
    first = register(herald, access, 201, platform="ios", token=APNS).json()
    again = register(herald, access, 200, platform="ios", provider="fcm", token=APNS).json()
    assert again["id"] == first["id"] and again["provider"] == "fcm"
    assert [d["id"] for d in devices(herald, access)] == [first["id"]]


def test_explicit_matching_providers_and_sandbox_environment(herald):
    d = register(herald, herald.token(sid="s1"), 201, platform="ios", provider="apns", token=APNS,
                 environment="sandbox").json()
    assert (d["provider"], d["environment"]) == ("apns", "sandbox")
    d = register(herald, herald.token(sid="s1"), 201, platform="android", provider="fcm", token=fcm()).json()
    assert d["provider"] == "fcm"
    d = register(herald, herald.token(sid="s1"), 201, platform="web", provider="webpush", token=web_push_token()).json()
    assert d["provider"] == "webpush"


@pytest.mark.parametrize("platform,provider,token", [
    ("android", "apns", APNS),
    ("android", "webpush", "fcm-token-0001"),
    ("ios", "webpush", APNS),
    ("ios", "gcm", APNS),
    ("android", "", "fcm-token-0001"),
    ("android", 1, "fcm-token-0001"),
])
def test_provider_that_cannot_deliver_to_the_platform_is_400(shared, platform, provider, token):
    tok = fresh_user(shared)
    r = register(shared, tok, platform=platform, provider=provider, token=token)
    assert_error(r, 400, "invalid_request", "provider")
    assert devices(shared, tok) == []


@pytest.mark.parametrize("raw,normalised", [
    ("pt_br", "pt-BR"), ("pt-br", "pt-BR"), ("EN-us", "en-US"), ("en", "en"), ("es-419", "es-419"),
    ("zh-hant-tw", "zh-Hant-TW"), ("fil", "fil"),
])
def test_locale_is_normalised(shared, raw, normalised):
    tok = fresh_user(shared)
    d = register(shared, tok, 201, platform="android", token=fcm(), locale=raw).json()
    assert d["locale"] == normalised
    assert devices(shared, tok)[0]["locale"] == normalised


@pytest.mark.parametrize("raw", ["xx_yy_zz", "en-US-Latn", "en-u", "x-private", "en--us"])
def test_a_locale_that_is_not_a_well_formed_tag_is_400(shared, raw):
    tok = fresh_user(shared)
    assert_error(register(shared, tok, platform="android", token=fcm(), locale=raw), 400, "invalid_request", "locale")
    assert devices(shared, tok) == []


def test_limits_at_their_boundaries_are_accepted(herald):
    tok = herald.token(sid="s1")
    for token in ("ab" * 8, "AB" * 100, "0123456789ABCDEF"):           # 16 and 200 hex digits, upper case
        register(herald, tok, 201, platform="ios", token=token)
    long_fcm = "x" * 4096
    d = register(herald, tok, 201, platform="android", token=long_fcm).json()
    assert d["token"] == long_fcm
    d = register(herald, tok, 201, platform="web", token=web_push_token(), app_version="v" * 64, device_name="n" * 128,
                 installation_id="i" * 128).json()
    assert (d["app_version"], d["device_name"], d["installation_id"]) == ("v" * 64, "n" * 128, "i" * 128)


# --- DV-1: ownership moves, and the installation guard (seed 003) -------------------------------


@pytest.mark.parametrize("stored,caller", [(None, None), ("inst-1", "inst-1"), (None, "inst-2")])
def test_token_moves_to_another_user(herald, stored, caller):
    alice, bob = herald.token(sub="alice", sid="a1"), herald.token(sub="bob", sid="b1")
    token = fcm()
    extra_a = {"installation_id": stored} if stored else {}
    extra_b = {"installation_id": caller} if caller else {}
    original = register(herald, alice, 201, platform="android", token=token, **extra_a).json()
    moved = register(herald, bob, 200, platform="android", token=token, **extra_b).json()
    assert moved["token"] == token and moved["current"] is True and moved["active"] is True
    assert moved["installation_id"] == (caller or stored)
    assert devices(herald, alice) == []
    listed = devices(herald, bob)
    assert len(listed) == 1 and listed[0]["id"] == moved["id"] and listed[0]["current"] is True
    assert listed[0]["token"] == masked(token)
    assert original["id"] not in {d["id"] for d in devices(herald, alice)}


def test_moved_token_replaces_the_new_owners_earlier_device_of_that_platform(herald):
    alice, bob = herald.token(sub="alice", sid="a1"), herald.token(sub="bob", sid="b1")
    shared = fcm("shared")
    register(herald, alice, 201, platform="android", token=shared, installation_id="inst-1")
    register(herald, bob, 201, platform="android", token=fcm("bob"))
    moved = register(herald, bob, 200, platform="android", token=shared, installation_id="inst-1").json()
    assert [d["id"] for d in devices(herald, bob)] == [moved["id"]]


@pytest.mark.parametrize("caller", ["inst-2", None])
def test_foreign_installation_id_is_403_and_changes_nothing(herald, caller):
    alice, bob = herald.token(sub="alice", sid="a1"), herald.token(sub="bob", sid="b1")
    token = fcm()
    register(herald, alice, 201, platform="android", token=token, installation_id="inst-1",
             app_version="1.0", locale="en")
    bobs_own = register(herald, bob, 201, platform="android", token=fcm("bob")).json()
    before = devices(herald, alice)
    time.sleep(0.05)
    body = {"platform": "android", "token": token, "app_version": "6.6.6", "locale": "ru", "device_name": "bob's"}
    if caller:
        body["installation_id"] = caller
    r = register(herald, bob, **body)
    assert_error(r, 403, "installation_mismatch")
    # nothing changed: alice still owns it, untouched (last_seen_at included)
    assert devices(herald, alice) == before
    assert before[0]["app_version"] == "1.0" and before[0]["installation_id"] == "inst-1"
    # and bob's earlier android device was not rotated away by the refused registration
    assert [d["id"] for d in devices(herald, bob)] == [bobs_own["id"]]


def test_same_user_from_the_same_installation_keeps_its_device(herald):
    tok = herald.token(sub="alice", sid="a1")
    token = fcm()
    first = register(herald, tok, 201, platform="android", token=token, installation_id="inst-1").json()
    again = register(herald, herald.token(sub="alice", sid="a2"), 200, platform="android", token=token,
                     installation_id="inst-1").json()
    assert again["id"] == first["id"]


# --- DV-1: rotation ---------------------------------------------------------------------------


def test_rotation_drops_the_sessions_earlier_token_of_the_same_platform(herald):
    s1, s2 = herald.token(sid="s1"), herald.token(sid="s2")
    old = register(herald, s1, 201, platform="android", token=fcm("old")).json()
    ios = register(herald, s1, 201, platform="ios", token=APNS).json()
    other_session = register(herald, s2, 201, platform="android", token=fcm("s2")).json()
    new_token = fcm("new")
    new = register(herald, s1, 201, platform="android", token=new_token).json()
    listed = by_id(devices(herald, s1))
    assert set(listed) == {new["id"], ios["id"], other_session["id"]}
    assert old["id"] not in listed
    assert listed[new["id"]]["token"] == masked(new_token)
    # re-registering the same token is not a rotation: nothing else goes
    register(herald, s1, 200, platform="android", token=new_token)
    assert set(by_id(devices(herald, s1))) == {new["id"], ios["id"], other_session["id"]}
    # a new iOS token in s1 drops only the old iOS device
    ios2 = register(herald, s1, 201, platform="ios", token="cd" * 32).json()
    assert set(by_id(devices(herald, s1))) == {new["id"], ios2["id"], other_session["id"]}


# --- DV-3 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path,body", [
    ("/v1/me/devices", {"platform": "android", "token": "fcm-token-0001"}),
    ("/v1/devices", {"platform": "fcm", "token": "fcm-token-0001", "device_id": "d1"}),
    ("/v1/users/me/device-tokens", {"platform": "android", "token": "fcm-token-0001"}),
])
def test_token_without_session_cannot_register(herald, path, body):
    r = register(herald, herald.token(sub="alice", sid=None), path=path, **body)
    assert_error(r, 403, "session_required")
    assert devices(herald, herald.token(sub="alice", sid="s1")) == []


def test_registration_needs_a_valid_access_token(herald):
    r = HTTP.post(herald.url("/v1/me/devices"), json={"platform": "android", "token": "fcm-1"}, timeout=10)
    assert_error(r, 401, "invalid_token")
    r = register(herald, herald.token(ttl=-3600), platform="android", token="fcm-1")
    assert_error(r, 401, "invalid_token")
    assert_error(HTTP.get(herald.url("/v1/me/devices"), timeout=10), 401, "invalid_token")
    assert devices(herald, herald.token()) == []


# --- DV-2: list and delete ----------------------------------------------------------------------


def test_list_masks_tokens(herald):
    tok = herald.token(sid="s1")
    long_token = "abcdefghijklmnopqrstuvwxyz0123"
    register(herald, tok, 201, platform="android", token=long_token)
    register(herald, tok, 201, platform="ios", token=APNS)
    r = HTTP.get(herald.url("/v1/me/devices"), headers=auth(tok), timeout=10)
    assert long_token not in r.text and APNS not in r.text
    tokens = {d["platform"]: d["token"] for d in devices(herald, tok)}
    assert tokens == {"android": "abcd…0123", "ios": masked(APNS)}


@pytest.mark.parametrize("short", ["abcd1234", "x", "k9Z"])
def test_list_masks_short_tokens_fully(herald, short):
    tok = herald.token(sid="s1")
    register(herald, tok, 201, platform="android", token=short)
    shown = devices(herald, tok)[0]["token"]
    assert isinstance(shown, str) and shown
    assert not any(c in shown for c in short), shown


def test_current_marks_the_calling_sessions_device_only(herald):
    s1, s2, s3 = (herald.token(sub="alice", sid=s) for s in ("s1", "s2", "s3"))
    d1 = register(herald, s1, 201, platform="android", token=fcm("1")).json()
    d2 = register(herald, s2, 201, platform="ios", token=APNS).json()
    for caller, current in ((s1, d1["id"]), (s2, d2["id"]), (s3, None)):
        listed = devices(herald, caller)
        assert len(listed) == 2
        for d in listed:
            assert_device(d)
            assert d["current"] is (d["id"] == current), (d, current)
            assert d["active"] is True
    # a token without a session is no session's: nothing is current
    assert [d["current"] for d in devices(herald, herald.token(sub="alice", sid=None))] == [False, False]
    # another user sees none of them
    assert devices(herald, herald.token(sub="bob", sid="b1")) == []


def test_delete_device(herald):
    alice, bob = herald.token(sub="alice", sid="a1"), herald.token(sub="bob", sid="b1")
    a_android = register(herald, alice, 201, platform="android", token=fcm("a")).json()
    a_ios = register(herald, alice, 201, platform="ios", token=APNS).json()
    b_dev = register(herald, bob, 201, platform="android", token=fcm("b")).json()

    r = delete(herald, alice, f"/v1/me/devices/{a_android['id']}")
    assert r.status_code == 204 and r.content == b""
    assert [d["id"] for d in devices(herald, alice)] == [a_ios["id"]]
    assert_error(delete(herald, alice, f"/v1/me/devices/{a_android['id']}"), 404)
    # another user's device is "not found", and it survives
    assert_error(delete(herald, alice, f"/v1/me/devices/{b_dev['id']}"), 404)
    assert [d["id"] for d in devices(herald, bob)] == [b_dev["id"]]
    assert_error(delete(herald, alice, f"/v1/me/devices/{uuid.uuid4()}"), 404)
    assert_error(HTTP.delete(herald.url(f"/v1/me/devices/{a_ios['id']}"), timeout=10), 401, "invalid_token")
    assert [d["id"] for d in devices(herald, alice)] == [a_ios["id"]]
    # the deleted token can be registered again, as a new device
    again = register(herald, alice, 201, platform="android", token=a_android["token"]).json()
    assert again["id"] != a_android["id"]


def test_user_may_delete_a_device_of_another_of_their_sessions(herald):
    s1, s2 = herald.token(sub="alice", sid="s1"), herald.token(sub="alice", sid="s2")
    old_phone = register(herald, s1, 201, platform="android", token=fcm()).json()
    mine = register(herald, s2, 201, platform="ios", token=APNS).json()
    assert delete(herald, s2, f"/v1/me/devices/{old_phone['id']}").status_code == 204
    assert [d["id"] for d in devices(herald, s1)] == [mine["id"]]


def test_apns_token_case_does_not_make_a_second_device(herald):
    tok = herald.token(sid="s1")
    upper = register(herald, tok, 201, platform="ios", token=APNS.upper()).json()
    lower = register(herald, herald.token(sid="s2"), 200, platform="ios", token=APNS).json()
    assert lower["id"] == upper["id"]
    assert len(devices(herald, tok)) == 1


# --- DV-1: validation -----------------------------------------------------------------------------

INVALID = [
    ({"platform": "windows", "token": "t-1"}, "platform"),
    ({"platform": "", "token": "t-1"}, "platform"),
    ({"platform": 3, "token": "t-1"}, "platform"),
    ({"platform": None, "token": "t-1"}, "platform"),
    ({"token": "t-1"}, "platform"),
    ({"platform": "android"}, "token"),
    ({"platform": "android", "token": None}, "token"),
    ({"platform": "android", "token": 12345}, "token"),
    ({"platform": "ios", "token": "zz" * 16}, "token"),                 # not hex
    ({"platform": "ios", "token": "0x" + "ab" * 16}, "token"),
    ({"platform": "ios", "token": "a" * 33}, "token"),                  # odd length
    ({"platform": "ios", "token": "ab" * 7}, "token"),                  # 14 < 16
    ({"platform": "ios", "token": "ab" * 101}, "token"),                # 202 > 200
    ({"platform": "ios", "token": ""}, "token"),
    ({"platform": "ios", "token": "ab" * 8 + " "}, "token"),
    ({"platform": "android", "token": "has space"}, "token"),
    ({"platform": "android", "token": "x" * 4097}, "token"),
    ({"platform": "android", "token": ""}, "token"),
    ({"platform": "android", "token": "line\nbreak"}, "token"),
    ({"platform": "web", "token": "tab\there"}, "token"),
    ({"platform": "android", "token": "t-1", "locale": "english"}, "locale"),
    ({"platform": "android", "token": "t-1", "locale": "e"}, "locale"),
    ({"platform": "android", "token": "t-1", "locale": "pt-"}, "locale"),
    ({"platform": "android", "token": "t-1", "locale": "x" * 40}, "locale"),
    ({"platform": "android", "token": "t-1", "locale": ""}, "locale"),
    ({"platform": "android", "token": "t-1", "locale": "en US"}, "locale"),
    ({"platform": "android", "token": "t-1", "environment": "production"}, "environment"),
    ({"platform": "web", "token": web_push_token(), "environment": "sandbox"}, "environment"),
    ({"platform": "web", "token": "https://push.example/t-1"}, "token"),   # a web push token carries its keys
    ({"platform": "ios", "token": APNS, "environment": "staging"}, "environment"),
    ({"platform": "ios", "token": APNS, "environment": ""}, "environment"),
    ({"platform": "android", "token": "t-1", "app_version": "v" * 65}, "app_version"),
    ({"platform": "android", "token": "t-1", "device_name": "n" * 129}, "device_name"),
    ({"platform": "android", "token": "t-1", "installation_id": "i" * 129}, "installation_id"),
    ({"platform": "android", "token": "t-1", "app_version": 7}, "app_version"),
]


@pytest.mark.parametrize("body,field", INVALID, ids=[f"{f}-{i}" for i, (_, f) in enumerate(INVALID)])
def test_invalid_registration_is_400_with_field_and_changes_nothing(shared, body, field):
    tok = fresh_user(shared)
    register(shared, tok, 201, platform="android", token=fcm("keep"), locale="en")
    register(shared, tok, 201, platform="ios", token=uuid.uuid4().hex * 2)
    register(shared, tok, 201, platform="web", token=web_push_token())
    before = devices(shared, tok)
    time.sleep(0.01)
    r = register(shared, tok, **body)
    assert_error(r, 400, "invalid_request", field)
    assert devices(shared, tok) == before


@pytest.mark.parametrize("content", [
    b'{"platform": "android", "token": ',           # malformed
    b'{"platform": "android", "token": "t-1",}',     # trailing comma
    b'{"platform": "android", "token": "t-1"} {}',   # trailing data
    b"{'platform': 'android', 'token': 't-1'}",
    b"platform=android&token=t-1",
    b'["android", "t-1"]',                          # JSON but not an object
    b'"android"',
    b"null",
    b"",
])
def test_body_that_is_not_a_json_object_is_400(shared, content):
    tok = fresh_user(shared)
    r = HTTP.post(shared.url("/v1/me/devices"), content=content,
                  headers={**auth(tok), "Content-Type": "application/json"})
    assert_error(r, 400, "invalid_request")
    assert devices(shared, tok) == []


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                          "application/json; charset=utf-16", 'application/json;charset="ISO-8859-1"'])
def test_wrong_content_type_is_415(shared, content_type):
    tok = fresh_user(shared)
    r = HTTP.post(shared.url("/v1/me/devices"), content=b'{"platform": "android", "token": "t-1"}',
                  headers={**auth(tok), "Content-Type": content_type})
    assert_error(r, 415, "unsupported_media_type")
    assert devices(shared, tok) == []


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", 'application/json; charset="UTF-8"',
                                          "application/merge-patch+json"])
def test_json_content_types_are_read(shared, content_type):
    tok = fresh_user(shared)
    body = json.dumps({"platform": "android", "token": f"t-{uuid.uuid4().hex}"}).encode()
    r = HTTP.post(shared.url("/v1/me/devices"), content=body, headers={**auth(tok), "Content-Type": content_type})
    assert r.status_code == 201, r.text


def test_content_type_given_twice_is_400(herald, raw):
    tok = herald.token()
    body = b'{"platform": "android", "token": "t-1"}'
    c = raw(herald)
    c.send(b"POST /v1/me/devices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\n"
           + f"Authorization: Bearer {tok}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    answer = c.read_response(timeout=5)
    assert answer.status == 400, answer.status
    error = json.loads(answer.body)
    assert error["error"] == "invalid_request" and error["field"] == "Content-Type", error
    assert devices(herald, tok) == []


def test_body_over_one_mib_is_413(herald, raw):
    tok = herald.token()
    body = b'{"platform": "android", "token": "t-1", "device_name": "' + b"n" * (1024 * 1024 + 100) + b'"}'
    c = raw(herald)
    c.send(b"POST /v1/me/devices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           + f"Authorization: Bearer {tok}\r\nContent-Length: {len(body)}\r\n\r\n".encode())
    c.send_lenient(body[:65536])
    response = c.read_response()
    assert response.status == 413
    assert response.json()["error"] == "payload_too_large"
    assert devices(herald, tok) == []


# --- DV-5: seed 003 -----------------------------------------------------------------------------


@pytest.mark.parametrize("label,platform", [("fcm", "android"), ("apns", "ios")])
def test_seed003_register_maps_onto_the_device_model(herald, label, platform):
    tok = herald.token(sub="42", sid="login-1")
    token = fcm(label)                                  # an FCM token on both platforms (seed 003)
    r = register(herald, tok, path="/v1/devices", token=token, platform=label, device_id="install-9")
    assert r.status_code == 204, r.text
    assert r.content == b""
    listed = devices(herald, tok)
    assert len(listed) == 1
    d = assert_device(listed[0])
    assert (d["platform"], d["provider"], d["installation_id"]) == (platform, "fcm", "install-9")
    assert d["token"] == masked(token) and d["current"] is True and d["active"] is True
    # idempotent: sent on every start
    r = register(herald, tok, path="/v1/devices", token=token, platform=label, device_id="install-9")
    assert r.status_code == 204, r.text
    assert [x["id"] for x in devices(herald, tok)] == [d["id"]]


def test_seed003_device_id_is_optional(herald):
    tok = herald.token(sub="42", sid="login-1")
    r = register(herald, tok, path="/v1/devices", token=fcm(), platform="fcm")
    assert r.status_code == 204, r.text
    assert devices(herald, tok)[0]["installation_id"] is None


def test_seed003_foreign_device_id_is_403_and_same_device_id_rebinds(herald):
    alice, bob = herald.token(sub="alice", sid="a1"), herald.token(sub="bob", sid="b1")
    token = fcm()
    assert register(herald, alice, path="/v1/devices", token=token, platform="fcm", device_id="dev-A").status_code == 204
    before = devices(herald, alice)
    # Seed 003 documents the refusal as 403 `forbidden`.
    assert_error(register(herald, bob, path="/v1/devices", token=token, platform="fcm", device_id="dev-B"), 403, "forbidden")
    assert_error(register(herald, bob, path="/v1/devices", token=token, platform="fcm"), 403, "forbidden")
    assert devices(herald, alice) == before and devices(herald, bob) == []
    # same installation, another account: the token is rebound, the old binding disappears
    assert register(herald, bob, path="/v1/devices", token=token, platform="fcm", device_id="dev-A").status_code == 204
    assert devices(herald, alice) == []
    assert [d["token"] for d in devices(herald, bob)] == [masked(token)]


@pytest.mark.parametrize("body,field", [
    ({"token": "fcm-1", "platform": "android", "device_id": "d"}, "platform"),
    ({"token": "fcm-1", "platform": "ios"}, "platform"),
    ({"token": "fcm-1"}, "platform"),
    ({"platform": "fcm", "device_id": "d"}, "token"),
    ({"token": "has space", "platform": "fcm"}, "token"),
    ({"token": "", "platform": "fcm"}, "token"),
    ({"token": "fcm-1", "platform": "fcm", "device_id": "d" * 129}, "device_id"),
])
def test_seed003_invalid_register_is_400(shared, body, field):
    tok = fresh_user(shared)
    assert_error(register(shared, tok, path="/v1/devices", **body), 400, "invalid_request", field)
    assert devices(shared, tok) == []


def test_seed003_unregister(herald):
    alice, bob = herald.token(sub="alice", sid="a1"), herald.token(sub="bob", sid="b1")
    token, bobs = fcm("a"), fcm("b")
    assert register(herald, alice, path="/v1/devices", token=token, platform="fcm", device_id="d").status_code == 204
    assert register(herald, bob, path="/v1/devices", token=bobs, platform="apns", device_id="e").status_code == 204
    r = delete(herald, alice, f"/v1/devices/{token}")
    assert r.status_code == 204 and r.content == b""
    assert devices(herald, alice) == []
    # unknown token: also 204
    assert delete(herald, alice, f"/v1/devices/{token}").status_code == 204
    assert delete(herald, alice, "/v1/devices/never-registered").status_code == 204
    # another user's token is unknown to alice: 204, and bob keeps it
    assert delete(herald, alice, f"/v1/devices/{bobs}").status_code == 204
    assert [d["token"] for d in devices(herald, bob)] == [masked(bobs)]
    assert_error(HTTP.delete(herald.url(f"/v1/devices/{bobs}"), timeout=10), 401, "invalid_token")
    assert len(devices(herald, bob)) == 1


def test_seed003_unregister_a_device_from_the_main_api(herald):
    tok = herald.token()
    d = register(herald, tok, 201, platform="ios", token=APNS).json()
    assert delete(herald, tok, f"/v1/devices/{APNS}").status_code == 204
    assert d["id"] not in by_id(devices(herald, tok))


# --- DV-5: seed 002 -----------------------------------------------------------------------------


def test_seed002_device_tokens(herald):
    tok = herald.token(sub="7", sid="mogos-1")
    expo = "ExponentPushToken[xXxXxXxXxXxXxXxXxXxXxX]"
    r = register(herald, tok, 201, path="/v1/users/me/device-tokens", token=expo, platform="ios",
                 appVersion="2.1.0", locale="es_mx")
    first = assert_device(r.json())
    assert (first["platform"], first["token"], first["app_version"], first["locale"]) == ("ios", expo, "2.1.0", "es-MX")
    assert first["current"] is True
    time.sleep(0.05)
    # upsert by token: a new appVersion and locale (language change included)
    r = register(herald, tok, 200, path="/v1/users/me/device-tokens", token=expo, platform="ios",
                 appVersion="2.2.0", locale="zh")
    second = assert_device(r.json())
    assert second["id"] == first["id"] and (second["app_version"], second["locale"]) == ("2.2.0", "zh")
    assert parse_time(second["last_seen_at"]) > parse_time(first["last_seen_at"])
    listed = devices(herald, tok)
    assert [d["id"] for d in listed] == [first["id"]] and listed[0]["locale"] == "zh"

    android = register(herald, tok, 201, path="/v1/users/me/device-tokens", token=fcm(), platform="android",
                       appVersion="2.2.0", locale="en").json()
    assert android["platform"] == "android"
    assert set(by_id(devices(herald, tok))) == {first["id"], android["id"]}

    r = delete(herald, tok, "/v1/users/me/device-tokens", json={"token": expo})
    assert r.status_code == 204 and r.content == b""
    assert set(by_id(devices(herald, tok))) == {android["id"]}


@pytest.mark.parametrize("path,body", [
    ("/v1/me/devices", {"platform": "android", "token": "ExponentPushToken[abc"}),
    ("/v1/me/devices", {"platform": "android", "token": "ExponentPushToken[]"}),
    ("/v1/me/devices", {"platform": "ios", "token": "ExpoPushToken[a b]"}),
    ("/v1/me/devices", {"platform": "android", "token": "ExponentPushToken[abc", "provider": "fcm"}),
    ("/v1/devices", {"platform": "fcm", "token": "ExponentPushToken["}),
    ("/v1/users/me/device-tokens", {"platform": "android", "token": "ExpoPushToken[x"}),
])
def test_a_token_that_starts_as_an_expo_token_but_is_malformed_is_400_not_an_fcm_device(shared, path, body):
    # An Expo token cut short or emptied on its way was stored as an FCM token (provider fcm, 201):
    # the client believed it registered, and no push could ever reach it. Expo's rule refuses it.
    tok = fresh_user(shared)
    r = register(shared, tok, path=path, **body)
    assert_error(r, 400, "invalid_request", "token")
    assert "ExponentPushToken[" in r.json()["message"], r.text
    assert devices(shared, tok) == []


@pytest.mark.parametrize("body,field", [
    ({"token": "t-1", "platform": "web"}, "platform"),
    ({"token": "t-1", "platform": "windows"}, "platform"),
    ({"platform": "ios"}, "token"),
    ({"token": "t-1", "platform": "ios", "locale": "english"}, "locale"),
    ({"token": "t-1", "platform": "ios", "appVersion": "v" * 65}, "appVersion"),
])
def test_seed002_invalid_register_is_400(shared, body, field):
    tok = fresh_user(shared)
    assert_error(register(shared, tok, path="/v1/users/me/device-tokens", **body), 400, "invalid_request", field)
    assert devices(shared, tok) == []


def test_seed002_delete_only_touches_the_callers_token(herald):
    alice, bob = herald.token(sub="alice", sid="a1"), herald.token(sub="bob", sid="b1")
    token = fcm()
    register(herald, bob, 201, path="/v1/users/me/device-tokens", token=token, platform="android")
    assert delete(herald, alice, "/v1/users/me/device-tokens", json={"token": token}).status_code == 204
    assert len(devices(herald, bob)) == 1
    assert_error(delete(herald, bob, "/v1/users/me/device-tokens", json={}), 400, "invalid_request", "token")
    assert len(devices(herald, bob)) == 1


def test_a_sid_names_one_users_session(shared):
    """Two users whose tokens carry the same sid: the second registration is refused, and the
    first user's session is neither refreshed, expired nor ended by the other's token."""
    sid = f"shared-{uuid.uuid4().hex[:8]}"
    alice = shared.token(sub=f"a-{uuid.uuid4().hex[:8]}", sid=sid)
    # Bob's token says the session expired a minute ago: applied to Alice's row it would end her pushes.
    bob = shared.token(sub=f"b-{uuid.uuid4().hex[:8]}", sid=sid, session_exp=int(time.time()) - 60)
    register(shared, alice, 201, platform="android", token=fcm())
    stream = shared.stream(token=bob)   # opening a stream records its session (queued on the writer)
    stream.ready()
    r = register(shared, bob, platform="android", token=fcm())   # after the touch, on the same writer
    assert_error(r, 409, "session_conflict")
    assert devices(shared, bob) == []
    [mine] = devices(shared, alice)
    assert mine["active"] is True
    stream.close()
