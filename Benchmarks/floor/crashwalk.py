#!/usr/bin/env python3
"""Times the start's release of leases on a database a crash left (ADR 0017, Benchmarks/RESULTS.md
`leasefloor10`): DONE done jobs, then LEASED jobs leased at insert.

    Benchmarks/floor/crashwalk.py HERALD_BIN MODE DONE LEASED WORKDIR

MODE base: a build before migration 21, one UPDATE through jobs_due; new: the jobs_due range for
claimed leases, then the walk from job_lease_floor; new-stuck: as new, with one job stuck leased at
insert before all the done ones (the floor there). The schema comes from `herald migrate` of
HERALD_BIN; the statements are JobStore.releaseLeases' own. WORKDIR is removed and made again."""
import sqlite3, subprocess, sys, time, os, shutil
binary, mode, done, leased, directory = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
shutil.rmtree(directory, ignore_errors=True); os.makedirs(directory)
path = os.path.join(directory, "herald.db")
subprocess.run([binary, "migrate"], env={"HERALD_DATABASE": path, "HERALD_LOG_LEVEL": "error"}, check=True)
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=NORMAL")
payload = '{"apns_id":"EABEAE54-14A8-11E5-B60B-1697F925EC7B","device_id":"d-000000000000000000000000","notification":{"title":"Hello","body":"eighty bytes or so of text, as a push of the benchmark has."}}'
flag = (", leased_at_insert", ", 1") if mode.startswith("new") else ("", "")
db.execute("BEGIN")
if mode == "new-stuck":
    # One job leased at insert before them all, stuck (its send never ended) when the crash came.
    db.execute("INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, lease_until, first_attempt_at, created_at, "
               "leased_at_insert) VALUES ('push.deliver', ?, 'default', 'leased', 1, 500, 4102444800000, 500, 500, 1)", [payload])
db.execute(f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {done}) "
           "INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, first_attempt_at, created_at) "
           "SELECT 'push.deliver', ?, 'default', 'done', 1, 1000, 1000, 1000 FROM n", [payload])
db.execute(f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {leased}) "
           f"INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, lease_until, first_attempt_at, created_at{flag[0]}) "
           f"SELECT 'push.deliver', ?, 'default', 'leased', 1, 2000, 4102444800000, 2000, 2000{flag[1]} FROM n", [payload])
if mode.startswith("new"):
    db.execute("UPDATE job_lease_floor SET id = (SELECT min(id) FROM jobs WHERE state = 'leased')")
db.execute("COMMIT")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
subprocess.run(["sync"])
# A fresh connection, as a start has: cold page cache of SQLite's own (the OS's is warm).
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA synchronous=NORMAL")
released = "state = 'queued', lease_until = NULL, run_at = MIN(run_at, 3000)"
start = time.perf_counter()
db.execute("BEGIN IMMEDIATE")
if mode.startswith("new"):
    n = db.execute(f"UPDATE jobs SET {released} WHERE state = 'leased' AND leased_at_insert = 0 AND kind = 'push.deliver'").rowcount
    floor = db.execute("SELECT id FROM job_lease_floor").fetchone()[0]
    n += db.execute(f"UPDATE jobs SET {released}, leased_at_insert = 0 WHERE id >= ? AND state = 'leased' AND leased_at_insert = 1 "
                    "AND kind = 'push.deliver'", [floor]).rowcount
    db.execute("UPDATE job_lease_floor SET id = NULL")
else:
    n = db.execute(f"UPDATE jobs SET {released} WHERE kind = 'push.deliver' AND state = 'leased'").rowcount
db.execute("COMMIT")
elapsed = time.perf_counter() - start
print(f"{mode}: {done:,} done + {leased:,} leased at insert: released {n:,} in {elapsed * 1000:.0f} ms "
      f"({elapsed / max(n, 1) * 1e6:.2f} µs a job); sqlite {sqlite3.sqlite_version}")
