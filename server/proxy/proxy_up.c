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
 * With the upstream's `tls:`, the connection is TLS (tls_client.h does
 * the cryptography): the handshake runs between the TCP connect and the
 * report that it is connected, so the exchange sees a failed handshake as
 * a server that could not be reached; then what is read is decrypted
 * into `in` and what is queued in `out` is encrypted into `wire` as it is
 * flushed. Every buffer is the connection's and reused, as on a clear one.
 *
 * It does not parse HTTP (proxy_resp.c), choose servers or keep the pool
 * (proxy_pool.c), and calls no other file of the room.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "log.h"
#include "metrics.h"
#include "proxy_int.h"
#include "tls_client.h"
#include "xalloc.h"

#define READ_CHUNK 65536

static void on_closed(uv_handle_t *h)
{
    struct sl__proxy_up *up = h->data;
    struct sl__proxy_worker *pw = up->pw;

    sl__buf_free(&up->in);
    sl__buf_free(&up->out);
    sl__buf_free(&up->inflight);
    sl__buf_free(&up->raw);
    sl__buf_free(&up->wire);
    sl__tlsc_free(up->tls);
    free(up);
    pw->ev->up_closed(pw);
}

void sl__proxy_up_close(struct sl__proxy_up *up)
{
    if (up->closing)
        return;
    up->closing = true;
    up->x = NULL;
    if (up->tls != NULL && up->connected && !up->writing) {
        /* close_notify, if the socket takes it now (nothing waits) */
        char alert[128];
        sl__tlsc_close(up->tls);
        size_t n = sl__tlsc_take(up->tls, alert, sizeof(alert));
        if (n > 0 && up->wire.len == 0) {
            uv_buf_t b = uv_buf_init(alert, (unsigned)n);
            (void)uv_try_write((uv_stream_t *)&up->tcp, &b, 1);
        }
    }
    uv_close((uv_handle_t *)&up->tcp, on_closed);
}

/* ------------------------------------------------------------ reading */

/* Room for READ_CHUNK / 4 bytes at least at the end of `b`. */
static void room(struct sl__buf *b)
{
    if (b->cap - b->len < READ_CHUNK / 4) {
        size_t cap = b->cap ? b->cap * 2 : READ_CHUNK;
        while (cap - b->len < READ_CHUNK / 4)
            cap *= 2;
        b->p = sl__xrealloc(b->p, cap);
        b->cap = cap;
    }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct sl__proxy_up *up = h->data;
    struct sl__buf *b = up->tls != NULL ? &up->raw : &up->in;

    (void)hint;
    room(b);
    *buf = uv_buf_init(b->p + b->len, (unsigned)(b->cap - b->len));
}

static void wire_flush(struct sl__proxy_up *up);
static void handshake(struct sl__proxy_up *up, int end);

/* Decrypt what was fed into `in`: bytes added, and *end set to a libuv
 * error when the server closed TLS or broke it. */
static size_t decrypt(struct sl__proxy_up *up, int *end)
{
    size_t added = 0;
    long n;

    for (;;) {
        room(&up->in);
        n = sl__tlsc_read(up->tls, up->in.p + up->in.len, up->in.cap - up->in.len);
        if (n <= 0)
            break;
        up->in.len += (size_t)n;
        added += (size_t)n;
    }
    if (n == -1)
        *end = UV_EOF;
    else if (n == -2)
        *end = UV_EPROTO;
    return added;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct sl__proxy_up *up = s->data;
    size_t added;
    int end = 0;

    (void)buf;
    if (up->closing || nread == 0)
        return;
    if (up->tls == NULL) {
        if (nread > 0)
            up->in.len += (size_t)nread;
        if (up->x == NULL)
            up->pw->ev->idle_heard(up); /* of no further use */
        else if (nread > 0)
            up->pw->ev->up_data(up->x);
        else
            up->pw->ev->up_eof(up->x, (int)nread);
        return;
    }
    if (nread > 0) {
        sl__tlsc_feed(up->tls, up->raw.p, (size_t)nread);
        up->raw.len = 0;
    } else {
        end = (int)nread;
    }
    if (!up->connected) {
        handshake(up, end); /* a TCP end here fails it */
        return;
    }
    added = decrypt(up, &end);
    if (nread < 0)
        end = (int)nread;
    wire_flush(up); /* what reading made TLS answer (a key update) */
    if (up->closing)
        return;
    if (up->x == NULL) {
        if (added > 0 || end != 0)
            up->pw->ev->idle_heard(up); /* a session ticket alone is not heard */
        return;
    }
    if (added > 0) {
        up->pw->ev->up_data(up->x);
        if (up->closing || up->x == NULL)
            return;
    }
    if (end != 0)
        up->pw->ev->up_eof(up->x, end);
}

void sl__proxy_up_read(struct sl__proxy_up *up, bool on)
{
    if (up->closing || !up->tcp_up || up->reading == on)
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
    return up->out.len + up->wire.len + up->inflight.len;
}

static void on_written(uv_write_t *req, int status)
{
    struct sl__proxy_up *up = req->data;

    up->writing = false;
    up->inflight.len = 0;
    if (up->closing)
        return;
    if (status < 0) {
        if (up->x != NULL && up->connected)
            up->pw->ev->up_eof(up->x, status);
        else if (up->x != NULL) /* during the handshake: seen by the read side */
            return;
        else
            sl__proxy_up_close(up);
        return;
    }
    if (!up->connected) { /* the handshake's bytes */
        wire_flush(up);
        return;
    }
    sl__proxy_up_flush(up);
    if (!up->closing && !up->writing && up->out.len == 0 && up->x != NULL)
        up->pw->ev->up_drained(up->x);
}

/* Write what waits for the socket: `out` on a clear connection, `wire`
 * (ciphertext) with TLS. */
static void wire_flush(struct sl__proxy_up *up)
{
    struct sl__buf *w = up->tls != NULL ? &up->wire : &up->out;
    uv_buf_t b;
    int n;

    if (!up->tcp_up || up->writing || up->closing)
        return;
    if (up->tls != NULL) {
        size_t p;
        while ((p = sl__tlsc_pending(up->tls)) > 0)
            w->len += sl__tlsc_take(up->tls, sl__buf_room(w, p), p);
    }
    if (w->len == 0)
        return;
    b = uv_buf_init(w->p, (unsigned)w->len);
    n = uv_try_write((uv_stream_t *)&up->tcp, &b, 1);
    if (n > 0) {
        memmove(w->p, w->p + n, w->len - (size_t)n);
        w->len -= (size_t)n;
    } else if (n < 0 && n != UV_EAGAIN) {
        /* Not reported from here (the caller may be the exchange itself):
         * the read side sees the broken connection, or the tick a timeout. */
        w->len = 0;
        return;
    }
    if (w->len == 0)
        return;
    struct sl__buf t = up->inflight;
    up->inflight = *w;
    *w = t;
    w->len = 0;
    b = uv_buf_init(up->inflight.p, (unsigned)up->inflight.len);
    up->wreq.data = up;
    up->writing = true;
    if (uv_write(&up->wreq, (uv_stream_t *)&up->tcp, &b, 1, on_written) != 0) {
        up->writing = false; /* as above: reported by the read side or the tick */
        up->inflight.len = 0;
    }
}

void sl__proxy_up_flush(struct sl__proxy_up *up)
{
    if (!up->connected || up->writing || up->closing || up->out.len == 0)
        return;
    if (up->tls != NULL) {
        if (sl__tlsc_write(up->tls, up->out.p, up->out.len) != 0) {
            up->out.len = 0; /* as a failed write: seen by the read side */
            return;
        }
        up->out.len = 0;
    }
    wire_flush(up);
}

/* ------------------------------------------------------------ connecting */

static void count(struct sl__proxy_up *up, enum sl__conn_event e)
{
    if (up->pw->metrics != NULL)
        sl__metrics_conn_event(up->pw->metrics, up->pw->wid, e, 1);
}

/* The handshake failed: counted, and reported as a connection that could
 * not be made (the exchange tries the next server, or answers 502). */
static void tls_failed(struct sl__proxy_up *up, enum sl__tlsc_fail why)
{
    static const enum sl__conn_event ev[] = {
        [SL__TLSC_FAIL_VERIFY] = SL__CONN_EV_UP_TLS_VERIFY,
        [SL__TLSC_FAIL_NAME] = SL__CONN_EV_UP_TLS_NAME,
        [SL__TLSC_FAIL_HANDSHAKE] = SL__CONN_EV_UP_TLS_HANDSHAKE,
        [SL__TLSC_FAIL_OTHER] = SL__CONN_EV_UP_TLS_OTHER,
    };
    static const char *const names[] = {
        [SL__TLSC_FAIL_VERIFY] = "certificate not verified",
        [SL__TLSC_FAIL_NAME] = "certificate not for this name",
        [SL__TLSC_FAIL_HANDSHAKE] = "handshake failed",
        [SL__TLSC_FAIL_OTHER] = "connection lost during the handshake",
    };

    count(up, ev[why]);
    sl__dbg("proxy.upstream_tls_failed", "proxy: TLS to %s: %s", up->peer->srv->name, names[why]);
    if (up->x == NULL) {
        sl__proxy_up_close(up);
        return;
    }
    up->pw->ev->up_connected(up->x, UV_EPROTO);
}

/* Drive the handshake with what was read (`end`: the TCP connection
 * ended, a libuv error); report once it is done. */
static void handshake(struct sl__proxy_up *up, int end)
{
    enum sl__tlsc_fail why = SL__TLSC_FAIL_OTHER;
    int r = sl__tlsc_handshake(up->tls, &why);

    wire_flush(up); /* ClientHello, Finished, or an alert */
    if (up->closing)
        return;
    if (r < 0) {
        tls_failed(up, why);
        return;
    }
    if (r == 0) {
        if (end != 0) /* the server left mid-handshake */
            tls_failed(up, SL__TLSC_FAIL_OTHER);
        return;
    }
    count(up, SL__CONN_EV_UP_TLS_HANDSHAKES);
    if (sl__tlsc_resumed(up->tls))
        count(up, SL__CONN_EV_UP_TLS_RESUMED);
    up->connected = true;
    if (up->x == NULL) {
        sl__proxy_up_close(up);
        return;
    }
    up->pw->ev->up_connected(up->x, 0);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct sl__proxy_up *up = req->data;

    if (up->closing)
        return;
    if (status == 0) {
        up->tcp_up = true;
        uv_tcp_nodelay(&up->tcp, 1);
    }
    if (up->x == NULL) {
        sl__proxy_up_close(up);
        return;
    }
    if (status == 0 && up->peer->up->tls != NULL) {
        up->tls = sl__tlsc_new(up->peer->up->tls->cc, up->peer->srv->host, &up->peer->tls_session);
        if (up->tls == NULL) {
            tls_failed(up, SL__TLSC_FAIL_OTHER);
            return;
        }
        sl__proxy_up_read(up, true);
        handshake(up, 0);
        return;
    }
    up->connected = status == 0;
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
