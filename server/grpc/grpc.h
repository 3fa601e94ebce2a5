/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc.h - sluiced's gRPC room (internal): the listener protocol `grpc`
 * (HTTP/2 with prior knowledge, recognised by its client preface), its
 * configuration section `grpc:`, and the services it serves:
 * envoy.service.ratelimit.v3.RateLimitService and grpc.health.v1.Health.
 * Types in grpc-t.h.
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
