#!/usr/bin/env python3
"""Herald's APNs + FCM + Expo + Web Push provider double: one HTTP/2-over-TLS server on loopback that checks every
request the way Apple and Google document, answers with their exact status codes, reasons and
error bodies, injects outcomes on demand and records what it received. See README.md.

    python3 Tests/ProviderDouble/provider_double.py --state-dir DIR [--port 0]
    python3 -m provider_double --state-dir DIR        (from Tests/ProviderDouble)

Once listening it writes DIR/double.json (atomically) with the port, URLs, CA file and credential
paths; a test polls for that file.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import sys
import weakref
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import credentials  # noqa: E402
from apns import APNs, REASONS  # noqa: E402
from expo import ERROR_CODES as EXPO_CODES, Expo  # noqa: E402
from fcm import FCM, FCM_CODES  # noqa: E402
from webpush import WebPush, b64url  # noqa: E402
from state import DoubleState, json_body, validate_outcome  # noqa: E402
from transport import Request, Response, Server, make_ssl_context  # noqa: E402

DEFAULTS = {
    "key_id": "TESTKEY01",
    "team_id": "TEAM123456",
    "topic": "com.example.herald",
    "project_id": "herald-test",
    "client_email": "herald-push@herald-test.iam.gserviceaccount.com",
}
SEND_RE = re.compile(r"^/v1/projects/([^/]+)/messages:send$")
WEBPUSH_RE = re.compile(r"^/wp/([A-Za-z0-9_-]{1,128})$")
VAPID_SUBJECT = "mailto:herald-tests@example.com"


def _json(status: int, obj) -> Response:
    return Response(status, [("content-type", "application/json")], json_body(obj))


class Double:
    """Routes requests to the APNs side, the FCM side, the OAuth endpoint or the control API."""

    def __init__(self, args, creds: credentials.Credentials, base_url: str):
        self.args = args
        self.base_url = base_url
        self.state = DoubleState(max_log=args.max_log)
        self.connections: weakref.WeakSet = weakref.WeakSet()
        self.apns = APNs(
            self.state, public_key=creds.apns_public_key, key_id=args.key_id, team_id=args.team_id,
            topic=args.topic, default_environment=args.apns_environment,
            key_environment=args.apns_key_environment, min_token_update_s=args.min_token_update_s,
            accept_der=args.accept_der_signatures, connections=self.connections,
        )
        self.fcm = FCM(self.state, service_account=creds.service_account,
                       public_key=creds.fcm_public_key, token_lifetime_s=args.access_token_lifetime)
        self.expo = Expo(self.state, access_token=args.expo_access_token, max_body=args.expo_max_body)
        self.webpush = WebPush(self.state, origin=base_url, application_server_key=creds.vapid_public_key)
        self.config = self._config(creds)

    def _config(self, creds) -> dict:
        base = self.base_url
        return {
            "pid": os.getpid(),
            "port": int(base.rsplit(":", 1)[1]),
            "base_url": base,
            "control_url": base + "/_double",
            "ca_file": str(creds.ca_file),
            "state_dir": str(Path(self.args.state_dir).resolve()),
            "apns": {
                "key_path": str(creds.apns_key_path),
                "key_id": self.args.key_id,
                "team_id": self.args.team_id,
                "topic": self.args.topic,
                "url": base,
                "sandbox_url": base + "/sandbox",
                "production_url": base + "/production",
                "default_environment": self.args.apns_environment,
            },
            "fcm": {
                "service_account_path": str(creds.service_account_path),
                "project_id": creds.service_account["project_id"],
                "client_email": creds.service_account["client_email"],
                "token_uri": creds.service_account["token_uri"],
                "url": base,
            },
            "expo": {
                "url": base,
                "send_url": base + "/--/api/v2/push/send",
                "receipts_url": base + "/--/api/v2/push/getReceipts",
                "access_token": self.args.expo_access_token,
            },
            "webpush": {
                "origin": base,
                "endpoint_base": base + "/wp/",
                "vapid_key_path": str(creds.vapid_key_path),
                "vapid_public_key": b64url(creds.vapid_public_key),
                "vapid_subject": VAPID_SUBJECT,
            },
            "herald_env": {
                "HERALD_EXPO_URL": base,
                "HERALD_APNS_URL": base + "/production",
                "HERALD_APNS_SANDBOX_URL": base + "/sandbox",
                "HERALD_FCM_URL": base,
                "HERALD_CA_FILE": str(creds.ca_file),
                "APNS_KEY_PATH": str(creds.apns_key_path),
                "APNS_KEY_ID": self.args.key_id,
                "APNS_TEAM_ID": self.args.team_id,
                "APNS_TOPIC": self.args.topic,
                "FCM_SERVICE_ACCOUNT_PATH": str(creds.service_account_path),
                "FCM_PROJECT_ID": creds.service_account["project_id"],
                "HERALD_VAPID_KEY_PATH": str(creds.vapid_key_path),
                "HERALD_VAPID_SUBJECT": VAPID_SUBJECT,
                # The double's Web Push endpoints are on 127.0.0.1: not a public push service.
                "HERALD_WEBPUSH_ALLOW_PRIVATE": "1",
            },
        }

    async def handle(self, req: Request) -> Response:
        path = req.path
        if path.startswith("/_double/") or path == "/_double":
            return await self.control(req)
        if re.match(r"^(/(sandbox|production))?/3/", path):
            resp = await self.apns.handle(req)
        elif path == "/--/api/v2/push/send":
            resp = await self.expo.handle_send(req)
        elif path == "/--/api/v2/push/getReceipts":
            resp = await self.expo.handle_receipts(req)
        elif WEBPUSH_RE.match(path):
            resp = await self.webpush.handle(req, WEBPUSH_RE.match(path).group(1))
        elif path == "/token":
            resp = await self.fcm.handle_token(req)
        elif path.startswith("/v1/"):
            m = SEND_RE.match(path)
            if m:
                resp = await self.fcm.handle_send(req, m.group(1))
            else:
                resp = _json(404, {"error": {"code": 404, "message": "Requested entity was not found.",
                                             "status": "NOT_FOUND"}})
        elif path == "/" and req.method == "GET":
            resp = _json(200, self.config)
        else:
            resp = _json(404, {"error": f"provider double: no route for {req.method} {path}"})
        if not self.args.quiet:
            print(f"{req.method} {req.raw_path[:80]} h{req.http_version} -> "
                  f"{resp.action or resp.status}", flush=True)
        return resp

    # -- control API -----------------------------------------------------------------------

    async def control(self, req: Request) -> Response:
        route = req.path[len("/_double"):] or "/"
        body = None
        if req.body:
            try:
                body = json.loads(req.body)
            except ValueError:
                return _json(400, {"error": "body is not JSON"})
        key = (req.method, route)
        st = self.state
        if key == ("GET", "/health"):
            return _json(200, {"ok": True})
        if key == ("GET", "/config"):
            return _json(200, self.config)
        if key == ("GET", "/requests"):
            entries = list(st.log)
            provider = req.query.get("provider")
            if provider:
                entries = [e for e in entries if e["provider"] in provider.split(",")]
            since = req.query.get("since")
            if since:
                entries = [e for e in entries if e["seq"] > int(since)]
            return _json(200, entries)
        if key == ("GET", "/stats"):
            return _json(200, st.stats())
        if key == ("GET", "/outcomes"):
            return _json(200, st.outcomes.view())
        if key == ("POST", "/reset"):
            st.reset()
            self.apns.expired_jwts.clear()
            self.expo.reset()
            self.webpush.reset()
            return _json(200, {"ok": True})
        if key in (("POST", "/outcomes"), ("POST", "/outcomes/all")):
            return self._set_outcomes(body, every=route.endswith("/all"))
        if key == ("POST", "/apns/expire-next-token"):
            st.apns_expire_next = True
            return _json(200, {"ok": True})
        if key == ("POST", "/apns/devices"):
            if not isinstance(body, dict) or not isinstance(body.get("token"), str):
                return _json(400, {"error": "expected {token, environment?, topic?}"})
            env = body.get("environment")
            if env not in (None, "sandbox", "production"):
                return _json(400, {"error": "environment must be sandbox or production"})
            st.apns_devices[body["token"].lower()] = {"environment": env, "topic": body.get("topic")}
            return _json(200, {"ok": True})
        if key == ("POST", "/expo/config"):
            if not isinstance(body, dict) or not (body.get("access_token") is None or isinstance(body["access_token"], str)):
                return _json(400, {"error": "expected {access_token: string or null}"})
            self.expo.access_token = body.get("access_token")
            return _json(200, {"access_token": self.expo.access_token})
        if key == ("POST", "/expo/projects"):
            if not isinstance(body, dict) or not isinstance(body.get("token"), str) or not isinstance(body.get("project"), str):
                return _json(400, {"error": "expected {token, project}"})
            self.expo.projects[body["token"]] = body["project"]
            return _json(200, {"ok": True})
        if key == ("POST", "/expo/receipt-outcomes"):
            responses = body.get("responses") if isinstance(body, dict) else None
            if not isinstance(responses, list) or not responses or not all(
                    isinstance(r, dict) and isinstance(r.get("status"), int) and r["status"] != 200 for r in responses):
                return _json(400, {"error": "expected {responses: [{status (not 200), code?, message?, retry_after?, times?}]}"})
            self.expo.receipt_failures.extend(dict(r) for r in responses)
            return _json(200, {"queued": len(responses)})
        if key == ("GET", "/expo/receipts"):
            return _json(200, {rid: {**r["receipt"], "token": r["token"], "missing": r["missing"]}
                               for rid, r in self.expo.receipts.items()})
        if key == ("POST", "/webpush/subscriptions"):
            asks = (body or {}).get("application_server_key") if isinstance(body, dict) else None
            if asks is not None and asks is not False and not isinstance(asks, str):
                return _json(400, {"error": "application_server_key is a base64url key or false"})
            return _json(200, self.webpush.create_subscription(asks))
        if req.method == "DELETE" and route.startswith("/webpush/subscriptions/"):
            known = self.webpush.delete_subscription(route.rsplit("/", 1)[1])
            return _json(200, {"deleted": known})
        if key == ("POST", "/fcm/expire-tokens"):
            return _json(200, {"expired": self.fcm.expire_tokens()})
        if key == ("POST", "/clock"):
            if not isinstance(body, dict):
                return _json(400, {"error": "expected {offset_s} or {advance_s}"})
            if "offset_s" in body:
                st.clock_offset = float(body["offset_s"])
            st.clock_offset += float(body.get("advance_s", 0))
            return _json(200, {"offset_s": st.clock_offset, "now": st.now()})
        return _json(404, {"error": f"no control route {req.method} {route}"})

    def _set_outcomes(self, body, every: bool) -> Response:
        if not isinstance(body, dict):
            return _json(400, {"error": "expected a JSON object"})
        provider = body.get("provider")
        if provider not in ("apns", "fcm", "expo", "webpush"):
            return _json(400, {"error": "provider must be apns, fcm, expo or webpush"})
        responses = body.get("responses")
        if not isinstance(responses, list) or not responses:
            return _json(400, {"error": "responses must be a non-empty list"})
        problems = [f"responses[{i}]: {p}" for i, r in enumerate(responses) for p in validate_outcome(r)]
        if problems:
            return _json(400, {"error": "; ".join(problems)})
        warnings = []
        for i, r in enumerate(responses):
            if provider == "apns" and r.get("reason") and r["reason"] not in REASONS:
                warnings.append(f"responses[{i}]: reason {r['reason']!r} is not in Apple's table")
            code = r.get("errorCode") or r.get("error_code")
            if provider == "fcm" and code and code not in FCM_CODES:
                warnings.append(f"responses[{i}]: errorCode {code!r} is not an FcmError code")
            for field in ("ticket_error", "receipt_error"):
                if provider == "expo" and r.get(field) and r[field] not in EXPO_CODES:
                    warnings.append(f"responses[{i}]: {field} {r[field]!r} is not an Expo error code")
        if every:
            self.state.outcomes.set_all(provider, responses)
        else:
            token = body.get("token")
            if not isinstance(token, str) or not token:
                return _json(400, {"error": "token is required (use /_double/outcomes/all for every token)"})
            if provider == "apns":
                token = token.lower()
            self.state.outcomes.add(provider, token, responses, replace=bool(body.get("replace")))
        return _json(200, {"queued": len(responses), "warnings": warnings})


def _write_atomic(path: Path, obj) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state-dir", required=True, help="where credentials and double.json live")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--fresh", action="store_true", help="regenerate every credential")
    p.add_argument("--key-id", default=DEFAULTS["key_id"])
    p.add_argument("--team-id", default=DEFAULTS["team_id"])
    p.add_argument("--topic", default=DEFAULTS["topic"], help="the app's bundle ID")
    p.add_argument("--project-id", default=DEFAULTS["project_id"])
    p.add_argument("--client-email", default=DEFAULTS["client_email"])
    p.add_argument("--apns-environment", choices=("sandbox", "production"), default="sandbox",
                   help="environment of /3/device/... without a /sandbox or /production prefix")
    p.add_argument("--apns-key-environment", choices=("both", "sandbox", "production"), default="both",
                   help="environment the APNs key is scoped to (else BadEnvironmentKeyIdInToken)")
    p.add_argument("--min-token-update-s", type=float, default=1200,
                   help="TooManyProviderTokenUpdates below this interval per connection (0: off)")
    p.add_argument("--accept-der-signatures", action="store_true",
                   help="also accept DER ES256 signatures (APNs is observed to)")
    p.add_argument("--access-token-lifetime", type=int, default=3599)
    p.add_argument("--expo-access-token", default=None,
                   help="require this Expo access token (enhanced push security); default: none required")
    p.add_argument("--expo-max-body", type=int, default=1 << 20, help="largest inflated Expo request body")
    p.add_argument("--max-streams", type=int, default=1000, help="SETTINGS_MAX_CONCURRENT_STREAMS")
    p.add_argument("--max-log", type=int, default=100_000)
    p.add_argument("--quiet", action="store_true", help="no line per request on stdout")
    p.add_argument("--exit-with-parent", action="store_true",
                   help="exit when the parent process goes away (test fixtures)")
    return p.parse_args(argv)


async def main_async(args) -> None:
    state_dir = Path(args.state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    ready = state_dir / "double.json"
    if ready.exists():
        ready.unlink()
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(512)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    base_url = f"https://{host}:{port}"
    creds = credentials.prepare(state_dir, token_uri=base_url + "/token", key_id=args.key_id,
                                project_id=args.project_id, client_email=args.client_email,
                                fresh=args.fresh)
    double = Double(args, creds, base_url)
    server = Server(double.handle, make_ssl_context(str(creds.server_cert), str(creds.server_key)),
                    max_streams=args.max_streams, on_connection=double.connections.add)
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_quiet_tls_errors)
    await server.start(sock)
    _write_atomic(ready, double.config)
    print(f"provider double listening on {base_url} (state: {state_dir.resolve()})", flush=True)

    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.exit_with_parent:
        parent = os.getppid()

        async def watch_parent():
            while os.getppid() == parent:
                await asyncio.sleep(0.5)
            stop.set()

        asyncio.ensure_future(watch_parent())
    await stop.wait()
    await server.close()
    try:
        if json.loads(ready.read_text()).get("pid") == os.getpid():
            ready.unlink()
    except (OSError, ValueError):
        pass


def _quiet_tls_errors(loop, context) -> None:
    exc = context.get("exception")
    import ssl

    if isinstance(exc, (ssl.SSLError, ConnectionError, TimeoutError)):
        return  # a client that does not trust the CA, or went away mid-handshake
    loop.default_exception_handler(context)


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        asyncio.run(main_async(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
