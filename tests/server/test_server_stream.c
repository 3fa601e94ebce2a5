/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_server_stream.c - the connection's streaming calls (conn.h), for
 * protocols that forward bodies as they arrive: a held connection reads
 * nothing and keeps what it had, unhold offers it again; a busy connection
 * defers a close until its answer is out and escapes the sweep's
 * timeouts; on_sent comes once the output is written. A real connection
 * over a socketpair with a test protocol; the peer's bytes checked.
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
#include "proto.h"
#include "server-t.h"
#include "worker-t.h"

/* The test protocol: consumes up to `take` bytes a call, holding the
 * connection when it leaves some; counts its calls. */
static size_t take, calls, last_len, drains;
static char last[64];

static ssize_t t_read(struct sl__conn *c, const char *buf, size_t len)
{
    size_t n = len < take ? len : take;

    calls++;
    last_len = len < sizeof(last) ? len : sizeof(last);
    memcpy(last, buf, last_len);
    if (n < len)
        sl__conn_hold(c);
    return (ssize_t)n;
}

static void t_drain(struct sl__conn *c)
{
    drains++;
}

static const struct sl__proto tproto = {.name = "t", .on_read = t_read, .on_sent = t_drain};

struct fixture {
    struct sl__server srv;
    struct sl__worker w;
    struct sl__listener ls;
    struct sl__conn *c;
    int peer;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    f->w.srv = &f->srv;
    assert_int_equal(uv_loop_init(&f->w.loop), 0);
    f->ls.max_frame_bytes = 1 << 20;
    f->c = calloc(1, sizeof(*f->c));
    f->c->w = &f->w;
    f->c->ls = &f->ls;
    f->c->proto = &tproto;
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
    take = SIZE_MAX;
    calls = last_len = drains = 0;
    /* start reading: a connection made held, then let go */
    f->c->flags |= SL__CONN_HELD;
    sl__conn_unhold(f->c);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f->w.conns != NULL)
        sl__conn_abort(f->c);
    uv_run(&f->w.loop, UV_RUN_DEFAULT);
    assert_null(f->w.conns);
    assert_int_equal(uv_loop_close(&f->w.loop), 0);
    close(f->peer);
    free(f);
    return 0;
}

static void spin(struct fixture *f, int n)
{
    for (int i = 0; i < n; i++) {
        uv_run(&f->w.loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
}

static void held_input_waits_for_unhold(void **state)
{
    struct fixture *f = *state;

    take = 1;
    assert_int_equal(write(f->peer, "abc", 3), 3);
    spin(f, 20);
    assert_int_equal(calls, 1); /* took "a", held with "bc" */
    assert_int_equal(f->c->in.len, 2);
    assert_int_equal(write(f->peer, "de", 2), 2);
    spin(f, 20);
    assert_int_equal(calls, 1); /* held: nothing read */
    take = SIZE_MAX;
    sl__conn_unhold(f->c);
    assert_int_equal(calls, 2); /* offered what it kept, at once */
    assert_memory_equal(last, "bc", 2);
    spin(f, 20);
    assert_int_equal(calls, 3); /* and reads again */
    assert_memory_equal(last, "de", 2);
    assert_int_equal(f->c->in.len, 0);
}

/* Read what the peer has now; -1 at EOF. */
static ssize_t peer_read(struct fixture *f, char *buf, size_t cap)
{
    ssize_t k = recv(f->peer, buf, cap, MSG_DONTWAIT);
    return k == 0 ? -1 : k < 0 ? 0 : k;
}

static void busy_defers_a_close(void **state)
{
    struct fixture *f = *state;
    char got[64];

    sl__conn_set_busy(f->c, true);
    sl__conn_write(f->c, "head", 4);
    sl__conn_close(f->c); /* the server stopping, say */
    spin(f, 20);
    assert_int_equal(peer_read(f, got, sizeof(got)), 4); /* what was written goes out */
    assert_int_equal(peer_read(f, got, sizeof(got)), 0); /* but the connection stays */
    sl__conn_write(f->c, "body", 4);
    sl__conn_flush(f->c);
    sl__conn_set_busy(f->c, false); /* the answer is complete: now it closes */
    spin(f, 20);
    assert_int_equal(peer_read(f, got, sizeof(got)), 4);
    assert_memory_equal(got, "body", 4);
    assert_int_equal(peer_read(f, got, sizeof(got)), -1);
}

static void busy_escapes_the_sweep(void **state)
{
    struct fixture *f = *state;

    f->srv.cfg.idle_timeout_ms = 10;
    f->srv.cfg.read_timeout_ms = 10;
    f->c->partial_since_ms = 0;
    f->c->last_read_ms = 0;
    sl__conn_set_busy(f->c, true);
    sl__conn_sweep(f->c, 100000);
    assert_false(sl__conn_is_closing(f->c));
    sl__conn_set_busy(f->c, false); /* the idle time starts again now */
    sl__conn_sweep(f->c, (int64_t)uv_now(&f->w.loop) + 1);
    assert_false(sl__conn_is_closing(f->c));
    sl__conn_sweep(f->c, (int64_t)uv_now(&f->w.loop) + 1000);
    assert_true(sl__conn_is_closing(f->c));
}

static void drain_called_once_output_is_written(void **state)
{
    struct fixture *f = *state;
    size_t big = 8u << 20, got = 0;
    char *p = calloc(1, big), buf[65536];

    assert_false(sl__conn_want_sent(f->c)); /* nothing queued: write at once */
    sl__conn_write(f->c, p, big);
    sl__conn_flush(f->c);
    assert_true(sl__conn_out_bytes(f->c) > 0);
    assert_true(sl__conn_want_sent(f->c));
    while (got < big) {
        uv_run(&f->w.loop, UV_RUN_NOWAIT);
        ssize_t k = peer_read(f, buf, sizeof(buf));
        assert_true(k >= 0);
        got += (size_t)k;
    }
    spin(f, 5);
    assert_int_equal(drains, 1);
    assert_int_equal(sl__conn_out_bytes(f->c), 0);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(held_input_waits_for_unhold, setup, teardown),
        cmocka_unit_test_setup_teardown(busy_defers_a_close, setup, teardown),
        cmocka_unit_test_setup_teardown(busy_escapes_the_sweep, setup, teardown),
        cmocka_unit_test_setup_teardown(drain_called_once_output_is_written, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
