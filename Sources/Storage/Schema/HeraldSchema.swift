/// Herald's SQLite schema, as migrations. Append new ones; never edit a released one.
///
/// Conventions: times are INTEGER unix milliseconds (`Date.unixMilliseconds`); `app` is the
/// tenant, `'default'` on a fresh install; tables are `STRICT`, so a value of the wrong type is a
/// constraint error at write time instead of a decode error at read time.
public enum HeraldSchema {
    /// Every migration, in order. `Database.open` applies the missing ones at start.
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "sessions, devices, jobs", sql: """
            -- One sign-in on one device (the access token's sid). Ending a session (logout) sets
            -- ended_at; a session past expires_at keeps its rows but gets no pushes (DV-4).
            CREATE TABLE sessions (
                sid          TEXT PRIMARY KEY,
                app          TEXT NOT NULL DEFAULT 'default',
                user_id      TEXT NOT NULL,
                created_at   INTEGER NOT NULL,
                last_seen_at INTEGER NOT NULL,
                expires_at   INTEGER,
                ended_at     INTEGER
            ) STRICT;

            -- A push token registered by a session (DV-1). One row per (app, platform, token):
            -- registering a known token updates its row. A device outlives a deleted session row
            -- (sid becomes NULL); ending a session deletes its devices explicitly (DV-4).
            CREATE TABLE devices (
                id              TEXT PRIMARY KEY,
                app             TEXT NOT NULL DEFAULT 'default',
                user_id         TEXT NOT NULL,
                sid             TEXT REFERENCES sessions(sid) ON DELETE SET NULL,
                platform        TEXT NOT NULL CHECK (platform IN ('ios', 'android', 'web')),
                provider        TEXT NOT NULL,
                token           TEXT NOT NULL,
                environment     TEXT,
                installation_id TEXT,
                locale          TEXT,
                app_version     TEXT,
                device_name     TEXT,
                created_at      INTEGER NOT NULL,
                last_seen_at    INTEGER NOT NULL,
                UNIQUE (app, platform, token)
            ) STRICT;
            CREATE INDEX devices_user_id ON devices (user_id);       -- a user's devices (fan-out, DV-2)
            CREATE INDEX devices_sid ON devices (sid);               -- a session's devices (DV-1 rotation, DV-4)
            CREATE INDEX devices_last_seen_at ON devices (last_seen_at);  -- the 90-day purge (DV-6)

            -- The durable delivery queue (PU-5): one push.deliver job per device. Workers claim
            -- due jobs (state 'queued', run_at <= now, or 'leased' with lease_until past) and
            -- lease them; a crash while leased makes the job due again.
            CREATE TABLE jobs (
                id           INTEGER PRIMARY KEY,
                kind         TEXT NOT NULL,
                payload_json TEXT NOT NULL,
                state        TEXT NOT NULL CHECK (state IN ('queued', 'leased', 'done', 'dead')),
                attempts     INTEGER NOT NULL DEFAULT 0,
                run_at       INTEGER NOT NULL,
                lease_until  INTEGER,
                last_error   TEXT,
                created_at   INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX jobs_state_run_at ON jobs (state, run_at);  -- "next due job" is an index range scan
            """),
        Migration(version: 2, name: "who set a session's expiry", sql: """
            -- 'server' when the app backend set expires_at (PUT /v1/sessions/{sid}): a client's
            -- token, even one carrying session_exp, must not undo it. NULL or 'token' otherwise.
            ALTER TABLE sessions ADD COLUMN expiry_source TEXT CHECK (expiry_source IN ('token', 'server'));
            """),
    ]
}
