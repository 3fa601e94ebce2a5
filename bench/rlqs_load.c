/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * rlqs_load.c - simulated Envoys for sluiced's rate limit quota service
 * (envoy.service.rate_limit_quota.v3.RateLimitQuotaService/
 * StreamRateLimitQuotas), the load side of bench/bench_rlqs.sh.
 *
 * E Envoys, each one long-lived bidirectional stream, spread round robin
 * over C HTTP/2 connections (prior knowledge, nghttp2's client session;
 * at most 100 streams a connection, the server's default
 * SETTINGS_MAX_CONCURRENT_STREAMS). Every Envoy has B buckets and sends,
 * every --interval, one RateLimitQuotaUsageReports with all of its
 * buckets' usages (the domain in the stream's first message only, as Envoy
 * does), on a schedule: Envoy i's reports are due at i/E of an interval
 * after the start, then every interval, so the reports are spread evenly.
 * Each usage says --demand requests allowed, none denied, and time_elapsed
 * the time since that Envoy's previous report (the interval for the first);
 * with --skew F Envoy 0 reports F times the others' demand. The simulated
 * Envoys do not enforce what they are assigned: demand stays constant, so
 * after the first divisions the server sees a steady state.
 *
 * Bucket ids (--bucket):
 *   shared     {KEY: "u<j>"}: every Envoy reports the same B buckets, so
 *              each bucket's limit is divided among E members (the case
 *              the fair division is for);
 *   per-envoy  {KEY: "u<j>", "envoy": "<i>"}: no two Envoys share one.
 * KEY is --key (default "user").
 *
 * Messages are encoded and decoded by hand (protobuf wire format, the
 * field numbers of Envoy's rlqs.proto, ratelimit_strategy.proto and
 * token_bucket.proto, with bucket_quota_usages a repeated
 * BucketQuotaUsage as in the released v3 API). The server's messages are
 * read whole (gRPC's 5-byte prefix, across DATA frames) and each
 * BucketAction counted by kind; an assignment marks its bucket (by the
 * digits of KEY's value) as assigned for that Envoy.
 *
 * With --pid P (sluiced's PID) it reads P's utime+stime (/proc/P/stat) at
 * the start and at the end of the measured window (after --warmup) and
 * P's VmRSS before it connects and at the end, and prints the server's CPU
 * per report and per bucket usage and its memory growth per bucket.
 *
 * A report that falls due while the stream's previous one is still waiting
 * for HTTP/2 flow control (the server not reading) counts as late, with
 * what held it (the stream's or the connection's window and, for the
 * latter, how long since the server last gave that connection window);
 * the longest any report waited to be handed to nghttp2 is kept. These and
 * the CPU figures cover the measured window only.
 *
 * Output: `name value unit` lines (bench/lib.sh's format). Exit status 0
 * when it ran to the end (whatever the figures), 1 when it could not
 * connect or a connection failed, 2 on bad options.
 *
 * usage: rlqs_load --port P [--host 127.0.0.1] [--envoys E] [--conns C]
 *                  [--buckets B] [--interval S] [--seconds S] [--warmup S]
 *                  [--domain D] [--key KEY] [--bucket shared|per-envoy]
 *                  [--demand N] [--skew F] [--pid PID] [--name PREFIX]
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#define MAX_PER_CONN 100
#define MAX_CONNS    4096
#define MAX_BUCKETS  65536

static const char rlqs_path[] =
    "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas";

struct buf {
    unsigned char *p;
    size_t len, off, cap;
};

struct envoy {
    int idx;
    int32_t stream_id;
    struct cn *c;
    int64_t next_due_ns, last_sent_ns;
    int64_t queued_ns; /* when the oldest report in out was queued, 0 if none */
    bool first_sent, open, closed_by_server;
    struct buf out; /* framed reports not yet taken by nghttp2 */
    struct buf in;  /* the server's bytes not yet a whole message */
    unsigned assigned;
    uint8_t *bucket_seen; /* B flags: an assignment arrived for bucket j */
    char status[16];      /* grpc-status of the trailers, if any */
};

struct cn {
    int fd;
    nghttp2_session *s;
    int64_t last_window_ns; /* when the server last gave connection window */
    bool want_out;          /* EPOLLOUT registered */
    bool dead;
};

static struct {
    const char *host, *domain, *key, *name;
    int port, envoys, conns, buckets;
    bool per_envoy;
    double interval, seconds, warmup, skew;
    uint64_t demand;
    int pid;
    /* counters */
    uint64_t reports, usages, requests, reports_late, late_stream_window, late_conn_window,
        reports_measured, usages_measured;
    uint64_t messages, actions, token_buckets, allow_all, deny_all, other_strategy, abandons;
    uint64_t bad_messages, stream_errors, rst, goaway, conn_errors;
    int64_t wait_max_ns, window_gap_max_ns;
    uint64_t waited_100ms, conn_window_updates, conn_window_given, data_sent;
    bool measuring, ending;
} g = {.host = "127.0.0.1",
       .domain = "bench",
       .key = "user",
       .name = "rlqs",
       .envoys = 100,
       .buckets = 100,
       .interval = 1,
       .seconds = 10,
       .warmup = 3,
       .skew = 1,
       .demand = 10};

static struct envoy *envoys;
static struct cn *conns;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void buf_room(struct buf *b, size_t n)
{
    if (b->off > 0 && b->off == b->len)
        b->off = b->len = 0;
    if (b->len + n <= b->cap)
        return;
    if (b->off > 0) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->len + n <= b->cap)
            return;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n)
        cap *= 2;
    b->p = realloc(b->p, cap);
    if (b->p == NULL) {
        perror("rlqs_load: realloc");
        exit(1);
    }
    b->cap = cap;
}

/* ------------------------------------------------------ protobuf writing */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;

    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static unsigned char *put_bytes(unsigned char *p, int field, const void *s, size_t n)
{
    *p++ = (unsigned char)(field << 3 | 2);
    p = put_varint(p, n);
    memcpy(p, s, n);
    return p + n;
}

/* A map<string,string> entry {1: key, 2: value} as field 1 of BucketId. */
static unsigned char *put_pair(unsigned char *p, const char *k, const char *v)
{
    size_t kn = strlen(k), vn = strlen(v);
    size_t en = 1 + varint_len(kn) + kn + 1 + varint_len(vn) + vn;

    *p++ = 0x0a;
    p = put_varint(p, en);
    p = put_bytes(p, 1, k, kn);
    return put_bytes(p, 2, v, vn);
}

/* One BucketQuotaUsage {1: bucket_id, 2: time_elapsed, 3: allowed, 4: denied}
 * into p (room for 256 bytes); its end. */
static unsigned char *put_usage(unsigned char *p, const struct envoy *e, int j, int64_t elapsed_ns,
                                uint64_t allowed)
{
    unsigned char id[160], dur[32], *q = id, *d = dur;
    char v[24], ev[24];

    snprintf(v, sizeof(v), "u%d", j);
    q = put_pair(q, g.key, v);
    if (g.per_envoy) {
        snprintf(ev, sizeof(ev), "%d", e->idx);
        q = put_pair(q, "envoy", ev);
    }
    if (elapsed_ns / 1000000000 > 0) {
        *d++ = 0x08; /* Duration.seconds */
        d = put_varint(d, (uint64_t)(elapsed_ns / 1000000000));
    }
    if (elapsed_ns % 1000000000 > 0) {
        *d++ = 0x10; /* Duration.nanos */
        d = put_varint(d, (uint64_t)(elapsed_ns % 1000000000));
    }
    size_t idn = (size_t)(q - id), dn = (size_t)(d - dur);
    size_t un = 1 + varint_len(idn) + idn + 1 + varint_len(dn) + dn + 1 + varint_len(allowed) + 2;

    *p++ = 0x12; /* bucket_quota_usages */
    p = put_varint(p, un);
    p = put_bytes(p, 1, id, idn);
    p = put_bytes(p, 2, dur, dn);
    *p++ = 0x18; /* num_requests_allowed */
    p = put_varint(p, allowed);
    *p++ = 0x20; /* num_requests_denied */
    *p++ = 0;
    return p;
}

/* Envoy e's report, behind gRPC's prefix, appended to e->out. */
static void put_report(struct envoy *e, int64_t elapsed_ns)
{
    size_t dn = strlen(g.domain);
    size_t max = 5 + 16 + dn + (size_t)g.buckets * 256;
    uint64_t allowed = e->idx == 0 ? (uint64_t)((double)g.demand * g.skew) : g.demand;
    unsigned char *start, *p;

    buf_room(&e->out, max);
    start = e->out.p + e->out.len;
    p = start + 5;
    if (!e->first_sent)
        p = put_bytes(p, 1, g.domain, dn);
    for (int j = 0; j < g.buckets; j++)
        p = put_usage(p, e, j, elapsed_ns, allowed);
    size_t ml = (size_t)(p - start) - 5;
    start[0] = 0;
    start[1] = (unsigned char)(ml >> 24);
    start[2] = (unsigned char)(ml >> 16);
    start[3] = (unsigned char)(ml >> 8);
    start[4] = (unsigned char)ml;
    e->out.len += 5 + ml;
    e->first_sent = true;
    g.requests += allowed * (uint64_t)g.buckets;
}

/* ------------------------------------------------------ protobuf reading */

struct rd {
    const unsigned char *p, *end;
};

static bool rd_varint(struct rd *r, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
        unsigned char b = *r->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The next field: its number and wire type; a LEN field's bytes in *sub,
 * a varint's value in *v; other types skipped. */
static bool rd_field(struct rd *r, int *field, struct rd *sub, uint64_t *v)
{
    uint64_t tag, n;

    if (!rd_varint(r, &tag))
        return false;
    *field = (int)(tag >> 3);
    switch (tag & 7) {
    case 0:
        return rd_varint(r, v);
    case 1:
        if (r->end - r->p < 8)
            return false;
        r->p += 8;
        return true;
    case 2:
        if (!rd_varint(r, &n) || (uint64_t)(r->end - r->p) < n)
            return false;
        sub->p = r->p;
        sub->end = r->p + n;
        r->p += n;
        return true;
    case 5:
        if (r->end - r->p < 4)
            return false;
        r->p += 4;
        return true;
    default:
        return false;
    }
}

/* The bucket index of a BucketId (the digits after KEY's value's first
 * character), -1 if none. */
static int bucket_index(struct rd id)
{
    size_t kl = strlen(g.key);
    int f, idx = -1;
    struct rd entry, s, key = {0}, val = {0};
    uint64_t v;

    while (id.p < id.end) {
        if (!rd_field(&id, &f, &entry, &v))
            return -1;
        if (f != 1)
            continue;
        key.p = key.end = val.p = val.end = NULL;
        while (entry.p < entry.end) {
            if (!rd_field(&entry, &f, &s, &v))
                return -1;
            if (f == 1)
                key = s;
            else if (f == 2)
                val = s;
        }
        if ((size_t)(key.end - key.p) == kl && memcmp(key.p, g.key, kl) == 0 &&
            val.end - val.p >= 2) {
            idx = 0;
            for (const unsigned char *c = val.p + 1; c < val.end; c++) {
                if (*c < '0' || *c > '9' || idx > MAX_BUCKETS)
                    return -1;
                idx = idx * 10 + (*c - '0');
            }
        }
    }
    return idx;
}

/* One QuotaAssignmentAction: count its strategy. */
static void count_assignment(struct rd a)
{
    int f;
    struct rd s, t;
    uint64_t v;
    bool any = false;

    while (a.p < a.end) {
        if (!rd_field(&a, &f, &s, &v)) {
            g.bad_messages++;
            return;
        }
        if (f != 3)
            continue;
        while (s.p < s.end) {
            if (!rd_field(&s, &f, &t, &v)) {
                g.bad_messages++;
                return;
            }
            any = true;
            if (f == 1 && v == 1)
                g.deny_all++;
            else if (f == 1)
                g.allow_all++;
            else if (f == 3)
                g.token_buckets++;
            else
                g.other_strategy++;
        }
    }
    if (!any)
        g.allow_all++; /* no rate_limit_strategy: allow all */
}

/* One RateLimitQuotaResponse for Envoy e. */
static void read_response(struct envoy *e, const unsigned char *m, size_t n)
{
    struct rd r = {m, m + n}, act, sub, id = {0}, qa = {0};
    int f;
    uint64_t v;

    g.messages++;
    while (r.p < r.end) {
        if (!rd_field(&r, &f, &act, &v)) {
            g.bad_messages++;
            return;
        }
        if (f != 1)
            continue;
        bool assign = false, abandon = false;
        while (act.p < act.end) {
            if (!rd_field(&act, &f, &sub, &v)) {
                g.bad_messages++;
                return;
            }
            if (f == 1)
                id = sub;
            else if (f == 2)
                assign = true, qa = sub;
            else if (f == 3)
                abandon = true;
        }
        g.actions++;
        if (abandon) {
            g.abandons++;
        } else if (assign) {
            count_assignment(qa);
            int j = bucket_index(id);
            if (j >= 0 && j < g.buckets && !e->bucket_seen[j]) {
                e->bucket_seen[j] = 1;
                e->assigned++;
            }
        } else {
            g.bad_messages++;
        }
    }
}

/* ------------------------------------------------------ nghttp2 callbacks */

static ssize_t cb_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *u)
{
    struct cn *c = u;
    ssize_t w = send(c->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);

    (void)s;
    (void)flags;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return NGHTTP2_ERR_WOULDBLOCK;
    if (w < 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return w;
}

static ssize_t cb_read_data(nghttp2_session *s, int32_t id, uint8_t *out, size_t len,
                            uint32_t *flags, nghttp2_data_source *src, void *u)
{
    struct envoy *e = src->ptr;
    size_t have = e->out.len - e->out.off;

    (void)s;
    (void)id;
    (void)flags;
    (void)u;
    if (have == 0)
        return NGHTTP2_ERR_DEFERRED;
    if (len > have)
        len = have;
    memcpy(out, e->out.p + e->out.off, len);
    e->out.off += len;
    g.data_sent += len;
    if (e->out.off == e->out.len && e->queued_ns != 0) { /* all handed to nghttp2 */
        int64_t w = now_ns() - e->queued_ns;
        if (g.measuring && w > g.wait_max_ns)
            g.wait_max_ns = w;
        g.waited_100ms += g.measuring && w > 100000000;
        e->queued_ns = 0;
    }
    return (ssize_t)len;
}

static int cb_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *u)
{
    struct envoy *e = nghttp2_session_get_stream_user_data(s, id);

    (void)flags;
    (void)u;
    if (e == NULL)
        return 0;
    buf_room(&e->in, len);
    memcpy(e->in.p + e->in.len, data, len);
    e->in.len += len;
    while (e->in.len - e->in.off >= 5) {
        const unsigned char *h = e->in.p + e->in.off;
        size_t ml = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
        if (e->in.len - e->in.off < 5 + ml)
            break;
        if (h[0] != 0)
            g.bad_messages++; /* compressed: not asked for */
        else
            read_response(e, h + 5, ml);
        e->in.off += 5 + ml;
    }
    return 0;
}

static int cb_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *u)
{
    struct envoy *e = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);

    (void)flags;
    (void)u;
    if (e != NULL && nl == 11 && memcmp(name, "grpc-status", 11) == 0) {
        size_t n = vl < sizeof(e->status) - 1 ? vl : sizeof(e->status) - 1;
        memcpy(e->status, value, n);
        e->status[n] = 0;
    } else if (e != NULL && nl == 12 && memcmp(name, "grpc-message", 12) == 0 &&
               g.stream_errors < 5) {
        fprintf(stderr, "rlqs_load: envoy %d: grpc-message: %.*s\n", e->idx, (int)vl, value);
    }
    return 0;
}

static int cb_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *u)
{
    (void)s;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        g.goaway++;
        fprintf(stderr, "rlqs_load: the server sent GOAWAY (error %u)\n", f->goaway.error_code);
    } else if (f->hd.type == NGHTTP2_RST_STREAM) {
        g.rst++;
    } else if (f->hd.type == NGHTTP2_WINDOW_UPDATE && f->hd.stream_id == 0) {
        ((struct cn *)u)->last_window_ns = now_ns();
        g.conn_window_updates++;
        g.conn_window_given += (uint64_t)f->window_update.window_size_increment;
    }
    return 0;
}

static int cb_stream_close(nghttp2_session *s, int32_t id, uint32_t error, void *u)
{
    struct envoy *e = nghttp2_session_get_stream_user_data(s, id);

    (void)u;
    if (e == NULL || !e->open || g.ending)
        return 0;
    e->open = false;
    e->closed_by_server = true;
    if (g.stream_errors++ < 5)
        fprintf(stderr, "rlqs_load: envoy %d: stream ended (grpc-status %s, h2 error %u)\n", e->idx,
                e->status[0] ? e->status : "none", error);
    return 0;
}

/* ------------------------------------------------------ connections */

static int connect_one(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (inet_pton(AF_INET, g.host, &sa.sin_addr) != 1) {
        fprintf(stderr, "rlqs_load: bad --host %s\n", g.host);
        exit(2);
    }
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        perror("rlqs_load: connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void open_conn(struct cn *c, nghttp2_session_callbacks *cbs)
{
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 24},
    };

    c->fd = connect_one();
    if (nghttp2_session_client_new(&c->s, cbs, c) != 0) {
        fprintf(stderr, "rlqs_load: nghttp2_session_client_new failed\n");
        exit(1);
    }
    nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0]));
    nghttp2_session_set_local_window_size(c->s, NGHTTP2_FLAG_NONE, 0, 1 << 30);
}

static void open_stream(struct envoy *e)
{
    static const char ct[] = "application/grpc", te[] = "trailers";
#define NV(n, v)                                                                                   \
    {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv h[] = {
        NV(":method", "POST"), NV(":scheme", "http"),  NV(":path", rlqs_path),
        NV(":authority", "b"), NV("content-type", ct), NV("te", te),
    };
#undef NV
    nghttp2_data_provider dp = {.source.ptr = e, .read_callback = cb_read_data};

    e->stream_id = nghttp2_submit_request(e->c->s, NULL, h, sizeof(h) / sizeof(h[0]), &dp, e);
    if (e->stream_id < 0) {
        fprintf(stderr, "rlqs_load: nghttp2_submit_request: %s\n", nghttp2_strerror(e->stream_id));
        exit(1);
    }
    e->open = true;
}

static void conn_failed(struct cn *c, const char *why)
{
    if (c->dead)
        return;
    c->dead = true;
    g.conn_errors++;
    fprintf(stderr, "rlqs_load: a connection failed: %s\n", why);
}

/* Write what nghttp2 has; ask for EPOLLOUT while it cannot all go. */
static void flush(int ep, struct cn *c)
{
    if (c->dead)
        return;
    int rv = nghttp2_session_send(c->s);
    if (rv != 0) {
        conn_failed(c, nghttp2_strerror(rv));
        return;
    }
    bool want = nghttp2_session_want_write(c->s);
    if (want != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
}

static void on_readable(struct cn *c)
{
    unsigned char b[1 << 16];

    for (;;) {
        ssize_t r = recv(c->fd, b, sizeof(b), MSG_DONTWAIT);
        if (r == 0) {
            conn_failed(c, "the server closed the connection");
            return;
        }
        if (r < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_failed(c, strerror(errno));
            return;
        }
        ssize_t n = nghttp2_session_mem_recv(c->s, b, (size_t)r);
        if (n < 0) {
            conn_failed(c, nghttp2_strerror((int)n));
            return;
        }
    }
}

/* ------------------------------------------------------ the server's /proc */

static long long proc_cpu_ticks(int pid)
{
    char path[64], line[2048];
    FILE *f;
    long long ut = -1, st = -1;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    if (fgets(line, sizeof(line), f) != NULL) {
        char *p = strrchr(line, ')'); /* comm may hold spaces */
        if (p != NULL &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &ut, &st) != 2)
            ut = -1;
    }
    fclose(f);
    return ut < 0 ? -1 : ut + st;
}

static long long proc_rss_kb(int pid)
{
    char path[64], line[256];
    FILE *f;
    long long kb = -1;

    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* ------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr,
            "usage: rlqs_load --port P [--host H] [--envoys E] [--conns C] [--buckets B]\n"
            "                 [--interval S] [--seconds S] [--warmup S] [--domain D] [--key K]\n"
            "                 [--bucket shared|per-envoy] [--demand N] [--skew F] [--pid PID]\n"
            "                 [--name PREFIX]\n");
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage();
        if (!strcmp(k, "--host"))
            g.host = v;
        else if (!strcmp(k, "--port"))
            g.port = atoi(v);
        else if (!strcmp(k, "--envoys"))
            g.envoys = atoi(v);
        else if (!strcmp(k, "--conns"))
            g.conns = atoi(v);
        else if (!strcmp(k, "--buckets"))
            g.buckets = atoi(v);
        else if (!strcmp(k, "--interval"))
            g.interval = atof(v);
        else if (!strcmp(k, "--seconds"))
            g.seconds = atof(v);
        else if (!strcmp(k, "--warmup"))
            g.warmup = atof(v);
        else if (!strcmp(k, "--domain"))
            g.domain = v;
        else if (!strcmp(k, "--key"))
            g.key = v;
        else if (!strcmp(k, "--bucket") && (!strcmp(v, "shared") || !strcmp(v, "per-envoy")))
            g.per_envoy = !strcmp(v, "per-envoy");
        else if (!strcmp(k, "--demand"))
            g.demand = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--skew"))
            g.skew = atof(v);
        else if (!strcmp(k, "--pid"))
            g.pid = atoi(v);
        else if (!strcmp(k, "--name"))
            g.name = v;
        else {
            fprintf(stderr, "rlqs_load: unknown option %s\n", k);
            usage();
        }
    }
    if (g.conns == 0)
        g.conns = (g.envoys + MAX_PER_CONN - 1) / MAX_PER_CONN;
    if (g.port <= 0 || g.port > 65535 || g.envoys < 1 || g.conns < 1 || g.conns > MAX_CONNS ||
        g.conns > g.envoys || g.buckets < 1 || g.buckets > MAX_BUCKETS || g.interval <= 0 ||
        g.seconds <= 0 || g.warmup < 0 || g.skew <= 0 || g.domain[0] == 0 || g.key[0] == 0 ||
        strlen(g.domain) > 128 || strlen(g.key) > 64)
        usage();
    if ((g.envoys + g.conns - 1) / g.conns > MAX_PER_CONN) {
        fprintf(stderr,
                "rlqs_load: %d envoys over %d connections is more than %d streams a "
                "connection\n",
                g.envoys, g.conns, MAX_PER_CONN);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    nghttp2_session_callbacks *cbs;
    struct epoll_event ev, evs[256];
    int ep = epoll_create1(0);
    int64_t interval, start, measure_from, end;
    long long rss0 = -1, rss1 = -1, cpu0 = -1, cpu1 = -1;

    parse_args(argc, argv);
    interval = (int64_t)(g.interval * 1e9);
    if (g.pid > 0 && (rss0 = proc_rss_kb(g.pid)) < 0) {
        fprintf(stderr, "rlqs_load: no process %d\n", g.pid);
        return 2;
    }
    envoys = calloc((size_t)g.envoys, sizeof(*envoys));
    conns = calloc((size_t)g.conns, sizeof(*conns));
    uint8_t *seen = calloc((size_t)g.envoys, (size_t)g.buckets);
    if (envoys == NULL || conns == NULL || seen == NULL) {
        perror("rlqs_load: calloc");
        return 1;
    }
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, cb_send);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cb_data_chunk);
    nghttp2_session_callbacks_set_on_header_callback(cbs, cb_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cb_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cb_stream_close);
    for (int i = 0; i < g.conns; i++) {
        open_conn(&conns[i], cbs);
        ev.events = EPOLLIN;
        ev.data.ptr = &conns[i];
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    start = now_ns();
    measure_from = start + (int64_t)(g.warmup * 1e9);
    end = measure_from + (int64_t)(g.seconds * 1e9);
    for (int i = 0; i < g.envoys; i++) {
        struct envoy *e = &envoys[i];
        e->idx = i;
        e->c = &conns[i % g.conns];
        e->bucket_seen = seen + (size_t)i * (size_t)g.buckets;
        e->next_due_ns = start + interval * i / g.envoys;
        open_stream(e);
    }
    for (int i = 0; i < g.conns; i++)
        flush(ep, &conns[i]);

    for (;;) {
        int64_t now = now_ns(), next = end;
        if (!g.measuring && now >= measure_from) {
            g.measuring = true;
            if (g.pid > 0)
                cpu0 = proc_cpu_ticks(g.pid);
        }
        if (now >= end)
            break;
        for (int i = 0; i < g.envoys; i++) {
            struct envoy *e = &envoys[i];
            if (!e->open || e->c->dead)
                continue;
            if (e->next_due_ns <= now) {
                if (g.measuring && e->out.len > e->out.off) { /* the previous one is not out yet */
                    g.reports_late++;
                    if (nghttp2_session_get_stream_remote_window_size(e->c->s, e->stream_id) <= 0)
                        g.late_stream_window++;
                    else if (nghttp2_session_get_remote_window_size(e->c->s) <= 0) {
                        g.late_conn_window++;
                        int64_t gap = now - e->c->last_window_ns;
                        if (gap > g.window_gap_max_ns)
                            g.window_gap_max_ns = gap;
                    }
                }
                if (e->queued_ns == 0)
                    e->queued_ns = now;
                put_report(e, e->last_sent_ns ? now - e->last_sent_ns : interval);
                e->last_sent_ns = now;
                nghttp2_session_resume_data(e->c->s, e->stream_id);
                g.reports++;
                g.usages += (uint64_t)g.buckets;
                if (g.measuring) {
                    g.reports_measured++;
                    g.usages_measured += (uint64_t)g.buckets;
                }
                e->next_due_ns += interval;
                if (e->next_due_ns <= now) /* fell behind by a whole interval */
                    e->next_due_ns = now + interval;
            }
            if (e->next_due_ns < next)
                next = e->next_due_ns;
        }
        if (!g.measuring && measure_from < next)
            next = measure_from;
        for (int i = 0; i < g.conns; i++)
            flush(ep, &conns[i]);
        int64_t wait = next > now ? next - now : 0;
        struct timespec ts = {wait / 1000000000, wait % 1000000000};
        int n = epoll_pwait2(ep, evs, 256, &ts, NULL);
        for (int k = 0; k < n; k++) {
            struct cn *c = evs[k].data.ptr;
            if (c->dead)
                continue;
            if (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                on_readable(c);
            flush(ep, c);
        }
    }
    if (g.pid > 0) {
        cpu1 = proc_cpu_ticks(g.pid);
        rss1 = proc_rss_kb(g.pid);
    }
    /* No new reports; up to 2 s for the ones queued to go out, so that every
     * report counted as sent reached the server before the connections end,
     * and a moment for the server's answers to them. */
    for (int64_t stop = now_ns() + 2000000000LL; now_ns() < stop;) {
        bool pending = false;
        for (int i = 0; i < g.envoys; i++)
            pending |=
                envoys[i].open && !envoys[i].c->dead && envoys[i].out.len > envoys[i].out.off;
        for (int i = 0; i < g.conns; i++) {
            flush(ep, &conns[i]);
            pending |= !conns[i].dead && nghttp2_session_want_write(conns[i].s);
        }
        int n = epoll_wait(ep, evs, 256, pending ? 10 : 200);
        for (int k = 0; k < n; k++) {
            struct cn *c = evs[k].data.ptr;
            if (!c->dead && (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                on_readable(c);
            flush(ep, c);
        }
        if (!pending && n == 0)
            break;
    }

    int open = 0, all_assigned = 0;
    uint64_t assigned = 0;
    for (int i = 0; i < g.envoys; i++) {
        open += envoys[i].open && !envoys[i].c->dead;
        all_assigned += envoys[i].assigned == (unsigned)g.buckets;
        assigned += envoys[i].assigned;
    }
    const char *p = g.name;
    printf("%s_envoys %d count\n", p, g.envoys);
    printf("%s_connections %d count\n", p, g.conns);
    printf("%s_buckets_per_envoy %d count\n", p, g.buckets);
    printf("%s_reports_sent %llu count\n", p, (unsigned long long)g.reports);
    printf("%s_usages_sent %llu count\n", p, (unsigned long long)g.usages);
    printf("%s_requests_reported %llu count\n", p, (unsigned long long)g.requests);
    printf("%s_reports_late %llu count\n", p, (unsigned long long)g.reports_late);
    printf("%s_reports_late_stream_window %llu count\n", p,
           (unsigned long long)g.late_stream_window);
    printf("%s_reports_late_connection_window %llu count\n", p,
           (unsigned long long)g.late_conn_window);
    printf("%s_report_wait_max %.1f ms\n", p, (double)g.wait_max_ns / 1e6);
    printf("%s_reports_waited_over_100ms %llu count\n", p, (unsigned long long)g.waited_100ms);
    printf("%s_data_bytes_sent %llu bytes\n", p, (unsigned long long)g.data_sent);
    printf("%s_connection_window_updates %llu count\n", p,
           (unsigned long long)g.conn_window_updates);
    printf("%s_connection_window_given %llu bytes\n", p, (unsigned long long)g.conn_window_given);
    printf("%s_late_window_gap_max %.1f ms\n", p, (double)g.window_gap_max_ns / 1e6);
    printf("%s_reports_measured %llu count\n", p, (unsigned long long)g.reports_measured);
    printf("%s_messages_received %llu count\n", p, (unsigned long long)g.messages);
    printf("%s_actions_received %llu count\n", p, (unsigned long long)g.actions);
    printf("%s_token_bucket_assignments %llu count\n", p, (unsigned long long)g.token_buckets);
    printf("%s_allow_all_assignments %llu count\n", p, (unsigned long long)g.allow_all);
    printf("%s_deny_all_assignments %llu count\n", p, (unsigned long long)g.deny_all);
    printf("%s_abandon_actions %llu count\n", p, (unsigned long long)g.abandons);
    printf("%s_buckets_assigned %llu count\n", p, (unsigned long long)assigned);
    printf("%s_envoys_all_assigned %d count\n", p, all_assigned);
    printf("%s_streams_open_at_end %d count\n", p, open);
    printf("%s_stream_errors %llu count\n", p, (unsigned long long)g.stream_errors);
    printf("%s_rst_stream %llu count\n", p, (unsigned long long)g.rst);
    printf("%s_goaway %llu count\n", p, (unsigned long long)g.goaway);
    printf("%s_connection_errors %llu count\n", p, (unsigned long long)g.conn_errors);
    printf("%s_other_assignments %llu count\n", p, (unsigned long long)g.other_strategy);
    printf("%s_bad_messages %llu count\n", p, (unsigned long long)g.bad_messages);
    if (g.pid > 0 && cpu0 >= 0 && cpu1 >= 0 && g.reports_measured > 0) {
        double cpu_s = (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK);
        printf("%s_server_cpu_ticks %lld count\n", p, cpu1 - cpu0);
        printf("%s_server_cpu %.3f cores\n", p, cpu_s / g.seconds);
        printf("%s_server_cpu_per_report %.2f us\n", p, cpu_s * 1e6 / (double)g.reports_measured);
        printf("%s_server_cpu_per_bucket_report %.1f ns\n", p,
               cpu_s * 1e9 / (double)g.usages_measured);
    }
    if (g.pid > 0 && rss0 >= 0 && rss1 >= 0) {
        printf("%s_server_rss_before %lld kB\n", p, rss0);
        printf("%s_server_rss_after %lld kB\n", p, rss1);
        printf("%s_server_rss_per_bucket %.0f bytes\n", p,
               (double)(rss1 - rss0) * 1024.0 / ((double)g.envoys * g.buckets));
    }
    g.ending = true;
    for (int i = 0; i < g.conns; i++) {
        if (!conns[i].dead) {
            nghttp2_session_terminate_session(conns[i].s, NGHTTP2_NO_ERROR);
            nghttp2_session_send(conns[i].s);
        }
        close(conns[i].fd);
        nghttp2_session_del(conns[i].s);
    }
    nghttp2_session_callbacks_del(cbs);
    return g.conn_errors > 0 ? 1 : 0;
}
