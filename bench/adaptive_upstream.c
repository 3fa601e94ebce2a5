/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * adaptive_upstream.c - the synthetic upstream of bench/bench_adaptive.sh:
 * an HTTP/1.1 server (keep-alive, 127.0.0.1) whose capacity is known, so
 * that a concurrency limiter in front of it can be judged against it.
 *
 * The model is processor sharing over C slots: every request needs W ms of
 * work; with n requests in flight each progresses at rate min(1, C/n). So
 * the unloaded latency is W, the capacity C/W requests a second, and beyond
 * it every request slows down as more are in flight (latency n*W/C), as a
 * server whose threads share its cores does. The server is work-conserving
 * and keeps no queue of its own: everything admitted is in progress.
 *
 * Because every request needs the same work and all progress at the same
 * rate, they finish in the order they arrived: the state is one global
 * "work clock" V (the work each request in flight has received since V was
 * 0) and a FIFO of requests, each finishing when V reaches its start value
 * plus W. V is advanced exactly, piecewise between events (an arrival, a
 * departure, a client going away, a capacity change, a timer tick), with
 * the n of each piece. Answers are written from a 1 ms libuv timer (and at
 * each arrival): resolution 1 ms, i.e. an answer leaves 0 to 1 ms (0.5 ms
 * on average) after its work is done, plus the loop's wake-up delay; the
 * progress of the others is not affected by that delay.
 *
 * A client that closes its connection abandons its request (the work done
 * on it is lost, as when a server notices the client is gone).
 *
 * Requests (any method; a body is read and ignored):
 *   /_capacity?slots=N   set C to N now (answered at once, no work)
 *   /_stats              "slots C", "inflight n", "completed", "abandoned"
 *   /_health             answered at once
 *   anything else        W ms of work, then 200 "ok\n"
 *
 * usage: adaptive_upstream --port P [--slots C] [--work-ms W]
 */
#define _POSIX_C_SOURCE 200809L /* uv.h needs pthread_rwlock_t */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#define IN_MAX  16384
#define TICK_MS 1

struct req {
    uv_tcp_t tcp;
    struct req *prev, *next; /* the FIFO of requests in progress */
    double finish;           /* V at which its work is done */
    bool busy;               /* a request is in progress or being answered */
    bool in_fifo, close_after, closing;
    size_t body_left;
    char in[IN_MAX];
    size_t in_len;
    uv_write_t wr;
};

static struct {
    double slots;
    double work_ns;
    double v;        /* the work clock, ns of work */
    uint64_t last;   /* when v was last advanced (uv_hrtime) */
    unsigned n;      /* requests in flight */
    struct req head; /* FIFO sentinel */
    uint64_t completed, abandoned;
    uv_loop_t *loop;
} g = {.slots = 20, .work_ns = 20e6};

static const char ok_200[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 3\r\n\r\nok\n";

static void fifo_remove(struct req *r)
{
    r->prev->next = r->next;
    r->next->prev = r->prev;
    r->in_fifo = false;
    g.n--;
}

static void answer(struct req *r, const char *text, size_t len);
static void next_request(struct req *r);

/* Advance V to `now`, answering every request whose work is done on the way
 * (each piece between two completions at the rate of its own n). */
static void advance(uint64_t now)
{
    while (g.n > 0 && now > g.last) {
        struct req *r = g.head.next;
        double rate = g.slots >= g.n ? 1.0 : g.slots / g.n;
        double need = (r->finish - g.v) / rate; /* ns until the head is done */

        if (need > (double)(now - g.last)) {
            g.v += (double)(now - g.last) * rate;
            break;
        }
        g.v = r->finish;
        g.last += need > 0 ? (uint64_t)need : 0;
        fifo_remove(r);
        g.completed++;
        answer(r, ok_200, sizeof(ok_200) - 1);
    }
    while (g.n > 0 && g.head.next->finish <= g.v) { /* ties */
        struct req *r = g.head.next;

        fifo_remove(r);
        g.completed++;
        answer(r, ok_200, sizeof(ok_200) - 1);
    }
    g.last = now;
}

static void on_tick(uv_timer_t *t)
{
    advance(uv_hrtime());
}

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

static void close_req(struct req *r)
{
    if (r->closing)
        return;
    r->closing = true;
    if (r->in_fifo) {
        advance(uv_hrtime());
        if (r->in_fifo) {
            fifo_remove(r);
            g.abandoned++;
        }
    }
    uv_close((uv_handle_t *)&r->tcp, on_closed);
}

static void on_written(uv_write_t *w, int status)
{
    struct req *r = w->data;

    r->busy = false;
    if (status < 0 || r->close_after) {
        close_req(r);
        return;
    }
    next_request(r);
}

static void answer(struct req *r, const char *text, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)text, (unsigned)len);

    r->wr.data = r;
    if (r->closing || uv_write(&r->wr, (uv_stream_t *)&r->tcp, &b, 1, on_written) != 0) {
        r->busy = false;
        close_req(r);
    }
}

static char stats_text[512];

static void control(struct req *r, const char *target)
{
    const char *q;
    int len;

    if (strncmp(target, "/_capacity", 10) == 0) {
        q = strstr(target, "slots=");
        if (q != NULL && atof(q + 6) > 0) {
            advance(uv_hrtime());
            g.slots = atof(q + 6);
        }
    }
    len = snprintf(stats_text + 200, sizeof(stats_text) - 200,
                   "slots %g\ninflight %u\ncompleted %llu\nabandoned %llu\n", g.slots, g.n,
                   (unsigned long long)g.completed, (unsigned long long)g.abandoned);
    int hl =
        snprintf(stats_text, 200,
                 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", len);
    memmove(stats_text + hl, stats_text + 200, (size_t)len);
    answer(r, stats_text, (size_t)(hl + len));
}

/* A header's value, or NULL: `name` with its colon, e.g. "content-length:". */
static const char *header(const char *head, const char *end, const char *name)
{
    size_t nl = strlen(name);

    for (const char *p = strstr(head, "\r\n"); p != NULL && p + 2 < end;
         p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, nl) == 0) {
            const char *v = p + 2 + nl;
            while (*v == ' ' || *v == '\t')
                v++;
            return v;
        }
    }
    return NULL;
}

/* Take the next complete request head from r->in, if any. */
static void next_request(struct req *r)
{
    char *end, target[256];
    const char *v;
    size_t used;

    if (r->busy || r->closing)
        return;
    if (r->body_left > 0) { /* the previous request's body */
        size_t k = r->body_left < r->in_len ? r->body_left : r->in_len;
        memmove(r->in, r->in + k, r->in_len - k);
        r->in_len -= k;
        r->body_left -= k;
        if (r->body_left > 0)
            return;
    }
    r->in[r->in_len] = 0;
    end = strstr(r->in, "\r\n\r\n");
    if (end == NULL) {
        if (r->in_len >= IN_MAX - 1)
            close_req(r);
        return;
    }
    end += 4;
    used = (size_t)(end - r->in);
    if (sscanf(r->in, "%*s %255s", target) != 1) {
        close_req(r);
        return;
    }
    v = header(r->in, end, "content-length:");
    r->body_left = v != NULL ? strtoul(v, NULL, 10) : 0;
    v = header(r->in, end, "connection:");
    r->close_after = v != NULL && strncasecmp(v, "close", 5) == 0;
    if (header(r->in, end, "transfer-encoding:") != NULL) { /* not needed: refuse */
        close_req(r);
        return;
    }
    memmove(r->in, r->in + used, r->in_len - used);
    r->in_len -= used;
    r->busy = true;
    if (target[0] == '/' && target[1] == '_') {
        control(r, target);
        return;
    }
    uint64_t now = uv_hrtime();
    advance(now);
    r->finish = g.v + g.work_ns;
    r->prev = g.head.prev;
    r->next = &g.head;
    g.head.prev->next = r;
    g.head.prev = r;
    r->in_fifo = true;
    g.n++;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct req *r = h->data;

    *b = uv_buf_init(r->in + r->in_len, (unsigned)(IN_MAX - 1 - r->in_len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct req *r = s->data;

    if (n < 0) {
        close_req(r);
        return;
    }
    r->in_len += (size_t)n;
    next_request(r);
    if (!r->closing && r->in_len >= IN_MAX - 1)
        close_req(r); /* a head that does not fit, or pipelining beyond reason */
}

static void on_connection(uv_stream_t *server, int status)
{
    struct req *r;

    if (status < 0 || (r = calloc(1, sizeof(*r))) == NULL)
        return;
    uv_tcp_init(g.loop, &r->tcp);
    r->tcp.data = r;
    if (uv_accept(server, (uv_stream_t *)&r->tcp) != 0) {
        r->closing = true;
        uv_close((uv_handle_t *)&r->tcp, on_closed);
        return;
    }
    uv_tcp_nodelay(&r->tcp, 1);
    uv_read_start((uv_stream_t *)&r->tcp, on_alloc, on_read);
}

static void on_signal(uv_signal_t *s, int signum)
{
    uv_stop(g.loop);
}

int main(int argc, char **argv)
{
    uv_tcp_t server;
    uv_timer_t tick;
    uv_signal_t sigterm, sigint;
    struct sockaddr_in addr;
    int port = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--slots") == 0)
            g.slots = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--work-ms") == 0)
            g.work_ns = atof(argv[i + 1]) * 1e6;
        else
            break;
    }
    if (port <= 0 || g.slots <= 0 || g.work_ns <= 0) {
        fprintf(stderr, "usage: adaptive_upstream --port P [--slots C] [--work-ms W]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    g.loop = uv_default_loop();
    g.head.next = g.head.prev = &g.head;
    g.last = uv_hrtime();
    uv_tcp_init(g.loop, &server);
    uv_ip4_addr("127.0.0.1", port, &addr);
    if (uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0) != 0 ||
        uv_listen((uv_stream_t *)&server, 4096, on_connection) != 0) {
        fprintf(stderr, "adaptive_upstream: cannot listen on 127.0.0.1:%d\n", port);
        return 1;
    }
    uv_timer_init(g.loop, &tick);
    uv_timer_start(&tick, on_tick, TICK_MS, TICK_MS);
    uv_signal_init(g.loop, &sigterm);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_init(g.loop, &sigint);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_run(g.loop, UV_RUN_DEFAULT);
    return 0;
}
