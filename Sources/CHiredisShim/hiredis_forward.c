// The hiredis functions Herald calls, forwarded to libhiredis opened on first use.
#include "chiredis_shim.h"

#include <herald_dynload.h>
#include <hiredis/hiredis.h>

#define HIREDIS_FUNCTIONS(F, V) \
    F(redisContext *, redisConnectWithTimeout, (const char *ip, int port, const struct timeval tv), (ip, port, tv)) \
    F(int, redisSetTimeout, (redisContext *c, const struct timeval tv), (c, tv)) \
    F(int, redisEnableKeepAlive, (redisContext *c), (c)) \
    V(redisFree, (redisContext *c), (c)) \
    F(int, redisBufferRead, (redisContext *c), (c)) \
    F(int, redisBufferWrite, (redisContext *c, int *done), (c, done)) \
    F(int, redisGetReply, (redisContext *c, void **reply), (c, reply)) \
    F(int, redisGetReplyFromReader, (redisContext *c, void **reply), (c, reply)) \
    F(int, redisAppendCommandArgv, (redisContext *c, int argc, const char **argv, const size_t *argvlen), \
      (c, argc, argv, argvlen)) \
    V(freeReplyObject, (void *reply), (reply))

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)

// hiredis 0.x names its soname major.minor (Debian 12: libhiredis.so.0.14), 1.x major.minor.patch.
#if HIREDIS_MAJOR == 0
#define HIREDIS_SONAME "libhiredis.so." STRINGIFY(HIREDIS_MAJOR) "." STRINGIFY(HIREDIS_MINOR)
#else
#define HIREDIS_SONAME "libhiredis.so." STRINGIFY(HIREDIS_MAJOR) "." STRINGIFY(HIREDIS_MINOR) "." STRINGIFY(HIREDIS_PATCH)
#endif
HERALD_DYN_LIBRARY(HIREDIS_FUNCTIONS, herald_hiredis_load,
                   "libhiredis" STRINGIFY(HIREDIS_MAJOR) "." STRINGIFY(HIREDIS_MINOR), HIREDIS_SONAME)

HIREDIS_FUNCTIONS(HERALD_DYN_FORWARD, HERALD_DYN_FORWARD_V)
