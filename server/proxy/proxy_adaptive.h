/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_adaptive.h - adaptive concurrency in the proxy's traffic path
 * (internal): per worker, one libsluice controller (sl_adaptive) and one
 * partition of its limit among the route's classes (sl_partition) for
 * each route with `adaptive_concurrency:`; a request is admitted to its
 * class once, right before it is forwarded, and its slot is given back
 * with its outcome and upstream latency when its exchange ends.
 *
 * The calls, in the order an exchange makes them (all on the worker's
 * loop thread, none allocating):
 *   sl__proxy_adaptive_classify  the gate, while the request head is at hand
 *   sl__proxy_adaptive_admit     the gate's admission, right before forwarding
 *   sl__proxy_adaptive_sent      the request head handed to a ready upstream
 *   sl__proxy_adaptive_head      the final response head parsed
 *   sl__proxy_adaptive_done      the exchange ended, however (the gate's done)
 * Each is a no-op for a route without adaptive_concurrency (and _sent,
 * _head and _done for a request holding no slot).
 *
 * The per-worker state is made with the worker's proxy state and ticked
 * from its tick; what each worker's controllers show is published for
 * /metrics and GET /v1/stats (any thread).
 */
#ifndef SL_PROXY_ADAPTIVE_H
#define SL_PROXY_ADAPTIVE_H

#include <stdbool.h>

#include "conn-t.h"
#include "proxy-t.h"

struct sl__server;
struct sl__proxy_local;

/* Worker `pw` (pw->wid set): its controllers, seeded by worker and route,
 * and its blocks published on the routes' boards. */
void sl__proxy_adaptive_worker_init(struct sl__proxy_worker *pw);
void sl__proxy_adaptive_worker_free(struct sl__proxy_worker *pw);
/* The worker's tick: the gradient controllers' windows closed when no
 * request comes, and every route's state published. */
void sl__proxy_adaptive_tick(struct sl__proxy_worker *pw);

/* The class of x's request from its head (x->h) and its peer. */
void sl__proxy_adaptive_classify(struct sl__proxy_x *x);
/* true: admitted (a slot held until _done) or not limited; false: shed,
 * answered with *answer (the worker's, valid until its next shed). */
bool sl__proxy_adaptive_admit(struct sl__proxy_x *x, struct sl__proxy_local **answer);
void sl__proxy_adaptive_sent(struct sl__proxy_x *x);
void sl__proxy_adaptive_head(struct sl__proxy_x *x, int status);
void sl__proxy_adaptive_done(struct sl__proxy_x *x);

/* /metrics lines (Prometheus text), and the `"adaptive":[...]` member of
 * GET /v1/stats, appended to out. Any thread. */
void sl__proxy_adaptive_metrics(const struct sl__server *srv, struct sl__buf *out);
void sl__proxy_adaptive_stats(const struct sl__server *srv, struct sl__buf *out);

#endif /* SL_PROXY_ADAPTIVE_H */
