/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * fuzz_grpc.c - libFuzzer driver for gRPC over HTTP/2 and its messages:
 * the input is what a client sends after the preface, fed to one session
 * (h2.c) as the connection would, under small caps; every call completed
 * is decoded as a RateLimitRequest and answered (or refused); a call whose
 * path starts "/s" is a stream whose messages are echoed (an empty one
 * ends it, as the half-close does) and may be left open. The input
 * is also decoded as a RateLimitRequest by itself, by the in-place reader
 * and by protobuf-c alone, which must agree on the result code and the
 * request's shape. Memory errors are the
 * sanitizers' to find; the session must never consume more than it was
 * given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_codec.h"
#include "h2.h"

#define CHECK(c) ((c) ? (void)0 : abort())

static struct sl__h2 *session;
static struct sl__grpc_rls_req req;
static uint8_t wire[1 << 17];

static void on_send(void *owner, const uint8_t *buf, size_t len)
{
}

static void on_call(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *call)
{
    if (call->stream)
        return; /* its messages follow */
    struct sl__envoy_answer a = {.overall = SL__ENVOY_OK};
    uint8_t out[256];
    size_t len = 0;
    int rc = sl__grpc_rls_decode(&req, call->msg, call->len);

    a.n = rc == SL_OK ? req.req.n_descriptors : 0;
    sl__grpc_rls_release(&req);
    if (rc == SL_OK && sl__grpc_rls_encode(&a, out, sizeof(out), &len) == SL_OK)
        sl__h2_reply(session, s, out, len);
    else
        sl__h2_fail(session, s, SL__GRPC_INTERNAL, "refused");
    sl__h2_release(session, s);
}

static int32_t route(void *owner, struct sl_str path)
{
    return path.len >= 2 && memcmp(path.p, "/s", 2) == 0 ? SL__H2_ROUTE_STREAM : 0;
}

static void on_message(void *owner, struct sl__h2_stream *s, const uint8_t *msg, size_t len)
{
    if (msg != NULL && len > 0 && sl__h2_send(session, s, msg, len))
        return;
    sl__h2_fail(session, s, msg == NULL ? SL__GRPC_OK : SL__GRPC_INTERNAL, "");
    sl__h2_release(session, s);
}

static void on_gone(void *owner, struct sl__h2_stream *s)
{
    sl__h2_release(session, s);
}

static const struct sl__h2_ops ops = {
    .send = on_send, .call = on_call, .route = route, .message = on_message, .gone = on_gone};

/* The two RateLimitRequest readers agree (one decode at a time: the
 * arena is per thread). */
static void compare_decoders(const uint8_t *data, size_t size)
{
    int fast = sl__grpc_rls_decode(&req, data, size), rc;
    size_t n = req.req.n_descriptors, entries = 0, domain = req.req.domain.len;
    char error[sizeof(req.error)];

    if (fast == SL_OK)
        for (size_t i = 0; i < n; i++)
            entries += req.descs[i].n_entries;
    memcpy(error, req.error, sizeof(error));
    sl__grpc_rls_release(&req);
    rc = sl__grpc_rls_decode_general(&req, data, size);
    CHECK(rc == fast && strcmp(error, req.error) == 0);
    if (rc == SL_OK) {
        CHECK(req.req.n_descriptors == n && req.req.domain.len == domain);
        for (size_t i = 0; i < n; i++)
            entries -= req.descs[i].n_entries;
        CHECK(entries == 0);
    }
    sl__grpc_rls_release(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl__h2_limits lim = {8, 4096, 4096, 65536};
    size_t len = 24 + (size < sizeof(wire) - 24 ? size : sizeof(wire) - 24), off = 0, n;

    compare_decoders(data, size);
    memcpy(wire, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    memcpy(wire + 24, data, len - 24);
    session = sl__h2_new(&lim, &ops, NULL);
    CHECK(session != NULL);
    while (off < len && (n = sl__h2_feed(session, wire + off, len - off)) > 0) {
        CHECK(n <= len - off);
        off += n;
        sl__h2_flush(session);
    }
    sl__h2_free(session);
    return 0;
}
