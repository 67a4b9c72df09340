"""The Expo side: `POST /--/api/v2/push/send` and `POST /--/api/v2/push/getReceipts`, checked the way
Expo documents them (shared/reference/expo-webpush.md; expo-server-sdk-node's ExpoClient).

send check order:
 1. method POST, else 405.
 2. access token: when the double has one (`--expo-access-token` or `POST /_double/expo/config`), the
    request must carry `Authorization: Bearer <it>`, else 401 UNAUTHORIZED (enhanced push security).
 3. `content-encoding: gzip` bodies are inflated (a broken one: 400 VALIDATION_ERROR); the inflated
    body may be at most `--expo-max-body` bytes (default 1 MiB), else 413 PAYLOAD_TOO_LARGE.
 4. JSON: one message object or an array of them; more than 100 → 400 PUSH_TOO_MANY_NOTIFICATIONS.
 5. each message: only known fields, with their types (`to` string or array of strings, `ttl`
    non-negative integer, `priority` default|normal|high, `interruptionLevel` one of Apple's four,
    `data` an object, …) → 400 VALIDATION_ERROR naming the first bad one.
 6. every token must belong to one Expo project: tokens pinned to projects with
    `POST /_double/expo/projects {token, project}` (the others are DEFAULT_PROJECT's); a request
    mixing projects → 400 PUSH_TOO_MANY_EXPERIENCE_IDS with `details` {project: [tokens]}, as Expo
    answers (expo/expo#6771).
 6b. an injected request-level outcome (`status` ≠ 200) queued for any token of the request answers
    the whole request (`{"errors":[{code, message}]}`, `retry_after` as Retry-After).
 7. per message, one ticket each, in order: a `to` that is not an Expo push token → error ticket
    DeviceNotRegistered ("… is not a registered push notification recipient"); a message over 4096
    bytes (without `to`, UTF-8 JSON: `message_bytes`) → MessageTooBig; an injected `ticket_error`; else `{"status":"ok","id"}`
    and a receipt is stored: `ok`, or the injected `receipt_error`.

getReceipts: the same auth and gzip handling; `{"ids":[...]}` (strings) else 400 VALIDATION_ERROR;
more than 1000 ids → 400 PUSH_TOO_MANY_RECEIPTS; an injected receipts failure
(`POST /_double/expo/receipt-outcomes`) answers the whole request; otherwise
`{"data":{id: receipt}}` for the ids it knows. A receipt with `receipt_missing_times: n` is left out
of its first n answers (not ready yet).

Answers are gzipped when the client accepts gzip (as Expo's are).
"""
from __future__ import annotations

import gzip
import json
import re
import uuid
from collections import deque

from apns import delay
from state import json_body
from transport import Request, Response

MAX_MESSAGES = 100
MAX_RECEIPT_IDS = 1000
MAX_MESSAGE_BYTES = 4096
DEFAULT_PROJECT = "@herald-tests/app"


def message_bytes(message: dict) -> int:
    """What Expo's 4096 bytes count: the message's members but `to`, as compact JSON in UTF-8.
    Expo's docs (expo/expo docs/pages/push-notifications/sending-notifications.mdx, `data` and
    `MessageTooBig`) limit "the total notification payload sent to Apple and Google" to 4096
    bytes, bytes of JSON those services read as UTF-8; expo-server-sdk-node sends
    `JSON.stringify`'s output, non-ASCII as UTF-8, and checks no size itself. `json_body` escapes
    non-ASCII (`é` is 6 bytes, not 2), so a long accented alert Expo would take was refused here."""
    return len(json.dumps({k: v for k, v in message.items() if k != "to"}, separators=(",", ":"), ensure_ascii=False).encode())


TOKEN_RE = re.compile(r"^(ExponentPushToken|ExpoPushToken)\[[^\[\]\s]+\]$")
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
ERROR_CODES = {"DeviceNotRegistered", "MessageTooBig", "MessageRateExceeded", "MismatchSenderId",
               "InvalidCredentials", "DeveloperError", "ExpoError", "ProviderError"}
ERROR_MESSAGES = {
    "DeviceNotRegistered": "The recipient device is not registered with FCM or APNs.",
    "MessageTooBig": "The total notification payload was too large.",
    "MessageRateExceeded": "You are sending messages too frequently to the given device.",
    "MismatchSenderId": "The FCM sender id does not match the project's credentials.",
    "InvalidCredentials": "The push notification credentials for your standalone app are invalid.",
}
REQUEST_CODES = {429: "TOO_MANY_REQUESTS", 401: "UNAUTHORIZED", 400: "VALIDATION_ERROR",
                 413: "PAYLOAD_TOO_LARGE", 500: "INTERNAL_SERVER_ERROR", 502: "BAD_GATEWAY",
                 503: "SERVICE_UNAVAILABLE"}
STR, INT, BOOL, OBJ = "string", "integer", "boolean", "object"
FIELDS = {
    "to": "to", "title": STR, "body": STR, "subtitle": STR, "data": OBJ, "sound": "sound", "badge": INT,
    "ttl": INT, "expiration": INT, "priority": ("default", "normal", "high"), "channelId": STR,
    "categoryId": STR, "mutableContent": BOOL, "_contentAvailable": BOOL, "collapseId": STR, "tag": STR,
    "icon": STR, "richContent": OBJ,
    "interruptionLevel": ("active", "critical", "passive", "time-sensitive"),
}


def is_expo_token(token) -> bool:
    return isinstance(token, str) and bool(TOKEN_RE.match(token) or UUID_RE.match(token))


def expo_error(status: int, code: str, message: str, headers=()) -> Response:
    return Response(status, [("content-type", "application/json")] + list(headers),
                    json_body({"errors": [{"code": code, "message": message}]}))


def _check_message(i: int, message) -> str | None:
    """The first problem with message `i`, or None."""
    if not isinstance(message, dict):
        return f"messages[{i}] must be an object"
    if "to" not in message:
        return f'messages[{i}]: "to" is required'
    for key, value in message.items():
        kind = FIELDS.get(key)
        where = f'messages[{i}].{key}'
        if kind is None:
            return f'{where} is not allowed'
        if value is None:
            continue
        if kind == "to":
            if not (isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(t, str) for t in value))):
                return f"{where} must be a string or an array of strings"
        elif kind == STR and not isinstance(value, str):
            return f"{where} must be a string"
        elif kind == INT and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            return f"{where} must be a non-negative integer"
        elif kind == BOOL and not isinstance(value, bool):
            return f"{where} must be a boolean"
        elif kind == OBJ and not isinstance(value, dict):
            return f"{where} must be an object"
        elif kind == "sound" and not (isinstance(value, str) or isinstance(value, dict)):
            return f'{where} must be "default", a name or {{critical, name, volume}}'
        elif isinstance(kind, tuple) and value not in kind:
            return f"{where} must be one of {', '.join(kind)}"
    return None


class Expo:
    def __init__(self, state, *, access_token: str | None = None, max_body: int = 1 << 20):
        self.state = state
        self.default_access_token = access_token
        self.max_body = max_body
        self.reset()

    def reset(self) -> None:
        """Forgets receipts and injected receipt failures; the access token is the command line's again."""
        self.access_token = self.default_access_token
        self.receipts: dict = {}          # id -> {"receipt": {...}, "missing": n}
        self.receipt_failures: deque = deque()
        self.projects: dict = {}          # token -> Expo project ("@owner/slug"); unlisted: DEFAULT_PROJECT

    # -- common --------------------------------------------------------------------------------

    def _auth_and_body(self, req: Request, entry: dict):
        """(parsed JSON, None) or (None, error response)."""
        if req.method != "POST":
            return None, expo_error(405, "METHOD_NOT_ALLOWED", f"{req.method} is not allowed; use POST.")
        auth = req.header("authorization") or ""
        if self.access_token is not None:
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or token.strip() != self.access_token:
                entry["notes"].append("missing or wrong access token" if auth else "no Authorization header")
                return None, expo_error(401, "UNAUTHORIZED", "The bearer token is invalid; enhanced push security is on "
                                                             "for this project: send a valid access token.")
        body = req.body
        encoding = (req.header("content-encoding") or "").strip().lower()
        entry["content_encoding"] = encoding or None
        if encoding == "gzip":
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError) as e:
                return None, expo_error(400, "VALIDATION_ERROR", f"The request body is not valid gzip: {e}")
        elif encoding:
            return None, expo_error(400, "VALIDATION_ERROR", f"Unsupported content-encoding {encoding!r}.")
        entry["body_bytes_inflated"] = len(body)
        if len(body) > self.max_body:
            return None, expo_error(413, "PAYLOAD_TOO_LARGE", f"The request body is {len(body)} bytes, over {self.max_body}.")
        ctype = (req.header("content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            entry["notes"].append(f"content-type {ctype or 'missing'}; expected application/json")
        try:
            parsed = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None, expo_error(400, "VALIDATION_ERROR", "The request body is not JSON.")
        entry["body"] = parsed
        return parsed, None

    def _answer(self, req: Request, entry: dict, resp: Response, outcome: str) -> Response:
        shown = None
        try:
            shown = json.loads(resp.body) if resp.body else None
        except ValueError:
            shown = resp.body.decode("utf-8", "replace")
        if "gzip" in (req.header("accept-encoding") or "").lower() and resp.body:
            resp.body = gzip.compress(resp.body)
            resp.headers.append(("content-encoding", "gzip"))
        self.state.finish(entry, resp.status, outcome, resp.headers, shown)
        return resp

    @staticmethod
    def _request_failure(spec: dict) -> Response:
        status = spec.get("status") or 500
        code = spec.get("code") or REQUEST_CODES.get(status, "INTERNAL_SERVER_ERROR")
        headers = [("retry-after", str(spec["retry_after"]))] if spec.get("retry_after") is not None else []
        return expo_error(status, code, spec.get("message") or f"Injected {code}.", headers)

    # -- send ----------------------------------------------------------------------------------

    async def handle_send(self, req: Request) -> Response:
        entry = self.state.begin("expo", req, None)
        parsed, failure = self._auth_and_body(req, entry)
        if failure is not None:
            return self._answer(req, entry, failure, json.loads(failure.body)["errors"][0]["code"])
        messages = parsed if isinstance(parsed, list) else [parsed]
        entry["messages"] = len(messages)
        if len(messages) > MAX_MESSAGES:
            resp = expo_error(400, "PUSH_TOO_MANY_NOTIFICATIONS",
                              f"You are trying to send more than {MAX_MESSAGES} push notifications in one request.")
            return self._answer(req, entry, resp, "PUSH_TOO_MANY_NOTIFICATIONS")
        if not messages:
            return self._answer(req, entry, expo_error(400, "VALIDATION_ERROR", "No messages."), "VALIDATION_ERROR")
        for i, message in enumerate(messages):
            problem = _check_message(i, message)
            if problem:
                entry["notes"].append(problem)
                return self._answer(req, entry, expo_error(400, "VALIDATION_ERROR", problem), "VALIDATION_ERROR")
        # One ticket per recipient, in order (a message may name several).
        recipients = []
        for message in messages:
            tos = message["to"] if isinstance(message["to"], list) else [message["to"]]
            recipients += [(to, message) for to in tos]
        by_project: dict = {}
        for to, _ in recipients:
            by_project.setdefault(self.projects.get(to, DEFAULT_PROJECT), []).append(to)
        if len(by_project) > 1:
            resp = Response(400, [("content-type", "application/json")], json_body({"errors": [{
                "code": "PUSH_TOO_MANY_EXPERIENCE_IDS", "isTransient": False, "details": by_project,
                "message": "All push notification messages in the same request must be for the same project; "
                           "check the details field to investigate conflicting tokens."}]}))
            return self._answer(req, entry, resp, "PUSH_TOO_MANY_EXPERIENCE_IDS")
        # A request-level outcome queued for any recipient answers the whole request.
        for to, _ in recipients:
            pending = self.state.outcomes.per_token.get(("expo", to))
            nxt = pending.pending()[0] if pending and pending.pending() else None
            if nxt and nxt.get("status") not in (None, 200):
                spec = self.state.outcomes.take("expo", to)
                await delay(spec, self.state, entry)
                resp = self._request_failure(spec)
                entry["injected"] = True
                return self._answer(req, entry, resp, json.loads(resp.body)["errors"][0]["code"])
        tickets, verdicts, injected = [], [], False
        for to, message in recipients:
            size = message_bytes(message)
            spec = self.state.outcomes.take("expo", to) if is_expo_token(to) else None
            if spec is not None:
                injected = True
                await delay(spec, self.state, entry)
            if not is_expo_token(to):
                ticket = {"status": "error", "message": f'"{to}" is not a registered push notification recipient',
                          "details": {"error": "DeviceNotRegistered", "expoPushToken": to}}
            elif size > MAX_MESSAGE_BYTES:
                ticket = {"status": "error", "message": f"Message is {size} bytes, over {MAX_MESSAGE_BYTES}.",
                          "details": {"error": "MessageTooBig"}}
            elif spec and spec.get("ticket_error"):
                code = spec["ticket_error"]
                ticket = {"status": "error", "message": spec.get("message") or ERROR_MESSAGES.get(code, code),
                          "details": {"error": code, "expoPushToken": to}}
            else:
                receipt_id = str(uuid.uuid4())
                ticket = {"status": "ok", "id": receipt_id}
                receipt = {"status": "ok"}
                if spec and spec.get("receipt_error"):
                    code = spec["receipt_error"]
                    receipt = {"status": "error", "message": spec.get("message") or ERROR_MESSAGES.get(code, code),
                               "details": {"error": code}}
                self.receipts[receipt_id] = {"receipt": receipt, "missing": int((spec or {}).get("receipt_missing_times", 0)),
                                             "token": to}
            tickets.append(ticket)
            verdicts.append(ticket.get("details", {}).get("error") or "ok")
            self.state.counts["expo_messages"] += 1
        entry["injected"] = injected
        entry["tickets"] = verdicts
        resp = Response(200, [("content-type", "application/json")], json_body({"data": tickets}))
        return self._answer(req, entry, resp, "ok" if all(v == "ok" for v in verdicts) else ",".join(verdicts))

    # -- receipts ------------------------------------------------------------------------------

    async def handle_receipts(self, req: Request) -> Response:
        entry = self.state.begin("expo_receipts", req, None)
        parsed, failure = self._auth_and_body(req, entry)
        if failure is not None:
            return self._answer(req, entry, failure, json.loads(failure.body)["errors"][0]["code"])
        ids = parsed.get("ids") if isinstance(parsed, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return self._answer(req, entry, expo_error(400, "VALIDATION_ERROR", '"ids" must be an array of strings.'),
                                "VALIDATION_ERROR")
        if len(ids) > MAX_RECEIPT_IDS:
            resp = expo_error(400, "PUSH_TOO_MANY_RECEIPTS", f"You are trying to get more than {MAX_RECEIPT_IDS} receipts in one request.")
            return self._answer(req, entry, resp, "PUSH_TOO_MANY_RECEIPTS")
        if self.receipt_failures:
            spec = self.receipt_failures[0]
            spec["times"] = spec.get("times", 1) - 1
            if spec["times"] <= 0:
                self.receipt_failures.popleft()
            entry["injected"] = True
            resp = self._request_failure(spec)
            return self._answer(req, entry, resp, json.loads(resp.body)["errors"][0]["code"])
        data = {}
        for rid in ids:
            known = self.receipts.get(rid)
            if known is None:
                continue
            if known["missing"] > 0:
                known["missing"] -= 1
                continue
            data[rid] = known["receipt"]
        entry["receipts"] = {rid: r.get("details", {}).get("error") or r["status"] for rid, r in data.items()}
        resp = Response(200, [("content-type", "application/json")], json_body({"data": data}))
        return self._answer(req, entry, resp, "ok")
