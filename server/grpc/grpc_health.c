/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_health.c - grpc.health.v1.Health/Check for the whole server ("")
 * and for envoy.service.ratelimit.v3.RateLimitService: SERVING exactly
 * when GET /readyz answers 200 (sl__worker_unready(), the same test),
 * NOT_SERVING otherwise; any other service is NOT_FOUND, as the health
 * checking protocol says. Watch is not served (grpc.c answers it
 * UNIMPLEMENTED).
 */
#include <string.h>

#include "conn.h"
#include "grpc.h"
#include "grpc_codec.h"
#include "worker.h"

static const char rls_service[] = "envoy.service.ratelimit.v3.RateLimitService";

void sl__grpc_health_check(struct sl__grpc_op *op, const struct sl__h2_call *call)
{
    char service[sizeof(rls_service) + 1];
    uint8_t out[16];
    size_t len;

    if (sl__grpc_health_decode(call->msg, call->len, service, sizeof(service)) != SL_OK) {
        sl__grpc_fail(op, SL__GRPC_INTERNAL, "message: not a valid HealthCheckRequest");
        return;
    }
    if (service[0] != '\0' && strcmp(service, rls_service) != 0) {
        sl__grpc_fail(op, SL__GRPC_NOT_FOUND, "unknown service");
        return;
    }
    len = sl__grpc_health_encode(
        sl__worker_unready(op->g->c->w, NULL) == NULL ? SL__GRPC_SERVING : SL__GRPC_NOT_SERVING,
        out, sizeof(out));
    sl__grpc_answer(op, out, len);
}
