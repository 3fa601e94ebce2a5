/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc.h - sluiced's gRPC room (internal): the listener protocol `grpc`
 * (HTTP/2 with prior knowledge, recognised by its client preface), its
 * configuration section `grpc:`, and the services it serves:
 * envoy.service.ratelimit.v3.RateLimitService,
 * envoy.service.rate_limit_quota.v3.RateLimitQuotaService, grpc.health.v1.Health and
 * grpc.reflection.v1 (and v1alpha) ServerReflection. Types in grpc-t.h.
 */
#ifndef SL_SERVER_GRPC_H
#define SL_SERVER_GRPC_H

#include "config.h"
#include "grpc-t.h"
#include "h2.h"
#include "proto.h"

extern const struct sl__proto sl__proto_grpc;
extern const struct sl__config_section sl__grpc_config_section;

/* This connection's `grpc:` configuration. */
const struct sl__grpc_config *sl__grpc_config(const struct sl__conn *c);

/* The services: each answers the call on `op->s` (sl__grpc_answer,
 * sl__grpc_fail), now or later. */
void sl__grpc_rls(struct sl__grpc_op *op, const struct sl__h2_call *call);
void sl__grpc_health_check(struct sl__grpc_op *op, const struct sl__h2_call *call);
extern const struct sl__grpc_streamer sl__grpc_health_watch;
extern const struct sl__grpc_streamer sl__grpc_reflect;
extern const struct sl__grpc_streamer sl__grpc_rlqs;

/* The rate limit quota service's series in /metrics (rlqs.c). */
void sl__rlqs_render_metrics(const struct sl__server *srv, struct sl__buf *out);
/* Its member of GET /v1/stats, "rlqs":{...}: the same figures, and the
 * first pools with what their members reported (rlqs.c). */
void sl__rlqs_render_stats(const struct sl__server *srv, struct sl__buf *out);

/* How often a stream that follows a state looks at it (sl__grpc_tick). */
#define SL__GRPC_TICK_MS 250

/* The i-th service name sluiced serves ("grpc.health.v1.Health"), into
 * out[0..cap): its length, or 0 past the last one. */
size_t sl__grpc_service(size_t i, char *out, size_t cap);

/* Streams: send one message (false: the client's window and the buffer
 * budget hold no more - end the stream); look again every
 * SL__GRPC_TICK_MS (st->tick) while `on`. A stream ends with
 * sl__grpc_fail(op, SL__GRPC_OK, "") or an error. */
bool sl__grpc_send(struct sl__grpc_op *op, const uint8_t *msg, size_t len);
void sl__grpc_tick(struct sl__grpc_op *op, bool on);

/* Answer the call of `op` with a serialized message, or with an error; the
 * op is finished afterwards (output is flushed by the caller's caller). */
void sl__grpc_answer(struct sl__grpc_op *op, const uint8_t *msg, size_t len);
void sl__grpc_fail(struct sl__grpc_op *op, enum sl__grpc_status code, const char *message);

/* Before handing a decision over: start the op's deadline (pins the
 * connection); after: sl__grpc_decided() says whether the answer is still
 * wanted (false: DEADLINE_EXCEEDED was sent; the op is finished). */
void sl__grpc_deciding(struct sl__grpc_op *op);
bool sl__grpc_decided(struct sl__grpc_op *op);

#endif /* SL_SERVER_GRPC_H */
