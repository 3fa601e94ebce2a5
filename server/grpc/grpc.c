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
 * It does not decode messages or decide (grpc_rls.c, grpc_health.c).
 */
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

static const struct {
    const char *path;
    void (*fn)(struct sl__grpc_op *op, const struct sl__h2_call *call);
} methods[] = {
    {"/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit", sl__grpc_rls},
    {"/grpc.health.v1.Health/Check", sl__grpc_health_check},
};

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

static void watch_stalls(struct sl__grpc_conn *g);

/* Outside on_read: send what the session has to say, and close when it is
 * over. */
static void pump(struct sl__grpc_conn *g)
{
    sl__h2_flush(g->h2);
    watch_stalls(g);
    if (g->c->flags & SL__CONN_IN_READ)
        return; /* on_read's caller flushes, and on_read says when to close */
    if (sl__h2_done(g->h2) && !(g->c->flags & SL__CONN_CLOSING))
        sl__conn_close(g->c);
    else
        sl__conn_flush(g->c);
}

/* ------------------------------------------------------------ deadlines */

static void unlink_op(struct sl__grpc_op *op)
{
    if (op->prev != NULL)
        op->prev->next = op->next;
    else
        op->g->waiting = op->next;
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

    for (struct sl__grpc_op *op = g->waiting; op != NULL; op = op->next)
        if (!op->late && op->deadline_ms >= 0 && (first < 0 || op->deadline_ms < first))
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
static void watch_stalls(struct sl__grpc_conn *g)
{
    int64_t timeout_ms = g->c->w->srv->cfg.write_timeout_ms, was = g->stall_ms;
    int64_t now = (int64_t)uv_now(g->deadline.loop);

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
    rearm(g);
    pump(g);
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

/* The op is over: its stream goes back to the session, the answer out. */
static void finish(struct sl__grpc_op *op)
{
    struct sl__grpc_conn *g = op->g;
    struct sl__conn *c = g->c;
    bool pinned = op->pinned;

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

/* ------------------------------------------------------------ calls */

static void on_call(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *call)
{
    struct sl__grpc_conn *g = owner;
    struct sl__grpc_op *op = sl__h2_owner_area(s);
    int64_t now = (int64_t)uv_now(g->deadline.loop);

    memset(op, 0, sizeof(*op));
    op->g = g;
    op->s = s;
    op->deadline_ms = call->timeout_ns < 0 ? -1 : now + sl_ns_to_ms_ceil(call->timeout_ns);
    if (call->timeout_ns == 0) {
        sl__grpc_fail(op, SL__GRPC_DEADLINE_EXCEEDED, "grpc-timeout of 0");
        return;
    }
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (strlen(methods[i].path) == call->path.len &&
            memcmp(methods[i].path, call->path.p, call->path.len) == 0) {
            methods[i].fn(op, call);
            if (g->waiting != NULL)
                rearm(g);
            return;
        }
    }
    sl__grpc_fail(op, SL__GRPC_UNIMPLEMENTED,
                  call->path.len == 28 &&
                          memcmp(call->path.p, "/grpc.health.v1.Health/Watch", 28) == 0
                      ? "Watch is not implemented: poll Check"
                      : "unknown method");
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

static const struct sl__h2_ops h2_ops = {on_send, on_call, on_budget};

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

    sl__h2_free(g->h2); /* no op is waiting: each would pin the connection */
    g->h2 = NULL;
    g->c = NULL;
    uv_close((uv_handle_t *)&g->deadline, free_state);
    c->proto_state = NULL;
}

const struct sl__proto sl__proto_grpc = {
    .name = "grpc",
    .alpn = "h2",
    .sniff = sniff,
    .on_open = on_open,
    .on_read = on_read,
    .on_drain = on_drain,
    .on_close = on_close,
    .render_metrics = sl__xds_render_metrics,
    .render_stats = sl__xds_render_stats,
    .main_start = sl__xds_start,
    .main_stop = sl__xds_stop,
};
