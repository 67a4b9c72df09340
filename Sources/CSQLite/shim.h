#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0), which Swift cannot call (variadic): no
/// page-cache slab preallocated per connection, each cache takes pages as it needs them. Works only
/// before sqlite3_initialize (SQLITE_MISUSE after).
static inline int herald_sqlite3_config_no_initial_page_cache(void) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}

/// sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0): SQLite keeps no process-wide count of the memory it
/// holds, so its allocations and frees take no global mutex (Debian builds it with
/// SQLITE_OMIT_LOOKASIDE: every one is a malloc). sqlite3_memory_used() and the soft heap limit
/// then report and enforce nothing; Herald uses neither. Before sqlite3_initialize, as above.
static inline int herald_sqlite3_config_no_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
