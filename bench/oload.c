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
 * its due time by stream id; RST_STREAM and a call without a message
 * count as errors, a grpc-status in the trailers is not read. At most
 * GRPC_INFLIGHT calls per connection, and no more than the server's
 * SETTINGS_MAX_CONCURRENT_STREAMS (100 by default): beyond that the schedule
 * waits, which shows as latency.
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
 *        oload --closed [--inflight M] --proto resp|http|grpc --port P [...]
 *
 * --order sequential sends k0, k1, ... k(K-1), k0, ... instead of random
 * keys, so that a run of at least K requests touches every key (a fill).
 *
 * --closed: a closed loop instead, as h2load -m and redis-benchmark -P
 * drive a server, so that every protocol can be driven by one client of
 * one cost. Each of the --conns connections keeps --inflight M (16)
 * requests in flight (gRPC: M streams open; RESP and HTTP/1.1: M requests
 * pipelined). After each read, one new request goes for each answer that
 * came back, all of them in one write (with whatever HTTP/2 acknowledgement
 * the read called for): the refill semantics of h2load -m, for RESP too.
 * redis-benchmark -P instead waits for all M replies of a batch before it
 * writes the next M, so its connections dip below M in flight; this client
 * never lets them. gRPC connections start after the server's SETTINGS, and
 * M must not exceed the server's SETTINGS_MAX_CONCURRENT_STREAMS (nor
 * GRPC_INFLIGHT). --rate is not used. Output: NAME_closed_rate (answers a
 * second between --warmup and its end, over --seconds), NAME_closed_inflight,
 * the round-trip time from a request's write to its answer as
 * NAME_closed_rtt_p50/p99/p999 (not the open loop's latency from a due
 * time: a closed loop waits for the server, so it hides its stalls), then
 * the answers, errors and unanswered requests. A closed run exits 1 if any
 * answer was an error or any request went unanswered.
 *
 * Both modes keep HTTP/2's flow control: calls are sent only while the
 * server's connection window has room for their DATA, and the connection
 * window oload grants (about 1 GiB at the start) is given back with one
 * WINDOW_UPDATE per MiB of DATA received, not per frame. A gRPC call ended
 * by trailers with no DATA before them (Trailers-Only: the server's error
 * answer) counts as an error, like RST_STREAM.
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
#define RING          65536     /* due times of requests in flight, per connection */
#define HIST_BUCKETS  4096      /* log-linear latency buckets */
#define GRPC_INFLIGHT 96        /* calls in flight per HTTP/2 connection */
#define PIPE_INFLIGHT 256       /* --closed: RESP/HTTP requests in flight per connection */
#define WINDOW_GIVE   (1 << 20) /* DATA received before a connection WINDOW_UPDATE */
#define CALL_DATA_MAX 128       /* the most DATA one call's request sends */

/* A gRPC call's state, by stream id: an RST_STREAM behind the trailers (or
 * behind a Trailers-Only answer given before the request ended) does not
 * end it again. */
enum { CALL_OPEN, CALL_MESSAGE, CALL_ENDED };

struct conn {
    int fd;
    int64_t next_due_ns; /* when the next request is due */
    int64_t due[RING];   /* due times of requests sent and not answered */
    unsigned head, n;
    char in[1 << 16];
    size_t in_len;
    char out[1 << 16];
    size_t out_len;
    uint32_t next_stream;      /* gRPC: the next stream id (odd) */
    uint32_t max_streams;      /* gRPC: the server's SETTINGS_MAX_CONCURRENT_STREAMS */
    bool settled;              /* gRPC: the server's SETTINGS came */
    int64_t send_window;       /* gRPC: the server's connection window for our DATA */
    uint32_t unacked;          /* gRPC: DATA received and not given back yet */
    unsigned char state[RING]; /* gRPC: a stream's CALL_* */
};

static struct {
    bool http, grpc, gubernator, sequential, closed;
    unsigned inflight; /* --closed: requests in flight per connection */
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
} g = {.host = "127.0.0.1",
       .name = "oload",
       .conns = 16,
       .seconds = 10,
       .keys = 100000,
       .inflight = 16};

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

    if (room < 9 + sizeof(h) + 9 + 5 + sizeof(m) || c->send_window < CALL_DATA_MAX)
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
    c->send_window -= (int64_t)(5 + ml);
    c->state[(id - 1) / 2 % RING] = CALL_OPEN;
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
    c->max_streams = GRPC_INFLIGHT;
    c->send_window = 65535; /* RFC 9113's initial window */
}

/* One request for a random key into c->out; false if it did not fit (or
 * the server's HTTP/2 window has no room for it). */
static bool put_request(struct conn *c)
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
    if (n <= 0 || (size_t)n >= room) {
        g.next_key -= g.sequential; /* the key goes with the next request */
        return false;
    }
    c->out_len += (size_t)n;
    return true;
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

/* A frame ended the call on stream `id` (due times are kept by stream id):
 * trailers (`rst` false) end it well if a message came before them, an
 * RST_STREAM ends it as an error; a call already ended is not counted. */
static void record_stream(struct conn *c, uint32_t id, int64_t now, bool rst, bool measure)
{
    unsigned slot = (id - 1) / 2 % RING;
    int64_t due = c->due[slot];
    bool error = rst || c->state[slot] != CALL_MESSAGE;

    if (id >= c->next_stream || c->state[slot] == CALL_ENDED)
        return;
    c->state[slot] = CALL_ENDED;
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
            for (size_t i = 0; i + 6 <= len; i += 6) {
                const unsigned char *e = f + 9 + i;
                uint32_t v =
                    (uint32_t)e[2] << 24 | (uint32_t)e[3] << 16 | (uint32_t)e[4] << 8 | e[5];
                if ((e[0] << 8 | e[1]) == 0x3)
                    c->max_streams = v < GRPC_INFLIGHT ? v : GRPC_INFLIGHT;
            }
            if (g.closed && g.grpc && g.inflight > c->max_streams) {
                fprintf(stderr,
                        "oload: --inflight %u exceeds the server's "
                        "SETTINGS_MAX_CONCURRENT_STREAMS %u\n",
                        g.inflight, c->max_streams);
                return -1;
            }
            c->settled = true;
            put_frame_head(c->out + c->out_len, 0, 4, 0x1, 0);
            c->out_len += 9;
        } else if (type == 8 && id == 0 && len == 4) {
            c->send_window += (int64_t)(((uint32_t)f[9] & 0x7f) << 24 | (uint32_t)f[10] << 16 |
                                        (uint32_t)f[11] << 8 | f[12]);
        } else if (type == 6 && !(flags & 0x1) && len == 8) {
            put_frame_head(c->out + c->out_len, 8, 6, 0x1, 0);
            memcpy(c->out + c->out_len + 9, f + 9, 8);
            c->out_len += 17;
        } else if (type == 0) {
            if (id != 0 && len > 0 && id < c->next_stream &&
                c->state[(id - 1) / 2 % RING] == CALL_OPEN)
                c->state[(id - 1) / 2 % RING] = CALL_MESSAGE;
            c->unacked += (uint32_t)len;
            if (c->unacked >= WINDOW_GIVE) { /* given back in bulk, not per frame */
                char *p = c->out + c->out_len;
                put_frame_head(p, 4, 8, 0, 0);
                p[9] = (char)(c->unacked >> 24);
                p[10] = (char)(c->unacked >> 16);
                p[11] = (char)(c->unacked >> 8);
                p[12] = (char)c->unacked;
                c->out_len += 13;
                c->unacked = 0;
            }
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

static void usage(void)
{
    fprintf(stderr, "usage: oload --proto resp|http|grpc --port P --rate N [--conns C] "
                    "[--seconds S] [--warmup S] [--keys K] [--name PREFIX] "
                    "[--api rls|gubernator] [--behavior N] [--order random|sequential]\n"
                    "       oload --closed [--inflight M] --proto resp|http|grpc --port P "
                    "[the options above but --rate]\n");
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v;
        if (!strcmp(k, "--closed")) {
            g.closed = true;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        v = argv[++i];
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
        else if (!strcmp(k, "--inflight"))
            g.inflight = (unsigned)atoi(v);
        else {
            fprintf(stderr, "oload: unknown option %s\n", k);
            exit(2);
        }
    }
    if (g.port <= 0 || (!g.closed && g.rate <= 0) || g.conns < 1 || g.conns > MAX_CONNS ||
        g.keys < 1 || (g.closed && g.seconds <= 0))
        usage();
    if (g.closed && (g.inflight < 1 || g.inflight > (g.grpc ? GRPC_INFLIGHT : PIPE_INFLIGHT))) {
        fprintf(stderr, "oload: --inflight must be 1..%d for --proto %s\n",
                g.grpc ? GRPC_INFLIGHT : PIPE_INFLIGHT,
                g.grpc   ? "grpc"
                : g.http ? "http"
                         : "resp");
        exit(2);
    }
}

/* Queue one request due (or, closed, written) at `due`; false if it did
 * not fit. */
static bool queue_one(struct conn *c, int64_t due)
{
    if (g.grpc)
        c->due[(c->next_stream - 1) / 2 % RING] = due;
    else
        c->due[(c->head + c->n) % RING] = due;
    if (!put_request(c))
        return false;
    c->n++;
    g.sent++;
    return true;
}

/* Write what c->out holds (what a short write left stays for later). */
static int flush(struct conn *c)
{
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

/* Send what is due on c (and what a short write left). */
static int send_due(struct conn *c, int64_t now, int64_t interval)
{
    unsigned cap = g.grpc ? c->max_streams : RING - 1;

    while (c->next_due_ns <= now && c->n < cap && c->out_len < sizeof(c->out) - 512 &&
           queue_one(c, c->next_due_ns))
        c->next_due_ns += interval;
    return flush(c);
}

/* --closed: top c up to --inflight requests in flight, all in one write
 * with what else c->out holds. A gRPC connection waits for the server's
 * SETTINGS (its MAX_CONCURRENT_STREAMS) before its first call. */
static int refill(struct conn *c, int64_t now)
{
    if (!g.grpc || c->settled)
        while (c->n < g.inflight && queue_one(c, now))
            ;
    return flush(c);
}

/* Read what came on c and count the answers in it; -1 if that failed. */
static int read_conn(struct conn *c, int64_t now, bool measure)
{
    ssize_t r = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);

    if (r == 0 || (r < 0 && errno != EAGAIN)) {
        fprintf(stderr, "oload: the server closed a connection\n");
        return -1;
    }
    if (r > 0) {
        c->in_len += (size_t)r;
        if (parse_answers(c, now, measure) != 0) {
            fprintf(stderr, "oload: malformed answer\n");
            return -1;
        }
    }
    return 0;
}

static void print_counts(void)
{
    printf("%s_answered %llu count\n", g.name, (unsigned long long)g.answered);
    printf("%s_errors %llu count\n", g.name, (unsigned long long)g.errors);
    printf("%s_unanswered %llu count\n", g.name, (unsigned long long)(g.sent - g.answered));
}

/* The closed loop on connections already made; its exit status. */
static int run_closed(struct conn *conns, int ep)
{
    struct epoll_event evs[64];
    int64_t start = now_ns();
    int64_t measure_from = start + (int64_t)(g.warmup * 1e9);
    int64_t end = measure_from + (int64_t)(g.seconds * 1e9);

    for (int i = 0; i < g.conns; i++)
        if (refill(&conns[i], start) != 0) {
            fprintf(stderr, "oload: send failed\n");
            return 1;
        }
    for (;;) {
        int64_t now = now_ns(), wait = end - now;
        if (now >= end)
            break; /* then the answers still due are waited for below */
        for (int i = 0; i < g.conns; i++) {
            if (conns[i].out_len == 0)
                continue;
            if (flush(&conns[i]) != 0) {
                fprintf(stderr, "oload: send failed\n");
                return 1;
            }
            if (conns[i].out_len > 0 && wait > 1000000)
                wait = 1000000; /* a short write: try again soon */
        }
        struct timespec ts = {wait / 1000000000, wait % 1000000000};
        int n = epoll_pwait2(ep, evs, 64, &ts, NULL);
        now = now_ns();
        bool measure = now >= measure_from && now < end;
        for (int k = 0; k < n; k++) {
            struct conn *c = evs[k].data.ptr;
            if (read_conn(c, now, measure) != 0)
                return 1;
            if (now < end && refill(c, now) != 0) {
                fprintf(stderr, "oload: send failed\n");
                return 1;
            }
        }
    }
    /* Send nothing more; give the answers still due up to 5 s to arrive. */
    for (int64_t stop = now_ns() + 5000000000LL; g.answered < g.sent && now_ns() < stop;) {
        int n = epoll_wait(ep, evs, 64, 100);
        int64_t now = now_ns();
        for (int k = 0; k < n; k++)
            if (read_conn(evs[k].data.ptr, now, false) != 0)
                return 1;
    }
    printf("%s_closed_rate %.0f req/s\n", g.name, (double)g.recorded / g.seconds);
    printf("%s_closed_inflight %u count\n", g.name, g.inflight);
    printf("%s_closed_rtt_p50 %.1f us\n", g.name, percentile(0.50));
    printf("%s_closed_rtt_p99 %.1f us\n", g.name, percentile(0.99));
    printf("%s_closed_rtt_p999 %.1f us\n", g.name, percentile(0.999));
    print_counts();
    if (g.errors > 0 || g.answered < g.sent) {
        fprintf(stderr, "oload: %llu errors, %llu unanswered\n", (unsigned long long)g.errors,
                (unsigned long long)(g.sent - g.answered));
        return 1;
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
    if (g.closed) {
        for (int i = 0; i < g.conns; i++) {
            conns[i].fd = connect_one();
            if (g.grpc)
                grpc_start(&conns[i]);
            ev.events = EPOLLIN;
            ev.data.ptr = &conns[i];
            epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
        }
        return run_closed(conns, ep);
    }
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
    print_counts();
    return 0;
}
