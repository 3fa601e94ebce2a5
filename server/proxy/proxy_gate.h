/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_gate.h - where limiting enters the proxy's traffic path
 * (internal): a request's descriptors (its route's rate limit actions)
 * are decided on the one decision path, and the request is forwarded,
 * denied (429), held for its delay (shaping) or, with a remote store,
 * held until the store answers; a concurrency lease taken on admission
 * is given back when the exchange ends. A route's adaptive concurrency
 * limit admits or sheds the request right before it is forwarded.
 *
 * sl__proxy_gate() is called once per request, after its head is parsed
 * and its route chosen, before anything is sent upstream and before any
 * body byte is read. During the call the parsed head is x->h (its slices
 * valid for the call only), the route x->route, the client's address
 * x->acc.client. It returns:
 *   SL__PROXY_FORWARD   forward the request now;
 *   SL__PROXY_ANSWERED  answer it with *answer (the gate's, valid until
 *                       its next call): nothing goes upstream;
 *   SL__PROXY_HOLD      the gate keeps it (a shaping delay, a remote
 *                       store's answer): the client's input is held, no
 *                       timeout of the exchange runs, and the gate later
 *                       reports its verdict through pw->ev->verdict
 *                       exactly once, unless sl__proxy_gate_done() came
 *                       first (the client left).
 * The gate acts on no exchange itself: what it decides, the state machine
 * (proxy.c) carries out.
 *
 * sl__proxy_gate_done() is called exactly once for every request the gate
 * saw, when its exchange ends however it ends (response fully handed to
 * the client connection, a local answer, the client or the upstream gone):
 * where a concurrency lease is released. x->acc.status is the status sent
 * (0 if none). x->gate is the gate's own pointer for the request.
 *
 * Threads: the worker's loop thread, like everything in the room.
 */
#ifndef SL_PROXY_GATE_H
#define SL_PROXY_GATE_H

#include "proxy-t.h"

/* (enum sl__proxy_verdict is in proxy-t.h, for the events) */
enum sl__proxy_verdict sl__proxy_gate(struct sl__proxy_x *x, struct sl__proxy_local **answer);
void sl__proxy_gate_done(struct sl__proxy_x *x);

/*
 * sl__proxy_gate_admit() is called once per request the gate let through,
 * right before it is forwarded (after its rate limits and any shaping
 * delay): the route's adaptive concurrency limit (proxy_adaptive.h), by
 * the class sl__proxy_gate() read from the head. true: forward it (a slot
 * is held until sl__proxy_gate_done()); false: answer it with *answer (the
 * gate's, valid until its next call), counted as shed. The upstream's
 * latency is measured from sl__proxy_gate_sent() (the request head handed
 * to a ready upstream connection, each try) to sl__proxy_gate_head() (the
 * final response head parsed, with its status).
 */
bool sl__proxy_gate_admit(struct sl__proxy_x *x, struct sl__proxy_local **answer);
void sl__proxy_gate_sent(struct sl__proxy_x *x);
void sl__proxy_gate_head(struct sl__proxy_x *x, int status);

/* The gate's part of a worker's proxy state (pw->gate): made with it;
 * `busy` while a store call (a decision, a release) is unanswered, when
 * the state may not be freed; its timer closed with `cb` (counted in
 * pw->closing), then freed. */
void sl__proxy_gate_worker_init(struct sl__proxy_worker *pw);
bool sl__proxy_gate_worker_busy(const struct sl__proxy_worker *pw);
void sl__proxy_gate_worker_close(struct sl__proxy_worker *pw, uv_close_cb cb);
void sl__proxy_gate_worker_free(struct sl__proxy_worker *pw);

#endif /* SL_PROXY_GATE_H */
