/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * conn_uv.c - the connection's byte stream over libuv's stream calls on
 * the socket (conn_io.h): uv_read_start into the room the layer above
 * gives, a direct write first (most replies fit the socket buffer), then
 * uv_write for the rest; and, for both back-ends (the io_uring one owns
 * the socket through the same libuv handle), the shut-down of the write
 * side and the close.
 *
 * It does not buffer, time or parse anything (conn.c does).
 */
#include "conn_io.h"

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct sl__conn *c = h->data;
    char *p;
    size_t room;

    (void)hint;
    if (!c->up->rx_room(c, &p, &room)) {
        *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS to on_read */
        return;
    }
    *buf = uv_buf_init(p, (unsigned)room);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct sl__conn *c = s->data;

    (void)buf;
    c->up->rx(c, nread);
}

static int open_uv(struct sl__conn *c)
{
    (void)c;
    return 0;
}

static int read_start(struct sl__conn *c)
{
    return uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void read_stop(struct sl__conn *c)
{
    uv_read_stop((uv_stream_t *)&c->tcp);
}

static int write_now(struct sl__conn *c, const char *p, size_t len, size_t *took)
{
    uv_buf_t b = uv_buf_init((char *)p, (unsigned)len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);

    *took = n > 0 ? (size_t)n : 0;
    return n < 0 && n != UV_EAGAIN ? n : 0;
}

static void on_written(uv_write_t *req, int status)
{
    struct sl__conn *c = req->data;

    c->up->tx_done(c, status);
}

static int send_uv(struct sl__conn *c, const char *p, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)p, (unsigned)len);

    c->wreq.data = c;
    return uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_written);
}

/* The write side is shut: keep reading (the lingering close) through the
 * top of the stack, or close. */
static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct sl__conn *c = req->data;

    if (status < 0 || c->io->read_start(c) != 0)
        c->io->close(c);
}

int sl__conn_uv_shutdown(struct sl__conn *c)
{
    c->sreq.data = c;
    return uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown);
}

static void on_closed(uv_handle_t *h)
{
    struct sl__conn *c = h->data;

    c->up->closed(c);
}

void sl__conn_uv_close(struct sl__conn *c)
{
    if (c->flags & SL__CONN_CLOSE_BEGUN)
        return;
    c->flags |= SL__CONN_CLOSE_BEGUN;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

const struct sl__conn_io sl__conn_io_uv = {
    .name = "libuv",
    .open = open_uv,
    .read_start = read_start,
    .read_stop = read_stop,
    .write = write_now,
    .send = send_uv,
    .shutdown = sl__conn_uv_shutdown,
    .close = sl__conn_uv_close,
};
