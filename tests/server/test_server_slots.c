/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_server_slots.c - reply slots keep pipelined replies in request order
 * when answers arrive out of order (as a remote store's would): a real
 * connection over a socketpair, replies written, reserved and filled in
 * every order, and what the peer reads checked byte for byte. Also: bytes
 * for a peer that has gone are dropped and the connection is freed only
 * once its last slot is filled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn.h"
#include "conn_io.h"
#include "server-t.h"
#include "worker-t.h"

struct fixture {
    struct sl__server srv;
    struct sl__worker w;
    uv_check_t flush; /* as a worker writes its connections once per iteration */
    struct sl__listener ls;
    struct sl__conn *c;
    int peer;
};

static void on_flush(uv_check_t *h)
{
    sl__conn_flush_dirty(h->data);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    f->w.srv = &f->srv;
    assert_int_equal(uv_loop_init(&f->w.loop), 0);
    uv_check_init(&f->w.loop, &f->flush);
    f->flush.data = &f->w;
    uv_check_start(&f->flush, on_flush);
    f->ls.max_frame_bytes = 4096;
    f->c = calloc(1, sizeof(*f->c));
    f->c->w = &f->w;
    f->c->ls = &f->ls;
    f->c->partial_since_ms = -1;
    uv_tcp_init(&f->w.loop, &f->c->tcp);
    f->c->tcp.data = f->c;
    f->c->io = &sl__conn_io_uv; /* the libuv stream, as accept chooses without a ring */
    f->c->up = &sl__conn_up_core;
    assert_int_equal(uv_tcp_open(&f->c->tcp, sv[0]), 0);
    f->w.conns = f->c;
    f->w.n_conns = 1;
    atomic_store(&f->srv.n_conns, 1);
    f->peer = sv[1];
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f->w.conns != NULL)
        sl__conn_abort(f->c);
    uv_close((uv_handle_t *)&f->flush, NULL);
    uv_run(&f->w.loop, UV_RUN_DEFAULT);
    assert_null(f->w.conns); /* freed */
    assert_int_equal(uv_loop_close(&f->w.loop), 0);
    close(f->peer);
    free(f);
    return 0;
}

static void put(struct sl__conn *c, const char *s)
{
    sl__conn_write(c, s, strlen(s));
}

static void fill(struct sl__conn *c, int64_t id, const char *s)
{
    sl__conn_slot_fill(c, id, s, strlen(s));
}

/* Run the loop until the peer has `want` bytes, and compare. */
static void expect(struct fixture *f, const char *want)
{
    char got[256];
    size_t n = 0, len = strlen(want);

    sl__conn_write(f->c, "", 0);
    while (n < len) {
        uv_run(&f->w.loop, UV_RUN_NOWAIT);
        ssize_t k = recv(f->peer, got + n, sizeof(got) - n, MSG_DONTWAIT);
        if (k > 0)
            n += (size_t)k;
    }
    assert_int_equal(n, len);
    assert_memory_equal(got, want, len);
}

static void in_order_fills_flow_through(void **state)
{
    struct fixture *f = *state;
    int64_t a, b;

    put(f->c, "1");
    a = sl__conn_slot_reserve(f->c);
    put(f->c, "3");
    b = sl__conn_slot_reserve(f->c);
    put(f->c, "5");
    fill(f->c, a, "2");
    fill(f->c, b, "4");
    expect(f, "12345");
    assert_int_equal(f->c->slot_n, 0);
}

static void out_of_order_fills_wait_for_the_head(void **state)
{
    struct fixture *f = *state;
    int64_t id[4];

    for (int i = 0; i < 4; i++) {
        id[i] = sl__conn_slot_reserve(f->c);
        char w[2] = {(char)('a' + 2 * i + 1), 0};
        put(f->c, w); /* a write after each slot waits behind it */
    }
    fill(f->c, id[3], "G");
    fill(f->c, id[1], "C");
    fill(f->c, id[2], "E");
    assert_int_equal(f->c->slot_n, 4); /* the head is still open: nothing sent */
    assert_int_equal(f->c->out.len, 0);
    fill(f->c, id[0], "A");
    expect(f, "AbCdEfGh");
}

static void slots_run_out_then_recover(void **state)
{
    struct fixture *f = *state;
    int64_t first = sl__conn_slot_reserve(f->c), last = first;

    for (unsigned i = 1; i < SL__CONN_MAX_SLOTS; i++)
        last = sl__conn_slot_reserve(f->c);
    assert_int_equal(sl__conn_slot_reserve(f->c), -1);
    for (int64_t id = last; id > first; id--)
        fill(f->c, id, "");
    fill(f->c, first, "x");
    int64_t again = sl__conn_slot_reserve(f->c);
    assert_true(again > last);
    fill(f->c, again, "y");
    expect(f, "xy");
}

/* With nothing in flight the next slot is the ring's first again (its op's
 * lines the likeliest cached), its id still above every earlier one; with
 * a slot open, the next follows it. */
static void an_idle_ring_starts_again_at_its_first_slot(void **state)
{
    struct fixture *f = *state;
    int64_t a = sl__conn_slot_reserve(f->c);
    int64_t b = sl__conn_slot_reserve(f->c);

    assert_int_equal(b, a + 1);
    fill(f->c, a, "1");
    int64_t c = sl__conn_slot_reserve(f->c); /* b still open */
    assert_int_equal(c, b + 1);
    fill(f->c, b, "2");
    fill(f->c, c, "3");
    int64_t d = sl__conn_slot_reserve(f->c);
    assert_true(d > c);
    assert_int_equal(d % SL__CONN_MAX_SLOTS, 0);
    fill(f->c, d, "4");
    int64_t e = sl__conn_slot_reserve(f->c);
    assert_true(e > d);
    assert_int_equal(e % SL__CONN_MAX_SLOTS, 0);
    fill(f->c, e, "5");
    expect(f, "12345");
}

static void closed_connection_waits_for_its_slots(void **state)
{
    struct fixture *f = *state;
    int64_t id = sl__conn_slot_reserve(f->c);

    sl__conn_abort(f->c); /* the peer broke the protocol */
    uv_run(&f->w.loop, UV_RUN_NOWAIT);
    assert_non_null(f->w.conns); /* a store callback may still come */
    fill(f->c, id, "late reply, dropped");
    assert_null(f->w.conns); /* freed by the last fill */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(in_order_fills_flow_through, setup, teardown),
        cmocka_unit_test_setup_teardown(out_of_order_fills_wait_for_the_head, setup, teardown),
        cmocka_unit_test_setup_teardown(slots_run_out_then_recover, setup, teardown),
        cmocka_unit_test_setup_teardown(an_idle_ring_starts_again_at_its_first_slot, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(closed_connection_waits_for_its_slots, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
