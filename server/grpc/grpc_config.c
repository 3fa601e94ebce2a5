/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc_config.c - the `grpc:` configuration section (config.h): its keys
 * with their defaults and meanings, checked once the file is read. It
 * does not apply them (grpc.c hands them to each HTTP/2 session).
 */
#include <stdio.h>

#include "grpc.h"
#include "keytab.h"

#define F(member) SL__KF(struct sl__grpc_config, member)

static const struct sl__key keys[] = {
    {"grpc.max_concurrent_streams", SL__K_UINT, F(max_concurrent_streams), "100",
     "HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: calls in flight per connection", .min = 1,
     .max = 65536},
    {"grpc.max_message_bytes", SL__K_SIZE, F(max_message_bytes), "64KiB",
     "largest request message; a larger one is answered RESOURCE_EXHAUSTED"},
    {"grpc.max_header_list_bytes", SL__K_SIZE, F(max_header_list_bytes), "16KiB",
     "HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE; a larger list ends the connection (GOAWAY "
     "ENHANCE_YOUR_CALM)"},
    {"grpc.max_header_bytes_per_second", SL__K_SIZE, F(max_header_bytes_per_s), "256MiB",
     "decoded header bytes one connection may cost a second (1/64 of it at once); past it the "
     "connection ends (GOAWAY ENHANCE_YOUR_CALM); 0 = no bound"},
    {"grpc.rlqs_max_streams_per_connection", SL__K_UINT, F(rlqs_max_streams_per_connection), "4",
     "rate limit quota (RLQS) streams one connection may hold; another is ended "
     "RESOURCE_EXHAUSTED",
     .min = 1, .max = 1024},
    {"grpc.rlqs_max_buckets_per_stream", SL__K_UINT, F(rlqs_max_buckets_per_stream), "1024",
     "buckets one RLQS stream may report; the stream that reports one more is ended "
     "RESOURCE_EXHAUSTED",
     .min = 1, .max = 65536},
};

static int check(void *cfg, const struct sl__config *c, struct sl__config_ctx *x)
{
    const struct sl__grpc_config *g = cfg;
    int r = SL_OK;

    if (g->max_message_bytes > (16u << 20))
        r = sl__config_fail_key(x, "grpc.max_message_bytes",
                                "grpc.max_message_bytes must be at most 16MiB");
    if (g->max_header_list_bytes < 1024 || g->max_header_list_bytes > (1u << 20))
        r = sl__config_fail_key(x, "grpc.max_header_list_bytes",
                                "grpc.max_header_list_bytes must be 1KiB..1MiB");
    if (g->max_header_bytes_per_s != 0 && (g->max_header_bytes_per_s < g->max_header_list_bytes ||
                                           g->max_header_bytes_per_s > (64ull << 30)))
        r = sl__config_fail_key(x, "grpc.max_header_bytes_per_second",
                                "grpc.max_header_bytes_per_second must be 0 (no bound) or from "
                                "grpc.max_header_list_bytes to 64GiB");
    return r;
}

const struct sl__config_section sl__grpc_config_section = {
    .name = "grpc",
    .size = sizeof(struct sl__grpc_config),
    .keys = keys,
    .n_keys = sizeof(keys) / sizeof(keys[0]),
    .check = check,
};
