/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * conn_io.h - the connection's byte stream: the one interface between the
 * connection core (conn.c: buffers, reply slots, budgets, protocols,
 * timeouts) and what moves its bytes (internal).
 *
 * Two directions, two tables of functions, both per connection:
 * - down (`c->io`, struct sl__conn_io): what the core asks of the stream -
 *   read or stop reading, write bytes now if the socket takes them, send
 *   bytes in the background, shut the write side, close;
 * - up (`c->up`, struct sl__conn_up): what the stream tells the layer above
 *   it - here is room to read into? these bytes arrived (or EOF, or an
 *   error); a send completed; the stream is closed; an operation ended.
 * The back-ends implement `down` over the socket: libuv's stream calls
 * (conn_uv.c) or the worker's io_uring (conn_ring.c). The core implements
 * `up` (conn.c, sl__conn_up_core).
 *
 * A transform - TLS (conn_tls.c) - sits between them once, for both
 * back-ends, without touching a protocol: it is a `down` table whose
 * functions work on its own buffers and call the back-end's table it
 * keeps (`lower`), and an `up` table the back-end calls, which turns what
 * arrived into plaintext for the core's `up` functions. Reads: the
 * back-end asks the transform's rx_room for room (ciphertext), the
 * transform's rx decrypts into the room the core's rx_room gives, then
 * calls the core's rx. Writes: the core's bytes go to the transform's
 * write/send, which encrypt and hand the ciphertext to the lower send; the
 * lower tx_done becomes the core's tx_done once the plaintext it carried
 * is gone. Shut-down sends the transform's close first. Installing it is
 * setting c->io and c->up at accept (docs/architecture.md).
 *
 * Rules for every implementation: callbacks up run on the worker's loop,
 * never inside the down call that caused them; memory handed to send stays
 * the caller's and untouched until tx_done; after close, no up call but
 * `closed` and `idle` comes. A back-end's own completions that need the
 * stream again (the shut-down's, to keep reading) call c->io, the top of
 * the stack, not their own functions.
 */
#ifndef SL_SERVER_CONN_IO_H
#define SL_SERVER_CONN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conn-t.h"

/* Read results of `rx`, besides a byte count > 0 (libuv's codes). */
#define SL__CONN_RX_EOF    UV_EOF     /* the peer half-closed */
#define SL__CONN_RX_NOBUFS UV_ENOBUFS /* rx_room refused: the buffer budget */

struct sl__conn_io {
    const char *name;
    /* The accepted socket (c->tcp) is ready: set up what the back-end
     * needs. 0 or a negative code (the connection is aborted). */
    int (*open)(struct sl__conn *c);
    /* Deliver what arrives through up->rx_room and up->rx, until stopped.
     * 0 or a negative code. */
    int (*read_start)(struct sl__conn *c);
    /* Stop reading. A back-end may still deliver what a read already under
     * way brings (at most one read's worth: 16 KiB). */
    void (*read_stop)(struct sl__conn *c);
    /* Write what the socket takes of [p, p + len) now, without waiting:
     * *took bytes (0 when it would block). 0, or a negative code (the
     * connection is aborted). A back-end that never writes at once sets
     * *took to 0. */
    int (*write)(struct sl__conn *c, const char *p, size_t len, size_t *took);
    /* Send all of [p, p + len) in the background (one send at a time);
     * up->tx_done(status) when it is all gone or failed. 0 or a negative
     * code (not started: no tx_done). */
    int (*send)(struct sl__conn *c, const char *p, size_t len);
    /* Shut the write side (after the last send completed); keep reading
     * (the lingering close). 0, or a negative code: close instead. */
    int (*shutdown)(struct sl__conn *c);
    /* Cancel what runs and close the socket; up->closed follows, and up->idle
     * for each operation that ends after it. */
    void (*close)(struct sl__conn *c);
    /* Free what the stream holds (c->stream), just before the connection's
     * memory goes. May be NULL (the back-ends hold nothing of their own). */
    void (*release)(struct sl__conn *c);
};

struct sl__conn_up {
    /* Room for the next read: *p and *room; false when the budget refuses
     * (the back-end reports SL__CONN_RX_NOBUFS through rx). */
    bool (*rx_room)(struct sl__conn *c, char **p, size_t *room);
    /* A read's result: bytes appended to the room (> 0), SL__CONN_RX_EOF,
     * SL__CONN_RX_NOBUFS, or another negative code (the peer is gone). */
    void (*rx)(struct sl__conn *c, ssize_t nread);
    /* The background send completed: 0, or a negative code. */
    void (*tx_done)(struct sl__conn *c, int status);
    /* The socket is closed. */
    void (*closed)(struct sl__conn *c);
    /* An operation of the back-end ended after the close began: the memory
     * may be freed once none is left (c->rops). */
    void (*idle)(struct sl__conn *c);
};

extern const struct sl__conn_io sl__conn_io_uv;   /* conn_uv.c */
extern const struct sl__conn_io sl__conn_io_ring; /* conn_ring.c */
extern const struct sl__conn_up sl__conn_up_core; /* conn.c */

/* Shared by the back-ends (conn_uv.c): both own the socket through the
 * libuv handle c->tcp, for its shut-down and its close. */
int sl__conn_uv_shutdown(struct sl__conn *c);
void sl__conn_uv_close(struct sl__conn *c);

#endif /* SL_SERVER_CONN_IO_H */
