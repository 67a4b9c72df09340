// The OpenSSL functions Herald calls (libssl and libcrypto), forwarded to libssl.so.3 opened on
// first use: at its load, libcrypto alone is 1.4 MB of resident pages (its relocated tables and
// the code around them), and a process without push, public verification keys or WebSockets
// never calls OpenSSL (issue 17, idle footprint). The list is every OpenSSL symbol the release
// binary imported when it was linked (`nm -D --undefined-only`), with the headers' prototypes:
// a function Herald starts calling without adding it here has no definition, so the link fails.
// Not here: the low-level SHA-256 and SHA-1 and CRYPTO_memcmp, which are linked into the binary from
// libcrypto.a (the `Digests` target says why) and so need no library at run time.
#include "copenssl_shim.h"

#include <herald_dynload.h>
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
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define OPENSSL_FUNCTIONS(F, V) \
    F(size_t, BIO_ctrl_pending, (BIO *b), (b)) \
    F(int, BIO_free, (BIO *a), (a)) \
    F(BIO *, BIO_new, (const BIO_METHOD *type), (type)) \
    F(BIO *, BIO_new_mem_buf, (const void *buf, int len), (buf, len)) \
    F(int, BIO_read, (BIO *b, void *data, int dlen), (b, data, dlen)) \
    F(const BIO_METHOD *, BIO_s_mem, (void), ()) \
    F(BIGNUM *, BN_bin2bn, (const unsigned char *s, int len, BIGNUM *ret), (s, len, ret)) \
    F(int, BN_bn2binpad, (const BIGNUM *a, unsigned char *to, int tolen), (a, to, tolen)) \
    V(BN_clear_free, (BIGNUM *a), (a)) \
    V(BN_free, (BIGNUM *a), (a)) \
    V(CRYPTO_free, (void *ptr, const char *file, int line), (ptr, file, line)) \
    V(ECDSA_SIG_free, (ECDSA_SIG *sig), (sig)) \
    V(ECDSA_SIG_get0, (const ECDSA_SIG *sig, const BIGNUM **pr, const BIGNUM **ps), (sig, pr, ps)) \
    F(ECDSA_SIG *, ECDSA_SIG_new, (void), ()) \
    F(int, ECDSA_SIG_set0, (ECDSA_SIG *sig, BIGNUM *r, BIGNUM *s), (sig, r, s)) \
    V(ERR_clear_error, (void), ()) \
    V(ERR_error_string_n, (unsigned long e, char *buf, size_t len), (e, buf, len)) \
    F(unsigned long, ERR_get_error, (void), ()) \
    F(unsigned long, ERR_peek_error, (void), ()) \
    F(unsigned long, ERR_peek_last_error, (void), ()) \
    F(const char *, ERR_reason_error_string, (unsigned long e), (e)) \
    F(int, EVP_CIPHER_CTX_ctrl, (EVP_CIPHER_CTX *ctx, int type, int arg, void *ptr), (ctx, type, arg, ptr)) \
    V(EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX *c), (c)) \
    F(EVP_CIPHER_CTX *, EVP_CIPHER_CTX_new, (void), ()) \
    F(int, EVP_DecryptFinal_ex, (EVP_CIPHER_CTX *ctx, unsigned char *outm, int *outl), (ctx, outm, outl)) \
    F(int, EVP_DecryptInit_ex, (EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key, const unsigned char *iv), (ctx, cipher, impl, key, iv)) \
    F(int, EVP_DecryptUpdate, (EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl, const unsigned char *in, int inl), (ctx, out, outl, in, inl)) \
    F(int, EVP_Digest, (const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl), (data, count, md, size, type, impl)) \
    F(int, EVP_DigestSign, (EVP_MD_CTX *ctx, unsigned char *sigret, size_t *siglen, const unsigned char *tbs, size_t tbslen), (ctx, sigret, siglen, tbs, tbslen)) \
    F(int, EVP_DigestSignInit, (EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *pkey), (ctx, pctx, type, e, pkey)) \
    F(int, EVP_DigestVerify, (EVP_MD_CTX *ctx, const unsigned char *sigret, size_t siglen, const unsigned char *tbs, size_t tbslen), (ctx, sigret, siglen, tbs, tbslen)) \
    F(int, EVP_DigestVerifyInit, (EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *pkey), (ctx, pctx, type, e, pkey)) \
    F(int, EVP_EncodeBlock, (unsigned char *t, const unsigned char *f, int n), (t, f, n)) \
    F(int, EVP_EncryptFinal_ex, (EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl), (ctx, out, outl)) \
    F(int, EVP_EncryptInit_ex, (EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key, const unsigned char *iv), (ctx, cipher, impl, key, iv)) \
    F(int, EVP_EncryptUpdate, (EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl, const unsigned char *in, int inl), (ctx, out, outl, in, inl)) \
    V(EVP_MD_CTX_free, (EVP_MD_CTX *ctx), (ctx)) \
    F(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ()) \
    V(EVP_PKEY_CTX_free, (EVP_PKEY_CTX *ctx), (ctx)) \
    F(EVP_PKEY_CTX *, EVP_PKEY_CTX_new, (EVP_PKEY *pkey, ENGINE *e), (pkey, e)) \
    F(EVP_PKEY_CTX *, EVP_PKEY_CTX_new_id, (int id, ENGINE *e), (id, e)) \
    F(int, EVP_PKEY_CTX_set_ec_paramgen_curve_nid, (EVP_PKEY_CTX *ctx, int nid), (ctx, nid)) \
    F(int, EVP_PKEY_derive, (EVP_PKEY_CTX *ctx, unsigned char *key, size_t *keylen), (ctx, key, keylen)) \
    F(int, EVP_PKEY_derive_init, (EVP_PKEY_CTX *ctx), (ctx)) \
    F(int, EVP_PKEY_derive_set_peer, (EVP_PKEY_CTX *ctx, EVP_PKEY *peer), (ctx, peer)) \
    V(EVP_PKEY_free, (EVP_PKEY *pkey), (pkey)) \
    F(int, EVP_PKEY_get_base_id, (const EVP_PKEY *pkey), (pkey)) \
    F(int, EVP_PKEY_get_bits, (const EVP_PKEY *pkey), (pkey)) \
    F(int, EVP_PKEY_get_bn_param, (const EVP_PKEY *pkey, const char *key_name, BIGNUM **bn), (pkey, key_name, bn)) \
    F(int, EVP_PKEY_get_group_name, (const EVP_PKEY *pkey, char *name, size_t name_sz, size_t *gname_len), (pkey, name, name_sz, gname_len)) \
    F(int, EVP_PKEY_get_size, (const EVP_PKEY *pkey), (pkey)) \
    F(int, EVP_PKEY_keygen, (EVP_PKEY_CTX *ctx, EVP_PKEY **ppkey), (ctx, ppkey)) \
    F(int, EVP_PKEY_keygen_init, (EVP_PKEY_CTX *ctx), (ctx)) \
    F(int, EVP_PKEY_private_check, (EVP_PKEY_CTX *ctx), (ctx)) \
    F(const EVP_CIPHER *, EVP_aes_128_gcm, (void), ()) \
    F(const EVP_CIPHER *, EVP_aes_256_gcm, (void), ()) \
    F(const EVP_MD *, EVP_sha1, (void), ()) \
    F(const EVP_MD *, EVP_sha256, (void), ()) \
    F(unsigned char *, HMAC, (const EVP_MD *evp_md, const void *key, int key_len, const unsigned char *data, size_t data_len, unsigned char *md, unsigned int *md_len), (evp_md, key, key_len, data, data_len, md, md_len)) \
    F(const char *, OBJ_nid2sn, (int n), (n)) \
    F(int, OBJ_sn2nid, (const char *s), (s)) \
    F(EVP_PKEY *, PEM_read_bio_PUBKEY, (BIO *out, EVP_PKEY **x, pem_password_cb *cb, void *u), (out, x, cb, u)) \
    F(EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO *out, EVP_PKEY **x, pem_password_cb *cb, void *u), (out, x, cb, u)) \
    F(int, PEM_write_bio_PUBKEY, (BIO *out, const EVP_PKEY *x), (out, x)) \
    F(int, PEM_write_bio_PrivateKey, (BIO *out, const EVP_PKEY *x, const EVP_CIPHER *enc, const unsigned char *kstr, int klen, pem_password_cb *cb, void *u), (out, x, enc, kstr, klen, cb, u)) \
    F(int, RAND_bytes, (unsigned char *buf, int num), (buf, num)) \
    F(long, SSL_CTX_ctrl, (SSL_CTX *ctx, int cmd, long larg, void *parg), (ctx, cmd, larg, parg)) \
    V(SSL_CTX_free, (SSL_CTX *ctx), (ctx)) \
    F(int, SSL_CTX_load_verify_locations, (SSL_CTX *ctx, const char *CAfile, const char *CApath), (ctx, CAfile, CApath)) \
    F(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *meth), (meth)) \
    F(int, SSL_CTX_set_alpn_protos, (SSL_CTX *ctx, const unsigned char *protos, unsigned int protos_len), (ctx, protos, protos_len)) \
    F(int, SSL_CTX_set_default_verify_paths, (SSL_CTX *ctx), (ctx)) \
    V(SSL_CTX_set_verify, (SSL_CTX *ctx, int mode, SSL_verify_cb callback), (ctx, mode, callback)) \
    F(long, SSL_ctrl, (SSL *ssl, int cmd, long larg, void *parg), (ssl, cmd, larg, parg)) \
    F(int, SSL_do_handshake, (SSL *s), (s)) \
    V(SSL_free, (SSL *ssl), (ssl)) \
    V(SSL_get0_alpn_selected, (const SSL *ssl, const unsigned char **data, unsigned int *len), (ssl, data, len)) \
    F(X509_VERIFY_PARAM *, SSL_get0_param, (SSL *ssl), (ssl)) \
    F(int, SSL_get_error, (const SSL *s, int ret_code), (s, ret_code)) \
    F(long, SSL_get_verify_result, (const SSL *ssl), (ssl)) \
    F(SSL *, SSL_new, (SSL_CTX *ctx), (ctx)) \
    F(int, SSL_read, (SSL *ssl, void *buf, int num), (ssl, buf, num)) \
    V(SSL_set_connect_state, (SSL *s), (s)) \
    F(int, SSL_set_fd, (SSL *s, int fd), (s, fd)) \
    F(int, SSL_write, (SSL *ssl, const void *buf, int num), (ssl, buf, num)) \
    F(const SSL_METHOD *, TLS_client_method, (void), ()) \
    F(int, X509_VERIFY_PARAM_set1_host, (X509_VERIFY_PARAM *param, const char *name, size_t namelen), (param, name, namelen)) \
    F(int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM *param, const char *ipasc), (param, ipasc)) \
    V(X509_VERIFY_PARAM_set_hostflags, (X509_VERIFY_PARAM *param, unsigned int flags), (param, flags)) \
    F(const char *, X509_verify_cert_error_string, (long n), (n)) \
    F(ECDSA_SIG *, d2i_ECDSA_SIG, (ECDSA_SIG **a, const unsigned char **in, long len), (a, in, len)) \
    F(EVP_PKEY *, d2i_PUBKEY, (EVP_PKEY **a, const unsigned char **in, long len), (a, in, len)) \
    F(EVP_PKEY *, d2i_PrivateKey, (int type, EVP_PKEY **a, const unsigned char **pp, long length), (type, a, pp, length)) \
    F(int, i2d_ECDSA_SIG, (const ECDSA_SIG *a, unsigned char **out), (a, out)) \
    F(int, i2d_PUBKEY, (const EVP_PKEY *a, unsigned char **out), (a, out))

// dlsym on libssl's handle also searches its dependencies, so libcrypto's functions resolve too.
HERALD_DYN_LIBRARY(OPENSSL_FUNCTIONS, herald_openssl_load, "libssl3", "libssl.so.3")

OPENSSL_FUNCTIONS(HERALD_DYN_FORWARD, HERALD_DYN_FORWARD_V)
