#ifndef HERALD_CCURL_SHIM_INCLUDE_H
#define HERALD_CCURL_SHIM_INCLUDE_H
// Non-variadic one-line wrappers around libcurl's variadic setopt/getinfo, which Swift cannot call,
// and the loader of libcurl itself (ccurl_shim.c).
#include <curl/curl.h>

#pragma clang assume_nonnull begin

typedef size_t (*ccurl_data_cb)(char *ptr, size_t size, size_t nmemb, void *_Nullable userdata);

CURLcode  ccurl_easy_setopt_long(CURL *h, CURLoption opt, long v);
CURLcode  ccurl_easy_setopt_off_t(CURL *h, CURLoption opt, curl_off_t v);
CURLcode  ccurl_easy_setopt_ptr(CURL *h, CURLoption opt, void *_Nullable v);
CURLcode  ccurl_easy_setopt_str(CURL *h, CURLoption opt, const char *_Nullable v);
CURLcode  ccurl_easy_setopt_data_cb(CURL *h, CURLoption opt, ccurl_data_cb _Nullable cb);
/// CURLOPT_OPENSOCKETFUNCTION and CURLOPT_PREREQFUNCTION (libcurl >= 7.80): the checks of a
/// request that may reach only public addresses (PushHTTPRequest.publicAddressesOnly).
CURLcode  ccurl_easy_setopt_opensocket_cb(CURL *h, curl_opensocket_callback _Nullable cb);
CURLcode  ccurl_easy_setopt_prereq_cb(CURL *h, curl_prereq_callback _Nullable cb);
CURLcode  ccurl_easy_getinfo_long(CURL *h, CURLINFO info, long *out);
CURLcode  ccurl_easy_getinfo_ptr(CURL *h, CURLINFO info, void *_Nullable *_Nonnull out);
CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption opt, long v);

/// Opens libcurl.so.4 if it is not open yet (CDynamicLoad; the embedded default without push never
/// does). Returns NULL when libcurl's functions are ready, else the reason (static text).
const char *_Nullable herald_curl_load(void);

#pragma clang assume_nonnull end

#endif
