#ifndef HERALD_COPENSSL_SHIM_H
#define HERALD_COPENSSL_SHIM_H
// libssl and libcrypto opened on first use (CDynamicLoad): the embedded default maps neither at
// start, nor for its hashes (`Digests` links OpenSSL's low-level digests from libcrypto.a). Push,
// public verification keys, stored apps' secrets and dev mode's ES256 app open them.

#pragma clang assume_nonnull begin

/// Opens libssl.so.3 (and libcrypto.so.3 with it) if it is not open yet. Returns NULL when the
/// functions Herald calls are ready, else the reason (static text naming the Debian package).
const char *_Nullable herald_openssl_load(void);

#pragma clang assume_nonnull end

#endif
