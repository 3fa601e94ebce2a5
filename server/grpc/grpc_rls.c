/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_rls.c - envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit:
 * decode the RateLimitRequest (grpc_codec.c), decide it on the one
 * decision path as a check, as POST /json does, and answer Envoy's
 * RateLimitResponse built from the same sl__envoy_answer() /json uses.
 *
 * Refusals say what /json's 400 would say: a request Envoy's rules refuse
 * is INVALID_ARGUMENT, bytes that are no RateLimitRequest INTERNAL (as
 * gRPC servers answer a message they cannot unmarshal); a store error is
 * what /json's status maps to (503: UNAVAILABLE, 400: INVALID_ARGUMENT,
 * 500: INTERNAL) with the decision path's words. Kill switches, shadow
 * mode, the store's failure policy and the metrics are the decision
 * path's. Nothing is allocated per call: the request and the answer live
 * in per-thread buffers, the operation in its stream.
 */
#include <string.h>

#include "cert_entry.h"
#include "conn.h"
#include "decide.h"
#include "grpc.h"
#include "grpc_codec.h"
#include "server-t.h"
#include "worker-t.h"

#define ANSWER_MAX (16u << 10)

static _Thread_local struct sl__grpc_rls_req rreq;
static _Thread_local uint8_t answer[ANSWER_MAX];

/* The gRPC code for a store error, as /json's HTTP status for it. */
static enum sl__grpc_status store_error_code(int err)
{
    if (err == SL_EFULL)
        return SL__GRPC_UNAVAILABLE;
    if (err == SL_ETOOBIG || err == SL_EINVAL)
        return SL__GRPC_INVALID_ARGUMENT;
    return SL__GRPC_INTERNAL;
}

/* Answer the call with its decision. */
static void answer_with(struct sl__grpc_op *op, int err, const struct sl_result *res)
{
    static _Thread_local struct sl__envoy_answer a;
    size_t len = 0;

    if (err != SL_OK) {
        sl__grpc_fail(op, store_error_code(err), sl__decide_strerror(err));
        return;
    }
    sl__envoy_answer(&op->g->c->w->srv->cfg, res, op->d.shadow, op->d.now_ns, &a);
    if (sl__grpc_rls_encode(&a, answer, sizeof(answer), &len) != SL_OK)
        sl__grpc_fail(op, SL__GRPC_INTERNAL, "answer too large");
    else
        sl__grpc_answer(op, answer, len);
}

/* A decision answered after sl__decide returned (a remote store, a batch). */
static void on_done(struct sl__decide_op *d, int err, const struct sl_result *res)
{
    struct sl__grpc_op *op = (struct sl__grpc_op *)(void *)d;

    if (sl__grpc_decided(op)) /* false: answered DEADLINE_EXCEEDED already */
        answer_with(op, err, res);
}

void sl__grpc_rls(struct sl__grpc_op *op, const struct sl__h2_call *call)
{
    int rc = sl__grpc_rls_decode(&rreq, call->msg, call->len);
    struct sl__decided now;

    if (rc == SL_OK) {
        /* Answered now: no deadline to run. Later: the deadline runs (and
         * pins the connection) until on_done. */
        if (!rreq.no_cert)
            sl__cert_entries(op->g->c, &rreq.req); /* client_cert_name: the server's */
        if (sl__decide(op->g->c->w, &op->d, SL__DECIDE_CHECK, &rreq.req, on_done, &now))
            answer_with(op, now.err, now.res);
        else
            sl__grpc_deciding(op);
    } else {
        sl__grpc_fail(op, rc == SL_EPARSE ? SL__GRPC_INTERNAL : SL__GRPC_INVALID_ARGUMENT,
                      rreq.error);
    }
    sl__grpc_rls_release(&rreq);
}
