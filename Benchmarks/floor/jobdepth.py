#!/usr/bin/env python3
"""Times JobStore.depth's reads of `jobs_due` (`/metrics`, `GET /v1/jobs` counts) on a backlog
(Benchmarks/RESULTS.md `ops11`): QUEUED queued jobs and DEAD dead letters, and the plan of each.

    Benchmarks/floor/jobdepth.py HERALD_BIN MODE QUEUED DEAD WORKDIR [REPEAT]

The schema comes from `herald migrate` of HERALD_BIN (`jobs_due` as migration 21 made it).
MODE base: the statements before ops11 (the oldest due job as one MIN over every queued job);
new: JobStore.depth's own (the oldest due job one seek per kind, `JobStore.oldestDueSQL`);
covering: new's, with `jobs_due` recreated with `leased_at_insert` as a column (the migration
ops11 measured and did not make). Each statement is run REPEAT times (default 5) on a fresh
connection (SQLite's page cache cold, the OS's warm) and the median wall time printed (a busy
machine's figure), then, from the sqlite3 shell's `.stats on` on a fresh connection, the pages the
statement read (page cache misses) and its virtual machine steps: counts that do not depend on
the load. WORKDIR is removed and made again."""
import os, shutil, sqlite3, statistics, subprocess, sys, time

binary, mode, queued, dead, directory = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
repeat = int(sys.argv[6]) if len(sys.argv) > 6 else 5
shutil.rmtree(directory, ignore_errors=True)
os.makedirs(directory)
path = os.path.join(directory, "herald.db")
subprocess.run([binary, "migrate"], env={"HERALD_DATABASE": path, "HERALD_LOG_LEVEL": "error"}, check=True)
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
if mode == "covering":
    db.execute("DROP INDEX jobs_due")
    db.execute("CREATE INDEX jobs_due ON jobs (state, kind, leased_at_insert, coalesce(lease_until, run_at)) "
               "WHERE (state = 'queued' OR state = 'leased' OR state = 'dead') AND leased_at_insert = 0")
payload = ('{"apns_id":"eabeae54-14a8-11e5-b60b-1697f925ec7b","device_id":"d-000000000000000000000000",'
           '"notification":{"body":"eighty bytes or so of text, as a push of the benchmark has.","title":"Hello"}}')
db.execute("BEGIN")
for state, n, run_at in (("queued", queued, 1000), ("dead", dead, 500)):
    db.execute(f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) "
               "INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, first_attempt_at, created_at) "
               f"SELECT 'push.deliver', ?, 'default', '{state}', 1, {run_at}, {run_at}, {run_at} FROM n", [payload])
db.execute("COMMIT")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()

in_due_index = "(state = 'queued' OR state = 'leased' OR state = 'dead') AND leased_at_insert = 0"
due = "coalesce(lease_until, run_at)"
statements = {"counts": f"SELECT state, COUNT(*) AS n FROM jobs WHERE {in_due_index} GROUP BY state"}
if mode == "base":
    statements["oldest"] = f"SELECT MIN({due}) AS t FROM jobs WHERE state = 'queued' AND leased_at_insert = 0 AND {due} <= 2000"
else:
    # JobStore.oldestDueSQL: a skip scan of the kinds, then one seek of each kind's range.
    statements["oldest"] = f"""WITH RECURSIVE kinds(kind) AS (
        SELECT (SELECT MIN(kind) FROM jobs WHERE state = 'queued' AND leased_at_insert = 0)
        UNION ALL
        SELECT (SELECT MIN(kind) FROM jobs WHERE state = 'queued' AND leased_at_insert = 0 AND kind > kinds.kind) FROM kinds WHERE kind IS NOT NULL)
    SELECT MIN((SELECT MIN({due}) FROM jobs WHERE state = 'queued' AND leased_at_insert = 0 AND kind = kinds.kind AND {due} <= 2000)) AS t
    FROM kinds WHERE kind IS NOT NULL"""
print(f"mode={mode} queued={queued} dead={dead} sqlite={sqlite3.sqlite_version} "
      f"file={os.path.getsize(path) // 1024} KiB")
for name, sql in statements.items():
    times, plan, result = [], None, None
    for _ in range(repeat):
        connection = sqlite3.connect(path, isolation_level=None)
        plan = "; ".join(row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + sql))
        started = time.perf_counter()
        result = connection.execute(sql).fetchall()
        times.append(time.perf_counter() - started)
        connection.close()
    print(f"{name}: {statistics.median(times) * 1000:.1f} ms median of {repeat} "
          f"(min {min(times) * 1000:.1f}); plan: {plan}; result: {sorted(result)}")
    stats = subprocess.run(["sqlite3", path], input=f".stats on\n{sql};\n", capture_output=True, text=True).stdout
    figures = {line.split(":")[0].strip(): line.split(":")[1].split()[0] for line in stats.splitlines() if ":" in line}
    print(f"    pages read {figures.get('Page cache misses')}, VM steps {figures.get('Virtual Machine Steps')}")
