"""A node killed with `kill -9` between storing a call and planning its pushes (ADR 0023,
breaker11's finding): on PostgreSQL the call's plan is held under a name whose session-level
advisory lock dies with the process, so its keyed retry is answered (not 409
`idempotency_in_progress`) and its push goes out within seconds, not after the plan's 60 s
lease — when the node restarts with its `HERALD_NODE_ID`, and when another node takes the retry.

The call is caught between its two transactions by stopping Redis (SIGSTOP): its broadcast, step
2, waits on the broker, while its storing transaction has committed in PostgreSQL. The node is
killed once the call's plan row is seen, and Redis resumed. Engines as in test_cluster.py."""
import os
import signal
import threading
import time
import uuid

import httpx

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
    pg, redis = c.postgres, c.redis
    body = keyed_call(device, key)

    def post():
        try:
            HTTP.post(node.url("/v1/notifications"), json=body, headers=node.server_headers())
        except httpx.TransportError:
            pass   # cut by the kill

    os.kill(redis.proc.pid, signal.SIGSTOP)
    try:
        caller = threading.Thread(target=post, daemon=True)
        caller.start()
        stored = wait_until(lambda: pg.sql("SELECT p.id, p.claimed_by FROM notification_plans p "
                                           f"JOIN notifications n ON n.plan_id = p.id WHERE n.title_json LIKE '%t-{key}%'"),
                            10, "the call's plan stored")
        c.kill(node)
        killed = time.monotonic()
    finally:
        os.kill(redis.proc.pid, signal.SIGCONT)
    caller.join(10)
    plan_id, holder = stored[0]
    # Caught: stored, not planned, and held by the dead process under a running lease.
    now_ms = int(time.time() * 1000)
    assert pg.sql(f"SELECT claimed_by, lease_until > {now_ms + 30_000} FROM notification_plans WHERE id = {plan_id}") == [[holder, "t"]]
    assert holder.startswith("live:"), holder
    return plan_id, holder, killed


def pushed(c: Cluster, device: Device) -> list:
    return [e for e in c.double.requests("apns") if e["path"].endswith(device.token) and e["status"] == 200]


def retry(node, device: Device, key: str) -> httpx.Response:
    return HTTP.post(node.url("/v1/notifications"), json=keyed_call(device, key), headers=node.server_headers())


def assert_answered(r: httpx.Response) -> None:
    """Not 409: the stored call's answer, deferred (202) or planned (200), replayed."""
    assert r.status_code in (200, 202), r.text
    assert r.headers.get("idempotent-replayed") == "true", r.headers
    assert len(r.json()["notifications"]) == 1, r.text


def test_a_node_killed_between_storing_and_planning_and_restarted_with_its_id_answers_the_retry_and_pushes_at_once(engines):
    c = Cluster(engines["tmp"], engines["redis"], engines["postgres"], engines["double"], n=1, HERALD_NODE_ID="holder-a")
    try:
        a = c.A
        device = Device(a)
        key = f"restart-{uuid.uuid4().hex[:8]}"
        plan_id, holder, killed = caught_between_store_and_plan(c, a, device, key)
        assert not pushed(c, device)
        a.start()   # within a second of the kill, the same HERALD_NODE_ID
        assert time.monotonic() - killed < 5
        assert_answered(retry(a, device, key))
        wait_until(lambda: pushed(c, device), BOUND_SECONDS - (time.monotonic() - killed), "the push sent")
        took = time.monotonic() - killed
        assert took < BOUND_SECONDS, f"pushed {took:.1f} s after the kill"
        # Planned by the new run, once; the retry after it replays the planned answer.
        assert c.postgres.sql(f"SELECT count(*) FROM notification_plans WHERE id = {plan_id}") == [["0"]]
        r = retry(a, device, key)
        assert r.status_code == 200 and r.json()["push_queued"] == 1, r.text
        assert len(pushed(c, device)) == 1
    finally:
        c.stop()


def test_a_node_killed_between_storing_and_planning_has_its_call_answered_and_pushed_by_another_node_at_the_retry(engines):
    c = Cluster(engines["tmp"], engines["redis"], engines["postgres"], engines["double"], n=2)
    try:
        a, b = c.A, c.B
        device = Device(a)
        key = f"takeover-{uuid.uuid4().hex[:8]}"
        plan_id, holder, killed = caught_between_store_and_plan(c, a, device, key)
        # A stays dead. B answers the retry with the stored answer, and plans the call now.
        r = retry(b, device, key)
        assert_answered(r)
        wait_until(lambda: pushed(c, device), BOUND_SECONDS - (time.monotonic() - killed), "the push sent by B")
        took = time.monotonic() - killed
        assert took < BOUND_SECONDS, f"pushed {took:.1f} s after the kill"
        assert c.postgres.sql(f"SELECT count(*) FROM notification_plans WHERE id = {plan_id}") == [["0"]]
        assert "planned notifications an earlier run or a failed call left unplanned" in b.logs()
        r = retry(b, device, key)
        assert r.status_code == 200 and r.json()["push_queued"] == 1, r.text
        assert len(pushed(c, device)) == 1
    finally:
        c.stop()
