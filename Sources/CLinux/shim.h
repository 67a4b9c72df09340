// Linux headers Swift's Glibc module does not export (epoll, eventfd, timerfd, malloc.h).
#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/prctl.h>
// malloc_trim, mallinfo2: the heap trimmer (issue 17).
#include <malloc.h>
// Names the calling thread in /proc/<pid>/task/<tid>/comm (at most 15 bytes are kept). prctl is
// variadic, which Swift cannot call.
static inline int CLinux_setThreadName(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
// Declared by glibc only under _GNU_SOURCE, which would turn sockaddr* into a transparent union.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#endif
