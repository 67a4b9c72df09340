import HeraldCore
/// Herald's SQLite schema, as migrations. Append new ones; never edit a released one.
///
/// Conventions: times are INTEGER unix milliseconds (`Date.unixMilliseconds`); `app` is the
/// tenant, `'default'` on a fresh install; tables are `STRICT`, so a value of the wrong type is a
/// constraint error at write time instead of a decode error at read time.
enum HeraldSchema {
    /// Every migration, in order. `Database.open` applies the missing ones at start.
    static let migrations: [Migration] = [
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
        Migration(version: 3, name: "notifications, deliveries, push preferences, scope members, idempotency keys", sql: """
            -- One notification for one recipient (NO-1): the inbox row (NO-3) and the source of its
            -- pushes. seq is the rowid: it grows with insertion, so it pages the inbox without
            -- skips or repeats when two rows share a created_at. plan_json is set while the pushes
            -- are not planned yet; a crash between storing and planning leaves it set, and the
            -- start-up recovery plans those rows again. in_inbox = 0 rows (push-only) are kept for
            -- the delivery record but never listed or counted.
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
                priority     TEXT NOT NULL CHECK (priority IN ('normal', 'high', 'urgent')),
                expires_at   INTEGER,
                in_inbox     INTEGER NOT NULL DEFAULT 1,
                cursor       TEXT,
                plan_json    TEXT,
                created_at   INTEGER NOT NULL,
                read_at      INTEGER
            ) STRICT;
            CREATE INDEX notifications_inbox ON notifications (app, user_id, seq);  -- a user's inbox page, newest first
            CREATE INDEX notifications_unread ON notifications (app, user_id, seq)  -- unread page, count, read-all
                WHERE read_at IS NULL AND in_inbox = 1;
            CREATE INDEX notifications_unplanned ON notifications (seq)             -- crash recovery at start
                WHERE plan_json IS NOT NULL;
            CREATE INDEX notifications_created_at ON notifications (created_at);    -- the retention purge

            -- What happened to a notification on each device and connection (NO-8), appended in
            -- order. No foreign key to notifications: a late provider answer or open beacon must
            -- still be recordable, and the retention purge deletes both sides itself. The outcome
            -- list is DeliveryOutcome's raw values; a later outcome needs a new migration.
            CREATE TABLE deliveries (
                id                  INTEGER PRIMARY KEY,
                notification_id     TEXT NOT NULL,
                user_id             TEXT NOT NULL,
                device_id           TEXT,
                connection_id       TEXT,
                session_id          TEXT,
                outcome             TEXT NOT NULL CHECK (outcome IN (
                                        'live_delivered', 'suppressed_foreground', 'suppressed_acked',
                                        'skipped_preferences', 'skipped_session', 'skipped_audience', 'skipped_policy',
                                        'expired', 'queued', 'sent', 'retrying', 'failed', 'dead', 'opened')),
                provider_message_id TEXT,
                job_id              INTEGER,
                delivery_id         TEXT,
                detail              TEXT,
                at                  INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX deliveries_notification ON deliveries (notification_id, id);  -- the record, in order
            -- A campaign push's delivery id (seed 004): the open beacon looks up its 'queued' entry
            -- and whether it was 'opened' already. Not UNIQUE: re-planning after a crash may queue
            -- the same delivery id again, and that must not fail the recovery.
            CREATE INDEX deliveries_delivery_id ON deliveries (delivery_id, outcome) WHERE delivery_id IS NOT NULL;

            -- A user's push switch per scope (NO-4); scope '' is the user's global switch (seed 002),
            -- since a NULL in a primary key would let one user hold several global rows.
            -- enabled_events_json NULL means the app catalog's defaults.
            CREATE TABLE push_preferences (
                app                 TEXT NOT NULL DEFAULT 'default',
                user_id             TEXT NOT NULL,
                scope               TEXT NOT NULL,
                is_enabled          INTEGER NOT NULL,
                enabled_events_json TEXT,
                updated_at          INTEGER NOT NULL,
                PRIMARY KEY (app, user_id, scope)
            ) STRICT;

            -- Scope membership with permissions, synced by the app backend (NO-6).
            -- permissions_json is a sorted JSON array of strings, matched with json_each.
            CREATE TABLE scope_members (
                app              TEXT NOT NULL DEFAULT 'default',
                scope            TEXT NOT NULL,
                user_id          TEXT NOT NULL,
                permissions_json TEXT NOT NULL,
                updated_at       INTEGER NOT NULL,
                PRIMARY KEY (app, scope, user_id)
            ) STRICT;
            CREATE INDEX scope_members_user ON scope_members (app, user_id);  -- a user's scopes

            -- POST /v1/notifications idempotency (NO-1): the first call reserves the key with its
            -- request hash (complete = 0), then stores its answer; a repeat with the same hash gets
            -- that answer, one with another hash is refused.
            CREATE TABLE idempotency_keys (
                app           TEXT NOT NULL DEFAULT 'default',
                key           TEXT NOT NULL,
                request_hash  TEXT NOT NULL,
                response_json TEXT NOT NULL,
                complete      INTEGER NOT NULL,
                created_at    INTEGER NOT NULL,
                PRIMARY KEY (app, key)
            ) STRICT;
            CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);  -- the expiry purge
            """),
        Migration(version: 4, name: "one push plan per call", sql: """
            -- A call's push plan while its pushes are not planned yet (NO-2): one row per call
            -- instead of notifications.plan_json on every recipient's row, which had to be
            -- rewritten to clear it. A call's notifications are stored one after another in one
            -- transaction, so they are the rows seq first_seq..last_seq; first_seq is the rowid.
            -- Planning deletes the row; a crash in between leaves it, and recovery plans the call
            -- from it. notifications.plan_json is no longer written: recovery turns rows an older
            -- build left with it into rows here first.
            CREATE TABLE notification_plans (
                first_seq  INTEGER PRIMARY KEY,
                last_seq   INTEGER NOT NULL CHECK (last_seq >= first_seq),
                plan_json  TEXT NOT NULL,
                created_at INTEGER NOT NULL
            ) STRICT;
            """),
        Migration(version: 5, name: "plans by id, owned as a lease", sql: """
            -- Plan ownership as a lease (DESIGN "Plan ownership"): a plan is identified by its call,
            -- not by a seq range (which several writers could not keep contiguous), and whoever
            -- plans it holds it until lease_until, like a job. A live call stores its plan already
            -- claimed by its node; recovery claims (UPDATE … RETURNING) only plans whose lease is
            -- over or that have no owner. AUTOINCREMENT: an id is never reused, so the plan_id a
            -- planned row keeps never names a later call's plan.
            ALTER TABLE notifications ADD COLUMN plan_id INTEGER;
            ALTER TABLE notification_plans RENAME TO notification_plans_v4;
            CREATE TABLE notification_plans (
                id          INTEGER PRIMARY KEY AUTOINCREMENT,
                plan_json   TEXT NOT NULL,
                created_at  INTEGER NOT NULL,
                claimed_by  TEXT,
                lease_until INTEGER,
                CHECK ((claimed_by IS NULL) = (lease_until IS NULL))
            ) STRICT;
            -- Plans an older build stored keep their first_seq as id, with no owner (recovery takes
            -- them at once), and their rows get it as plan_id.
            INSERT INTO notification_plans (id, plan_json, created_at)
                SELECT first_seq, plan_json, created_at FROM notification_plans_v4;
            UPDATE notifications SET plan_id = p.first_seq
                FROM notification_plans_v4 AS p WHERE notifications.seq BETWEEN p.first_seq AND p.last_seq;
            DROP TABLE notification_plans_v4;
            CREATE INDEX notifications_plan ON notifications (plan_id) WHERE plan_id IS NOT NULL;  -- a plan's rows
            """),
        Migration(version: 6, name: "when a job died", sql: """
            -- Set when a job is dead-lettered, cleared when it is retried: bulk retry of the dead
            -- letters since a time (e.g. since a provider outage began).
            ALTER TABLE jobs ADD COLUMN dead_at INTEGER;
            """),
        Migration(version: 7, name: "retry budget, unsent attempts, dead-letter cause", sql: """
            -- The retry policy's time budget starts at a job's first claim (first_attempt_at, reset
            -- with its attempts when a dead letter is retried); attempts that never reached the
            -- provider (no connection, no auth token) are counted apart (uncounted_attempts) and
            -- do not use up the attempt cap. attempts stays the lease's fencing number.
            ALTER TABLE jobs ADD COLUMN uncounted_attempts INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE jobs ADD COLUMN first_attempt_at INTEGER;
            -- Why a dead job died, for bulk retry by provider and reason: the device's provider
            -- and the reason's code (the outcome reason up to its first ':'). Set with dead_at,
            -- cleared with it.
            ALTER TABLE jobs ADD COLUMN dead_provider TEXT;
            ALTER TABLE jobs ADD COLUMN dead_reason TEXT;
            -- Jobs already dead: the reason from last_error ('<code>: detail' or '<code> (after n
            -- attempts)'), the provider from the device the payload names while it still exists.
            UPDATE jobs SET dead_reason = trim(CASE
                    WHEN instr(last_error, ':') > 0 THEN substr(last_error, 1, instr(last_error, ':') - 1)
                    WHEN instr(last_error, ' (after ') > 0 THEN substr(last_error, 1, instr(last_error, ' (after ') - 1)
                    ELSE last_error END)
                WHERE state = 'dead' AND last_error IS NOT NULL;
            UPDATE jobs SET dead_provider = (SELECT d.provider FROM devices AS d WHERE d.id = json_extract(jobs.payload_json, '$.device_id'))
                WHERE state = 'dead' AND kind = 'push.deliver' AND json_valid(payload_json);
            """),
        Migration(version: 8, name: "storage probe", sql: """
            -- One row that /readyz rewrites (SQLiteStorage.probeWrite): a real write, so a full
            -- disk or a read-only file shows there and not only on the next caller's write (RL-2).
            CREATE TABLE storage_probe (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                written_at INTEGER NOT NULL             -- unix ms of the last probe
            );
            """),
        Migration(version: 9, name: "one device per provider token", sql: """
            -- A token is the provider's address of one app install: the same FCM token registered
            -- under two platform labels was two devices, pushed twice and outside the installation
            -- check. Keep the most recently seen row of each (app, provider, token).
            DELETE FROM devices WHERE id IN (
                SELECT d.id FROM devices AS d JOIN devices AS e
                    ON e.app = d.app AND e.provider = d.provider AND e.token = d.token AND e.id <> d.id
                WHERE e.last_seen_at > d.last_seen_at OR (e.last_seen_at = d.last_seen_at AND e.id > d.id));
            CREATE UNIQUE INDEX devices_app_provider_token ON devices (app, provider, token);
            """),
        Migration(version: 10, name: "apps", sql: """
            -- The apps beside the environment's `default` (AP-1, ADR 0006): settings as JSON (not
            -- secret), secrets sealed with AES-256-GCM (SecretBox) as JSON by field.
            CREATE TABLE IF NOT EXISTS apps (
                id            TEXT PRIMARY KEY,
                settings_json TEXT NOT NULL,
                secrets_json  TEXT NOT NULL DEFAULT '{}',
                created_at    INTEGER NOT NULL,
                updated_at    INTEGER NOT NULL
            ) STRICT;
            -- An app's server keys by SHA-256: the key names the app, so one key is one app's.
            CREATE TABLE IF NOT EXISTS app_server_keys (
                hash       TEXT PRIMARY KEY,
                app        TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                created_at INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX IF NOT EXISTS app_server_keys_app ON app_server_keys (app);
            CREATE INDEX IF NOT EXISTS sessions_app ON sessions (app);  -- an app's rows, when it is deleted
            """),
        Migration(version: 11, name: "users' language", sql: """
            -- A user's language as the app backend sets it (PUT /v1/users/{id}): the push language
            -- of a device registered without a locale, before the app's default (NO-5, seed 000).
            CREATE TABLE users (
                app        TEXT NOT NULL,
                user_id    TEXT NOT NULL,
                locale     TEXT,                       -- BCP 47, normalised; NULL: not set
                updated_at INTEGER NOT NULL,           -- unix ms
                PRIMARY KEY (app, user_id)
            ) STRICT, WITHOUT ROWID;
            """),
        Migration(version: 12, name: "due jobs by kind, leased jobs by lease end", sql: """
            -- Issue 17. A claim of one kind walked (state, run_at) and read each table row for its
            -- kind: the receipt poll read the whole due push backlog to find no push.receipt job.
            -- And "leased with its lease over" read every leased row (the in-flight window, up to
            -- 256) on every claim: ~1.4 M instructions a claim. Both are index range scans now;
            -- the leased index holds only leased rows, and its range is normally empty.
            DROP INDEX jobs_state_run_at;
            CREATE INDEX jobs_state_kind_run_at ON jobs (state, kind, run_at);
            CREATE INDEX jobs_leased_until ON jobs (kind, lease_until) WHERE state = 'leased';
            """),
        Migration(version: 13, name: "jobs' app", sql: """
            -- A job is one app's (ADR 0006): /v1/jobs lists and retries the server key's app's
            -- jobs only. Existing push jobs take their device's app while the device exists (the
            -- payload starts with {"apns_id":…,"device_id":…}); the others stay 'default', as
            -- every job was until now. No index: listing is an operator's page, and an index on
            -- the app would be rewritten by every claim.
            ALTER TABLE jobs ADD COLUMN app TEXT NOT NULL DEFAULT 'default';
            UPDATE jobs SET app = (SELECT d.app FROM devices AS d WHERE d.id = json_extract(jobs.payload_json, '$.device_id'))
                WHERE kind = 'push.deliver' AND json_valid(payload_json)
                  AND EXISTS (SELECT 1 FROM devices AS d WHERE d.id = json_extract(jobs.payload_json, '$.device_id'));
            """),
        Migration(version: 14, name: "job states checked without a temporary table", sql: """
            -- Issue 17. `CHECK (state IN (...))` built a throw-away B-tree of the four states (an
            -- ephemeral table: a page allocated and zeroed) each time a row's state was written,
            -- ~9k instructions per enqueue, per claimed row and per outcome: three times per push.
            -- The same check as a chain of equalities is evaluated in place. Neither the check's
            -- meaning nor the stored rows change, so the table's text in sqlite_schema is edited
            -- (SQLite's way for a CHECK change, lang_altertable.html "other kinds of schema
            -- changes") instead of the table being rebuilt: the edit takes no time at any size and
            -- keeps whatever columns later migrations add. RESET makes this connection read its
            -- schema again; the table made and dropped bumps the schema cookie for every other one.
            PRAGMA writable_schema = ON;
            UPDATE sqlite_schema
            SET sql = replace(sql, 'CHECK (state IN (''queued'', ''leased'', ''done'', ''dead''))',
                              'CHECK (state = ''queued'' OR state = ''leased'' OR state = ''done'' OR state = ''dead'')')
            WHERE type = 'table' AND name = 'jobs';
            PRAGMA writable_schema = RESET;
            CREATE TABLE jobs_check_rewritten (x);
            DROP TABLE jobs_check_rewritten;
            """),
        Migration(version: 15, name: "delivery outcomes and notification priorities checked without a temporary table",
                  sql: inPlaceChecks),
        Migration(version: 16, name: "due jobs and expired leases in one index", sql: """
            -- Issue 17. A job is due when it is queued and its run_at has come, or leased and its
            -- lease_until has passed: one index on (state, kind, when it is due) finds both, with
            -- coalesce(lease_until, run_at) as the due time (lease_until is NULL unless the job
            -- is leased). Migration 12's two indexes made every push write three index entries
            -- and delete two (the leased-at-insert row in both, its completion out of both and
            -- into one): ~11k instructions a push of the 50k SQLite spends on a job's row.
            UPDATE jobs SET lease_until = NULL WHERE state <> 'leased' AND lease_until IS NOT NULL;
            DROP INDEX jobs_leased_until;
            DROP INDEX jobs_state_kind_run_at;
            CREATE INDEX jobs_due ON jobs (state, kind, coalesce(lease_until, run_at));
            """),
        Migration(version: 17, name: "notifications found by their time-ordered ids", sql: """
            -- Issue 17. Every notification wrote six B-tree entries (the row and five indexes);
            -- two of them served only rare reads: notifications_created_at the retention purge,
            -- notifications_plan recovery's read of a plan's rows. The ids Herald makes begin
            -- with their creation time (Notifier.newID), so for a row whose id carries its
            -- created_at, and whose plan (if any) was created at the same millisecond, both are a
            -- range of the UNIQUE id index, which every row writes anyway. timed = 1 marks such
            -- rows (NotificationStore.insert decides); the rows stored before this migration, and
            -- any other, keep both indexes, now partial on timed = 0.
            ALTER TABLE notifications ADD COLUMN timed INTEGER NOT NULL DEFAULT 0;
            CREATE INDEX notifications_untimed_created_at ON notifications (created_at) WHERE timed = 0;
            CREATE INDEX notifications_untimed_plan ON notifications (plan_id) WHERE timed = 0 AND plan_id IS NOT NULL;
            DROP INDEX notifications_created_at;
            DROP INDEX notifications_plan;
            """),
        Migration(version: 18, name: "users whose push switch is off", sql: """
            -- Issue 17. POST /v1/push skips the devices of users whose global switch is off
            -- (NO-4, scope ''): it looked each recipient up in push_preferences, ~4k instructions
            -- a push, though few users ever turn pushes off. This index holds only their rows, so
            -- one seek says whether an app has any such user, and each look-up is a seek in it.
            -- A preference saved or changed writes an entry only when it is the switch, off.
            CREATE INDEX push_preferences_switched_off ON push_preferences (app, user_id) WHERE scope = '' AND is_enabled = 0;
            """),
        Migration(version: 19, name: "a one-recipient call's plan in its row", sql: """
            -- Issue 17, ADR 0003's amendment. A call with one recipient keeps its plan in its row's
            -- plan_json (as builds before migration 4 did for every row), held by plan_claimed_by
            -- until plan_lease_until, instead of a notification_plans row inserted and deleted a
            -- few milliseconds later (two statements, and that table's and sqlite_sequence's pages
            -- in both commit groups). Planning clears all three in the UPDATE that sets the row's
            -- cursor; recovery turns rows nobody holds into plan rows first. A released hold has
            -- plan_lease_until 0; rows of older builds have both NULL (a pre-schema-4 plan, if any).
            -- notifications_unplanned (migration 3) finds such rows.
            ALTER TABLE notifications ADD COLUMN plan_claimed_by TEXT;
            ALTER TABLE notifications ADD COLUMN plan_lease_until INTEGER;
            """),
        Migration(version: 20, name: "done jobs counted, not indexed", sql: """
            -- Issue 17. Every push's completion moved its jobs_due entry from the leased range to
            -- the done range, where no claim, lease release or due-time read ever looks: ~5k
            -- instructions a push, for /metrics' count of done jobs alone (a GROUP BY over the
            -- index, which grew with every push: done jobs are never purged on their own). The
            -- index now holds the other states only; the done count is a row of job_counts,
            -- changed in the transaction that makes jobs done or deletes them (JobCounts: once
            -- per commit, however many jobs it completes), counted here once from the rows.
            CREATE TABLE job_counts (
                state TEXT PRIMARY KEY CHECK (state = 'done'),
                n     INTEGER NOT NULL
            ) STRICT, WITHOUT ROWID;
            INSERT INTO job_counts (state, n) SELECT 'done', count(*) FROM jobs WHERE state = 'done';
            DROP INDEX jobs_due;
            CREATE INDEX jobs_due ON jobs (state, kind, coalesce(lease_until, run_at))
                WHERE state = 'queued' OR state = 'leased' OR state = 'dead';
            """),
        Migration(version: 21, name: "jobs leased at insert kept out of jobs_due, behind a lease floor", sql: """
            -- Issue 17, ADR 0017. A push's job leased at insert wrote its jobs_due entry in its
            -- INSERT and deleted it at its completion, ~7k instructions each (13.6k of a push's
            -- ~128k), though nothing looks for it there while this process holds the lease. Such a
            -- job is now marked leased_at_insert = 1 until it leaves that lease (completed,
            -- retried, dead, released at start, claimed once the lease is over: each writes 0), and
            -- jobs_due holds only rows with 0. The jobs leased at insert are found from
            -- job_lease_floor: the lowest of them (NULL: none), moved by the writer just before the
            -- COMMIT of a transaction that freed the floor's own job or leased a lower one (LeaseFloor:
            -- at most one row written a completion batch, +0.1k a push measured in floor9). The
            -- start's release, the claim's expired leases, /metrics, ?state=leased and a token
            -- rotation walk the primary key up from it. Rows stored before this keep 0: indexed.
            ALTER TABLE jobs ADD COLUMN leased_at_insert INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE job_lease_floor (
                slot INTEGER PRIMARY KEY CHECK (slot = 0),
                id   INTEGER                     -- the lowest job leased at insert; NULL: none
            ) STRICT;
            INSERT INTO job_lease_floor (slot, id) VALUES (0, NULL);
            DROP INDEX jobs_due;
            CREATE INDEX jobs_due ON jobs (state, kind, coalesce(lease_until, run_at))
                WHERE (state = 'queued' OR state = 'leased' OR state = 'dead') AND leased_at_insert = 0;
            """),
        Migration(version: 22, name: "sessions keyed by app and sid", sql: """
            -- ADR 0019. A session was named by its sid alone, so the first app to use a sid held it
            -- for every app (AP-3). Both tables are rebuilt (SQLite's way to change a key) without
            -- turning foreign keys off, which a migration's transaction cannot: renaming a table
            -- rewrites the references to it, so the old devices follow the old sessions, and the
            -- old tables go child first. Every row already has its app (since migration 1).
            -- sessions_app goes: the primary key's first column is the app. devices_sid becomes
            -- devices_app_sid, which the foreign key's checks and a session's devices use. The
            -- reference has no ON DELETE SET NULL (it would null app, which is NOT NULL): no session
            -- is deleted but with its app, after the app's devices. The CHECKs are chains of
            -- equalities, as migrations 14 and 15 made the others (no temporary table per row).
            ALTER TABLE devices RENAME TO devices_before_22;
            ALTER TABLE sessions RENAME TO sessions_before_22;
            CREATE TABLE sessions (
                sid           TEXT NOT NULL,
                app           TEXT NOT NULL DEFAULT 'default',
                user_id       TEXT NOT NULL,
                created_at    INTEGER NOT NULL,
                last_seen_at  INTEGER NOT NULL,
                expires_at    INTEGER,
                ended_at      INTEGER,
                expiry_source TEXT CHECK (expiry_source = 'token' OR expiry_source = 'server'),
                PRIMARY KEY (app, sid)
            ) STRICT, WITHOUT ROWID;
            INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, expires_at, ended_at, expiry_source)
                SELECT sid, app, user_id, created_at, last_seen_at, expires_at, ended_at, expiry_source FROM sessions_before_22;
            -- A device stored under another app's session (before ADR 0006's check) gets a live
            -- session of its own app, with its user and times, instead of reading the other's.
            INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at)
                SELECT d.sid, d.app, min(d.user_id), min(d.created_at), max(d.last_seen_at) FROM devices_before_22 AS d
                WHERE d.sid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sessions AS s WHERE s.app = d.app AND s.sid = d.sid)
                GROUP BY d.app, d.sid;
            CREATE TABLE devices (
                id              TEXT PRIMARY KEY,
                app             TEXT NOT NULL DEFAULT 'default',
                user_id         TEXT NOT NULL,
                sid             TEXT,
                platform        TEXT NOT NULL CHECK (platform = 'ios' OR platform = 'android' OR platform = 'web'),
                provider        TEXT NOT NULL,
                token           TEXT NOT NULL,
                environment     TEXT,
                installation_id TEXT,
                locale          TEXT,
                app_version     TEXT,
                device_name     TEXT,
                created_at      INTEGER NOT NULL,
                last_seen_at    INTEGER NOT NULL,
                UNIQUE (app, platform, token),
                FOREIGN KEY (app, sid) REFERENCES sessions (app, sid)
            ) STRICT;
            INSERT INTO devices (id, app, user_id, sid, platform, provider, token, environment, installation_id, locale,
                                 app_version, device_name, created_at, last_seen_at)
                SELECT id, app, user_id, sid, platform, provider, token, environment, installation_id, locale,
                       app_version, device_name, created_at, last_seen_at FROM devices_before_22;
            DROP TABLE devices_before_22;
            DROP TABLE sessions_before_22;
            CREATE INDEX devices_user_id ON devices (user_id);
            CREATE INDEX devices_app_sid ON devices (app, sid);
            CREATE INDEX devices_last_seen_at ON devices (last_seen_at);
            CREATE UNIQUE INDEX devices_app_provider_token ON devices (app, provider, token);
            """),
        Migration(version: 23, name: "jobs waiting for an ack", sql: """
            -- ADR 0025. An `unless_acked` push's job names the session and event it waits for, so
            -- `POST /v1/me/acks` finds it in storage and cancels it before answering: an answered
            -- ack survives a restart. Only such jobs have an entry in the index (NULL otherwise).
            ALTER TABLE jobs ADD COLUMN ack_session TEXT;
            ALTER TABLE jobs ADD COLUMN ack_event_id TEXT;
            CREATE INDEX jobs_awaiting_ack ON jobs (app, ack_session, ack_event_id) WHERE ack_event_id IS NOT NULL;
            """),
        Migration(version: 24, name: "turned-away attempts counted apart", sql: """
            -- audience14. A push turned away for its turn (Web Push's origin_busy, ADR 0024) is
            -- retried without counting toward the cap (uncounted_attempts), and now without growing
            -- a later failure's backoff either: the backoff's exponent is attempts less these.
            ALTER TABLE jobs ADD COLUMN turned_away_attempts INTEGER NOT NULL DEFAULT 0;
            """),
    ]

    /// Migration 15 (issue 17): migration 14's cut for the two other tables a push writes. Every
    /// push writes two `deliveries` rows (`queued`, then `sent`) and every notification one
    /// `notifications` row, and each `CHECK (x IN (…))` built its throw-away B-tree per row. The
    /// tables' text in `sqlite_schema` is edited as in 14, matched on the exact text migration 3
    /// stored (every database has it); the new checks allow the same values.
    static let inPlaceChecks: String = {
        let outcomes = ["live_delivered", "suppressed_foreground", "suppressed_acked", "skipped_preferences", "skipped_session",
                        "skipped_audience", "skipped_policy", "expired", "queued", "sent", "retrying", "failed", "dead", "opened"]
        let indent = String(repeating: " ", count: 28)
        let storedOutcomes = "CHECK (outcome IN (\n" + indent + "'live_delivered', 'suppressed_foreground', 'suppressed_acked',\n"
            + indent + "'skipped_preferences', 'skipped_session', 'skipped_audience', 'skipped_policy',\n"
            + indent + "'expired', 'queued', 'sent', 'retrying', 'failed', 'dead', 'opened'))"
        let storedPriorities = "CHECK (priority IN ('normal', 'high', 'urgent'))"
        func chain(_ column: String, _ values: [String]) -> String {
            "CHECK (" + values.map { "\(column) = '\($0)'" }.joined(separator: " OR ") + ")"
        }
        /// A SQL string literal of `text` (quotes doubled; the newlines are kept as they are).
        func literal(_ text: String) -> String { "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'" }
        return """
            PRAGMA writable_schema = ON;
            UPDATE sqlite_schema SET sql = replace(sql, \(literal(storedOutcomes)), \(literal(chain("outcome", outcomes))))
            WHERE type = 'table' AND name = 'deliveries';
            UPDATE sqlite_schema SET sql = replace(sql, \(literal(storedPriorities)), \(literal(chain("priority", ["normal", "high", "urgent"]))))
            WHERE type = 'table' AND name = 'notifications';
            PRAGMA writable_schema = RESET;
            CREATE TABLE checks_rewritten (x);
            DROP TABLE checks_rewritten;
            """
    }()
}
