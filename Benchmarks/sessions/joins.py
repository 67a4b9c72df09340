"""What keying sessions by (app, sid) costs SQLite (ADR 0019, appsessions11): the statements that
join a device to its session or write a session, run against two databases made by `herald
migrate` of two builds (schema 21: `sessions` keyed by `sid`, a rowid table; schema 22: keyed by
(app, sid), WITHOUT ROWID), each holding USERS users with one session and one device, with each
build's own SQL text. Under callgrind (collection toggled on `sqlite3_step` only, so Python's own
work is not counted) it prints the instructions SQLite spends per statement run.

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=sqlite3_step \\
        --callgrind-out-file=/tmp/cg.%p python3 Benchmarks/sessions/joins.py BIN DIR SHAPE STATEMENT RUNS
    callgrind_annotate /tmp/cg.<pid> | head   # total Ir / RUNS

SHAPE is `base` (schema 21), `new` (schema 22) or `rowid` (the alternative not taken: schema 22
with `sessions` rebuilt as a rowid table keyed (app, sid), BIN being a schema-22 build);
STATEMENT one of the keys of STATEMENTS. Without valgrind it only checks that each statement finds
what it should.
"""
import os
import sqlite3
import subprocess
import sys

USERS = 10_000
COLUMNS = """d.id, d.app, d.user_id, d.sid, d.platform, d.provider, d.token, d.environment, d.installation_id, d.locale,
    d.app_version, d.device_name, d.created_at, d.last_seen_at,
    (s.sid IS NOT NULL AND s.ended_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > :now)) AS active"""
JOIN = {"base": "s.sid = d.sid", "new": "s.app = d.app AND s.sid = d.sid", "rowid": "s.app = d.app AND s.sid = d.sid"}
CONFLICT = {"base": "sid", "new": "app, sid", "rowid": "app, sid"}
KEY = {"base": "sid = :sid", "new": "app = :app AND sid = :sid", "rowid": "app = :app AND sid = :sid"}
ROWID_SESSIONS = """
    PRAGMA foreign_keys=OFF;
    BEGIN;
    CREATE TABLE sessions_rowid (
        sid TEXT NOT NULL, app TEXT NOT NULL DEFAULT 'default', user_id TEXT NOT NULL, created_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL, expires_at INTEGER, ended_at INTEGER,
        expiry_source TEXT CHECK (expiry_source = 'token' OR expiry_source = 'server'),
        PRIMARY KEY (app, sid)) STRICT;
    INSERT INTO sessions_rowid SELECT * FROM sessions;
    DROP TABLE sessions;
    ALTER TABLE sessions_rowid RENAME TO sessions;
    COMMIT;
    """

# The texts of DeviceStore.findIDsSQL (the delivery worker's device read), DeviceStore.listUsersSQL
# (a notification's devices), SessionStore.touch (each registration and stream open) and its read.
STATEMENTS = {
    "find-ids": lambda shape: f"""SELECT {COLUMNS} FROM json_each(:ids) AS i CROSS JOIN devices d ON d.id = i.value
        LEFT JOIN sessions s ON {JOIN[shape]}""",
    "list-users": lambda shape: f"""SELECT {COLUMNS} FROM json_each(:users) AS u CROSS JOIN devices d ON d.user_id = u.value
        LEFT JOIN sessions s ON {JOIN[shape]} WHERE d.app = :app""",
    "touch": lambda shape: f"""INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, expires_at, expiry_source)
        VALUES (:sid, :app, :user, :now, :now, NULL, NULL)
        ON CONFLICT ({CONFLICT[shape]}) DO UPDATE SET last_seen_at = excluded.last_seen_at
        WHERE sessions.user_id = excluded.user_id""" + ("" if shape != "base" else " AND sessions.app = excluded.app"),
    "touch-read": lambda shape: f"SELECT * FROM sessions WHERE {KEY[shape]}",
}


def make(binary, path, shape):
    if not os.path.exists(path):
        subprocess.run([binary, "migrate"], env={"PATH": "/usr/bin:/bin", "HERALD_DATABASE": path}, check=True,
                       capture_output=True)
        db = sqlite3.connect(path)
        with db:
            db.executemany("INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at) VALUES (?, 'default', ?, 1, 1)",
                           ((f"sess-{i:08d}", f"user-{i}") for i in range(USERS)))
            db.executemany("""INSERT INTO devices (id, app, user_id, sid, platform, provider, token, created_at, last_seen_at)
                              VALUES (?, 'default', ?, ?, 'ios', 'apns', ?, 1, 1)""",
                           ((f"dev-{i:08d}-0000-0000-000000000000", f"user-{i}", f"sess-{i:08d}", f"{i:064x}") for i in range(USERS)))
        if shape == "rowid":
            db.isolation_level = None
            db.executescript(ROWID_SESSIONS)
        db.execute("ANALYZE")
        db.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA foreign_keys=ON")
    return db


def main():
    binary, directory, shape, name, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    os.makedirs(directory, exist_ok=True)
    db = make(binary, os.path.join(directory, f"{shape}.db"), shape)
    sql = STATEMENTS[name](shape)
    step = 7919   # a stride through the users, so runs do not read one page over and over
    if name == "touch":
        db.execute("BEGIN")   # as Herald's writer: inside a transaction, its commit not counted per touch
    for n in range(runs):
        i = (n * step) % USERS
        if name == "find-ids":
            rows = db.execute(sql, {"ids": f'["dev-{i:08d}-0000-0000-000000000000"]', "now": 2}).fetchall()
            assert len(rows) == 1 and rows[0][14] == 1, rows
        elif name == "list-users":
            rows = db.execute(sql, {"users": f'["user-{i}"]', "app": "default", "now": 2}).fetchall()
            assert len(rows) == 1 and rows[0][14] == 1, rows
        elif name == "touch":
            db.execute(sql, {"sid": f"sess-{i:08d}", "app": "default", "user": f"user-{i}", "now": 3 + n})
        else:
            rows = db.execute(sql, {"sid": f"sess-{i:08d}", "app": "default"}).fetchall()
            assert len(rows) == 1, rows
    if name == "touch":
        db.execute("COMMIT")
    print(f"{shape} {name} {runs} runs ok")


if __name__ == "__main__":
    main()
