#ifndef HERALD_CHIREDIS_SHIM_H
#define HERALD_CHIREDIS_SHIM_H
// libhiredis opened on first use (CDynamicLoad): the process maps it only with HERALD_BROKER=redis://.

#pragma clang assume_nonnull begin

/// Opens libhiredis (the soname of the headers it was built with) if it is not open yet. Returns
/// NULL when its functions are ready, else the reason (static text).
const char *_Nullable herald_hiredis_load(void);

#pragma clang assume_nonnull end

#endif
