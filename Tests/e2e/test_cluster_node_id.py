"""One live process per `HERALD_NODE_ID` (ADR 0016): a second node started with a live node's id
exits 3 naming the id and the other instance, and leaves the first's leased jobs alone; a node
killed with `kill -9` restarts with its id at once (same machine: its process is seen gone), and
after the window `HERALD_NODE_LEASE_SECONDS` when its process cannot be judged (another machine); a
running node whose id another instance took is not ready, says why, and sets
`herald_node_id_conflict`. Engines as in test_cluster.py (started by the test, skipped without
them)."""
import re
import signal
import subprocess
import time

import httpx

from conftest import BINARY, wait_until
from test_cluster import Cluster, engines, pytestmark  # noqa: F401 (engines: this module's Redis, PostgreSQL and double)

HTTP = httpx.Client(timeout=10)
# The documented default window (docs/operations.md, HERALD_NODE_LEASE_SECONDS).
WINDOW_SECONDS = 15


def run_to_exit(env: dict, log_path, timeout=30) -> tuple:
    """Starts `herald serve` with `env` and waits for it to exit. - Returns: (status, log)."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([BINARY, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"the second node did not exit: {log_path.read_text()[-2000:]}")
    return code, log_path.read_text()


def fake_leased_job(pg, node: str) -> str:
    """A push job leased to `node` for an hour, as a live node's job in flight is. - Returns: its id."""
    now = int(time.time() * 1000)
    return pg.sql("INSERT INTO jobs (kind, payload_json, state, attempts, run_at, lease_until, locked_by, first_attempt_at, created_at) "
                  f"VALUES ('push.deliver', '{{}}', 'leased', 1, {now}, {now + 3_600_000}, '{node}', {now}, {now}) RETURNING id")[0][0]


def test_a_second_node_with_a_live_nodes_id_exits_3_and_a_kill_9_restart_takes_the_id_at_once(engines, tmp_path):
    pg = engines["postgres"]
    c = Cluster(engines["tmp"], engines["redis"], pg, engines["double"], n=1, HERALD_NODE_ID="twin")
    try:
        a = c.A
        job = fake_leased_job(pg, "twin")
        env = dict(a.env, HERALD_PORT="0")
        code, log = run_to_exit(env, tmp_path / "second.log")
        assert code == 3, log[-2000:]
        assert "HERALD_NODE_ID 'twin' is held by another live instance" in log, log[-2000:]
        assert f"pid {a.proc.pid}" in log, log[-2000:]
        assert "listening" not in log, log[-2000:]
        # The first node's job in flight was not taken for a dead run's.
        assert pg.sql(f"SELECT state, locked_by FROM jobs WHERE id = {job}") == [["leased", "twin"]]
        assert HTTP.get(a.url("/readyz")).status_code == 200
        assert c.metric(a, "herald_node_id_conflict") == 0

        c.kill(a)
        started = time.monotonic()
        a.start()  # fails if it exits
        took = time.monotonic() - started
        assert took < WINDOW_SECONDS, f"the restart took {took:.1f} s"
        assert "took over HERALD_NODE_ID from an instance whose process is gone" in a.logs(), a.logs()[-2000:]
        # The restarted node takes its dead run's jobs back at once (and sends or dead-letters them).
        wait_until(lambda: pg.sql(f"SELECT state FROM jobs WHERE id = {job}") != [["leased"]], timeout=10,
                   what="the dead run's job made due")
        # A graceful stop gives the id up (a start after it claims the id whatever its machine).
        a.stop()
        assert pg.sql("SELECT count(*) FROM cluster_nodes WHERE node_id = 'twin'") == [["0"]]
    finally:
        c.stop()


def test_a_running_node_whose_id_another_instance_took_is_not_ready_until_it_is_free(engines):
    pg = engines["postgres"]
    c = Cluster(engines["tmp"], engines["redis"], pg, engines["double"], n=1, HERALD_NODE_ID="seized",
                HERALD_NODE_LEASE_SECONDS="3")
    try:
        a = c.A
        assert pg.sql("SELECT pid FROM cluster_nodes WHERE node_id = 'seized'") == [[str(a.proc.pid)]]
        # Another instance, on another host, heartbeating: what a node started while this one's
        # heartbeats failed for the whole window would write.
        pg.sql("UPDATE cluster_nodes SET instance_id = 'intruder', host = 'elsewhere', pid = 4242, process_key = '', "
               "heartbeat_at = heartbeat_at + 3600000 WHERE node_id = 'seized'")
        ready = wait_until(lambda: (r := HTTP.get(a.url("/readyz"))).status_code == 503 and r, timeout=10,
                           what="/readyz not ready")
        problems = " ".join(ready.json()["problems"])
        assert "node id 'seized' is held by another instance" in problems and "elsewhere" in problems, ready.text
        assert c.metric(a, "herald_node_id_conflict") == 1
        assert re.search(r'"level":"error".*HERALD_NODE_ID is held by another live instance', a.logs()), a.logs()[-2000:]
        # Freed: the node takes its id back and is ready again.
        pg.sql("DELETE FROM cluster_nodes WHERE node_id = 'seized'")
        wait_until(lambda: HTTP.get(a.url("/readyz")).status_code == 200, timeout=10, what="/readyz ready again")
        assert c.metric(a, "herald_node_id_conflict") == 0
        assert pg.sql("SELECT pid FROM cluster_nodes WHERE node_id = 'seized'") == [[str(a.proc.pid)]]
    finally:
        c.stop()


def test_a_restart_that_cannot_see_the_dead_process_waits_out_the_window_and_no_more(engines, tmp_path):
    pg = engines["postgres"]
    window = 8
    c = Cluster(engines["tmp"], engines["redis"], pg, engines["double"], n=1, HERALD_NODE_ID="far",
                HERALD_NODE_LEASE_SECONDS=str(window))
    try:
        a = c.A
        c.kill(a)
        # As if it had run on another machine (or in another container): its process cannot be
        # judged from here, so only its heartbeat's age counts, from this last one.
        pg.sql("UPDATE cluster_nodes SET process_key = '', "
               "heartbeat_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint WHERE node_id = 'far'")
        beaten = time.monotonic()
        code, log = run_to_exit(dict(a.env), tmp_path / "early.log")
        assert code == 3, log[-2000:]
        assert "HERALD_NODE_ID 'far' is held by another live instance" in log, log[-2000:]
        # A supervisor restarting on failure: it succeeds once the window has passed.
        while True:
            try:
                a.start()
                break
            except RuntimeError as refused:
                assert "exited with 3" in str(refused), str(refused)[-2000:]
                assert time.monotonic() - beaten < window + 6, "still refused well after the window"
                time.sleep(0.5)
        waited = time.monotonic() - beaten
        assert window - 1 <= waited < window + 6, f"claimed after {waited:.1f} s"
        assert HTTP.get(a.url("/readyz")).status_code == 200
    finally:
        c.stop()
