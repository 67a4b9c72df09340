#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0), which Swift cannot call (variadic): no
/// page-cache slab preallocated per connection, each cache takes pages as it needs them. Works only
/// before sqlite3_initialize (SQLITE_MISUSE after).
static inline int herald_sqlite3_config_no_initial_page_cache(void) {
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}
#endif
