"""Operations (issue 7 item 3, SPEC OP-3 to OP-5): `/metrics` parses as Prometheus text and
holds every family the operator guide promises; request ids line up between answers and logs;
SIGTERM lets in-flight pushes finish and exits 0."""
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import assert_error, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import provider_double, provider_double_module, random_apns_token  # noqa: E402,F401

HTTP = httpx.Client(timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


def auth(access):
    return {"Authorization": f"Bearer {access}"}


def register_ios(h, user):
    sid = f"s-{uuid.uuid4().hex[:8]}"
    access = h.token(sub=user, sid=sid)
    token = random_apns_token()
    r = HTTP.post(h.url("/v1/me/devices"), json={"platform": "ios", "token": token}, headers=auth(access))
    assert r.status_code == 201, r.text
    return access, token, r.json()["id"]


def families(h) -> dict:
    r = HTTP.get(h.url("/metrics"))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4"), r.text
    return {f.name: f for f in text_string_to_metric_families(r.text)}


def samples(family, name=None) -> list:
    return [s for s in family.samples if name is None or s.name == name]


def test_metrics_parse_and_cover_the_promised_families(herald_factory, provider_double):
    h = herald_factory(**provider_double.herald_env())
    user = f"u-{uuid.uuid4().hex[:8]}"
    access, token, device_id = register_ios(h, user)
    stream = h.stream(token=h.token(sub="watcher", sid="w1"), params={"state": "background"})
    stream.ready()
    h.publish("user:watcher", {"n": 1})
    stream.expect("update")
    r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": [user]}, "kind": "k", "title": "T"},
                  headers=h.server_headers())
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 10
    while True:
        fams = families(h)
        sent = [s for s in samples(fams["herald_push_results"]) if s.labels == {"provider": "apns", "outcome": "delivered"}] \
            if "herald_push_results" in fams else []
        if sent or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    # prometheus_client strips `_total` from counter family names.
    for name in ("herald_connections", "herald_streams", "herald_sessions_live", "herald_sessions_foreground",
                 "herald_connections_accepted", "herald_messages_published", "herald_messages_delivered",
                 "herald_slow_consumer_disconnects", "herald_http_responses", "herald_push_jobs",
                 "herald_push_queue_oldest_due_seconds", "herald_push_results", "herald_push_request_seconds",
                 "herald_push_provider_misconfigured", "herald_notifications", "herald_notification_targets",
                 "herald_presence_sweeps", "herald_storage_calls_waiting", "herald_notifications_purged"):
        assert name in fams, (name, sorted(fams))
    assert samples(fams["herald_storage_calls_waiting"])[0].value == 0, "nothing waits on a database that answers"
    assert fams["herald_push_request_seconds"].type == "histogram"
    assert sent and sent[0].value >= 1, samples(fams["herald_push_results"])
    streams = {(s.labels["transport"], s.labels["state"]): s.value for s in samples(fams["herald_streams"])}
    assert streams.get(("sse", "background")) == 1, streams
    assert samples(fams["herald_messages_published"])[0].value >= 2
    assert samples(fams["herald_notifications"])[0].value == 1
    routes = {(s.labels["route"], s.labels["status"]) for s in samples(fams["herald_http_responses"])}
    assert ("POST /v1/notifications", "201") in routes, routes
    jobs = {s.labels["state"]: s.value for s in samples(fams["herald_push_jobs"])}
    assert set(jobs) == {"queued", "leased", "done", "dead"}, jobs


def test_done_push_jobs_past_their_retention_are_purged_and_uncounted(herald_factory):
    h = herald_factory(HERALD_PUSH_JOB_RETENTION_DAYS="7")
    h.stop()
    now = int(time.time() * 1000)
    day = 86_400_000
    rows = [("done", now - 9 * day), ("done", now - 8 * day), ("dead", now - 30 * day),
            ("queued", now - 30 * day), ("done", now - 6 * day)]
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    with db:
        for state, created in rows:
            db.execute("INSERT INTO jobs (kind, payload_json, state, run_at, created_at, app) "
                       "VALUES ('push.deliver', '{}', ?, ?, ?, 'default')", (state, created + day * 60, created))
        db.execute("UPDATE job_counts SET n = n + 3 WHERE state = 'done'")
    db.close()
    h.start()
    wait_until(lambda: "purged done push jobs past their retention" in h.logs(), what="the start's purge")
    listed = {state: [j["created_at"] for j in HTTP.get(h.url(f"/v1/jobs?state={state}&limit=10"),
                                                          headers=h.server_headers()).json()["jobs"]]
              for state in ("done", "dead", "queued")}
    # The young done job, and the old dead letter and queued job, stay.
    assert [len(listed[s]) for s in ("done", "dead", "queued")] == [1, 1, 1], listed
    jobs = {s.labels["state"]: s.value for s in samples(families(h)["herald_push_jobs"])}
    assert jobs["done"] == 1 and jobs["dead"] == 1, jobs


def time_id(ms: int) -> str:
    """A notification id as `Notifier.newID` makes it at `ms`: `ntf_`, 45 bits of the time in
    base32 (most significant first), 11 random characters."""
    alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
    stamp = "".join(alphabet[(ms >> shift) & 31] for shift in range(40, -1, -5))
    return "ntf_" + stamp + "".join(alphabet[b & 31] for b in os.urandom(11))


def test_notifications_past_their_retention_are_purged_with_their_records(herald_factory, tmp_path):
    # SQLite whatever HERALD_E2E_POSTGRES says: the test writes the rows itself.
    h = herald_factory(HERALD_NOTIFICATION_RETENTION_DAYS="30", HERALD_DATABASE=str(tmp_path / "retention.db"))
    h.stop()
    now = int(time.time() * 1000)
    day = 86_400_000
    user = f"u-{uuid.uuid4().hex[:8]}"
    # In seq order: a young one, a row stored before schema 17 (its id carries no time), two old
    # ones (one read), and a recent one. Old = created more than 30 days ago.
    rows = [("young", time_id(now - 20 * day), now - 20 * day, 1, None),
            ("legacy", f"legacy-{uuid.uuid4().hex[:8]}", now - 45 * day, 0, None),
            ("old", time_id(now - 40 * day), now - 40 * day, 1, None),
            ("old-read", time_id(now - 35 * day), now - 35 * day, 1, now - 34 * day),
            ("recent", time_id(now - day), now - day, 1, None)]
    ids, seqs = {}, {}
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    with db:
        for name, nid, created, timed, read_at in rows:
            seqs[name] = db.execute("INSERT INTO notifications (id, user_id, kind, priority, created_at, timed, read_at, title_json) "
                                    "VALUES (?, ?, 'orders.paid', 'normal', ?, ?, ?, ?)",
                                    (nid, user, created, timed, read_at, json.dumps({"en": name}))).lastrowid
            ids[name] = nid
        for name in ("old", "young"):
            db.execute("INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES (?, ?, 'queued', ?)",
                       (ids[name], user, now - 20 * day))
        # Recorded long after its notification: it goes with it all the same.
        db.execute("INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES (?, ?, 'opened', ?)", (ids["old"], user, now))
    db.close()
    h.start()
    wait_until(lambda: "purged notifications past their retention" in h.logs(), what="the start's purge")
    assert "notification_retention_days" in h.logs()
    access = h.token(sub=user, sid=f"s-{uuid.uuid4().hex[:8]}")
    listed = HTTP.get(h.url("/v1/me/notifications"), headers=auth(access)).json()
    assert [n["id"] for n in listed["notifications"]] == [ids["recent"], ids["young"]], listed
    r = HTTP.get(h.url("/v1/me/notifications/unread-count"), headers=auth(access))
    assert r.status_code == 200 and r.json()["unread_count"] == 2, r.text
    # A cursor at a purged row pages on to the rows older than it that are left.
    r = HTTP.get(h.url(f"/v1/me/notifications?cursor={seqs['old-read']}"), headers=auth(access))
    assert r.status_code == 200 and [n["id"] for n in r.json()["notifications"]] == [ids["young"]], r.text
    for name in ("old", "old-read", "legacy"):
        r = HTTP.get(h.url(f"/v1/notifications/{ids[name]}/deliveries"), headers=h.server_headers())
        assert_error(r, 404, "not_found")
    r = HTTP.get(h.url(f"/v1/notifications/{ids['young']}/deliveries"), headers=h.server_headers())
    assert r.status_code == 200 and [d["outcome"] for d in r.json()["deliveries"]] == ["queued"], r.text
    purged = samples(families(h)["herald_notifications_purged"], "herald_notifications_purged_total")
    assert [s.value for s in purged] == [3.0], purged
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    left = db.execute("SELECT count(*) FROM deliveries WHERE notification_id = ?", (ids["old"],)).fetchone()[0]
    db.close()
    assert left == 0


def test_notifications_are_kept_without_a_retention(herald_factory, tmp_path):
    h = herald_factory(HERALD_DATABASE=str(tmp_path / "kept.db"))
    h.stop()
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    with db:
        db.execute("INSERT INTO notifications (id, user_id, kind, priority, created_at) VALUES ('ancient', 'u', 'k', 'normal', 0)")
    db.close()
    h.start()
    # Off by default (ADR 0012): the start line says so, and the row of 1970 is still served.
    assert "0 (kept)" in h.logs(), h.logs()
    r = HTTP.get(h.url("/v1/notifications/ancient/deliveries"), headers=h.server_headers())
    assert r.status_code == 200, r.text
    purged = samples(families(h)["herald_notifications_purged"], "herald_notifications_purged_total")
    assert [s.value for s in purged] == [0.0], purged


def test_a_streams_head_get_and_websocket_upgrade_carry_the_request_id(herald, raw):
    # api14: HEAD /v1/stream (and the stream's and WebSocket's own heads, written by hand, not by
    # the response path that adds the id) came without X-Request-Id, which every answer carries.
    auth = f"Bearer {herald.token(sub='rid-user', sid='rid-s')}"
    r = HTTP.head(herald.url("/v1/stream"), headers={"Authorization": auth, "X-Request-Id": "trace-head"})
    assert r.status_code == 200 and r.headers.get("x-request-id") == "trace-head", r.headers
    assert HTTP.head(herald.url("/v1/stream"), headers={"Authorization": auth}).headers.get("x-request-id")
    with HTTP.stream("GET", herald.url("/v1/stream"), headers={"Authorization": auth, "X-Request-Id": "trace-get"}) as r:
        assert r.status_code == 200 and r.headers.get("x-request-id") == "trace-get", r.headers
    c = raw(herald)
    c.send(b"GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
           b"X-Request-Id: trace-ws\r\nAuthorization: " + auth.encode() + b"\r\n\r\n")
    head = c.read_until(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101") and b"\r\nX-Request-Id: trace-ws\r\n" in head, head


def test_request_ids_are_echoed_and_logged_without_secrets(herald_factory):
    # Successful requests log at debug; errors at info and above.
    herald = herald_factory(HERALD_LOG_LEVEL="debug")
    r = HTTP.post(herald.url("/v1/publish"), json={"channel": "c", "data": 1},
                  headers={**herald.server_headers(), "X-Request-Id": "trace-abc-123"})
    assert r.status_code == 200 and r.headers["x-request-id"] == "trace-abc-123"
    generated = HTTP.get(herald.url("/healthz")).headers["x-request-id"]
    assert generated
    deadline = time.monotonic() + 5
    while "trace-abc-123" not in herald.logs() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [json.loads(line) for line in herald.logs().splitlines() if line.startswith("{")]
    [line] = [l for l in lines if l.get("request_id") == "trace-abc-123"]
    assert line["request"] == "POST /v1/publish" and line["status"] == "200", line
    server_key = herald.server_headers()["Authorization"].split()[1]
    assert server_key not in herald.logs()
    # A 15 KB path is logged as its first 200 bytes and "…", as the 404 shows it.
    r = HTTP.get(herald.url("/" + "p" * 15_000), headers={"X-Request-Id": "trace-long-path"})
    assert r.status_code == 404, r.status_code
    wait_until(lambda: "trace-long-path" in herald.logs(), 5, "the long path's request log line")
    [line] = [json.loads(l) for l in herald.logs().splitlines() if l.startswith("{") and "trace-long-path" in l]
    assert line["request"] == "GET /" + "p" * 199 + "…", len(line["request"])


def test_a_log_that_cannot_be_written_does_not_stop_the_server(tmp_path):
    """Standard error on a full volume (/dev/full: ENOSPC) or a pipe whose reader left (EPIPE):
    the lines are dropped, the server keeps serving (breaker12: it died with SIGILL at its first
    line, Foundation's FileHandle.write traps on a failed write, so a full disk shared by the log
    and the database, or a log shipper's restart, took the whole server down)."""
    from conftest import BINARY, JWT_SECRET, SERVER_KEY, free_port
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HERALD_HOST": "127.0.0.1", "HERALD_PORT": str(port),
           "HERALD_DATABASE": str(tmp_path / "full.db"), "HERALD_SERVER_KEY": SERVER_KEY,
           "HERALD_JWT_SECRET": JWT_SECRET, "HERALD_LOG_LEVEL": "debug"}
    with open("/dev/full", "wb") as full:
        proc = subprocess.Popen([BINARY, "serve"], env=env, stdout=full, stderr=full)
    try:
        wait_until(lambda: _healthy(port) or proc.poll() is not None, 20, "the server on /dev/full to answer")
        assert proc.poll() is None, f"herald exited {proc.returncode} with its log on /dev/full"
        base = f"http://127.0.0.1:{port}"
        # Each answer is a request line at debug, each refusal one at info: all refused by /dev/full.
        for _ in range(20):
            assert HTTP.get(base + "/nowhere").status_code == 404
            r = HTTP.post(base + "/v1/publish", json={"channel": "c", "data": 1},
                          headers={"Authorization": f"Bearer {SERVER_KEY}"})
            assert r.status_code == 200, r.text
        assert HTTP.get(base + "/healthz").status_code == 200 and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()

    env["HERALD_DATABASE"] = str(tmp_path / "pipe.db")
    proc = subprocess.Popen([BINARY, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        proc.stderr.readline()  # the first line: it runs, then its log reader leaves
        proc.stderr.close()
        wait_until(lambda: _healthy(port) or proc.poll() is not None, 20, "the server with a closed log pipe to answer")
        for _ in range(20):
            assert HTTP.get(f"http://127.0.0.1:{port}/nowhere").status_code == 404
        assert HTTP.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        assert proc.poll() is None, f"herald exited {proc.returncode} once its log pipe closed"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("args,env,status,says", [
    (["serve"], {"HERALD_PORT": "abc"}, 2, "HERALD_PORT"),
    # api14: a number setting is digits (Int read `+8080` as 8080 and `-0` as 0).
    (["serve"], {"HERALD_PORT": "+8080"}, 2, "HERALD_PORT"),
    (["serve"], {"HERALD_LOOPS": "+2"}, 2, "HERALD_LOOPS"),
    (["serve"], {"HERALD_DEAD_PEER_HEARTBEATS": "-0"}, 2, "HERALD_DEAD_PEER_HEARTBEATS"),
    # api14: `herald jobs` alone names itself and its commands, not "herald jobs retry:".
    (["jobs"], {}, 2, "herald jobs: a jobs command is required"),
    (["jobs", "retyr"], {}, 2, "retry   queue dead jobs again"),
    (["serve", "extra"], {}, 2, "takes no arguments"),
    (["migrate"], {"HERALD_LOG_LEVEL": "loud"}, 2, "HERALD_LOG_LEVEL"),
    (["bogus"], {}, 2, "unknown command"),
    (["jobs", "retry", "--bogus", "x"], {}, 2, "--bogus"),
    # Unix ms are digits: `+5` and `1e12` are no time (Int64 read the first).
    (["jobs", "retry", "--since", "+5"], {}, 2, "--since"),
    (["jobs", "retry", "--until", "1e12"], {}, 2, "--until"),
    (["jobs", "retry"], {"HERALD_DATABASE": "/nonexistent/herald.db"}, 2, "does not exist"),
    (["vapid"], {}, 2, "subcommand"),
    (["send-test"], {}, 2, "usage"),
])
def test_a_start_refused_with_its_standard_error_on_a_full_volume_exits_with_its_status(tmp_path, args, env, status, says):
    """lows13: the start-up and subcommand errors were written with Foundation's FileHandle, which
    traps on a refused write: with standard error on a full volume a bad setting died of SIGILL
    (status -4) instead of exiting 2, and a script could not tell the two apart."""
    from conftest import BINARY
    base = {"PATH": os.environ.get("PATH", ""), "HERALD_DATABASE": str(tmp_path / "h.db"), **env}
    with open("/dev/full", "wb") as full:
        result = subprocess.run([BINARY, *args], env=base, stdout=subprocess.DEVNULL, stderr=full, timeout=30)
    assert result.returncode == status, result.returncode
    # Standard error a pipe whose reader left (EPIPE): the same status, not SIGPIPE's death.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        piped = subprocess.run([BINARY, *args], env=base, stdout=subprocess.DEVNULL, stderr=writer, timeout=30)
    finally:
        os.close(writer)
    assert piped.returncode == status, piped.returncode
    # The same call with a readable standard error says why.
    said = subprocess.run([BINARY, *args], env=base, capture_output=True, text=True, timeout=30)
    assert said.returncode == status and says in said.stderr, (said.returncode, said.stderr)


def test_help_after_serve_or_migrate_is_the_help_and_it_names_every_send_test_option(tmp_path):
    # fresh14: `herald serve --help` was refused ("takes no arguments", exit 2), and the help's
    # send-test line left out --locale, which send-test's own usage line names.
    from conftest import BINARY
    env = {"PATH": os.environ.get("PATH", ""), "HERALD_DATABASE": str(tmp_path / "h.db")}
    for args in (["serve", "--help"], ["migrate", "-h"], ["serve", "help"]):
        said = subprocess.run([BINARY, *args], env=env, capture_output=True, text=True, timeout=30)
        assert said.returncode == 0 and "Usage:" in said.stdout, (args, said.returncode, said.stderr)
    assert not (tmp_path / "h.db").exists(), "asking for help must not create the database"
    usage = subprocess.run([BINARY, "send-test"], env=env, capture_output=True, text=True, timeout=30).stderr
    help_text = subprocess.run([BINARY, "--help"], env=env, capture_output=True, text=True, timeout=30).stdout
    options = set(re.findall(r"--[a-z-]+", usage.split("usage:", 1)[1]))
    send_test = help_text.split("herald send-test", 1)[1].split("herald jobs", 1)[0]
    assert options <= set(re.findall(r"--[a-z-]+", send_test)), (options, send_test)


def test_an_answer_standard_output_refuses_exits_1_not_0(tmp_path):
    """A key pair or the `--help` text written to a full volume is lost: the exit status says so."""
    from conftest import BINARY
    env = {"PATH": os.environ.get("PATH", "")}
    with open("/dev/full", "wb") as full:
        for args in (["vapid", "generate"], ["--help"]):
            result = subprocess.run([BINARY, *args], env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=30)
            assert result.returncode == 1, (args, result.returncode, result.stderr)
        keys = subprocess.run([BINARY, "vapid", "generate"], env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=30)
        assert "standard output refused" in keys.stderr, keys.stderr


def test_a_standard_descriptor_left_closed_is_not_taken_by_a_file_or_socket(tmp_path):
    """lows13: with standard error closed (`2>&-`) the next open took descriptor 2 (an event loop's
    epoll here; the database's lock file or a client's socket by another order), and every log
    line was written into it. It is /dev/null now; an answer whose standard output was closed is
    lost, so it exits 1."""
    from conftest import BINARY, SERVER_KEY, free_port
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HERALD_HOST": "127.0.0.1", "HERALD_PORT": str(port),
           "HERALD_DATABASE": str(tmp_path / "closed.db"), "HERALD_SERVER_KEY": SERVER_KEY, "HERALD_LOG_LEVEL": "debug"}
    proc = subprocess.Popen([BINARY, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: os.close(2))
    try:
        wait_until(lambda: _healthy(port) or proc.poll() is not None, 20, "the server with stderr closed to answer")
        assert proc.poll() is None, proc.returncode
        assert os.readlink(f"/proc/{proc.pid}/fd/2") == "/dev/null"
        assert HTTP.get(f"http://127.0.0.1:{port}/nowhere").status_code == 404
        assert _healthy(port)
    finally:
        proc.kill()
        proc.wait()
    keys = subprocess.run([BINARY, "vapid", "generate"], env=env, stderr=subprocess.PIPE, text=True, timeout=30,
                          preexec_fn=lambda: os.close(1))
    assert keys.returncode == 1 and "standard output refused" in keys.stderr, (keys.returncode, keys.stderr)


def _healthy(port: int) -> bool:
    try:
        return HTTP.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200
    except httpx.TransportError:
        return False


def test_sigterm_lets_an_in_flight_push_finish_and_exits_zero(herald_factory, provider_double):
    h = herald_factory(**provider_double.herald_env())
    user = f"u-{uuid.uuid4().hex[:8]}"
    _, token, device_id = register_ios(h, user)
    provider_double.set_outcomes("apns", token, [{"status": 200, "delay_ms": 1500}])
    r = HTTP.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": [user]}, "kind": "k", "title": "T"},
                  headers=h.server_headers())
    assert r.status_code == 201 and r.json()["push_queued"] == 1, r.text
    deadline = time.monotonic() + 10
    while not [e for e in provider_double.requests("apns") if e["path"].endswith(token)]:
        assert time.monotonic() < deadline, "the push never reached the double"
        time.sleep(0.02)
    # The double holds the answer for 1.5 s; stop Herald while the request is in flight.
    h.proc.send_signal(signal.SIGTERM)
    assert h.wait_exit(timeout=15) == 0
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    states = [row[0] for row in db.execute("SELECT state FROM jobs")]
    outcomes = [row[0] for row in db.execute("SELECT outcome FROM deliveries WHERE device_id = ?", (device_id,))]
    db.close()
    assert states == ["done"], states
    assert outcomes == ["queued", "sent"], outcomes
    assert "pushes still in flight" not in h.logs()


def test_sigterm_answers_every_call_it_stored(herald_factory):
    """Keep-alive callers post notifications while SIGTERM arrives. A call that was stored gets
    its answer before its connection closes (even one answered in the very loop turn the stop
    began), so a caller without an idempotency key never retries a call that went through; a call
    that got no answer was not stored."""
    import threading
    h = herald_factory()
    results = []          # (idempotency key, status, or None when no answer arrived)
    errors = {}
    lock = threading.Lock()

    def caller(n):
        with httpx.Client(timeout=10) as client:
            for i in range(100_000):
                key = f"t{n}-{i}"
                try:
                    r = client.post(h.url("/v1/notifications"), headers={**h.server_headers(), "X-Request-Id": key},
                                    json={"recipients": {"user_ids": [f"u{n}-{j}" for j in range(5)]},
                                          "kind": "k", "title": "T", "idempotency_key": key})
                    status = r.status_code
                except httpx.HTTPError as error:
                    status = None
                    errors[key] = repr(error)[:200]
                with lock:
                    results.append((key, status))
                if status is None:
                    return

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(results) < 300:
        assert time.monotonic() < deadline, "the callers did not get going"
        time.sleep(0.01)
    h.proc.send_signal(signal.SIGTERM)
    assert h.wait_exit(timeout=20) == 0
    for t in threads:
        t.join(timeout=15)
        assert not t.is_alive()
    db = sqlite3.connect(h.env["HERALD_DATABASE"])
    stored = {key: complete for key, complete in db.execute("SELECT key, complete FROM idempotency_keys")}
    db.close()
    assert all(status in (201, None) for _, status in results), {status for _, status in results}
    answered = {key for key, status in results if status == 201}
    assert answered <= stored.keys()
    lost = [key for key, status in results if status is None and key in stored]
    assert not lost, ("stored calls went unanswered", [(key, stored[key], errors.get(key)) for key in lost])
    # Every stored call was planned before the exit (the 5 s drain).
    assert all(stored[key] == 1 for key in answered)


@pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER")), reason="the opt-in broker run sets its own HERALD_BROKER")
def test_readyz_is_503_while_the_redis_broker_cannot_be_reached(herald_factory):
    # A port with nothing listening: every publish answers 503, so the node must not look ready.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    h = herald_factory(HERALD_BROKER=f"redis://127.0.0.1:{port}")
    r = httpx.get(h.url("/readyz"), timeout=10)
    assert r.status_code == 503, r.text
    body = r.json()
    assert body["status"] == "not_ready"
    assert any(p.startswith("broker unreachable") for p in body["problems"]), body
    # What /readyz warns of: the publish is refused, nothing published.
    assert h.publish("news", {"n": 1}, expect=503)["error"] == "broker_unavailable"
