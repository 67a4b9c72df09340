"""Notification retention on a cluster (ADR 0012): every node sharing PostgreSQL runs the purge,
and together they delete each old notification, with its delivery records, once: the batches are
disjoint (`FOR UPDATE SKIP LOCKED`), and the nodes' `herald_notifications_purged_total` add up
to the rows deleted. Engines as in test_cluster.py (started by the test, skipped without them)."""
import time

from conftest import wait_until
from test_cluster import Cluster, engines, pytestmark  # noqa: F401 (engines: this module's Redis, PostgreSQL and double)


def test_every_node_purges_and_each_old_notification_is_deleted_once(engines):
    c = Cluster(engines["tmp"], engines["redis"], engines["postgres"], engines["double"], n=2,
                HERALD_NOTIFICATION_RETENTION_DAYS="30")
    try:
        for node in c.nodes:
            node.stop()
        pg = engines["postgres"]
        now = int(time.time() * 1000)
        day = 86_400_000
        old = 2_500  # three batches of 1,000
        pg.sql("INSERT INTO notifications (id, user_id, kind, priority, created_at) "
               f"SELECT 'old-' || g, 'u-' || (g % 10), 'k', 'normal', {now - 40 * day} + g FROM generate_series(1, {old}) AS g")
        pg.sql("INSERT INTO deliveries (notification_id, user_id, outcome, at) "
               f"SELECT 'old-' || g, 'u', 'queued', {now - 40 * day} FROM generate_series(1, {old}) AS g")
        pg.sql("INSERT INTO notifications (id, user_id, kind, priority, created_at) "
               f"SELECT 'young-' || g, 'u-0', 'k', 'normal', {now - day} + g FROM generate_series(1, 20) AS g")
        pg.sql("INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES ('young-1', 'u-0', 'queued', 0)")
        for node in c.nodes:
            node.start()
        wait_until(lambda: pg.sql("SELECT count(*) FROM notifications")[0][0] == "20", timeout=30,
                   what="the old notifications purged")
        wait_until(lambda: sum(c.metric(n, "herald_notifications_purged_total") for n in c.nodes) == old, timeout=10,
                   what="the nodes' purge counters adding up to the rows deleted")
        assert pg.sql("SELECT notification_id FROM deliveries") == [["young-1"]]
        for node in c.nodes:
            assert "notification purge failed" not in node.logs(), node.logs()
    finally:
        c.stop()
