/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * h2_int.h - what h2.c (the session: frames in and out) and h2_stream.c
 * (one call's stream) share; nothing else includes it. The public face is
 * h2.h.
 */
#ifndef SL_SERVER_H2_INT_H
#define SL_SERVER_H2_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "h2.h"
#include "h2_mem.h"

#define SL__H2_PATH_MAX 128 /* longer paths name no method of ours */
#define SL__H2_BUCKETS  64  /* the open streams' hash, by id */

/* RFC 9113's frame types, flags, error codes and settings. */
enum {
    SL__H2_DATA = 0x0,
    SL__H2_HEADERS = 0x1,
    SL__H2_PRIORITY = 0x2,
    SL__H2_RST_STREAM = 0x3,
    SL__H2_SETTINGS = 0x4,
    SL__H2_PUSH_PROMISE = 0x5,
    SL__H2_PING = 0x6,
    SL__H2_GOAWAY = 0x7,
    SL__H2_WINDOW_UPDATE = 0x8,
    SL__H2_CONTINUATION = 0x9,
};
enum {
    SL__H2_F_END_STREAM = 0x1,
    SL__H2_F_ACK = 0x1,
    SL__H2_F_END_HEADERS = 0x4,
    SL__H2_F_PADDED = 0x8,
    SL__H2_F_PRIORITY = 0x20,
};
enum {
    SL__H2_NO_ERROR = 0x0,
    SL__H2_PROTOCOL_ERROR = 0x1,
    SL__H2_INTERNAL_ERROR = 0x2,
    SL__H2_FLOW_CONTROL_ERROR = 0x3,
    SL__H2_STREAM_CLOSED = 0x5,
    SL__H2_FRAME_SIZE_ERROR = 0x6,
    SL__H2_REFUSED_STREAM = 0x7,
    SL__H2_COMPRESSION_ERROR = 0x9,
    SL__H2_ENHANCE_YOUR_CALM = 0xb,
};

#define SL__H2_WINDOW_MAX 0x7fffffff /* 2^31 - 1 */
#define SL__H2_WINDOW     65535      /* the initial windows we grant (never raised) */

/* What a request's header block told of its call (a stream's copy, and
 * the header block cache's). */
struct sl__h2_head {
    bool post; /* :method POST */
    bool grpc; /* content-type application/grpc[+proto|;...] */
    bool path_long;
    bool regular;   /* a regular field was seen (pseudo-headers must come first) */
    uint8_t pseudo; /* the pseudo-headers seen (bits) */
    bool routed;    /* route is known (ops->route was asked) */
    uint16_t path_len;
    int32_t route;      /* ops->route's answer, once routed */
    int64_t timeout_ns; /* grpc-timeout, -1 none */
    int64_t clen;       /* content-length, -1 none */
    char path[SL__H2_PATH_MAX];
};

#define SL__H2_CACHE_BLOCK 256 /* header blocks up to this are cached */

/* The last request header block decoded that left HPACK's dynamic table
 * as it was (only indexed fields and literals not indexed): the same
 * bytes, with the table unchanged since (the same generation), decode to
 * the same list, so a client that sends the same block call after call
 * (the same path and metadata) is not decoded again. */
struct sl__h2_block_cache {
    bool valid;
    uint16_t len;
    uint32_t gen;      /* sl__h2.table_gen when it was decoded */
    size_t list_bytes; /* its header list, as RFC 9113 counts it */
    struct sl__h2_head head;
    uint8_t block[SL__H2_CACHE_BLOCK];
};

struct sl__h2_stream {
    _Alignas(16) unsigned char owner[SL__H2_OWNER_BYTES];
    struct sl__h2 *h;
    struct sl__h2_stream *next_free;    /* on h->free_streams */
    struct sl__h2_stream *next_all;     /* every stream object of the session */
    struct sl__h2_stream *next_hash;    /* the open streams' bucket */
    struct sl__h2_stream *next_closing; /* on h->closing */
    int32_t id;
    bool open;       /* not closed (in the protocol's sense) */
    bool busy;       /* handed to the owner and not given back yet */
    bool answered;   /* an answer was made: further input is ignored */
    bool ended;      /* the peer sent END_STREAM (half-closed remote) */
    bool local_done; /* our END_STREAM (or RST_STREAM) was written */
    bool closing;    /* on h->closing: closed at the next flush */
    bool partial;    /* counted in h->n_partial */
    bool post;       /* :method POST */
    bool grpc;       /* content-type application/grpc[+proto|;...] */
    bool path_long;
    bool sending;     /* counted in h->n_sending: reply bytes wait for the peer's window */
    bool streaming;   /* a stream (ops->route): messages handed over one by one */
    bool responded;   /* the response headers were written */
    bool finishing;   /* a stream's end was asked for: trailers after its messages */
    bool trailers;    /* the header block being decoded is the request's trailers */
    bool malformed;   /* the header block broke RFC 9113 8.2/8.3: stream error */
    bool regular;     /* a regular field was seen (pseudo-headers must come first) */
    uint8_t pseudo;   /* the pseudo-headers seen (bits) */
    bool routed;      /* route is known: from the block cache, or asked */
    int32_t route;    /* ops->route's answer for its path */
    uint8_t fin_code; /* its grpc-status */
    uint16_t fin_len; /* and its grpc-message, percent-encoded */
    char fin_msg[256];
    int64_t timeout_ns;  /* grpc-timeout, -1 none */
    int64_t clen;        /* content-length, -1 none */
    int64_t data_seen;   /* request DATA payload bytes received */
    int64_t send_window; /* the peer's window for what we send */
    int64_t recv_window; /* what the peer may still send */
    int64_t since_ms;    /* the owner's clock: last seen sending progress (-1 not yet looked) */
    size_t seen_sent;    /* sent_total when since_ms was stamped */
    uint16_t path_len;
    char path[SL__H2_PATH_MAX];
    uint8_t *in; /* the request message with its 5-byte prefix */
    size_t in_len, in_cap;
    uint8_t *out; /* the reply message(s) with their prefixes */
    size_t out_len, out_cap, out_sent;
    size_t sent_total; /* reply bytes written into DATA frames, all told */
};

struct sl__h2 {
    nghttp2_hd_inflater *inflater;
    struct sl__h2_mem pool;
    nghttp2_mem mem;
    struct sl__h2_limits lim;
    const struct sl__h2_ops *ops;
    void *owner;
    uint8_t *out; /* frames waiting for sl__h2_flush */
    size_t out_len, out_cap;
    bool preface;         /* the client preface was read */
    bool settings_seen;   /* the peer's first SETTINGS was read */
    bool goaway;          /* a GOAWAY was written (graceful or calm) */
    bool peer_goaway;     /* the peer sent GOAWAY */
    bool fatal;           /* the session ended on an error */
    bool calm;            /* GOAWAY ENHANCE_YOUR_CALM: nothing more is decoded (sl__h2_calm) */
    bool hpack_refilled;  /* this feed's HPACK budget refill was made */
    bool table_update;    /* our next header block starts with a table size update to 0 */
    bool table_zero;      /* our encoder's table is 0 (announced) */
    int32_t last_id;      /* the highest stream id the peer opened */
    int32_t goaway_last;  /* the last stream id our GOAWAY covers */
    int32_t cont_id;      /* a header block continues on this stream (CONTINUATION), 0 none */
    bool cont_end_stream; /* that block's HEADERS had END_STREAM */
    struct sl__h2_stream *cont_s; /* its stream, NULL when it is only decoded */
    size_t block_bytes;           /* its compressed bytes so far */
    uint32_t n_open;              /* streams open */
    uint32_t n_streams;           /* stream objects in use */
    uint32_t n_partial;           /* streams with an incomplete request */
    uint32_t n_sending;           /* streams whose reply waits for the peer's window */
    uint32_t peer_initial_window; /* SETTINGS_INITIAL_WINDOW_SIZE */
    uint32_t peer_max_frame;      /* SETTINGS_MAX_FRAME_SIZE */
    int64_t send_window;          /* the connection's window for what we send */
    int64_t recv_window;          /* what the peer may still send on the connection */
    struct sl__h2_stream *buckets[SL__H2_BUCKETS];
    struct sl__h2_stream *free_streams;
    struct sl__h2_stream *all_streams;
    struct sl__h2_stream *closing; /* answered streams closed at the next flush */
    uint32_t table_gen;            /* bumped by every header block that may change HPACK's table */
    struct sl__h2_block_cache cache;
    struct sl__h2_stream
        *cache_s;        /* the stream whose block was just cached (its route goes there) */
    int64_t budget;      /* frames without a call the peer may still send now */
    int64_t budget_ms;   /* when it was last refilled (CLOCK_MONOTONIC, ms) */
    size_t list_bytes;   /* the header list being decoded, as RFC 9113 counts it */
    int64_t hpack_bytes; /* header bytes the peer may still have decoded now */
    int64_t hpack_ms;    /* when hpack_bytes was last refilled (CLOCK_MONOTONIC) */
    bool own_clock;      /* the owner gives the time (sl__h2_clock) */
    int64_t clock_ms;    /* its last */
};

/* ---- h2.c: output and the session's state */

/* Room for n more output bytes (then out_len += n), or NULL: out of
 * memory, the session is over (fatal). */
uint8_t *sl__h2_put(struct sl__h2 *h, size_t n);
/* A frame header at p. */
static inline void sl__h2_frame_head(uint8_t *p, size_t len, uint8_t type, uint8_t flags,
                                     int32_t id)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the first eight bytes in one store */
    uint64_t v = (uint64_t)(len & 0xffffff) << 40 | (uint64_t)type << 32 | (uint64_t)flags << 24 |
                 (uint32_t)id >> 8;

    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
    p[8] = (uint8_t)id;
#else
    p[0] = (uint8_t)(len >> 16);
    p[1] = (uint8_t)(len >> 8);
    p[2] = (uint8_t)len;
    p[3] = type;
    p[4] = flags;
    p[5] = (uint8_t)((uint32_t)id >> 24);
    p[6] = (uint8_t)((uint32_t)id >> 16);
    p[7] = (uint8_t)((uint32_t)id >> 8);
    p[8] = (uint8_t)id;
#endif
}
/* A HEADERS frame of block[0..len) on `id` (END_HEADERS and `flags`). */
void sl__h2_put_headers(struct sl__h2 *h, int32_t id, const uint8_t *block, size_t len,
                        uint8_t flags);
void sl__h2_put_rst(struct sl__h2 *h, int32_t id, uint32_t error);
/* End the session with GOAWAY `error`. */
void sl__h2_terminate(struct sl__h2 *h, uint32_t error);
/* One frame that costs without a call: false once the budget is spent
 * (the session is then ended with ENHANCE_YOUR_CALM). */
bool sl__h2_spend(struct sl__h2 *h);
/* One header field decoded (valid or not): count it in the header list's
 * size and the session's HPACK budget. false once either is overstepped:
 * the session has calmed down (sl__h2_calm) and nothing more is decoded. */
bool sl__h2_count_header(struct sl__h2 *h, size_t namelen, size_t valuelen);
/* The peer made the server decode more than it may: stop reading its
 * input, refuse every stream not handed to the owner or answered, send
 * GOAWAY ENHANCE_YOUR_CALM with the last of those that were, answer them,
 * then end (sl__h2_done). Idempotent. */
void sl__h2_calm(struct sl__h2 *h);

/* ---- h2_stream.c: streams */

/* The open stream `id`, or NULL. */
struct sl__h2_stream *sl__h2_find(struct sl__h2 *h, int32_t id);
/* A new open stream `id`, or NULL (refused: the limits, or no memory). */
struct sl__h2_stream *sl__h2_open(struct sl__h2 *h, int32_t id);
/* Close `s` now: the owner is told (ops->gone) if it holds a stream it
 * did not end, else the object is recycled once the owner gives it back. */
void sl__h2_close(struct sl__h2_stream *s);
/* A stream error: RST_STREAM `error`, and the stream is closed. */
void sl__h2_stream_error(struct sl__h2_stream *s, uint32_t error);
/* Close the streams answered since the last flush (h->closing). */
void sl__h2_close_answered(struct sl__h2 *h);
/* A header field of the block being decoded for `s`; a header block's
 * end (with END_STREAM or not); request DATA (the payload, padding
 * removed). May close or recycle `s`. */
void sl__h2_field(struct sl__h2_stream *s, const uint8_t *name, size_t namelen,
                  const uint8_t *value, size_t valuelen);
void sl__h2_headers_end(struct sl__h2_stream *s, bool end_stream);
/* The call's header state of `s`, to and from the block cache. */
void sl__h2_head_save(const struct sl__h2_stream *s, struct sl__h2_head *head);
void sl__h2_head_load(struct sl__h2_stream *s, const struct sl__h2_head *head);
void sl__h2_data(struct sl__h2_stream *s, const uint8_t *data, size_t len, bool end_stream);
/* The peer's windows grew (or shrank): send what they now allow. */
void sl__h2_pump_all(struct sl__h2 *h);
void sl__h2_pump(struct sl__h2_stream *s);

/* End every stream that is its owner's with `code` (ops->gone). */
void sl__h2_streams_end(struct sl__h2 *h, enum sl__grpc_status code, const char *message);
/* Free every stream object (the session is being freed). */
void sl__h2_streams_free(struct sl__h2 *h);

#endif /* SL_SERVER_H2_INT_H */
