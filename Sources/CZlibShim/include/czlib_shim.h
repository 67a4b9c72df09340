#ifndef HERALD_CZLIB_SHIM_H
#define HERALD_CZLIB_SHIM_H
// libz opened on first use (CDynamicLoad): only Expo's gzip request bodies (PushExpo's `Gzip`)
// deflate with it, so a process without Expo push maps it not at all (issue 17, idle footprint).

#pragma clang assume_nonnull begin

/// Opens libz.so.1 if it is not open yet. Returns NULL when the functions Herald calls are ready,
/// else the reason (static text naming the Debian package).
const char *_Nullable herald_zlib_load(void);

#pragma clang assume_nonnull end

#endif
