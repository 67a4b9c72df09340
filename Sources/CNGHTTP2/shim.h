// libnghttp2 (HTTP/2 framing and HPACK) and OpenSSL's TLS API for the native push client
// (PushHTTP/Transport/NativeHTTP2Client.swift). The inline wrappers stand for OpenSSL's
// function-like macros, which Swift cannot import.
#ifndef CNGHTTP2_SHIM_H
#define CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

static inline long CNGHTTP2_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline int CNGHTTP2_SSL_CTX_set_min_proto_version_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}
// Partial writes: an SSL_write that would block keeps what it took; the caller resends only the rest.
static inline long CNGHTTP2_SSL_CTX_set_partial_write(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
static inline uint8_t CNGHTTP2_frame_type(const nghttp2_frame *frame) { return frame->hd.type; }
static inline uint8_t CNGHTTP2_frame_flags(const nghttp2_frame *frame) { return frame->hd.flags; }
static inline int32_t CNGHTTP2_frame_stream_id(const nghttp2_frame *frame) { return frame->hd.stream_id; }
static inline int32_t CNGHTTP2_goaway_last_stream_id(const nghttp2_frame *frame) { return frame->goaway.last_stream_id; }
static inline uint32_t CNGHTTP2_goaway_error_code(const nghttp2_frame *frame) { return frame->goaway.error_code; }
static inline int CNGHTTP2_headers_category(const nghttp2_frame *frame) { return (int)frame->headers.cat; }
#endif
