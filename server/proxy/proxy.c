/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy.c - the protocol `proxy` and the exchange's state machine: a
 * client connection's requests, one at a time, each one exchange through
 * the states of enum sl__proxy_phase (proxy-t.h; the diagram is in
 * docs/architecture.md §The proxy's exchange). This file alone changes
 * x->phase (enter()) and handles every event: the client's bytes
 * (on_read), the client's output drained (on_sent), the gate's verdict,
 * the upstream connection's connect, data, EOF and drain, and the
 * worker's tick. The helpers it calls report back through their results
 * (sl__proxy_gate, sl__proxy_resp_take) or through the events it
 * registers with the worker (struct sl__proxy_events), never by calling
 * this file: there is no call cycle between the room's files.
 *
 * A request's head is parsed strictly and routed, the gate (proxy_gate.h)
 * lets it through, an upstream connection is taken from the worker's pool
 * or opened, and the rewritten head and then the body are forwarded as
 * they arrive: the body is consumed from the connection's input only as
 * fast as the upstream takes it (the client is held while SL__PROXY_HIGH
 * bytes wait), so a body of any size costs two buffers. A connect failure
 * tries the next server while nothing has gone out; timeouts are checked
 * on the worker's tick. Pipelined requests wait in the input buffer until
 * the exchange before them is over. The response's bytes are parsed and
 * rewritten by proxy_resp.c.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "log.h"
#include "proto.h"
#include "proxy.h"
#include "proxy_adaptive.h"
#include "proxy_gate.h"
#include "proxy_int.h"
#include "server-t.h"
#include "worker-t.h"
#include "xalloc.h"

static int64_t now_ms(const struct sl__proxy_x *x)
{
    return (int64_t)uv_now(x->pw->loop);
}

static bool in_read(const struct sl__proxy_x *x)
{
    return (x->c->flags & SL__CONN_IN_READ) != 0;
}

static void copy_str(char *dst, size_t cap, struct sl_str s)
{
    size_t n = s.len < cap - 1 ? s.len : cap - 1;
    memcpy(dst, s.p, n);
    dst[n] = '\0';
}

static struct sl_str header(const struct sl__proxy_head *h, const char *lower)
{
    for (unsigned i = 0; i < h->n_hdrs; i++)
        if (sl__proxy_ieq(h->hdrs[i].name, lower))
            return h->hdrs[i].value;
    return (struct sl_str){"", 0};
}

/* ------------------------------------------------------------ the states */

/* The phases each phase may go on to (docs/architecture.md §The proxy's
 * exchange); a bit per phase. CONNECTING and FORWARD may start over with
 * the next server. */
#define TO(p) (1u << (p))
static const unsigned next_ok[] = {
    [SL__PX_IDLE] = TO(SL__PX_ROUTED) | TO(SL__PX_DONE),
    [SL__PX_ROUTED] = TO(SL__PX_HELD) | TO(SL__PX_CONNECTING) | TO(SL__PX_FORWARD) |
                      TO(SL__PX_IDLE) | TO(SL__PX_DONE),
    [SL__PX_HELD] = TO(SL__PX_CONNECTING) | TO(SL__PX_FORWARD) | TO(SL__PX_IDLE) | TO(SL__PX_DONE),
    [SL__PX_CONNECTING] =
        TO(SL__PX_CONNECTING) | TO(SL__PX_FORWARD) | TO(SL__PX_IDLE) | TO(SL__PX_DONE),
    [SL__PX_FORWARD] = TO(SL__PX_CONNECTING) | TO(SL__PX_FORWARD) | TO(SL__PX_TUNNEL) |
                       TO(SL__PX_IDLE) | TO(SL__PX_DONE),
    [SL__PX_TUNNEL] = TO(SL__PX_DONE),
    [SL__PX_DONE] = 0,
};

/* The one place x->phase changes. */
static void enter(struct sl__proxy_x *x, enum sl__proxy_phase to)
{
    (void)next_ok; /* read by the assert alone, which NDEBUG drops */
    assert(next_ok[x->phase] & TO(to));
    x->phase = to;
}

/* ------------------------------------------------------------ ending */

/* The exchange is over (response written or given up): release the
 * upstream connection, log, tell the gate, and let the client connection
 * go on to its next request (IDLE) or close (DONE). */
static void finish(struct sl__proxy_x *x)
{
    struct sl__conn *c = x->c;
    struct sl__proxy_up *up = x->up;
    bool close;

    if (up != NULL) {
        x->up = NULL;
        if (x->up_reusable && x->req_done && sl__proxy_up_pending(up) == 0 && x->resp_done)
            sl__proxy_pool_put(up);
        else
            sl__proxy_up_close(up);
    }
    if (x->peer != NULL && x->resp_done && x->acc.up_head_ms >= 0)
        sl__proxy_peer_ok(x->peer);
    if (c->w->srv->cfg.log_access != SL__ACCESS_OFF)
        sl__proxy_log(x, c->w->srv->cfg.log_access);
    sl__proxy_gate_done(x);
    sl__proxy_active_remove(x->pw, x);
    close = x->close_after || !x->req_done || !x->keep_alive;
    enter(x, close ? SL__PX_DONE : SL__PX_IDLE);
    sl__conn_set_busy(c, false);
    if (close) {
        if (in_read(x))
            x->close_now = true;
        else
            sl__conn_close(c);
        return;
    }
    if (x->client_held) {
        x->client_held = false;
        sl__conn_unhold(c); /* the next pipelined request, if any */
    } else {
        sl__conn_flush(c);
    }
}

/* Give up after the response has started (the client can only be cut
 * off): close both sides. */
static void abort_x(struct sl__proxy_x *x, const char *why)
{
    sl__dbg("proxy.aborted", "proxy: %s %s: %s; closing the client connection", x->acc.method,
            x->acc.target, why);
    x->up_reusable = false;
    x->close_after = true;
    finish(x);
}

/* Answer the request locally with `l` (its close and no_body set here)
 * instead of, or after a failure of, forwarding; cut off if a response
 * has started. */
static void answer_local(struct sl__proxy_x *x, struct sl__proxy_local *l)
{
    if (x->resp_started) {
        abort_x(x, sl__proxy_reason(l->status));
        return;
    }
    /* (l->body may be in the gate's scratch, never in pw->scratch) */
    x->acc.status = l->status;
    x->up_reusable = false;
    x->close_after = x->close_after || !x->req_done || !x->keep_alive;
    l->close = x->close_after;
    l->no_body = x->head_method;
    x->acc.bytes_out = l->no_body ? 0 : l->body.len;
    x->pw->scratch.len = 0;
    sl__proxy_local_resp(&x->pw->scratch, l);
    sl__conn_write(x->c, x->pw->scratch.p, x->pw->scratch.len);
    x->resp_started = x->resp_done = true;
    finish(x);
}

/* The same with an error of the proxy's own: JSON {"error": why}. */
static void answer(struct sl__proxy_x *x, int status, const char *why)
{
    char body[320];
    struct sl__proxy_local l = {.status = status, .type = "application/json"};

    if (x->resp_started) {
        abort_x(x, why);
        return;
    }
    l.body = (struct sl_str){body, sl__proxy_error_body(body, sizeof(body), why)};
    answer_local(x, &l);
}

/* The client went away while its request was held or waiting for a
 * response: end the exchange as 499 (nothing is sent). */
static void client_gone(struct sl__proxy_x *x)
{
    sl__dbg("proxy.client_gone", "proxy: %s %s: the client closed its connection; giving up",
            x->acc.method, x->acc.target);
    x->acc.status = 0;
    x->up_reusable = false;
    x->close_after = true;
    finish(x);
}

/* ------------------------------------------------------------ forwarding */

static void send_continue(struct sl__proxy_x *x)
{
    if (!x->expect_100 || x->continue_sent || x->req_done || x->acc.bytes_in > 0)
        return;
    x->continue_sent = true;
    sl__conn_write(x->c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    sl__conn_flush(x->c);
}

static void attach(struct sl__proxy_x *x, struct sl__proxy_up *up, bool connected)
{
    x->up = up;
    up->x = x;
    up->requests++;
    enter(x, connected ? SL__PX_FORWARD : SL__PX_CONNECTING);
    x->phase_ms = x->up_io_ms = now_ms(x);
    sl__proxy_up_queue(up, x->head.p, x->head.len);
    if (connected) {
        sl__proxy_gate_sent(x); /* the head handed to a ready connection */
        sl__proxy_up_read(up, true);
        sl__proxy_up_flush(up);
        send_continue(x);
    }
}

/* The next server, over a pooled connection or a new one. */
static void connect_next(struct sl__proxy_x *x)
{
    struct sl__proxy_peer *peer;
    struct sl__proxy_up *up;

    while ((peer = sl__proxy_pick(x->pw, x->route_i, &x->tried)) != NULL) {
        x->peer = peer;
        x->acc.upstream = peer->srv->name;
        x->tries++;
        if ((up = sl__proxy_pool_take(peer)) != NULL) {
            x->reused = true;
            attach(x, up, true);
            return;
        }
        x->reused = false;
        if ((up = sl__proxy_up_connect(x->pw, peer, x)) != NULL) {
            attach(x, up, false);
            return;
        }
        sl__proxy_peer_failed(x->pw, peer);
    }
    if (x->timed_out)
        answer(x, 504, "upstream timed out");
    else
        answer(x, 502, "no upstream server could be reached");
}

/* The upstream connection failed before any byte of a response: try the
 * next server when the request can still be sent (nothing of it left, or
 * an idempotent request without body), else answer 502 (504 if timed
 * out). count_failure: the failure counts against the server (max_fails). */
static void retry(struct sl__proxy_x *x, bool count_failure, bool timed_out)
{
    struct sl__proxy_up *up = x->up;
    bool unsent = up != NULL && !up->connected; /* all it was given is still queued */
    bool again = !x->resp_started && (unsent || (x->idempotent && x->acc.bytes_in == 0));

    if (count_failure && x->peer != NULL)
        sl__proxy_peer_failed(x->pw, x->peer);
    if (!count_failure && x->reused && x->peer != NULL && again) {
        /* a pooled connection the server had closed: the same server may
         * take the request over a new connection */
        sl__proxy_pool_drop(x->peer);
        sl__proxy_untry(x->pw, x->route_i, x->peer, &x->tried);
    }
    x->timed_out = x->timed_out || timed_out;
    if (up != NULL) {
        if (unsent) { /* keep head and body so far for the next server */
            x->head.len = 0;
            sl__buf_append(&x->head, up->out.p, up->out.len);
        }
        x->up = NULL;
        sl__proxy_up_close(up);
    }
    if (again) {
        connect_next(x);
        return;
    }
    answer(x, timed_out ? 504 : 502,
           timed_out ? "upstream timed out" : "upstream connection failed");
}

/* Forward the request now (the gate let it through), unless the route's
 * adaptive concurrency limit sheds it. Admission is here because this is
 * the one place every forwarded request passes exactly once: at once
 * after the gate, or after a hold (a shaping delay, a remote store's
 * answer) through resume(); a retry goes to connect_next() and is not
 * admitted again. Earlier, a request still waiting for its delay would
 * hold a slot without loading the upstream. */
static void forward(struct sl__proxy_x *x)
{
    struct sl__proxy_local *local = NULL;

    if (!sl__proxy_gate_admit(x, &local)) {
        answer_local(x, local);
        return;
    }
    x->acc.up_start_ms = now_ms(x);
    connect_next(x);
}

/* A request the gate held goes on. */
static void resume(struct sl__proxy_x *x)
{
    if (x->phase != SL__PX_HELD)
        return;
    sl__proxy_active_add(x->pw, x);
    x->client_ms = now_ms(x); /* a hold is not the client being slow */
    forward(x);
    if (x->client_held && x->up != NULL) {
        x->client_held = false;
        sl__conn_unhold(x->c);
    }
}

/* ------------------------------------------------------------ the response */

/* What the upstream sent so far, to the client; the step it made decides
 * the next state. */
static void respond(struct sl__proxy_x *x)
{
    const char *why = "";

    if (x->phase == SL__PX_TUNNEL) {
        sl__proxy_resp_tunnel(x);
        return;
    }
    switch (sl__proxy_resp_take(x, &why)) {
    case SL__PR_WAIT:
        break;
    case SL__PR_DONE:
        finish(x);
        break;
    case SL__PR_UPGRADED:
        enter(x, SL__PX_TUNNEL);
        /* The tunnel ends with either side's close, which the core must
         * see: not busy, so the client's EOF closes it (and on_close the
         * upstream). */
        sl__conn_set_busy(x->c, false);
        sl__proxy_resp_tunnel(x);
        if (x->client_held) {
            x->client_held = false;
            sl__conn_unhold(x->c); /* client bytes may wait for the tunnel */
        }
        break;
    case SL__PR_BROKEN: /* 502 while nothing went to the client; both close */
        x->close_after = true;
        answer(x, 502, why);
        break;
    }
}

/* ------------------------------------------------------------ events (pw->ev) */

static void on_up_drained(struct sl__proxy_x *x);

static void on_up_connected(struct sl__proxy_x *x, int status)
{
    if (status < 0) {
        sl__dbg("proxy.connect_failed", "proxy: connect to %s: %s", x->acc.upstream,
                uv_strerror(status));
        retry(x, true, false);
        return;
    }
    enter(x, SL__PX_FORWARD);
    x->phase_ms = x->up_io_ms = now_ms(x);
    sl__proxy_gate_sent(x); /* the head goes out now: the upstream's latency starts */
    sl__proxy_up_read(x->up, true);
    sl__proxy_up_flush(x->up);
    /* The body held while connecting may have gone out in that one write
     * (no drained event follows then): the client is read again here. */
    if (x->client_held && sl__proxy_up_pending(x->up) < SL__PROXY_HIGH)
        on_up_drained(x);
    send_continue(x);
}

static void on_up_drained(struct sl__proxy_x *x)
{
    x->up_io_ms = now_ms(x);
    if (x->client_held &&
        (x->phase == SL__PX_TUNNEL ||
         ((x->phase == SL__PX_FORWARD || x->phase == SL__PX_CONNECTING) && !x->req_done))) {
        x->client_held = false;
        sl__conn_unhold(x->c);
    }
}

static void on_up_data(struct sl__proxy_x *x)
{
    x->up_io_ms = now_ms(x);
    if (x->phase == SL__PX_FORWARD || x->phase == SL__PX_TUNNEL)
        respond(x);
}

static void on_up_eof(struct sl__proxy_x *x, int status)
{
    struct sl__proxy_up *up = x->up;

    (void)status;
    if (x->phase == SL__PX_TUNNEL) {
        x->close_after = true;
        finish(x);
        return;
    }
    if (!x->resp_head_done) {
        if (up != NULL && up->in.len > 0) {
            x->close_after = true;
            answer(x, 502, "the upstream server closed the connection inside a response head");
            return;
        }
        /* Nothing came back: a pooled connection the server had closed
         * (not the server's fault), or a failure. */
        retry(x, !x->reused, false);
        return;
    }
    if (x->resp_framing == SL__PF_CLOSE) {
        x->resp_done = true;
        x->up_reusable = false;
        sl__conn_flush(x->c);
        finish(x);
        return;
    }
    abort_x(x, "the upstream server closed the connection inside a response body");
}

/* An idle pooled connection read something: its server closed it. */
static void on_idle_heard(struct sl__proxy_up *up)
{
    sl__proxy_pool_forget(up);
    sl__proxy_up_close(up);
}

/* The gate's verdict on a request it held (or, for HOLD, on one whose
 * client left while it was decided). */
static void on_verdict(struct sl__proxy_x *x, enum sl__proxy_verdict v,
                       struct sl__proxy_local *local)
{
    if (v != SL__PROXY_ANSWERED && sl__proxy_client_left(x)) {
        client_gone(x);
        return;
    }
    assert(v != SL__PROXY_HOLD);
    if (v == SL__PROXY_ANSWERED)
        answer_local(x, local);
    else
        resume(x);
}

/* ------------------------------------------------------------ a request */

static bool is_idempotent(struct sl_str m)
{
    static const char *const safe[] = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", NULL};
    for (size_t i = 0; safe[i] != NULL; i++)
        if (m.len == strlen(safe[i]) && memcmp(m.p, safe[i], m.len) == 0)
            return true;
    return false;
}

/* Per-request fields back to their start. */
static void reset(struct sl__proxy_x *x)
{
    char client[sizeof(x->acc.client)];

    memcpy(client, x->acc.client, sizeof(client));
    memset(&x->acc, 0, sizeof(x->acc));
    memcpy(x->acc.client, client, sizeof(client));
    x->acc.up_start_ms = x->acc.up_head_ms = x->acc.delay_ms = -1;
    x->route = NULL;
    x->up = NULL;
    x->peer = NULL;
    x->tried = x->tries = 0;
    x->reused = x->timed_out = false;
    x->head_method = x->keep_alive = x->upgrade = x->expect_100 = x->idempotent = false;
    x->req_done = x->continue_sent = false;
    x->resp_started = x->resp_done = x->resp_head_done = x->resp_chunked_out = false;
    x->close_after = x->up_reusable = x->up_paused = false;
    x->gate = NULL;
    x->resp_hdrs = (struct sl_str){NULL, 0};
    x->head.len = 0;
}

static void account(struct sl__proxy_x *x, const struct sl__proxy_head *h)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    x->acc.start_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    x->acc.t0_ms = now_ms(x);
    x->acc.minor = h->minor;
    copy_str(x->acc.method, sizeof(x->acc.method), h->method);
    copy_str(x->acc.target, sizeof(x->acc.target), h->target);
    if (x->pw->log_wanted) {
        copy_str(x->acc.referer, sizeof(x->acc.referer), header(h, "referer"));
        copy_str(x->acc.agent, sizeof(x->acc.agent), header(h, "user-agent"));
    }
}

/* The request's framing and connection semantics; its upstream head. */
static void frame(struct sl__proxy_x *x, const struct sl__proxy_head *h)
{
    struct sl__proxy_fwd f = {.client = x->acc.client, .via = x->pw->cfg->via};

    x->keep_alive =
        h->minor == 1 ? !(h->flags & SL__PH_CONN_CLOSE) : !!(h->flags & SL__PH_CONN_KEEP);
    x->head_method = sl__proxy_ieq(h->method, "head");
    x->idempotent = is_idempotent(h->method);
    /* an upgrade the route does not list (h2c, always) goes upstream as a
     * plain request: Upgrade and Connection are hop-by-hop, dropped */
    x->upgrade = (h->flags & SL__PH_UPGRADE) && (h->flags & SL__PH_CONN_UPGRADE) && h->minor == 1 &&
                 sl__proxy_upgrade_allowed(h->upgrade, x->route->upgrades, x->route->n_upgrades);
    if (h->flags & SL__PH_CHUNKED) {
        x->req_framing = SL__PF_CHUNKED;
        sl__proxy_chunk_init(&x->req_chunk);
    } else if (h->flags & SL__PH_CL) {
        x->req_framing = SL__PF_LENGTH;
        x->req_left = h->content_length;
    } else {
        x->req_framing = SL__PF_NONE;
        x->req_left = 0;
    }
    x->req_done = x->req_framing != SL__PF_CHUNKED && x->req_left == 0;
    x->expect_100 = (h->flags & SL__PH_EXPECT_100) && h->minor == 1 && !x->req_done;
    f.framing = x->req_framing;
    f.length = x->req_left;
    f.upgrade = x->upgrade;
    f.host = x->route->up.servers[0].name;
    sl__proxy_req_head(&x->head, h, &f);
}

/* A parsed head (x->h, slices into the input): route it and start the
 * exchange. -1 when the connection must close now. */
static int begin(struct sl__proxy_x *x)
{
    const struct sl__proxy_head *h = &x->h;
    struct sl__proxy_local *local = NULL;
    int ri;

    reset(x);
    account(x, h);
    enter(x, SL__PX_ROUTED);
    sl__conn_set_busy(x->c, true);
    sl__proxy_active_add(x->pw, x);
    x->client_ms = now_ms(x);
    ri = sl__proxy_route_match(x->pw->cfg, h);
    if (ri < 0) {
        x->keep_alive =
            h->minor == 1 ? !(h->flags & SL__PH_CONN_CLOSE) : !!(h->flags & SL__PH_CONN_KEEP);
        x->req_done = !(h->flags & (SL__PH_CHUNKED | SL__PH_CL)) || h->content_length == 0;
        answer(x, 404, "no route for this request");
        return 0;
    }
    x->route_i = (unsigned)ri;
    x->route = &x->pw->cfg->routes[ri];
    frame(x, h);
    if (x->route->max_body_bytes > 0 && x->req_framing == SL__PF_LENGTH &&
        x->req_left > x->route->max_body_bytes) {
        answer(x, 413, "request body larger than this route's max_body_bytes");
        return 0;
    }
    switch (sl__proxy_gate(x, &local)) {
    case SL__PROXY_FORWARD:
        forward(x);
        break;
    case SL__PROXY_HOLD:
        enter(x, SL__PX_HELD);
        sl__proxy_active_remove(x->pw, x); /* the gate bounds its own hold */
        break;
    case SL__PROXY_ANSWERED:
        answer_local(x, local);
        break;
    }
    return 0;
}

/* ------------------------------------------------------------ client input */

static ssize_t refuse(struct sl__proxy_x *x, const struct sl__proxy_err *e)
{
    x->pw->scratch.len = 0;
    sl__proxy_local_head(&x->pw->scratch, e->status, true, e->why);
    sl__conn_write(x->c, x->pw->scratch.p, x->pw->scratch.len);
    sl__dbg("proxy.refused", "proxy: refused a request (%d %s); closing", e->status, e->why);
    enter(x, SL__PX_DONE);
    return -1;
}

static size_t head_limit(const struct sl__conn *c)
{
    return c->ls->max_frame_bytes > 1 ? c->ls->max_frame_bytes - 1 : 1;
}

static ssize_t take_head(struct sl__proxy_x *x, const char *b, size_t n)
{
    struct sl__proxy_err e;
    ssize_t used = sl__proxy_parse_request(b, n, head_limit(x->c), &x->h, &e);

    if (used == -2)
        return 0;
    if (used < 0)
        return refuse(x, &e);
    begin(x);
    return used;
}

/* A broken body: answered while no response has started, else cut. */
static ssize_t bad_body(struct sl__proxy_x *x, int status, const char *why)
{
    x->close_after = true;
    answer(x, status, why);
    return -1;
}

static void chunk_line(struct sl__proxy_up *up, size_t len)
{
    char line[24];
    int n = snprintf(line, sizeof(line), "%zx\r\n", len);
    sl__proxy_up_queue(up, line, (size_t)n);
}

static ssize_t take_chunked(struct sl__proxy_x *x, const char *b, size_t n)
{
    size_t used = 0, max = x->route->max_body_bytes;
    const char *d;
    size_t dl;

    while (used < n && !sl__proxy_chunk_done(&x->req_chunk) &&
           sl__proxy_up_pending(x->up) < SL__PROXY_HIGH) {
        ssize_t k = sl__proxy_chunk_step(&x->req_chunk, b + used, n - used, &d, &dl);
        if (k < 0)
            return bad_body(x, 400, "malformed chunked body");
        if (dl > 0) {
            if (max > 0 && x->acc.bytes_in + dl > max)
                return bad_body(x, 413, "request body larger than this route's max_body_bytes");
            chunk_line(x->up, dl);
            sl__proxy_up_queue(x->up, d, dl);
            sl__proxy_up_queue(x->up, "\r\n", 2);
            x->acc.bytes_in += dl;
        }
        used += (size_t)k;
    }
    if (sl__proxy_chunk_done(&x->req_chunk)) {
        sl__proxy_up_queue(x->up, "0\r\n\r\n", 5);
        x->req_done = true;
    }
    return (ssize_t)used;
}

static ssize_t take_body(struct sl__proxy_x *x, const char *b, size_t n)
{
    ssize_t used;

    if (x->up == NULL || x->phase == SL__PX_HELD || sl__proxy_up_pending(x->up) >= SL__PROXY_HIGH) {
        x->client_held = true;
        sl__conn_hold(x->c);
        return 0;
    }
    if (x->req_framing == SL__PF_CHUNKED) {
        used = take_chunked(x, b, n);
        if (used < 0)
            return -1;
    } else {
        used = (ssize_t)(n < x->req_left ? n : x->req_left);
        sl__proxy_up_queue(x->up, b, (size_t)used);
        x->req_left -= (uint64_t)used;
        x->acc.bytes_in += (uint64_t)used;
        x->req_done = x->req_left == 0;
    }
    x->client_ms = now_ms(x);
    sl__proxy_up_flush(x->up);
    if (!x->req_done && x->up != NULL && sl__proxy_up_pending(x->up) >= SL__PROXY_HIGH) {
        x->client_held = true;
        sl__conn_hold(x->c);
    }
    return used;
}

static ssize_t take_tunnel(struct sl__proxy_x *x, const char *b, size_t n)
{
    if (x->up == NULL || sl__proxy_up_pending(x->up) >= SL__PROXY_HIGH) {
        x->client_held = true;
        sl__conn_hold(x->c);
        return 0;
    }
    sl__proxy_up_queue(x->up, b, n);
    sl__proxy_up_flush(x->up);
    x->client_ms = now_ms(x);
    return (ssize_t)n;
}

/* What the input is for now: 0 when it must wait. */
static ssize_t step(struct sl__proxy_x *x, const char *b, size_t n)
{
    switch (x->phase) {
    case SL__PX_IDLE:
        return take_head(x, b, n);
    case SL__PX_TUNNEL:
        return take_tunnel(x, b, n);
    case SL__PX_DONE:
        return 0;
    default:
        if (!x->req_done)
            return take_body(x, b, n);
        x->client_held = true; /* a pipelined request waits for this exchange */
        sl__conn_hold(x->c);
        return 0;
    }
}

static ssize_t on_read(struct sl__conn *c, const char *buf, size_t len)
{
    struct sl__proxy_x *x = c->proto_state;
    size_t off = 0;

    while (off < len && !x->close_now) {
        ssize_t n = step(x, buf + off, len - off);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        off += (size_t)n;
    }
    if (x->close_now) {
        x->close_now = false;
        return -1;
    }
    return (ssize_t)off;
}

/* ------------------------------------------------------------ timeouts */

static void tick_forward(struct sl__proxy_x *x, int64_t now)
{
    const struct sl__proxy_route *r = x->route;
    size_t pending = x->up ? sl__proxy_up_pending(x->up) : 0;
    int64_t client_timeout = x->c->w->srv->cfg.read_timeout_ms;

    if (!x->req_done && pending == 0 && !x->client_held) {
        if (client_timeout > 0 && now - x->client_ms >= client_timeout)
            answer(x, 408, "request body not received in time");
    } else if (x->up_paused) {
        if (now - x->client_ms >= r->send_timeout_ms)
            abort_x(x, "the client does not read the response");
    } else if (pending > 0) {
        if (now - x->up_io_ms >= r->send_timeout_ms) {
            sl__proxy_peer_failed(x->pw, x->peer);
            answer(x, 504, "upstream does not read the request");
        }
    } else if (now - x->up_io_ms >= r->read_timeout_ms) {
        sl__proxy_peer_failed(x->pw, x->peer);
        answer(x, 504, "upstream timed out");
    }
}

/* The worker's tick (pw->ev->tick): act on the exchange's timeouts. */
static void on_tick(struct sl__proxy_x *x, int64_t now)
{
    const struct sl__proxy_route *r = x->route;

    if (r == NULL)
        return;
    if ((x->phase == SL__PX_CONNECTING || x->phase == SL__PX_FORWARD) && x->req_done &&
        !x->resp_started && sl__proxy_client_left(x)) {
        /* as nginx without proxy_ignore_client_abort: a client that closed
         * while waiting for the response is gone (its lease is freed) */
        client_gone(x);
        return;
    }
    switch (x->phase) {
    case SL__PX_CONNECTING:
        if (now - x->phase_ms >= r->connect_timeout_ms) {
            sl__dbg("proxy.connect_timeout", "proxy: connect to %s timed out", x->acc.upstream);
            retry(x, true, true);
        }
        break;
    case SL__PX_FORWARD:
        tick_forward(x, now);
        break;
    case SL__PX_TUNNEL:
        if (now - (x->up_io_ms > x->client_ms ? x->up_io_ms : x->client_ms) >= r->read_timeout_ms)
            abort_x(x, "tunnel idle");
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ the connection */

static void on_sent(struct sl__conn *c)
{
    struct sl__proxy_x *x = c->proto_state;

    x->client_ms = now_ms(x);
    if (x->up_paused && x->up != NULL) {
        x->up_paused = false;
        sl__proxy_up_read(x->up, true);
        respond(x);
    }
}

static void peer_address(struct sl__conn *c, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);

    snprintf(out, cap, "-");
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET)
        uv_ip4_name((struct sockaddr_in *)&ss, out, cap);
    else if (ss.ss_family == AF_INET6)
        uv_ip6_name((struct sockaddr_in6 *)&ss, out, cap);
}

/* What the helpers report, and who handles it: the exchange's events
 * here, the worker's in proxy_pool.c. */
static const struct sl__proxy_events events = {
    .up_connected = on_up_connected,
    .up_data = on_up_data,
    .up_eof = on_up_eof,
    .up_drained = on_up_drained,
    .idle_heard = on_idle_heard,
    .up_closed = sl__proxy_worker_up_gone,
    .tick = on_tick,
    .verdict = on_verdict,
    .store_answered = sl__proxy_worker_maybe_free,
};

static int on_open(struct sl__conn *c)
{
    struct sl__proxy_x *x = sl__xzalloc(sizeof(*x));

    x->c = c;
    x->pw = sl__proxy_worker_get(c->tcp.loop, c->w->id, &c->w->srv->cfg, &events);
    x->pw->metrics = c->w->srv->metrics; /* for what its upstream connections count */
    x->pw->n_xs++;
    x->pw->log_wanted = c->w->srv->cfg.log_access != SL__ACCESS_OFF;
    peer_address(c, x->acc.client, sizeof(x->acc.client));
    c->proto_state = x;
    return 0;
}

static void on_close(struct sl__conn *c)
{
    struct sl__proxy_x *x = c->proto_state;
    struct sl__proxy_worker *pw = x->pw;

    if (x->phase != SL__PX_IDLE && x->phase != SL__PX_DONE) {
        /* the client went away mid-exchange */
        if (x->up != NULL) {
            sl__proxy_up_close(x->up);
            x->up = NULL;
        }
        if (c->w->srv->cfg.log_access != SL__ACCESS_OFF)
            sl__proxy_log(x, c->w->srv->cfg.log_access);
        sl__proxy_gate_done(x);
    }
    sl__proxy_active_remove(pw, x);
    sl__buf_free(&x->head);
    free(x);
    c->proto_state = NULL;
    sl__proxy_worker_x_gone(pw);
}

/* ------------------------------------------------------------ sniffing */

/* A request line: a token, a space, and "HTTP/1.0" or "HTTP/1.1" at the
 * end of the first line, or a '/' after the space (in 64 bytes without a
 * line end too): a request of another HTTP version or of none (HTTP/0.9's
 * "GET /") is the proxy's to refuse with a 400, as docs/proxy.md says,
 * not a connection closed unanswered. Garbage is left to other protocols
 * (or closed); so is HTTP/2's preface ("PRI * HTTP/2.0"), gRPC's. */
static int sniff(const char *buf, size_t len)
{
    const char *nl = memchr(buf, '\n', len);
    size_t i = 0, line;

    while (i < len && i < 32 && buf[i] >= 'A' && buf[i] <= 'Z')
        i++;
    if (i < len && (i == 0 || buf[i] != ' '))
        return 0;
    if (nl == NULL) {
        if (len < 64)
            return -2;
        return buf[i + 1] == '/' ? 1 : 0;
    }
    line = (size_t)(nl - buf);
    if (line > 0 && buf[line - 1] == '\r')
        line--;
    return buf[i + 1] == '/' || (line >= 10 && memcmp(buf + line - 8, "HTTP/1.", 7) == 0) ? 1 : 0;
}

const struct sl__proto sl__proto_proxy = {
    .name = "proxy",
    .opt_in = true,
    .alpn = "http/1.1",
    .sniff = sniff,
    .on_open = on_open,
    .on_read = on_read,
    .on_close = on_close,
    .on_sent = on_sent,
    .worker_stop = sl__proxy_worker_stop,
    .render_metrics = sl__proxy_adaptive_metrics,
    .render_stats = sl__proxy_adaptive_stats,
};
