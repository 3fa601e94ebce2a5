/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_codec.h - the protobuf messages of sluiced's gRPC services
 * (internal): Envoy's RateLimitRequest decoded into the request the one
 * decision path takes (struct sl_request, with the per-descriptor `limit`
 * overrides beside it, as /json's parser produces them), a decision's
 * Envoy answer (envoy.h) encoded as RateLimitResponse, and the two
 * messages of grpc.health.v1's Check.
 *
 * Envoy's request rules are envoy.h's (hits_addend, the checks); this
 * file only maps fields. A RateLimitRequest as Envoy sends it is read in
 * place, without protobuf-c and without allocating; anything unusual
 * (unknown or repeated singular fields, a NUL in a string, bad bytes) goes
 * to protobuf-c, which allocates from a per-thread arena (its allocator
 * hooks), so a call takes nothing from the general heap unless a message
 * is larger than the arena. RateLimitResponse is
 * written by hand into the caller's buffer, the bytes protobuf-c's packing
 * gives. It does not decide anything or speak HTTP/2.
 *
 * Ownership: a decoded request borrows its strings from the caller's
 * message bytes or from the unpacked message in the arena; the caller
 * keeps the bytes, and the arena stays valid until
 * sl__grpc_rls_release(); one thread decodes one request at a time.
 */
#ifndef SL_SERVER_GRPC_CODEC_H
#define SL_SERVER_GRPC_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "envoy.h"
#include "sluice.h"

struct sl__grpc_rls_req {
    struct sl_request req;
    struct sl_descriptor descs[SL_MAX_DESCRIPTORS];
    struct sl_entry entries[SL_MAX_DESCRIPTORS][SL_MAX_ENTRIES];
    struct sl__envoy_override overrides[SL_MAX_DESCRIPTORS]; /* [0..req.n_descriptors) */
    struct sl_limit override_limits[SL_MAX_DESCRIPTORS];     /* descs[i].limit points here */
    void *msg;    /* protobuf-c's unpacked message, when it decoded */
    bool fast;    /* decoded in place, without protobuf-c */
    bool no_cert; /* known to have no SL__CERT_ENTRY_KEY entry (sl__cert_entries: nothing to do) */
    char error[160]; /* what is wrong, for grpc-message */
};

/*
 * Decode a RateLimitRequest from buf[0..len). SL_OK; SL_EPARSE (not a
 * RateLimitRequest); SL_EINVAL (envoy.h's checks, an override's unit out
 * of range); SL_ETOOBIG (more descriptors or entries than the caps);
 * SL_ERANGE (a descriptor's hits_addend above 2^63-1) - with r->error
 * saying what and where, in /json's words. In every case the caller calls
 * sl__grpc_rls_release(r) afterwards.
 */
int sl__grpc_rls_decode(struct sl__grpc_rls_req *r, const uint8_t *buf, size_t len);
/* The same through protobuf-c alone: what sl__grpc_rls_decode() falls back
 * to for a message its in-place reader does not take (tests compare the
 * two); sl__grpc_rls_release() afterwards as well. */
int sl__grpc_rls_decode_general(struct sl__grpc_rls_req *r, const uint8_t *buf, size_t len);
void sl__grpc_rls_release(struct sl__grpc_rls_req *r);

/* Encode `a` as a RateLimitResponse into buf[0..cap): SL_OK with *len, or
 * SL_ETOOBIG. */
int sl__grpc_rls_encode(const struct sl__envoy_answer *a, uint8_t *buf, size_t cap, size_t *len);

/* HealthCheckResponse.ServingStatus, by number. */
enum sl__grpc_serving {
    SL__GRPC_SERVING = 1,
    SL__GRPC_NOT_SERVING = 2,
    SL__GRPC_SERVICE_UNKNOWN = 3
};

/* The `service` of a HealthCheckRequest, copied NUL-terminated into
 * out[0..cap) (truncated). SL_OK or SL_EPARSE. */
int sl__grpc_health_decode(const uint8_t *buf, size_t len, char *out, size_t cap);
/* A HealthCheckResponse with `status` into buf[0..cap); its length, or 0
 * if it does not fit. */
size_t sl__grpc_health_encode(enum sl__grpc_serving status, uint8_t *buf, size_t cap);

#endif /* SL_SERVER_GRPC_CODEC_H */
