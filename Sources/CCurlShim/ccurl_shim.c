// libcurl opened on first use (CDynamicLoad): the process maps it (and gnutls, krb5, ldap, ...)
// only once a push client or an HTTP GET needs it.
#include "ccurl_shim.h"

#include <herald_dynload.h>

#define CURL_FUNCTIONS(F, V) \
    F(CURLcode, curl_global_init, (long flags), (flags)) \
    F(curl_version_info_data *, curl_version_info, (CURLversion age), (age)) \
    F(const char *, curl_easy_strerror, (CURLcode code), (code)) \
    F(const char *, curl_multi_strerror, (CURLMcode code), (code)) \
    F(struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *data), (list, data)) \
    V(curl_slist_free_all, (struct curl_slist *list), (list)) \
    F(CURL *, curl_easy_init, (void), ()) \
    F(CURLcode, curl_easy_perform, (CURL *curl), (curl)) \
    V(curl_easy_cleanup, (CURL *curl), (curl)) \
    V(curl_easy_reset, (CURL *curl), (curl)) \
    F(CURLM *, curl_multi_init, (void), ()) \
    F(CURLMcode, curl_multi_add_handle, (CURLM *multi_handle, CURL *curl_handle), (multi_handle, curl_handle)) \
    F(CURLMcode, curl_multi_remove_handle, (CURLM *multi_handle, CURL *curl_handle), (multi_handle, curl_handle)) \
    F(CURLMcode, curl_multi_poll, (CURLM *multi_handle, struct curl_waitfd extra_fds[], unsigned int extra_nfds, \
                                   int timeout_ms, int *ret), \
      (multi_handle, extra_fds, extra_nfds, timeout_ms, ret)) \
    F(CURLMcode, curl_multi_wakeup, (CURLM *multi_handle), (multi_handle)) \
    F(CURLMcode, curl_multi_perform, (CURLM *multi_handle, int *running_handles), (multi_handle, running_handles)) \
    F(CURLMcode, curl_multi_socket_action, (CURLM *multi_handle, curl_socket_t s, int ev_bitmask, int *running_handles), \
      (multi_handle, s, ev_bitmask, running_handles)) \
    F(CURLMcode, curl_multi_cleanup, (CURLM *multi_handle), (multi_handle)) \
    F(CURLMsg *, curl_multi_info_read, (CURLM *multi_handle, int *msgs_in_queue), (multi_handle, msgs_in_queue))

// The variadic three have no forwarder of their own name (a variadic call cannot be forwarded);
// the typed wrappers below, which are what Swift calls, use their slots directly.
#define CURL_VARIADIC(F, V) \
    F(CURLcode, curl_easy_setopt, , ) \
    F(CURLcode, curl_easy_getinfo, , ) \
    F(CURLMcode, curl_multi_setopt, , )

#define CURL_ALL(F, V) CURL_FUNCTIONS(F, V) CURL_VARIADIC(F, V)
HERALD_DYN_LIBRARY(CURL_ALL, herald_curl_load, "libcurl4", "libcurl.so.4")

CURL_FUNCTIONS(HERALD_DYN_FORWARD, HERALD_DYN_FORWARD_V)

typedef CURLcode (*easy_option_function)(CURL *, CURLoption, ...);
typedef CURLcode (*easy_info_function)(CURL *, CURLINFO, ...);
typedef CURLMcode (*multi_option_function)(CURLM *, CURLMoption, ...);
#define EASY_SETOPT ((easy_option_function) herald_library_function(&herald_dyn_library, HERALD_DYN_SLOT_curl_easy_setopt))
#define EASY_GETINFO ((easy_info_function) herald_library_function(&herald_dyn_library, HERALD_DYN_SLOT_curl_easy_getinfo))
#define MULTI_SETOPT ((multi_option_function) herald_library_function(&herald_dyn_library, HERALD_DYN_SLOT_curl_multi_setopt))

CURLcode  ccurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return EASY_SETOPT(h, o, v); }
CURLcode  ccurl_easy_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return EASY_SETOPT(h, o, v); }
CURLcode  ccurl_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return EASY_SETOPT(h, o, v); }
CURLcode  ccurl_easy_setopt_str(CURL *h, CURLoption o, const char *v) { return EASY_SETOPT(h, o, v); }
CURLcode  ccurl_easy_setopt_data_cb(CURL *h, CURLoption o, ccurl_data_cb cb) { return EASY_SETOPT(h, o, cb); }
CURLcode  ccurl_easy_setopt_opensocket_cb(CURL *h, curl_opensocket_callback cb) { return EASY_SETOPT(h, CURLOPT_OPENSOCKETFUNCTION, cb); }
CURLcode  ccurl_easy_setopt_prereq_cb(CURL *h, curl_prereq_callback cb) { return EASY_SETOPT(h, CURLOPT_PREREQFUNCTION, cb); }
CURLcode  ccurl_easy_getinfo_long(CURL *h, CURLINFO i, long *out) { return EASY_GETINFO(h, i, out); }
CURLcode  ccurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **out) { return EASY_GETINFO(h, i, out); }
CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return MULTI_SETOPT(m, o, v); }
