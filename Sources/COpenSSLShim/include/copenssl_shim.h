#ifndef HERALD_COPENSSL_SHIM_H
#define HERALD_COPENSSL_SHIM_H
// libssl and libcrypto opened on first use (CDynamicLoad): the embedded default (HS256 tokens,
// a server key, SSE streams; SHA-256 and HMAC in Swift) maps neither. Push, public verification
// keys, stored apps' secrets, Redis and WebSockets open them on their first OpenSSL call.

#pragma clang assume_nonnull begin

/// Opens libssl.so.3 (and libcrypto.so.3 with it) if it is not open yet. Returns NULL when the
/// functions Herald calls are ready, else the reason (static text naming the Debian package).
const char *_Nullable herald_openssl_load(void);

#pragma clang assume_nonnull end

#endif
