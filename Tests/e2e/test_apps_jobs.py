"""Jobs and sessions per app (issue 14, SPEC AP-3, AP-5; docs/adr/0006-app-routing.md).

Two apps beside the environment's `default` one, created through the admin API without push
credentials, so their pushes die at once (`push_not_configured`) and become dead letters each
app can see. A server key lists, finds and retries its own app's jobs only; `herald jobs retry
--app` does the same against the database. A session is named by its app and sid (ADR 0019):
another app's key cannot end or expire it, and ending it closes that app's streams only.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import jwt
import pytest

from conftest import BINARY, SERVER_KEY, assert_error
from test_apps import HTTP, bearer, wait_for  # the shared client lives for the session

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import provider_double, provider_double_module, random_apns_token  # noqa: E402,F401

ADMIN_KEY = "e2e-admin-key-0123456789"
SECRET = "jobs-apps-secret-0123456789abcdef"
KEYS = {"alpha": "alpha-server-key-0123456789", "beta": "beta-server-key-0123456789"}

def app_token(app, sub="carol", sid="s1", **extra) -> str:
    """An access token of `app`, routed by its issuer (ADR 0006)."""
    claims = {"sub": sub, "sid": sid, "exp": int(time.time()) + 3600, "iss": f"https://{app}.example", **extra}
    return jwt.encode(claims, SECRET, algorithm="HS256")


@pytest.fixture
def herald_two_apps(herald_factory, provider_double):
    """Herald with the double's credentials as the `default` app, and apps alpha and beta
    without push credentials."""
    h = herald_factory(**provider_double.herald_env(), HERALD_ADMIN_KEY=ADMIN_KEY,
                       HERALD_SECRET_KEY="AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    for app, key in KEYS.items():
        r = HTTP.post(h.url("/v1/apps"), headers=bearer(ADMIN_KEY),
                      json={"id": app, "server_keys": [key], "tokens": {"hs256_secret": SECRET, "issuer": f"https://{app}.example"}})
        assert r.status_code == 201, r.text
    return h


def register(h, token, device_token) -> dict:
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "ios", "token": device_token}, headers=bearer(token))
    assert r.status_code == 201, r.text
    return r.json()


def push(h, key, device_id) -> str:
    r = HTTP.post(h.url("/v1/push"), json={"device_ids": [device_id], "notification": {"title": "Hi", "body": "there"}},
                  headers=bearer(key))
    assert r.status_code == 202, r.text
    assert r.json()["queued"] == 1, r.text
    return r.json()["jobs"][0]["job_id"]


def jobs(h, key, state="dead") -> dict:
    r = HTTP.get(h.url("/v1/jobs"), params={"state": state}, headers=bearer(key))
    assert r.status_code == 200, r.text
    return {j["id"]: j for j in r.json()["jobs"]}


def dead_job(h, app) -> str:
    """Registers a device of `app`, pushes it, and waits for its job to die (no credentials)."""
    device = register(h, app_token(app, sid=f"{app}-dev"), random_apns_token())
    job = push(h, KEYS[app], device["id"])
    wait_for(lambda: job in jobs(h, KEYS[app]), what=f"{app}'s job to be dead-lettered")
    return job


# --- jobs ------------------------------------------------------------------------------------


def test_a_server_key_lists_finds_and_retries_its_own_apps_jobs_only(herald_two_apps):
    h = herald_two_apps
    alpha, beta = dead_job(h, "alpha"), dead_job(h, "beta")
    assert "push_not_configured" in jobs(h, KEYS["alpha"])[alpha]["last_error"]
    # The default app's push goes out (the double's credentials) and is its own.
    device = register(h, h.token(sub="dora", sid="d-dev"), random_apns_token())
    mine = push(h, SERVER_KEY, device["id"])
    wait_for(lambda: mine in jobs(h, SERVER_KEY, "done"), what="the default app's push")

    # Each key lists its own app's jobs only, in every state.
    assert set(jobs(h, KEYS["alpha"])) == {alpha}
    assert set(jobs(h, KEYS["beta"])) == {beta}
    r = HTTP.get(h.url("/v1/jobs"), params={"state": "dead"}, headers=h.server_headers())
    assert r.status_code == 200 and r.json()["jobs"] == [], r.text
    assert mine not in jobs(h, KEYS["alpha"], "done") and mine not in jobs(h, KEYS["beta"], "done")

    # Another app's job id is not found, as an id that does not exist, and stays dead.
    before = jobs(h, KEYS["alpha"])[alpha]
    for key in (KEYS["beta"], SERVER_KEY):
        assert_error(HTTP.post(h.url(f"/v1/jobs/{alpha}/retry"), headers=bearer(key)), 404, "not_found")
    assert_error(HTTP.post(h.url(f"/v1/jobs/{mine}/retry"), headers=bearer(KEYS["alpha"])), 404, "not_found")

    # A bulk retry is the key's app's: beta's comes back, alpha's is left as it was.
    r = HTTP.post(h.url("/v1/jobs/retry"), json={}, headers=bearer(KEYS["beta"]))
    assert r.status_code == 200 and r.json() == {"retried": 1}, r.text
    r = HTTP.post(h.url("/v1/jobs/retry"), json={"reason": "push_not_configured"}, headers=h.server_headers())
    assert r.status_code == 200 and r.json() == {"retried": 0}, r.text
    assert jobs(h, KEYS["alpha"])[alpha] == before
    wait_for(lambda: beta in jobs(h, KEYS["beta"]), what="beta's retried job to die again")

    # Its own job by id: retried.
    r = HTTP.post(h.url(f"/v1/jobs/{alpha}/retry"), headers=bearer(KEYS["alpha"]))
    assert r.status_code == 200, r.text
    assert r.json()["id"] == alpha and r.json()["state"] == "queued" and r.json()["attempts"] == 0
    wait_for(lambda: alpha in jobs(h, KEYS["alpha"]), what="alpha's retried job to die again")


def test_herald_jobs_retry_takes_one_app(herald_two_apps):
    h = herald_two_apps
    alpha, beta = dead_job(h, "alpha"), dead_job(h, "beta")
    alpha_before, before = jobs(h, KEYS["alpha"])[alpha], jobs(h, KEYS["beta"])[beta]
    cli = lambda *args: subprocess.run([BINARY, "jobs", "retry", *args], env=h.env, capture_output=True, text=True, timeout=20)  # noqa: E731
    for bad, message in ((["--app", "Alpha!"], "--app must be an app id"), (["--app", "gamma"], "no app 'gamma'")):
        result = cli(*bad)
        assert result.returncode == 2 and message in result.stderr, result
    # Without --app: the default app's, which has no dead jobs.
    result = cli("--reason", "push_not_configured")
    assert result.returncode == 0 and json.loads(result.stdout) == {"retried": 0}, result
    result = cli("--app", "alpha", "--reason", "push_not_configured")
    assert result.returncode == 0 and json.loads(result.stdout) == {"retried": 1}, result
    assert jobs(h, KEYS["beta"])[beta] == before
    # The running server sends alpha's at its next poll: it dies again, with a new run time.
    wait_for(lambda: jobs(h, KEYS["alpha"]).get(alpha, {}).get("run_at", "") > alpha_before["run_at"], what="alpha's job to run again")


# --- sessions --------------------------------------------------------------------------------


def test_a_server_key_ends_and_expires_its_own_apps_sessions_only(herald_two_apps):
    h = herald_two_apps
    tokens = {"alpha": app_token("alpha", sid="a-s1"), "beta": app_token("beta", sid="b-s1"), "default": h.token(sub="carol", sid="d-s1")}
    devices = {app: register(h, token, random_apns_token()) for app, token in tokens.items()}
    streams = {app: h.stream(token=token) for app, token in tokens.items()}
    for stream in streams.values():
        stream.ready()

    # Another app's key names its own app's session of that sid: not found to expire; ended as
    # one the app never used (ADR 0019); nothing of the other app's changes.
    for key, sid in ((KEYS["beta"], "a-s1"), (SERVER_KEY, "a-s1"), (KEYS["alpha"], "d-s1")):
        assert_error(HTTP.put(h.url(f"/v1/sessions/{sid}"), json={"expires_at": None}, headers=bearer(key)), 404, "not_found")
        r = HTTP.delete(h.url(f"/v1/sessions/{sid}"), headers=bearer(key))
        assert r.status_code == 200 and r.json() == {"session_id": sid, "ended": True, "devices_deleted": 0}, r.text
    r = HTTP.get(h.url("/v1/me/devices"), headers=bearer(tokens["alpha"]))
    assert r.status_code == 200 and [d["id"] for d in r.json()["devices"]] == [devices["alpha"]["id"]], r.text
    r = HTTP.get(h.url("/v1/me/devices"), headers=bearer(tokens["default"]))
    assert r.status_code == 200 and [(d["id"], d["active"]) for d in r.json()["devices"]] == [(devices["default"]["id"], True)], r.text

    # Its own app expires and ends it.
    r = HTTP.put(h.url("/v1/sessions/a-s1"), json={"expires_at": int(time.time()) + 600}, headers=bearer(KEYS["alpha"]))
    assert r.status_code == 200, r.text
    assert r.json()["session_id"] == "a-s1" and r.json()["user_id"] == "carol" and r.json()["active"] is True
    r = HTTP.delete(h.url("/v1/sessions/a-s1"), headers=bearer(KEYS["alpha"]))
    assert r.status_code == 200 and r.json() == {"session_id": "a-s1", "ended": True, "devices_deleted": 1}, r.text
    events = streams["alpha"].wait_closed()
    assert [e.event for e in events] == ["error"] and events[0].json()["error"] == "session_ended", events
    assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(tokens["alpha"])), 401, "session_ended")
    # Its device is gone, so it is not pushed.
    r = HTTP.post(h.url("/v1/push"), json={"device_ids": [devices["alpha"]["id"]], "notification": {"title": "Hi", "body": "there"}},
                  headers=bearer(KEYS["alpha"]))
    assert r.status_code == 202 and r.json()["queued"] == 0, r.text
    assert r.json()["skipped"] == [{"device_id": devices["alpha"]["id"], "reason": "not_found"}]

    # The other apps' sessions, streams and devices go on.
    r = HTTP.post(h.url("/v1/publish"), json={"channel": "user:carol", "event": "update", "data": {"n": "beta"}},
                  headers=bearer(KEYS["beta"]))
    assert r.status_code == 200, r.text
    assert streams["beta"].next().json()["data"] == {"n": "beta"}
    h.publish("user:carol", {"n": "default"})
    assert streams["default"].next().json()["data"] == {"n": "default"}
    for app in ("beta", "default"):
        r = HTTP.get(h.url("/v1/me/devices"), headers=bearer(tokens[app]))
        assert r.status_code == 200 and [d["id"] for d in r.json()["devices"]] == [devices[app]["id"]], r.text


def test_ending_a_session_an_app_never_saw_refuses_that_apps_tokens_only(herald_two_apps):
    h = herald_two_apps
    r = HTTP.delete(h.url("/v1/sessions/fresh"), headers=bearer(KEYS["beta"]))
    assert r.status_code == 200 and r.json() == {"session_id": "fresh", "ended": True, "devices_deleted": 0}, r.text
    # Beta's: the default app has no session of that sid to expire.
    assert_error(HTTP.put(h.url("/v1/sessions/fresh"), json={"expires_at": None}, headers=h.server_headers()), 404, "not_found")
    for restart in (False, True):   # the ended sessions are loaded at start
        if restart:
            h.restart()
        assert_error(HTTP.get(h.url("/v1/me/devices"), headers=bearer(app_token("beta", sid="fresh"))), 401, "session_ended")
        for token in (app_token("alpha", sid="fresh"), h.token(sub="carol", sid="fresh")):
            assert HTTP.get(h.url("/v1/me/devices"), headers=bearer(token)).status_code == 200
