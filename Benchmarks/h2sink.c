/* h2sink: the benchmarks' native push sink (issue 17). An HTTP/2-over-TLS server on libnghttp2 +
 * OpenSSL that answers like the real providers, so that Herald classifies and records each push as
 * it would in production, at a cost per request low enough that the sink does not decide the
 * figures on a 2-core machine:
 *
 *   POST /3/device/<token>                 200, `apns-id` (the request's, or a new UUID), no body (APNs)
 *   POST /v1/projects/<p>/messages:send    200, {"name":"projects/<p>/messages/<n>"} (FCM HTTP v1)
 *   anything else                          404, no body
 *
 *   cc -O2 -o h2sink Benchmarks/h2sink.c -lnghttp2 -lssl -lcrypto -lpthread
 *   h2sink --port P --cert server.pem --key server-key.pem [--threads N] [--max-streams M]
 *          [--stats FILE]
 *
 * Each of N worker threads has its own SO_REUSEPORT listener on 127.0.0.1:P and its own epoll, so a
 * connection lives on one thread for its whole life. A readable connection is read until EAGAIN and
 * fed to nghttp2; then everything nghttp2 has to send for that wake-up goes out in one SSL_write.
 *
 * Counting: SIGUSR1 writes one JSON line (requests by kind, connections, the process's user and
 * system CPU from getrusage, and a sequence number) to --stats FILE (replaced atomically) and to
 * stderr; SIGTERM/SIGINT write it once more and exit 0. The benchmarks read it before and after a
 * window to report the sink's requests and CPU per request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#define READ_CHUNK 65536
#define MAX_EVENTS 256
/* Stop pulling frames from nghttp2 while this much output waits for the socket. */
#define OUT_HIGH_WATER (1 << 20)

enum kind { KIND_APNS, KIND_FCM, KIND_OTHER };

struct worker {
    int id;
    int epfd;
    int listen_fd;
    uint64_t rng;
    _Atomic unsigned long requests[3];
    _Atomic unsigned long connections;
    _Atomic unsigned long bytes_in;
};

struct conn;

struct stream {
    struct conn *conn;
    struct stream *prev, *next; /* the connection's open streams */
    int32_t id;
    int is_post;
    char path[512];
    size_t path_len;
    char apns_id[40];
    char body[600];
    size_t body_len, body_off;
};

struct conn {
    int fd;
    SSL *ssl;
    int handshaken;
    nghttp2_session *session;
    struct worker *w;
    unsigned char *out;
    size_t out_len, out_cap, out_off;
    int want_out; /* EPOLLOUT registered */
    struct stream *streams;
};

static SSL_CTX *ssl_ctx;
static int max_streams = 1000;
static struct worker *workers;
static int nworkers = 1;
static const char *stats_path;
static unsigned long stats_seq;
static _Atomic unsigned long fcm_serial;

static void die(const char *what) {
    perror(what);
    exit(2);
}

/* ---------------------------------------------------------------- answers */

static uint64_t next_random(struct worker *w) {
    /* xorshift64*: an apns-id needs to be unique, not unpredictable */
    uint64_t x = w->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static void make_uuid(struct worker *w, char out[37]) {
    static const char hex[] = "0123456789ABCDEF";
    uint64_t a = next_random(w), b = next_random(w);
    unsigned char bytes[16];
    memcpy(bytes, &a, 8);
    memcpy(bytes + 8, &b, 8);
    bytes[6] = (bytes[6] & 0x0f) | 0x40; /* version 4 */
    bytes[8] = (bytes[8] & 0x3f) | 0x80; /* RFC 4122 variant */
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[bytes[i] >> 4];
        out[o++] = hex[bytes[i] & 15];
    }
    out[o] = 0;
}

static ssize_t body_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
    (void)session; (void)stream_id; (void)user_data;
    struct stream *s = source->ptr;
    size_t n = s->body_len - s->body_off;
    if (n > length) n = length;
    memcpy(buf, s->body + s->body_off, n);
    s->body_off += n;
    if (s->body_off == s->body_len) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

#define NV(n, v, vl) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NO_COPY_NAME }

static int answer(nghttp2_session *session, struct stream *s) {
    struct worker *w = s->conn->w;
    static const char device[] = "/3/device/";
    static const char projects[] = "/v1/projects/";
    static const char send_suffix[] = "/messages:send";
    const char *p = s->path;
    size_t n = s->path_len;
    if (s->is_post && n > sizeof(device) - 1 && memcmp(p, device, sizeof(device) - 1) == 0) {
        atomic_fetch_add_explicit(&w->requests[KIND_APNS], 1, memory_order_relaxed);
        if (!s->apns_id[0]) make_uuid(w, s->apns_id);
        nghttp2_nv nv[] = {NV(":status", "200", 3), NV("apns-id", s->apns_id, strlen(s->apns_id))};
        return nghttp2_submit_response(session, s->id, nv, 2, NULL);
    }
    size_t pl = sizeof(projects) - 1, sl = sizeof(send_suffix) - 1;
    if (s->is_post && n > pl + sl && memcmp(p, projects, pl) == 0 && memcmp(p + n - sl, send_suffix, sl) == 0) {
        const char *project = p + pl;
        size_t project_len = n - pl - sl;
        if (project_len > 0 && memchr(project, '/', project_len) == NULL && project_len < 400) {
            atomic_fetch_add_explicit(&w->requests[KIND_FCM], 1, memory_order_relaxed);
            unsigned long serial = atomic_fetch_add_explicit(&fcm_serial, 1, memory_order_relaxed);
            int len = snprintf(s->body, sizeof(s->body), "{\"name\":\"projects/%.*s/messages/%lu\"}\n",
                               (int)project_len, project, serial);
            s->body_len = (size_t)len;
            s->body_off = 0;
            char length[24];
            int ll = snprintf(length, sizeof(length), "%zu", s->body_len);
            nghttp2_nv nv[] = {NV(":status", "200", 3),
                               NV("content-type", "application/json; charset=UTF-8", 31),
                               NV("content-length", length, (size_t)ll)};
            /* values are copied (no NO_COPY_VALUE): `length` is on this stack frame */
            nghttp2_data_provider provider = {.source.ptr = s, .read_callback = body_read};
            return nghttp2_submit_response(session, s->id, nv, 3, &provider);
        }
    }
    atomic_fetch_add_explicit(&w->requests[KIND_OTHER], 1, memory_order_relaxed);
    nghttp2_nv nv[] = {NV(":status", "404", 3)};
    return nghttp2_submit_response(session, s->id, nv, 1, NULL);
}

/* ---------------------------------------------------------------- nghttp2 callbacks */

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    struct conn *c = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    struct stream *s = calloc(1, sizeof(*s));
    if (!s) return NGHTTP2_ERR_CALLBACK_FAILURE;
    s->conn = c;
    s->id = frame->hd.stream_id;
    s->next = c->streams;
    if (c->streams) c->streams->prev = s;
    c->streams = s;
    nghttp2_session_set_stream_user_data(session, s->id, s);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
    (void)flags; (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    struct stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s) return 0;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
        size_t n = valuelen < sizeof(s->path) - 1 ? valuelen : sizeof(s->path) - 1;
        memcpy(s->path, value, n);
        s->path[n] = 0;
        s->path_len = n;
    } else if (namelen == 7 && memcmp(name, ":method", 7) == 0) {
        s->is_post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
    } else if (namelen == 7 && memcmp(name, "apns-id", 7) == 0 && valuelen < sizeof(s->apns_id)) {
        memcpy(s->apns_id, value, valuelen);
        s->apns_id[valuelen] = 0;
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *user_data) {
    (void)session; (void)flags; (void)stream_id; (void)data;
    struct conn *c = user_data;
    atomic_fetch_add_explicit(&c->w->bytes_in, len, memory_order_relaxed);
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    (void)user_data;
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s) return 0;
    if (answer(session, s) != 0) return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
    (void)error_code; (void)user_data;
    struct stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
    if (s) {
        nghttp2_session_set_stream_user_data(session, stream_id, NULL);
        if (s->prev) s->prev->next = s->next;
        else s->conn->streams = s->next;
        if (s->next) s->next->prev = s->prev;
        free(s);
    }
    return 0;
}

static nghttp2_session_callbacks *callbacks;

/* ---------------------------------------------------------------- connections */

static void conn_close(struct conn *c) {
    epoll_ctl(c->w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->session) nghttp2_session_del(c->session);
    /* nghttp2_session_del runs no stream-close callbacks: free the streams still open */
    while (c->streams) {
        struct stream *s = c->streams;
        c->streams = s->next;
        free(s);
    }
    if (c->ssl) SSL_free(c->ssl);
    close(c->fd);
    free(c->out);
    free(c);
}

static void set_out_interest(struct conn *c, int want) {
    if (c->want_out == want) return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

static int out_append(struct conn *c, const uint8_t *data, size_t n) {
    if (c->out_len + n > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 16384;
        while (cap < c->out_len + n) cap *= 2;
        unsigned char *p = realloc(c->out, cap);
        if (!p) return -1;
        c->out = p;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, n);
    c->out_len += n;
    return 0;
}

/* Pulls every frame nghttp2 has ready into the output buffer and writes the buffer in one
 * SSL_write (more only if the socket takes part of it). Returns -1 when the connection is done. */
static int conn_flush(struct conn *c) {
    for (;;) {
        while (c->out_len - c->out_off < OUT_HIGH_WATER) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(c->session, &data);
            if (n < 0) return -1;
            if (n == 0) break;
            if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
            if (out_append(c, data, (size_t)n) < 0) return -1;
        }
        if (c->out_off == c->out_len) break;
        ERR_clear_error();
        int r = SSL_write(c->ssl, c->out + c->out_off, (int)(c->out_len - c->out_off));
        if (r <= 0) {
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
                set_out_interest(c, 1);
                return 0;
            }
            return -1;
        }
        c->out_off += (size_t)r;
        if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
    }
    set_out_interest(c, 0);
    if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session)) return -1;
    return 0;
}

static int conn_start_session(struct conn *c) {
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(c->ssl, &alpn, &alpn_len);
    if (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0) return -1;
    if (nghttp2_session_server_new(&c->session, callbacks, c) != 0) return -1;
    nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)max_streams},
                                         {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 2) != 0) return -1;
    /* a connection-level window as large as the streams', so uploads never wait for WINDOW_UPDATEs */
    nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 1 << 24);
    return 0;
}

/* After an SSL call returned r <= 0: 0 when it only has to wait (for a read, or for the socket to
 * take a write: then write interest is set), -1 when the connection is done. */
static int ssl_would_block(struct conn *c, int r) {
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) return 0;
    if (e == SSL_ERROR_WANT_WRITE) {
        set_out_interest(c, 1);
        return 0;
    }
    return -1;
}

/* Reads until EAGAIN, feeding nghttp2; returns -1 when the connection is done. */
static int conn_read(struct conn *c) {
    static __thread unsigned char buf[READ_CHUNK];
    if (!c->handshaken) {
        ERR_clear_error();
        int r = SSL_accept(c->ssl);
        if (r <= 0) return ssl_would_block(c, r);
        c->handshaken = 1;
        set_out_interest(c, 0);
        if (conn_start_session(c) < 0) return -1;
    }
    for (;;) {
        ERR_clear_error();
        int r = SSL_read(c->ssl, buf, sizeof(buf));
        if (r <= 0) return ssl_would_block(c, r); /* else closed or failed */
        ssize_t n = nghttp2_session_mem_recv(c->session, buf, (size_t)r);
        if (n < 0) return -1;
    }
}

static void on_accept(struct worker *w) {
    for (;;) {
        int fd = accept4(w->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->w = w;
        c->ssl = SSL_new(ssl_ctx);
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);
        SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev);
        atomic_fetch_add_explicit(&w->connections, 1, memory_order_relaxed);
    }
}

static void *worker_run(void *arg) {
    struct worker *w = arg;
    struct epoll_event events[MAX_EVENTS];
    struct conn *touched[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(w->epfd, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        int nt = 0;
        for (int i = 0; i < n; i++) {
            if (events[i].data.ptr == NULL) {
                on_accept(w);
                continue;
            }
            struct conn *c = events[i].data.ptr;
            /* A handshake that waits for the socket to drain continues from conn_read too. */
            if (conn_read(c) < 0) {
                conn_close(c);
                continue;
            }
            if (c->session) touched[nt++] = c;
        }
        /* everything this wake-up produced, one write per connection */
        for (int i = 0; i < nt; i++)
            if (conn_flush(touched[i]) < 0) conn_close(touched[i]);
    }
    return NULL;
}

/* ---------------------------------------------------------------- set-up and counting */

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    for (unsigned int i = 0; i + 1 <= inlen;) {
        unsigned int l = in[i];
        if (i + 1 + l > inlen) break;
        if (l == 2 && memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + l;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) die("SO_REUSEPORT");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) die("bind");
    if (listen(fd, 1024) < 0) die("listen");
    return fd;
}

static void write_stats(void) {
    unsigned long req[3] = {0, 0, 0}, conns = 0, bytes = 0;
    for (int i = 0; i < nworkers; i++) {
        for (int k = 0; k < 3; k++) req[k] += atomic_load_explicit(&workers[i].requests[k], memory_order_relaxed);
        conns += atomic_load_explicit(&workers[i].connections, memory_order_relaxed);
        bytes += atomic_load_explicit(&workers[i].bytes_in, memory_order_relaxed);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char line[512];
    int n = snprintf(line, sizeof(line),
                     "{\"seq\":%lu,\"requests\":%lu,\"apns\":%lu,\"fcm\":%lu,\"not_found\":%lu,\"connections\":%lu,"
                     "\"body_bytes\":%lu,\"user_s\":%.6f,\"sys_s\":%.6f,\"threads\":%d}\n",
                     ++stats_seq, req[0] + req[1] + req[2], req[0], req[1], req[2], conns, bytes,
                     ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
                     nworkers);
    fputs(line, stderr);
    fflush(stderr);
    if (stats_path) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s.tmp", stats_path);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fwrite(line, 1, (size_t)n, f);
            fclose(f);
            rename(tmp, stats_path);
        }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: h2sink --port P --cert PEM --key PEM [--threads N] [--max-streams M] [--stats FILE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int port = 0;
    const char *cert = NULL, *key = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--port")) port = atoi(v);
        else if (!strcmp(a, "--cert")) cert = v;
        else if (!strcmp(a, "--key")) key = v;
        else if (!strcmp(a, "--threads")) nworkers = atoi(v);
        else if (!strcmp(a, "--max-streams")) max_streams = atoi(v);
        else if (!strcmp(a, "--stats")) stats_path = v;
        else usage();
    }
    if (port <= 0 || port > 65535 || !cert || !key || nworkers < 1 || nworkers > 64 || max_streams < 1) usage();

    /* Every thread inherits this mask: the signals are taken by sigwait in the main thread only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    ssl_ctx = SSL_CTX_new(TLS_server_method());
    if (!ssl_ctx) die("SSL_CTX_new");
    SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ssl_ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ssl_ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ssl_ctx, key, SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        exit(2);
    }
    SSL_CTX_set_alpn_select_cb(ssl_ctx, alpn_select, NULL);

    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);

    workers = calloc((size_t)nworkers, sizeof(*workers));
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    for (int i = 0; i < nworkers; i++) {
        struct worker *w = &workers[i];
        w->id = i;
        w->rng = (seed + 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1)) | 1;
        w->listen_fd = listen_on(port);
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epfd < 0) die("epoll_create1");
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &ev);
    }
    for (int i = 0; i < nworkers; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker_run, &workers[i]) != 0) die("pthread_create");
        pthread_detach(t);
    }
    fprintf(stderr, "h2sink listening on 127.0.0.1:%d, %d thread(s), %d streams per connection\n", port, nworkers,
            max_streams);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        write_stats();
        if (sig != SIGUSR1) return 0;
    }
}
