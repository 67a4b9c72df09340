#include "herald_dynload.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int herald_library_open(const char *const *sonames, const char *const *symbols, void **slots,
                        const char *package, char *error, size_t error_size) {
    void *handle = NULL;
    const char *tried = NULL;
    char reason[256] = "";
    for (const char *const *soname = sonames; *soname != NULL; soname++) {
        // RTLD_LOCAL: the library's symbols do not join the global scope, where the forwarders
        // of the same names already are.
        handle = dlopen(*soname, RTLD_NOW | RTLD_LOCAL);
        if (handle != NULL) { tried = *soname; break; }
        if (tried == NULL) {
            const char *text = dlerror();
            snprintf(reason, sizeof reason, "%s", text != NULL ? text : "not found");
            tried = *soname;
        }
    }
    if (handle == NULL) {
        snprintf(error, error_size, "%s (install Debian's %s)", reason, package);
        return -1;
    }
    size_t i = 0;
    for (; symbols[i] != NULL; i++) {
        dlerror();
        void *function = dlsym(handle, symbols[i]);
        if (function == NULL) {
            snprintf(error, error_size, "%s has no function %s (a %s older than this build expects)",
                     tried, symbols[i], package);
            for (size_t j = 0; j < i; j++) slots[j] = NULL;
            dlclose(handle);
            return -1;
        }
        slots[i] = function;
    }
    // The handle stays open for the life of the process: the slots point into it.
    return 0;
}

int herald_library_load(herald_library *library) {
    int state = __atomic_load_n(&library->state, __ATOMIC_ACQUIRE);
    if (state == 0) {
        pthread_mutex_lock(&library->mutex);
        state = library->state;
        if (state == 0) {
            state = herald_library_open(library->sonames, library->symbols, library->slots, library->package,
                                        library->error, sizeof library->error) == 0 ? 1 : -1;
            __atomic_store_n(&library->state, state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&library->mutex);
    }
    return state == 1 ? 0 : -1;
}

void *herald_library_function(herald_library *library, int slot) {
    if (herald_library_load(library) != 0) {
        fprintf(stderr, "herald: %s\n", library->error);
        abort();
    }
    return library->slots[slot];
}
