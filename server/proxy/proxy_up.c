/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_up.c - one connection to an upstream server: connecting, writing
 * what the exchange queues (the syscall tried at once, the rest handed to
 * libuv from a second buffer, as the core's client connections do),
 * reading into a reused buffer, and reporting what happened as events of
 * the state machine (pw->ev, proxy-t.h): connected, data, EOF or error,
 * drained for the exchange using it; for an idle pooled connection,
 * that it read anything (the server closing it, or bytes nobody asked
 * for); that its handle closed.
 *
 * It does not parse HTTP (proxy_resp.c), choose servers or keep the pool
 * (proxy_pool.c), and calls no other file of the room.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "log.h"
#include "proxy_int.h"
#include "xalloc.h"

#define READ_CHUNK 65536

static void on_closed(uv_handle_t *h)
{
    struct sl__proxy_up *up = h->data;
    struct sl__proxy_worker *pw = up->pw;

    sl__buf_free(&up->in);
    sl__buf_free(&up->out);
    sl__buf_free(&up->inflight);
    free(up);
    pw->ev->up_closed(pw);
}

void sl__proxy_up_close(struct sl__proxy_up *up)
{
    if (up->closing)
        return;
    up->closing = true;
    up->x = NULL;
    uv_close((uv_handle_t *)&up->tcp, on_closed);
}

/* ------------------------------------------------------------ reading */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct sl__proxy_up *up = h->data;

    if (up->in.cap - up->in.len < READ_CHUNK / 4) {
        size_t cap = up->in.cap ? up->in.cap * 2 : READ_CHUNK;
        while (cap - up->in.len < READ_CHUNK / 4)
            cap *= 2;
        up->in.p = sl__xrealloc(up->in.p, cap);
        up->in.cap = cap;
    }
    *buf = uv_buf_init(up->in.p + up->in.len, (unsigned)(up->in.cap - up->in.len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct sl__proxy_up *up = s->data;

    if (up->closing || nread == 0)
        return;
    if (nread > 0)
        up->in.len += (size_t)nread;
    if (up->x == NULL)
        up->pw->ev->idle_heard(up); /* of no further use */
    else if (nread > 0)
        up->pw->ev->up_data(up->x);
    else
        up->pw->ev->up_eof(up->x, (int)nread);
}

void sl__proxy_up_read(struct sl__proxy_up *up, bool on)
{
    if (up->closing || !up->connected || up->reading == on)
        return;
    up->reading = on;
    if (on && uv_read_start((uv_stream_t *)&up->tcp, on_alloc, on_read) != 0)
        up->reading = false;
    else if (!on)
        uv_read_stop((uv_stream_t *)&up->tcp);
}

/* ------------------------------------------------------------ writing */

void sl__proxy_up_queue(struct sl__proxy_up *up, const void *p, size_t n)
{
    sl__buf_append(&up->out, p, n);
}

size_t sl__proxy_up_pending(const struct sl__proxy_up *up)
{
    return up->out.len + up->inflight.len;
}

static void on_written(uv_write_t *req, int status)
{
    struct sl__proxy_up *up = req->data;

    up->writing = false;
    up->inflight.len = 0;
    if (up->closing)
        return;
    if (status < 0) {
        if (up->x != NULL)
            up->pw->ev->up_eof(up->x, status);
        else
            sl__proxy_up_close(up);
        return;
    }
    sl__proxy_up_flush(up);
    if (!up->closing && !up->writing && up->out.len == 0 && up->x != NULL)
        up->pw->ev->up_drained(up->x);
}

void sl__proxy_up_flush(struct sl__proxy_up *up)
{
    uv_buf_t b;
    int n;

    if (!up->connected || up->writing || up->closing || up->out.len == 0)
        return;
    b = uv_buf_init(up->out.p, (unsigned)up->out.len);
    n = uv_try_write((uv_stream_t *)&up->tcp, &b, 1);
    if (n > 0) {
        memmove(up->out.p, up->out.p + n, up->out.len - (size_t)n);
        up->out.len -= (size_t)n;
    } else if (n < 0 && n != UV_EAGAIN) {
        /* Not reported from here (the caller may be the exchange itself):
         * the read side sees the broken connection, or the tick a timeout. */
        up->out.len = 0;
        return;
    }
    if (up->out.len == 0)
        return;
    struct sl__buf t = up->inflight;
    up->inflight = up->out;
    up->out = t;
    up->out.len = 0;
    b = uv_buf_init(up->inflight.p, (unsigned)up->inflight.len);
    up->wreq.data = up;
    up->writing = true;
    if (uv_write(&up->wreq, (uv_stream_t *)&up->tcp, &b, 1, on_written) != 0) {
        up->writing = false; /* as above: reported by the read side or the tick */
        up->inflight.len = 0;
    }
}

/* ------------------------------------------------------------ connecting */

static void on_connect(uv_connect_t *req, int status)
{
    struct sl__proxy_up *up = req->data;

    if (up->closing)
        return;
    if (status == 0) {
        up->connected = true;
        uv_tcp_nodelay(&up->tcp, 1);
    }
    if (up->x == NULL) {
        sl__proxy_up_close(up);
        return;
    }
    up->pw->ev->up_connected(up->x, status);
}

struct sl__proxy_up *sl__proxy_up_connect(struct sl__proxy_worker *pw, struct sl__proxy_peer *peer,
                                          struct sl__proxy_x *x)
{
    struct sl__proxy_up *up = sl__xzalloc(sizeof(*up));
    int r;

    up->pw = pw;
    up->peer = peer;
    up->x = x;
    uv_tcp_init(pw->loop, &up->tcp);
    up->tcp.data = up;
    pw->n_ups++;
    up->creq.data = up;
    r = uv_tcp_connect(&up->creq, &up->tcp, (const struct sockaddr *)&peer->srv->addr, on_connect);
    if (r != 0) {
        sl__dbg("proxy.connect_failed", "proxy: connect to %s: %s", peer->srv->name,
                uv_strerror(r));
        sl__proxy_up_close(up);
        return NULL;
    }
    return up;
}
