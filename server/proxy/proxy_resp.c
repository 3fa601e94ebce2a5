/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * proxy_resp.c - an upstream's response on its way to the client: its
 * head parsed strictly (a broken one is a 502 and both connections
 * close), rewritten (proxy_head.c) and written; its body forwarded as it
 * arrives, decoded and re-chunked when chunked (or sent until close to an
 * HTTP/1.0 client); interim 1xx responses dropped (the proxy answers
 * Expect itself); a 101 to an upgrade request turns the exchange into a
 * tunnel. While the client has SL__PROXY_HIGH bytes to read, the upstream
 * is not read.
 *
 * It does not choose servers or retry (proxy.c).
 */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "proxy_int.h"

static int64_t now_ms(const struct sl__proxy_x *x)
{
    return (int64_t)uv_now(x->pw->loop);
}

/* Drop the first n bytes the upstream sent. */
static void consume(struct sl__proxy_up *up, size_t n)
{
    memmove(up->in.p, up->in.p + n, up->in.len - n);
    up->in.len -= n;
}

static void out(struct sl__proxy_x *x, const void *p, size_t n)
{
    sl__conn_write(x->c, p, n);
}

/* A bad response: 502 while nothing went to the client, and both close. */
static int bad_gateway(struct sl__proxy_x *x, const char *why)
{
    x->close_after = true;
    sl__proxy_answer(x, 502, why);
    return -1;
}

static void start_tunnel(struct sl__proxy_x *x, size_t head_len)
{
    x->phase = SL__PX_TUNNEL;
    x->acc.status = 101;
    x->resp_started = x->resp_head_done = true;
    consume(x->up, head_len);
    x->up_reusable = false;
    /* The tunnel ends with either side's close, which the core must see:
     * not busy, so the client's EOF closes it (and on_close the upstream). */
    sl__conn_set_busy(x->c, false);
}

/* The final response's framing on both sides, and its head written. */
static void final_head(struct sl__proxy_x *x, size_t head_len)
{
    const struct sl__proxy_head *h = &x->h;
    struct sl__proxy_rfwd f = {.via = x->pw->cfg->via, .extra = x->resp_hdrs};
    bool no_body = x->head_method || h->status == 204 || h->status == 304;

    x->acc.status = h->status;
    x->acc.up_head_ms = now_ms(x);
    if (no_body) {
        x->resp_framing = SL__PF_NONE;
    } else if (h->flags & SL__PH_CHUNKED) {
        x->resp_framing = SL__PF_CHUNKED;
        sl__proxy_chunk_init(&x->resp_chunk);
    } else if (h->flags & SL__PH_CL) {
        x->resp_framing = SL__PF_LENGTH;
        x->resp_left = h->content_length;
    } else {
        x->resp_framing = SL__PF_CLOSE;
    }
    x->up_reusable = x->resp_framing != SL__PF_CLOSE && !(h->flags & SL__PH_CONN_CLOSE) &&
                     (h->minor == 1 || (h->flags & SL__PH_CONN_KEEP));
    f.keep_length = no_body && (h->flags & SL__PH_CL);
    f.framing = x->resp_framing;
    f.length = x->resp_left;
    if (x->resp_framing == SL__PF_CHUNKED && x->acc.minor == 0)
        f.framing = SL__PF_CLOSE; /* an HTTP/1.0 client reads until close */
    x->resp_chunked_out = f.framing == SL__PF_CHUNKED;
    if (f.framing == SL__PF_CLOSE)
        x->close_after = true;
    x->close_after = x->close_after || !x->keep_alive || !x->req_done;
    f.close = x->close_after;
    f.keep_alive10 = !x->close_after && x->acc.minor == 0;
    x->pw->scratch.len = 0;
    sl__proxy_resp_head(&x->pw->scratch, h, &f);
    out(x, x->pw->scratch.p, x->pw->scratch.len);
    x->resp_started = x->resp_head_done = true;
    consume(x->up, head_len);
    if (x->resp_framing == SL__PF_NONE || (x->resp_framing == SL__PF_LENGTH && x->resp_left == 0))
        x->resp_done = true;
}

/* 1 a head was taken, 0 more bytes are needed, -1 the exchange ended. */
static int take_head(struct sl__proxy_x *x)
{
    struct sl__proxy_up *up = x->up;
    struct sl__proxy_err e;
    ssize_t r = sl__proxy_parse_response(up->in.p, up->in.len, SL__PROXY_MAX_HEAD, &x->h, &e);

    if (r == -2)
        return 0;
    if (r < 0)
        return bad_gateway(x, "invalid response from the upstream server");
    if (x->h.status == 101) {
        struct sl__proxy_rfwd f = {.via = x->pw->cfg->via, .upgrade = true};
        if (!x->upgrade || !(x->h.flags & SL__PH_UPGRADE))
            return bad_gateway(x, "the upstream switched protocols unasked");
        if (!sl__proxy_upgrade_allowed(x->h.upgrade, x->route->upgrades, x->route->n_upgrades))
            return bad_gateway(x, "the upstream switched to a protocol this route does not "
                                  "tunnel");
        x->pw->scratch.len = 0;
        sl__proxy_resp_head(&x->pw->scratch, &x->h, &f);
        out(x, x->pw->scratch.p, x->pw->scratch.len);
        start_tunnel(x, (size_t)r);
        return 1;
    }
    if (x->h.status < 200) { /* 100, 102, 103: this hop answered Expect itself */
        consume(up, (size_t)r);
        return 1;
    }
    final_head(x, (size_t)r);
    return 1;
}

static void chunk_out(struct sl__proxy_x *x, const char *d, size_t n)
{
    char line[24];
    int k;

    if (!x->resp_chunked_out) {
        out(x, d, n);
        return;
    }
    k = snprintf(line, sizeof(line), "%zx\r\n", n);
    out(x, line, (size_t)k);
    out(x, d, n);
    out(x, "\r\n", 2);
}

/* Forward body bytes; 0 when more are needed, -1 the exchange ended. */
static int take_body(struct sl__proxy_x *x)
{
    struct sl__proxy_up *up = x->up;
    size_t avail = up->in.len, used = 0;
    const char *d;
    size_t dl;

    if (x->resp_framing == SL__PF_LENGTH) {
        used = avail < x->resp_left ? avail : (size_t)x->resp_left;
        out(x, up->in.p, used);
        x->resp_left -= used;
        x->resp_done = x->resp_left == 0;
    } else if (x->resp_framing == SL__PF_CLOSE) {
        used = avail;
        out(x, up->in.p, used);
    } else if (x->resp_framing == SL__PF_CHUNKED) {
        while (used < avail && !x->resp_done) {
            ssize_t k =
                sl__proxy_chunk_step(&x->resp_chunk, up->in.p + used, avail - used, &d, &dl);
            if (k < 0) {
                sl__proxy_abort(x, "malformed chunked response from the upstream server");
                return -1;
            }
            if (dl > 0) {
                chunk_out(x, d, dl);
                x->acc.bytes_out += dl;
            }
            used += (size_t)k;
            if (sl__proxy_chunk_done(&x->resp_chunk)) {
                if (x->resp_chunked_out)
                    out(x, "0\r\n\r\n", 5);
                x->resp_done = true;
            }
        }
        consume(up, used);
        return 0;
    }
    x->acc.bytes_out += used;
    consume(up, used);
    return 0;
}

/* Stop reading the upstream while the client has much to read. */
static void backpressure(struct sl__proxy_x *x)
{
    if (x->up == NULL || x->up_paused || sl__conn_out_bytes(x->c) < SL__PROXY_HIGH)
        return;
    if (sl__conn_want_sent(x->c)) {
        x->up_paused = true;
        sl__proxy_up_read(x->up, false);
    }
}

static void tunnel_out(struct sl__proxy_x *x)
{
    struct sl__proxy_up *up = x->up;

    out(x, up->in.p, up->in.len);
    x->acc.bytes_out += up->in.len;
    up->in.len = 0;
    sl__conn_flush(x->c);
    backpressure(x);
}

void sl__proxy_resp_process(struct sl__proxy_x *x)
{
    struct sl__proxy_up *up = x->up;

    if (x->phase == SL__PX_TUNNEL) {
        tunnel_out(x);
        return;
    }
    while (x->up == up && !x->resp_done && up->in.len > 0) {
        int r = x->resp_head_done ? take_body(x) : take_head(x);
        if (r < 0)
            return;
        if (x->phase == SL__PX_TUNNEL) {
            tunnel_out(x);
            if (x->client_held) {
                x->client_held = false;
                sl__conn_unhold(x->c); /* client bytes may wait for the tunnel */
            }
            return;
        }
        if (r == 0)
            break;
    }
    if (x->up != up)
        return;
    sl__conn_flush(x->c);
    if (x->resp_done) {
        if (up->in.len > 0)
            x->up_reusable = false; /* it sent more than the response */
        sl__proxy_finish(x);
        return;
    }
    backpressure(x);
}

void sl__proxy_on_up_data(struct sl__proxy_x *x)
{
    x->up_io_ms = now_ms(x);
    if (x->phase == SL__PX_FORWARD || x->phase == SL__PX_TUNNEL)
        sl__proxy_resp_process(x);
}

void sl__proxy_on_up_eof(struct sl__proxy_x *x, int status)
{
    struct sl__proxy_up *up = x->up;

    if (x->phase == SL__PX_TUNNEL) {
        x->close_after = true;
        sl__proxy_finish(x);
        return;
    }
    if (!x->resp_head_done) {
        if (up != NULL && up->in.len > 0) {
            bad_gateway(x, "the upstream server closed the connection inside a response head");
            return;
        }
        /* Nothing came back: a pooled connection the server had closed
         * (not the server's fault), or a failure. */
        sl__proxy_retry(x, !x->reused, false);
        return;
    }
    if (x->resp_framing == SL__PF_CLOSE) {
        x->resp_done = true;
        x->up_reusable = false;
        sl__conn_flush(x->c);
        sl__proxy_finish(x);
        return;
    }
    (void)status;
    sl__proxy_abort(x, "the upstream server closed the connection inside a response body");
}
