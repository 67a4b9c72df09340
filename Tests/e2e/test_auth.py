"""Access tokens on `GET /v1/stream` (docs/api.md, docs/protocol.md): HS256, RS256, ES256,
refusals, channel grants."""
import base64
import hashlib
import hmac
import json
import time

import httpx
import jwt
import pytest
import websockets
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from conftest import JWT_SECRET, assert_error, run_async as run, ws_url


@pytest.fixture
def herald(shared_herald):
    """These checks need no fresh state: one server per module (see conftest)."""
    return shared_herald


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key():
    return ec.generate_private_key(ec.SECP256R1())


def public_pem(key) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def claims(sub="alice", ttl=3600, **extra):
    now = int(time.time())
    return {"sub": sub, "sid": "s1", "exp": now + ttl, "iat": now, **extra}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict, payload: dict, signature: bytes = b"") -> str:
    return ".".join([b64(json.dumps(header).encode()), b64(json.dumps(payload).encode()), b64(signature)])


def assert_invalid_token(s):
    assert s.status == 401
    body = s.json_body()
    assert body["error"] == "invalid_token", body
    assert isinstance(body.get("message"), str)
    assert s.headers["content-type"].startswith("application/json")


def test_no_token_is_401(herald):
    assert_invalid_token(herald.stream(token="", expect=401))


def test_empty_bearer_and_wrong_scheme_are_401(herald):
    assert_invalid_token(herald.stream(token="", headers={"Authorization": "Bearer"}, expect=401))
    assert_invalid_token(herald.stream(token="", headers={"Authorization": f"Basic {herald.token()}"}, expect=401))


def test_bad_signature_is_401(herald):
    assert_invalid_token(herald.stream(jwt.encode(claims(), "another-secret-0123456789abcdef012", algorithm="HS256"), expect=401))
    good = herald.token()
    head, payload, sig = good.split(".")
    forged_payload = b64(json.dumps(claims(sub="mallory")).encode())
    assert_invalid_token(herald.stream(f"{head}.{forged_payload}.{sig}", expect=401))
    assert_invalid_token(herald.stream("not.a.jwt", expect=401))
    assert_invalid_token(herald.stream("garbage", expect=401))


def test_expired_beyond_leeway_is_401(herald):
    assert_invalid_token(herald.stream(jwt.encode(claims(ttl=-120), JWT_SECRET, algorithm="HS256"), expect=401))
    assert_invalid_token(herald.stream(jwt.encode(claims(ttl=-61), JWT_SECRET, algorithm="HS256"), expect=401))


def test_expired_within_leeway_is_accepted(herald):
    herald.stream(jwt.encode(claims(ttl=-30), JWT_SECRET, algorithm="HS256")).ready()


def test_nbf_in_the_future_is_401(herald):
    now = int(time.time())
    assert_invalid_token(herald.stream(jwt.encode(claims(nbf=now + 300), JWT_SECRET, algorithm="HS256"), expect=401))
    # within the leeway it is accepted
    herald.stream(jwt.encode(claims(nbf=now + 20), JWT_SECRET, algorithm="HS256")).ready()


def test_missing_sub_or_exp_is_401(herald):
    now = int(time.time())
    assert_invalid_token(herald.stream(jwt.encode({"exp": now + 60}, JWT_SECRET, algorithm="HS256"), expect=401))
    assert_invalid_token(herald.stream(jwt.encode({"sub": "alice"}, JWT_SECRET, algorithm="HS256"), expect=401))
    assert_invalid_token(herald.stream(jwt.encode({"sub": 42, "exp": now + 60}, JWT_SECRET, algorithm="HS256"), expect=401))


def test_sub_that_cannot_name_a_channel_is_401(herald):
    assert_invalid_token(herald.stream(jwt.encode(claims(sub="a b"), JWT_SECRET, algorithm="HS256"), expect=401))


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_alg_none_is_401(herald, alg):
    token = hand_made({"alg": alg, "typ": "JWT"}, claims())
    assert_invalid_token(herald.stream(token, expect=401))
    # also with a trailing signature made with the real secret over the same input
    head, payload, _ = token.split(".")
    sig = hmac.new(JWT_SECRET.encode(), f"{head}.{payload}".encode(), hashlib.sha256).digest()
    assert_invalid_token(herald.stream(f"{head}.{payload}.{b64(sig)}", expect=401))


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
def test_other_algorithms_are_401(herald):
    token = jwt.encode(claims(), JWT_SECRET, algorithm="HS512")
    assert_invalid_token(herald.stream(token, expect=401))


def test_access_token_query_parameter(herald):
    s = herald.stream(token="", params={"access_token": herald.token(sub="carol")})
    assert s.ready()["user_id"] == "carol"
    assert_invalid_token(herald.stream(token="", params={"access_token": "x.y.z"}, expect=401))


UPGRADE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
           "Sec-WebSocket-Version": "13"}


@pytest.mark.parametrize("path", ["/v1/me/notifications", "/v1/stream", "/v1/ws"])
@pytest.mark.parametrize("query_user", ["mallory", "alice"])
def test_a_token_in_both_the_header_and_the_query_is_400(herald, path, query_user):
    """RFC 6750 §2, §3.1: one way of sending the token; the query's was silently ignored before,
    so a request naming two users was served as the header's. Equal tokens are refused too."""
    alice = herald.token(sub="alice")
    query = alice if query_user == "alice" else herald.token(sub=query_user)
    headers = {"Authorization": f"Bearer {alice}", **(UPGRADE if path == "/v1/ws" else {})}
    r = httpx.get(herald.url(path), params={"access_token": query}, headers=headers, timeout=5)
    body = assert_error(r, 400, "invalid_request", "access_token")
    assert "RFC 6750" in body["message"], body
    # Either way alone is served.
    if path == "/v1/me/notifications":
        assert httpx.get(herald.url(path), headers={"Authorization": f"Bearer {alice}"}, timeout=5).status_code == 200
        assert httpx.get(herald.url(path), params={"access_token": query}, timeout=5).status_code == 200


def test_a_websocket_upgrade_with_another_scheme_and_a_query_token_is_400(herald):
    """The header would otherwise leave the upgrade to first-message authentication."""
    r = httpx.get(herald.url("/v1/ws"), params={"access_token": herald.token()},
                  headers={"Authorization": "Basic YWxpY2U6eA==", **UPGRADE}, timeout=5)
    assert_error(r, 400, "invalid_request", "access_token")


async def _websocket_with_both(h):
    token = h.token(sub="alice")
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(ws_url(h, access_token=h.token(sub="mallory")),
                                      additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=5):
            pass
    return refused.value.response


def test_a_websocket_client_sending_both_is_refused_before_the_upgrade(herald):
    response = run(_websocket_with_both(herald))
    assert response.status_code == 400 and json.loads(response.body)["field"] == "access_token"


def test_rs256_accepted_and_hs256_refused_with_public_key_only(herald_factory, rsa_key):
    h = herald_factory(HERALD_JWT_SECRET="", HERALD_JWT_PUBLIC_KEY=public_pem(rsa_key))
    token = jwt.encode(claims(sub="rsa-user", channels=["room:*"]), rsa_key, algorithm="RS256")
    s = h.stream(token, channels="room:1")
    assert s.ready() == {"connection_id": s.events[0].json()["connection_id"], "session_id": "s1",
                         "user_id": "rsa-user", "channels": ["user:rsa-user", "room:1"]}
    r = h.publish("room:1", {"ok": True})
    assert s.next().id == r["id"]

    # HS256 with any secret is refused: the server only has the RSA key
    assert_invalid_token(h.stream(jwt.encode(claims(), JWT_SECRET, algorithm="HS256"), expect=401))
    # key confusion: HS256 "signed" with the RSA public key PEM as the HMAC secret
    header = {"alg": "HS256", "typ": "JWT"}
    head = b64(json.dumps(header).encode())
    payload = b64(json.dumps(claims()).encode())
    sig = hmac.new(public_pem(rsa_key).encode(), f"{head}.{payload}".encode(), hashlib.sha256).digest()
    assert_invalid_token(h.stream(f"{head}.{payload}.{b64(sig)}", expect=401))
    # an RS256 token signed by another RSA key
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert_invalid_token(h.stream(jwt.encode(claims(), other, algorithm="RS256"), expect=401))
    # ES256 is not this key's algorithm
    assert_invalid_token(h.stream(jwt.encode(claims(), ec.generate_private_key(ec.SECP256R1()), algorithm="ES256"), expect=401))


def test_rs256_public_key_with_escaped_newlines(herald_factory, rsa_key):
    h = herald_factory(HERALD_JWT_SECRET="", HERALD_JWT_PUBLIC_KEY=public_pem(rsa_key).replace("\n", "\\n"))
    h.stream(jwt.encode(claims(), rsa_key, algorithm="RS256")).ready()


def test_es256_from_key_file(herald_factory, ec_key, tmp_path):
    path = tmp_path / "ec.pem"
    path.write_text(public_pem(ec_key))
    h = herald_factory(HERALD_JWT_SECRET="", HERALD_JWT_PUBLIC_KEY_PATH=str(path))
    s = h.stream(jwt.encode(claims(sub="ec-user"), ec_key, algorithm="ES256"))
    assert s.ready()["user_id"] == "ec-user"
    assert_invalid_token(h.stream(jwt.encode(claims(), ec.generate_private_key(ec.SECP256R1()), algorithm="ES256"), expect=401))
    assert_invalid_token(h.stream(jwt.encode(claims(), JWT_SECRET, algorithm="HS256"), expect=401))


def test_hs256_and_public_key_together(herald_factory, ec_key):
    h = herald_factory(HERALD_JWT_PUBLIC_KEY=public_pem(ec_key))
    assert h.stream(jwt.encode(claims(sub="hs"), JWT_SECRET, algorithm="HS256")).ready()["user_id"] == "hs"
    assert h.stream(jwt.encode(claims(sub="es"), ec_key, algorithm="ES256")).ready()["user_id"] == "es"
    assert_invalid_token(h.stream(jwt.encode(claims(), ec.generate_private_key(ec.SECP256R1()), algorithm="ES256"), expect=401))


def test_forbidden_channel_is_403(herald):
    token = herald.token(channels=["generation:*", "order:77"])
    s = herald.stream(token, channels="generation:1,order:78", expect=403)
    body = s.json_body()
    assert body["error"] == "forbidden_channel" and body["channel"] == "order:78"
    s = herald.stream(herald.token(), channels="user:bob", expect=403)
    assert s.json_body()["channel"] == "user:bob"
    # no channels claim grants only the personal channel, which may be named explicitly
    assert herald.stream(herald.token(), channels="user:alice").ready()["channels"] == ["user:alice"]


@pytest.mark.parametrize("bad", ["has space", "a" * 201, "bad/char", "ümlaut", "quote\"", "semi;colon"])
def test_invalid_channel_name_is_400(herald, bad):
    token = herald.token(channels=["*", "a:*"])
    s = herald.stream(token, channels=bad, expect=400)
    body = s.json_body()
    assert body["error"] == "invalid_request" and body["field"] == "channels", body


def test_longest_channel_name_is_accepted(herald):
    name = "a:" + "b" * 198
    s = herald.stream(herald.token(channels=[name]), channels=name)
    assert s.ready()["channels"] == ["user:alice", name]


def test_too_many_channels_is_400(herald):
    token = herald.token(channels=["c:*"])
    s = herald.stream(token, channels=",".join(f"c:{i}" for i in range(65)), expect=400)
    assert s.json_body()["field"] == "channels"
    s = herald.stream(token, channels=",".join(f"c:{i}" for i in range(64)))
    assert len(s.ready()["channels"]) == 65


def test_channels_named_twice_count_once(herald):
    token = herald.token(channels=["c:*"])
    # 64 distinct channels named with repeats (and the personal channel) are within the limit.
    named = [f"c:{i}" for i in range(64)] + ["c:0", "c:63", "user:alice", ""]
    s = herald.stream(token, channels=",".join(named))
    assert s.ready()["channels"] == ["user:alice"] + [f"c:{i}" for i in range(64)]
    s.close()
    body = herald.stream(token, channels=",".join(named + ["c:64"]), expect=400).json_body()
    assert body["error"] == "invalid_request" and body["field"] == "channels", body


def test_websocket_channels_without_a_token_follow_the_stream_rules(herald):
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    for bad in (",".join(f"c:{i}" for i in range(65)), "c:1, c:2,bad name"):
        r = httpx.get(herald.url("/v1/ws"), params={"channels": bad}, headers=upgrade)
        assert r.status_code == 400, (bad, r.status_code, r.text)
        assert r.json()["field"] == "channels", r.json()


def test_server_key_is_not_an_access_token(herald):
    assert_invalid_token(herald.stream(token="e2e-server-key", expect=401))


def test_stream_refused_without_any_jwt_key(herald_factory):
    h = herald_factory(HERALD_JWT_SECRET="")
    assert_invalid_token(h.stream(jwt.encode(claims(), JWT_SECRET, algorithm="HS256"), expect=401))
    assert httpx.get(h.url("/healthz")).status_code == 200


def test_bearer_scheme_is_case_insensitive(herald):
    s = herald.stream(token="", headers={"Authorization": f"bearer {herald.token(sub='lower')}"})
    assert s.ready()["user_id"] == "lower"


@pytest.mark.parametrize("exp", [2**63 - 1, 2**63 - 30])
def test_far_future_exp_does_not_crash(herald, exp):
    token = jwt.encode({"sub": "alice", "exp": exp}, JWT_SECRET, algorithm="HS256")
    try:
        s = herald.stream(token, expect=None)
        status = s.status
        if status == 200:
            s.ready()
    except httpx.TransportError as exc:
        status = f"connection lost ({exc})"
    assert herald.proc.poll() is None, f"herald died with {herald.proc.returncode}"
    assert status in (200, 401), status
    assert httpx.get(herald.url("/healthz")).status_code == 200


def test_far_future_exp_within_range_is_accepted(herald):
    token = jwt.encode({"sub": "alice", "exp": 2**62}, JWT_SECRET, algorithm="HS256")
    herald.stream(token).ready()


@pytest.mark.parametrize("pattern,channel", [
    ("generation*", "generation:1"),     # the star must follow a colon
    ("generation*", "generationx"),
    ("user:4*", "user:42"),
    ("*", "anything"),
    (":*", "x"),
])
def test_grant_patterns_other_than_prefix_colon_star_grant_nothing(herald, pattern, channel):
    s = herald.stream(herald.token(channels=[pattern]), channels=channel, expect=403)
    assert s.json_body()["channel"] == channel
