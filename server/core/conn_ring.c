/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * conn_ring.c - the connection's byte stream through the worker's io_uring
 * (ring.c; conn_io.h): one receive armed at a time, into the ring's pool
 * buffers and copied into the room the layer above gives, armed again while
 * reading is wanted; one send at a time, sent again for what the kernel did
 * not take. Every operation of the iteration goes to the kernel in the one
 * system call that ends it.
 *
 * The socket stays owned by the libuv handle (its accept, shut-down and
 * close: conn_uv.c). The connection is freed only after the last completion
 * of its operations (c->rops, up->idle). It does not buffer, time or parse
 * anything (conn.c does).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "conn_io.h"
#include "worker-t.h"

static bool closing(const struct sl__conn *c)
{
    return (c->flags & (SL__CONN_HANDLE_GONE | SL__CONN_CLOSE_BEGUN)) != 0;
}

static int read_start(struct sl__conn *c);

/* A receive brought bytes (from the ring's buffer, copied into the room
 * above), the peer's EOF, or failed (-ENOBUFS: the pool was empty;
 * -ECANCELED: the close); the next one is armed while reading is wanted. */
static void recv_done(struct sl__ring_op *op, int res, const char *data, size_t len)
{
    struct sl__conn *c = (struct sl__conn *)((char *)op - offsetof(struct sl__conn, rrecv));
    char *p;
    size_t room;

    c->rarmed = false;
    c->rops--;
    if (closing(c)) {
        c->up->idle(c);
        return;
    }
    if (res > 0) {
        if (!c->up->rx_room(c, &p, &room) || room < len) {
            c->up->rx(c, SL__CONN_RX_NOBUFS);
        } else {
            memcpy(p, data, len);
            c->up->rx(c, (ssize_t)len);
        }
    } else if (res == 0) {
        c->up->rx(c, SL__CONN_RX_EOF);
    } else if (res != -ENOBUFS && res != -ECANCELED) {
        c->up->rx(c, res);
    }
    if (closing(c)) {
        c->up->idle(c);
        return;
    }
    if (!c->rarmed && c->rwant) /* the next receive (or again, when the pool was empty) */
        read_start(c);
}

/* A send completed: what the kernel did not take goes again, or the send
 * is done. */
static void send_done(struct sl__ring_op *op, int res, const char *data, size_t len)
{
    struct sl__conn *c = (struct sl__conn *)((char *)op - offsetof(struct sl__conn, rsend));

    (void)data, (void)len;
    c->rops--;
    if (closing(c)) { /* cancelled by the close, or done: nothing more goes */
        c->rsending = false;
        c->up->idle(c);
        return;
    }
    if (res > 0 && c->rsent + (size_t)res < c->rsend_len) {
        c->rsent += (size_t)res;
        c->rops++;
        sl__ring_send(c->w->ring, &c->rsend, c->fd, c->rsend_p + c->rsent, c->rsend_len - c->rsent);
        return;
    }
    c->rsending = false;
    c->up->tx_done(c, res > 0 ? 0 : res < 0 ? res : UV_EIO);
}

static int open_ring(struct sl__conn *c)
{
    uv_os_fd_t fd;

    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0)
        return UV_EBADF;
    c->fd = fd;
    c->rrecv.done = recv_done;
    c->rsend.done = send_done;
    return 0;
}

static int read_start(struct sl__conn *c)
{
    c->rwant = true;
    if (!c->rarmed) {
        c->rarmed = true;
        c->rops++;
        sl__ring_recv(c->w->ring, &c->rrecv, c->fd);
    }
    return 0;
}

/* The receive armed now is not armed again: it brings at most one pool
 * buffer (16 KiB), kept by the layer above, so a held stream (the proxy's
 * upload) reads no further ahead than that. */
static void read_stop(struct sl__conn *c)
{
    c->rwant = false;
}

/* Nothing goes at once: the send joins the iteration's system call. */
static int write_never(struct sl__conn *c, const char *p, size_t len, size_t *took)
{
    (void)c, (void)p, (void)len;
    *took = 0;
    return 0;
}

static int send_ring(struct sl__conn *c, const char *p, size_t len)
{
    c->rsend_p = p;
    c->rsend_len = len;
    c->rsent = 0;
    c->rsending = true;
    c->rops++;
    sl__ring_send(c->w->ring, &c->rsend, c->fd, p, len);
    return 0;
}

/* The operations end, then the memory goes (up->idle). */
static void close_ring(struct sl__conn *c)
{
    if (c->flags & SL__CONN_CLOSE_BEGUN)
        return;
    read_stop(c);
    if (c->rarmed || c->rsending) /* they name the descriptor uv_close closes now */
        sl__ring_fd_closing(c->w->ring, c->fd);
    if (c->rarmed)
        sl__ring_cancel(c->w->ring, &c->rrecv);
    if (c->rsending)
        sl__ring_cancel(c->w->ring, &c->rsend);
    sl__conn_uv_close(c);
}

const struct sl__conn_io sl__conn_io_ring = {
    .name = "io_uring",
    .open = open_ring,
    .read_start = read_start,
    .read_stop = read_stop,
    .write = write_never,
    .send = send_ring,
    .shutdown = sl__conn_uv_shutdown,
    .close = close_ring,
};
