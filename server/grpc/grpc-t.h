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
    unsigned max_concurrent_streams;          /* SETTINGS_MAX_CONCURRENT_STREAMS */
    size_t max_message_bytes;                 /* largest request message */
    size_t max_header_list_bytes;             /* SETTINGS_MAX_HEADER_LIST_SIZE */
    size_t max_header_bytes_per_s;            /* decoded header bytes per connection a second */
    unsigned rlqs_max_streams_per_connection; /* rate limit quota streams on one connection */
    unsigned rlqs_max_buckets_per_stream;     /* buckets one such stream may report */
};

struct sl__conn;
struct sl__grpc_conn;
struct sl__grpc_op;

/* A streaming method's service (grpc.c's table): what it does with the
 * stream's messages and when things change. Every stream ends with
 * sl__grpc_fail (OK included). */
struct sl__grpc_streamer {
    /* One request message; msg NULL: the client has sent its last. */
    void (*message)(struct sl__grpc_op *op, const uint8_t *msg, size_t len);
    /* Every SL__GRPC_TICK_MS while op->ticking (a watch looks again). */
    void (*tick)(struct sl__grpc_op *op);
    /* The server is stopping: say so if the service has a way to, and end
     * the stream. NULL: it ends UNAVAILABLE. */
    void (*drain)(struct sl__grpc_op *op);
    /* The stream is over, however it ended (its end sent, a reset, the
     * connection closed): free what the service keeps. NULL: nothing. */
    void (*gone)(struct sl__grpc_op *op);
};

struct sl__rlqs_stream; /* rlqs.c */

/* A health watch's state (grpc_health.c). */
struct sl__grpc_watch {
    char service[96]; /* the service watched ("" the server) */
    int sent;         /* the status last sent, -1 none yet */
    bool asked;       /* its request message arrived */
};

/* One call being answered, in its stream's owner area (h2.h): a decision
 * in flight and its deadline, or a stream and its service's state. */
struct sl__grpc_op {
    struct sl__decide_op d; /* the decision path's part; first */
    struct sl__grpc_conn *g;
    struct sl__h2_stream *s;
    int64_t deadline_ms;                /* loop time; -1 none */
    bool pinned;                        /* a decision is in flight (sl__grpc_deciding) */
    bool late;                          /* its deadline passed: DEADLINE_EXCEEDED was sent */
    bool ticking;                       /* a stream's service wants st->tick */
    const struct sl__grpc_streamer *st; /* a stream's service; NULL: a unary call */
    struct sl__grpc_op *prev, *next;    /* g->waiting (decisions in flight) or g->streams */
    union {
        struct sl__grpc_watch watch;
        struct sl__rlqs_stream *rlqs;
    } u;
};

/* One connection's gRPC state (c->proto_state). Freed by the close
 * callback of its timer, after the connection itself may be gone. */
struct sl__grpc_conn {
    struct sl__conn *c;
    struct sl__h2 *h2;
    uv_timer_t deadline; /* the earliest deadline of g->waiting, stall_ms, or a stream's tick */
    struct sl__grpc_op *waiting;
    struct sl__grpc_op *streams; /* the streams open */
    unsigned rlqs_streams;       /* of them, rate limit quota streams */
    int64_t tick_ms;             /* loop time the streams that tick are looked at; -1 none */
    int64_t stall_ms;            /* loop time a reply will have waited for the client's window
                                    server.write_timeout (sl__h2_stalled_until); -1 none waits */
};

#endif /* SL_SERVER_GRPC_T_H */
