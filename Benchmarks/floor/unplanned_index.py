"""Issue 17 (choke13): what the `notifications_unplanned` index costs a one-recipient notification.

A call's row is inserted with its plan in `plan_json` (one entry of the partial index written),
then the plan's UPDATE clears it (the entry deleted), 8 rows a transaction as the writer's groups
at `chokepoint.py -c 8`. Run under callgrind with and without the index, for N and for 8 rows
(the fixed cost), on a copy of a database made by `herald migrate`:

    HERALD_DATABASE=/tmp/u/base.db herald migrate
    PY=$(python3 -c 'import os,sys; print(os.path.realpath(sys.executable))')   # not a pyenv shim
    for m in idx noidx; do for n in 8 4008; do
      valgrind --tool=callgrind --callgrind-out-file=cg.$m.$n $PY Benchmarks/floor/unplanned_index.py /tmp/u/base.db $m $n
    done; done
    # per notification: ((idx 4008 - idx 8) - (noidx 4008 - noidx 8)) / 4000
"""
import shutil
import sqlite3
import sys

base, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
path = f'{base}.{mode}'
shutil.copy(base, path)
c = sqlite3.connect(path, isolation_level=None)
c.execute('PRAGMA journal_mode=WAL')
c.execute('PRAGMA synchronous=NORMAL')
if mode == 'noidx':
    c.execute('DROP INDEX notifications_unplanned')
plan = '{"v":1,"recipients":[{"user_id":"u-1"}],"push":{"title":"Hi"}}' * 2
ins = ("INSERT INTO notifications (id, app, user_id, kind, scope, title_json, body_json, data_json, priority, in_inbox, plan_json, "
       "created_at, timed, plan_claimed_by, plan_lease_until) VALUES (?, 'default', ?, 'chat.message', NULL, '\"Hi\"', '\"there\"', '{}', "
       "'normal', 1, ?, ?, 1, 'node-a', ?)")
upd = "UPDATE notifications SET cursor = ?, plan_json = NULL, plan_claimed_by = NULL, plan_lease_until = NULL WHERE seq = ? AND plan_claimed_by = ?"
for g in range(n // 8):
    c.execute('BEGIN IMMEDIATE')
    seqs = []
    for i in range(8):
        k = g * 8 + i
        cur = c.execute(ins, (f'ntf{k:012d}', f'u-{k % 1000}', plan, 1_700_000_000_000 + k, 1_700_000_060_000 + k))
        seqs.append(cur.lastrowid)
    c.execute('COMMIT')
    c.execute('BEGIN IMMEDIATE')
    for s in seqs:
        c.execute(upd, (f'c-{s}', s, 'node-a'))
    c.execute('COMMIT')
