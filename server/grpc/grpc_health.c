/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_health.c - grpc.health.v1.Health for the whole server ("") and for
 * each service sluiced serves (grpc.c's table): SERVING exactly when GET
 * /readyz answers 200 (sl__worker_unready(), the same test) and the server
 * is not stopping, NOT_SERVING otherwise.
 *
 * Check answers once; a service sluiced does not serve is NOT_FOUND, as
 * the health checking protocol says. Watch answers at once and again
 * whenever the status changes, looking every SL__GRPC_TICK_MS; a service
 * it does not know is SERVICE_UNKNOWN (the protocol keeps such a watch
 * open). When the server stops, a watch is told NOT_SERVING, then ends
 * UNAVAILABLE, so a load balancer moves away before the connection goes.
 */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "grpc.h"
#include "grpc_codec.h"
#include "worker-t.h"
#include "worker.h"

/* Whether sluiced serves `service` ("" the server as a whole). */
static bool known(const char *service)
{
    char name[sizeof(((struct sl__grpc_watch *)0)->service)];

    if (service[0] == '\0')
        return true;
    for (size_t i = 0; sl__grpc_service(i, name, sizeof(name)) > 0; i++)
        if (strcmp(name, service) == 0)
            return true;
    return false;
}

static enum sl__grpc_serving status_of(struct sl__grpc_op *op, const char *service)
{
    struct sl__worker *w = op->g->c->w;

    if (!known(service))
        return SL__GRPC_SERVICE_UNKNOWN;
    return !w->stopping && sl__worker_unready(w, NULL) == NULL ? SL__GRPC_SERVING
                                                               : SL__GRPC_NOT_SERVING;
}

void sl__grpc_health_check(struct sl__grpc_op *op, const struct sl__h2_call *call)
{
    char service[sizeof(((struct sl__grpc_watch *)0)->service) + 1];
    enum sl__grpc_serving st;
    uint8_t out[16];

    if (sl__grpc_health_decode(call->msg, call->len, service, sizeof(service)) != SL_OK) {
        sl__grpc_fail(op, SL__GRPC_INTERNAL, "message: not a valid HealthCheckRequest");
        return;
    }
    if ((st = status_of(op, service)) == SL__GRPC_SERVICE_UNKNOWN) {
        sl__grpc_fail(op, SL__GRPC_NOT_FOUND, "unknown service");
        return;
    }
    sl__grpc_answer(op, out, sl__grpc_health_encode(st, out, sizeof(out)));
}

/* ------------------------------------------------------------ Watch */

/* Send `st` if it is news. */
static void tell(struct sl__grpc_op *op, enum sl__grpc_serving st)
{
    struct sl__grpc_watch *wa = &op->u.watch;
    uint8_t out[16];

    if (wa->sent == (int)st)
        return;
    if (!sl__grpc_send(op, out, sl__grpc_health_encode(st, out, sizeof(out)))) {
        sl__grpc_fail(op, SL__GRPC_RESOURCE_EXHAUSTED, "the client reads no health updates");
        return;
    }
    wa->sent = (int)st;
}

static void watch_message(struct sl__grpc_op *op, const uint8_t *msg, size_t len)
{
    struct sl__grpc_watch *wa = &op->u.watch;
    char service[sizeof(wa->service) + 1];

    if (msg == NULL) { /* the client is done sending: the watch goes on */
        if (!wa->asked)
            sl__grpc_fail(op, SL__GRPC_INTERNAL, "no request message");
        return;
    }
    if (wa->asked) {
        sl__grpc_fail(op, SL__GRPC_INTERNAL, "more than one request message in a Watch");
        return;
    }
    if (sl__grpc_health_decode(msg, len, service, sizeof(service)) != SL_OK) {
        sl__grpc_fail(op, SL__GRPC_INTERNAL, "message: not a valid HealthCheckRequest");
        return;
    }
    if (strlen(service) >= sizeof(wa->service)) {
        sl__grpc_fail(op, SL__GRPC_INVALID_ARGUMENT, "service name too long");
        return;
    }
    memcpy(wa->service, service, strlen(service) + 1);
    wa->asked = true;
    wa->sent = -1;
    sl__grpc_tick(op, true);
    tell(op, status_of(op, wa->service));
}

static void watch_tick(struct sl__grpc_op *op)
{
    tell(op, status_of(op, op->u.watch.service));
}

static void watch_drain(struct sl__grpc_op *op)
{
    if (op->u.watch.asked && op->u.watch.sent != SL__GRPC_SERVICE_UNKNOWN)
        tell(op, SL__GRPC_NOT_SERVING);
    if (op->st != NULL) /* (tell ends it when the client reads nothing) */
        sl__grpc_fail(op, SL__GRPC_UNAVAILABLE, "the server is stopping");
}

const struct sl__grpc_streamer sl__grpc_health_watch = {watch_message, watch_tick, watch_drain,
                                                        NULL};
