"""The Web Push side: a push service (RFC 8030) at `POST /wp/<subscription id>`, strict about
what RFC 8030, RFC 8291 and RFC 8292 require of an application server.

Subscriptions made through the control API (`POST /_double/webpush/subscriptions`) are real: the
double holds the user agent's P-256 private key and auth secret and decrypts every message sent
to them. Any other `/wp/<id>` (a browser's own subscription in the demo, whose private key stays
in the browser) is accepted as an *open* subscription: everything is checked except decryption,
and the encrypted body is recorded for the browser to decrypt.

Check order:
 1. method not POST                                  -> 405
 2. subscription deleted (control API)               -> 410 (unsubscribed or expired)
 3. `Authorization` not `vapid t=<jwt>, k=<key>`     -> 401
 4. JWT: not ES256 with a raw 64-byte r||s verifying against `k`; `aud` not this push service's
    origin; `exp` missing, past, or more than 24 h ahead; `sub` not mailto:/https:   -> 401
 5. `k` not the subscription's applicationServerKey (when it was made with one)     -> 403
 6. `TTL` missing or not a non-negative integer     -> 400
 7. `Urgency` not very-low|low|normal|high; `Topic` not 1-32 base64url characters   -> 400
 8. `Content-Encoding` not aes128gcm                 -> 415
 9. body over 4096 bytes                             -> 413
10. body not one aes128gcm record (86-byte header, idlen 65, a P-256 key id, rs >= 18) or, for a
    subscription the double made, not decrypting to a last record (0x02 delimiter)  -> 400
11. an injected outcome for the subscription id, else 201 with `Location`.
"""
from __future__ import annotations

import base64
import json
import secrets

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from state import b64url_decode, decode_jwt_unverified, json_body
from transport import Request, Response

URGENCIES = ("very-low", "low", "normal", "high")
B64URL = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
MAX_BODY = 4096
MAX_EXP_S = 24 * 3600


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hmac(key: bytes, data: bytes) -> bytes:
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(data)
    return h.finalize()


def decrypt_aes128gcm(body: bytes, ua_private: ec.EllipticCurvePrivateKey, auth: bytes) -> bytes:
    """RFC 8291 §3 + RFC 8188 §2, one record; raises ValueError when it does not decrypt."""
    if len(body) < 86 + 17:
        raise ValueError("shorter than the 86-byte header plus one tagged record")
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    if idlen != 65:
        raise ValueError(f"idlen is {idlen}, RFC 8291 §4 needs 65 (the sender's public key)")
    if rs < 18:
        raise ValueError(f"record size {rs} is below 18")
    as_public_bytes = body[21:86]
    as_public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_public_bytes)
    ua_public = ua_private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    ecdh = ua_private.exchange(ec.ECDH(), as_public)
    prk_key = _hmac(auth, ecdh)
    ikm = _hmac(prk_key, b"WebPush: info\x00" + ua_public + as_public_bytes + b"\x01")
    prk = _hmac(salt, ikm)
    cek = _hmac(prk, b"Content-Encoding: aes128gcm\x00\x01")[:16]
    nonce = _hmac(prk, b"Content-Encoding: nonce\x00\x01")[:12]
    record = body[86:]
    if len(record) > rs:
        raise ValueError(f"more than one record ({len(record)} bytes, rs {rs}): Web Push sends one")
    try:
        padded = AESGCM(cek).decrypt(nonce, record, None)
    except InvalidTag:
        raise ValueError("the AES-GCM tag does not verify (wrong keys or a corrupted body)")
    stripped = padded.rstrip(b"\x00")
    if not stripped.endswith(b"\x02"):
        raise ValueError("the record does not end with the last-record delimiter 0x02")
    return stripped[:-1]


class WebPush:
    def __init__(self, state, *, origin: str, application_server_key: bytes):
        self.state = state
        self.origin = origin  # scheme://host:port of every /wp/ endpoint: the JWT `aud`
        self.application_server_key = application_server_key
        self.subscriptions: dict = {}  # id -> {"private_key", "auth", "p256dh", "application_server_key"}
        self.deleted: set = set()
        self.messages = 0

    # -- control API -----------------------------------------------------------------------

    def create_subscription(self, application_server_key=None) -> dict:
        """A subscription whose keys the double holds, as a browser's `toJSON()`, plus `id`.
        `application_server_key` (base64url) restricts it to one VAPID key (403 for others);
        default: the double's own VAPID key (`herald_env`), `false` for no restriction."""
        sub_id = secrets.token_urlsafe(16)
        private = ec.generate_private_key(ec.SECP256R1())
        p256dh = private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        auth = secrets.token_bytes(16)
        if application_server_key is None:
            restricted = self.application_server_key
        elif application_server_key is False:
            restricted = None
        else:
            restricted = b64url_decode(application_server_key)
        self.subscriptions[sub_id] = {"private_key": private, "auth": auth, "p256dh": p256dh,
                                      "application_server_key": restricted}
        return {"id": sub_id, "endpoint": f"{self.origin}/wp/{sub_id}", "expirationTime": None,
                "keys": {"p256dh": b64url(p256dh), "auth": b64url(auth)}}

    def delete_subscription(self, sub_id: str) -> bool:
        """From now on the endpoint answers 410 Gone, as after an unsubscribe."""
        self.deleted.add(sub_id)
        return self.subscriptions.pop(sub_id, None) is not None

    def reset(self) -> None:
        self.deleted.clear()

    # -- the push service --------------------------------------------------------------------

    def _error(self, entry, status: int, reason: str, message: str, extra=()) -> Response:
        body = {"code": status, "error": reason, "message": message}
        self.state.finish(entry, status, reason, [("content-type", "application/json")], body)
        return Response(status, [("content-type", "application/json")] + list(extra), json_body(body))

    async def handle(self, req: Request, sub_id: str) -> Response:
        sub = self.subscriptions.get(sub_id)
        entry = self.state.begin("webpush", req, None, {
            "subscription": sub_id, "known_subscription": sub is not None,
            "encrypted_body": b64url(req.body) if req.body else None,
        })
        notes = entry["notes"]
        if req.method != "POST":
            return self._error(entry, 405, "method_not_allowed", "push messages are POSTed (RFC 8030 §5)")
        if sub_id in self.deleted:
            return self._error(entry, 410, "gone", "push subscription has unsubscribed or expired.")
        if sub is None:
            notes.append("open subscription: the double does not hold its private key, so the body is not decrypted")

        problem = self._check_vapid(req, entry)
        if problem:
            return self._error(entry, *problem)
        k = entry["vapid"]["k_bytes"]
        del entry["vapid"]["k_bytes"]
        if sub is not None and sub["application_server_key"] is not None and k != sub["application_server_key"]:
            return self._error(entry, 403, "vapid_key_mismatch",
                               "the VAPID key is not the applicationServerKey this subscription was made with (RFC 8292 §4.2)")

        ttl = req.header("ttl")
        if ttl is None or not ttl.isdigit():
            return self._error(entry, 400, "bad_ttl", "TTL is required: a non-negative number of seconds (RFC 8030 §5.2)")
        urgency = req.header("urgency")
        if urgency is not None and urgency not in URGENCIES:
            return self._error(entry, 400, "bad_urgency", f"Urgency must be one of {', '.join(URGENCIES)} (RFC 8030 §5.3)")
        topic = req.header("topic")
        if topic is not None and not (1 <= len(topic) <= 32 and set(topic) <= B64URL):
            return self._error(entry, 400, "bad_topic", "Topic is at most 32 characters of the base64url alphabet (RFC 8030 §5.4)")
        encoding = req.header("content-encoding")
        if req.body and encoding != "aes128gcm":
            return self._error(entry, 415, "bad_content_encoding",
                               f"Content-Encoding must be aes128gcm (RFC 8291 §4), found {encoding!r}")
        if req.body_size > MAX_BODY:
            return self._error(entry, 413, "payload_too_large", f"the body is {req.body_size} bytes, over {MAX_BODY}")
        if not req.body:
            notes.append("a push without payload")
        else:
            try:
                if sub is not None:
                    plaintext = decrypt_aes128gcm(req.body, sub["private_key"], sub["auth"])
                    try:
                        entry["body"] = json.loads(plaintext)
                    except ValueError:
                        entry["body"] = {"_raw": plaintext[:2048].decode("utf-8", "replace")}
                    entry["plaintext_bytes"] = len(plaintext)
                else:
                    _check_header(req.body)
            except ValueError as error:
                return self._error(entry, 400, "bad_encryption", str(error))

        spec = self.state.outcomes.take("webpush", sub_id)
        if spec is not None:
            return await self._injected(spec, entry)
        self.messages += 1
        location = f"{self.origin}/wp/messages/{self.messages}"
        headers = [("location", location), ("ttl", ttl)]
        self.state.finish(entry, 201, "ok", headers, None)
        self.state.counts["webpush_accepted"] += 1
        return Response(201, headers, b"")

    def _check_vapid(self, req: Request, entry: dict):
        auth = req.header("authorization")
        if not auth:
            return 401, "missing_authorization", "Authorization: vapid t=<JWT>, k=<key> is required (RFC 8292 §3)"
        scheme, _, params = auth.partition(" ")
        if scheme.lower() != "vapid":
            return 401, "bad_authorization", f"the scheme is {scheme!r}, not vapid (RFC 8292 §3)"
        values = {}
        for part in params.split(","):
            name, _, value = part.strip().partition("=")
            values[name.strip()] = value.strip()
        token, key = values.get("t"), values.get("k")
        if not token or not key:
            return 401, "bad_authorization", "vapid needs both t= and k= (RFC 8292 §3.1, §3.2)"
        entry["jwt"] = decode_jwt_unverified(token)
        try:
            k = b64url_decode(key)
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), k)
            if len(k) != 65:
                raise ValueError("compressed")
        except ValueError:
            return 401, "bad_vapid_key", "k is not a base64url uncompressed P-256 public key (RFC 8292 §3.2)"
        entry["vapid"] = {"k": key, "k_bytes": k}
        try:
            h64, c64, s64 = token.split(".")
            header = json.loads(b64url_decode(h64))
            claims = json.loads(b64url_decode(c64))
            sig = b64url_decode(s64)
        except (ValueError, TypeError):
            return 401, "bad_jwt", "t is not a compact JWS"
        if not isinstance(header, dict) or header.get("alg") != "ES256":
            return 401, "bad_jwt", "the JWT must be signed ES256 (RFC 8292 §2)"
        if len(sig) != 64:
            return 401, "bad_jwt", f"the ES256 signature is {len(sig)} bytes; JWS needs raw r||s, 64 bytes"
        der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        try:
            public.verify(der, f"{h64}.{c64}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return 401, "bad_signature", "the JWT signature does not verify against k"
        if not isinstance(claims, dict):
            return 401, "bad_jwt", "the JWT claims are not an object"
        if claims.get("aud") != self.origin:
            return 401, "bad_audience", f"aud is {claims.get('aud')!r}, not this push service's origin {self.origin!r} (RFC 8292 §2)"
        exp = claims.get("exp")
        now = self.state.now()
        if not isinstance(exp, int) or isinstance(exp, bool):
            return 401, "bad_expiry", "exp must be an integer (RFC 8292 §2)"
        if exp <= now:
            return 401, "expired", "the JWT has expired"
        if exp > now + MAX_EXP_S:
            return 401, "bad_expiry", f"exp is {exp - now:.0f} s ahead, more than 24 hours (RFC 8292 §2)"
        sub = claims.get("sub")
        if not isinstance(sub, str) or not (sub.startswith("mailto:") or sub.startswith("https:")):
            return 401, "bad_subject", "sub must be a mailto: or https: contact (RFC 8292 §2.1)"
        entry["vapid"]["claims"] = claims
        return None

    async def _injected(self, spec: dict, entry: dict) -> Response:
        from apns import delay, _apply_connection_action  # the shared outcome helpers

        await delay(spec, self.state, entry)
        status = spec.get("status") or 201
        headers = [(k, str(v)) for k, v in (spec.get("headers") or {}).items()]
        if spec.get("retry_after") is not None:
            headers.append(("retry-after", str(spec["retry_after"])))
        if status == 201:
            self.messages += 1
            headers.append(("location", f"{self.origin}/wp/messages/{self.messages}"))
            body = b""
        else:
            raw = spec.get("body", {"code": status, "error": spec.get("reason") or "injected", "message": spec.get("message") or "injected outcome"})
            body = raw.encode() if isinstance(raw, str) else json_body(raw)
            headers.append(("content-type", spec.get("content_type") or "application/json"))
        resp = Response(status, headers, body)
        _apply_connection_action(spec, resp)
        shown = None
        if body:
            try:
                shown = json.loads(body)
            except ValueError:
                shown = body.decode("utf-8", "replace")
        status_seen = None if resp.action in ("goaway", "reset", "close") else status
        self.state.finish(entry, status_seen, resp.action or ("ok" if status == 201 else str(status)), headers, shown, injected=True)
        if status == 201:
            self.state.counts["webpush_accepted"] += 1
        return resp


def _check_header(body: bytes) -> None:
    """The aes128gcm header of a body the double cannot decrypt (an open subscription)."""
    if len(body) < 86 + 17:
        raise ValueError("shorter than the 86-byte header plus one tagged record")
    if body[20] != 65:
        raise ValueError(f"idlen is {body[20]}, RFC 8291 §4 needs 65")
    if int.from_bytes(body[16:20], "big") < 18:
        raise ValueError("record size below 18")
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), body[21:86])
    except ValueError:
        raise ValueError("the key id is not the sender's P-256 public key")
