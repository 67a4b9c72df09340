#ifndef HERALD_CPOSTGRES_SHIM_H
#define HERALD_CPOSTGRES_SHIM_H
// libpq opened on first use (CDynamicLoad): the process maps it only with HERALD_DATABASE=postgres://.

#pragma clang assume_nonnull begin

/// Opens libpq.so.5 if it is not open yet. Returns NULL when libpq's functions are ready, else
/// the reason (static text, e.g. the soname and "cannot open shared object file").
const char *_Nullable herald_pq_load(void);

#pragma clang assume_nonnull end

#endif
