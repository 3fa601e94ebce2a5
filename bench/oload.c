/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * oload.c - an open-loop load generator for sluiced's RESP, HTTP/1.1 and
 * gRPC (Envoy's ShouldRateLimit over HTTP/2 with prior knowledge) APIs
 * (Debian 12 ships neither wrk2 nor memtier_benchmark, and h2load sends
 * as fast as it can, not on a schedule).
 *
 * Requests are sent on a schedule, not when the previous answer came back:
 * `rate` requests a second spread over `conns` connections, each request's
 * latency counted from the time it was due, so a stall of the server shows
 * as latency of every request that should have gone meanwhile (the
 * "coordinated omission" a closed-loop client hides). Each connection
 * pipelines whatever is due; answers come back in order and are matched to
 * their due times first in, first out.
 *
 * Output: `name value unit` lines (bench/lib.sh's format): the rate reached,
 * p50/p99/p99.9 of the latency, the answers and errors. It does not check
 * what the answers say beyond their framing and their status (HTTP) or
 * their type (RESP error replies count as errors). gRPC: each call is a
 * stream (HPACK from the static table and literals, never indexed, so no
 * dynamic table is kept), answered when its trailers end it, matched to
 * its due time by stream id; RST_STREAM counts as an error, a grpc-status
 * in the trailers is not read. At most GRPC_INFLIGHT calls per connection
 * (the server's default SETTINGS_MAX_CONCURRENT_STREAMS is 100): beyond
 * that the schedule waits, which shows as latency.
 *
 * With --api gubernator the gRPC calls are gubernator v2's GetRateLimits
 * instead (one RateLimitReq: name "bench", the key as unique_key, 1 hit, a
 * token bucket of 1,000,000,000 a second, --behavior as its behavior field:
 * 0 BATCHING, 1 NO_BATCHING, 2 GLOBAL), so that a peer can be loaded by the
 * same client on the same schedule.
 *
 * usage: oload --proto resp|http|grpc --port P [--host 127.0.0.1] --rate N
 *              [--conns C] [--seconds S] [--keys K] [--warmup S] [--name PREFIX]
 *              [--api rls|gubernator] [--behavior N] [--order random|sequential]
 *
 * --order sequential sends k0, k1, ... k(K-1), k0, ... instead of random
 * keys, so that a run of at least K requests touches every key (a fill).
 */
#define _GNU_SOURCE /* memmem */
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

#define MAX_CONNS     1024
#define RING          65536 /* due times of requests in flight, per connection */
#define HIST_BUCKETS  4096  /* log-linear latency buckets */
#define GRPC_INFLIGHT 96    /* calls in flight per HTTP/2 connection */

struct conn {
    int fd;
    int64_t next_due_ns; /* when the next request is due */
    int64_t due[RING];   /* due times of requests sent and not answered */
    unsigned head, n;
    char in[1 << 16];
    size_t in_len;
    char out[1 << 16];
    size_t out_len;
    uint32_t next_stream; /* gRPC: the next stream id (odd) */
};

static struct {
    bool http, grpc, gubernator, sequential;
    unsigned next_key; /* --order sequential: the next key's number */
    unsigned behavior; /* gubernator's RateLimitReq.behavior */
    const char *host, *name;
    int port;
    double rate;
    int conns;
    double seconds, warmup;
    unsigned keys;
    uint64_t sent, answered, errors, late_sends;
    uint64_t hist[HIST_BUCKETS];
    uint64_t recorded;
} g = {.host = "127.0.0.1", .name = "oload", .conns = 16, .seconds = 10, .keys = 100000};

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Buckets: 64 per power of two above 1 us, so each is within ~1.1 %. */
static unsigned bucket_of(int64_t ns)
{
    uint64_t us = ns < 1000 ? 1 : (uint64_t)ns / 1000;
    unsigned lg = 63 - (unsigned)__builtin_clzll(us);
    unsigned sub = lg >= 6 ? (unsigned)((us >> (lg - 6)) & 63) : (unsigned)((us << (6 - lg)) & 63);
    unsigned b = lg * 64 + sub;

    return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

static double bucket_us(unsigned b)
{
    unsigned lg = b / 64, sub = b % 64;

    return (double)(1ULL << lg) * (1.0 + sub / 64.0);
}

static double percentile(double p)
{
    uint64_t want = (uint64_t)(p * (double)g.recorded), seen = 0;

    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        seen += g.hist[b];
        if (seen > want)
            return bucket_us(b);
    }
    return bucket_us(HIST_BUCKETS - 1);
}

/* ---------------------------------------------------------------- gRPC */

static const char grpc_path[] = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";
static const char guber_path[] = "/pb.gubernator.V1/GetRateLimits";

/* A protobuf varint at p; its length. */
static size_t put_varint(char *p, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        p[n++] = (char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (char)v;
    return n;
}

/* GetRateLimitsReq{requests {name: "bench", unique_key: key, hits: 1,
 * limit: 1e9, duration: 1000 (ms), algorithm: TOKEN_BUCKET, behavior}} */
static size_t put_guber_msg(char *m, const char *key, int kn)
{
    char r[64];
    size_t rl = 0, ml = 0;

    r[rl++] = 0x0a;
    r[rl++] = 5;
    memcpy(r + rl, "bench", 5);
    rl += 5;
    r[rl++] = 0x12;
    r[rl++] = (char)kn;
    memcpy(r + rl, key, (size_t)kn);
    rl += (size_t)kn;
    r[rl++] = 0x18; /* hits */
    r[rl++] = 1;
    r[rl++] = 0x20; /* limit */
    rl += put_varint(r + rl, 1000000000);
    r[rl++] = 0x28; /* duration */
    rl += put_varint(r + rl, 1000);
    if (g.behavior != 0) {
        r[rl++] = 0x38;
        rl += put_varint(r + rl, g.behavior);
    }
    m[ml++] = 0x0a;
    m[ml++] = (char)rl;
    memcpy(m + ml, r, rl);
    return ml + rl;
}

static void put_frame_head(char *p, size_t len, int type, int flags, uint32_t stream)
{
    p[0] = (char)(len >> 16);
    p[1] = (char)(len >> 8);
    p[2] = (char)len;
    p[3] = (char)type;
    p[4] = (char)flags;
    p[5] = (char)(stream >> 24 & 0x7f);
    p[6] = (char)(stream >> 16);
    p[7] = (char)(stream >> 8);
    p[8] = (char)stream;
}

/* RateLimitRequest{domain: "bench", descriptors {entries {key: "user", value: key}}} */
static size_t put_rls_msg(char *m, const char *key, int kn)
{
    size_t ml = 0;

    m[ml++] = 0x0a;
    m[ml++] = 5;
    memcpy(m + ml, "bench", 5);
    ml += 5;
    m[ml++] = 0x12;
    m[ml++] = (char)(2 + 2 + 4 + 2 + kn);
    m[ml++] = 0x0a;
    m[ml++] = (char)(2 + 4 + 2 + kn);
    m[ml++] = 0x0a;
    m[ml++] = 4;
    memcpy(m + ml, "user", 4);
    ml += 4;
    m[ml++] = 0x12;
    m[ml++] = (char)kn;
    memcpy(m + ml, key, (size_t)kn);
    ml += (size_t)kn;
    return ml;
}

/* One call (HEADERS, then DATA ending the stream) for `key` into c->out. */
static int put_grpc(struct conn *c, const char *key, int kn, size_t room)
{
    char h[160], m[96];
    size_t hl = 0, ml = 0;
    uint32_t id = c->next_stream;
    const char *path = g.gubernator ? guber_path : grpc_path;
    size_t pl = strlen(path);

    if (room < 9 + sizeof(h) + 9 + 5 + sizeof(m))
        return 0;
    h[hl++] = (char)0x83; /* :method POST */
    h[hl++] = (char)0x86; /* :scheme http */
    h[hl++] = 0x04;       /* :path, literal without indexing */
    h[hl++] = (char)pl;
    memcpy(h + hl, path, pl);
    hl += pl;
    h[hl++] = 0x01; /* :authority */
    h[hl++] = 1;
    h[hl++] = 'b';
    h[hl++] = 0x0f; /* content-type (static index 31) */
    h[hl++] = 0x10;
    h[hl++] = 16;
    memcpy(h + hl, "application/grpc", 16);
    hl += 16;
    h[hl++] = 0x00; /* te: trailers, a new name */
    h[hl++] = 2;
    memcpy(h + hl, "te", 2);
    hl += 2;
    h[hl++] = 8;
    memcpy(h + hl, "trailers", 8);
    hl += 8;
    ml = g.gubernator ? put_guber_msg(m, key, kn) : put_rls_msg(m, key, kn);
    char *p = c->out + c->out_len;
    put_frame_head(p, hl, 1, 0x4, id); /* HEADERS, END_HEADERS */
    memcpy(p + 9, h, hl);
    p += 9 + hl;
    put_frame_head(p, 5 + ml, 0, 0x1, id); /* DATA, END_STREAM */
    p[9] = 0;
    p[10] = p[11] = p[12] = 0;
    p[13] = (char)ml;
    memcpy(p + 14, m, ml);
    c->next_stream += 2;
    return (int)(9 + hl + 9 + 5 + ml);
}

/* The connection preface, our SETTINGS and a large connection window. */
static void grpc_start(struct conn *c)
{
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    char *p = c->out;

    memcpy(p, preface, sizeof(preface) - 1);
    p += sizeof(preface) - 1;
    put_frame_head(p, 0, 4, 0, 0); /* SETTINGS */
    p += 9;
    put_frame_head(p, 4, 8, 0, 0); /* WINDOW_UPDATE on the connection */
    p[9] = 0x3f;
    p[10] = p[11] = p[12] = (char)0xff;
    p += 13;
    c->out_len = (size_t)(p - c->out);
    c->next_stream = 1;
}

/* One request for a random key into c->out. */
static void put_request(struct conn *c)
{
    char key[32], body[160];
    unsigned k = g.sequential ? g.next_key++ % g.keys : (unsigned)(random() % g.keys);
    int kn = snprintf(key, sizeof(key), "k%u", k), n;
    size_t room = sizeof(c->out) - c->out_len;

    if (g.grpc) {
        n = put_grpc(c, key, kn, room);
    } else if (g.http) {
        int bn = snprintf(body, sizeof(body),
                          "{\"domain\":\"bench\",\"descriptors\":[{\"user\":\"%s\"}]}", key);
        n = snprintf(c->out + c->out_len, room,
                     "POST /v1/check HTTP/1.1\r\nHost: b\r\nContent-Length: %d\r\n\r\n%s", bn,
                     body);
    } else {
        n = snprintf(
            c->out + c->out_len, room,
            "*5\r\n$8\r\nSL.CHECK\r\n$5\r\nbench\r\n$1\r\n1\r\n$4\r\nuser\r\n$%d\r\n%s\r\n", kn,
            key);
    }
    if (n > 0 && (size_t)n < room)
        c->out_len += (size_t)n;
}

/* Bytes of one complete RESP reply at b[0..n), 0 if incomplete, -1 if bad. */
static long resp_reply(const char *b, size_t n)
{
    const char *nl = memchr(b, '\n', n);
    long len, total, k;

    if (nl == NULL)
        return 0;
    total = nl - b + 1;
    switch (b[0]) {
    case '+':
    case '-':
    case ':':
        return total;
    case '$':
        len = strtol(b + 1, NULL, 10);
        if (len < 0)
            return total;
        return (size_t)(total + len + 2) <= n ? total + len + 2 : 0;
    case '*':
        len = strtol(b + 1, NULL, 10);
        for (long i = 0; i < len; i++) {
            k = resp_reply(b + total, n - (size_t)total);
            if (k <= 0)
                return k;
            total += k;
        }
        return total;
    default:
        return -1;
    }
}

/* Bytes of one complete HTTP response at b[0..n) (Content-Length framed). */
static long http_reply(const char *b, size_t n, bool *error)
{
    const char *end = memmem(b, n, "\r\n\r\n", 4), *cl;
    long head, len = 0;

    if (end == NULL)
        return 0;
    head = end - b + 4;
    cl = memmem(b, (size_t)head, "Content-Length: ", 16);
    if (cl != NULL)
        len = strtol(cl + 16, NULL, 10);
    *error = n < 12 || (b[9] != '2' && memcmp(b + 9, "429", 3) != 0);
    return (size_t)(head + len) <= n ? head + len : 0;
}

static void record(struct conn *c, int64_t now, bool error, bool measure)
{
    int64_t due = c->due[c->head];

    c->head = (c->head + 1) % RING;
    c->n--;
    g.answered++;
    g.errors += error;
    if (measure) {
        g.hist[bucket_of(now - due)]++;
        g.recorded++;
    }
}

/* The call on stream `id` ended (due times are kept by stream id). */
static void record_stream(struct conn *c, uint32_t id, int64_t now, bool error, bool measure)
{
    int64_t due = c->due[(id - 1) / 2 % RING];

    c->n--;
    g.answered++;
    g.errors += error;
    if (measure) {
        g.hist[bucket_of(now - due)]++;
        g.recorded++;
    }
}

/* HTTP/2 frames from the server: calls end with trailers (HEADERS with
 * END_STREAM) or RST_STREAM; SETTINGS and PING are acknowledged, DATA
 * given back to the connection's window. */
static int parse_frames(struct conn *c, int64_t now, bool measure)
{
    size_t off = 0;

    while (c->in_len - off >= 9) {
        const unsigned char *f = (const unsigned char *)c->in + off;
        size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
        int type = f[3], flags = f[4];
        uint32_t id =
            ((uint32_t)f[5] & 0x7f) << 24 | (uint32_t)f[6] << 16 | (uint32_t)f[7] << 8 | f[8];
        if (c->in_len - off < 9 + len)
            break;
        if (sizeof(c->out) - c->out_len < 32)
            break; /* an acknowledgement would not fit: later */
        if (type == 1 && (flags & 0x1) && id != 0) {
            record_stream(c, id, now, false, measure);
        } else if (type == 3 && id != 0) {
            record_stream(c, id, now, true, measure);
        } else if (type == 4 && !(flags & 0x1)) {
            put_frame_head(c->out + c->out_len, 0, 4, 0x1, 0);
            c->out_len += 9;
        } else if (type == 6 && !(flags & 0x1) && len == 8) {
            put_frame_head(c->out + c->out_len, 8, 6, 0x1, 0);
            memcpy(c->out + c->out_len + 9, f + 9, 8);
            c->out_len += 17;
        } else if (type == 0 && len > 0) {
            char *p = c->out + c->out_len;
            put_frame_head(p, 4, 8, 0, 0);
            p[9] = (char)(len >> 24);
            p[10] = (char)(len >> 16);
            p[11] = (char)(len >> 8);
            p[12] = (char)len;
            c->out_len += 13;
        } else if (type == 7) {
            fprintf(stderr, "oload: the server sent GOAWAY\n");
            return -1;
        }
        off += 9 + len;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return 0;
}

static int parse_answers(struct conn *c, int64_t now, bool measure)
{
    if (g.grpc)
        return parse_frames(c, now, measure);

    size_t off = 0;

    while (off < c->in_len && c->n > 0) {
        bool error = false;
        long k = g.http ? http_reply(c->in + off, c->in_len - off, &error)
                        : resp_reply(c->in + off, c->in_len - off);
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        if (!g.http)
            error = c->in[off] == '-';
        record(c, now, error, measure);
        off += (size_t)k;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return 0;
}

static int connect_one(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    inet_pton(AF_INET, g.host, &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        perror("oload: connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--proto")) {
            g.http = !strcmp(v, "http");
            g.grpc = !strcmp(v, "grpc");
        } else if (!strcmp(k, "--host"))
            g.host = v;
        else if (!strcmp(k, "--port"))
            g.port = atoi(v);
        else if (!strcmp(k, "--rate"))
            g.rate = atof(v);
        else if (!strcmp(k, "--conns"))
            g.conns = atoi(v);
        else if (!strcmp(k, "--seconds"))
            g.seconds = atof(v);
        else if (!strcmp(k, "--warmup"))
            g.warmup = atof(v);
        else if (!strcmp(k, "--keys"))
            g.keys = (unsigned)atoi(v);
        else if (!strcmp(k, "--name"))
            g.name = v;
        else if (!strcmp(k, "--api") && (!strcmp(v, "rls") || !strcmp(v, "gubernator")))
            g.gubernator = !strcmp(v, "gubernator");
        else if (!strcmp(k, "--order") && (!strcmp(v, "random") || !strcmp(v, "sequential")))
            g.sequential = !strcmp(v, "sequential");
        else if (!strcmp(k, "--behavior"))
            g.behavior = (unsigned)atoi(v);
        else {
            fprintf(stderr, "oload: unknown option %s\n", k);
            exit(2);
        }
    }
    if (g.port <= 0 || g.rate <= 0 || g.conns < 1 || g.conns > MAX_CONNS || g.keys < 1) {
        fprintf(stderr, "usage: oload --proto resp|http|grpc --port P --rate N [--conns C] "
                        "[--seconds S] [--warmup S] [--keys K] [--name PREFIX] "
                        "[--api rls|gubernator] [--behavior N] [--order random|sequential]\n");
        exit(2);
    }
}

/* Send what is due on c (and what a short write left). */
static int send_due(struct conn *c, int64_t now, int64_t interval)
{
    while (c->next_due_ns <= now && c->n < (g.grpc ? GRPC_INFLIGHT : RING - 1) &&
           c->out_len < sizeof(c->out) - 512) {
        if (g.grpc)
            c->due[(c->next_stream - 1) / 2 % RING] = c->next_due_ns;
        else
            c->due[(c->head + c->n) % RING] = c->next_due_ns;
        put_request(c);
        c->n++;
        g.sent++;
        c->next_due_ns += interval;
    }
    if (c->out_len > 0) {
        ssize_t w = send(c->fd, c->out, c->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN)
            return -1;
        if (w > 0) {
            memmove(c->out, c->out + w, c->out_len - (size_t)w);
            c->out_len -= (size_t)w;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static struct conn conns[MAX_CONNS];
    struct epoll_event ev, evs[64];
    int ep = epoll_create1(0);
    int64_t start, end, measure_from, interval;

    parse_args(argc, argv);
    interval = (int64_t)(1e9 * g.conns / g.rate);
    start = now_ns();
    measure_from = start + (int64_t)(g.warmup * 1e9);
    end = measure_from + (int64_t)(g.seconds * 1e9);
    for (int i = 0; i < g.conns; i++) {
        conns[i].fd = connect_one();
        if (g.grpc)
            grpc_start(&conns[i]);
        conns[i].next_due_ns = start + interval * i / g.conns; /* spread the schedules */
        ev.events = EPOLLIN;
        ev.data.ptr = &conns[i];
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    for (;;) {
        int64_t now = now_ns(), next = end;
        if (now >= end)
            break; /* then the answers still due are waited for below */
        for (int i = 0; i < g.conns; i++) {
            if (send_due(&conns[i], now, interval) != 0) {
                fprintf(stderr, "oload: send failed\n");
                return 1;
            }
            if (conns[i].next_due_ns < next)
                next = conns[i].next_due_ns;
        }
        /* sleep exactly until the next request is due (epoll_pwait2: ns) */
        int64_t wait = next > now ? next - now : 0;
        struct timespec ts = {wait / 1000000000, wait % 1000000000};
        int n = epoll_pwait2(ep, evs, 64, &ts, NULL);
        now = now_ns();
        for (int k = 0; k < n; k++) {
            struct conn *c = evs[k].data.ptr;
            ssize_t r = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN)) {
                fprintf(stderr, "oload: the server closed a connection\n");
                return 1;
            }
            if (r > 0) {
                c->in_len += (size_t)r;
                if (parse_answers(c, now, now >= measure_from) != 0) {
                    fprintf(stderr, "oload: malformed answer\n");
                    return 1;
                }
            }
        }
    }
    /* Send nothing more; give the answers still due up to 5 s to arrive. */
    for (int64_t stop = now_ns() + 5000000000LL; g.answered < g.sent && now_ns() < stop;) {
        int n = epoll_wait(ep, evs, 64, 100);
        int64_t now = now_ns();
        for (int k = 0; k < n; k++) {
            struct conn *c = evs[k].data.ptr;
            ssize_t r = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
            if (r <= 0)
                continue;
            c->in_len += (size_t)r;
            if (parse_answers(c, now, true) != 0)
                return 1;
        }
    }
    double secs = g.seconds + g.warmup;
    printf("%s_offered_rate %.0f req/s\n", g.name, g.rate);
    printf("%s_achieved_rate %.0f req/s\n", g.name, (double)g.answered / secs);
    printf("%s_p50 %.1f us\n", g.name, percentile(0.50));
    printf("%s_p99 %.1f us\n", g.name, percentile(0.99));
    printf("%s_p999 %.1f us\n", g.name, percentile(0.999));
    printf("%s_answered %llu count\n", g.name, (unsigned long long)g.answered);
    printf("%s_errors %llu count\n", g.name, (unsigned long long)g.errors);
    printf("%s_unanswered %llu count\n", g.name, (unsigned long long)(g.sent - g.answered));
    return 0;
}
