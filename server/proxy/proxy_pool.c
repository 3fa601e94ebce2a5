/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_pool.c - the proxy's state on one worker: every route's servers as
 * this worker sees them (round robin, passive health as nginx's max_fails
 * and fail_timeout), their idle keep-alive connections, the exchanges in
 * flight, and one timer (the tick) that applies the exchanges' timeouts
 * and closes upstream connections idle past proxy.keepalive_timeout (and
 * ticks the adaptive concurrency controllers, proxy_adaptive.h).
 *
 * The state is made on the worker's first proxied request and kept in a
 * thread-local pointer (a worker is a thread); the room's worker_stop
 * closes the idle connections, and the state is freed once the last
 * upstream connection has closed. Health is per worker, like nginx's
 * without a shared zone. It does not speak HTTP, and acts on no exchange:
 * the tick reports to the state machine (pw->ev->tick, proxy-t.h), which
 * applies the timeouts.
 */
#include <stdlib.h>

#include "config.h"
#include "conn.h"
#include "proxy.h"
#include "proxy_adaptive.h"
#include "proxy_gate.h"
#include "proxy_int.h"
#include "worker-t.h"
#include "xalloc.h"

#define TICK_MS 100

static _Thread_local struct sl__proxy_worker *tls_pw;

static void on_tick(uv_timer_t *t);

struct sl__proxy_worker *sl__proxy_worker_get(uv_loop_t *loop, unsigned wid,
                                              const struct sl__config *cfg,
                                              const struct sl__proxy_events *ev)
{
    struct sl__proxy_worker *pw = tls_pw;
    size_t n = 0;

    if (pw != NULL)
        return pw;
    pw = sl__xzalloc(sizeof(*pw));
    pw->loop = loop;
    pw->wid = wid;
    pw->ev = ev;
    pw->cfg = sl__config_room(cfg, &sl__proxy_config_section);
    pw->peer_base = sl__xzalloc((pw->cfg->n_routes + 1) * sizeof(*pw->peer_base));
    pw->rr = sl__xzalloc((pw->cfg->n_routes + 1) * sizeof(*pw->rr));
    for (size_t r = 0; r < pw->cfg->n_routes; r++) {
        pw->peer_base[r] = n;
        n += pw->cfg->routes[r].up.n_servers;
    }
    pw->peers = sl__xzalloc((n + 1) * sizeof(*pw->peers));
    for (size_t r = 0; r < pw->cfg->n_routes; r++)
        for (unsigned s = 0; s < pw->cfg->routes[r].up.n_servers; s++) {
            pw->peers[pw->peer_base[r] + s].srv = &pw->cfg->routes[r].up.servers[s];
            pw->peers[pw->peer_base[r] + s].up = &pw->cfg->routes[r].up;
        }
    uv_timer_init(loop, &pw->tick);
    pw->tick.data = pw;
    uv_timer_start(&pw->tick, on_tick, TICK_MS, TICK_MS);
    uv_unref((uv_handle_t *)&pw->tick); /* the tick alone does not keep a worker running */
    sl__proxy_gate_worker_init(pw);
    tls_pw = pw;
    return pw;
}

/* ------------------------------------------------------------ health */

static bool is_down(const struct sl__proxy_peer *p, int64_t now)
{
    return p->down_until_ms > now;
}

struct sl__proxy_peer *sl__proxy_pick(struct sl__proxy_worker *pw, unsigned ri, uint32_t *tried)
{
    const struct sl__proxy_upstream *up = &pw->cfg->routes[ri].up;
    struct sl__proxy_peer *peers = &pw->peers[pw->peer_base[ri]];
    int64_t now = (int64_t)uv_now(pw->loop);
    unsigned n = up->n_servers;

    if (n == 1) { /* one server: nothing else to try, so never taken out (as nginx) */
        if (*tried & 1u)
            return NULL;
        *tried |= 1u;
        return &peers[0];
    }
    for (unsigned k = 0; k < n; k++) {
        unsigned s = (pw->rr[ri] + k) % n;
        if ((*tried & (1u << s)) || is_down(&peers[s], now))
            continue;
        pw->rr[ri] = (s + 1) % n;
        *tried |= 1u << s;
        return &peers[s];
    }
    return NULL;
}

void sl__proxy_peer_failed(struct sl__proxy_worker *pw, struct sl__proxy_peer *p)
{
    int64_t now = (int64_t)uv_now(pw->loop);

    if (p->up->max_fails == 0)
        return; /* max_fails 0: never taken out */
    if (now - p->window_ms > p->up->fail_timeout_ms) {
        p->window_ms = now;
        p->fails = 0;
    }
    if (++p->fails >= p->up->max_fails) {
        p->down_until_ms = now + p->up->fail_timeout_ms;
        p->fails = 0;
        p->window_ms = now;
    }
}

void sl__proxy_peer_ok(struct sl__proxy_peer *p)
{
    p->fails = 0;
}

/* ------------------------------------------------------------ idle pool */

struct sl__proxy_up *sl__proxy_pool_take(struct sl__proxy_peer *p)
{
    struct sl__proxy_up *up = p->idle;

    if (up == NULL)
        return NULL;
    p->idle = up->next;
    p->n_idle--;
    up->next = NULL;
    return up;
}

void sl__proxy_pool_put(struct sl__proxy_up *up)
{
    struct sl__proxy_peer *p = up->peer;
    struct sl__proxy_worker *pw = up->pw;

    up->x = NULL;
    if (pw->stopping || p->n_idle >= p->up->keepalive || up->in.len > 0) {
        sl__proxy_up_close(up);
        return;
    }
    up->idle_since_ms = (int64_t)uv_now(pw->loop);
    up->next = p->idle;
    p->idle = up;
    p->n_idle++;
    sl__proxy_up_read(up, true); /* to see the server close it */
}

void sl__proxy_pool_drop(struct sl__proxy_peer *p)
{
    struct sl__proxy_up *up;

    while ((up = sl__proxy_pool_take(p)) != NULL)
        sl__proxy_up_close(up);
}

void sl__proxy_untry(struct sl__proxy_worker *pw, unsigned ri, const struct sl__proxy_peer *p,
                     uint32_t *tried)
{
    *tried &= ~(1u << (unsigned)(p - &pw->peers[pw->peer_base[ri]]));
}

void sl__proxy_pool_forget(struct sl__proxy_up *up)
{
    struct sl__proxy_peer *p = up->peer;

    for (struct sl__proxy_up **u = &p->idle; *u != NULL; u = &(*u)->next) {
        if (*u == up) {
            *u = up->next;
            up->next = NULL;
            p->n_idle--;
            return;
        }
    }
}

static size_t n_peers(const struct sl__proxy_worker *pw)
{
    return pw->cfg->n_routes ? pw->peer_base[pw->cfg->n_routes - 1] +
                                   pw->cfg->routes[pw->cfg->n_routes - 1].up.n_servers
                             : 0;
}

/* Close every idle connection (all of them, or those idle since before
 * `older_than`). */
static void close_idle(struct sl__proxy_worker *pw, int64_t older_than)
{
    size_t n = n_peers(pw);

    for (size_t i = 0; i < n; i++) {
        struct sl__proxy_peer *p = &pw->peers[i];
        for (struct sl__proxy_up **u = &p->idle; *u != NULL;) {
            struct sl__proxy_up *up = *u;
            if (up->idle_since_ms >= older_than) {
                u = &up->next;
                continue;
            }
            *u = up->next;
            p->n_idle--;
            sl__proxy_up_close(up);
        }
    }
}

/* ------------------------------------------------------------ exchanges, tick */

void sl__proxy_active_add(struct sl__proxy_worker *pw, struct sl__proxy_x *x)
{
    if (x->in_active)
        return;
    x->prev = NULL;
    x->next = pw->active;
    if (pw->active)
        pw->active->prev = x;
    pw->active = x;
    x->in_active = true;
}

void sl__proxy_active_remove(struct sl__proxy_worker *pw, struct sl__proxy_x *x)
{
    if (!x->in_active)
        return;
    if (x->prev)
        x->prev->next = x->next;
    else
        pw->active = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
    x->in_active = false;
}

static void on_tick(uv_timer_t *t)
{
    struct sl__proxy_worker *pw = t->data;
    int64_t now = (int64_t)uv_now(pw->loop);
    struct sl__proxy_x *x, *next;

    for (x = pw->active; x != NULL; x = next) {
        next = x->next; /* the tick may end the exchange */
        pw->ev->tick(x, now);
    }
    close_idle(pw, now - pw->cfg->keepalive_timeout_ms);
    sl__proxy_adaptive_tick(pw);
}

/* ------------------------------------------------------------ stopping */

static void on_closed(uv_handle_t *h)
{
    struct sl__proxy_worker *pw = h->data;

    if (--pw->closing > 0)
        return;
    sl__proxy_gate_worker_free(pw);
    sl__buf_free(&pw->scratch);
    for (size_t i = 0, n = n_peers(pw); i < n; i++)
        sl__tlsc_slot_clear(&pw->peers[i].tls_session);
    free(pw->peers);
    free(pw->peer_base);
    free(pw->rr);
    free(pw);
}

/* Free the state once stopping and no upstream connection, exchange or
 * store call is left. */
void sl__proxy_worker_maybe_free(struct sl__proxy_worker *pw)
{
    if (!pw->stopping || pw->n_ups > 0 || pw->n_xs > 0 || pw->tick_closed ||
        sl__proxy_gate_worker_busy(pw))
        return;
    pw->tick_closed = true;
    if (tls_pw == pw)
        tls_pw = NULL;
    pw->closing++;
    uv_close((uv_handle_t *)&pw->tick, on_closed);
    sl__proxy_gate_worker_close(pw, on_closed);
}

void sl__proxy_worker_up_gone(struct sl__proxy_worker *pw)
{
    pw->n_ups--;
    sl__proxy_worker_maybe_free(pw);
}

void sl__proxy_worker_x_gone(struct sl__proxy_worker *pw)
{
    pw->n_xs--;
    sl__proxy_worker_maybe_free(pw);
}

void sl__proxy_worker_stop(struct sl__worker *w)
{
    struct sl__proxy_worker *pw = tls_pw;

    if (pw == NULL || pw->loop != &w->loop)
        return;
    pw->stopping = true;
    close_idle(pw, INT64_MAX);
    sl__proxy_worker_maybe_free(pw);
}
