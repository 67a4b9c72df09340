"""A stalled database (operations.md, Database): storage calls, /readyz and shutdown stay bounded.

- PostgreSQL stopped with SIGSTOP (the test's own server: a frozen VM, a network partition whose
  kernel still ACKs): a notification and the inbox answer 503 `storage_unavailable` after
  HERALD_STORAGE_WAIT_SECONDS, /readyz answers 503 within ~2 s; after SIGCONT everything works
  again and a retry with the same idempotency key stores the call once.
- SIGTERM while PostgreSQL is stopped: Herald exits within its documented deadlines.
- SQLite on a loop-mounted ext4 frozen with `fsfreeze` (root only; skipped otherwise): the same
  503s, and SIGTERM ends with the step that could not finish logged and exit code 1.
"""
import os
import signal
import subprocess
import threading
import time
import uuid

import httpx
import pytest

from conftest import wait_readiness
from engines import PostgresServer, engines_missing

HTTP = httpx.Client(timeout=60)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


def notification(user, key=None, title="t"):
    body = {"recipients": {"user_ids": [user]}, "kind": "stall.test", "title": {"en": title}, "body": {"en": "b"}}
    if key:
        body["idempotency_key"] = key
    return body


def send(h, user, key=None, title="t"):
    return HTTP.post(h.url("/v1/notifications"), json=notification(user, key, title), headers=h.server_headers())


def timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def inbox(h, user):
    token = h.token(sub=user, sid="s-stall")
    return HTTP.get(h.url("/v1/me/notifications"), params={"limit": 100}, headers={"Authorization": f"Bearer {token}"})


def assert_unavailable(response, elapsed, bound):
    assert response.status_code == 503, response.text
    assert response.json()["error"] == "storage_unavailable", response.text
    assert elapsed < bound, f"answered after {elapsed:.1f} s"


def readiness_until_503(h, timeout=8.0):
    """Polls /readyz (its probe's answer is kept 1 s) until it says 503; returns the last answer
    and the slowest answer's time."""
    deadline, slowest = time.monotonic() + timeout, 0.0
    while True:
        r, elapsed = timed(lambda: HTTP.get(h.url("/readyz")))
        slowest = max(slowest, elapsed)
        if r.status_code == 503 or time.monotonic() > deadline:
            return r, slowest
        time.sleep(0.2)


def metric(h, name):
    """The value of `name` (one sample, no labels) on `h`'s /metrics; 0 when absent."""
    for line in HTTP.get(h.url("/metrics")).text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == name:
            return float(parts[1])
    return 0.0


@pytest.fixture
def postgres():
    missing = engines_missing()
    if missing:
        pytest.skip(missing)
    server = PostgresServer().start()
    stopped = []

    def pids():
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(server.proc.pid)], capture_output=True, text=True).stdout.split()
        return [server.proc.pid] + [int(c) for c in children]

    def stop():
        stopped[:] = pids()
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)

    def resume():
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        stopped.clear()

    server.freeze, server.thaw = stop, resume
    try:
        yield server
    finally:
        resume()
        server.cleanup()


def test_a_stopped_postgresql_answers_503_in_bounded_time_and_a_retry_stores_once(postgres, herald_factory):
    h = herald_factory(HERALD_DATABASE=postgres.url, HERALD_NODE_ID="stall-a", HERALD_STORAGE_WAIT_SECONDS=3)
    user = f"u-{uuid.uuid4().hex[:8]}"
    assert send(h, user, title="before").status_code in (201, 202)
    assert HTTP.get(h.url("/readyz")).status_code == 200

    postgres.freeze()
    key = f"k-{uuid.uuid4().hex}"
    answers = {}
    threads = [
        threading.Thread(target=lambda: answers.__setitem__("notify", timed(lambda: send(h, user, key=key, title="during")))),
        threading.Thread(target=lambda: answers.__setitem__("inbox", timed(lambda: inbox(h, user)))),
        threading.Thread(target=lambda: answers.__setitem__("readyz", readiness_until_503(h))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert_unavailable(*answers["notify"], bound=8)
    assert_unavailable(*answers["inbox"], bound=8)
    ready, slowest = answers["readyz"]
    assert ready.status_code == 503, ready.text
    assert ready.json()["storage"] == "stalled", ready.text
    assert "did not answer" in " ".join(ready.json()["problems"]), ready.text
    assert slowest < 4, f"a /readyz answer took {slowest:.1f} s"
    # Streams and publishing need no storage.
    assert h.publish("stall-channel", {"n": 1})["id"]

    postgres.thaw()
    code, body = wait_readiness(h, 200, timeout=60)
    assert code == 200, body
    # The stalled call's outcome was unknown to its caller: a retry with its key is safe. If the
    # stalled call committed after its caller got the 503, Herald plans it at that commit (not at
    # recovery's next pass, up to 30 s later): a repeat is 409 idempotency_in_progress, "retry
    # shortly" (docs/api.md), only while that planning runs.
    deadline = time.monotonic() + 10
    while True:
        retried = send(h, user, key=key, title="during")
        if retried.status_code != 409 or time.monotonic() > deadline:
            break
        assert retried.json()["error"] == "idempotency_in_progress", retried.text
        time.sleep(0.1)
    assert retried.status_code in (200, 201, 202), retried.text
    if retried.status_code == 200:
        # The stalled call committed late: the replay is its planned answer, not a deferred one.
        assert "push_planning" not in retried.json(), retried.text
        assert "planning their pushes now" in h.logs(), h.logs()[-2000:]
    r = inbox(h, user)
    assert r.status_code == 200, r.text
    titles = [n["title"] for n in r.json()["notifications"]]
    assert titles.count("during") == 1, titles
    assert titles.count("before") == 1, titles


def test_sigterm_while_postgresql_is_stopped_exits_within_the_deadlines(postgres, herald_factory):
    # A wait longer than the shutdown: the stuck call is answered by the shutdown, not by its wait.
    h = herald_factory(HERALD_DATABASE=postgres.url, HERALD_NODE_ID="stall-b", HERALD_STORAGE_WAIT_SECONDS=60)
    user = f"u-{uuid.uuid4().hex[:8]}"
    assert send(h, user).status_code in (201, 202)
    postgres.freeze()
    answers = []
    caller = threading.Thread(target=lambda: answers.append(send(h, user, key=f"k-{uuid.uuid4().hex}")))
    caller.start()
    # /metrics answers within ~1 s while storage stalls; the call is counted once it waits on it.
    deadline = time.monotonic() + 10
    while metric(h, "herald_storage_calls_waiting") < 1:
        assert time.monotonic() < deadline and not answers, "the call never waited on storage"
        time.sleep(0.05)
    started = time.monotonic()
    h.proc.send_signal(signal.SIGTERM)
    # Documented: stored calls 5 s, answers 1 s more, pushes 10 s, each plus a 2 s grace, then 3 s
    # to close; in practice much less with nothing stored.
    code = h.proc.wait(timeout=30)
    elapsed = time.monotonic() - started
    caller.join(10)
    assert elapsed < 30
    assert code in (0, 1), h.logs()[-2000:]
    if code == 1:
        assert "shutdown step did not finish by its deadline" in h.logs()
    assert answers and answers[0].status_code == 503, answers and answers[0].text
    assert answers[0].json()["error"] == "storage_unavailable"
    assert "calls still waiting on storage at shutdown answered 503" in h.logs()


def test_a_frozen_sqlite_volume_answers_503_and_sigterm_exits_naming_the_stuck_step(tmp_path, herald_factory):
    if os.geteuid() != 0:
        pytest.skip("fsfreeze and loop mounts need root")
    image, mount_point = tmp_path / "volume.img", tmp_path / "volume"
    mount_point.mkdir()
    subprocess.run(["dd", "if=/dev/zero", f"of={image}", "bs=1M", "count=32", "status=none"], check=True, timeout=30)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, timeout=30, capture_output=True)
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mount_point)], capture_output=True, text=True, timeout=30)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a loop device: {mounted.stderr.strip()}")
    frozen = False
    try:
        h = herald_factory(HERALD_DATABASE=mount_point / "herald.db", HERALD_STORAGE_WAIT_SECONDS=3)
        user = f"u-{uuid.uuid4().hex[:8]}"
        assert send(h, user).status_code in (201, 202)
        subprocess.run(["fsfreeze", "-f", str(mount_point)], check=True, timeout=30)
        frozen = True
        assert_unavailable(*timed(lambda: send(h, user, key=f"k-{uuid.uuid4().hex}")), bound=8)
        ready, slowest = readiness_until_503(h)
        assert ready.status_code == 503, ready.text
        assert slowest < 4, f"a /readyz answer took {slowest:.1f} s"

        started = time.monotonic()
        h.proc.send_signal(signal.SIGTERM)
        # The writer thread sits in write() on the frozen volume and cannot be interrupted: the
        # watchdog logs the step and exits 1; the kernel reaps the thread once the volume thaws.
        deadline = started + 30
        while "shutdown step did not finish by its deadline" not in h.logs():
            assert time.monotonic() < deadline, h.logs()[-2000:]
            time.sleep(0.1)
        assert time.monotonic() - started < 25
        subprocess.run(["fsfreeze", "-u", str(mount_point)], timeout=30)
        frozen = False
        assert h.proc.wait(timeout=30) == 1
    finally:
        if frozen:
            subprocess.run(["fsfreeze", "-u", str(mount_point)], timeout=30)
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=30)
