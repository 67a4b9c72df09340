CREATE TABLE sessions (
    sid          TEXT PRIMARY KEY,
    app          TEXT NOT NULL DEFAULT 'default',
    user_id      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER,
    ended_at     INTEGER
, expiry_source TEXT CHECK (expiry_source IN ('token', 'server'))) STRICT;
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
CREATE INDEX devices_user_id ON devices (user_id);
CREATE INDEX devices_sid ON devices (sid);
CREATE INDEX devices_last_seen_at ON devices (last_seen_at);
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state = 'queued' OR state = 'leased' OR state = 'done' OR state = 'dead'),
    attempts     INTEGER NOT NULL DEFAULT 0,
    run_at       INTEGER NOT NULL,
    lease_until  INTEGER,
    last_error   TEXT,
    created_at   INTEGER NOT NULL
, dead_at INTEGER, uncounted_attempts INTEGER NOT NULL DEFAULT 0, first_attempt_at INTEGER, dead_provider TEXT, dead_reason TEXT, app TEXT NOT NULL DEFAULT 'default') STRICT;
CREATE TABLE notifications (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    app          TEXT NOT NULL DEFAULT 'default',
    user_id      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    scope        TEXT,
    title_json   TEXT,
    body_json    TEXT,
    args_json    TEXT,
    data_json    TEXT NOT NULL DEFAULT '{}',
    collapse_key TEXT,
    thread_id    TEXT,
    priority     TEXT NOT NULL CHECK (priority = 'normal' OR priority = 'high' OR priority = 'urgent'),
    expires_at   INTEGER,
    in_inbox     INTEGER NOT NULL DEFAULT 1,
    cursor       TEXT,
    plan_json    TEXT,
    created_at   INTEGER NOT NULL,
    read_at      INTEGER
, plan_id INTEGER, timed INTEGER NOT NULL DEFAULT 0, plan_claimed_by TEXT, plan_lease_until INTEGER) STRICT;
CREATE INDEX notifications_inbox ON notifications (app, user_id, seq);
CREATE INDEX notifications_unread ON notifications (app, user_id, seq)  -- unread page, count, read-all
    WHERE read_at IS NULL AND in_inbox = 1;
CREATE INDEX notifications_unplanned ON notifications (seq)             -- crash recovery at start
    WHERE plan_json IS NOT NULL;
CREATE TABLE deliveries (
    id                  INTEGER PRIMARY KEY,
    notification_id     TEXT NOT NULL,
    user_id             TEXT NOT NULL,
    device_id           TEXT,
    connection_id       TEXT,
    session_id          TEXT,
    outcome             TEXT NOT NULL CHECK (outcome = 'live_delivered' OR outcome = 'suppressed_foreground' OR outcome = 'suppressed_acked' OR outcome = 'skipped_preferences' OR outcome = 'skipped_session' OR outcome = 'skipped_audience' OR outcome = 'skipped_policy' OR outcome = 'expired' OR outcome = 'queued' OR outcome = 'sent' OR outcome = 'retrying' OR outcome = 'failed' OR outcome = 'dead' OR outcome = 'opened'),
    provider_message_id TEXT,
    job_id              INTEGER,
    delivery_id         TEXT,
    detail              TEXT,
    at                  INTEGER NOT NULL
) STRICT;
CREATE INDEX deliveries_notification ON deliveries (notification_id, id);
CREATE INDEX deliveries_delivery_id ON deliveries (delivery_id, outcome) WHERE delivery_id IS NOT NULL;
CREATE TABLE push_preferences (
    app                 TEXT NOT NULL DEFAULT 'default',
    user_id             TEXT NOT NULL,
    scope               TEXT NOT NULL,
    is_enabled          INTEGER NOT NULL,
    enabled_events_json TEXT,
    updated_at          INTEGER NOT NULL,
    PRIMARY KEY (app, user_id, scope)
) STRICT;
CREATE TABLE scope_members (
    app              TEXT NOT NULL DEFAULT 'default',
    scope            TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    permissions_json TEXT NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (app, scope, user_id)
) STRICT;
CREATE INDEX scope_members_user ON scope_members (app, user_id);
CREATE TABLE idempotency_keys (
    app           TEXT NOT NULL DEFAULT 'default',
    key           TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    response_json TEXT NOT NULL,
    complete      INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (app, key)
) STRICT;
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
CREATE TABLE notification_plans (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    plan_json   TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    claimed_by  TEXT,
    lease_until INTEGER,
    CHECK ((claimed_by IS NULL) = (lease_until IS NULL))
) STRICT;
CREATE TABLE storage_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    written_at INTEGER NOT NULL             -- unix ms of the last probe
);
CREATE UNIQUE INDEX devices_app_provider_token ON devices (app, provider, token);
CREATE TABLE apps (
    id            TEXT PRIMARY KEY,
    settings_json TEXT NOT NULL,
    secrets_json  TEXT NOT NULL DEFAULT '{}',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;
CREATE TABLE app_server_keys (
    hash       TEXT PRIMARY KEY,
    app        TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX app_server_keys_app ON app_server_keys (app);
CREATE INDEX sessions_app ON sessions (app);
CREATE TABLE users (
    app        TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    locale     TEXT,                       -- BCP 47, normalised; NULL: not set
    updated_at INTEGER NOT NULL,           -- unix ms
    PRIMARY KEY (app, user_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX notifications_untimed_created_at ON notifications (created_at) WHERE timed = 0;
CREATE INDEX notifications_untimed_plan ON notifications (plan_id) WHERE timed = 0 AND plan_id IS NOT NULL;
CREATE INDEX push_preferences_switched_off ON push_preferences (app, user_id) WHERE scope = '' AND is_enabled = 0;
CREATE TABLE job_counts (
    state TEXT PRIMARY KEY CHECK (state = 'done'),
    n     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX jobs_due ON jobs (state, kind, coalesce(lease_until, run_at))
    WHERE state = 'queued' OR state = 'leased' OR state = 'dead';
