#ifndef CHIREDIS_SHIM_H
#define CHIREDIS_SHIM_H
// Debian 12's libhiredis-dev 0.14.1: the synchronous API only (RealtimeRedis runs it on its own
// threads); Swift calls the ...Argv forms, never the variadic ones.
#include <hiredis/hiredis.h>
#endif
