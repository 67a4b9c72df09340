#ifndef HERALD_DYNLOAD_H
#define HERALD_DYNLOAD_H
// Shared libraries opened on first use instead of at process start (issue 17, idle footprint):
// libpq, libhiredis and libcurl pull about 4 MB of code and relocated data (gnutls, krb5, ldap,
// p11-kit, ...) that the embedded default never runs. Each shim target (CCurlShim,
// CPostgresShim, CHiredisShim) defines the library's functions that Herald calls under their own
// names, so Swift keeps calling `PQexec` or `curl_multi_perform`; each definition forwards to
// the real function, resolved with dlsym the first time any of them is needed.
#include <pthread.h>
#include <stddef.h>

#pragma clang assume_nonnull begin

/// One library: where to find it, which functions to resolve, and what happened when it was
/// opened. Defined statically by one shim; every field but `state` and `error` is constant.
typedef struct herald_library {
    /// The sonames tried in order (NULL-terminated), e.g. "libpq.so.5".
    const char *_Nullable const *_Nonnull sonames;
    /// The functions (NULL-terminated); `slots[i]` receives `symbols[i]`.
    const char *_Nullable const *_Nonnull symbols;
    void *_Nullable *_Nonnull slots;
    /// The Debian package that provides the library, named in the error text.
    const char *package;
    pthread_mutex_t mutex;
    /// 0 not tried yet, 1 loaded, -1 failed (read with acquire ordering).
    int state;
    char error[512];
} herald_library;

/// Opens the first of `sonames` that loads (RTLD_NOW | RTLD_LOCAL) and resolves every one of
/// `symbols` into `slots`. Returns 0, or -1 with a one-line reason in `error` (the soname and
/// dlerror's text, or the first missing function); on failure the library is closed again and
/// `slots` are left NULL. Used once per library by `herald_library_load`, and by the tests.
int herald_library_open(const char *_Nullable const *_Nonnull sonames, const char *_Nullable const *_Nonnull symbols,
                        void *_Nullable *_Nonnull slots, const char *package, char *error, size_t error_size);

/// Opens `library` once (thread-safe; later calls return the first outcome). Returns 0 when its
/// functions are resolved, -1 when they are not (the reason is in `library->error`).
int herald_library_load(herald_library *library);

/// The function in `slot`, loading the library first if needed. A forwarder calls it; the
/// adapters load their library before the first call and report a failure as a typed error,
/// so the abort here (with the reason on stderr) is only reached by a caller that skipped that.
void *herald_library_function(herald_library *library, int slot);

// The shims list their functions once, as F(return type, name, (parameters), (arguments)) and,
// for functions returning void, V(name, (parameters), (arguments)); these expand that list into
// slot numbers, the names to resolve, and the forwarders. A forwarder's prototype must match the
// library header's declaration, which the compiler checks.
#define HERALD_DYN_SLOT(r, name, p, a) HERALD_DYN_SLOT_##name,
#define HERALD_DYN_SLOT_V(name, p, a) HERALD_DYN_SLOT_##name,
#define HERALD_DYN_NAME(r, name, p, a) #name,
#define HERALD_DYN_NAME_V(name, p, a) #name,
#define HERALD_DYN_FORWARD(r, name, params, args) \
    r name params { return ((r (*) params) herald_library_function(&herald_dyn_library, HERALD_DYN_SLOT_##name)) args; }
#define HERALD_DYN_FORWARD_V(name, params, args) \
    void name params { ((void (*) params) herald_library_function(&herald_dyn_library, HERALD_DYN_SLOT_##name)) args; }

// Defines one shim's library from its list (every function that gets a slot, forwarded or not):
// the slot numbers, the names to resolve, the slots, `herald_dyn_library` (which
// HERALD_DYN_FORWARD's forwarders read), and `const char *load(void)`, which opens the library if
// it is not open yet and returns NULL when its functions are ready, else the reason. The sonames
// (tried in order) follow the package. The shim then writes its forwarders with
// `LIST(HERALD_DYN_FORWARD, HERALD_DYN_FORWARD_V)`.
#define HERALD_DYN_LIBRARY(LIST, load, package_name, ...) \
    enum { LIST(HERALD_DYN_SLOT, HERALD_DYN_SLOT_V) HERALD_DYN_FUNCTION_COUNT }; \
    static const char *const herald_dyn_names[] = { LIST(HERALD_DYN_NAME, HERALD_DYN_NAME_V) NULL }; \
    static const char *const herald_dyn_sonames[] = { __VA_ARGS__, NULL }; \
    static void *herald_dyn_slots[HERALD_DYN_FUNCTION_COUNT]; \
    static herald_library herald_dyn_library = { \
        .sonames = herald_dyn_sonames, .symbols = herald_dyn_names, .slots = herald_dyn_slots, \
        .package = package_name, .mutex = PTHREAD_MUTEX_INITIALIZER, .state = 0, \
    }; \
    const char *load(void) { \
        return herald_library_load(&herald_dyn_library) == 0 ? NULL : herald_dyn_library.error; \
    }

#pragma clang assume_nonnull end

#endif
