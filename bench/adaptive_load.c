/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * adaptive_load.c - the open-loop HTTP/1.1 load generator of
 * bench/bench_adaptive.sh: a rate that follows a phase script, and what a
 * concurrency limiter made of it, per phase and per request class.
 *
 * Requests are sent on a schedule, never when an answer came back: each is
 * due at a time fixed in advance (evenly spaced at the phase's rate, which
 * may ramp linearly), and its latency is counted from that time. Each
 * connection carries one request at a time; a request due when no open
 * connection is idle opens a new one (up to --max-conns), so a slow answer
 * never holds the schedule back. A request not answered within --timeout is
 * abandoned: its connection is reset (no TIME_WAIT), as a client that gives
 * up does. The lag between a request's due time and its send is measured
 * (send_lag_p99): it shows whether the generator kept its schedule.
 *
 * A phase is NAME:SECONDS:FROM_RPS:TO_RPS:SLOTS (the rate ramps from FROM to
 * TO over the phase). When a phase starts, the generator sets the
 * upstream's capacity (bench/adaptive_upstream: POST /_capacity?slots=N on
 * --control, 0: leave it); the capacity in requests a second is then
 * SLOTS * 1000 / --work-ms. --classes gives the fraction of each request
 * class, e.g. critical=0.2,default=0.4,sheddable=0.4: each request carries
 * `X-Priority: CLASS` (--class-header), drawn at random (fixed seed).
 *
 * Counted per phase (and per class with --classes), by the phase a request
 * was due in: offered, admitted (2xx), shed (429 or 503), errors (any other
 * status, a timeout, a reset, a request the generator could not send),
 * goodput (2xx within --slo-ms, per second), p50/p99 of the admitted
 * requests' latency (-1: none admitted). "useful" is the most goodput the
 * upstream allows, the mean over the phase's seconds of min(offered,
 * capacity); goodput_ratio is goodput / useful. For a phase whose capacity differs from the
 * previous one's: reconverge, the first second (from the phase's start) after which every second
 * has goodput >= --good-frac of useful and p99 <= the SLO (-1: never within the phase), and
 * settled_goodput_ratio / settled_p99 over the phase from --settle seconds on.
 *
 * Output: `name value unit` lines (bench/lib.sh's format) on stdout; with
 * --series FILE, one row a second (by due time): t offered admitted goodput
 * shed errors p99_ms capacity (all per second but p99), then the phase.
 *
 * usage: adaptive_load --port P --phases "P1 P2 ..." --work-ms W --slo-ms S
 *        [--control PORT] [--classes SPEC] [--class-header H] [--path /]
 *        [--timeout S] [--max-conns N] [--settle S] [--good-frac F]
 *        [--series FILE] [--name PREFIX] [--seed N]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS   16384
#define MAX_PHASES  16
#define MAX_CLASSES 4
#define MAX_SECONDS 1800
#define HIST_N      1600 /* 64 log-linear buckets per power of two of us, to ~30 s */
#define IN_MAX      8192

struct hist {
    uint32_t b[HIST_N];
    uint64_t n;
};

struct tally {
    uint64_t offered, ok, shed, errors, good;
    struct hist lat; /* of the admitted */
};

struct phase {
    char name[32];
    double seconds, from, to, slots;
    int64_t start_ns, end_ns; /* relative to the run's start */
};

enum { C_FREE, C_CONNECTING, C_IDLE, C_BUSY };

struct conn {
    int fd, state;
    int64_t due;  /* of the request in flight */
    uint32_t gen; /* bumped at each request: stale timeout entries */
    int phase, cls, sec;
    const char *out;
    size_t out_len, out_off;
    char in[IN_MAX];
    size_t in_len;
};

struct pending { /* requests in flight in due order, for their timeouts */
    int conn;
    uint32_t gen;
    int64_t due;
};

static struct {
    const char *host, *name, *path, *class_header, *series;
    int port, control, max_conns;
    struct phase ph[MAX_PHASES];
    int nph;
    char cls_name[MAX_CLASSES][32];
    double cls_frac[MAX_CLASSES];
    int ncls;
    char *req[MAX_CLASSES];
    size_t req_len[MAX_CLASSES];
    double work_ms, slo_ms, timeout_s, settle_s, good_frac;
    uint64_t seed;
    struct tally t[MAX_PHASES][MAX_CLASSES];
    struct tally sec[MAX_SECONDS];
    struct hist lag;
    int open, peak_open;
    uint64_t unsent;
} g = {.host = "127.0.0.1",
       .name = "adaptive",
       .path = "/",
       .class_header = "X-Priority",
       .max_conns = 8192,
       .work_ms = 20,
       .slo_ms = 40,
       .timeout_s = 1,
       .settle_s = 10,
       .good_frac = 0.9,
       .seed = 1};

static struct conn conns[MAX_CONNS];
static int idle[MAX_CONNS], nidle;
static int spare[MAX_CONNS], nspare; /* free slots of conns[] */
static struct pending *pend;
static size_t pend_head, pend_tail, pend_cap;
static int ep;
static int64_t t0;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---------------------------------------------------------- histograms */

static unsigned bucket_of(int64_t ns)
{
    uint64_t us = ns < 1000 ? 1 : (uint64_t)ns / 1000;
    unsigned lg = 63 - (unsigned)__builtin_clzll(us);
    unsigned sub = lg >= 6 ? (unsigned)((us >> (lg - 6)) & 63) : (unsigned)((us << (6 - lg)) & 63);
    unsigned b = lg * 64 + sub;

    return b < HIST_N ? b : HIST_N - 1;
}

static double bucket_ms(unsigned b)
{
    return (double)(1ULL << (b / 64)) * (1.0 + (b % 64) / 64.0) / 1000.0;
}

static void hist_add(struct hist *h, int64_t ns)
{
    h->b[bucket_of(ns)]++;
    h->n++;
}

static void hist_merge(struct hist *into, const struct hist *h)
{
    for (unsigned i = 0; i < HIST_N; i++)
        into->b[i] += h->b[i];
    into->n += h->n;
}

static double hist_pct(const struct hist *h, double p)
{
    uint64_t want = (uint64_t)(p * (double)h->n), seen = 0;

    if (h->n == 0)
        return -1; /* nothing to take a percentile of */
    for (unsigned i = 0; i < HIST_N; i++) {
        seen += h->b[i];
        if (seen > want)
            return bucket_ms(i);
    }
    return bucket_ms(HIST_N - 1);
}

static void tally_merge(struct tally *into, const struct tally *t)
{
    into->offered += t->offered;
    into->ok += t->ok;
    into->shed += t->shed;
    into->errors += t->errors;
    into->good += t->good;
    hist_merge(&into->lat, &t->lat);
}

/* ------------------------------------------------------------ schedule */

static int phase_at(int64_t rel)
{
    for (int i = 0; i < g.nph; i++)
        if (rel < g.ph[i].end_ns)
            return i;
    return -1;
}

static double rate_at(int p, int64_t rel)
{
    const struct phase *ph = &g.ph[p];
    double f = (double)(rel - ph->start_ns) / (double)(ph->end_ns - ph->start_ns);

    return ph->from + (ph->to - ph->from) * f;
}

/* The request due after one due at `rel` (relative ns; -1: none left). */
static int64_t next_due(int64_t rel)
{
    for (;;) {
        int p = phase_at(rel);
        double r;

        if (p < 0)
            return -1;
        r = rate_at(p, rel);
        if (r > 0.5) {
            int64_t nx = rel + (int64_t)(1e9 / r);
            return phase_at(nx) < 0 ? -1 : nx;
        }
        rel = g.ph[p].end_ns; /* nothing offered in this phase */
    }
}

static double capacity_of(int p)
{
    return g.ph[p].slots * 1000.0 / g.work_ms;
}

static uint64_t rnd(void) /* xorshift64* */
{
    g.seed ^= g.seed >> 12;
    g.seed ^= g.seed << 25;
    g.seed ^= g.seed >> 27;
    return g.seed * 2685821657736338717ULL;
}

static int draw_class(void)
{
    double u = (double)(rnd() >> 11) / 9007199254740992.0, acc = 0;

    for (int i = 0; i < g.ncls - 1; i++) {
        acc += g.cls_frac[i];
        if (u < acc)
            return i;
    }
    return g.ncls - 1;
}

/* ----------------------------------------------------------- the upstream's capacity */

static void set_capacity(double slots)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.control)};
    char buf[256];
    int fd, n;

    if (g.control <= 0 || slots <= 0)
        return;
    inet_pton(AF_INET, g.host, &sa.sin_addr);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        fprintf(stderr, "adaptive_load: cannot reach the upstream's control port %d\n", g.control);
        exit(1);
    }
    n = snprintf(buf, sizeof(buf),
                 "POST /_capacity?slots=%g HTTP/1.1\r\nHost: upstream\r\nContent-Length: 0\r\n"
                 "Connection: close\r\n\r\n",
                 slots);
    if (write(fd, buf, (size_t)n) != n || read(fd, buf, sizeof(buf) - 1) <= 0 ||
        strncmp(buf, "HTTP/1.1 200", 12) != 0) {
        fprintf(stderr, "adaptive_load: the upstream refused slots=%g\n", slots);
        exit(1);
    }
    close(fd);
}

/* ----------------------------------------------------------- connections */

static void conn_close(struct conn *c)
{
    struct linger l = {1, 0}; /* a reset: the server sees it at once, no TIME_WAIT */

    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(c->fd);
    c->fd = -1;
    c->state = C_FREE;
    c->in_len = 0;
    g.open--;
    spare[nspare++] = (int)(c - conns);
}

static void record(struct conn *c, int status, int64_t now)
{
    struct tally *t = &g.t[c->phase][c->cls];
    struct tally *s = &g.sec[c->sec];
    int64_t lat = now - c->due;

    if (status >= 200 && status < 300) {
        bool good = lat <= (int64_t)(g.slo_ms * 1e6);
        t->ok++, s->ok++;
        t->good += good, s->good += good;
        hist_add(&t->lat, lat);
        hist_add(&s->lat, lat);
    } else if (status == 429 || status == 503) {
        t->shed++, s->shed++;
    } else {
        t->errors++, s->errors++;
    }
}

/* The request in flight on c failed (reset, timeout): count it, drop c. */
static void fail(struct conn *c, int64_t now)
{
    if (c->state == C_BUSY || c->state == C_CONNECTING)
        record(c, 0, now);
    conn_close(c);
}

static void want_out(struct conn *c, bool out)
{
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0),
                             .data.u32 = (uint32_t)(c - conns)};

    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void flush(struct conn *c, int64_t now)
{
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0 && errno == EAGAIN) {
            want_out(c, true);
            return;
        }
        if (n <= 0) {
            fail(c, now);
            return;
        }
        c->out_off += (size_t)n;
    }
    want_out(c, false);
}

static int open_conn(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port)};
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT};
    int i, fd, one = 1;

    if (nspare == 0 || g.open >= g.max_conns)
        return -1;
    inet_pton(AF_INET, g.host, &sa.sin_addr);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    i = spare[--nspare];
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
        close(fd);
        spare[nspare++] = i;
        return -1;
    }
    conns[i].fd = fd;
    conns[i].state = C_CONNECTING;
    ev.data.u32 = (uint32_t)i;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    if (++g.open > g.peak_open)
        g.peak_open = g.open;
    return i;
}

static void pend_push(int conn, uint32_t gen, int64_t due)
{
    if (pend_tail - pend_head == pend_cap) { /* grow the ring */
        size_t ncap = pend_cap ? pend_cap * 2 : 65536;
        struct pending *np = malloc(ncap * sizeof(*np));
        if (np == NULL) {
            perror("adaptive_load");
            exit(1);
        }
        for (size_t k = pend_head; k < pend_tail; k++)
            np[k - pend_head] = pend[k % pend_cap];
        free(pend);
        pend = np;
        pend_tail -= pend_head;
        pend_head = 0;
        pend_cap = ncap;
    }
    pend[pend_tail++ % pend_cap] = (struct pending){conn, gen, due};
}

/* Send the request due at `due` (absolute ns). */
static void dispatch(int64_t due, int64_t now)
{
    int64_t rel = due - t0;
    int p = phase_at(rel), cls = g.ncls > 1 ? draw_class() : 0, i;
    int sec = (int)(rel / 1000000000);
    struct conn *c;

    if (sec >= MAX_SECONDS)
        sec = MAX_SECONDS - 1;
    g.t[p][cls].offered++;
    g.sec[sec].offered++;
    if (nidle > 0) {
        i = idle[--nidle];
    } else if ((i = open_conn()) < 0) {
        g.unsent++;
        g.t[p][cls].errors++;
        g.sec[sec].errors++;
        return;
    }
    c = &conns[i];
    c->due = due;
    c->gen++;
    c->phase = p, c->cls = cls, c->sec = sec;
    c->out = g.req[cls];
    c->out_len = g.req_len[cls];
    c->out_off = 0;
    pend_push(i, c->gen, due);
    hist_add(&g.lag, now - due);
    if (c->state == C_IDLE) {
        c->state = C_BUSY;
        flush(c, now);
    } /* else C_CONNECTING: sent once connected */
}

/* --------------------------------------------------------------- answers */

/* The length of the complete response at the start of c->in (0: not yet,
 * -1: malformed), its status and whether the server closes after it. */
static long parse_response(struct conn *c, int *status, bool *close_after)
{
    char *end, *p, *v;
    size_t head, body = 0;
    bool chunked = false;

    c->in[c->in_len] = 0;
    end = strstr(c->in, "\r\n\r\n");
    if (end == NULL)
        return c->in_len >= IN_MAX - 1 ? -1 : 0;
    head = (size_t)(end + 4 - c->in);
    if (sscanf(c->in, "HTTP/1.%*c %d", status) != 1)
        return -1;
    *close_after = false;
    for (p = strstr(c->in, "\r\n"); p != NULL && p < end; p = strstr(p + 2, "\r\n")) {
        v = p + 2;
        if (strncasecmp(v, "content-length:", 15) == 0)
            body = strtoul(v + 15, NULL, 10);
        else if (strncasecmp(v, "transfer-encoding:", 18) == 0)
            chunked =
                strcasestr(v, "chunked") != NULL && strcasestr(v, "chunked") < strstr(v, "\r\n");
        else if (strncasecmp(v, "connection:", 11) == 0)
            *close_after = strncasecmp(v + 11 + strspn(v + 11, " \t"), "close", 5) == 0;
    }
    if (*status == 204 || *status == 304 || (*status >= 100 && *status < 200))
        return (long)head;
    if (!chunked)
        return c->in_len >= head + body ? (long)(head + body) : 0;
    for (size_t at = head;;) { /* chunks: SIZE\r\nDATA\r\n ... 0\r\n\r\n */
        char *eol = strstr(c->in + at, "\r\n");
        size_t sz;
        if (eol == NULL)
            return 0;
        sz = strtoul(c->in + at, NULL, 16);
        at = (size_t)(eol + 2 - c->in);
        if (sz == 0) {
            char *fin = strstr(c->in + at, "\r\n"); /* trailers: none expected */
            return fin == NULL ? 0 : (long)(fin + 2 - c->in);
        }
        if (c->in_len < at + sz + 2)
            return 0;
        at += sz + 2;
    }
}

static void on_readable(struct conn *c, int64_t now)
{
    ssize_t n = read(c->fd, c->in + c->in_len, IN_MAX - 1 - c->in_len);
    int status = 0;
    bool close_after = false;
    long len;

    if (n <= 0) {
        if (n < 0 && errno == EAGAIN)
            return;
        if (c->state == C_IDLE) /* the server closed an idle connection */
            for (int k = 0; k < nidle; k++)
                if (idle[k] == c - conns) {
                    idle[k] = idle[--nidle];
                    break;
                }
        fail(c, now);
        return;
    }
    c->in_len += (size_t)n;
    len = parse_response(c, &status, &close_after);
    if (len == 0)
        return;
    if (len < 0 || c->state != C_BUSY || (size_t)len != c->in_len) { /* nothing pipelined */
        fail(c, now);
        return;
    }
    if (status >= 100 && status < 200) { /* an interim answer: drop it */
        c->in_len = 0;
        return;
    }
    record(c, status, now);
    c->in_len = 0;
    c->gen++; /* its timeout entry is stale now */
    if (close_after) {
        conn_close(c);
        return;
    }
    c->state = C_IDLE;
    idle[nidle++] = (int)(c - conns);
}

static void on_writable(struct conn *c, int64_t now)
{
    int err = 0;
    socklen_t el = sizeof(err);

    if (c->state == C_CONNECTING) {
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err != 0) {
            fail(c, now);
            return;
        }
        c->state = c->out_len > 0 && c->out_off < c->out_len ? C_BUSY : C_IDLE;
        if (c->state == C_IDLE) {
            idle[nidle++] = (int)(c - conns);
            want_out(c, false);
            return;
        }
    }
    if (c->state == C_BUSY)
        flush(c, now);
}

static void expire(int64_t now)
{
    int64_t limit = (int64_t)(g.timeout_s * 1e9);

    while (pend_head < pend_tail) {
        struct pending *e = &pend[pend_head % pend_cap];
        struct conn *c = &conns[e->conn];
        if (c->gen != e->gen || (c->state != C_BUSY && c->state != C_CONNECTING)) {
            pend_head++;
            continue;
        }
        if (now - e->due < limit)
            break;
        pend_head++;
        fail(c, now);
    }
}

/* ---------------------------------------------------------------- report */

static void put(const char *what, double v, const char *unit)
{
    printf("%s_%s %.*f %s\n", g.name, what, v == (int64_t)v ? 0 : 3, v, unit);
}

/* Per-second goodput and p99 judged against the phase's useful rate. */
static bool second_good(int s, double cap)
{
    const struct tally *t = &g.sec[s];
    double useful = (double)t->offered < cap ? (double)t->offered : cap;

    return (double)t->good >= g.good_frac * useful && hist_pct(&t->lat, 0.99) <= g.slo_ms;
}

static void report_window(const char *ph, const char *what, int s0, int s1, double cap)
{
    struct tally w = {0};
    double useful = 0;
    char key[96];

    for (int s = s0; s < s1 && s < MAX_SECONDS; s++) {
        tally_merge(&w, &g.sec[s]);
        useful += (double)g.sec[s].offered < cap ? (double)g.sec[s].offered : cap;
    }
    snprintf(key, sizeof(key), "%s_%sgoodput_ratio", ph, what);
    put(key, useful > 0 ? (double)w.good / useful : 0, "x");
    snprintf(key, sizeof(key), "%s_%sp99", ph, what);
    put(key, hist_pct(&w.lat, 0.99), "ms");
}

static void report_phase(int p)
{
    const struct phase *ph = &g.ph[p];
    struct tally all = {0};
    double secs = ph->seconds, cap = capacity_of(p);
    int s0 = (int)(ph->start_ns / 1000000000), s1 = (int)(ph->end_ns / 1000000000);
    char key[96];

    for (int k = 0; k < g.ncls; k++)
        tally_merge(&all, &g.t[p][k]);
#define PUT(what, v, unit)                                                                         \
    do {                                                                                           \
        snprintf(key, sizeof(key), "%s_%s", ph->name, what);                                       \
        put(key, v, unit);                                                                         \
    } while (0)
    PUT("capacity", cap, "req/s");
    PUT("offered", all.offered / secs, "req/s");
    PUT("admitted", all.ok / secs, "req/s");
    PUT("shed", all.shed / secs, "req/s");
    PUT("errors", (double)all.errors, "requests");
    PUT("goodput", all.good / secs, "req/s");
    report_window(ph->name, "", s0, s1, cap);
    PUT("p50", hist_pct(&all.lat, 0.5), "ms");
    if (p > 0 && ph->slots != g.ph[p - 1].slots) {
        int k = s1;
        while (k > s0 && second_good(k - 1, cap))
            k--;
        PUT("reconverge", k < s1 ? (double)(k - s0) : -1, "s");
        report_window(ph->name, "settled_", s0 + (int)g.settle_s, s1, cap);
    }
    for (int c = 0; g.ncls > 1 && c < g.ncls; c++) {
        const struct tally *t = &g.t[p][c];
        double off = t->offered ? (double)t->offered : 1;
        snprintf(key, sizeof(key), "%s_%s_offered", ph->name, g.cls_name[c]);
        put(key, t->offered / secs, "req/s");
        snprintf(key, sizeof(key), "%s_%s_admitted_fraction", ph->name, g.cls_name[c]);
        put(key, t->ok / off, "x");
        snprintf(key, sizeof(key), "%s_%s_shed_fraction", ph->name, g.cls_name[c]);
        put(key, t->shed / off, "x");
        snprintf(key, sizeof(key), "%s_%s_p99", ph->name, g.cls_name[c]);
        put(key, hist_pct(&t->lat, 0.99), "ms");
    }
#undef PUT
}

static void write_series(void)
{
    FILE *f = fopen(g.series, "w");
    int last = (int)(g.ph[g.nph - 1].end_ns / 1000000000);

    if (f == NULL) {
        perror(g.series);
        exit(1);
    }
    fprintf(f, "# t offered admitted goodput shed errors p99_ms capacity phase\n");
    for (int s = 0; s < last && s < MAX_SECONDS; s++) {
        const struct tally *t = &g.sec[s];
        int p = phase_at((int64_t)s * 1000000000 + 500000000);
        fprintf(f, "%d %llu %llu %llu %llu %llu %.2f %.0f %s\n", s, (unsigned long long)t->offered,
                (unsigned long long)t->ok, (unsigned long long)t->good, (unsigned long long)t->shed,
                (unsigned long long)t->errors, hist_pct(&t->lat, 0.99), capacity_of(p < 0 ? 0 : p),
                p < 0 ? "-" : g.ph[p].name);
    }
    fclose(f);
}

/* ------------------------------------------------------------ arguments */

static void parse_phases(char *spec)
{
    double at = 0;

    for (char *tok = strtok(spec, " "); tok != NULL; tok = strtok(NULL, " ")) {
        struct phase *ph = &g.ph[g.nph];
        if (g.nph == MAX_PHASES ||
            sscanf(tok, "%31[^:]:%lf:%lf:%lf:%lf", ph->name, &ph->seconds, &ph->from, &ph->to,
                   &ph->slots) != 5 ||
            ph->seconds < 1) {
            fprintf(stderr, "adaptive_load: bad phase '%s' (NAME:SECONDS:FROM:TO:SLOTS)\n", tok);
            exit(2);
        }
        ph->start_ns = (int64_t)(at * 1e9);
        at += ph->seconds;
        ph->end_ns = (int64_t)(at * 1e9);
        g.nph++;
    }
    if (g.nph == 0 || at >= MAX_SECONDS) {
        fprintf(stderr, "adaptive_load: --phases: 1 to %d phases, under %d s in all\n", MAX_PHASES,
                MAX_SECONDS);
        exit(2);
    }
}

static void parse_classes(char *spec)
{
    double sum = 0;

    for (char *tok = strtok(spec, ","); tok != NULL; tok = strtok(NULL, ",")) {
        if (g.ncls == MAX_CLASSES ||
            sscanf(tok, "%31[^=]=%lf", g.cls_name[g.ncls], &g.cls_frac[g.ncls]) != 2) {
            fprintf(stderr, "adaptive_load: bad class '%s' (NAME=FRACTION)\n", tok);
            exit(2);
        }
        sum += g.cls_frac[g.ncls++];
    }
    for (int i = 0; i < g.ncls; i++)
        g.cls_frac[i] /= sum;
}

static void build_requests(void)
{
    if (g.ncls == 0) {
        g.ncls = 1;
        strcpy(g.cls_name[0], "all");
        g.cls_frac[0] = 1;
    }
    for (int i = 0; i < g.ncls; i++) {
        char h[128] = "";
        if (g.ncls > 1)
            snprintf(h, sizeof(h), "%s: %s\r\n", g.class_header, g.cls_name[i]);
        if (asprintf(&g.req[i], "GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n", g.path, g.host, g.port,
                     h) < 0)
            exit(1);
        g.req_len[i] = strlen(g.req[i]);
    }
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            goto usage;
        if (strcmp(k, "--port") == 0)
            g.port = atoi(v);
        else if (strcmp(k, "--host") == 0)
            g.host = v;
        else if (strcmp(k, "--control") == 0)
            g.control = atoi(v);
        else if (strcmp(k, "--phases") == 0)
            parse_phases(argv[i + 1]);
        else if (strcmp(k, "--classes") == 0)
            parse_classes(argv[i + 1]);
        else if (strcmp(k, "--class-header") == 0)
            g.class_header = v;
        else if (strcmp(k, "--path") == 0)
            g.path = v;
        else if (strcmp(k, "--work-ms") == 0)
            g.work_ms = atof(v);
        else if (strcmp(k, "--slo-ms") == 0)
            g.slo_ms = atof(v);
        else if (strcmp(k, "--timeout") == 0)
            g.timeout_s = atof(v);
        else if (strcmp(k, "--max-conns") == 0)
            g.max_conns = atoi(v);
        else if (strcmp(k, "--settle") == 0)
            g.settle_s = atof(v);
        else if (strcmp(k, "--good-frac") == 0)
            g.good_frac = atof(v);
        else if (strcmp(k, "--series") == 0)
            g.series = v;
        else if (strcmp(k, "--name") == 0)
            g.name = v;
        else if (strcmp(k, "--seed") == 0)
            g.seed = strtoull(v, NULL, 10) | 1;
        else
            goto usage;
    }
    if (g.port > 0 && g.nph > 0 && g.work_ms > 0 && g.slo_ms > 0 && g.max_conns > 0 &&
        g.max_conns <= MAX_CONNS)
        return;
usage:
    fprintf(stderr,
            "usage: adaptive_load --port P --phases \"NAME:SECONDS:FROM:TO:SLOTS ...\" "
            "--work-ms W --slo-ms S [--control PORT] [--classes NAME=F,...] "
            "[--class-header H] [--path /] [--timeout S] [--max-conns N (<= %d)] "
            "[--settle S] [--good-frac F] [--series FILE] [--name PREFIX] [--seed N]\n",
            MAX_CONNS);
    exit(2);
}

/* ------------------------------------------------------------------ run */

int main(int argc, char **argv)
{
    struct epoll_event evs[256];
    int64_t due, rel = 0, drain_until = 0;
    int applied = -1;

    parse_args(argc, argv);
    build_requests();
    signal(SIGPIPE, SIG_IGN);
    ep = epoll_create1(0);
    for (int i = 0; i < MAX_CONNS; i++) {
        conns[i].fd = -1;
        spare[nspare++] = MAX_CONNS - 1 - i;
    }
    set_capacity(g.ph[0].slots);
    applied = 0;
    t0 = now_ns();
    due = rate_at(0, 0) > 0.5 ? t0 : (next_due(0) < 0 ? -1 : t0 + next_due(0));
    for (;;) {
        int64_t now = now_ns(), wait_ns;
        int n;

        rel = now - t0;
        while (applied + 1 < g.nph && rel >= g.ph[applied + 1].start_ns) {
            applied++;
            set_capacity(g.ph[applied].slots);
        }
        while (due >= 0 && due <= now) {
            dispatch(due, now);
            int64_t nx = next_due(due - t0);
            due = nx < 0 ? -1 : t0 + nx;
        }
        expire(now);
        if (due < 0) {
            if (drain_until == 0)
                drain_until = now + (int64_t)(g.timeout_s * 1e9) + 100000000;
            if (pend_head == pend_tail || now >= drain_until)
                break;
        }
        wait_ns = due >= 0 ? due - now : 10000000;
        if (wait_ns > 10000000)
            wait_ns = 10000000; /* timeouts and phase starts are checked at least every 10 ms */
        struct timespec ts = {wait_ns / 1000000000, wait_ns % 1000000000};
        n = epoll_pwait2(ep, evs, 256, &ts, NULL);
        now = now_ns();
        for (int k = 0; k < n; k++) {
            struct conn *c = &conns[evs[k].data.u32];
            if (c->fd < 0)
                continue;
            if (evs[k].events & (EPOLLOUT | EPOLLERR))
                on_writable(c, now);
            if (c->fd >= 0 && (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                on_readable(c, now);
        }
    }
    expire(INT64_MAX);
    for (int p = 0; p < g.nph; p++)
        report_phase(p);
    put("send_lag_p99", hist_pct(&g.lag, 0.99), "ms");
    put("peak_connections", g.peak_open, "connections");
    put("unsent", (double)g.unsent, "requests");
    if (g.series != NULL)
        write_series();
    return 0;
}
