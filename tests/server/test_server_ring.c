/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * test_server_ring.c - a worker's io_uring over real socket pairs: sends
 * and receives complete with what the kernel did, a cancelled receive ends
 * with -ECANCELED, and an operation prepared for a descriptor that is
 * closed before the end of the iteration never reaches the connection
 * that is given the same descriptor number next (sl__ring_fd_closing):
 * neither the closed connection's reply nor a receive that would take the
 * new connection's bytes - whether the operation was already in the
 * submission queue or still waiting for room in it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring.h"

struct op {
    struct sl__ring_op op; /* first: the completion gets &op */
    int calls;
    int res;
    char data[64];
    size_t len;
};

static void done(struct sl__ring_op *o, int res, const char *data, size_t len)
{
    struct op *op = (struct op *)o;

    op->calls++;
    op->res = res;
    op->len = len < sizeof(op->data) ? len : sizeof(op->data);
    if (data != NULL)
        memcpy(op->data, data, op->len);
}

struct fixture {
    uv_loop_t loop;
    struct sl__ring *ring;
    char why[256];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    assert_int_equal(uv_loop_init(&f->loop), 0);
    if (sl__ring_new(&f->loop, &f->ring, f->why, sizeof(f->why)) != 0)
        f->ring = NULL; /* each test skips, saying why */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    if (f->ring != NULL) {
        sl__ring_close(f->ring);
        uv_run(&f->loop, UV_RUN_DEFAULT);
        sl__ring_free(f->ring);
    }
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
    return 0;
}

/* Where this kernel (or a build without liburing) refuses io_uring,
 * sluiced runs its readiness loop and no ring exists to test: skip, and
 * say so in the output. */
static void need_ring(const struct fixture *f)
{
    if (f->ring == NULL) {
        print_message("no io_uring here: %s\n", f->why);
        skip();
    }
}

/* Submit and run the loop until `op` completed (bounded: 5 s). */
static void wait_done(struct fixture *f, struct op *op)
{
    for (int i = 0; i < 5000 && op->calls == 0; i++) {
        sl__ring_submit(f->ring);
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (op->calls == 0)
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    assert_int_equal(op->calls, 1);
}

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

/* What the socket has to read now, without waiting ("" when nothing). */
static size_t pending(int fd, char *buf, size_t cap)
{
    ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);

    if (n < 0) {
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        return 0;
    }
    return (size_t)n;
}

static void test_send_and_receive(void **state)
{
    struct fixture *f = *state;
    struct op s = {.op.done = done}, r = {.op.done = done};
    char buf[64];
    int sv[2];

    need_ring(f);
    pair(sv);
    sl__ring_send(f->ring, &s.op, sv[0], "PING\r\n", 6);
    wait_done(f, &s);
    assert_int_equal(s.res, 6);
    assert_int_equal(pending(sv[1], buf, sizeof(buf)), 6);
    assert_memory_equal(buf, "PING\r\n", 6);

    sl__ring_recv(f->ring, &r.op, sv[0]);
    sl__ring_submit(f->ring); /* armed, nothing to read yet */
    assert_int_equal(write(sv[1], "+PONG\r\n", 7), 7);
    wait_done(f, &r);
    assert_int_equal(r.res, 7);
    assert_int_equal(r.len, 7);
    assert_memory_equal(r.data, "+PONG\r\n", 7);

    r.calls = 0; /* the peer's EOF */
    sl__ring_recv(f->ring, &r.op, sv[0]);
    close(sv[1]);
    wait_done(f, &r);
    assert_int_equal(r.res, 0);
    close(sv[0]);
}

static void test_cancelled_receive(void **state)
{
    struct fixture *f = *state;
    struct op r = {.op.done = done};
    int sv[2];

    need_ring(f);
    pair(sv);
    sl__ring_recv(f->ring, &r.op, sv[0]);
    sl__ring_submit(f->ring);
    sl__ring_cancel(f->ring, &r.op);
    wait_done(f, &r);
    assert_int_equal(r.res, -ECANCELED);
    close(sv[0]);
    close(sv[1]);
}

/* A reply prepared for a connection closed in the same iteration goes to
 * that connection's peer, not to the next connection given its number. */
static void test_send_to_closed_descriptor_stays_with_its_socket(void **state)
{
    struct fixture *f = *state;
    struct op s = {.op.done = done};
    char buf[64];
    int old[2], neu[2];

    need_ring(f);
    pair(old);
    sl__ring_send(f->ring, &s.op, old[0], "old reply", 9);
    sl__ring_fd_closing(f->ring, old[0]);
    close(old[0]);
    pair(neu);
    assert_int_equal(neu[0], old[0]); /* the lowest free number: the one just closed */
    wait_done(f, &s);
    assert_int_equal(s.res, 9);
    assert_int_equal(pending(neu[1], buf, sizeof(buf)), 0); /* the new peer got nothing */
    assert_int_equal(pending(old[1], buf, sizeof(buf)), 9);
    assert_memory_equal(buf, "old reply", 9);
    close(old[1]);
    close(neu[0]);
    close(neu[1]);
}

/* A receive armed (not yet submitted) for a connection closed in the same
 * iteration does not take the bytes of the next connection given its
 * number. */
static void test_receive_on_closed_descriptor_takes_nothing_new(void **state)
{
    struct fixture *f = *state;
    struct op r = {.op.done = done};
    char buf[64];
    int old[2], neu[2];

    need_ring(f);
    pair(old);
    sl__ring_recv(f->ring, &r.op, old[0]);
    sl__ring_fd_closing(f->ring, old[0]);
    sl__ring_cancel(f->ring, &r.op); /* as a connection's close does */
    close(old[0]);
    pair(neu);
    assert_int_equal(neu[0], old[0]);
    assert_int_equal(write(neu[1], "new request", 11), 11);
    wait_done(f, &r);
    assert_int_equal(r.res, -ECANCELED);
    assert_int_equal(pending(neu[0], buf, sizeof(buf)), 11); /* still there for its owner */
    assert_memory_equal(buf, "new request", 11);
    close(old[1]);
    close(neu[0]);
    close(neu[1]);
}

/* The same for requests that waited for room in the submission queue
 * (the ring's own queue, used when the kernel does not take what is
 * submitted): sl__ring_fd_closing turns them into no-ops, so the receive
 * and the send of the closed descriptor touch nothing of the socket that
 * is given its number next. */
static void test_waiting_requests_of_closed_descriptor_become_noops(void **state)
{
    struct fixture *f = *state;
    struct op r = {.op.done = done}, s = {.op.done = done};
    char buf[64];
    int old[2], neu[2];

    need_ring(f);
    pair(old);
    sl__ring_hold_submissions(f->ring, true); /* as if the queue were full */
    sl__ring_recv(f->ring, &r.op, old[0]);
    sl__ring_send(f->ring, &s.op, old[0], "old reply", 9);
    sl__ring_fd_closing(f->ring, old[0]);
    close(old[0]);
    pair(neu);
    assert_int_equal(neu[0], old[0]);
    assert_int_equal(write(neu[1], "new request", 11), 11);
    sl__ring_hold_submissions(f->ring, false);
    wait_done(f, &r);
    wait_done(f, &s);
    assert_int_equal(r.res, 0); /* no-ops: nothing received, nothing sent */
    assert_int_equal(r.len, 0);
    assert_int_equal(s.res, 0);
    assert_int_equal(pending(neu[0], buf, sizeof(buf)), 11); /* the new request, untouched */
    assert_memory_equal(buf, "new request", 11);
    assert_int_equal(pending(neu[1], buf, sizeof(buf)), 0); /* the new peer got nothing */
    close(old[1]);
    close(neu[0]);
    close(neu[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_send_and_receive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_receive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_to_closed_descriptor_stays_with_its_socket, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_receive_on_closed_descriptor_takes_nothing_new, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_waiting_requests_of_closed_descriptor_become_noops,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
