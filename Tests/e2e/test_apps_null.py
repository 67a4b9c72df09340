"""`null` in `PATCH /v1/apps/{app}` (a new user's report, H1/L1): `null` clears a member — in the
answer, in storage (after a restart) and for the next request — or is refused with 400 naming the
member and saying why; a cleared HS256 secret stops verifying tokens at once.
"""
import json
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import assert_error
from test_apps import (ADMIN_KEY, CHAT_ISSUER, CHAT_SECRET, CHAT_SERVER_KEY, HTTP, admin, bearer, chat_app_body, chat_token,  # noqa: F401
                       create_chat, herald_apps, provider_double, provider_double_module)


def ec_key():
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return key, pem


def es256_token(key, sub="carol", sid="cs1") -> str:
    return jwt.encode({"sub": sub, "sid": sid, "iss": CHAT_ISSUER, "exp": int(time.time()) + 3600}, key, algorithm="ES256")


def patch(h, body):
    return HTTP.patch(h.url("/v1/apps/chat"), json=body, headers=admin())


def get_chat(h) -> dict:
    r = HTTP.get(h.url("/v1/apps/chat"), headers=admin())
    assert r.status_code == 200, r.text
    return r.json()


def devices_status(h, token) -> int:
    return HTTP.get(h.url("/v1/me/devices"), headers=bearer(token)).status_code


def test_a_null_hs256_secret_is_removed_and_its_tokens_refused_also_after_a_restart(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    leaked = chat_token()
    assert devices_status(h, leaked) == 200
    key, pem = ec_key()
    r = patch(h, {"tokens": {"hs256_secret": None, "public_keys": [pem]}})
    assert r.status_code == 200, r.text
    assert r.json()["tokens"]["hs256_secret"] is None and r.json()["tokens"]["public_keys"] == [pem], r.json()
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(leaked)), 401, "invalid_token")
    assert devices_status(h, es256_token(key)) == 200
    h.restart()
    assert get_chat(h)["tokens"]["hs256_secret"] is None
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(leaked)), 401, "invalid_token")
    assert devices_status(h, es256_token(key)) == 200


def test_clearing_the_only_token_key_leaves_an_app_without_tokens_and_with_its_server_keys(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    r = patch(h, {"tokens": {"hs256_secret": None}})
    assert r.status_code == 200, r.text
    body = assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(chat_token())), 401, "invalid_token")
    assert "no access-token keys" in body["message"], body
    publish = {"channel": "c", "event": "e", "data": {}}
    assert HTTP.post(h.url("/v1/publish"), json=publish, headers=bearer(CHAT_SERVER_KEY)).status_code == 200
    # Set again: tokens verify again.
    assert patch(h, {"tokens": {"hs256_secret": CHAT_SECRET}}).status_code == 200
    assert devices_status(h, chat_token()) == 200


def test_clearing_a_secret_an_algorithm_list_still_needs_is_refused_and_keeps_it(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double)
    _, pem = ec_key()
    assert patch(h, {"tokens": {"public_keys": [pem], "algorithms": ["HS256"]}}).status_code == 200
    before = get_chat(h)["tokens"]["hs256_secret"]
    assert_error(patch(h, {"tokens": {"hs256_secret": None}}), 400, "invalid_request", field="tokens.algorithms")
    assert get_chat(h)["tokens"]["hs256_secret"] == before
    assert devices_status(h, chat_token()) == 200
    # Clearing the algorithm list with it: the secret goes, the EC key stays.
    assert patch(h, {"tokens": {"hs256_secret": None, "algorithms": None}}).status_code == 200
    assert devices_status(h, chat_token()) == 401


def test_every_nullable_member_is_cleared_in_the_answer_and_in_storage(herald_apps, provider_double):
    h = herald_apps
    _, pem = ec_key()
    jwks = {"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1",
                      "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}
    catalog = {"categories": {"messages": {"name": {"en": "Messages", "pt-BR": "Mensagens"}}},
               "kinds": {"hello": {"category": "messages", "title": {"en": "Hi", "pt-BR": "Oi"}}}}
    create_chat(h, provider_double, cors_origins=["https://a.example"],
                exclusions={"audiences": ["staff"], "kinds": ["k"], "data_prefixes": [{"key": "u", "prefix": "/x"}]},
                push={**chat_app_body(provider_double)["push"], "expo": {"access_token": "expo-token"}})
    r = patch(h, {"tokens": {"public_keys": [pem], "jwks": jwks, "algorithms": ["HS256", "ES256"], "audience": "herald"},
                  "catalog": catalog})
    assert r.status_code == 200, r.text
    cases = [
        ({"tokens": {"public_keys": None}}, lambda a: a["tokens"]["public_keys"], []),
        ({"tokens": {"jwks": None}}, lambda a: a["tokens"]["jwks"], None),
        ({"tokens": {"algorithms": None}}, lambda a: a["tokens"]["algorithms"], []),
        ({"tokens": {"issuer": None}}, lambda a: a["tokens"]["issuer"], None),
        ({"tokens": {"audience": None}}, lambda a: a["tokens"]["audience"], None),
        ({"tokens": {"session_claim": None}}, lambda a: a["tokens"]["session_claim"], None),
        ({"cors_origins": None}, lambda a: a["cors_origins"], []),
        ({"catalog": None}, lambda a: a["catalog"], None),
        ({"default_locale": None}, lambda a: a["default_locale"], None),
        ({"payload": None}, lambda a: a["payload"], {"root_key": None}),
        ({"exclusions": {"kinds": None}}, lambda a: a["exclusions"]["kinds"], []),
        ({"exclusions": None}, lambda a: a["exclusions"], {"audiences": [], "kinds": [], "data_prefixes": []}),
        ({"push": {"expo": None}}, lambda a: a["push"]["expo"], None),
        ({"push": {"apns": None}}, lambda a: a["push"]["apns"], None),
        ({"push": {"fcm": None}}, lambda a: a["push"]["fcm"], None),
    ]
    for body, member, cleared in cases:
        r = patch(h, body)
        assert r.status_code == 200, (body, r.text)
        assert member(r.json()) == cleared, (body, r.json())
        assert member(get_chat(h)) == cleared, body
    h.restart()
    stored = get_chat(h)
    for body, member, cleared in cases:
        assert member(stored) == cleared, (body, stored)
    # The token secret was never touched by these.
    assert stored["tokens"]["hs256_secret"] is not None
    assert devices_status(h, chat_token(sid=None, app="chat")) == 200   # no issuer to route by now


def test_cors_origins_null_stops_the_origin_at_once(herald_apps, provider_double):
    h = herald_apps
    create_chat(h, provider_double, cors_origins=["https://a.example"])
    headers = {**bearer(chat_token()), "Origin": "https://a.example"}
    assert HTTP.get(h.url("/v1/me/devices"), headers=headers).headers.get("access-control-allow-origin") == "https://a.example"
    assert patch(h, {"cors_origins": None}).status_code == 200
    assert "access-control-allow-origin" not in HTTP.get(h.url("/v1/me/devices"), headers=headers).headers


@pytest.mark.parametrize("body, field, says", [
    ({"server_keys": None}, "server_keys", "1 to 10"),
    ({"server_keys": "chat-key-0123456789abc"}, "server_keys", "1 to 10"),
    ({"server_keys": []}, "server_keys", "1 to 10"),
    ({"tokens": None}, "tokens", "one by one"),
    ({"push": None}, "push", "one by one"),
    ({"tokens": {"user_claim": None}}, "tokens.user_claim", "cannot be cleared"),
    ({"cors_origins": "https://a.example"}, "cors_origins", "origins"),
    ({"tokens": {"public_keys": "pem"}}, "tokens.public_keys", "PEM"),
])
def test_nulls_that_cannot_clear_are_refused_saying_why_and_change_nothing(herald_apps, provider_double, body, field, says):
    h = herald_apps
    create_chat(h, provider_double)
    before = get_chat(h)
    error = assert_error(patch(h, body), 400, "invalid_request", field=field)
    assert says in error["message"], error
    assert get_chat(h) == before
    assert devices_status(h, chat_token()) == 200


def test_a_null_secret_repairs_an_app_whose_secret_no_longer_opens(herald_factory, provider_double, tmp_path):
    """docs/api.md: send every unreadable secret again "(or `null`)" in the PATCH, which loads the app."""
    import base64
    first = base64.b64encode(bytes(range(32))).decode()
    other = base64.b64encode(bytes(range(1, 33))).decode()
    h = herald_factory(**provider_double.herald_env(), HERALD_ADMIN_KEY=ADMIN_KEY, HERALD_SECRET_KEY=first)
    r = HTTP.post(h.url("/v1/apps"), json={"id": "chat", "tokens": {"hs256_secret": CHAT_SECRET}, "server_keys": [CHAT_SERVER_KEY]},
                  headers=admin())
    assert r.status_code == 201, r.text
    h.env["HERALD_SECRET_KEY"] = other
    h.restart()
    assert json.loads(HTTP.get(h.url("/readyz")).text)["apps_not_loaded"] == {"chat": "secrets_unreadable"}
    _, pem = ec_key()
    assert_error(patch(h, {"tokens": {"public_keys": [pem]}}), 409, "secret_unreadable", field="tokens.hs256_secret")
    r = patch(h, {"tokens": {"hs256_secret": None, "public_keys": [pem]}})
    assert r.status_code == 200, r.text
    assert r.json()["tokens"]["hs256_secret"] is None
    assert json.loads(HTTP.get(h.url("/readyz")).text)["apps_not_loaded"] == {}
    assert devices_status(h, chat_token()) == 401
