#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
// OpenSSL's low-level SHA-256 and SHA-1 (deprecated since 3.0, present in every 3.x) for the
// `Digests` target: unlike `SHA256()`, `HMAC()` and `EVP_Digest`, they fetch nothing from the
// default provider, whose first fetch costs 2.2 MB resident (issue 17). They, and
// `CRYPTO_memcmp`, are linked into the binary from libcrypto.a (seven small objects, ~45 KB of
// code; `Digests` links it), so a hash maps no libcrypto.so (1.8 MB resident with libssl, once).
// Swift calls these wrappers, so the deprecation is silenced here and nowhere else. Each returns
// 1 (the functions cannot fail: no allocation, no provider).
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline int herald_SHA256_Init(SHA256_CTX *c) { return SHA256_Init(c); }
static inline int herald_SHA256_Update(SHA256_CTX *c, const void *data, size_t len) { return SHA256_Update(c, data, len); }
static inline int herald_SHA256_Final(unsigned char *md, SHA256_CTX *c) { return SHA256_Final(md, c); }
static inline int herald_SHA1_Init(SHA_CTX *c) { return SHA1_Init(c); }
static inline int herald_SHA1_Update(SHA_CTX *c, const void *data, size_t len) { return SHA1_Update(c, data, len); }
static inline int herald_SHA1_Final(unsigned char *md, SHA_CTX *c) { return SHA1_Final(md, c); }
#pragma clang diagnostic pop
#endif
