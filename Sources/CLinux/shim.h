// Linux headers Swift's Glibc module does not export (epoll, eventfd, timerfd).
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
// Declared by glibc only under _GNU_SOURCE, which would turn sockaddr* into a transparent union.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#endif
