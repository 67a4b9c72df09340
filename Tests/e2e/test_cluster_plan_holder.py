"""A node killed with `kill -9` between storing a call and planning its pushes (ADR 0023,
breaker11's finding): on PostgreSQL the call's plan is held under a name whose session-level
advisory lock dies with the process, so its keyed retry is answered (not 409
`idempotency_in_progress`) and its push goes out within seconds, not after the plan's 60 s
lease — when the node restarts with its `HERALD_NODE_ID`, and when another node takes the retry.
SQLite (one process per file) keeps what it did: the restart releases the dead run's holds and
plans its call at once.

The call is caught between its two transactions by stopping Redis (SIGSTOP): its broadcast, step
2, waits on the broker, while its storing transaction has committed in PostgreSQL. The node is
killed once the call's plan row is seen, and Redis resumed. Engines as in test_cluster.py."""
import os
import signal
import sqlite3
import threading
import time
import uuid

import httpx
import pytest

from conftest import Herald
from test_cluster import Cluster, Device, engines, pytestmark, wait_until  # noqa: F401 (engines: this module's Redis, PostgreSQL and double)

HTTP = httpx.Client(timeout=10)
# Far under the plan's 60 s lease (and its 30 s recovery pass): what "at once" means here, with
# room for a busy machine.
BOUND_SECONDS = 15


def keyed_call(device: Device, key: str) -> dict:
    return {"recipients": {"user_ids": [device.user]}, "kind": "chat.message", "title": f"t-{key}", "idempotency_key": key}


def caught_between_store_and_plan(c: Cluster, node, device: Device, key: str) -> tuple:
    """POSTs a keyed call to `node` while Redis is stopped, kill -9's `node` once the call's plan
    is stored, then resumes Redis. - Returns: (plan id, its holder's name, monotonic time of the kill)."""
    pg = c.postgres
    plan_id, holder, killed = kill_once_stored(c.redis, node, device, key, lambda: pg.sql(
        "SELECT p.id, p.claimed_by FROM notification_plans p "
        f"JOIN notifications n ON n.plan_id = p.id WHERE n.title_json LIKE '%t-{key}%'"), c.kill)
    # Caught: stored, not planned, and held by the dead process under a running lease; unless a
    # live node heard the death and took it already (ADR 0027: its watcher waits on that lock).
    now_ms = int(time.time() * 1000)
    rows = pg.sql(f"SELECT claimed_by, lease_until > {now_ms + 30_000} FROM notification_plans WHERE id = {plan_id}")
    assert rows == [[holder, "t"]] or (len(c.nodes) > 1 and (rows == [] or rows[0][0] != holder)), rows
    assert holder.startswith("live:"), holder
    return plan_id, holder, killed


def kill_once_stored(redis, node, device: Device, key: str, stored_plan, kill, body=None) -> tuple:
    """The call (`body`, else `keyed_call`) sent with Redis stopped, `node` killed once
    `stored_plan()` finds what it stored (rows of two columns: (plan id, holder)), Redis resumed.
    - Returns: (the row's two values, monotonic time of the kill)."""
    body = body or keyed_call(device, key)

    def post():
        try:
            HTTP.post(node.url("/v1/notifications"), json=body, headers=node.server_headers())
        except httpx.TransportError:
            pass   # cut by the kill

    os.kill(redis.proc.pid, signal.SIGSTOP)
    try:
        caller = threading.Thread(target=post, daemon=True)
        caller.start()
        stored = wait_until(stored_plan, 10, "the call's plan stored")
        kill(node)
        killed = time.monotonic()
    finally:
        os.kill(redis.proc.pid, signal.SIGCONT)
    caller.join(10)
    plan_id, holder = stored[0]
    return plan_id, holder, killed


def holder_of(pg, plan_id) -> str:
    """The plan's holder now; None once it is planned (gone)."""
    rows = pg.sql(f"SELECT claimed_by FROM notification_plans WHERE id = {plan_id}")
    return rows[0][0] if rows else None


def pushed(double, device: Device) -> list:
    return [e for e in double.requests("apns") if e["path"].endswith(device.token) and e["status"] == 200]


def retry(node, device: Device, key: str) -> httpx.Response:
    return HTTP.post(node.url("/v1/notifications"), json=keyed_call(device, key), headers=node.server_headers())


def answered(node, device: Device, key: str, killed: float, holder_now, dead: str) -> httpx.Response:
    """Retries as a client told "retry shortly" does, until the stored call's answer comes:
    deferred (202) or planned (200), replayed. A 409 is allowed only while a live node's recovery
    plans the call (its plan held by another name than the dead process's, or gone), and the
    answer must come within the bound. - Returns: the answer."""
    while True:
        r = retry(node, device, key)
        if r.status_code != 409:
            break
        assert r.json()["error"] == "idempotency_in_progress", r.text
        assert holder_now() != dead, "409 while the plan is still held by the dead process"
        assert time.monotonic() - killed < BOUND_SECONDS, "still 409"
        time.sleep(0.1)   # a client's "retry shortly"
    assert r.status_code in (200, 202), r.text
    assert r.headers.get("idempotent-replayed") == "true", r.headers
    assert len(r.json()["notifications"]) == 1, r.text
    return r


def assert_recovered_by(c, node, device: Device, key: str, plan_id, killed: float, bound: float) -> None:
    """`node`'s recovery planned the dead node's call: its push sent within `bound` seconds of the
    kill, once, its plan gone, and a retry replays the planned answer."""
    wait_until(lambda: pushed(c.double, device), bound - (time.monotonic() - killed), "the push sent by the live node")
    took = time.monotonic() - killed
    assert took < bound, f"pushed {took:.1f} s after the kill"
    assert c.postgres.sql(f"SELECT count(*) FROM notification_plans WHERE id = {plan_id}") == [["0"]]
    assert "planned notifications an earlier run or a failed call left unplanned" in node.logs()
    r = retry(node, device, key)
    assert r.status_code == 200 and r.json()["push_queued"] == 1, r.text
    assert len(pushed(c.double, device)) == 1


def test_a_node_killed_between_storing_and_planning_and_restarted_with_its_id_answers_the_retry_and_pushes_at_once(engines):
    c = Cluster(engines["tmp"], engines["redis"], engines["postgres"], engines["double"], n=1, HERALD_NODE_ID="holder-a")
    try:
        a = c.A
        device = Device(a)
        key = f"restart-{uuid.uuid4().hex[:8]}"
        plan_id, holder, killed = caught_between_store_and_plan(c, a, device, key)
        assert not pushed(c.double, device)
        a.start()   # within a second of the kill, the same HERALD_NODE_ID
        assert time.monotonic() - killed < 5
        answered(a, device, key, killed, lambda: holder_of(c.postgres, plan_id), holder)
        wait_until(lambda: pushed(c.double, device), BOUND_SECONDS - (time.monotonic() - killed), "the push sent")
        took = time.monotonic() - killed
        assert took < BOUND_SECONDS, f"pushed {took:.1f} s after the kill"
        # Planned by the new run, once; the retry after it replays the planned answer.
        assert c.postgres.sql(f"SELECT count(*) FROM notification_plans WHERE id = {plan_id}") == [["0"]]
        r = retry(a, device, key)
        assert r.status_code == 200 and r.json()["push_queued"] == 1, r.text
        assert len(pushed(c.double, device)) == 1
    finally:
        c.stop()


@pytest.mark.parametrize("retried", [True, False], ids=["retried", "no-retry"])
def test_a_node_killed_between_storing_and_planning_has_its_call_answered_and_pushed_by_another_node(engines, retried):
    """A stays dead. Retried: B answers the retry with the stored answer, and plans the call now.
    Not retried (ADR 0027, audience13): B hears A's death at once (it waits, shared, on A's
    plan-holder lock, granted when A's backend ends) and recovers A's call within seconds, not at
    its next 30 s pass: B ran its start's pass before the call, so only its watcher can."""
    c = Cluster(engines["tmp"], engines["redis"], engines["postgres"], engines["double"], n=2)
    try:
        a, b = c.A, c.B
        device = Device(a)
        key = f"takeover-{uuid.uuid4().hex[:8]}"
        plan_id, holder, killed = caught_between_store_and_plan(c, a, device, key)
        if retried:
            answered(b, device, key, killed, lambda: holder_of(c.postgres, plan_id), holder)
        assert_recovered_by(c, b, device, key, plan_id, killed, BOUND_SECONDS if retried else 8)
    finally:
        c.stop()


def test_on_sqlite_a_node_killed_between_storing_and_planning_plans_the_call_at_its_restart(engines, tmp_path):
    """The same kill on SQLite (with the Redis broker, to hold the broadcast): nothing new, what it
    did already. The restart releases every hold of another process (one server per file, ADR
    0017) and its first recovery pass plans the call: the retry is answered and the push goes out
    at once."""
    double, redis = engines["double"], engines["redis"]
    database = tmp_path / "herald.db"
    a = Herald(dict(double.herald_env(), HERALD_BROKER=redis.url, HERALD_BROKER_NAMESPACE=f"sq{uuid.uuid4().hex[:6]}",
                    HERALD_DATABASE=str(database)), tmp_path)
    try:
        device = Device(a)
        key = f"sqlite-{uuid.uuid4().hex[:8]}"

        def stored_plan():
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as db:
                return db.execute("SELECT seq, plan_claimed_by FROM notifications WHERE plan_json IS NOT NULL "
                                  "AND title_json LIKE ?", (f"%t-{key}%",)).fetchall()
        seq, holder, killed = kill_once_stored(redis, a, device, key, stored_plan, lambda node: node.stop(sig=signal.SIGKILL))
        assert stored_plan() == [(seq, holder)], "planned before the kill: the test shows nothing"
        a.start()
        answered(a, device, key, killed, lambda: (stored_plan() or [(None, None)])[0][1], holder)
        wait_until(lambda: pushed(double, device), BOUND_SECONDS - (time.monotonic() - killed), "the push sent")
        assert stored_plan() == []
        r = retry(a, device, key)
        assert r.status_code == 200 and r.json()["push_queued"] == 1, r.text
    finally:
        a.stop(wait=False)


def test_a_keyed_call_that_reached_nobody_is_answered_at_once_after_its_node_died(engines):
    """audience13: a keyed call whose recipients resolve to nobody (a scope without members) stores
    no notification and no plan, only its key; its `live` message is all that is left to do. Its
    node killed before it answered (caught in the broadcast of that message, Redis stopped), a
    retry on another node is answered at once with the stored answer (200, replayed), not 409
    `idempotency_in_progress` for 60 s: nothing is held for such a call, so its key is stored
    with its final answer in the storing transaction."""
    c = Cluster(engines["tmp"], engines["redis"], engines["postgres"], engines["double"], n=2)
    try:
        a, b = c.A, c.B
        key = f"nobody-{uuid.uuid4().hex[:8]}"
        body = {"recipients": {"scope": f"empty-{key}"}, "kind": "chat.message", "title": f"t-{key}", "idempotency_key": key,
                "live": {"channel": f"orders-{key}", "event": "changed"}}

        _, _, killed = kill_once_stored(c.redis, a, None, key, lambda: c.postgres.sql(
            f"SELECT key, complete FROM idempotency_keys WHERE key = '{key}'"), c.kill, body=body)
        r = HTTP.post(b.url("/v1/notifications"), json=body, headers=b.server_headers())
        assert time.monotonic() - killed < BOUND_SECONDS
        assert r.status_code == 200, r.text
        assert r.headers.get("idempotent-replayed") == "true", r.headers
        answer = r.json()
        assert answer["notifications"] == [] and "push_planning" not in answer, answer
        assert c.postgres.sql(f"SELECT complete FROM idempotency_keys WHERE key = '{key}'") == [["t"]]
    finally:
        c.stop()
