#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0), which Swift cannot call (variadic): no
/// page-cache slab preallocated per connection, each cache takes pages as it needs them. Works only
/// before sqlite3_initialize (SQLITE_MISUSE after).
static inline int herald_sqlite3_config_no_initial_page_cache(void) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}

/// sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0): SQLite's own allocation statistics off. With them
/// on (the default), every sqlite3_malloc and sqlite3_free takes a process-wide mutex and updates
/// counters that only sqlite3_memory_used, sqlite3_status and the soft heap limit read, none of
/// which Herald uses. Works only before sqlite3_initialize (SQLITE_MISUSE after).
static inline int herald_sqlite3_config_no_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
