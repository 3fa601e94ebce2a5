/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * http_hold.c - holding an HTTP answer back for a while (the nginx
 * auth_request form of a DELAY decision, docs/contracts.md §Decisions): the answer's bytes
 * are copied aside, its reply slot stays reserved (so later pipelined
 * answers wait behind it and the connection is not freed), and a libuv
 * timer on the worker's loop fills the slot when the delay is over. The
 * worker never blocks.
 *
 * A held answer allocates (one block for the timer and the bytes): delays
 * are the shaping path, not the common one. It does not decide how long to
 * hold (http_api.c caps it with http.max_delay).
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "http_hold.h"
#include "worker-t.h"
#include "xalloc.h"

struct held {
    uv_timer_t timer;
    struct sl__conn *c;
    int64_t slot;
    size_t len;
    char bytes[];
};

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

static void on_due(uv_timer_t *t)
{
    struct held *h = t->data;

    sl__conn_slot_fill(h->c, h->slot, h->bytes, h->len);
    uv_close((uv_handle_t *)&h->timer, on_closed);
}

void sl__h1_hold(struct sl__conn *c, int64_t slot, int64_t delay_ms, const char *bytes, size_t len)
{
    struct held *h = sl__xrealloc(NULL, sizeof(*h) + len);

    h->c = c;
    h->slot = slot;
    h->len = len;
    memcpy(h->bytes, bytes, len);
    uv_timer_init(&c->w->loop, &h->timer);
    h->timer.data = h;
    uv_timer_start(&h->timer, on_due, delay_ms > 0 ? (uint64_t)delay_ms : 0, 0);
}
