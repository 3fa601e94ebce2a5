/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * conn-t.h - the types of one client connection (internal).
 *
 * A connection owns its buffers, reused for its whole life: `in` holds the
 * bytes read and not yet consumed by the protocol; `out` the replies ready
 * to send; `inflight` the bytes libuv is writing (swapped with `out` when a
 * write completes, so neither is touched while libuv reads it); `held` the
 * replies that wait behind a reserved reply slot, and `slotdata` the
 * replies of slots filled out of order. Nothing is allocated per request
 * once the buffers have grown to the connection's working size.
 */
#ifndef SL_SERVER_CONN_T_H
#define SL_SERVER_CONN_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "config-t.h" /* struct sl__listener: protocols read c->ls->max_frame_bytes */
#include "ring.h"

struct sl__worker;
struct sl__listener;
struct sl__proto;
struct sl__conn_io;
struct sl__conn_up;

/* A growable byte buffer; `p` is NULL until the first append. */
struct sl__buf {
    char *p;
    size_t len; /* bytes used */
    size_t cap; /* bytes allocated */
};

/* A place in the output stream reserved for a reply that comes later. */
struct sl__slot {
    size_t held_off; /* bytes of `held` written before this slot */
    size_t data_off; /* filled out of order: the reply in `slotdata` */
    size_t data_len;
    bool filled;
};

/* Reply slots a connection may have reserved at once; beyond this the
 * protocol stops consuming (sl__conn_slot_reserve fails) until some fill. */
#define SL__CONN_MAX_SLOTS 256u

enum sl__conn_flag {
    SL__CONN_CLOSING = 1u << 0,     /* close once `out` is flushed */
    SL__CONN_PAUSED = 1u << 1,      /* reading stopped for back-pressure */
    SL__CONN_HANDLE_GONE = 1u << 2, /* uv_close() finished */
    SL__CONN_PEER_GONE = 1u << 3,   /* EOF or error: nothing more to send */
    SL__CONN_IN_READ = 1u << 4,     /* inside the protocol's on_read */
    SL__CONN_EOF = 1u << 5,         /* the peer half-closed: it sends nothing more */
    SL__CONN_LINGER = 1u << 6,      /* shut down for writing, draining input */
    SL__CONN_HELD = 1u << 7,        /* the protocol stopped reading (sl__conn_hold) */
    SL__CONN_BUSY = 1u << 8,        /* a request in flight: the protocol's timeouts */
    SL__CONN_WANT_SENT = 1u << 9,   /* call on_sent once the output is written */
    SL__CONN_PARTIAL = 1u << 10,  /* the protocol holds an incomplete request (sl__conn_partial) */
    SL__CONN_DRAINING = 1u << 11, /* asked to end gracefully (sl__conn_drain) */
    SL__CONN_CLOSE_BEGUN = 1u << 12, /* the stream's close began (conn_io.h: close) */
};

/* A buffer larger than this is given back once the frame that needed it is
 * done, and only a buffer growing past it draws on server.max_buffer_bytes. */
#define SL__CONN_SMALL_BYTES (64u << 10)

/* A closing connection with its read side open drains input this long
 * after shutdown(SHUT_WR) before it closes (see conn.c: lingering close). */
#define SL__CONN_LINGER_MS 2000

struct sl__conn {
    uv_tcp_t tcp; /* tcp.data points back here */
    /* The byte stream (conn_io.h): what moves the bytes (down), and what
     * it reports to (up): a back-end and the core, or a transform between
     * them. */
    const struct sl__conn_io *io;
    const struct sl__conn_up *up;
    void *stream;         /* the transform's state (conn_tls.c), NULL without one */
    int64_t stream_bytes; /* its memory, counted in the buffer budget (sl__conn_stream_bytes) */
    struct sl__worker *w;
    const struct sl__listener *ls;
    const struct sl__proto *proto; /* NULL until sniffed */
    void *proto_state;             /* the protocol's, freed in on_close */

    struct sl__buf in, out, inflight, held, slotdata;
    struct sl__slot *slots; /* ring of SL__CONN_MAX_SLOTS, allocated lazily */
    unsigned slot_head;     /* oldest reserved slot */
    unsigned slot_n;        /* slots reserved and not yet released */
    uint64_t slot_seq;      /* id of the next slot to reserve */
    size_t held_done;       /* bytes of `held` already moved to `out` */
    void *ops;              /* the protocol's operations, one per slot (sl__conn_op_reserve) */
    size_t op_size;         /* bytes per operation in `ops` */
    unsigned pins;          /* answers owed outside the ordered stream (sl__conn_pin) */
    unsigned streams;       /* long-lived calls open (sl__conn_streams): not idle */

    uv_write_t wreq;
    uv_shutdown_t sreq;      /* the lingering close's shutdown(SHUT_WR) */
    int64_t linger_until_ms; /* loop time a lingering close gives up draining */
    bool writing;
    unsigned flags;           /* enum sl__conn_flag */
    int64_t last_read_ms;     /* loop time of the last read */
    int64_t partial_since_ms; /* loop time an incomplete frame began, -1 none */
    int64_t accepted_ms;      /* loop time of accept (server.header_timeout) */
    int64_t stalled_since_ms; /* loop time output began to wait without progress, -1 none */
    int64_t accounted;        /* buffer bytes counted in the server's budget */
    int64_t proto_bytes;      /* the protocol's own buffers (sl__conn_budget) */
    uint64_t ip_hash;         /* the peer address's slot (server.max_connections_per_ip) */
    bool got_bytes;           /* the peer has sent something */
    bool ip_counted;          /* ip_hash holds one of the per-address counts */

    struct sl__conn *prev, *next; /* the worker's list */
    /* Replies that came outside a read (a store's callback), written once
     * at the end of the loop iteration: the worker's `dirty` list. */
    struct sl__conn *dprev, *dnext;
    bool dirty;

    /* The io_uring back-end's (conn_ring.c): its operations on the
     * socket, which `tcp` still owns (its shutdown and its close). The
     * connection is freed only after the last completion of its
     * operations. */
    int fd;
    struct sl__ring_op rrecv, rsend;
    unsigned rops;       /* operations outstanding */
    const char *rsend_p; /* the send under way: its bytes, */
    size_t rsend_len;    /* their length, */
    size_t rsent;        /* and how many the kernel took so far */
    bool rarmed;         /* a receive is armed */
    bool rwant;          /* reading is wanted: arm again when the receive ends */
    bool rsending;       /* a send is under way */
};

#endif /* SL_SERVER_CONN_T_H */
