/* LD_PRELOAD shim: counts each SQL text stepped (sqlite3_step's first step of a statement run,
 * i.e. after a reset or its end; sqlite3_exec's statements too, as Debian's library steps them
 * through its exported sqlite3_step), then writes the counts to
 * $SQLTRACE_OUT.<pid> at exit. Used to read which statements a push / a notification runs in a real
 * Herald (Benchmarks/floor/README.md). Not thread-safe beyond a mutex; a measuring aid only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 4096
struct slot { char *sql; unsigned long runs, steps; };
static struct slot table[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int (*real_step)(sqlite3_stmt *);

/* Every run in order, as slot numbers (SQLTRACE_OUT.<pid>.seq, one byte pair each), so a window
 * (e.g. from the first push job on) can be cut out of a whole run. */
static unsigned short *seq;
static size_t seq_len, seq_cap;

static unsigned long hash(const char *s) { unsigned long h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; return h; }

static void count(const char *sql, int first) {
    if (!sql) return;
    pthread_mutex_lock(&lock);
    unsigned long i = hash(sql) % SLOTS;
    while (table[i].sql && strcmp(table[i].sql, sql) != 0) i = (i + 1) % SLOTS;
    if (!table[i].sql) table[i].sql = strdup(sql);
    table[i].steps++;
    if (first) {
        table[i].runs++;
        if (seq_len == seq_cap) { seq_cap = seq_cap ? 2 * seq_cap : 1 << 20; seq = realloc(seq, seq_cap * sizeof *seq); }
        seq[seq_len++] = (unsigned short)i;
    }
    pthread_mutex_unlock(&lock);
}

int sqlite3_step(sqlite3_stmt *s) {
    if (!real_step) real_step = dlsym(RTLD_NEXT, "sqlite3_step");
    /* sqlite3_stmt_busy is 0 before the first step of a run (after prepare or reset). */
    count(sqlite3_sql(s), !sqlite3_stmt_busy(s));
    return real_step(s);
}


__attribute__((destructor)) static void dump(void) {
    const char *prefix = getenv("SQLTRACE_OUT");
    int any = 0;
    for (int i = 0; i < SLOTS; i++) any |= table[i].sql != NULL;
    if (!any || !prefix) return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", prefix, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (int i = 0; i < SLOTS; i++)
        if (table[i].sql) {
            fprintf(f, "%d\t%lu\t%lu\t", i, table[i].runs, table[i].steps);
            for (const char *c = table[i].sql; *c; c++) fputc(*c == '\n' ? ' ' : *c, f);
            fputc('\n', f);
        }
    fclose(f);
    snprintf(path, sizeof path, "%s.%d.seq", prefix, (int)getpid());
    if ((f = fopen(path, "w"))) { fwrite(seq, sizeof *seq, seq_len, f); fclose(f); }
}
