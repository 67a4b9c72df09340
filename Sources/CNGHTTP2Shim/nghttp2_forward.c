// The libnghttp2 functions Herald calls (the native push client, PushHTTP/Transport/H2*.swift),
// forwarded to libnghttp2 opened on first use: linked, it was mapped at every start (100 KiB
// resident) for push alone. A function Herald starts calling without adding it here has no
// definition, so the link fails.
#include "cnghttp2_shim.h"

#include <herald_dynload.h>
#include <nghttp2/nghttp2.h>

#define NGHTTP2_FUNCTIONS(F, V) \
    F(const char *, nghttp2_http2_strerror, (uint32_t error_code), (error_code)) \
    F(const char *, nghttp2_strerror, (int lib_error_code), (lib_error_code)) \
    F(int, nghttp2_session_callbacks_new, (nghttp2_session_callbacks **callbacks_ptr), (callbacks_ptr)) \
    V(nghttp2_session_callbacks_del, (nghttp2_session_callbacks *callbacks), (callbacks)) \
    V(nghttp2_session_callbacks_set_on_data_chunk_recv_callback, \
      (nghttp2_session_callbacks *cbs, nghttp2_on_data_chunk_recv_callback callback), (cbs, callback)) \
    V(nghttp2_session_callbacks_set_on_frame_recv_callback, \
      (nghttp2_session_callbacks *cbs, nghttp2_on_frame_recv_callback callback), (cbs, callback)) \
    V(nghttp2_session_callbacks_set_on_frame_send_callback, \
      (nghttp2_session_callbacks *cbs, nghttp2_on_frame_send_callback callback), (cbs, callback)) \
    V(nghttp2_session_callbacks_set_on_header_callback, \
      (nghttp2_session_callbacks *cbs, nghttp2_on_header_callback callback), (cbs, callback)) \
    V(nghttp2_session_callbacks_set_on_stream_close_callback, \
      (nghttp2_session_callbacks *cbs, nghttp2_on_stream_close_callback callback), (cbs, callback)) \
    F(int, nghttp2_session_client_new, \
      (nghttp2_session **session_ptr, const nghttp2_session_callbacks *callbacks, void *user_data), \
      (session_ptr, callbacks, user_data)) \
    V(nghttp2_session_del, (nghttp2_session *session), (session)) \
    F(uint32_t, nghttp2_session_get_remote_settings, (nghttp2_session *session, nghttp2_settings_id id), (session, id)) \
    F(ssize_t, nghttp2_session_mem_recv, (nghttp2_session *session, const uint8_t *in, size_t inlen), (session, in, inlen)) \
    F(ssize_t, nghttp2_session_mem_send, (nghttp2_session *session, const uint8_t **data_ptr), (session, data_ptr)) \
    F(int, nghttp2_session_terminate_session, (nghttp2_session *session, uint32_t error_code), (session, error_code)) \
    F(void *, nghttp2_session_get_stream_user_data, (nghttp2_session *session, int32_t stream_id), (session, stream_id)) \
    F(int, nghttp2_session_want_read, (nghttp2_session *session), (session)) \
    F(int, nghttp2_session_want_write, (nghttp2_session *session), (session)) \
    F(int32_t, nghttp2_submit_request, \
      (nghttp2_session *session, const nghttp2_priority_spec *pri_spec, const nghttp2_nv *nva, size_t nvlen, \
       const nghttp2_data_provider *data_prd, void *stream_user_data), \
      (session, pri_spec, nva, nvlen, data_prd, stream_user_data)) \
    F(int, nghttp2_submit_ping, (nghttp2_session *session, uint8_t flags, const uint8_t *opaque_data), \
      (session, flags, opaque_data)) \
    F(int, nghttp2_submit_rst_stream, (nghttp2_session *session, uint8_t flags, int32_t stream_id, uint32_t error_code), \
      (session, flags, stream_id, error_code)) \
    F(int, nghttp2_submit_settings, (nghttp2_session *session, uint8_t flags, const nghttp2_settings_entry *iv, size_t niv), \
      (session, flags, iv, niv))

HERALD_DYN_LIBRARY(NGHTTP2_FUNCTIONS, herald_nghttp2_load, "libnghttp2-14", "libnghttp2.so.14")

NGHTTP2_FUNCTIONS(HERALD_DYN_FORWARD, HERALD_DYN_FORWARD_V)
