"""The APNs side: `POST /3/device/<hex token>` checked the way Apple documents it.

Check order (Apple does not document one; this follows Pushy's mock, the reference's template):
 1. `apns-id` not a lower-case UUID            -> 400 BadMessageId
 2. `:method` not POST                         -> 405 MethodNotAllowed
 3. an apns-* or authorization header repeated -> 400 DuplicateHeaders
 4. `apns-topic` missing / malformed            -> 400 MissingTopic / BadTopic
 5. `apns-collapse-id` over 64 bytes            -> 400 BadCollapseId
 6. `apns-priority` not 10, 5 or 1              -> 400 BadPriority
 7. `apns-push-type` unknown                    -> 400 InvalidPushType
 8. `apns-expiration` not epoch seconds         -> 400 BadExpirationDate
 9. path: `/3/device/` alone -> 400 MissingDeviceToken; other shape -> 404 BadPath;
    token not even-length hex -> 400 BadDeviceToken
10. provider token (JWT): missing -> 403 MissingProviderToken; bad shape, alg, kid, signature, iss,
    iat -> 403 InvalidProviderToken; iat older than 1 h (or forced) -> 403 ExpiredProviderToken;
    key scoped to the other environment -> 403 BadEnvironmentKeyIdInToken; a new token on the same
    connection less than 20 min after the previous one -> 429 TooManyProviderTokenUpdates
11. device registered (control API) for the other environment -> 400 BadDeviceToken
12. topic not the configured bundle ID (+ the push type's suffix) -> 400 DeviceTokenNotForTopic
13. background push with priority 10 (sent or defaulted) -> 400 BadPriority
14. body: empty -> 400 PayloadEmpty; > 4096 bytes (voip 5120) -> 413 PayloadTooLarge;
    not a JSON object with an `aps` object -> 400 BadPayload (no Apple string exists for this)
15. an injected outcome for the token, if any; else 200 with `apns-id` (+ `apns-unique-id` in
    the sandbox environment), empty body.
"""
from __future__ import annotations

import asyncio
import json
import re
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from state import b64url_decode, decode_jwt_unverified, json_body
from transport import Request, Response

# Apple's reason table (reference §1.7), reason -> status.
REASONS = {
    "BadCollapseId": 400, "BadDeviceToken": 400, "BadExpirationDate": 400, "BadMessageId": 400,
    "BadPriority": 400, "BadTopic": 400, "DeviceTokenNotForTopic": 400, "DuplicateHeaders": 400,
    "IdleTimeout": 400, "InvalidPushType": 400, "MissingDeviceToken": 400, "MissingTopic": 400,
    "PayloadEmpty": 400, "TopicDisallowed": 400,
    "BadCertificate": 403, "BadCertificateEnvironment": 403, "ExpiredProviderToken": 403,
    "Forbidden": 403, "InvalidProviderToken": 403, "MissingProviderToken": 403,
    "UnrelatedKeyIdInToken": 403, "BadEnvironmentKeyIdInToken": 403,
    "BadEnvironmentKeyInToken": 403,  # OBSERVED spelling
    "BadPath": 404, "MethodNotAllowed": 405, "ExpiredToken": 410, "Unregistered": 410,
    "PayloadTooLarge": 413, "TooManyProviderTokenUpdates": 429, "TooManyRequests": 429,
    "InternalServerError": 500, "ServiceUnavailable": 503, "Shutdown": 503,
}
DEFAULT_REASON = {400: "BadDeviceToken", 403: "Forbidden", 404: "BadPath", 405: "MethodNotAllowed",
                  410: "Unregistered", 413: "PayloadTooLarge", 429: "TooManyRequests",
                  500: "InternalServerError", 503: "ServiceUnavailable"}

# apns-push-type -> suffix the topic must carry (None: any topic, as for mdm).
PUSH_TYPES = {
    "alert": "", "background": "", "voip": ".voip", "complication": ".complication",
    "fileprovider": ".pushkit.fileprovider", "liveactivity": ".push-type.liveactivity",
    "location": ".location-query", "mdm": None, "pushtotalk": ".voip-ptt",
    "widgets": ".push-type.widgets", "controls": ".push-type.controls",
}
CHECKED_HEADERS = ("authorization", "apns-id", "apns-topic", "apns-push-type", "apns-priority",
                   "apns-expiration", "apns-collapse-id")
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HEX_RE = re.compile(r"^(?:[0-9a-fA-F]{2})+$")
TOPIC_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-_]*$")
AUTH_SKEW_S = 60  # how far in the future `iat` may be before the token is refused

GOOGLE_502_HTML = (
    "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n"
    "  <meta name=viewport content=\"initial-scale=1, minimum-scale=1, width=device-width\">\n"
    "  <title>Error 502 (Server Error)!!1</title>\n"
    "  <a href=//www.google.com/><span id=logo aria-label=Google></span></a>\n"
    "  <p><b>502.</b> <ins>That\u2019s an error.</ins>\n"
    "  <p>The server encountered a temporary error and could not complete your request."
    "<p>Please try again in 30 seconds.  <ins>That\u2019s all we know.</ins>\n"
)


def apns_environment(path: str, default: str):
    """(environment, rest-of-path) for `/sandbox/3/...`, `/production/3/...` or `/3/...`."""
    m = re.match(r"^/(sandbox|production)(/.*)?$", path)
    if m:
        return m.group(1), m.group(2) or "/"
    return default, path


class APNs:
    def __init__(self, state, *, public_key: ec.EllipticCurvePublicKey, key_id: str, team_id: str,
                 topic: str, default_environment: str = "sandbox", key_environment: str = "both",
                 min_token_update_s: float = 1200, accept_der: bool = False, connections=None):
        self.state = state
        self.public_key = public_key
        self.key_id = key_id
        self.team_id = team_id
        self.topic = topic
        self.default_environment = default_environment
        self.key_environment = key_environment
        self.min_token_update_s = min_token_update_s
        self.accept_der = accept_der
        self.connections = connections if connections is not None else []
        self.expired_jwts: set = set()
        self.verified_jwts: dict = {}  # JWT -> notes; signatures already checked (ECDSA verify is the hot path)

    # -- responses -------------------------------------------------------------------------

    def _error(self, status: int, reason: str, apns_id: str, timestamp=None, extra=()):
        body = {"reason": reason}
        if status == 410:
            body["timestamp"] = int(timestamp if timestamp is not None else self.state.now() * 1000)
        headers = [("apns-id", apns_id), ("content-type", "application/json")] + list(extra)
        return Response(status, headers, json_body(body))

    def _ok(self, apns_id: str, environment: str, extra=()):
        headers = [("apns-id", apns_id)]
        if environment == "sandbox":
            headers.append(("apns-unique-id", str(uuid.uuid4())))
        return Response(200, headers + list(extra), b"")

    # -- the handler -----------------------------------------------------------------------

    async def handle(self, req: Request) -> Response:
        environment, path = apns_environment(req.path, self.default_environment)
        body_view = _body_view(req.body)
        auth = req.header("authorization") or ""
        entry = self.state.begin("apns", req, body_view, {"environment": environment})
        bearer = auth.partition(" ")[2].strip()
        if bearer:
            self.state.apns_jwts.add(bearer)
            entry["jwt"] = decode_jwt_unverified(bearer)
        sent_id = req.header("apns-id")
        # Apple answers with the request's apns-id or one it made (Apple's own are upper-case).
        apns_id = sent_id if sent_id and UUID_RE.match(sent_id) else str(uuid.uuid4()).upper()

        if req.http_version != "2":
            entry["notes"].append("APNs speaks HTTP/2 only (ALPN h2)")
            resp = Response(505, [("content-type", "application/json")],
                            json_body({"error": "APNs requires HTTP/2; this request came over HTTP/"
                                                + req.http_version}))
            self.state.finish(entry, 505, "http2-required", resp.headers, json.loads(resp.body))
            return resp

        failure, token = self._check(req, path, environment, entry, bearer)
        if failure is not None:
            status, reason = failure
            resp = self._error(status, reason, apns_id)
            self.state.finish(entry, status, reason, resp.headers, json.loads(resp.body))
            return resp

        spec = self.state.outcomes.take("apns", token)
        if spec is None:
            resp = self._ok(apns_id, environment)
            self.state.finish(entry, 200, "ok", resp.headers, None)
            return resp
        return await self._injected(spec, apns_id, environment, entry)

    def _check(self, req: Request, path: str, environment: str, entry: dict, bearer: str):
        """Returns ((status, reason) or None, device token)."""
        notes = entry["notes"]
        sent_id = req.header("apns-id")
        if sent_id is not None and not UUID_RE.match(sent_id):
            return (400, "BadMessageId"), None
        if req.method != "POST":
            return (405, "MethodNotAllowed"), None
        for name in CHECKED_HEADERS:
            if len(req.header_all(name)) > 1:
                return (400, "DuplicateHeaders"), None
        topic = req.header("apns-topic")
        if topic is None or topic == "":
            return (400, "MissingTopic"), None
        if not TOPIC_RE.match(topic):
            return (400, "BadTopic"), None
        collapse = req.header("apns-collapse-id")
        if collapse is not None and len(collapse.encode("utf-8")) > 64:
            return (400, "BadCollapseId"), None
        priority = req.header("apns-priority")
        if priority is not None and priority not in ("10", "5", "1"):
            return (400, "BadPriority"), None
        push_type = req.header("apns-push-type")
        if push_type is None:
            notes.append("no apns-push-type (Apple: send one with each push); treated as alert")
            push_type = "alert"
        elif push_type not in PUSH_TYPES:
            return (400, "InvalidPushType"), None
        expiration = req.header("apns-expiration")
        if expiration is not None and not re.fullmatch(r"\d{1,12}", expiration):
            return (400, "BadExpirationDate"), None

        m = re.fullmatch(r"/3/device(?:/(.*))?", path)
        if not m:
            return (404, "BadPath"), None
        token = m.group(1) or ""
        if token == "":
            return (400, "MissingDeviceToken"), None
        if "/" in token:
            return (404, "BadPath"), None
        if not HEX_RE.match(token):
            return (400, "BadDeviceToken"), token.lower()
        token = token.lower()

        failure = self._check_provider_token(req, bearer, environment, entry)
        if failure is not None:
            return failure, token

        device = self.state.apns_devices.get(token)
        if device and device.get("environment") not in (None, environment):
            return (400, "BadDeviceToken"), token
        suffix = PUSH_TYPES[push_type]
        wanted = (device or {}).get("topic") or self.topic
        if suffix is not None and topic != wanted + suffix:
            notes.append(f"topic {topic!r} is not {wanted + suffix!r} for push type {push_type}")
            return (400, "DeviceTokenNotForTopic"), token
        if push_type == "background" and (priority or "10") == "10":
            notes.append("background push with priority 10"
                         + ("" if priority else " (the default when apns-priority is absent)"))
            return (400, "BadPriority"), token

        if req.body_size == 0:
            return (400, "PayloadEmpty"), token
        limit = 5120 if push_type == "voip" else 4096
        if req.body_size > limit:
            return (413, "PayloadTooLarge"), token
        if (req.header("content-encoding") or "identity").lower() != "identity":
            notes.append("compressed body (Apple: must not be compressed)")
        try:
            payload = json.loads(req.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            notes.append("body is not UTF-8 JSON")
            return (400, "BadPayload"), token
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            notes.append("payload must be a JSON object with an `aps` dictionary")
            return (400, "BadPayload"), token
        _payload_notes(payload, push_type, notes)
        return None, token

    def _check_provider_token(self, req: Request, bearer: str, environment: str, entry: dict):
        auth = req.header("authorization")
        if not auth:
            return 403, "MissingProviderToken"
        scheme, _, _ = auth.partition(" ")
        if scheme.lower() != "bearer" or not bearer:
            return 403, "MissingProviderToken"
        notes = entry["notes"]
        if scheme != "bearer":
            notes.append("authorization scheme is not the lower-case `bearer` Apple shows")
        if bearer in self.expired_jwts:
            return 403, "ExpiredProviderToken"
        try:
            h64, c64, s64 = bearer.split(".")
            header = json.loads(b64url_decode(h64))
            claims = json.loads(b64url_decode(c64))
            sig = b64url_decode(s64)
        except (ValueError, TypeError):
            notes.append("provider token is not a compact JWS")
            return 403, "InvalidProviderToken"
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return 403, "InvalidProviderToken"
        if header.get("alg") != "ES256":
            notes.append(f"JWT alg {header.get('alg')!r}: APNs supports only ES256")
            return 403, "InvalidProviderToken"
        if header.get("kid") != self.key_id:
            notes.append(f"JWT kid {header.get('kid')!r} is not the key {self.key_id!r}")
            return 403, "InvalidProviderToken"
        if bearer in self.verified_jwts:
            notes.extend(self.verified_jwts[bearer])
        else:
            sig_notes: list = []
            ok = self._signature_ok(f"{h64}.{c64}".encode(), sig, sig_notes)
            notes.extend(sig_notes)
            if not ok:
                return 403, "InvalidProviderToken"
            self.verified_jwts[bearer] = sig_notes  # the claims are still checked on every use
        extra_h = sorted(set(header) - {"alg", "kid", "typ"})
        extra_c = sorted(set(claims) - {"iss", "iat"})
        if extra_h or extra_c:
            notes.append(f"extra JWT fields {extra_h + extra_c} (Apple: send exactly alg, kid, iss, iat)")
        if claims.get("iss") != self.team_id:
            notes.append(f"JWT iss {claims.get('iss')!r} is not the team {self.team_id!r}")
            return 403, "InvalidProviderToken"
        iat = claims.get("iat")
        if not isinstance(iat, int) or isinstance(iat, bool):
            notes.append("JWT iat must be an integer number of seconds")
            return 403, "InvalidProviderToken"
        now = self.state.now()
        if iat < now - 3600:
            self._expire(bearer)
            return 403, "ExpiredProviderToken"
        if iat > now + AUTH_SKEW_S:
            notes.append(f"JWT iat is {iat - now:.0f} s in the future")
            return 403, "InvalidProviderToken"
        if self.key_environment not in ("both", environment):
            return 403, "BadEnvironmentKeyIdInToken"
        if self.state.apns_expire_next:
            self.state.apns_expire_next = False
            self._expire(bearer)
            notes.append("forced ExpiredProviderToken (control API)")
            return 403, "ExpiredProviderToken"
        # Apple ties token updates to the connection: a new token less than 20 min after the
        # previous one on the same connection is refused. A token replacing an expired one is fine.
        conn = req.conn.state.setdefault("apns", {})
        current = conn.get("jwt")
        if current != bearer:
            if (current is not None and self.min_token_update_s > 0 and not conn.get("replaceable")
                    and now - conn["since"] < self.min_token_update_s):
                notes.append(f"provider token changed {now - conn['since']:.0f} s after the previous "
                             f"one on this connection")
                return 429, "TooManyProviderTokenUpdates"
            conn.update(jwt=bearer, since=now, replaceable=False)
        return None

    def _signature_ok(self, signing_input: bytes, sig: bytes, notes: list) -> bool:
        if len(sig) == 64:
            der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        elif self.accept_der:
            der = sig
            notes.append("DER-encoded ES256 signature accepted (lenient mode)")
        else:
            notes.append(f"ES256 signature is {len(sig)} bytes; JWS needs raw r||s, 64 bytes"
                         + (" (looks DER)" if sig[:1] == b"\x30" else ""))
            return False
        try:
            self.public_key.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            notes.append("ES256 signature does not verify against the test key")
            return False

    def _expire(self, bearer: str) -> None:
        self.expired_jwts.add(bearer)
        for info in list(self.connections):
            st = info.state.get("apns")
            if st and st.get("jwt") == bearer:
                st["replaceable"] = True

    # -- injected outcomes -----------------------------------------------------------------

    async def _injected(self, spec: dict, apns_id: str, environment: str, entry: dict) -> Response:
        await delay(spec, self.state, entry)
        resp = build_injected_apns(spec, apns_id, environment, self)
        shown = resp.body.decode("utf-8", "replace") if resp.body else None
        try:
            shown = json.loads(shown) if shown else None
        except ValueError:
            pass
        outcome = spec.get("reason") or ("ok" if resp.status == 200 else None)
        if resp.action in ("goaway", "reset", "close"):
            outcome = resp.action
            status = None
        else:
            status = resp.status
        self.state.finish(entry, status, outcome or str(resp.status), resp.headers, shown, injected=True)
        return resp


async def delay(spec: dict, state, entry: dict) -> None:
    """Sleeps `delay_ms`; a client that gives up meanwhile is recorded as such."""
    if not spec.get("delay_ms"):
        return
    try:
        await asyncio.sleep(spec["delay_ms"] / 1000)
    except asyncio.CancelledError:
        state.finish(entry, None, "cancelled-by-client", injected=True)
        raise


def build_injected_apns(spec: dict, apns_id: str, environment: str, apns: APNs) -> Response:
    extra = [(k, str(v)) for k, v in (spec.get("headers") or {}).items()]
    if spec.get("retry_after") is not None:
        extra.append(("retry-after", str(spec["retry_after"])))
    status = spec.get("status")
    reason = spec.get("reason")
    if status is None:
        status = REASONS.get(reason, 200) if reason else 200
    if spec.get("html_502"):
        resp = Response(spec.get("status") or 502, [("content-type", "text/html; charset=UTF-8")] + extra,
                        GOOGLE_502_HTML.encode())
    elif "body" in spec:
        body = spec["body"]
        raw = body.encode() if isinstance(body, str) else json_body(body)
        resp = Response(status, [("apns-id", apns_id),
                                 ("content-type", spec.get("content_type") or "application/json")] + extra, raw)
    elif status == 200:
        resp = apns._ok(spec.get("apns_id") or apns_id, environment, extra)
    else:
        resp = apns._error(status, reason or DEFAULT_REASON.get(status, "InternalServerError"),
                           apns_id, spec.get("timestamp"), extra)
    _apply_connection_action(spec, resp)
    return resp


def _apply_connection_action(spec: dict, resp: Response) -> None:
    if spec.get("goaway"):
        reason = spec["goaway"] if isinstance(spec["goaway"], str) else "Shutdown"
        mode = spec.get("goaway_mode") or "unanswered"
        resp.action = "goaway_after" if mode == "after_response" else "goaway"
        resp.goaway_last_stream = "before" if mode == "refused" else "this"
        resp.goaway_debug = json_body({"reason": reason})
    elif spec.get("reset"):
        resp.action = "reset"
    elif spec.get("close"):
        resp.action = "close"


def _body_view(body: bytes):
    try:
        return json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, ValueError):
        return {"_raw": body[:2048].decode("utf-8", "replace")}


def _payload_notes(payload: dict, push_type: str, notes: list) -> None:
    aps = payload["aps"]
    known = {"alert", "badge", "sound", "thread-id", "category", "content-available",
             "mutable-content", "target-content-id", "interruption-level", "relevance-score",
             "filter-criteria", "stale-date", "content-state", "timestamp", "event",
             "dismissal-date", "attributes-type", "attributes"}
    custom = sorted(set(aps) - known)
    if custom:
        notes.append(f"custom keys inside aps {custom} (Apple: APNs ignores them; put them beside aps)")
    if push_type == "background":
        if aps.get("content-available") != 1:
            notes.append("background push without aps.content-available = 1")
        if any(k in aps for k in ("alert", "badge", "sound")):
            notes.append("background push carries alert/badge/sound (Apple: don't combine)")
    level = aps.get("interruption-level")
    if level is not None and level not in ("passive", "active", "time-sensitive", "critical"):
        notes.append(f"unknown interruption-level {level!r}")
