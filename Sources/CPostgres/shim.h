#ifndef CPOSTGRES_SHIM_H
#define CPOSTGRES_SHIM_H
// Through its directory, not pkg-config: pkg-config would also link libpq, which CPostgresShim
// opens on first use instead.
#include <postgresql/libpq-fe.h>
#endif
