"""The FCM side: the OAuth2 token endpoint (`POST /token`, RFC 7523 JWT bearer grant) and
`POST /v1/projects/<project>/messages:send`, checked the way Google documents (reference §2).

messages:send check order:
 1. bearer token: missing -> 401 UNAUTHENTICATED ("missing required authentication credential");
    unknown or expired -> 401 UNAUTHENTICATED ("invalid authentication credentials") with
    `WWW-Authenticate: Bearer realm=..., error="invalid_token"`; no FcmError detail.
 2. project in the path not the account's -> 403 PERMISSION_DENIED (cloudmessaging.messages.create).
 3. token granted without an FCM scope -> 403 PERMISSION_DENIED "insufficient authentication scopes".
 4. body: JSON object; only known fields (snake_case or lowerCamelCase); field types (strings,
    map<string,string> data, Duration ttl, enums) -> 400 INVALID_ARGUMENT + google.rpc.BadRequest.
 5. exactly one of token/topic/condition; token/topic shape; reserved data keys; ttl range; data
    size (4096 bytes, 2048 for topics) -> 400 INVALID_ARGUMENT with FcmError INVALID_ARGUMENT.
 6. injected outcome for the token (or `topic:<name>` / `condition:<expr>`), else
    200 {"name": "projects/<p>/messages/<id>"} (`fake_message_id` with validate_only).
"""
from __future__ import annotations

import json
import re
import secrets
import time
from urllib.parse import parse_qsl

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from apns import GOOGLE_502_HTML, _apply_connection_action, delay
from state import b64url_decode, decode_jwt_unverified, json_body
from transport import Request, Response

JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FCM_SCOPES = {"https://www.googleapis.com/auth/firebase.messaging",
              "https://www.googleapis.com/auth/cloud-platform"}
KNOWN_SCOPES = FCM_SCOPES | {
    "https://www.googleapis.com/auth/firebase",
    "https://www.googleapis.com/auth/cloud-platform.read-only",
    "https://www.googleapis.com/auth/userinfo.email",
    "https://www.googleapis.com/auth/datastore",
    "https://www.googleapis.com/auth/devstorage.read_only",
}
SHORT_LIVED = ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable "
               "timeframe. Check your iat and exp values in the JWT claim.")
AUTH_HELP = ("Expected OAuth 2 access token, login cookie or other valid authentication credential. "
             "See https://developers.google.com/identity/sign-in/web/devconsole-project.")
REALM = 'Bearer realm="https://accounts.google.com/"'
FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
TTL_MAX_S = 2_419_200
SKEW_S = 60

# FcmError code -> (HTTP status, canonical status, message)
FCM_CODES = {
    "UNSPECIFIED_ERROR": (400, "INVALID_ARGUMENT", "No more information is available about this error."),
    "INVALID_ARGUMENT": (400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token"),
    "UNREGISTERED": (404, "NOT_FOUND", "Requested entity was not found."),
    "SENDER_ID_MISMATCH": (403, "PERMISSION_DENIED", "SenderId mismatch"),
    "QUOTA_EXCEEDED": (429, "RESOURCE_EXHAUSTED", "Quota exceeded for message sending."),
    "UNAVAILABLE": (503, "UNAVAILABLE", "The service is currently unavailable."),
    "INTERNAL": (500, "INTERNAL", "Internal error encountered."),
    "THIRD_PARTY_AUTH_ERROR": (401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service"),
    "APNS_AUTH_ERROR": (401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service"),
}
# HTTP status -> (canonical status, message) for errors without an FcmError detail.
CANONICAL = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials. " + AUTH_HELP),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "Requested entity was not found."),
    409: ("ABORTED", "The operation was aborted."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "Internal error encountered."),
    501: ("UNIMPLEMENTED", "Operation is not implemented, or supported, or enabled."),
    503: ("UNAVAILABLE", "The service is currently unavailable."),
    504: ("DEADLINE_EXCEEDED", "The request deadline was exceeded."),
}


def google_error(code: int, status: str, message: str, details=None, headers=()) -> Response:
    err = {"code": code, "message": message, "status": status}
    if details:
        err["details"] = details
    return Response(code, [("content-type", "application/json; charset=UTF-8")] + list(headers),
                    json_body({"error": err}))


def fcm_detail(code: str) -> dict:
    return {"@type": FCM_ERROR, "errorCode": code}


def bad_request(field: str, description: str) -> dict:
    return {"@type": BAD_REQUEST, "fieldViolations": [{"field": field, "description": description}]}


class FieldError(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


# --- message schema (proto3 JSON: snake_case or lowerCamelCase names) ----------------------

S, B, I, D, STRUCT, ANY = "string", "bool", "int32", "duration", "struct", "any"
MAP = ("map",)
STRS = ("array", S)


def _enum(type_name, *values):
    return ("enum", type_name, values)


ANDROID_NOTIFICATION = {
    "title": S, "body": S, "icon": S, "color": S, "sound": S, "tag": S, "click_action": S,
    "body_loc_key": S, "body_loc_args": STRS, "title_loc_key": S, "title_loc_args": STRS,
    "channel_id": S, "ticker": S, "sticky": B, "event_time": S, "local_only": B,
    "notification_priority": _enum("NotificationPriority", "PRIORITY_UNSPECIFIED", "PRIORITY_MIN",
                                   "PRIORITY_LOW", "PRIORITY_DEFAULT", "PRIORITY_HIGH", "PRIORITY_MAX"),
    "default_sound": B, "default_vibrate_timings": B, "default_light_settings": B,
    "vibrate_timings": ("array", D), "visibility": _enum("Visibility", "VISIBILITY_UNSPECIFIED",
                                                          "PRIVATE", "PUBLIC", "SECRET"),
    "notification_count": I, "light_settings": ANY, "image": S,
    "proxy": _enum("Proxy", "PROXY_UNSPECIFIED", "ALLOW", "DENY", "IF_PRIORITY_LOWERED"),
    "bypass_proxy_notification": B,
}
ANDROID = {
    "collapse_key": S,
    "priority": _enum("AndroidConfig.AndroidMessagePriority", "NORMAL", "HIGH"),
    "ttl": D, "restricted_package_name": S, "data": MAP, "notification": ANDROID_NOTIFICATION,
    "fcm_options": {"analytics_label": S}, "direct_boot_ok": B, "bandwidth_constrained_ok": B,
    "restricted_satellite_ok": B,
}
MESSAGE = {
    "name": S, "data": MAP, "notification": {"title": S, "body": S, "image": S},
    "android": ANDROID,
    "apns": {"headers": MAP, "payload": STRUCT, "fcm_options": {"analytics_label": S, "image": S},
             "live_activity_token": S},
    "webpush": {"headers": MAP, "data": MAP, "notification": STRUCT,
                "fcm_options": {"link": S, "analytics_label": S}},
    "fcm_options": {"analytics_label": S},
    "token": S, "topic": S, "condition": S,
}
REQUEST = {"message": MESSAGE, "validate_only": B}


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _shown(value) -> str:
    if isinstance(value, dict):
        return "Starting an object on a scalar field"
    if isinstance(value, list):
        return "Starting an array on a scalar field"
    return json.dumps(value)


def _check_value(value, spec, field: str) -> None:
    if value is None:
        return
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise FieldError(field, f"Invalid value at '{field}', {_shown(value)}")
        check_object(value, spec, field)
    elif spec == S:
        if not isinstance(value, str):
            raise FieldError(field, f"Invalid value at '{field}' (TYPE_STRING), {_shown(value)}")
    elif spec == B:
        if not isinstance(value, bool):
            raise FieldError(field, f"Invalid value at '{field}' (TYPE_BOOL), {_shown(value)}")
    elif spec == I:
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and re.fullmatch(r"-?\d+", value))
        if not ok or not -2**31 <= int(value) < 2**31:
            raise FieldError(field, f"Invalid value at '{field}' (TYPE_INT32), {_shown(value)}")
    elif spec == D:
        if not isinstance(value, str) or not re.fullmatch(r"-?\d+(\.\d{1,9})?s", value):
            name = field.rsplit(".", 1)[-1]
            raise FieldError(field, f"Invalid value at '{field}' (type.googleapis.com/google.protobuf."
                                    f"Duration), Field '{name}', Illegal duration format; duration "
                                    f"must end with 's'")
    elif spec == STRUCT:
        if not isinstance(value, dict):
            raise FieldError(field, f"Invalid value at '{field}' (type.googleapis.com/google.protobuf."
                                    f"Struct), {_shown(value)}")
    elif spec == ANY:
        return
    elif spec == MAP:
        if not isinstance(value, dict):
            raise FieldError(field, f"Invalid value at '{field}', {_shown(value)}")
        for i, (k, v) in enumerate(value.items()):
            if not isinstance(v, str):
                raise FieldError(f"{field}[{i}].value",
                                 f"Invalid value at '{field}[{i}].value' (TYPE_STRING), {_shown(v)}")
    elif spec[0] == "array":
        if not isinstance(value, list):
            raise FieldError(field, f"Invalid value at '{field}', {_shown(value)}")
        for i, item in enumerate(value):
            _check_value(item, spec[1], f"{field}[{i}]")
    elif spec[0] == "enum":
        _, type_name, values = spec
        ok = (isinstance(value, str) and value.upper() in values) or (
            isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(values))
        if not ok:
            raise FieldError(field, f"Invalid value at '{field}' (type.googleapis.com/google.firebase."
                                    f"fcm.v1.{type_name}), {_shown(value)}")


def check_object(obj: dict, schema: dict, path: str) -> None:
    for key, value in obj.items():
        name = _snake(key)
        if name not in schema:
            where = f" at '{path}'" if path else ""
            raise FieldError(path, f'Invalid JSON payload received. Unknown name "{key}"{where}: '
                                   f"Cannot find field.")
        _check_value(value, schema[name], f"{path}.{key}" if path else key)


def _get(obj: dict, snake: str):
    """A field by either JSON spelling."""
    if snake in obj:
        return obj[snake]
    parts = snake.split("_")
    return obj.get(parts[0] + "".join(p.title() for p in parts[1:]))


def _is_reserved(key: str) -> bool:
    """`from`, `message_type`, `google.*`, `gcm.*` (the older, broader rule; reference §2.3)."""
    return key in ("from", "message_type", "gcm", "google") or key.startswith(("google.", "gcm."))


class FCM:
    def __init__(self, state, *, service_account: dict, public_key, token_lifetime_s: int = 3599):
        self.state = state
        self.account = service_account
        self.public_key = public_key
        self.project_id = service_account["project_id"]
        self.token_lifetime_s = token_lifetime_s
        self.access_tokens: dict = {}  # token -> {"expires_at", "scopes"}

    # -- OAuth2 token endpoint -------------------------------------------------------------

    async def handle_token(self, req: Request) -> Response:
        ctype = (req.header("content-type") or "").split(";")[0].strip().lower()
        form: dict = {}
        try:
            text = req.body.decode("utf-8")
            if ctype == "application/json":
                form = json.loads(text)
                if not isinstance(form, dict):
                    form = {}
            else:
                form = dict(parse_qsl(text, keep_blank_values=True))
        except (UnicodeDecodeError, ValueError):
            form = {}
        assertion = form.get("assertion") or ""
        entry = self.state.begin("oauth", req, {k: v for k, v in form.items() if k != "assertion"})
        if assertion:
            self.state.oauth_assertions.add(assertion)
            entry["jwt"] = decode_jwt_unverified(assertion)
        if ctype not in ("application/x-www-form-urlencoded", "application/json"):
            entry["notes"].append(f"content-type {ctype or 'missing'}; Google clients send "
                                  f"application/x-www-form-urlencoded")
        if req.method != "POST":
            return self._oauth_error(entry, 405, "invalid_request", "Method not allowed.")
        grant = form.get("grant_type")
        if not grant:
            return self._oauth_error(entry, 400, "invalid_request", "Missing required parameter: grant_type")
        if grant != JWT_GRANT:
            return self._oauth_error(entry, 400, "unsupported_grant_type", f"Invalid grant_type: {grant}")
        if not assertion:
            return self._oauth_error(entry, 400, "invalid_request", "Missing required parameter: assertion")
        try:
            h64, c64, s64 = assertion.split(".")
            header = json.loads(b64url_decode(h64))
            claims = json.loads(b64url_decode(c64))
            sig = b64url_decode(s64)
            assert isinstance(header, dict) and isinstance(claims, dict)
        except (ValueError, TypeError, AssertionError):
            return self._oauth_error(entry, 400, "invalid_grant", "Invalid JWT Signature.")
        if claims.get("iss") != self.account["client_email"]:
            entry["notes"].append(f"iss {claims.get('iss')!r} is not {self.account['client_email']!r}")
            return self._oauth_error(entry, 400, "invalid_grant", "Invalid grant: account not found")
        if header.get("alg") != "RS256":
            entry["notes"].append(f"alg {header.get('alg')!r}; Google needs RS256")
            return self._oauth_error(entry, 400, "invalid_grant", "Invalid JWT Signature.")
        if "kid" in header and header["kid"] != self.account["private_key_id"]:
            entry["notes"].append("kid is not the account's private_key_id")
            return self._oauth_error(entry, 400, "invalid_grant", "Invalid JWT Signature.")
        try:
            self.public_key.verify(sig, f"{h64}.{c64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return self._oauth_error(entry, 400, "invalid_grant", "Invalid JWT Signature.")
        if claims.get("aud") != self.account["token_uri"]:
            entry["notes"].append(f"aud {claims.get('aud')!r} is not the token_uri {self.account['token_uri']!r}")
            return self._oauth_error(entry, 400, "invalid_grant", "Invalid JWT: Failed audience check.")
        iat, exp, now = claims.get("iat"), claims.get("exp"), self.state.now()
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (iat, exp))
        if not numbers or exp <= now or iat > now + SKEW_S or exp <= iat or exp - iat > 3600:
            entry["notes"].append(f"iat={iat!r} exp={exp!r} now={int(now)}")
            return self._oauth_error(entry, 400, "invalid_grant", SHORT_LIVED)
        scopes = str(claims.get("scope") or "").split()
        if not scopes or any(s not in KNOWN_SCOPES for s in scopes):
            entry["notes"].append(f"scope {claims.get('scope')!r}")
            return self._oauth_error(entry, 400, "invalid_scope",
                                     "Invalid OAuth scope or ID token audience provided.")
        if not FCM_SCOPES & set(scopes):
            entry["notes"].append("granted, but no FCM scope: messages:send will answer 403")
        token = "ya29.double-" + secrets.token_urlsafe(48)
        self.access_tokens[token] = {"expires_at": now + self.token_lifetime_s, "scopes": scopes}
        body = {"access_token": token, "expires_in": self.token_lifetime_s, "token_type": "Bearer"}
        resp = Response(200, [("content-type", "application/json; charset=utf-8"),
                              ("cache-control", "no-cache, no-store, max-age=0, must-revalidate")],
                        json_body(body))
        self.state.finish(entry, 200, "granted", resp.headers, {**body, "access_token": token})
        return resp

    def _oauth_error(self, entry, status: int, error: str, description: str) -> Response:
        body = {"error": error, "error_description": description}
        resp = Response(status, [("content-type", "application/json; charset=utf-8")], json_body(body))
        self.state.finish(entry, status, error, resp.headers, body)
        return resp

    def expire_tokens(self) -> int:
        now = self.state.now()
        for info in self.access_tokens.values():
            info["expires_at"] = min(info["expires_at"], now - 1)
        return len(self.access_tokens)

    # -- messages:send ---------------------------------------------------------------------

    async def handle_send(self, req: Request, project: str) -> Response:
        try:
            body = json.loads(req.body.decode("utf-8")) if req.body else None
            body_view = body
        except (UnicodeDecodeError, ValueError):
            body, body_view = None, {"_raw": req.body[:2048].decode("utf-8", "replace")}
        entry = self.state.begin("fcm", req, body_view, {"project": project})
        auth = req.header("authorization") or ""
        scheme, _, bearer = auth.partition(" ")
        bearer = bearer.strip()
        if bearer:
            self.state.fcm_bearers.add(bearer)

        failure = self._check_send(req, project, body, scheme, bearer, entry)
        if failure is not None:
            return self._finish(entry, failure, failure_reason(failure))
        message = body["message"]
        key = _target_key(message)
        spec = self.state.outcomes.take("fcm", key)
        if spec is None:
            return self._finish(entry, self._success(project, body), "ok")
        await delay(spec, self.state, entry)
        resp = self._injected(spec, project, body)
        outcome = resp.action if resp.action in ("goaway", "reset", "close") else failure_reason(resp)
        return self._finish(entry, resp, outcome, injected=True)

    def _finish(self, entry, resp: Response, outcome: str, injected: bool = False) -> Response:
        shown = None
        if resp.body:
            try:
                shown = json.loads(resp.body)
            except ValueError:
                shown = resp.body.decode("utf-8", "replace")
        status = None if resp.action in ("goaway", "reset", "close") else resp.status
        self.state.finish(entry, status, outcome, resp.headers, shown, injected)
        return resp

    def _success(self, project: str, body: dict) -> Response:
        if _get(body, "validate_only"):
            name = f"projects/{project}/messages/fake_message_id"
        else:
            name = f"projects/{project}/messages/0:{int(time.time() * 1e6)}%{secrets.token_hex(8)}"
        return Response(200, [("content-type", "application/json; charset=UTF-8")], json_body({"name": name}))

    def _check_send(self, req, project, body, scheme, bearer, entry):
        notes = entry["notes"]
        if req.method != "POST":
            return google_error(405, "INVALID_ARGUMENT", f"Method {req.method} is not allowed; use POST.")
        if not bearer:
            return google_error(401, "UNAUTHENTICATED",
                                "Request is missing required authentication credential. " + AUTH_HELP,
                                headers=[("www-authenticate", REALM)])
        info = self.access_tokens.get(bearer)
        if scheme.lower() != "bearer" or info is None or info["expires_at"] <= self.state.now():
            if info is not None and scheme.lower() == "bearer":
                notes.append("access token expired")
            return google_error(401, "UNAUTHENTICATED", CANONICAL[401][1],
                                headers=[("www-authenticate", REALM + ', error="invalid_token"')])
        if project != self.project_id:
            notes.append(f"project {project!r} is not {self.project_id!r}")
            return google_error(403, "PERMISSION_DENIED",
                                f"Permission 'cloudmessaging.messages.create' denied on resource "
                                f"'//cloudresourcemanager.googleapis.com/projects/{project}' "
                                f"(or it may not exist).")
        if not FCM_SCOPES & set(info["scopes"]):
            return google_error(
                403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.",
                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                  "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT", "domain": "googleapis.com",
                  "metadata": {"service": "fcm.googleapis.com",
                               "method": "google.firebase.fcm.v1.FcmService.SendMessage"}}],
                headers=[("www-authenticate", REALM + ', error="insufficient_scope", scope="'
                          + " ".join(sorted(FCM_SCOPES)) + '"')])
        ctype = (req.header("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            notes.append(f"content-type {ctype or 'missing'}; expected application/json")
        if not isinstance(body, dict):
            return google_error(400, "INVALID_ARGUMENT",
                                "Invalid JSON payload received. Expected a JSON object.",
                                [bad_request("", "Invalid JSON payload received. Expected a JSON object.")])
        try:
            check_object(body, REQUEST, "")
        except FieldError as e:
            return google_error(400, "INVALID_ARGUMENT", e.message, [bad_request(e.field, e.message)])
        message = body.get("message")
        if not isinstance(message, dict):
            msg = "Recipient of the message is not set."
            return google_error(400, "INVALID_ARGUMENT", msg,
                                [bad_request("message", msg), fcm_detail("INVALID_ARGUMENT")])
        return _check_message(message, notes)

    def _injected(self, spec: dict, project: str, body: dict) -> Response:
        extra = [(k, str(v)) for k, v in (spec.get("headers") or {}).items()]
        if spec.get("retry_after") is not None:
            extra.append(("retry-after", str(spec["retry_after"])))
        code = spec.get("errorCode") or spec.get("error_code")
        status = spec.get("status")
        if spec.get("html_502"):
            resp = Response(status or 502, [("content-type", "text/html; charset=UTF-8")] + extra,
                            GOOGLE_502_HTML.encode())
        elif "body" in spec:
            raw = spec["body"].encode() if isinstance(spec["body"], str) else json_body(spec["body"])
            resp = Response(status or 200, [("content-type", spec.get("content_type") or "application/json")]
                            + extra, raw)
        elif (status in (None, 200)) and not code:
            resp = self._success(project, body)
            resp.headers += extra
        else:
            if code:
                http, canonical, message = FCM_CODES.get(code, (status or 500, "UNKNOWN", "Unknown error."))
                details = [fcm_detail(code)]
                if code == "QUOTA_EXCEEDED":
                    details.insert(0, {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                                       "violations": [{"subject": f"projects/{project}",
                                                       "description": "Message rate exceeded"}]})
                elif code == "INVALID_ARGUMENT" and not spec.get("message"):
                    details.append(bad_request("message.token", "Invalid registration token"))
            else:
                canonical, message = CANONICAL.get(status, ("UNKNOWN", "Unknown error."))
                http, details = status, None
                if status == 401:
                    extra.append(("www-authenticate", REALM + ', error="invalid_token"'))
            if spec.get("apns_error"):
                details = (details or []) + [{"@type": "type.googleapis.com/google.firebase.fcm.v1.ApnsError",
                                              **spec["apns_error"]}]
            if "details" in spec:
                details = spec["details"]
            resp = google_error(status or http, spec.get("fcm_status") or canonical,
                                spec.get("message") or message, details, extra)
        _apply_connection_action(spec, resp)
        return resp


def failure_reason(resp: Response) -> str:
    """A short verdict for the log: the FcmError code, else the canonical status, else the status."""
    try:
        err = json.loads(resp.body)["error"]
    except (ValueError, KeyError, TypeError):
        return "ok" if resp.status == 200 else str(resp.status)
    for d in err.get("details") or []:
        if d.get("@type") == FCM_ERROR:
            return d.get("errorCode", "")
    return err.get("status") or str(resp.status)


def _target_key(message: dict) -> str:
    if message.get("token"):
        return message["token"]
    if message.get("topic"):
        return "topic:" + message["topic"]
    return "condition:" + str(message.get("condition"))


def _invalid(message: str, field: str = None, description: str = None, fcm: bool = True) -> Response:
    details = []
    if fcm:
        details.append(fcm_detail("INVALID_ARGUMENT"))
    if field:
        details.append(bad_request(field, description or message))
    return google_error(400, "INVALID_ARGUMENT", message, details or None)


def _check_message(message: dict, notes: list):
    targets = [k for k in ("token", "topic", "condition") if message.get(k) not in (None, "")]
    if len(targets) > 1:
        msg = f"Invalid JSON payload received. Oneof field 'target' is already set. Cannot set '{targets[1]}'"
        return google_error(400, "INVALID_ARGUMENT", msg, [bad_request("message", msg)])
    if not targets:
        msg = "Recipient of the message is not set."
        return google_error(400, "INVALID_ARGUMENT", msg,
                            [bad_request("message", msg), fcm_detail("INVALID_ARGUMENT")])
    if targets[0] == "token" and not re.fullmatch(r"[A-Za-z0-9_\-:.]{1,4096}", message["token"]):
        return _invalid("The registration token is not a valid FCM registration token",
                        "message.token", "Invalid registration token")
    if targets[0] == "topic" and not re.fullmatch(r"[a-zA-Z0-9\-_.~%]{1,900}", message["topic"]):
        notes.append("topic must be a bare name (no /topics/ prefix), [a-zA-Z0-9-_.~%]+")
        return _invalid("Request contains an invalid argument.", "message.topic", "Invalid topic name")

    android = _get(message, "android") or {}
    data = dict(_get(message, "data") or {})
    android_data = _get(android, "data") or {}
    for where, d in (("message.data", data), ("message.android.data", android_data)):
        for k in d:
            if _is_reserved(k):
                return _invalid(f"Invalid data payload key: {k}", where, f"Invalid data payload key: {k}")
    data.update(android_data)

    ttl = _get(android, "ttl")
    if ttl is not None:
        seconds = float(ttl[:-1])
        if not 0 <= seconds <= TTL_MAX_S:
            return _invalid("Request contains an invalid argument.", "message.android.ttl",
                            f"Invalid TTL: must be between 0s and {TTL_MAX_S}s")
    priority = _get(android, "priority")
    if isinstance(priority, str) and priority != priority.upper():
        notes.append(f"android.priority {priority!r}: the enum is NORMAL/HIGH (lower case accepted)")

    notification = _get(message, "notification") or {}
    size = sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
    size += sum(len(str(notification.get(k) or "").encode()) for k in ("title", "body"))
    limit = 2048 if targets[0] == "topic" else 4096
    if size > limit:
        notes.append(f"payload {size} bytes > {limit}")
        return _invalid("Android message is too big")
    return None
