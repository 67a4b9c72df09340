// loadclient: holds N Server-Sent-Events streams (or, with --ws, WebSockets) from one process and
// measures delivery.
//
//   cc -O2 -o loadclient loadclient.c
//   loadclient --port 8080 -n 10000 --path '/v1/stream?channels=bench' --tokens tokens.txt
//              --ready-event ready --expect 100 --timeout 120
//   loadclient --ws --port 8080 -n 10000 --path '/v1/ws?channels=bench' --tokens tokens.txt ...
//
// Why C and epoll: a Python asyncio client tops out near 80k deliveries/s on this machine and would
// measure itself; one thread on a level-triggered epoll set costs a few hundred ns per event.
//
// Protocol with the driver (fanout.py, idle.py):
//   stdout line 1: "READY <ready> <failed>" once every connection is ready or has failed (or the
//                  connect deadline passed). The driver publishes only after every client said so.
//   stdout line 2: one JSON object with the results, printed on exit. Exit happens when every
//                  ready stream has received --expect events, at --timeout, or on SIGTERM/SIGINT.
//
// A connection is ready when its response head is complete (nchan), or, with --ready-event NAME,
// when it has seen the line "event: NAME" (Herald sends "event: ready" after subscribing, so
// publishing before it would race the subscription). An event is counted when a "data:" line
// contains "t":<integer>; the integer is the publisher's CLOCK_REALTIME send time in ns, so the
// latency is "received here minus sent there" on one machine's clock.
//
// WebSocket (--ws, RFC 6455): the upgrade must answer 101. Every complete text frame is one
// message: it is an event when it contains "t":<integer> as above, and with --ready-event NAME the
// frame containing "type":"NAME" makes the connection ready (Herald's {"type":"ready",...}).
// Pings are answered with pongs and count like SSE comments; a close frame ends the connection.
// Frames longer than the carry buffer are skipped. The client sends no other messages.
//
// Limits: the process fd limit (20000 here) caps -n at about 19.9k; run several processes for more.
// Source addresses rotate over 127.0.0.2..(1+--srcs) with IP_BIND_ADDRESS_NO_PORT, because one
// source address gives only ~28k ephemeral ports towards one server port.

#define _GNU_SOURCE  // memmem
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

enum { S_FREE, S_CONNECTING, S_HEAD, S_STREAM, S_CLOSED };

// Carry-over for a line (or the response head) split across reads. Event lines used here are
// short; a longer line is skipped (its tail is ignored up to the next newline) rather than grown.
#define CARRY 1024

struct conn {
    int fd;
    uint8_t state;
    uint8_t ready;
    uint8_t skipping;  // inside an over-long line: drop bytes until '\n'
    uint16_t carry_len;
    uint32_t count;    // events received
    uint32_t skip;     // --ws: payload bytes of an over-long frame still to drop
    char *carry;       // CARRY bytes, allocated when the connection starts
};

// Latency histogram in microseconds, log-linear: exact below 128 us, then 64 sub-buckets per
// octave (1.6 % resolution) up to 2^40 us. Printed sparsely so the driver can merge processes.
#define HBUCKETS 2304
static uint64_t hist[HBUCKETS];
static uint64_t lat_max_us;
// The slowest delivery of each message, by the "i" its publisher gave it (messages 0..MSGMAX-1):
// says whether a high percentile comes from every message or from a few (the first one, a stall).
#define MSGMAX 4096
static uint32_t msg_max_us[MSGMAX];
static int msg_top = -1;

static int hbucket(uint64_t us) {
    if (us < 128) return (int)us;
    int shift = 63 - __builtin_clzll(us) - 6;  // us >> shift lies in [64, 128)
    int b = 64 * shift + (int)(us >> shift);
    return b < HBUCKETS ? b : HBUCKETS - 1;
}
static uint64_t hlower(int b) {
    if (b < 128) return (uint64_t)b;
    int shift = b / 64 - 1;
    return (uint64_t)(b % 64 + 64) << shift;
}
static double hpercentile(double q, uint64_t total) {
    if (total == 0) return 0;
    uint64_t want = (uint64_t)(q * (double)total + 0.5), seen = 0;
    if (want < 1) want = 1;
    for (int b = 0; b < HBUCKETS; b++) {
        seen += hist[b];
        if (seen >= want) return (double)hlower(b) / 1000.0;
    }
    return (double)lat_max_us / 1000.0;
}

static uint64_t now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { (void)sig; stop_flag = 1; }

// Settings.
static const char *host = "127.0.0.1", *path = "/", *tokens_file, *ready_event;
static int port, nconns = 1, base, srcs = 8, inflight_max = 256, ws;
static uint32_t expect;
static double connect_timeout = 60, timeout = 300;

static char **tokens;
static int ntokens;
static struct conn *conns;
static int epfd;

// Results.
static int n_ready, n_failed, n_closed, n_complete, n_inflight, n_next;
static int err_connect, err_status, err_eof_before_ready;
static uint64_t deliveries, comments, first_rx_ns, last_rx_ns;
static int announced;  // READY printed
static char readybuf[64];
static size_t ready_len;

static void die(const char *m) { perror(m); exit(2); }

static void load_tokens(void) {
    FILE *f = fopen(tokens_file, "r");
    if (!f) die(tokens_file);
    size_t cap = 1024;
    tokens = malloc(cap * sizeof *tokens);
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        if ((size_t)ntokens == cap) tokens = realloc(tokens, (cap *= 2) * sizeof *tokens);
        tokens[ntokens++] = strdup(line);
    }
    free(line);
    fclose(f);
    if (ntokens == 0) { fprintf(stderr, "no tokens in %s\n", tokens_file); exit(2); }
}

static void conn_close(struct conn *c, int failed) {
    if (c->state == S_CLOSED) return;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (!c->ready) { n_inflight--; if (failed) n_failed++; }
    else n_closed++;
    c->state = S_CLOSED;
}

static void mark_ready(struct conn *c) {
    if (c->ready) return;
    c->ready = 1;
    n_ready++;
    n_inflight--;
}

static void conn_start(int i) {
    struct conn *c = &conns[i];
    int gi = base + i;
    c->state = S_CLOSED;  // until the connect is under way
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) { n_failed++; err_connect++; return; }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (srcs > 0) {
        // Pick the source address now but the port at connect(): without IP_BIND_ADDRESS_NO_PORT
        // bind() reserves a port per address and the 28k-port space runs out early.
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in src = {.sin_family = AF_INET};
        src.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)(gi % srcs));
        if (bind(fd, (struct sockaddr *)&src, sizeof src) < 0) {
            close(fd); n_failed++; err_connect++; return;
        }
    }
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &dst.sin_addr);
    if (connect(fd, (struct sockaddr *)&dst, sizeof dst) < 0 && errno != EINPROGRESS) {
        close(fd); n_failed++; err_connect++; return;
    }
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
    c->fd = fd;
    c->carry = malloc(CARRY);
    c->state = S_CONNECTING;
    n_inflight++;
}

// Copies `path` into `out` with every "%d" replaced by the global connection index `gi` (a stream's
// channels can then be its own: --path '/v1/stream?channels=r:%d.0,r:%d.1'). Returns 0 when it
// does not fit.
static int expand_path(char *out, size_t cap, int gi) {
    char num[16];
    int nlen = snprintf(num, sizeof num, "%d", gi);
    size_t o = 0;
    for (const char *s = path; *s; s++) {
        if (s[0] == '%' && s[1] == 'd') {
            if (o + (size_t)nlen >= cap) return 0;
            memcpy(out + o, num, (size_t)nlen);
            o += (size_t)nlen;
            s++;
        } else {
            if (o + 1 >= cap) return 0;
            out[o++] = *s;
        }
    }
    out[o] = 0;
    return 1;
}

static void send_request(struct conn *c, int i) {
    int gi = base + i;
    char p[4096], req[14336];
    if (!expand_path(p, sizeof p, gi)) { err_connect++; conn_close(c, 1); return; }
    char auth[9216] = "";
    if (tokens) snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", tokens[gi % ntokens]);
    // The key is a fixed 16-byte nonce: the client measures servers, it does not guard against caches.
    const char *kind = ws ? "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                          : "Accept: text/event-stream\r\n";
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s%s\r\n", p, host, port, kind, auth);
    // A request this small always fits an empty socket buffer; a short write means trouble.
    if (n >= (int)sizeof req || send(c->fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        err_connect++; conn_close(c, 1); return;
    }
    c->state = S_HEAD;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

// Counts one delivered message when it carries "t":<send time in ns>; returns whether it did.
static int on_message(struct conn *c, const char *s, size_t len, uint64_t rx_real) {
    const char *t = memmem(s, len, "\"t\":", 4);
    if (!t) return 0;
    t += 4;
    const char *end = s + len;
    uint64_t sent = 0;
    while (t < end && *t >= '0' && *t <= '9') sent = sent * 10 + (uint64_t)(*t++ - '0');
    uint64_t us = rx_real > sent ? (rx_real - sent) / 1000 : 0;
    const char *ip = memmem(s, len, "\"i\":", 4);
    if (ip) {
        long k = strtol(ip + 4, NULL, 10);
        if (k >= 0 && k < MSGMAX) {
            if (us > msg_max_us[k]) msg_max_us[k] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
            if (k > msg_top) msg_top = (int)k;
        }
    }
    hist[hbucket(us)]++;
    if (us > lat_max_us) lat_max_us = us;
    deliveries++;
    if (!first_rx_ns) first_rx_ns = rx_real;
    last_rx_ns = rx_real;
    if (++c->count == expect) n_complete++;
    return 1;
}

// One complete SSE line (without the newline).
static void on_line(struct conn *c, const char *s, size_t len, uint64_t rx_real) {
    if (len > 0 && s[len - 1] == '\r') len--;
    if (len >= 5 && memcmp(s, "data:", 5) == 0) {
        on_message(c, s, len, rx_real);
    } else if (len > 0 && s[0] == ':') {
        if (announced) comments++;  // heartbeats after READY (Herald ": heartbeat", nchan pings)
    } else if (ready_event && !c->ready && len == ready_len && memcmp(s, readybuf, len) == 0) {
        mark_ready(c);
    }
}

// Splits the bytes into lines; keeps an unfinished line in c->carry for the next read.
static void on_body(struct conn *c, const char *p, size_t n, uint64_t rx_real) {
    const char *end = p + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            size_t rest = (size_t)(end - p);
            if (c->skipping) return;
            if (c->carry_len + rest > CARRY) { c->skipping = 1; c->carry_len = 0; return; }
            memcpy(c->carry + c->carry_len, p, rest);
            c->carry_len += (uint16_t)rest;
            return;
        }
        size_t len = (size_t)(nl - p);
        if (c->skipping) {
            c->skipping = 0;
        } else if (c->carry_len) {
            if (c->carry_len + len <= CARRY) {
                memcpy(c->carry + c->carry_len, p, len);
                on_line(c, c->carry, c->carry_len + len, rx_real);
            }
            c->carry_len = 0;
        } else {
            on_line(c, p, len, rx_real);
        }
        p = nl + 1;
    }
}

// Sends one masked control frame (a pong) with a payload of at most 125 bytes.
static void ws_send_control(struct conn *c, uint8_t opcode, const char *payload, size_t len) {
    uint8_t f[2 + 4 + 125];
    static const uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
    if (len > 125) len = 125;
    f[0] = 0x80 | opcode;
    f[1] = 0x80 | (uint8_t)len;
    memcpy(f + 2, mask, 4);
    for (size_t k = 0; k < len; k++) f[6 + k] = (uint8_t)payload[k] ^ mask[k & 3];
    // A lost pong only risks an idle close, which the results would show as closed_by_server.
    (void)send(c->fd, f, 6 + len, MSG_NOSIGNAL);
}

// One complete, unmasked server frame.
static void on_frame(struct conn *c, uint8_t opcode, const char *payload, size_t len, uint64_t rx_real) {
    switch (opcode) {
    case 0x1:  // text: an event, or the ready message
        if (on_message(c, payload, len, rx_real)) return;
        if (ready_event && !c->ready && memmem(payload, len, readybuf, ready_len)) mark_ready(c);
        return;
    case 0x8:  // close
        conn_close(c, 0);
        return;
    case 0x9:  // ping
        if (announced) comments++;
        ws_send_control(c, 0xA, payload, len);
        return;
    default:   // pong, binary, continuation: not used by the servers measured
        return;
    }
}

// Splits the bytes into frames; keeps an unfinished frame in c->carry for the next read.
static void on_ws_bytes(struct conn *c, const char *p, size_t n, uint64_t rx_real) {
    while (n > 0 && c->state == S_STREAM) {
        if (c->skip) {
            size_t k = n < c->skip ? n : c->skip;
            c->skip -= (uint32_t)k;
            p += k;
            n -= k;
            continue;
        }
        // Work on the carry when it holds a partial frame, else straight on the read buffer.
        const uint8_t *f = (const uint8_t *)p;
        size_t avail = n, from_carry = 0;
        if (c->carry_len) {
            size_t room = (size_t)CARRY - c->carry_len, take = room < n ? room : n;
            memcpy(c->carry + c->carry_len, p, take);
            f = (const uint8_t *)c->carry;
            avail = c->carry_len + take;
            from_carry = c->carry_len;
        }
        size_t hlen = 2;
        uint64_t plen = avail >= 2 ? f[1] & 0x7F : 0;
        if (avail >= 2 && plen == 126) hlen = 4;
        if (avail >= 2 && plen == 127) hlen = 10;
        if (avail < hlen) goto partial;
        if (hlen == 4) plen = ((uint64_t)f[2] << 8) | f[3];
        if (hlen == 10) { plen = 0; for (int k = 2; k < 10; k++) plen = (plen << 8) | f[k]; }
        if (hlen + plen > CARRY) {
            // Too long to keep: drop its payload (what this read holds of it, then c->skip more).
            size_t consumed_here = hlen - from_carry;
            if (from_carry > hlen) consumed_here = 0;
            c->carry_len = 0;
            c->skip = (uint32_t)(plen - (from_carry > hlen ? from_carry - hlen : 0));
            p += consumed_here;
            n -= consumed_here;
            continue;
        }
        if (avail < hlen + plen) goto partial;
        on_frame(c, f[0] & 0x0F, (const char *)f + hlen, (size_t)plen, rx_real);
        {
            size_t used = hlen + (size_t)plen - from_carry;  // bytes of this read that the frame used
            c->carry_len = 0;
            p += used;
            n -= used;
        }
        continue;
    partial:
        if (!c->carry_len) memcpy(c->carry, p, n);
        c->carry_len = (uint16_t)avail;
        return;
    }
}

static void on_readable(struct conn *c) {
    static char buf[65536];
    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n == 0) { if (!c->ready) err_eof_before_ready++; conn_close(c, 1); return; }
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            if (!c->ready) err_eof_before_ready++;
            conn_close(c, 1);
            return;
        }
        uint64_t rx = now_ns(CLOCK_REALTIME);
        const char *p = buf;
        size_t len = (size_t)n;
        if (c->state == S_HEAD) {
            // Collect the response head; both servers stream the body unframed (no chunking).
            size_t take = len;
            if (c->carry_len + take > CARRY) take = CARRY - c->carry_len;
            memcpy(c->carry + c->carry_len, p, take);
            c->carry_len += (uint16_t)take;
            char *h = memmem(c->carry, c->carry_len, "\r\n\r\n", 4);
            if (!h) {
                if (c->carry_len == CARRY) { err_status++; conn_close(c, 1); return; }
                continue;
            }
            size_t head_len = (size_t)(h + 4 - c->carry);
            if (c->carry_len < 12 || memcmp(c->carry + 9, ws ? "101" : "200", 3) != 0) {
                if (err_status < 3) fprintf(stderr, "loadclient: refused: %.*s\n", 40, c->carry);
                err_status++;
                conn_close(c, 1);
                return;
            }
            // The head was incomplete before this read, so it ends inside this read: the body
            // starts head_len minus what the carry held before it.
            size_t body_off = head_len - (c->carry_len - take);
            c->carry_len = 0;
            c->state = S_STREAM;
            if (!ready_event) mark_ready(c);
            p += body_off;
            len -= body_off;
        }
        if (len) {
            if (ws) on_ws_bytes(c, p, len, rx);
            else on_body(c, p, len, rx);
        }
        if (c->state == S_CLOSED) return;
    }
}

static void print_ready_line(void) {
    printf("READY %d %d\n", n_ready, n_failed);
    fflush(stdout);
}

static void usage(void) {
    fprintf(stderr,
            "usage: loadclient --port P [--host 127.0.0.1] -n N --path PATH [--base B] [--ws]\n"
            "       [--tokens FILE] [--ready-event NAME] [--expect K] [--inflight 256]\n"
            "       [--srcs 8] [--connect-timeout 60] [--timeout 300]\n");
    exit(2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--ws")) { ws = 1; continue; }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--port")) port = atoi(v);
        else if (!strcmp(a, "-n")) nconns = atoi(v);
        else if (!strcmp(a, "--path")) path = v;
        else if (!strcmp(a, "--base")) base = atoi(v);
        else if (!strcmp(a, "--tokens")) tokens_file = v;
        else if (!strcmp(a, "--ready-event")) ready_event = v;
        else if (!strcmp(a, "--expect")) expect = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--inflight")) inflight_max = atoi(v);
        else if (!strcmp(a, "--srcs")) srcs = atoi(v);
        else if (!strcmp(a, "--connect-timeout")) connect_timeout = atof(v);
        else if (!strcmp(a, "--timeout")) timeout = atof(v);
        else usage();
        i++;
    }
    if (port <= 0 || nconns <= 0 || srcs < 0 || srcs > 8 || inflight_max <= 0) usage();
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rlim_t)nconns + 16 > rl.rlim_cur) {
        rl.rlim_cur = rl.rlim_max;  // raise the soft limit as far as the hard one allows
        setrlimit(RLIMIT_NOFILE, &rl);
        if ((rlim_t)nconns + 16 > rl.rlim_cur) {
            fprintf(stderr, "loadclient: -n %d exceeds the fd limit %lu; use more processes\n", nconns,
                    (unsigned long)rl.rlim_cur);
            return 2;
        }
    }
    if (tokens_file) load_tokens();
    if (ready_event)
        ready_len = (size_t)snprintf(readybuf, sizeof readybuf, ws ? "\"type\":\"%s\"" : "event: %s", ready_event);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    conns = calloc((size_t)nconns, sizeof *conns);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1");

    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    uint64_t connect_deadline = t0 + (uint64_t)(connect_timeout * 1e9);
    uint64_t deadline = t0 + (uint64_t)(timeout * 1e9);
    uint64_t ready_at = 0;
    struct rusage ru_ready = {0};
    struct epoll_event evs[1024];

    while (!stop_flag) {
        // Paced connects: at most inflight_max handshakes (connect + request + head/ready) at once,
        // so the listen backlog (somaxconn 4096) never overflows and no SYN is dropped/retried.
        while (n_next < nconns && n_inflight < inflight_max) conn_start(n_next++);

        uint64_t now = now_ns(CLOCK_MONOTONIC);
        if (!announced && (n_ready + n_failed >= nconns || now >= connect_deadline)) {
            announced = 1;
            ready_at = now;
            getrusage(RUSAGE_SELF, &ru_ready);
            print_ready_line();
        }
        if (announced && expect > 0 && n_complete >= n_ready) break;  // every ready stream is done
        if (announced && n_ready == n_closed) break;                  // nothing left open
        if (now >= deadline) break;

        int n = epoll_wait(epfd, evs, 1024, 50);
        if (n < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
        for (int k = 0; k < n; k++) {
            uint32_t i = evs[k].data.u32;
            struct conn *c = &conns[i];
            if (c->state == S_CONNECTING) {
                int err = 0;
                socklen_t el = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err) { err_connect++; conn_close(c, 1); continue; }
                if (evs[k].events & EPOLLOUT) send_request(c, (int)i);
                continue;
            }
            if (c->state == S_HEAD || c->state == S_STREAM) on_readable(c);
        }
    }
    uint64_t end = now_ns(CLOCK_MONOTONIC);
    if (!announced) print_ready_line();

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);  // the client's own CPU since READY: it competes with the server
    uint64_t expected = (uint64_t)nconns * expect, losses = 0, extra = 0;
    for (int i = 0; i < nconns; i++) {
        uint32_t got = conns[i].count;
        if (got < expect) losses += expect - got;
        else extra += got - expect;
    }
    printf("{\"connections\":%d,\"requested\":%d,\"failed\":%d,\"closed_by_server\":%d,"
           "\"err_connect\":%d,\"err_status\":%d,\"err_eof_before_ready\":%d,"
           "\"deliveries\":%llu,\"comments_after_ready\":%llu,\"expected\":%llu,\"losses\":%llu,\"extra\":%llu,"
           "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
           "\"connect_s\":%.3f,\"elapsed_s\":%.3f,\"first_rx_ns\":%llu,\"last_rx_ns\":%llu,\"hist\":[",
           n_ready, nconns, n_failed, n_closed, err_connect, err_status, err_eof_before_ready,
           (unsigned long long)deliveries, (unsigned long long)comments, (unsigned long long)expected, (unsigned long long)losses,
           (unsigned long long)extra, hpercentile(0.50, deliveries), hpercentile(0.99, deliveries),
           (double)lat_max_us / 1000.0, ready_at ? (double)(ready_at - t0) / 1e9 : -1.0,
           (double)(end - t0) / 1e9, (unsigned long long)first_rx_ns, (unsigned long long)last_rx_ns);
    int first = 1;
    for (int b = 0; b < HBUCKETS; b++) {
        if (!hist[b]) continue;
        printf("%s[%llu,%llu]", first ? "" : ",", (unsigned long long)hlower(b), (unsigned long long)hist[b]);
        first = 0;
    }
    printf("],\"msg_max_us\":[");
    for (int k = 0; k <= msg_top; k++) printf("%s%u", k ? "," : "", msg_max_us[k]);
    printf("],\"max_us\":%llu,\"cpu_user_s\":%.3f,\"cpu_sys_s\":%.3f}\n", (unsigned long long)lat_max_us,
           (double)(ru.ru_utime.tv_sec - ru_ready.ru_utime.tv_sec) + (ru.ru_utime.tv_usec - ru_ready.ru_utime.tv_usec) / 1e6,
           (double)(ru.ru_stime.tv_sec - ru_ready.ru_stime.tv_sec) + (ru.ru_stime.tv_usec - ru_ready.ru_stime.tv_usec) / 1e6);
    fflush(stdout);
    for (int i = 0; i < nconns; i++)
        if (conns[i].state != S_CLOSED && conns[i].state != S_FREE) close(conns[i].fd);
    return 0;
}
