/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc.c - gRPC as a sluiced protocol: sniffing the HTTP/2 client preface,
 * one HTTP/2 session (h2.h) per connection fed from the core's input
 * buffer and writing through sl__conn_write, the table of methods, and
 * the deadlines (grpc-timeout) of decisions in flight.
 *
 * A decision in flight pins the connection (conn.h), so the core neither
 * closes nor frees it before the answer; its operation lives in the
 * stream's owner area, so a call allocates nothing. One timer per
 * connection fires at the earliest deadline of the decisions in flight
 * and answers DEADLINE_EXCEEDED for those not made in time (the decision,
 * when it comes, is dropped). On drain (the server stops, the connection
 * is idle) the session sends GOAWAY with the last stream id, serves the
 * streams up to it and closes.
 *
 * The same timer enforces server.write_timeout on replies that wait for
 * the client's flow-control window: such a client reads its socket (the
 * core sees nothing queued) but grants no window, and would hold its
 * streams and their replies for ever. A reply that waited that long
 * without a byte leaving ends the connection (GOAWAY ENHANCE_YOUR_CALM),
 * counted as a write timeout.
 *
 * Streams (the table's methods with a streamer: a health watch, a
 * reflection conversation) are handed to their service at their headers
 * and then message by message. They pin nothing - the connection can
 * close under them, which forgets them - but keep the connection from
 * counting as idle (sl__conn_streams). A service that follows a state
 * asks for ticks (sl__grpc_tick): the same timer looks every
 * SL__GRPC_TICK_MS while any stream ticks. On drain every stream is
 * ended by its service (a watch says NOT_SERVING first), so GOAWAY can
 * finish the session.
 *
 * It does not decode messages or decide (grpc_rls.c, grpc_health.c,
 * grpc_reflect.c).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "decide.h"
#include "grpc.h"
#include "xds.h"
#include "log.h"
#include "metrics.h"
#include "server-t.h"
#include "worker-t.h"
#include "xalloc.h"

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN (sizeof(preface) - 1)

_Static_assert(sizeof(struct sl__grpc_op) <= SL__H2_OWNER_BYTES, "an op fits its stream");

#define PATH(p) p, sizeof(p) - 1

static const struct {
    const char *path;
    size_t len;                                                         /* strlen(path) */
    void (*fn)(struct sl__grpc_op *op, const struct sl__h2_call *call); /* unary */
    const struct sl__grpc_streamer *st;                                 /* streams */
} methods[] = {
    {PATH("/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"), sl__grpc_rls, NULL},
    {PATH("/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas"), NULL,
     &sl__grpc_rlqs},
    {PATH("/grpc.health.v1.Health/Check"), sl__grpc_health_check, NULL},
    {PATH("/grpc.health.v1.Health/Watch"), NULL, &sl__grpc_health_watch},
    {PATH("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"), NULL, &sl__grpc_reflect},
    {PATH("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"), NULL,
     &sl__grpc_reflect},
};

#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

static int method_of(struct sl_str path)
{
    for (size_t i = 0; i < N_METHODS; i++)
        if (methods[i].len == path.len && memcmp(methods[i].path, path.p, path.len) == 0)
            return (int)i;
    return -1;
}

size_t sl__grpc_service(size_t i, char *out, size_t cap)
{
    size_t n = 0;

    for (size_t m = 0; m < N_METHODS; m++) {
        const char *svc = methods[m].path + 1, *slash = strchr(svc, '/');
        size_t len = (size_t)(slash - svc);
        bool seen = false;

        for (size_t k = 0; k < m && !seen; k++)
            seen = strncmp(methods[k].path + 1, svc, len + 1) == 0;
        if (seen)
            continue;
        if (n++ == i) {
            if (len >= cap)
                return 0;
            memcpy(out, svc, len);
            out[len] = '\0';
            return len;
        }
    }
    return 0;
}

const struct sl__grpc_config *sl__grpc_config(const struct sl__conn *c)
{
    return sl__config_room(&c->w->srv->cfg, &sl__grpc_config_section);
}

/* ------------------------------------------------------------ output */

static void on_send(void *owner, const uint8_t *buf, size_t len)
{
    struct sl__grpc_conn *g = owner;

    sl__conn_write(g->c, buf, len);
}

static __attribute__((noinline)) void look_at_stalls(struct sl__grpc_conn *g);

/* After a flush: look at the replies waiting for the client's window, if
 * one waits or did (every flush asks; nearly none has any). */
static inline __attribute__((always_inline)) void watch_stalls(struct sl__grpc_conn *g)
{
    if (g->stall_ms >= 0 || sl__h2_waiting(g->h2))
        look_at_stalls(g);
}

/* Outside on_read: send what the session has to say, and close when it is
 * over. (Inside, on_read flushes once nghttp2 has taken the input: its
 * callbacks are where answers made at once are submitted.) */
static void pump(struct sl__grpc_conn *g)
{
    if (g->c->flags & SL__CONN_IN_READ)
        return; /* on_read flushes, and says when to close */
    sl__h2_flush(g->h2);
    watch_stalls(g);
    if (sl__h2_done(g->h2) && !(g->c->flags & SL__CONN_CLOSING))
        sl__conn_close(g->c);
    else
        sl__conn_flush(g->c);
}

/* ------------------------------------------------------------ deadlines */

static struct sl__grpc_op **list_of(struct sl__grpc_op *op)
{
    return op->st != NULL ? &op->g->streams : &op->g->waiting;
}

static void link_op(struct sl__grpc_op *op)
{
    struct sl__grpc_op **head = list_of(op);

    op->prev = NULL;
    op->next = *head;
    if (*head != NULL)
        (*head)->prev = op;
    *head = op;
}

static void unlink_op(struct sl__grpc_op *op)
{
    if (op->prev != NULL)
        op->prev->next = op->next;
    else if (*list_of(op) == op)
        *list_of(op) = op->next;
    if (op->next != NULL)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
}

static void on_deadline(uv_timer_t *t);

/* Arm the timer for the earliest deadline still to be answered, or the
 * time a reply will have waited too long for the client's window. */
static void rearm(struct sl__grpc_conn *g)
{
    int64_t first = g->stall_ms;

    if (g->tick_ms >= 0 && (first < 0 || g->tick_ms < first))
        first = g->tick_ms;
    for (struct sl__grpc_op *op = g->waiting; op != NULL; op = op->next)
        if (!op->late && op->deadline_ms >= 0 && (first < 0 || op->deadline_ms < first))
            first = op->deadline_ms;
    for (struct sl__grpc_op *op = g->streams; op != NULL; op = op->next)
        if (op->deadline_ms >= 0 && (first < 0 || op->deadline_ms < first))
            first = op->deadline_ms;
    if (first < 0) {
        uv_timer_stop(&g->deadline);
        return;
    }
    int64_t now = (int64_t)uv_now(g->deadline.loop);
    uv_timer_start(&g->deadline, on_deadline, first > now ? (uint64_t)(first - now) : 0, 0);
}

/* After a flush: the replies still waiting for the client's window are
 * looked at (sl__h2_stalled_until), and the timer follows the oldest. */
static void look_at_stalls(struct sl__grpc_conn *g)
{
    int64_t timeout_ms, was = g->stall_ms, now;

    timeout_ms = g->c->w->srv->cfg.write_timeout_ms;
    now = (int64_t)uv_now(g->deadline.loop);
    g->stall_ms = timeout_ms > 0 ? sl__h2_stalled_until(g->h2, now, timeout_ms) : -1;
    if (g->stall_ms >= 0 && g->stall_ms <= now) {
        sl__dbg("conn.write_timeout",
                "grpc: a reply waited %lld ms for the client's flow-control window; closing",
                (long long)timeout_ms);
        sl__metrics_conn_event(g->c->w->srv->metrics, g->c->w->id, SL__CONN_EV_CLOSED_WRITE, 1);
        sl__h2_flush(g->h2); /* the GOAWAY; the caller closes once it is out */
        g->stall_ms = -1;
    }
    if (g->stall_ms != was)
        rearm(g);
}

/* The streams past their deadline end; those that tick look again. */
static void stream_timers(struct sl__grpc_conn *g, int64_t now)
{
    struct sl__grpc_op *op, *next;
    bool tick = g->tick_ms >= 0 && g->tick_ms <= now, ticking = false;

    for (op = g->streams; op != NULL; op = next) {
        next = op->next; /* (op may end here) */
        if (op->deadline_ms >= 0 && op->deadline_ms <= now)
            sl__grpc_fail(op, SL__GRPC_DEADLINE_EXCEEDED, "the stream's grpc-timeout passed");
        else if (tick && op->ticking)
            op->st->tick(op);
    }
    if (!tick)
        return;
    for (op = g->streams; op != NULL && !ticking; op = op->next)
        ticking = op->ticking;
    g->tick_ms = ticking ? now + SL__GRPC_TICK_MS : -1;
}

static void on_deadline(uv_timer_t *t)
{
    struct sl__grpc_conn *g = t->data;
    int64_t now = (int64_t)uv_now(t->loop);

    for (struct sl__grpc_op *op = g->waiting; op != NULL; op = op->next) {
        if (op->late || op->deadline_ms < 0 || op->deadline_ms > now)
            continue;
        op->late = true; /* the decision, when it comes, is dropped */
        sl__h2_fail(g->h2, op->s, SL__GRPC_DEADLINE_EXCEEDED, "no decision within grpc-timeout");
    }
    stream_timers(g, now);
    rearm(g);
    pump(g);
}

void sl__grpc_tick(struct sl__grpc_op *op, bool on)
{
    struct sl__grpc_conn *g = op->g;

    op->ticking = on;
    if (on && g->tick_ms < 0) {
        g->tick_ms = (int64_t)uv_now(g->deadline.loop) + SL__GRPC_TICK_MS;
        rearm(g);
    }
}

void sl__grpc_deciding(struct sl__grpc_op *op)
{
    struct sl__grpc_conn *g = op->g;

    op->next = g->waiting;
    if (g->waiting != NULL)
        g->waiting->prev = op;
    g->waiting = op;
    op->pinned = true;
    sl__conn_pin(g->c);
}

/* A stream is over: forgotten by the connection. */
static void stream_gone(struct sl__grpc_op *op)
{
    if (op->st->gone != NULL)
        op->st->gone(op);
    unlink_op(op);
    op->st = NULL;
    op->ticking = false;
    sl__conn_streams(op->g->c, -1);
}

/* The op is over: its stream goes back to the session, the answer out. */
static void finish(struct sl__grpc_op *op)
{
    struct sl__grpc_conn *g = op->g;
    struct sl__conn *c = g->c;
    bool pinned = op->pinned;

    if (op->st != NULL)
        stream_gone(op);
    sl__h2_release(g->h2, op->s); /* the op's memory may be reused from here */
    pump(g);
    if (pinned)
        sl__conn_unpin(c); /* last: the connection may be freed */
}

bool sl__grpc_decided(struct sl__grpc_op *op)
{
    unlink_op(op);
    if (op->late) {
        finish(op);
        return false;
    }
    return true;
}

void sl__grpc_answer(struct sl__grpc_op *op, const uint8_t *msg, size_t len)
{
    sl__h2_reply(op->g->h2, op->s, msg, len);
    finish(op);
}

void sl__grpc_fail(struct sl__grpc_op *op, enum sl__grpc_status code, const char *message)
{
    sl__h2_fail(op->g->h2, op->s, code, message);
    finish(op);
}

bool sl__grpc_send(struct sl__grpc_op *op, const uint8_t *msg, size_t len)
{
    if (!sl__h2_send(op->g->h2, op->s, msg, len))
        return false;
    pump(op->g);
    return true;
}

/* ------------------------------------------------------------ calls */

static void on_call(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *call)
{
    struct sl__grpc_conn *g = owner;
    struct sl__grpc_op *op = sl__h2_owner_area(s);
    bool timed;
    int m;

    if (call->stream) {
        memset(op, 0, sizeof(*op));
    } else { /* a unary call: no stream state, and its domain is written before it is read */
        memset(op, 0, offsetof(struct sl__grpc_op, d.domain));
        memset(&op->d.stats, 0,
               offsetof(struct sl__grpc_op, u) - offsetof(struct sl__grpc_op, d.stats));
    }
    op->g = g;
    op->s = s;
    op->deadline_ms = call->timeout_ns < 0
                          ? -1
                          : (int64_t)uv_now(g->deadline.loop) + sl_ns_to_ms_ceil(call->timeout_ns);
    if (call->timeout_ns == 0) {
        sl__grpc_fail(op, SL__GRPC_DEADLINE_EXCEEDED, "grpc-timeout of 0");
        return;
    }
    if ((m = call->route & ~SL__H2_ROUTE_STREAM) >= (int)N_METHODS) {
        sl__grpc_fail(op, SL__GRPC_UNIMPLEMENTED, "unknown method");
        return;
    }
    if (call->stream) { /* its messages follow (on_message) */
        op->st = methods[m].st;
        link_op(op);
        sl__conn_streams(g->c, 1);
        if (op->deadline_ms >= 0)
            rearm(g);
        return;
    }
    timed = op->deadline_ms >= 0; /* (op may be reused once fn answered it) */
    methods[m].fn(op, call);
    /* A call left deciding with a deadline may be the earliest; one
     * without adds nothing to the timer (the waiting list is not walked
     * per call). */
    if (timed && g->waiting != NULL)
        rearm(g);
}

/* A call's route: its method's index, SL__H2_ROUTE_STREAM for a stream;
 * N_METHODS for an unknown path. */
static int32_t route(void *owner, struct sl_str path)
{
    int m = method_of(path);

    if (m < 0)
        return (int32_t)N_METHODS;
    return m | (methods[m].st != NULL ? SL__H2_ROUTE_STREAM : 0);
}

static void on_message(void *owner, struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    struct sl__grpc_op *op = sl__h2_owner_area(s);

    op->st->message(op, msg, len);
}

/* The peer reset a stream (or the session ended it): forget it. Inside
 * nghttp2's callbacks: the caller flushes. */
static void on_gone(void *owner, struct sl__h2_stream *s)
{
    struct sl__grpc_op *op = sl__h2_owner_area(s);

    stream_gone(op);
    sl__h2_release(op->g->h2, s);
}

/* The calls' message buffers draw on the budget every connection's
 * buffers share (server.max_buffer_bytes): past it, a call whose message
 * needs more is refused, and the connection goes on. */
static bool on_budget(void *owner, int64_t delta, bool refusable)
{
    struct sl__grpc_conn *g = owner;
    static struct sl__lograte rl;

    if (sl__conn_budget(g->c, delta, refusable))
        return true;
    sl__log_rate(&rl, SL__LOG_WARN, "grpc.buffer_budget",
                 &SL__LOG_STR("limit", "server.max_buffer_bytes"), 1,
                 "grpc: server.max_buffer_bytes (%zu) reached; refusing a call whose message "
                 "needs more (RESOURCE_EXHAUSTED)",
                 g->c->w->srv->cfg.max_buffer_bytes);
    return false;
}

static const struct sl__h2_ops h2_ops = {on_send, on_call, on_budget, route, on_message, on_gone};

/* ------------------------------------------------------------ protocol */

/* The client preface, whole (HTTP/2 with prior knowledge). */
static int sniff(const char *buf, size_t len)
{
    size_t n = len < PREFACE_LEN ? len : PREFACE_LEN;

    if (memcmp(buf, preface, n) != 0)
        return 0;
    return len < PREFACE_LEN ? -2 : 1;
}

static int on_open(struct sl__conn *c)
{
    const struct sl__grpc_config *cfg = sl__grpc_config(c);
    struct sl__h2_limits lim = {cfg->max_concurrent_streams, cfg->max_message_bytes,
                                cfg->max_header_list_bytes, cfg->max_header_bytes_per_s};
    struct sl__grpc_conn *g = sl__xzalloc(sizeof(*g));

    g->c = c;
    g->h2 = sl__h2_new(&lim, &h2_ops, g);
    if (g->h2 == NULL) {
        free(g);
        return -1;
    }
    uv_timer_init(c->tcp.loop, &g->deadline);
    g->deadline.data = g;
    g->stall_ms = -1;
    g->tick_ms = -1;
    c->proto_state = g;
    return 0;
}

/* The calls of one read are decided as one batch (sl__decide_batch_begin):
 * their answers are submitted when it ends, before the session is flushed,
 * so they leave in one write. */
static ssize_t on_read(struct sl__conn *c, const char *buf, size_t len)
{
    struct sl__grpc_conn *g = c->proto_state;
    size_t n;

    sl__decide_batch_begin(c->w);
    sl__h2_clock(g->h2, (int64_t)uv_now(g->deadline.loop));
    n = sl__h2_feed(g->h2, (const uint8_t *)buf, len);
    sl__decide_batch_end(c->w);
    sl__h2_flush(g->h2);
    watch_stalls(g);
    sl__conn_partial(c, sl__h2_partial(g->h2));
    return sl__h2_done(g->h2) ? -1 : (ssize_t)n;
}

static void on_drain(struct sl__conn *c)
{
    struct sl__grpc_conn *g = c->proto_state;
    struct sl__grpc_op *op, *next;

    for (op = g->streams; op != NULL; op = next) {
        next = op->next; /* (op ends here) */
        if (op->st->drain != NULL)
            op->st->drain(op);
        else
            sl__grpc_fail(op, SL__GRPC_UNAVAILABLE, "the server is stopping");
    }
    sl__h2_goaway(g->h2);
    pump(g);
}

static void free_state(uv_handle_t *h)
{
    free(h->data);
}

static void on_close(struct sl__conn *c)
{
    struct sl__grpc_conn *g = c->proto_state;

    for (struct sl__grpc_op *op = g->streams; op != NULL; op = op->next)
        if (op->st->gone != NULL)
            op->st->gone(op); /* (the session is not touched) */
    g->streams = NULL;        /* forgotten: they go with the session */
    sl__h2_free(g->h2);       /* no decision is waiting: each would pin the connection */
    g->h2 = NULL;
    g->c = NULL;
    uv_close((uv_handle_t *)&g->deadline, free_state);
    c->proto_state = NULL;
}

static void render_metrics(const struct sl__server *srv, struct sl__buf *out)
{
    sl__xds_render_metrics(srv, out);
    sl__rlqs_render_metrics(srv, out);
}

/* xDS's member (when it is the rules' source) and the RLQS one (always). */
static void render_stats(const struct sl__server *srv, struct sl__buf *out)
{
    size_t before = out->len;

    sl__xds_render_stats(srv, out);
    if (out->len != before)
        sl__buf_append(out, ",", 1);
    sl__rlqs_render_stats(srv, out);
}

const struct sl__proto sl__proto_grpc = {
    .name = "grpc",
    .alpn = "h2",
    .sniff = sniff,
    .on_open = on_open,
    .on_read = on_read,
    .on_drain = on_drain,
    .on_close = on_close,
    .render_metrics = render_metrics,
    .render_stats = render_stats,
    .main_start = sl__xds_start,
    .main_stop = sl__xds_stop,
};
