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
 * It reports what it made of the bytes (enum sl__proxy_rstep) and leaves
 * the exchange's state to the state machine (proxy.c): it does not choose
 * servers, retry, answer, or end an exchange.
 */
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "proxy_gate.h"
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

/* A bad response: what is wrong with it, for the 502. */
static int bad_gateway(const char **why, const char *what)
{
    *why = what;
    return -1;
}

/* A 101 went to the client: the bytes after its head are the tunnel's. */
static void start_tunnel(struct sl__proxy_x *x, size_t head_len)
{
    x->acc.status = 101;
    x->resp_started = x->resp_head_done = true;
    sl__proxy_gate_head(x, 101);
    consume(x->up, head_len);
    x->up_reusable = false;
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
    sl__proxy_gate_head(x, h->status); /* the upstream's latency ends here */
    consume(x->up, head_len);
    if (x->resp_framing == SL__PF_NONE || (x->resp_framing == SL__PF_LENGTH && x->resp_left == 0))
        x->resp_done = true;
}

/* 1 a head was taken, 2 a 101 (the exchange becomes a tunnel), 0 more
 * bytes are needed, -1 a broken response (*why). */
static int take_head(struct sl__proxy_x *x, const char **why)
{
    struct sl__proxy_up *up = x->up;
    struct sl__proxy_err e;
    ssize_t r = sl__proxy_parse_response(up->in.p, up->in.len, SL__PROXY_MAX_HEAD, &x->h, &e);

    if (r == -2)
        return 0;
    if (r < 0)
        return bad_gateway(why, "invalid response from the upstream server");
    if (x->h.status == 101) {
        struct sl__proxy_rfwd f = {.via = x->pw->cfg->via, .upgrade = true};
        if (!x->upgrade || !(x->h.flags & SL__PH_UPGRADE))
            return bad_gateway(why, "the upstream switched protocols unasked");
        if (!sl__proxy_upgrade_allowed(x->h.upgrade, x->route->upgrades, x->route->n_upgrades))
            return bad_gateway(why, "the upstream switched to a protocol this route does not "
                                    "tunnel");
        x->pw->scratch.len = 0;
        sl__proxy_resp_head(&x->pw->scratch, &x->h, &f);
        out(x, x->pw->scratch.p, x->pw->scratch.len);
        start_tunnel(x, (size_t)r);
        return 2;
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

/* Forward body bytes; 0 when more are needed, -1 a broken body (*why). */
static int take_body(struct sl__proxy_x *x, const char **why)
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
                *why = "malformed chunked response from the upstream server";
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

void sl__proxy_resp_tunnel(struct sl__proxy_x *x)
{
    struct sl__proxy_up *up = x->up;

    out(x, up->in.p, up->in.len);
    x->acc.bytes_out += up->in.len;
    up->in.len = 0;
    sl__conn_flush(x->c);
    backpressure(x);
}

enum sl__proxy_rstep sl__proxy_resp_take(struct sl__proxy_x *x, const char **why)
{
    struct sl__proxy_up *up = x->up;

    while (!x->resp_done && up->in.len > 0) {
        int r = x->resp_head_done ? take_body(x, why) : take_head(x, why);
        if (r < 0)
            return SL__PR_BROKEN;
        if (r == 2)
            return SL__PR_UPGRADED;
        if (r == 0)
            break;
    }
    sl__conn_flush(x->c);
    if (x->resp_done) {
        if (up->in.len > 0)
            x->up_reusable = false; /* it sent more than the response */
        return SL__PR_DONE;
    }
    backpressure(x);
    return SL__PR_WAIT;
}
