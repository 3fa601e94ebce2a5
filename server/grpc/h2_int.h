/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2_int.h - what h2.c (the session) and h2_stream.c (one call's stream)
 * share; nothing else includes it. The public face is h2.h.
 */
#ifndef SL_SERVER_H2_INT_H
#define SL_SERVER_H2_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "h2.h"
#include "h2_mem.h"

#define SL__H2_PATH_MAX 128 /* longer paths name no method of ours */

struct sl__h2_stream {
    _Alignas(16) unsigned char owner[SL__H2_OWNER_BYTES];
    struct sl__h2 *h;
    struct sl__h2_stream *next_free; /* on h->free_streams */
    struct sl__h2_stream *next_all;  /* every stream object of the session */
    int32_t id;
    bool open;     /* nghttp2 has not closed it */
    bool busy;     /* handed to the owner and not answered yet */
    bool answered; /* an answer was submitted: further input is ignored */
    bool ended;    /* the peer sent END_STREAM */
    bool partial;  /* counted in h->n_partial */
    bool post;     /* :method POST */
    bool grpc;     /* content-type application/grpc[+proto|;...] */
    bool path_long;
    bool sending;     /* counted in h->n_sending: reply bytes wait for the peer's window */
    bool streaming;   /* a stream (ops->streaming): messages handed over one by one */
    bool responded;   /* the response headers were submitted (with a data source) */
    bool deferred;    /* the data source waits for sl__h2_send or the end (streams) */
    bool finishing;   /* a stream's end was asked for: trailers after its messages */
    uint8_t fin_code; /* its grpc-status */
    uint16_t fin_len; /* and its grpc-message, percent-encoded */
    char fin_msg[256];
    int64_t timeout_ns; /* grpc-timeout, -1 none */
    int64_t since_ms;   /* the owner's clock: last seen sending progress (-1 not yet looked) */
    size_t seen_sent;   /* sent_total when since_ms was stamped */
    uint16_t path_len;
    char path[SL__H2_PATH_MAX];
    uint8_t *in; /* the request message with its 5-byte prefix */
    size_t in_len, in_cap;
    uint8_t *out; /* the reply message with its prefix */
    size_t out_len, out_cap, out_sent;
    size_t sent_total; /* reply bytes handed to nghttp2, all told */
};

struct sl__h2 {
    nghttp2_session *ng;
    struct sl__h2_mem pool;
    nghttp2_mem mem;
    struct sl__h2_limits lim;
    const struct sl__h2_ops *ops;
    void *owner;
    bool preface_fed;   /* the 24-byte client preface went to nghttp2 */
    bool goaway;        /* a graceful GOAWAY was submitted */
    bool fatal;         /* the session ended on an error */
    bool calm;          /* GOAWAY ENHANCE_YOUR_CALM: nothing more is decoded (sl__h2_calm) */
    uint32_t n_streams; /* stream objects in use */
    uint32_t n_partial; /* streams with an incomplete request */
    uint32_t n_sending; /* streams whose reply waits for the peer's flow-control window */
    struct sl__h2_stream *free_streams;
    struct sl__h2_stream *all_streams;
    int64_t budget;      /* frames without a call the peer may still send now */
    int64_t budget_ms;   /* when it was last refilled (CLOCK_MONOTONIC) */
    size_t list_bytes;   /* the header list being decoded, as RFC 9113 counts it */
    int64_t hpack_bytes; /* header bytes the peer may still have decoded now */
    int64_t hpack_ms;    /* when hpack_bytes was last refilled (CLOCK_MONOTONIC) */
};

/* End the session with GOAWAY `error` (nghttp2's error codes). */
void sl__h2_terminate(struct sl__h2 *h, uint32_t error);

/* One header field decoded (valid or not): count it in the header list's
 * size and the session's HPACK budget. 0, or NGHTTP2_ERR_PAUSE once
 * either is overstepped: the session has calmed down (sl__h2_calm) and
 * nghttp2 must decode nothing more. */
int sl__h2_count_header(struct sl__h2 *h, size_t namelen, size_t valuelen);

/* The peer made the server decode more than it may: stop reading its
 * input, refuse every stream not handed to the owner or answered, send
 * GOAWAY ENHANCE_YOUR_CALM with the last of those that were, answer them,
 * then end (sl__h2_done). Idempotent. */
void sl__h2_calm(struct sl__h2 *h);

/* The nghttp2 callbacks of one stream's life (h2_stream.c). */
int sl__h2_on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *ud);
int sl__h2_on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud);
int sl__h2_on_invalid_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                             size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                             void *ud);
int sl__h2_on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *ud);
int sl__h2_on_stream_close(nghttp2_session *ng, int32_t id, uint32_t error, void *ud);
int sl__h2_on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *ud);
/* A HEADERS or DATA frame of a request was received in full. */
void sl__h2_stream_frame(struct sl__h2 *h, const nghttp2_frame *f);

/* End every stream that is its owner's with `code` (ops->gone). */
void sl__h2_streams_end(struct sl__h2 *h, enum sl__grpc_status code, const char *message);

/* Free every stream object (the session is being freed). */
void sl__h2_streams_free(struct sl__h2 *h);

#endif /* SL_SERVER_H2_INT_H */
