#ifndef HERALD_COPENSSL_SHIM_H
#define HERALD_COPENSSL_SHIM_H
// libssl and libcrypto opened on first use (CDynamicLoad): the embedded default maps neither at
// start. The first hash (`Digests`: an HS256 token check, a server call, a WebSocket handshake)
// opens them, as do push, public verification keys, stored apps' secrets and Redis.

#pragma clang assume_nonnull begin

/// Opens libssl.so.3 (and libcrypto.so.3 with it) if it is not open yet. Returns NULL when the
/// functions Herald calls are ready, else the reason (static text naming the Debian package).
const char *_Nullable herald_openssl_load(void);

#pragma clang assume_nonnull end

#endif
