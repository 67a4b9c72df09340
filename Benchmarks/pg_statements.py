"""Statements per notification on PostgreSQL (pg_stat_statements): N one-recipient calls with an
idempotency key, each to a user with one APNs device (the provider double), sent one after another
to one `herald` on a private PostgreSQL (Tests/e2e/engines.py; run as root or as a user that may run
`postgres`). Prints each statement's calls per notification, and the total (the worker's claim
polls included: take out 3 per poll, `WITH queued …`, for the calls' own).
Usage: .venv/bin/python Benchmarks/pg_statements.py BINARY [N]"""
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests/e2e"))
sys.path.insert(0, str(ROOT / "Tests/ProviderDouble"))
import httpx
from engines import PostgresServer
from fixture import random_apns_token, start_double
import conftest

binary, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300
conftest.BINARY = binary
tmp = Path(tempfile.mkdtemp(prefix="herald-pgstat-"))
pg = PostgresServer().start()
double = start_double(tmp / "double")
try:
    pg.sql("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'", database="postgres")
    pg.restart()
    pg.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    env = dict(double.herald_env(), HERALD_DATABASE=pg.url, HERALD_LOOPS="1")
    h = conftest.Herald(env, tmp)
    c = httpx.Client(timeout=10)
    users = []
    for i in range(n):
        user = f"u{i}"
        token = h.token(sub=user, sid=f"s{i}")
        r = c.post(h.url("/v1/me/devices"), json={"platform": "ios", "token": random_apns_token()}, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 201, r.text
        users.append(user)
    time.sleep(1)   # the registrations' own statements settle before the count starts
    pg.sql("SELECT pg_stat_statements_reset()")
    started = time.monotonic()
    for i, user in enumerate(users):
        r = c.post(h.url("/v1/notifications"), json={"recipients": {"user_ids": [user]}, "kind": "chat.message", "title": "x",
                                                     "idempotency_key": f"k{i}"}, headers=h.server_headers())
        assert r.status_code == 201, r.text
    took = time.monotonic() - started
    deadline = time.monotonic() + 30
    while len([e for e in double.requests("apns") if e["outcome"] is not None]) < n and time.monotonic() < deadline:
        time.sleep(0.1)   # the pushes' outcomes are written after the double answers
    rows = pg.sql("SELECT calls, regexp_replace(left(query, 90), '\\s+', ' ', 'g') FROM pg_stat_statements "
                  "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC")
    total = 0
    for calls, q in rows:
        total += int(calls)
        print(f"{int(calls)/n:7.3f}  {calls:>6}  {q}")
    print(f"total {total} statements for {n} calls: {total/n:.2f} a call (sending took {took:.1f} s; polling included)")
    h.stop()
finally:
    double.stop()
    pg.cleanup()
