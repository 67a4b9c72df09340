/* The floor of a push's durable work (issue 17): SQLite alone, with Herald's schema, connection
 * settings and statements, and none of Herald. See README.md in this directory.
 *
 *   floor push   DB N K G [SHAPE]   N pushes: enqueue units of K jobs each (one POST /v1/push call,
 *                                  one transaction), then N completions, G a transaction; SHAPE
 *                                  base, lean (the notification once per call in push_payloads),
 *                                  unindexed (leased jobs not in jobs_due), unindexed+leaseindex
 *                                  (and in an index by lease end alone), unindexed+floorrow (and a
 *                                  durable lease floor moved once a completion transaction); combinable
 *   floor notify DB N G [SHAPE]    N notifications with one iOS device each: the writer's
 *                                  statements per notification (see README), G a transaction;
 *                                  SHAPE base, lean (the job without the notification's copy),
 *                                  noqueued (no `queued` delivery record), inline (planned in the
 *                                  store's statement: no plan_json, no plan UPDATE); combinable
 *
 * DB must hold Herald's schema (run.sh makes it with `herald migrate`). Only the measured
 * phase runs with callgrind's collection on (valgrind --tool=callgrind --collect-atstart=no);
 * the set-up runs with it off. Prints the phase's CPU time (getrusage) per push / notification. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <valgrind/callgrind.h>

static sqlite3 *db;

static void die(const char *what) {
    fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, err); exit(1); }
}

static sqlite3_stmt *prep(const char *sql) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) die(sql);
    return s;
}

static void done(sqlite3_stmt *s) {
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {}
    if (rc != SQLITE_DONE) die(sqlite3_sql(s));
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

static double cpu_seconds(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

/* A uuid-like 36-character text, distinct per n (Herald's ids are UUIDs). */
static void uuid(char *out, unsigned long n, unsigned salt) {
    snprintf(out, 37, "%08x-%04x-4%03x-8%03x-%012lx", salt * 2654435761u, (unsigned)(n & 0xffff), salt & 0xfff,
             (unsigned)((n >> 16) & 0xfff), n * 11400714819323198485ul >> 16);
}

/* Herald's statements, as the trace of a run of /tmp/hfinal11 shows them (README). */
static sqlite3_stmt *begin, *commit, *save, *release, *counts, *job_insert, *job_complete;

static void open_db(const char *path) {
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) die(path);
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, 5000);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("PRAGMA journal_size_limit=8388608");  /* HERALD_DATABASE_WAL_LIMIT_BYTES' default */
    exec("PRAGMA foreign_keys=ON");
    begin = prep("BEGIN IMMEDIATE");
    commit = prep("COMMIT");
    save = prep("SAVEPOINT herald_sp0");
    release = prep("RELEASE herald_sp0");
    counts = prep("UPDATE job_counts SET n = n + ? WHERE state = 'done'");
    job_insert = prep("INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, lease_until, first_attempt_at, created_at) "
                      "VALUES (?1, ?2, ?3, 'leased', 1, ?4, ?5, ?4, ?4)");
    job_complete = prep("UPDATE jobs SET state = 'done', lease_until = NULL, last_error = COALESCE(?, last_error) "
                        "WHERE id = ? AND state = 'leased' AND attempts = ?");
}

/* JobStore.enqueueLeased: a push.deliver job leased at insert (900 s lease). Returns its id. */
static long long insert_job(const char *text, long long now) {
    sqlite3_bind_text(job_insert, 1, "push.deliver", -1, SQLITE_STATIC);
    sqlite3_bind_text(job_insert, 2, text, -1, SQLITE_STATIC);
    sqlite3_bind_text(job_insert, 3, "default", -1, SQLITE_STATIC);
    sqlite3_bind_int64(job_insert, 4, now);
    sqlite3_bind_int64(job_insert, 5, now + 900000);
    done(job_insert);
    return sqlite3_last_insert_rowid(db);
}

/* JobStore.complete of a job's first attempt, no note. */
static void complete_job(long long id) {
    sqlite3_bind_int64(job_complete, 2, id);
    sqlite3_bind_int64(job_complete, 3, 1);
    done(job_complete);
    if (sqlite3_changes(db) != 1) die("completion fenced out");
}

/* A push's job text as POST /v1/push writes it (Benchmarks/push.py's notification, 227 bytes). */
static void payload(char *out, size_t size, const char *push_id, const char *device) {
    snprintf(out, size, "{\"apns_id\":\"%s\",\"device_id\":\"%s\",\"notification\":{\"body\":\"One of many pushes\","
             "\"data\":{\"source\":\"bench\"},\"kind\":\"alert\",\"priority\":\"normal\",\"title\":\"Benchmark\"}}", push_id, device);
}

/* The lean shape: the notification once per call (push_payloads), the job its device, push id and
 * the payload's id. */
static void lean_payload(char *out, size_t size, const char *push_id, const char *device, long long ref) {
    snprintf(out, size, "{\"apns_id\":\"%s\",\"device_id\":\"%s\",\"payload\":%lld}", push_id, device, ref);
}

static int push(const char *path, long n, long k, long g, int lean, int unindexed, int lease_index, int floor_row) {
    open_db(path);
    /* unindexed: a job leased at insert kept out of jobs_due (found again after a crash by a scan) */
    if (unindexed) exec("DROP INDEX jobs_due; CREATE INDEX jobs_due ON jobs (state, kind, coalesce(lease_until, run_at)) "
                        "WHERE state = 'queued' OR state = 'dead'");
    /* leaseindex: and leased jobs in an index of their own, by lease end alone */
    if (lease_index) exec("CREATE INDEX jobs_leased ON jobs (lease_until) WHERE state = 'leased'");
    /* floorrow: a durable id below which no job is leased, moved up once a completion transaction */
    sqlite3_stmt *floor_up = NULL;
    if (floor_row) {
        exec("CREATE TABLE lease_floor (one INTEGER PRIMARY KEY CHECK (one = 1), id INTEGER NOT NULL) STRICT; INSERT INTO lease_floor VALUES (1, 0)");
        floor_up = prep("UPDATE lease_floor SET id = ? WHERE one = 1");
    }
    if (lean) exec("CREATE TABLE IF NOT EXISTS push_payloads (id INTEGER PRIMARY KEY, notification_json TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT");
    sqlite3_stmt *payload_ins = !lean ? NULL : prep("INSERT INTO push_payloads (notification_json, created_at) VALUES (?, ?) RETURNING id");
    long long now = 1764770000000LL;
    long long first_id = -1;
    /* The texts made before the clock starts: a push's text is Herald's work, not SQLite's. */
    char (*texts)[256] = malloc(n * sizeof *texts);
    for (long j = 0; j < n; j++) {
        char push_id[40], device[40];
        uuid(push_id, (unsigned long)j, 1);
        uuid(device, (unsigned long)j, 2);
        if (lean) lean_payload(texts[j], sizeof texts[j], push_id, device, 1 + j / k); else payload(texts[j], sizeof texts[j], push_id, device);
    }
    const char *collect = getenv("FLOOR_COLLECT");  /* enqueue, complete, or both (unset) */
    int collect_enqueue = !collect || strcmp(collect, "complete") != 0, collect_complete = !collect || strcmp(collect, "enqueue") != 0;
    double t0 = cpu_seconds();
    if (collect_enqueue) CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < n; i += k) {
        done(begin);
        if (lean) {
            sqlite3_bind_text(payload_ins, 1, "{\"body\":\"One of many pushes\",\"data\":{\"source\":\"bench\"},\"kind\":\"alert\","
                              "\"priority\":\"normal\",\"title\":\"Benchmark\"}", -1, SQLITE_STATIC);
            sqlite3_bind_int64(payload_ins, 2, now);
            if (sqlite3_step(payload_ins) != SQLITE_ROW) die("push_payloads");
            done(payload_ins);
        }
        for (long j = i; j < i + k && j < n; j++) {
            long long id = insert_job(texts[j], now);
            if (first_id < 0) first_id = id;
        }
        done(commit);
    }
    if (collect_enqueue) CALLGRIND_TOGGLE_COLLECT;
    double t1 = cpu_seconds();
    if (collect_complete) CALLGRIND_TOGGLE_COLLECT;
    /* The worker's outcomes: every completion waiting, in one transaction with one count update
     * (DeliveryWorker+Outcomes; the trace shows 98-116 a transaction at full speed). */
    for (long i = 0; i < n; i += g) {
        long m = i + g < n ? g : n - i;
        done(begin);
        for (long j = i; j < i + m; j++) complete_job(first_id + j);
        if (floor_up) { sqlite3_bind_int64(floor_up, 1, first_id + i + m); done(floor_up); }
        sqlite3_bind_int64(counts, 1, m);
        done(counts);
        done(commit);
    }
    if (collect_complete) CALLGRIND_TOGGLE_COLLECT;
    double t2 = cpu_seconds();
    printf("push%s%s%s%s n=%ld k=%ld g=%ld: enqueue %.2f us/push, completion %.2f us/push, total %.2f us/push CPU\n",
           lean ? " lean" : "", unindexed ? " unindexed" : "", lease_index ? " leaseindex" : "", floor_row ? " floorrow" : "", n, k, g, (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, (t2 - t0) / n * 1e6);
    return 0;
}


/* A notification with one iOS device: its writer statements as a run of chokepoint.py traced them
 * (README; Herald's INSERT names no `cursor`, bound NULL here but for `inline`): the store unit's row; the plan unit's cursor update, leased job and `queued` delivery
 * record; the outcome unit's completion and `sent` record. G notifications a transaction, each
 * unit kind in a savepoint, the completions one group behind (a job ends after its commit). */
static int notify(const char *path, long n, long g, const char *shape) {
    int lean = strstr(shape, "lean") != NULL, no_queued = strstr(shape, "noqueued") != NULL, inline_plan = strstr(shape, "inline") != NULL;
    open_db(path);
    sqlite3_stmt *store = prep("INSERT INTO notifications (id, app, user_id, kind, scope, title_json, body_json, args_json, data_json, "
        "collapse_key, thread_id, priority, expires_at, in_inbox, plan_id, plan_json, created_at, timed, plan_claimed_by, plan_lease_until, cursor) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
        "?18 AND (?15 IS NULL OR (SELECT created_at FROM notification_plans WHERE id = ?15) IS ?17), ?19, ?20, ?21)");
    sqlite3_stmt *planned = prep("UPDATE notifications SET cursor = ?, plan_json = NULL, plan_claimed_by = NULL, plan_lease_until = NULL "
                                 "WHERE seq = ? AND plan_claimed_by = ?");
    sqlite3_stmt *record = prep("INSERT INTO deliveries (notification_id, user_id, device_id, connection_id, session_id, outcome, "
                                "provider_message_id, job_id, delivery_id, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const char *device = "4614a271-2291-4240-9af5-306d7f253e9a", *plan_owner = "9a238a1a";
    long long now = 1796318076110LL;
    char (*ids)[32] = malloc(n * sizeof *ids), (*jobs)[512] = malloc(n * sizeof *jobs), (*push_ids)[40] = malloc(n * sizeof *push_ids);
    char (*cursors)[32] = malloc(n * sizeof *cursors);
    long long *seqs = malloc(n * sizeof *seqs), *job_ids = malloc(n * sizeof *job_ids);
    for (long i = 0; i < n; i++) {
        /* Notifier.newID's shape: the prefix, the creation ms (ten a ms here, 10,000/s) in
         * sortable characters, then 11 random ones: ids grow with time, random within a ms. */
        unsigned long ms = (unsigned long)(now / 1000) * 1000 + (unsigned long)i / 10, r = (unsigned long)i * 11400714819323198485ul;
        char *o = ids[i] + snprintf(ids[i], sizeof ids[i], "ntf_");
        for (int c = 8; c >= 0; c--) o[c] = "0123456789abcdefghjkmnpqrstvwxyz"[(ms >> (5 * (8 - c))) & 31];
        for (int c = 9; c < 20; c++, r >>= 5) o[c] = "0123456789abcdefghjkmnpqrstvwxyz"[r & 31];
        o[20] = 0;
        uuid(push_ids[i], (unsigned long)i, 3);
        snprintf(cursors[i], sizeof cursors[i], "%s-%ld", plan_owner, i + 1);
        if (lean)  /* the job names its notification, whose row holds the text */
            snprintf(jobs[i], sizeof jobs[i], "{\"apns_id\":\"%s\",\"device_id\":\"%s\",\"origin\":{\"notification_id\":\"%s\","
                     "\"session_id\":\"s0\",\"user_id\":\"r0\"}}", push_ids[i], device, ids[i]);
        else snprintf(jobs[i], sizeof jobs[i], "{\"apns_id\":\"%s\",\"device_id\":\"%s\",\"notification\":{\"body\":\"A notification through "
                 "the choke point\",\"data\":{\"kind\":\"bench.created\",\"notification_id\":\"%s\",\"source\":\"bench\"},\"kind\":\"alert\","
                 "\"priority\":\"normal\",\"title\":\"Benchmark\"},\"origin\":{\"notification_id\":\"%s\",\"session_id\":\"s0\",\"user_id\":\"r0\"}}",
                 push_ids[i], device, ids[i], ids[i]);
    }
    const char *plan = "{\"arguments\":{},\"body\":{\"*\":\"A notification through the choke point\"},\"data\":{\"source\":\"bench\"},"
                       "\"kind\":\"bench.created\",\"policy\":\"auto\",\"priority\":\"normal\",\"push_type\":\"alert\",\"recipients\":[\"r0\"],"
                       "\"title\":{\"*\":\"Benchmark\"}}";
    double t0 = cpu_seconds();
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < n + g; i += g) {
        long end = i + g < n ? i + g : n;
        done(begin);
        if (i < n) {
            done(save);
            for (long j = i; j < end; j++) {
                sqlite3_bind_text(store, 1, ids[j], -1, SQLITE_STATIC);
                sqlite3_bind_text(store, 2, "default", -1, SQLITE_STATIC);
                sqlite3_bind_text(store, 3, "r0", -1, SQLITE_STATIC);
                sqlite3_bind_text(store, 4, "bench.created", -1, SQLITE_STATIC);
                sqlite3_bind_text(store, 6, "{\"*\":\"Benchmark\"}", -1, SQLITE_STATIC);
                sqlite3_bind_text(store, 7, "{\"*\":\"A notification through the choke point\"}", -1, SQLITE_STATIC);
                sqlite3_bind_text(store, 9, "{\"source\":\"bench\"}", -1, SQLITE_STATIC);
                sqlite3_bind_text(store, 12, "normal", -1, SQLITE_STATIC);
                sqlite3_bind_int64(store, 14, 1);
                if (!inline_plan) sqlite3_bind_text(store, 16, plan, -1, SQLITE_STATIC);
                sqlite3_bind_int64(store, 17, now);
                sqlite3_bind_int64(store, 18, 1);
                if (inline_plan) sqlite3_bind_text(store, 21, cursors[j], -1, SQLITE_STATIC);
                if (!inline_plan) {
                    sqlite3_bind_text(store, 19, plan_owner, -1, SQLITE_STATIC);
                    sqlite3_bind_int64(store, 20, now + 30000);
                }
                done(store);
                seqs[j] = sqlite3_last_insert_rowid(db);
            }
            done(release);
            done(save);
            for (long j = i; j < end; j++) {
                if (!inline_plan) {
                    sqlite3_bind_text(planned, 1, cursors[j], -1, SQLITE_STATIC);
                    sqlite3_bind_int64(planned, 2, seqs[j]);
                    sqlite3_bind_text(planned, 3, plan_owner, -1, SQLITE_STATIC);
                    done(planned);
                    if (sqlite3_changes(db) != 1) die("plan fenced out");
                }
                job_ids[j] = insert_job(jobs[j], now);
                if (no_queued) continue;
                sqlite3_bind_text(record, 1, ids[j], -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 2, "r0", -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 3, device, -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 5, "s0", -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 6, "queued", -1, SQLITE_STATIC);
                sqlite3_bind_int64(record, 8, job_ids[j]);
                sqlite3_bind_int64(record, 11, now);
                done(record);
            }
            done(release);
        }
        if (i >= g) {
            done(save);
            for (long j = i - g; j < i && j < n; j++) {
                complete_job(job_ids[j]);
                sqlite3_bind_text(record, 1, ids[j], -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 2, "r0", -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 3, device, -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 5, "s0", -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 6, "sent", -1, SQLITE_STATIC);
                sqlite3_bind_text(record, 7, push_ids[j], -1, SQLITE_STATIC);
                sqlite3_bind_int64(record, 8, job_ids[j]);
                sqlite3_bind_int64(record, 11, now);
                done(record);
            }
            done(release);
            sqlite3_bind_int64(counts, 1, (i < n ? g : n - (i - g)));
            done(counts);
        }
        done(commit);
    }
    CALLGRIND_TOGGLE_COLLECT;
    double t1 = cpu_seconds();
    printf("notify %s n=%ld g=%ld: %.2f us/notification CPU\n", shape, n, g, (t1 - t0) / n * 1e6);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && (atol(argv[3]) < 1 || atol(argv[4]) < 1 || (strcmp(argv[1], "push") == 0 && (argc < 6 || atol(argv[5]) < 1)))) {
        fprintf(stderr, "N, K and G must be at least 1\n");
        return 2;
    }
    if (argc >= 6 && strcmp(argv[1], "push") == 0)
        return push(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]), argc > 6 && strstr(argv[6], "lean") != NULL,
                    argc > 6 && strstr(argv[6], "unindexed") != NULL, argc > 6 && strstr(argv[6], "leaseindex") != NULL,
                    argc > 6 && strstr(argv[6], "floorrow") != NULL);
    if (argc >= 5 && strcmp(argv[1], "notify") == 0) return notify(argv[2], atol(argv[3]), atol(argv[4]), argc > 5 ? argv[5] : "base");
    fprintf(stderr, "usage: floor push DB N K G [lean] | floor notify DB N G\n");
    return 2;
}
