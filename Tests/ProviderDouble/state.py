"""What the double remembers between requests: injected outcomes, the request log, counters and
the clock. One `DoubleState` per process, owned by the asyncio loop (no locks: every access is
on that loop).
"""
from __future__ import annotations

import base64
import json
import time
from collections import Counter, deque
from typing import Optional

OUTCOME_KEYS = {
    "status", "reason", "errorCode", "error_code", "message", "fcm_status", "details",
    "apns_error", "retry_after", "delay_ms", "timestamp", "html_502", "body", "content_type",
    "headers", "goaway", "goaway_mode", "reset", "close", "times", "forever", "apns_id",
    # Expo: per-message ticket or receipt errors, a request-level `code`, a receipt not ready yet.
    "ticket_error", "receipt_error", "code", "receipt_missing_times",
}


def b64url_decode(s: str) -> bytes:
    s = s.strip()
    if not s or any(c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=" for c in s):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def decode_jwt_unverified(token: str) -> Optional[dict]:
    """Header and claims of a compact JWS, for the log; None if it does not parse."""
    try:
        h, c, _ = token.split(".")
        return {"header": json.loads(b64url_decode(h)), "claims": json.loads(b64url_decode(c))}
    except (ValueError, TypeError):
        return None


def json_body(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Script:
    """An ordered list of outcome specs consumed one request at a time.

    Each spec is used `times` times (default 1); `forever: true` makes it stick.
    """

    def __init__(self, specs: list):
        self.specs = list(specs)
        self.index = 0
        self.used = 0

    def take(self) -> Optional[dict]:
        if self.index >= len(self.specs):
            return None
        spec = self.specs[self.index]
        self.used += 1
        times = spec.get("times", 1)
        if not spec.get("forever") and times is not None and self.used >= max(int(times), 1):
            self.index += 1
            self.used = 0
        return spec

    def pending(self) -> list:
        return self.specs[self.index:]


def validate_outcome(spec) -> list:
    """Problems with one outcome spec (empty when fine)."""
    if not isinstance(spec, dict):
        return ["each response must be a JSON object"]
    problems = [f"unknown field {k!r}" for k in spec if k not in OUTCOME_KEYS]
    if "status" in spec and not (isinstance(spec["status"], int) and 100 <= spec["status"] <= 599):
        problems.append("status must be an integer 100-599")
    if "delay_ms" in spec and not (isinstance(spec["delay_ms"], (int, float)) and spec["delay_ms"] >= 0):
        problems.append("delay_ms must be a non-negative number")
    if "times" in spec and not (isinstance(spec["times"], int) and spec["times"] >= 1):
        problems.append("times must be an integer >= 1")
    if spec.get("goaway_mode") not in (None, "unanswered", "refused", "after_response"):
        problems.append("goaway_mode must be unanswered, refused or after_response")
    return problems


class Outcomes:
    """Per-token scripts, plus one template script that every token replays on its own."""

    def __init__(self):
        self.per_token: dict = {}  # (provider, token) -> Script
        self.template: dict = {}  # provider -> list of specs
        self.template_cursor: dict = {}  # (provider, token) -> Script made from the template

    def add(self, provider: str, token: str, specs: list, replace: bool = False) -> None:
        key = (provider, token)
        if replace or key not in self.per_token:
            self.per_token[key] = Script(specs)
        else:
            self.per_token[key].specs.extend(specs)

    def set_all(self, provider: str, specs: list) -> None:
        self.template[provider] = list(specs)
        for key in [k for k in self.template_cursor if k[0] == provider]:
            del self.template_cursor[key]

    def take(self, provider: str, token: str) -> Optional[dict]:
        script = self.per_token.get((provider, token))
        if script is not None:
            spec = script.take()
            if spec is not None:
                return spec
        specs = self.template.get(provider)
        if specs:
            key = (provider, token)
            if key not in self.template_cursor:
                self.template_cursor[key] = Script(specs)
            return self.template_cursor[key].take()
        return None

    def view(self) -> dict:
        return {
            "per_token": [
                {"provider": p, "token": t, "pending": s.pending()}
                for (p, t), s in self.per_token.items() if s.pending()
            ],
            "all": [{"provider": p, "responses": specs} for p, specs in self.template.items() if specs],
        }


class DoubleState:
    def __init__(self, max_log: int = 100_000):
        self.max_log = max_log
        self.clock_offset = 0.0
        self.reset()

    def now(self) -> float:
        return time.time() + self.clock_offset

    def reset(self) -> None:
        self.outcomes = Outcomes()
        self.log: deque = deque(maxlen=self.max_log)
        self.seq = 0
        self.counts: Counter = Counter()
        self.by_status: dict = {}
        self.apns_jwts: set = set()
        self.fcm_bearers: set = set()
        self.oauth_assertions: set = set()
        self.connections: set = set()
        self.apns_expire_next = False
        self.apns_devices: dict = {}  # hex token -> {"environment": ...}

    def begin(self, provider: str, req, body_view, extra: Optional[dict] = None) -> dict:
        self.seq += 1
        entry = {
            "seq": self.seq,
            "time": round(time.time(), 6),
            "provider": provider,
            "method": req.method,
            "path": req.raw_path,
            "http_version": req.http_version,
            "connection": req.conn.id,
            "stream_id": req.stream_id,
            "headers": _header_dict(req.headers),
            "body": body_view,
            "body_bytes": req.body_size,
            "status": None,
            "outcome": None,
            "injected": False,
            "notes": [],
        }
        if extra:
            entry.update(extra)
        self.log.append(entry)
        self.connections.add(req.conn.id)
        self.counts[f"{provider}_requests"] += 1
        return entry

    def finish(self, entry: dict, status, outcome: str, resp_headers=None, resp_body=None,
               injected: bool = False) -> None:
        entry["status"] = status
        entry["outcome"] = outcome
        entry["injected"] = injected
        entry["response_headers"] = _header_dict(resp_headers or [])
        entry["response_body"] = resp_body
        entry["duration_ms"] = round((time.time() - entry["time"]) * 1000, 3)
        p = entry["provider"]
        per = self.by_status.setdefault(p, Counter())
        per[str(status)] += 1
        if status == 200:
            self.counts[f"{p}_accepted"] += 1

    def stats(self) -> dict:
        c = self.counts
        return {
            "apns_requests": c["apns_requests"],
            "apns_accepted": c["apns_accepted"],
            "fcm_sends": c["fcm_requests"],
            "fcm_accepted": c["fcm_accepted"],
            "expo_requests": c["expo_requests"],
            "expo_accepted": c["expo_accepted"],
            "expo_messages": c["expo_messages"],
            "expo_receipt_requests": c["expo_receipts_requests"],
            "token_requests": c["oauth_requests"],
            "token_grants": c["oauth_accepted"],
            "apns_jwts_distinct": len(self.apns_jwts),
            "fcm_access_tokens_distinct": len(self.fcm_bearers),
            "oauth_assertions_distinct": len(self.oauth_assertions),
            "webpush_requests": c["webpush_requests"],
            "webpush_accepted": c["webpush_accepted"],
            "connections_distinct": len(self.connections),
            "by_status": {p: dict(v) for p, v in self.by_status.items()},
        }


def _header_dict(headers) -> dict:
    out: dict = {}
    for k, v in headers:
        k = k.lower()
        out[k] = v if k not in out else out[k] + ", " + v
    return out
