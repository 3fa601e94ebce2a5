/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2-t.h - the types of gRPC over HTTP/2 as sluiced's h2 layer speaks it
 * (internal): the limits a session enforces, the calls it hands up and
 * gRPC's status codes. Prototypes in h2.h.
 */
#ifndef SL_SERVER_H2_T_H
#define SL_SERVER_H2_T_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/* gRPC status codes (grpc/status.h's numbers). */
enum sl__grpc_status {
    SL__GRPC_OK = 0,
    SL__GRPC_CANCELLED = 1,
    SL__GRPC_UNKNOWN = 2,
    SL__GRPC_INVALID_ARGUMENT = 3,
    SL__GRPC_DEADLINE_EXCEEDED = 4,
    SL__GRPC_NOT_FOUND = 5,
    SL__GRPC_RESOURCE_EXHAUSTED = 8,
    SL__GRPC_UNIMPLEMENTED = 12,
    SL__GRPC_INTERNAL = 13,
    SL__GRPC_UNAVAILABLE = 14,
};

struct sl__h2_limits {
    uint32_t max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS */
    size_t max_message_bytes;        /* one request message, without its 5-byte prefix */
    size_t max_header_list_bytes;    /* SETTINGS_MAX_HEADER_LIST_SIZE, counted as RFC 9113 does */
    size_t max_header_bytes_per_s;   /* decoded header bytes a second, counted so; 0 unbounded */
};

/* Bytes of per-call state a stream keeps for its owner (the room's
 * operation lives there, so starting a call allocates nothing). */
#define SL__H2_OWNER_BYTES 512

/* A stream queues at most this many reply bytes for a peer that does not
 * read them (sl__h2_send refuses more), whatever the owner's budget. */
#define SL__H2_STREAM_QUEUE (1u << 20)

/* A request message buffer up to this size is never refused by the
 * owner's budget (ops->budget): an ordinary call always gets its room. */
#define SL__H2_SMALL_MESSAGE (16u << 10)

/* One call, handed to the owner: a unary call when its request is
 * complete, a stream (ops->route says which paths are) as soon as its
 * headers are. Borrowed for the duration of the ops->call() only. */
struct sl__h2_call {
    struct sl_str path; /* ":path", e.g. "/grpc.health.v1.Health/Check" */
    const uint8_t *msg; /* the request message, without its prefix (NULL: a stream);
                           borrowed for the callback */
    size_t len;         /* its bytes (may be 0: an all-default message) */
    int64_t timeout_ns; /* grpc-timeout, -1 when absent */
    bool stream;        /* a stream: its messages come through ops->message */
    int32_t route;      /* ops->route's answer for the path (0 without ops->route) */
};

/* In a route (ops->route): calls to the path are streams. */
#define SL__H2_ROUTE_STREAM 0x40000000

struct sl__h2;
struct sl__h2_stream;

/* What a session asks of its owner. */
struct sl__h2_ops {
    /* Bytes to send to the peer, in order (copied by the callee). */
    void (*send)(void *owner, const uint8_t *buf, size_t len);
    /* A whole unary call arrived on `s`: answer it with sl__h2_reply() or
     * sl__h2_fail() and give it back with sl__h2_release(), now or later.
     * Until then the stream is kept, even if the peer resets it (an answer
     * is then dropped). */
    void (*call)(void *owner, struct sl__h2_stream *s, const struct sl__h2_call *call);
    /* The calls' message buffers of the session grow (delta > 0) or shrink
     * by delta bytes; false refuses growth, only where `refusable` (a
     * request message's buffer growing past SL__H2_SMALL_MESSAGE: the
     * call is answered RESOURCE_EXHAUSTED). Replies, small requests and
     * giving back are counted and never refused. NULL: nothing counted. */
    bool (*budget)(void *owner, int64_t delta, bool refusable);
    /* The owner's route for calls to `path` (its method, say), >= 0:
     * handed back with each call (sl__h2_call.route); with
     * SL__H2_ROUTE_STREAM set the calls are streams (client, server or both
     * ways): handed over at their headers, then each request message on
     * its own. A function of the path alone: asked once per request
     * header block, and remembered with a header block the session does
     * not decode again. NULL: every call is unary, route 0. */
    int32_t (*route)(void *owner, struct sl_str path);
    /* One whole request message of the stream `s` (borrowed for the
     * callback); msg NULL: the peer has sent its last (half-close). The
     * owner may send (sl__h2_send) and end the call (sl__h2_fail) from
     * here. */
    void (*message)(void *owner, struct sl__h2_stream *s, const uint8_t *msg, size_t len);
    /* The stream `s` is over without the owner ending it (the peer reset
     * it, or the session refused its input or is ending): the owner
     * forgets it and gives it back (sl__h2_release), here. Not called when
     * the session is freed: the owner forgets its streams itself then. */
    void (*gone)(void *owner, struct sl__h2_stream *s);
};

#endif /* SL_SERVER_H2_T_H */
