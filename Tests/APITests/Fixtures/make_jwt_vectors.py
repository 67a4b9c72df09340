#!/usr/bin/env python3
"""Generates Tests/APITests/JWTVectors.swift: JWT test vectors produced by PyJWT.

Usage:
    pip install pyjwt cryptography      # tested with PyJWT 2.15.1, cryptography 48
    python3 Tests/APITests/Fixtures/make_jwt_vectors.py            # rewrites ../JWTVectors.swift
    python3 Tests/APITests/Fixtures/make_jwt_vectors.py --new-keys # prints fresh key constants to paste below

Reproducibility: the keys below are fixed TEST-ONLY keys (generated once with --new-keys), so HS256 and
RS256 tokens come out byte-identical on every run. ES256 signatures are randomized by ECDSA, so ES256
tokens differ between runs but stay valid for the same keys and claims. EC keys cannot be derived from
a seed with `cryptography`, which is why the keys are embedded rather than regenerated.

Every vector's expected outcome is also checked against PyJWT itself where PyJWT has an opinion
(signature validity), so the Swift tests and PyJWT agree on what is a good token.
"""

import base64
import hashlib
import hmac
import json
import math
import pathlib
import sys
import warnings

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

NOW = 1_800_000_000          # fixed "current time" used by the Swift tests (2027-01-15T08:00:00Z)
LEEWAY = 60                  # the verifier's default leeway
HMAC_SECRET = b"herald-test-hs256-secret-0123456789abcdef"   # 41 bytes, >= 256 bits as RFC 7518 3.2 wants

# ---- TEST-ONLY keys. Never use these anywhere else. ------------------------------------------------
RSA_PRIVATE_PEM = """-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCTstgXO25cU9G9
BLlx1e91gsAemELdesamPLlkvcDf6ciWPanXYHLfI+qdRSejqBKwhLiAyALozllt
9m7anSxQhhYHd+qKUMDjuJytv0U3YgKqYS0KfRmuiqQag+WSK8xcKUYd81lP591K
0fSoiKPpEznnKG7cql7svLaXyx7waNMwxx9f0yluPmhfN3SMGLqPA/ms6qYsbGKI
pyMliPM2w8BjUrMDoZ+Frop1XdiOORfNiF+Bl1nNz/OXtE5O7KSeG7uwWuep8xeH
VDJwCoz085Tw0P81H6XREsytZPIhqJNvmvyUNSo0k6P03A7dk82m2JtHdP086aGF
vomMRtcZAgMBAAECggEAIw4j5TG1IiM/yNvd8uOKu+qOVEShvCUHkI2hmAREirCX
a/dTQBvzb7w701uGSrzZwL0jeGdgb2aIicWfbnI3Ah6tDFU9HNqJSZM31rIqyLgR
t2Qsl0x1Y7yisetjucN889PVAUdQh5tZ5cf6yGRz+N4YFGH/nA6wzIIG2XS7kWYH
W8cFeA2Na3lnI9QhIjR/Wec7Ubv5O/vJkL2hx8gTyUtsID9jO8aJCdM8KAc8yPmW
T0nGgtQ2SIwbZu+LjozpmmoiGnafkaUE7nsEKP/x09fwcaMwOcSpIF69+wEsslG+
BDdejtPGbbvKFCl6yf7dnNq9QA/qoL9Jl0yK+eiOPQKBgQDPBtdUOiMoUp2nUUNT
Hz/SI5pl/QgS67edwmzFbEUhIYe09M2lG4d1EvLeeK4Qh0N+nHjRJ0OFspX2O9A4
5aYv8GbQ8cGwK6zSrfDCTpqT3yb+LKC937wayMT4q0OVq7EVh+jebXWcwHn91m1q
DCAAyx4bJm5oRGJLW03p4L6f7QKBgQC2ozOAdakiMTHoW0PGieOuzk6gnHr6DNN4
YUV6oSTaksGZNd8Abt9Pm8dpKcuvUfsrOscel9Xl+bhH69NBZdPo4x4DaMuNkohn
ddjjX5OyqjV4k7evqh/sTHZ9dslBDNR53HcO0DoqHfWmbrBLqmYqx8zh4nECLvG9
fNa7mZ32XQKBgBb0uD3DsJBREOAzt5Zo+aewgPdcJmAKuTKKE4uUpNm2oRikqITt
V4jY0AtxMEPu68IHUbJHe0pA8jX6je0xMctRCeWTWRnSzfgSh4bUNnm9HdLDWhOT
0oTZzFWSkAzxm9I6Xs0DMC5wfVZzR3Ch5Y6Q90albUqsgoW+mxYa8KhFAoGAVmSi
4xxFUmhE/G3XhJ4LdtAef3kl7wyMKACTVivN/Bq5u5ixEUphFg5RaNydfiRglJVs
RXt7chsLYfIa72+UqzBsLR6wUxrCrXYgj4XRnw1G1+/ATzdBfIy67CR5lOzVwYNZ
SkeTjAK6Be2MNW64f3od36g23tqH/aOFDB7hiv0CgYBZUcCfcgruWhAulx1jJSeQ
pXFfWKyZBLHcij2D/YUIrZrUvZS5ELDKERZr5seoxydnazKsc3ZD7ad8kJ/FTMNi
6tgAaNooAUdbYa6UygieDnqROQcoRilwm3V3P8OQpPPwYpSWnQaPFaekMj1v4Fna
75fX6A8sEEsfPC5THfDS5g==
-----END PRIVATE KEY-----
"""
EC_PRIVATE_PEM = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQguBlGI9k4bh0KPn8c
h1HNtISplPBOTLQBMMIKQlqUuXuhRANCAAT16CvuHlZIJUCdCuYX7cfmh2d9qNLS
hWK9+9tbBlM2GDlhqjng9jm+OXCs06TvvCWAh8NcB25wtipJuwuJ5Ds0
-----END PRIVATE KEY-----
"""
EC_P384_PRIVATE_PEM = """-----BEGIN PRIVATE KEY-----
MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDimZlwv9yFAJxmn7H4
Bk6y+3P1ioGjie0XQHtXrFWOhgAFgxzp/0j9/Njcy1eVAXehZANiAAQmHaKVINzL
mTJH0YFWBOG1xk+xpM4g3hmKOyMOXKGfShKql+pf6wv9YB8bd4OiiNFKNMoq/AXA
rGAZHx5/Uc1ns3M0cP5B9DxVmgklzl5eD1KJtiq36ds9soCsHcCB/aI=
-----END PRIVATE KEY-----
"""
RSA_1024_PRIVATE_PEM = """-----BEGIN PRIVATE KEY-----
MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBAMS48jOGvDPf6xV1
IyupQqL1WDBXU0DC5hfNBztwkfUYajZPmZBJzwdZOyDPuaiHZ/wlyZZ3ihBjWqhR
CC2EqoQ/kPZ8Tzsli6kTCIU2Y3jMZrjC4h/+oR39VcQrFtgoCov9aBBhIChhl2oo
Qo29iNmWno2wiwKQiXCATTn61iQtAgMBAAECgYEAqM9EF28xJRqrMniYO6k9Y3VB
vgnRiSs2I4pvAFSzCy1uRzi7QBP2MgoiMR/P44x+cONEP3hI45M+gl02tUi4wMzc
MgaDQCwQN+qWrLG0wfN68/ivEzjsqAiYxHBnIlNry2C0lK1XLlLMuooFfZxXt7xN
fehOqqEKIXvfhPbUpskCQQD1J21e88wm5/l5eRPEaWiw9n2R48DD/LrmHD1D3bqa
SrEJZmCf6SS0h/6AH5/zZq+iAKLV5OXNfvWx/vif14s3AkEAzWz9vF1cTEAoyB3H
6jMlyHol7PsTox9ApNrEH5bEREKUDob3GGf4DycfJqzSfKj6XjONb+sLeXLR9cSG
EB+luwJBALo3Ma+/dmJTML/hhW9bNie9hBJuMr1sWrdx2eOUKCsM8z8Voe211ai/
6ESAQSpM5Loky4u3rAsVFiIXb9lSi68CQHkHgeb8ymhSVLSydxpQ0C3xaW7Z7pPo
0dlO2sYRucjNwRVeBy7l8oxa7EuI/upbVEcz8FzECpqfP3yhMKtHOgkCQGw7Pu/L
eWv19iGI7x4zJGYbSzavt3Wy1rYpJCOb1ME7Ei+wLtMi4TN/4veE9ykv+ldJc5fW
yo22hr524ux7EtE=
-----END PRIVATE KEY-----
"""
ED25519_SEED = bytes(range(32))   # Ed25519 *can* be derived from a seed


def new_keys() -> None:
    def pem(k):
        return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption()).decode()
    print('RSA_PRIVATE_PEM = """' + pem(rsa.generate_private_key(65537, 2048)) + '"""')
    print('EC_PRIVATE_PEM = """' + pem(ec.generate_private_key(ec.SECP256R1())) + '"""')
    print('EC_P384_PRIVATE_PEM = """' + pem(ec.generate_private_key(ec.SECP384R1())) + '"""')
    print('RSA_1024_PRIVATE_PEM = """' + pem(rsa.generate_private_key(65537, 1024)) + '"""')


def load(pem: str):
    return serialization.load_pem_private_key(pem.encode(), password=None)


def public_pem(private_key) -> str:
    return private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


RSA_KEY = load(RSA_PRIVATE_PEM)
EC_KEY = load(EC_PRIVATE_PEM)
SIGNING_KEYS = {"HS256": HMAC_SECRET, "RS256": RSA_KEY, "ES256": EC_KEY}
VERIFY_KEYS = {"HS256": HMAC_SECRET, "RS256": RSA_KEY.public_key(), "ES256": EC_KEY.public_key()}
RSA_PUBLIC_PEM = public_pem(RSA_KEY)
EC_PUBLIC_PEM = public_pem(EC_KEY)


# ---- helpers -------------------------------------------------------------------------------------
def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64u_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def compact_json(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def sign(alg: str, payload, headers=None) -> str:
    """PyJWT-signed token; `payload` is a dict (JWT) or raw bytes (JWS, for non-JSON payloads)."""
    key = SIGNING_KEYS[alg]
    if isinstance(payload, dict):
        return jwt.encode(payload, key, algorithm=alg, headers=headers)
    return jwt.api_jws.encode(payload, key, algorithm=alg, headers=headers)


def hs256_raw(header_b64: str, payload_b64: str, secret: bytes) -> str:
    """Hand-made HS256 token for headers/keys PyJWT refuses to produce (e.g. a PEM as HMAC secret)."""
    signing_input = f"{header_b64}.{payload_b64}".encode()
    return f"{header_b64}.{payload_b64}." + b64u(hmac.new(secret, signing_input, hashlib.sha256).digest())


def flip_signature_byte(token: str) -> str:
    head, payload, sig = token.split(".")
    raw = bytearray(b64u_decode(sig))
    raw[len(raw) // 2] ^= 0x01
    return f"{head}.{payload}.{b64u(bytes(raw))}"


def pyjwt_signature_ok(token: str, alg: str) -> bool:
    try:
        # JWS level only: this asks PyJWT about the signature, not about claim policy.
        jwt.api_jws.decode(token, VERIFY_KEYS[alg], algorithms=[alg])
        return True
    except jwt.InvalidSignatureError:
        return False


# ---- Swift emission -------------------------------------------------------------------------------
def swift_str(text: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u{%x}" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def swift_opt_int(value) -> str:
    return "nil" if value is None else str(value)


def swift_claims(c: dict) -> str:
    channels = "[" + ", ".join(swift_str(x) for x in c["channels"]) + "]"
    sid = "nil" if c["sid"] is None else swift_str(c["sid"])
    return (f"AccessClaims(subject: {swift_str(c['sub'])}, sessionID: {sid}, expiresAt: {c['exp']}, "
            f"notBefore: {swift_opt_int(c['nbf'])}, issuedAt: {swift_opt_int(c['iat'])}, "
            f"channels: {channels}, sessionExpiresAt: {swift_opt_int(c['session_exp'])})")


def expected_claims(payload: dict) -> dict:
    """What the Swift verifier must return: fractional times round towards 'less valid'."""
    def num(name, rounding):
        value = payload.get(name)
        return None if value is None else int(rounding(value))
    return {"sub": payload["sub"], "sid": payload.get("sid"), "exp": num("exp", math.floor),
            "nbf": num("nbf", math.ceil), "iat": num("iat", math.floor),
            "channels": payload.get("channels", []), "session_exp": num("session_exp", math.floor)}


VECTORS = []   # (name, key, token, swift outcome expression)


def accept(name, key, token, payload):
    if key != "none":
        assert pyjwt_signature_ok(token, key.upper()), name
    VECTORS.append((name, key, token, f".accept({swift_claims(expected_claims(payload))})"))


def reject(name, key, token, rejection):
    VECTORS.append((name, key, token, f".reject({rejection})"))


def alg_key(alg):
    return alg.lower()   # JWTVectorKey case name in Swift


# ---- the vectors ------------------------------------------------------------------------------------
def full_claims(**overrides):
    claims = {"sub": "user-42", "sid": "sess-7", "iat": NOW - 10, "nbf": NOW - 10, "exp": NOW + 3600,
              "channels": ["room:lobby", "user:42:*"], "session_exp": NOW + 86_400}
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def per_algorithm(alg: str) -> None:
    k = alg_key(alg)
    valid_payload = full_claims()
    valid = sign(alg, valid_payload)
    accept(f"{alg} valid", k, valid, valid_payload)

    minimal = {"sub": "user-1", "exp": NOW + 60}
    accept(f"{alg} minimal (sub + exp only)", k, sign(alg, minimal), minimal)

    reject(f"{alg} expired beyond leeway", k, sign(alg, full_claims(exp=NOW - 120)), ".exactly(.expired)")
    p = full_claims(exp=NOW - 30)
    accept(f"{alg} expired within leeway", k, sign(alg, p), p)
    reject(f"{alg} nbf beyond leeway", k, sign(alg, full_claims(nbf=NOW + 120)), ".exactly(.notYetValid)")
    p = full_claims(nbf=NOW + 30)
    accept(f"{alg} nbf within leeway", k, sign(alg, p), p)

    bad = flip_signature_byte(valid)
    assert not pyjwt_signature_ok(bad, alg)
    reject(f"{alg} flipped signature byte", k, bad, ".exactly(.badSignature)")

    head, _, sig = valid.split(".")
    forged = f"{head}.{b64u(compact_json(full_claims(sub='admin')))}.{sig}"
    assert not pyjwt_signature_ok(forged, alg)
    reject(f"{alg} payload swapped under old signature", k, forged, ".exactly(.badSignature)")

    head, payload, sig = valid.split(".")
    short = f"{head}.{payload}.{b64u(b64u_decode(sig)[:-1])}"
    reject(f"{alg} signature one byte short", k, short, ".exactly(.badSignature)")
    reject(f"{alg} empty signature", k, f"{head}.{payload}.", ".exactly(.badSignature)")

    reject(f"{alg} missing sub", k, sign(alg, full_claims(sub=None)), '.exactly(.missingClaim("sub"))')
    reject(f"{alg} missing exp", k, sign(alg, full_claims(exp=None)), '.exactly(.missingClaim("exp"))')

    p = full_claims()
    accept(f"{alg} typ at+jwt and kid ignored", k, sign(alg, p, headers={"typ": "at+jwt", "kid": "k1"}), p)
    reject(f"{alg} crit header", k, sign(alg, full_claims(), headers={"crit": ["exp"]}), ".malformed")
    reject(f"{alg} signed payload not JSON", k, sign(alg, b"this is not json"), ".malformed")
    reject(f"{alg} signed payload is a JSON array", k, sign(alg, b'["sub","exp"]'), ".malformed")

    unsigned = jwt.encode(full_claims(), None, algorithm="none")
    assert unsigned.endswith(".")
    reject(f"{alg} key given alg none", k, unsigned, '.exactly(.unsupportedAlgorithm("none"))')
    for spelling in ("None", "NONE", "nOnE"):
        header = b64u(compact_json({"alg": spelling, "typ": "JWT"}))
        token = f"{header}.{b64u(compact_json(full_claims()))}."
        reject(f"{alg} key given alg {spelling}", k, token, f'.exactly(.unsupportedAlgorithm("{spelling}"))')


def cross_algorithm() -> None:
    payload_b64 = b64u(compact_json(full_claims()))
    hs_header = b64u(compact_json({"alg": "HS256", "typ": "JWT"}))
    # The classic key-confusion attack: HMAC keyed with the public key's PEM text, which an attacker knows.
    reject("RS256 key given HS256 token keyed with its own public PEM", "rs256",
           hs256_raw(hs_header, payload_b64, RSA_PUBLIC_PEM.encode()),
           '.exactly(.algorithmMismatch(expected: .rs256, got: "HS256"))')
    reject("ES256 key given HS256 token keyed with its own public PEM", "es256",
           hs256_raw(hs_header, payload_b64, EC_PUBLIC_PEM.encode()),
           '.exactly(.algorithmMismatch(expected: .es256, got: "HS256"))')
    reject("RS256 key given a valid ES256 token", "rs256", sign("ES256", full_claims()),
           '.exactly(.algorithmMismatch(expected: .rs256, got: "ES256"))')
    reject("ES256 key given a valid RS256 token", "es256", sign("RS256", full_claims()),
           '.exactly(.algorithmMismatch(expected: .es256, got: "RS256"))')
    reject("HS256 key given a valid RS256 token", "hs256", sign("RS256", full_claims()),
           '.exactly(.algorithmMismatch(expected: .hs256, got: "RS256"))')
    reject("HS256 key given a valid ES256 token", "hs256", sign("ES256", full_claims()),
           '.exactly(.algorithmMismatch(expected: .hs256, got: "ES256"))')
    reject("HS256 key given HS512 token", "hs256", jwt.encode(full_claims(), HMAC_SECRET, algorithm="HS512"),
           '.exactly(.unsupportedAlgorithm("HS512"))')
    reject("RS256 key given PS256 token", "rs256", jwt.encode(full_claims(), RSA_KEY, algorithm="PS256"),
           '.exactly(.unsupportedAlgorithm("PS256"))')
    lower = b64u(compact_json({"alg": "hs256", "typ": "JWT"}))
    reject("HS256 key given lowercase hs256 alg (alg is case-sensitive)", "hs256",
           hs256_raw(lower, payload_b64, HMAC_SECRET), '.exactly(.unsupportedAlgorithm("hs256"))')


def claim_types() -> None:
    def hs(name, payload, outcome=None):
        token = sign("HS256", payload)
        if outcome is None:
            accept(f"claims: {name}", "hs256", token, payload)
        else:
            reject(f"claims: {name}", "hs256", token, outcome)

    hs("empty sub", full_claims(sub=""), '.exactly(.invalidClaim("sub"))')
    hs("numeric sub", full_claims(sub=42), '.exactly(.invalidClaim("sub"))')
    hs("exp as string", full_claims(exp=str(NOW + 3600)), '.exactly(.invalidClaim("exp"))')
    hs("exp as bool", full_claims(exp=True), '.exactly(.invalidClaim("exp"))')
    hs("exp null", {"sub": "u", "exp": None}, '.exactly(.invalidClaim("exp"))')
    hs("exp too large for Int64", full_claims(exp=1e30), '.exactly(.invalidClaim("exp"))')
    hs("exp fractional rounds down", full_claims(exp=NOW + 3600.75))
    hs("exp as float exactly integral", full_claims(exp=float(NOW + 3600)))
    hs("nbf fractional rounds up", full_claims(nbf=NOW + 30.25))
    hs("nbf as string", full_claims(nbf="soon"), '.exactly(.invalidClaim("nbf"))')
    hs("iat as string", full_claims(iat="then"), '.exactly(.invalidClaim("iat"))')
    hs("sid numeric", full_claims(sid=7), '.exactly(.invalidClaim("sid"))')
    hs("channels as string", full_claims(channels="room:lobby"), '.exactly(.invalidClaim("channels"))')
    hs("channels with a number", full_claims(channels=["room:lobby", 1]), '.exactly(.invalidClaim("channels"))')
    hs("channels empty array", full_claims(channels=[]))
    hs("session_exp as string", full_claims(session_exp="later"), '.exactly(.invalidClaim("session_exp"))')
    hs("unknown claims ignored", {**full_claims(), "iss": "https://auth.example", "aud": ["herald"],
                                  "scope": {"nested": [1, 2, {"deep": True}]}, "jti": None})
    hs("unicode and escapes (PyJWT writes \\u escapes)",
       full_claims(sid='a"b\\c', channels=["room:café", "tab\there", "emoji:🎉:*"]))
    # A sub must form the personal channel `user:{sub}` (SPEC RT-1): refused on every route.
    unusable = '.exactly(.unusableSubject("sub"))'
    hs("unicode sub (cannot name user:{sub})",
       full_claims(sub="usér-✓-🎉", sid='a"b\\c', channels=["room:café", "tab\there", "emoji:🎉:*"]), unusable)
    hs("sub of 195 characters", full_claims(sub="u" * 195, channels=[]))
    hs("sub of 196 characters", full_claims(sub="u" * 196, channels=[]), unusable)
    hs("sub with a space", full_claims(sub="a b", channels=[]), unusable)
    hs("sub with a slash", full_claims(sub="x/y", channels=[]), unusable)
    hs("sub é", full_claims(sub="é", channels=[]), unusable)


def malformed() -> None:
    valid = sign("HS256", full_claims())
    head, payload, sig = valid.split(".")
    m = ".malformed"
    reject("malformed: empty string", "hs256", "", m)
    reject("malformed: two parts", "hs256", f"{head}.{payload}", m)
    reject("malformed: four parts", "hs256", f"{valid}.{sig}", m)
    reject("malformed: one part", "hs256", head, m)
    reject("malformed: header has '+' (standard base64)", "hs256", f"{head[:5]}+{head[6:]}.{payload}.{sig}", m)
    reject("malformed: header has '!'", "hs256", f"!{head[1:]}.{payload}.{sig}", m)
    reject("malformed: padded header", "hs256", f"{b64u(compact_json({'alg': 'HS256'}))}==.{payload}.{sig}", m)
    reject("malformed: signature has '/'", "hs256", f"{head}.{payload}.{sig[:-2]}/{sig[-1]}", m)
    reject("malformed: header not JSON", "hs256", f"{b64u(b'not json')}.{payload}.{sig}", m)
    array_header, string_header = b64u(b'["HS256"]'), b64u(b'"HS256"')
    reject("malformed: header is a JSON array", "hs256", f"{array_header}.{payload}.{sig}", m)
    reject("malformed: header is a JSON string", "hs256", f"{string_header}.{payload}.{sig}", m)
    reject("malformed: header without alg", "hs256", hs256_raw(b64u(b'{"typ":"JWT"}'), payload, HMAC_SECRET), m)
    reject("malformed: header alg is a number", "hs256", hs256_raw(b64u(b'{"alg":256}'), payload, HMAC_SECRET), m)
    # Correctly HMACed over a payload segment that is not base64url: rejected after the signature check.
    reject("malformed: validly signed payload not base64url", "hs256",
           hs256_raw(head, "not*base64", HMAC_SECRET), m)


# Issuer vectors: HS256 is deterministic, so PyJWT and AccessTokenIssuer must agree byte for byte
# given the same member order and escaping (json.dumps with ensure_ascii=False).
class _NoAsciiEscapes(json.JSONEncoder):
    def __init__(self, *args, **kwargs):
        kwargs["ensure_ascii"] = False
        super().__init__(*args, **kwargs)


ISSUER_CLAIMS = [
    {"sub": "user-42", "sid": "sess-7", "iat": NOW - 10, "nbf": NOW - 10, "exp": NOW + 3600,
     "channels": ["room:lobby", "user:42:*"], "session_exp": NOW + 86_400},
    {"sub": "user-1", "exp": NOW + 60},
    {"sub": 'q"b\\s/ü✓🎉', "exp": NOW, "channels": ["tab\tnl\ncr\rbs\bff\fctl\x01\x1f del\x7f", "€"]},
]


def issuer_vectors():
    out = []
    for claims in ISSUER_CLAIMS:
        token = jwt.encode(claims, HMAC_SECRET, algorithm="HS256", json_encoder=_NoAsciiEscapes)
        assert b64u_decode(token.split(".")[0]) == b'{"alg":"HS256","typ":"JWT"}', token
        assert jwt.decode(token, HMAC_SECRET, algorithms=["HS256"], options={"verify_exp": False, "verify_nbf": False, "verify_iat": False}) == claims
        out.append((swift_claims(expected_claims(claims)), token))
    return out


def main() -> None:
    # The HS512 vector deliberately uses a short-for-SHA512 key; PyJWT's warning about it is noise here.
    warnings.simplefilter("ignore", jwt.warnings.InsecureKeyLengthWarning)
    if "--new-keys" in sys.argv:
        new_keys()
        return
    for alg in ("HS256", "RS256", "ES256"):
        per_algorithm(alg)
    cross_algorithm()
    claim_types()
    malformed()
    issuers = issuer_vectors()

    ed25519_pem = public_pem(ed25519.Ed25519PrivateKey.from_private_bytes(ED25519_SEED))
    pkcs1_pem = RSA_KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.PKCS1).decode()

    def pem_const(name, pem):
        body = "\n".join("        " + line for line in pem.strip().splitlines())
        return f'    static let {name} = """\n{body}\n        """\n'

    lines = [
        "// GENERATED by Tests/APITests/Fixtures/make_jwt_vectors.py — do not edit by hand; rerun the script.",
        f"// PyJWT {jwt.__version__}. Keys are TEST-ONLY. ES256 tokens change on each run (ECDSA is randomized).",
        "",
        "@testable import API",
        "",
        "enum JWTVectors {",
        "    /// The fixed clock every vector is evaluated at, Unix seconds.",
        f"    static let now: Int64 = {NOW}",
        f"    static let leeway: Int64 = {LEEWAY}",
        f"    static let hmacSecret: [UInt8] = Array({swift_str(HMAC_SECRET.decode())}.utf8)",
        "",
        pem_const("rsaPublicKeyPEM", RSA_PUBLIC_PEM),
        pem_const("ecPublicKeyPEM", EC_PUBLIC_PEM),
        "    /// P-384: parses, but ES256 is P-256 only.",
        pem_const("ecP384PublicKeyPEM", public_pem(load(EC_P384_PRIVATE_PEM))),
        "    /// RSA-1024: below RFC 7518 §3.3's 2048-bit minimum.",
        pem_const("rsa1024PublicKeyPEM", public_pem(load(RSA_1024_PRIVATE_PEM))),
        pem_const("ed25519PublicKeyPEM", ed25519_pem),
        "    /// The RS256 key again, as PKCS#1 `BEGIN RSA PUBLIC KEY` instead of SPKI (OpenSSL 3 reads both).",
        pem_const("rsaPKCS1PublicKeyPEM", pkcs1_pem),
        "    /// A private key where a public key is expected: must be refused as unreadable.",
        pem_const("ecPrivateKeyPEM", EC_PRIVATE_PEM),
        "    static let all: [JWTVector] = [",
    ]
    for name, key, token, outcome in VECTORS:
        lines.append(f"        JWTVector(name: {swift_str(name)}, key: .{key},")
        lines.append(f"                  token: {swift_str(token)},")
        lines.append(f"                  outcome: {outcome}),")
    lines.append("    ]")
    lines.append("")
    lines.append("    /// HS256 tokens PyJWT produced for these claims, with the issuer's member order and")
    lines.append("    /// `ensure_ascii=False`; `AccessTokenIssuer` must reproduce them byte for byte.")
    lines.append("    static let issuer: [(claims: AccessClaims, token: String)] = [")
    for claims, token in issuers:
        lines.append(f"        ({claims},")
        lines.append(f"         {swift_str(token)}),")
    lines.append("    ]")
    lines.append("}")
    lines.append("")

    target = pathlib.Path(__file__).resolve().parent.parent / "JWTVectors.swift"
    target.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {len(VECTORS)} vectors and {len(issuers)} issuer vectors to {target}")


if __name__ == "__main__":
    main()
