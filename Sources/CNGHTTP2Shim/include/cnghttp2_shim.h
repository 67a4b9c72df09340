#ifndef HERALD_CNGHTTP2_SHIM_H
#define HERALD_CNGHTTP2_SHIM_H
// libnghttp2 opened on first use (CDynamicLoad): only the native push client (APNs, FCM) frames
// HTTP/2 with it, so a process without push maps it not at all (issue 17, idle footprint).

#pragma clang assume_nonnull begin

/// Opens libnghttp2.so.14 if it is not open yet. Returns NULL when the functions Herald calls are
/// ready, else the reason (static text naming the Debian package).
const char *_Nullable herald_nghttp2_load(void);

#pragma clang assume_nonnull end

#endif
