// The zlib functions Herald calls (PushExpo's gzip bodies), forwarded to libz opened on first use:
// linked, it was mapped at every start (84 KiB resident) for Expo push alone.
#include "czlib_shim.h"

#include <herald_dynload.h>
#include <zlib.h>

#define ZLIB_FUNCTIONS(F, V) \
    F(int, deflateInit2_, (z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy, \
                           const char *version, int stream_size), \
      (strm, level, method, windowBits, memLevel, strategy, version, stream_size)) \
    F(uLong, deflateBound, (z_streamp strm, uLong sourceLen), (strm, sourceLen)) \
    F(int, deflate, (z_streamp strm, int flush), (strm, flush)) \
    F(int, deflateEnd, (z_streamp strm), (strm))

HERALD_DYN_LIBRARY(ZLIB_FUNCTIONS, herald_zlib_load, "zlib1g", "libz.so.1")

ZLIB_FUNCTIONS(HERALD_DYN_FORWARD, HERALD_DYN_FORWARD_V)
