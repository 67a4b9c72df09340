"""Start the provider double from a test (or a demo script) and talk to its control API.

    import sys; sys.path.insert(0, "<repo>/Tests/ProviderDouble")
    from fixture import start_double

    double = start_double(tmp_path)            # waits for double.json
    double.herald_env()                        # env vars that point Herald at the double
    double.set_outcomes("apns", token, [{"status": 410, "reason": "Unregistered"}])
    ... run Herald ...
    double.requests(provider="apns")           # what arrived, with the verdict for each
    double.stop()

Pytest: `from fixture import provider_double` (module-scoped, reset before each use) or
`provider_double_factory`. Only the standard library and httpx are needed here.
"""
from __future__ import annotations

import json
import ssl
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Optional

import httpx

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "provider_double.py"


class DoubleError(RuntimeError):
    pass


class Double:
    """A running provider double process."""

    def __init__(self, proc: subprocess.Popen, state_dir: Path, config: dict, log_path: Path):
        self.proc = proc
        self.state_dir = state_dir
        self.config = config
        self.log_path = log_path
        self.base_url: str = config["base_url"]
        self.port: int = config["port"]
        self.ca_file: str = config["ca_file"]
        self.apns: dict = config["apns"]
        self.fcm: dict = config["fcm"]
        self._client = httpx.Client(base_url=self.base_url, verify=self.ssl_context(), timeout=10)
        self._keys: dict = {}

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context that trusts the double's throw-away CA."""
        return ssl.create_default_context(cafile=self.ca_file)

    def client(self, http2: bool = True, **kwargs) -> httpx.Client:
        """An httpx client for the double (HTTP/2 by default); close it when done."""
        kwargs.setdefault("timeout", 10)
        return httpx.Client(http2=http2, verify=self.ssl_context(), base_url=self.base_url, **kwargs)

    def _key(self, name: str):
        # Loading an RSA key checks it and takes tens of ms: load each key once.
        if name not in self._keys:
            from cryptography.hazmat.primitives import serialization

            if name == "apns":
                pem = Path(self.apns["key_path"]).read_bytes()
                self._keys[name] = serialization.load_pem_private_key(pem, None)
            else:
                sa = json.loads(Path(self.fcm["service_account_path"]).read_text())
                self._keys["sa"] = sa
                self._keys[name] = serialization.load_pem_private_key(sa["private_key"].encode(), None)
        return self._keys[name]

    # -- credentials --------------------------------------------------------------------------

    def herald_env(self) -> dict:
        """Environment variables that point a Herald server at this double."""
        return dict(self.config["herald_env"])

    def apns_jwt(self, *, iat: Optional[int] = None, key_pem: Optional[bytes] = None,
                 kid: Optional[str] = None, team_id: Optional[str] = None) -> str:
        """An APNs provider token as Apple wants it (ES256, kid, iss, iat), signed with the test
        key unless `key_pem` says otherwise."""
        import jwt

        key = key_pem if key_pem is not None else self._key("apns")
        return jwt.encode({"iss": team_id or self.apns["team_id"], "iat": int(time.time()) if iat is None else iat},
                          key, algorithm="ES256", headers={"kid": kid or self.apns["key_id"]})

    def fcm_assertion(self, *, scope: str = "https://www.googleapis.com/auth/firebase.messaging",
                      lifetime: int = 3600, **overrides) -> str:
        """An OAuth2 JWT-bearer assertion signed with the test service account."""
        import jwt

        key = self._key("fcm")
        sa = self._keys["sa"]
        now = int(time.time())
        claims = {"iss": sa["client_email"], "scope": scope, "aud": sa["token_uri"],
                  "iat": now, "exp": now + lifetime}
        claims.update(overrides)
        return jwt.encode(claims, key, algorithm="RS256",
                          headers={"kid": sa["private_key_id"]})

    # -- control API --------------------------------------------------------------------------

    def _call(self, method: str, path: str, body=None, params=None):
        r = self._client.request(method, "/_double" + path, json=body, params=params)
        if r.status_code != 200:
            raise DoubleError(f"{method} /_double{path}: {r.status_code} {r.text}")
        return r.json()

    def requests(self, provider: Optional[str] = None, since: Optional[int] = None) -> list:
        params = {}
        if provider:
            params["provider"] = provider
        if since is not None:
            params["since"] = since
        return self._call("GET", "/requests", params=params)

    def wait_for_requests(self, count: int, provider: Optional[str] = None, timeout: float = 10,
                          finished: bool = True) -> list:
        """Polls the log until `count` requests (answered, when `finished`) have arrived."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.requests(provider)
            if finished:
                got = [e for e in got if e["outcome"] is not None]
            if len(got) >= count or time.monotonic() > deadline:
                return got
            time.sleep(0.02)

    def set_outcomes(self, provider: str, token: str, responses: list, replace: bool = False) -> dict:
        return self._call("POST", "/outcomes", {"provider": provider, "token": token,
                                                "responses": responses, "replace": replace})

    def set_outcomes_all(self, provider: str, responses: list) -> dict:
        return self._call("POST", "/outcomes/all", {"provider": provider, "responses": responses})

    def reset(self) -> None:
        self._call("POST", "/reset")

    def stats(self) -> dict:
        return self._call("GET", "/stats")

    def expire_next_apns_token(self) -> None:
        self._call("POST", "/apns/expire-next-token")

    def expire_fcm_tokens(self) -> int:
        return self._call("POST", "/fcm/expire-tokens")["expired"]

    def register_apns_device(self, token: str, environment: Optional[str] = None,
                             topic: Optional[str] = None) -> None:
        self._call("POST", "/apns/devices", {"token": token, "environment": environment, "topic": topic})

    def expo_access_token(self, token: Optional[str]) -> None:
        """Require this Expo access token from now on (None: none)."""
        self._call("POST", "/expo/config", {"access_token": token})

    def expo_project(self, token: str, project: str) -> None:
        """Pin an Expo push token to another Expo project (the rest belong to one default project):
        a send request mixing projects is refused with PUSH_TOO_MANY_EXPERIENCE_IDS."""
        self._call("POST", "/expo/projects", {"token": token, "project": project})

    def fail_expo_receipts(self, responses: list) -> None:
        """The next getReceipts requests fail as a whole: [{status, code?, retry_after?, times?}]."""
        self._call("POST", "/expo/receipt-outcomes", {"responses": responses})

    def expo_receipts(self) -> dict:
        """Every receipt the Expo side issued: id -> {status, details?, token, missing}."""
        return self._call("GET", "/expo/receipts")

    def webpush_subscription(self, application_server_key=None) -> dict:
        """A subscription whose keys the double holds (it decrypts what is sent to it), as a
        browser's `PushSubscription.toJSON()` plus `id`. Restricted to the double's VAPID key
        unless `application_server_key` names another (base64url) or is False."""
        body = {} if application_server_key is None else {"application_server_key": application_server_key}
        return self._call("POST", "/webpush/subscriptions", body)

    def delete_webpush_subscription(self, sub_id: str) -> None:
        """The endpoint answers 410 Gone from now on (an unsubscribe)."""
        self._call("DELETE", f"/webpush/subscriptions/{sub_id}")

    def advance_clock(self, seconds: float) -> None:
        self._call("POST", "/clock", {"advance_s": seconds})

    # -- lifecycle ----------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        self._client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def random_apns_token() -> str:
    return (uuid.uuid4().hex + uuid.uuid4().hex)  # 32 bytes, 64 hex digits, like today's tokens


def start_double(state_dir, *args: str, timeout: float = 20, python: Optional[str] = None) -> Double:
    """Starts the double with its state in `state_dir` and waits until it listens.

    - Parameters:
      - state_dir: a directory (created if missing); credentials and double.json go there.
      - args: extra command-line flags, e.g. "--min-token-update-s", "0".
      - timeout: seconds to wait for double.json.
    - Returns: a `Double`; call `stop()` (or use it as a context manager).
    - Throws: `DoubleError` if the process exits or does not get ready in time.
    """
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    ready = state_dir / "double.json"
    if ready.exists():
        ready.unlink()
    log_path = state_dir / "double.log"
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        [python or sys.executable, str(SCRIPT), "--state-dir", str(state_dir), "--port", "0",
         "--exit-with-parent", *args],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    log.close()
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise DoubleError(f"provider double exited with {proc.returncode}:\n"
                              + log_path.read_text(errors="replace"))
        try:
            config = json.loads(ready.read_text())
            if config.get("pid") == proc.pid:
                return Double(proc, state_dir, config, log_path)
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise DoubleError("provider double did not write double.json in time:\n"
                              + log_path.read_text(errors="replace"))
        time.sleep(0.02)


try:
    import pytest

    @pytest.fixture(scope="module")
    def provider_double_module(tmp_path_factory):
        double = start_double(tmp_path_factory.mktemp("provider-double"))
        yield double
        double.stop()

    @pytest.fixture
    def provider_double(provider_double_module):
        """A double shared by a test module, reset (log and outcomes) before each test."""
        provider_double_module.reset()
        return provider_double_module

    @pytest.fixture
    def provider_double_factory(tmp_path):
        """`factory(*flags)` starts a private double; all are stopped after the test."""
        started = []

        def factory(*args: str, name: str = "double") -> Double:
            d = start_double(tmp_path / f"{name}-{len(started)}", *args)
            started.append(d)
            return d

        yield factory
        for d in started:
            d.stop()
except ImportError:  # used outside pytest (a demo script)
    pass
