/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * grpc-t.h - the types of sluiced's gRPC room (internal): its
 * configuration section and one connection's state. Prototypes in grpc.h.
 */
#ifndef SL_SERVER_GRPC_T_H
#define SL_SERVER_GRPC_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "decide.h"
#include "h2-t.h"

/* The `grpc:` section of the configuration (grpc_config.c). */
struct sl__grpc_config {
    unsigned max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS */
    size_t max_message_bytes;        /* largest request message */
    size_t max_header_list_bytes;    /* SETTINGS_MAX_HEADER_LIST_SIZE */
    size_t max_header_bytes_per_s;   /* decoded header bytes per connection a second */
};

struct sl__conn;
struct sl__grpc_conn;

/* One call being answered, in its stream's owner area (h2.h): a decision
 * in flight, and its deadline. */
struct sl__grpc_op {
    struct sl__decide_op d; /* the decision path's part; first */
    struct sl__grpc_conn *g;
    struct sl__h2_stream *s;
    int64_t deadline_ms;             /* loop time; -1 none */
    bool pinned;                     /* a decision is in flight (sl__grpc_deciding) */
    bool late;                       /* its deadline passed: DEADLINE_EXCEEDED was sent */
    struct sl__grpc_op *prev, *next; /* g->waiting: decisions in flight */
};

/* One connection's gRPC state (c->proto_state). Freed by the close
 * callback of its timer, after the connection itself may be gone. */
struct sl__grpc_conn {
    struct sl__conn *c;
    struct sl__h2 *h2;
    uv_timer_t deadline; /* the earliest deadline of g->waiting, or stall_ms */
    struct sl__grpc_op *waiting;
    int64_t stall_ms; /* loop time a reply will have waited for the client's window
                         server.write_timeout (sl__h2_stalled_until); -1 none waits */
};

#endif /* SL_SERVER_GRPC_T_H */
