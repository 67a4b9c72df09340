"""The provider double itself (Tests/ProviderDouble): it checks requests the way Apple and Google
document and returns injected outcomes exactly. Herald's push tests rely on both."""
import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import (  # noqa: E402
    provider_double, provider_double_factory, provider_double_module, random_apns_token,
)

TOPIC = "com.example.herald"
ALERT = {"aps": {"alert": {"title": "Hi", "body": "There"}, "sound": "default"}, "msg_id": "m1"}


@pytest.fixture(scope="module")
def apns_token(provider_double_module):
    """One provider token for the module: a new token per request would trip
    TooManyProviderTokenUpdates on a shared connection, as on Apple's servers."""
    return provider_double_module.apns_jwt()


@pytest.fixture
def h2(provider_double):
    with provider_double.client() as c:
        yield c


def apns_headers(jwt_token, **extra):
    h = {"authorization": f"bearer {jwt_token}", "apns-topic": TOPIC, "apns-push-type": "alert",
         "apns-priority": "10", "apns-expiration": "0"}
    h.update({k.replace("_", "-"): v for k, v in extra.items()})
    return {k: v for k, v in h.items() if v is not None}


def apns_send(client, jwt_token, token=None, payload=ALERT, content=None, **headers):
    token = token or random_apns_token()
    body = content if content is not None else json.dumps(payload).encode()
    return client.post(f"/3/device/{token}", content=body, headers=apns_headers(jwt_token, **headers))


def pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


# ---------------------------------------------------------------------------------------------
# start-up: files and double.json


def test_state_dir_holds_the_credentials(provider_double):
    d = provider_double
    key = serialization.load_pem_private_key(Path(d.apns["key_path"]).read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    assert Path(d.apns["key_path"]).name == "AuthKey_TESTKEY01.p8"
    assert Path(d.apns["key_path"]).read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert (d.apns["key_id"], d.apns["team_id"], d.apns["topic"]) == ("TESTKEY01", "TEAM123456", TOPIC)
    sa = json.loads(Path(d.fcm["service_account_path"]).read_text())
    assert sa["type"] == "service_account" and sa["project_id"] == "herald-test" == d.fcm["project_id"]
    assert sa["token_uri"] == f"https://127.0.0.1:{d.port}/token"
    rsa_key = serialization.load_pem_private_key(sa["private_key"].encode(), None)
    assert isinstance(rsa_key, rsa.RSAPrivateKey) and rsa_key.key_size == 2048
    assert sa["private_key_id"] and sa["client_email"].endswith(".iam.gserviceaccount.com")
    env = d.herald_env()
    assert env["HERALD_CA_FILE"] == d.ca_file and env["APNS_KEY_ID"] == "TESTKEY01"


# ---------------------------------------------------------------------------------------------
# APNs


def test_apns_correct_alert_is_accepted_and_logged(provider_double, h2, apns_token):
    token, apns_id = random_apns_token(), str(uuid.uuid4())
    r = apns_send(h2, apns_token, token, apns_id=apns_id, apns_collapse_id="c1")
    assert r.http_version == "HTTP/2"
    assert r.status_code == 200 and r.content == b""
    assert r.headers["apns-id"] == apns_id
    uuid.UUID(r.headers["apns-unique-id"])  # sandbox environment
    (entry,) = provider_double.requests("apns")
    assert entry["path"] == f"/3/device/{token}" and entry["status"] == 200 and entry["outcome"] == "ok"
    assert entry["headers"]["apns-topic"] == TOPIC and entry["headers"]["apns-collapse-id"] == "c1"
    assert entry["body"] == ALERT
    assert entry["jwt"]["header"] == {"alg": "ES256", "kid": "TESTKEY01", "typ": "JWT"}
    assert entry["jwt"]["claims"]["iss"] == "TEAM123456"


def test_apns_generates_an_apns_id_when_none_is_sent(h2, apns_token):
    r = apns_send(h2, apns_token, apns_id=None)
    assert r.status_code == 200
    uuid.UUID(r.headers["apns-id"])


def test_apns_wrong_signing_key_is_invalid_provider_token(provider_double, h2):
    other = pem(ec.generate_private_key(ec.SECP256R1()))
    r = apns_send(h2, provider_double.apns_jwt(key_pem=other))
    assert r.status_code == 403
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"reason": "InvalidProviderToken"}
    uuid.UUID(r.headers["apns-id"])


def test_apns_background_push_must_not_use_priority_10(h2, apns_token):
    wake = {"aps": {"content-available": 1}, "ids": ["e1"]}
    r = apns_send(h2, apns_token, payload=wake, apns_push_type="background", apns_priority="10")
    assert (r.status_code, r.json()) == (400, {"reason": "BadPriority"})
    r = apns_send(h2, apns_token, payload=wake, apns_push_type="background", apns_priority=None)
    assert (r.status_code, r.json()) == (400, {"reason": "BadPriority"})  # 10 is the default
    r = apns_send(h2, apns_token, payload=wake, apns_push_type="background", apns_priority="5")
    assert r.status_code == 200


@pytest.mark.parametrize("change, status, reason", [
    ({"apns_topic": None}, 400, "MissingTopic"),
    ({"apns_topic": "com.example.other"}, 400, "DeviceTokenNotForTopic"),
    ({"apns_push_type": "voip"}, 400, "DeviceTokenNotForTopic"),  # voip needs <bundle>.voip
    ({"apns_collapse_id": "x" * 65}, 400, "BadCollapseId"),
    ({"apns_id": "EABEAE54-14A8-11E5-B60B-1697F925EC7B"}, 400, "BadMessageId"),
    ({"apns_id": "not-a-uuid"}, 400, "BadMessageId"),
    ({"apns_priority": "7"}, 400, "BadPriority"),
    ({"apns_push_type": "banner"}, 400, "InvalidPushType"),
    ({"apns_expiration": "tomorrow"}, 400, "BadExpirationDate"),
    ({"token": "abc"}, 400, "BadDeviceToken"),
    ({"token": "zz" * 32}, 400, "BadDeviceToken"),
    ({"content": b""}, 400, "PayloadEmpty"),
    ({"content": b"{" + b" " * 4095 + b"}"}, 413, "PayloadTooLarge"),
    ({"content": b"not json"}, 400, "BadPayload"),
    ({"payload": {"alert": "no aps"}}, 400, "BadPayload"),
    ({"authorization": None}, 403, "MissingProviderToken"),
    ({"authorization": "bearer "}, 403, "MissingProviderToken"),
    ({"authorization": "bearer not.a.jwt"}, 403, "InvalidProviderToken"),
])
def test_apns_request_checks(provider_double, h2, apns_token, change, status, reason):
    change = dict(change)
    token = change.pop("token", None)
    kwargs = {k: change.pop(k) for k in ("content", "payload") if k in change}
    r = apns_send(h2, apns_token, token, **kwargs, **change)
    assert (r.status_code, r.json()) == (status, {"reason": reason})


def test_apns_path_and_method_errors(h2, apns_token):
    r = h2.post("/3/device/", content=json.dumps(ALERT), headers=apns_headers(apns_token))
    assert (r.status_code, r.json()["reason"]) == (400, "MissingDeviceToken")
    r = h2.post("/3/devices/abcd", content=json.dumps(ALERT), headers=apns_headers(apns_token))
    assert (r.status_code, r.json()["reason"]) == (404, "BadPath")
    r = h2.get(f"/3/device/{random_apns_token()}", headers=apns_headers(apns_token))
    assert (r.status_code, r.json()["reason"]) == (405, "MethodNotAllowed")


@pytest.mark.parametrize("claims, header, reason", [
    ({"iat": lambda now: now - 3700}, {}, "ExpiredProviderToken"),
    ({"iat": lambda now: now + 600}, {}, "InvalidProviderToken"),
    ({"iss": "OTHERTEAM1"}, {}, "InvalidProviderToken"),
    ({}, {"kid": "OTHERKEY01"}, "InvalidProviderToken"),
])
def test_apns_jwt_claims(provider_double, h2, claims, header, reason):
    now = int(time.time())
    body = {"iss": "TEAM123456", "iat": now}
    body.update({k: (v(now) if callable(v) else v) for k, v in claims.items()})
    key = Path(provider_double.apns["key_path"]).read_bytes()
    token = jwt.encode(body, key, algorithm="ES256", headers={"kid": header.get("kid", "TESTKEY01")})
    r = apns_send(h2, token)
    assert (r.status_code, r.json()) == (403, {"reason": reason})


def test_apns_der_signature_is_refused_by_default(provider_double, h2):
    import base64
    from cryptography.hazmat.primitives import hashes

    key = serialization.load_pem_private_key(Path(provider_double.apns["key_path"]).read_bytes(), None)
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    signing_input = b64(b'{"alg":"ES256","kid":"TESTKEY01"}') + "." + b64(
        json.dumps({"iss": "TEAM123456", "iat": int(time.time())}).encode())
    der = key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    r = apns_send(h2, signing_input + "." + b64(der))
    assert (r.status_code, r.json()) == (403, {"reason": "InvalidProviderToken"})
    assert any("raw r||s" in n for n in provider_double.requests("apns")[-1]["notes"])


def test_apns_expire_next_token_then_a_new_token_works(provider_double):
    d = provider_double
    old = d.apns_jwt(iat=int(time.time()) - 60)
    with d.client() as c:
        assert apns_send(c, old).status_code == 200
        d.expire_next_apns_token()
        r = apns_send(c, old)
        assert (r.status_code, r.json()) == (403, {"reason": "ExpiredProviderToken"})
        assert apns_send(c, old).json() == {"reason": "ExpiredProviderToken"}  # stays expired
        new = d.apns_jwt()
        assert apns_send(c, new).status_code == 200  # same connection: no TooManyProviderTokenUpdates
    assert d.stats()["apns_jwts_distinct"] == 2


def test_apns_changing_token_too_often_on_one_connection(provider_double):
    d = provider_double
    with d.client() as c:
        assert apns_send(c, d.apns_jwt()).status_code == 200
        r = apns_send(c, d.apns_jwt())  # ECDSA signatures differ: a new token
        assert (r.status_code, r.json()) == (429, {"reason": "TooManyProviderTokenUpdates"})


def test_apns_environments_and_registered_devices(provider_double, h2, apns_token):
    d = provider_double
    token = random_apns_token()
    d.register_apns_device(token, environment="sandbox")
    r = h2.post(f"/production/3/device/{token}", content=json.dumps(ALERT), headers=apns_headers(apns_token))
    assert (r.status_code, r.json()) == (400, {"reason": "BadDeviceToken"})
    assert "apns-unique-id" not in r.headers
    r = h2.post(f"/sandbox/3/device/{token}", content=json.dumps(ALERT), headers=apns_headers(apns_token))
    assert r.status_code == 200 and "apns-unique-id" in r.headers
    r = h2.post(f"/production/3/device/{random_apns_token()}", content=json.dumps(ALERT),
                headers=apns_headers(apns_token))
    assert r.status_code == 200 and "apns-unique-id" not in r.headers  # production: no unique id


# ---------------------------------------------------------------------------------------------
# APNs injected outcomes


def test_apns_injected_outcomes_come_back_exactly(provider_double, h2, apns_token):
    d = provider_double
    token = random_apns_token()
    d.set_outcomes("apns", token, [
        {"status": 410, "reason": "Unregistered", "timestamp": 1754563200000},
        {"status": 429, "reason": "TooManyRequests", "retry_after": 7},
        {"status": 502, "html_502": True},
        {"status": 503, "reason": "Shutdown", "times": 2},
    ])
    r = apns_send(h2, apns_token, token)
    assert (r.status_code, r.json()) == (410, {"reason": "Unregistered", "timestamp": 1754563200000})
    r = apns_send(h2, apns_token, token)
    assert (r.status_code, r.json(), r.headers["retry-after"]) == (429, {"reason": "TooManyRequests"}, "7")
    r = apns_send(h2, apns_token, token)
    assert r.status_code == 502 and r.headers["content-type"].startswith("text/html")
    assert "<title>Error 502 (Server Error)!!1</title>" in r.text
    for _ in range(2):
        r = apns_send(h2, apns_token, token)
        assert (r.status_code, r.json()) == (503, {"reason": "Shutdown"})
    assert apns_send(h2, apns_token, token).status_code == 200  # then normal behaviour
    log = d.requests("apns")
    assert [e["status"] for e in log] == [410, 429, 502, 503, 503, 200]
    assert [e["injected"] for e in log] == [True] * 5 + [False]


def test_apns_410_timestamp_defaults_to_now_in_ms(provider_double, h2, apns_token):
    token = random_apns_token()
    provider_double.set_outcomes("apns", token, [{"status": 410, "reason": "ExpiredToken"}])
    r = apns_send(h2, apns_token, token)
    assert r.status_code == 410 and r.json()["reason"] == "ExpiredToken"
    assert abs(r.json()["timestamp"] - time.time() * 1000) < 60_000


def test_apns_outcome_not_used_by_a_request_that_fails_a_check(provider_double, h2, apns_token):
    token = random_apns_token()
    provider_double.set_outcomes("apns", token, [{"status": 410, "reason": "Unregistered"}])
    assert apns_send(h2, apns_token, token, apns_topic=None).json() == {"reason": "MissingTopic"}
    assert apns_send(h2, apns_token, token).status_code == 410


def test_outcomes_for_every_token(provider_double, h2, apns_token):
    d = provider_double
    d.set_outcomes_all("apns", [{"status": 400, "reason": "BadDeviceToken", "forever": True}])
    tokens = [random_apns_token() for _ in range(3)]
    for t in tokens * 2:
        assert apns_send(h2, apns_token, t).json() == {"reason": "BadDeviceToken"}
    d.reset()
    assert apns_send(h2, apns_token, tokens[0]).status_code == 200


def test_apns_delay_and_goaway(provider_double, apns_token):
    d = provider_double
    slow, gone = random_apns_token(), random_apns_token()
    d.set_outcomes("apns", slow, [{"delay_ms": 300}])
    d.set_outcomes("apns", gone, [{"goaway": "Shutdown"}])
    with d.client() as c:
        t0 = time.monotonic()
        assert apns_send(c, apns_token, slow).status_code == 200
        assert time.monotonic() - t0 >= 0.29
        with pytest.raises(httpx.TransportError):
            apns_send(c, apns_token, gone)
    assert d.requests("apns")[-1]["outcome"] == "goaway"


# ---------------------------------------------------------------------------------------------
# FCM


def grant(client, double, **claims):
    return client.post("/token", data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                       "assertion": double.fcm_assertion(**claims)})


@pytest.fixture
def fcm_bearer(provider_double, h2):
    r = grant(h2, provider_double)
    assert r.status_code == 200, r.text
    return r.json()["access_token"]


def fcm_send(client, bearer, message, project="herald-test", **top):
    headers = {"authorization": f"Bearer {bearer}"} if bearer else {}
    return client.post(f"/v1/projects/{project}/messages:send", json={"message": message, **top},
                       headers=headers)


MESSAGE = {"token": "fcm-token-1", "notification": {"title": "Hi", "body": "There"},
           "data": {"msg_id": "m1", "channel": "general"},
           "android": {"priority": "high", "ttl": "3600s", "collapse_key": "general",
                       "notification": {"channel_id": "msgs", "tag": "general", "notification_count": 2,
                                        "sound": "default"}}}


def test_fcm_token_grant_then_send(provider_double, h2):
    d = provider_double
    r = grant(h2, d)
    assert r.status_code == 200
    body = r.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3599 and body["access_token"]
    for _ in range(3):
        r = fcm_send(h2, body["access_token"], MESSAGE)
        assert r.status_code == 200
        assert r.json()["name"].startswith("projects/herald-test/messages/")
    stats = d.stats()
    assert (stats["token_grants"], stats["fcm_sends"], stats["fcm_accepted"]) == (1, 3, 3)
    entry = d.requests("fcm")[0]
    assert entry["body"]["message"] == MESSAGE and entry["outcome"] == "ok"
    assert d.requests("oauth")[0]["jwt"]["claims"]["scope"] == "https://www.googleapis.com/auth/firebase.messaging"


def test_fcm_token_endpoint_over_http1(provider_double):
    d = provider_double
    with d.client(http2=False) as c:
        r = grant(c, d)
        assert r.http_version == "HTTP/1.1" and r.status_code == 200


@pytest.mark.parametrize("claims, error", [
    ({"aud": "https://oauth2.googleapis.com/token"}, "invalid_grant"),
    ({"lifetime": 7200}, "invalid_grant"),
    ({"exp": 1000}, "invalid_grant"),
    ({"iss": "someone@else.iam.gserviceaccount.com"}, "invalid_grant"),
    ({"scope": ""}, "invalid_scope"),
])
def test_fcm_token_grant_checks(provider_double, h2, claims, error):
    r = grant(h2, provider_double, **claims)
    assert r.status_code == 400 and r.json()["error"] == error


def test_fcm_token_grant_wrong_signer(provider_double, h2):
    sa = json.loads(Path(provider_double.fcm["service_account_path"]).read_text())
    now = int(time.time())
    other = pem(rsa.generate_private_key(65537, 2048))
    assertion = jwt.encode({"iss": sa["client_email"], "scope": "https://www.googleapis.com/auth/firebase.messaging",
                            "aud": sa["token_uri"], "iat": now, "exp": now + 3600}, other, algorithm="RS256")
    r = h2.post("/token", data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion})
    assert (r.status_code, r.json()) == (400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})


def test_fcm_non_string_data_is_invalid_argument(h2, fcm_bearer):
    r = fcm_send(h2, fcm_bearer, {**MESSAGE, "data": {"a": "x", "count": 12}})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["status"] == "INVALID_ARGUMENT" and err["code"] == 400
    assert err["message"] == "Invalid value at 'message.data[1].value' (TYPE_STRING), 12"
    (detail,) = err["details"]
    assert detail["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert detail["fieldViolations"][0]["field"] == "message.data[1].value"


def error_code(resp):
    for d in resp.json()["error"].get("details", []):
        if d["@type"] == "type.googleapis.com/google.firebase.fcm.v1.FcmError":
            return d["errorCode"]
    return None


@pytest.mark.parametrize("change, status, canonical, fcm_code", [
    ({"topic": "news"}, 400, "INVALID_ARGUMENT", None),  # token and topic: oneof
    ({"token": None}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),  # no target
    ({"token": "bad token!"}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    ({"data": {"from": "alice"}}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    ({"data": {"google.x": "1"}}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    ({"data": {"message_type": "x"}}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    ({"android": {"data": {"gcm.notification.x": "1"}}}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    ({"android": {"ttl": "3600"}}, 400, "INVALID_ARGUMENT", None),
    ({"android": {"ttl": "9999999s"}}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
    ({"android": {"priority": "urgent"}}, 400, "INVALID_ARGUMENT", None),
    ({"android": {"colapse_key": "x"}}, 400, "INVALID_ARGUMENT", None),  # unknown field
    ({"data": {"big": "x" * 4100}}, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
])
def test_fcm_message_checks(h2, fcm_bearer, change, status, canonical, fcm_code):
    message = {**MESSAGE, **change}
    message = {k: v for k, v in message.items() if v is not None}
    r = fcm_send(h2, fcm_bearer, message)
    assert r.status_code == status
    assert r.json()["error"]["status"] == canonical
    assert error_code(r) == fcm_code


def test_fcm_accepts_camel_case_and_validate_only(h2, fcm_bearer):
    message = {"token": "t1", "data": {"k": "v"},
               "android": {"collapseKey": "c", "priority": "NORMAL", "ttl": "0s",
                           "notification": {"channelId": "msgs", "notificationCount": 1}}}
    r = fcm_send(h2, fcm_bearer, message, validateOnly=True)
    assert (r.status_code, r.json()) == (200, {"name": "projects/herald-test/messages/fake_message_id"})


def test_fcm_auth_and_project_errors(provider_double, h2, fcm_bearer):
    r = fcm_send(h2, None, MESSAGE)
    assert r.status_code == 401 and r.json()["error"]["status"] == "UNAUTHENTICATED"
    assert "missing required authentication credential" in r.json()["error"]["message"]
    r = fcm_send(h2, "ya29.made-up", MESSAGE)
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
    assert "details" not in r.json()["error"]
    r = fcm_send(h2, fcm_bearer, MESSAGE, project="someone-else")
    assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"
    assert "cloudmessaging.messages.create" in r.json()["error"]["message"]
    assert provider_double.expire_fcm_tokens() >= 1
    r = fcm_send(h2, fcm_bearer, MESSAGE)
    assert r.status_code == 401


def test_fcm_injected_outcomes_come_back_exactly(provider_double, h2, fcm_bearer):
    d = provider_double
    d.set_outcomes("fcm", "dead-token", [
        {"status": 404, "errorCode": "UNREGISTERED"},
        {"status": 429, "errorCode": "QUOTA_EXCEEDED", "retry_after": 60},
        {"status": 502, "html_502": True},
        {"status": 503, "errorCode": "UNAVAILABLE", "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"},
    ])
    msg = {**MESSAGE, "token": "dead-token"}
    r = fcm_send(h2, fcm_bearer, msg)
    assert r.status_code == 404
    assert r.json() == {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
                                  "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                                               "errorCode": "UNREGISTERED"}]}}
    r = fcm_send(h2, fcm_bearer, msg)
    assert (r.status_code, r.headers["retry-after"], error_code(r)) == (429, "60", "QUOTA_EXCEEDED")
    assert r.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    r = fcm_send(h2, fcm_bearer, msg)
    assert r.status_code == 502 and r.text.lstrip().startswith("<!DOCTYPE html>")
    r = fcm_send(h2, fcm_bearer, msg)
    assert (r.status_code, r.headers["retry-after"], error_code(r)) == (503, "Wed, 21 Oct 2015 07:28:00 GMT", "UNAVAILABLE")
    assert fcm_send(h2, fcm_bearer, msg).status_code == 200
    assert [e["outcome"] for e in d.requests("fcm")] == ["UNREGISTERED", "QUOTA_EXCEEDED", "502", "UNAVAILABLE", "ok"]


def test_control_api_rejects_bad_outcomes(provider_double):
    from fixture import DoubleError

    with pytest.raises(DoubleError):
        provider_double.set_outcomes("apns", "ab", [{"status": "410"}])
    with pytest.raises(DoubleError):
        provider_double.set_outcomes("gcm", "ab", [{"status": 410}])
    warn = provider_double.set_outcomes("apns", "ab", [{"status": 400, "reason": "SomethingNew"}])
    assert warn["warnings"]  # allowed (tests unknown-reason handling) but flagged


def test_apns_requires_http2(provider_double, apns_token):
    with provider_double.client(http2=False) as c:
        r = apns_send(c, apns_token)
    assert r.status_code == 505 and provider_double.requests("apns")[-1]["outcome"] == "http2-required"


@pytest.mark.skipif(not shutil.which("curl"), reason="curl not installed")
def test_libcurl_client_interoperates(provider_double, apns_token):
    """Herald's client stack is libcurl + nghttp2 + OpenSSL: the curl tool uses the same."""
    d = provider_double
    token = random_apns_token()
    d.set_outcomes("apns", token, [{"status": 200}, {"goaway": "Shutdown"}])

    def curl():
        return subprocess.run(
            ["curl", "-s", "-i", "--http2", "--cacert", d.ca_file, "-H", f"authorization: bearer {apns_token}",
             "-H", f"apns-topic: {TOPIC}", "-H", "apns-push-type: alert", "-H", "apns-priority: 10",
             "-d", json.dumps(ALERT), f"{d.base_url}/3/device/{token}"],
            capture_output=True, text=True, timeout=10)

    first = curl()
    assert first.returncode == 0 and first.stdout.startswith("HTTP/2 200")
    assert curl().returncode != 0  # GOAWAY: the stream fails, which Herald must treat as retryable
    assert [e["outcome"] for e in d.requests("apns")] == ["ok", "goaway"]


def test_flags_key_environment_and_der_leniency(provider_double_factory):
    import base64
    from cryptography.hazmat.primitives import hashes

    d = provider_double_factory("--apns-key-environment", "production", "--accept-der-signatures")
    key = serialization.load_pem_private_key(Path(d.apns["key_path"]).read_bytes(), None)
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    signing_input = b64(b'{"alg":"ES256","kid":"TESTKEY01"}') + "." + b64(
        json.dumps({"iss": "TEAM123456", "iat": int(time.time())}).encode())
    der_jwt = signing_input + "." + b64(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    with d.client() as c:
        r = c.post(f"/sandbox/3/device/{random_apns_token()}", content=json.dumps(ALERT),
                   headers=apns_headers(der_jwt))
        assert (r.status_code, r.json()) == (403, {"reason": "BadEnvironmentKeyIdInToken"})
        r = c.post(f"/production/3/device/{random_apns_token()}", content=json.dumps(ALERT),
                   headers=apns_headers(der_jwt))
        assert r.status_code == 200
    assert any("DER" in n for n in d.requests("apns")[-1]["notes"])
